"""The clinical NLU's lexicon: which words name which CMAS value.

One file (``configs/nlu_lexicon.yaml``) lists, per slot type, the value the NLU emits and the lay
phrases that name it; the questionnaire ontology's surface keywords (symptoms, diseases, antecedents)
are added to the value whose vocabulary code they share. Every emitted value must resolve in the
shared vocabulary (``agent.core.ontology``), so the state gate, the red-flag rules and the policy all
recognise what this NLU writes: the lexicon fails to load otherwise, naming the value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from agent.core import cmas
from agent.core.clinical_text import looks_plural, near_misses, singular
from agent.core.lay_terms import lay_phrases
from agent.core.ontology import SymptomEntry, Vocabulary, default_vocabulary
from agent.core.ontology import body_part_words as ontology_part_words
from agent.core.paths import REPO_ROOT

DEFAULT_LEXICON = REPO_ROOT / "configs" / "nlu_lexicon.yaml"
CONDITION = "condition"
"""Pseudo slot type of ``conditions``: medical history of the patient, or family history of a relative."""

_KEYS = {"values", "conditions", "felt_conditions", "near_misses", "relations", "locations", "characteristics",
         "factors", "answers", "acknowledgements"}
_MAX_KEYWORD_WORDS = 4


class LexiconError(ValueError):
    pass


@dataclass(frozen=True)
class Term:
    """A phrase and what it names: ``base`` is a CMAS slot type (or ``condition``), ``value`` the emitted value."""

    phrase: str
    base: str
    value: str


@dataclass
class Lexicon:
    terms: list[Term]
    relations: tuple[str, ...]
    locations: dict[str, str]  # lay phrase -> location value
    factors: dict[str, str]  # lay phrase -> factor value
    characteristics: dict[str, str]  # lay phrase -> characteristic value
    answers: dict[str, tuple[str, ...]]  # affirm / deny / unsure -> phrases
    acknowledgements: frozenset[str]
    by_value: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    sided: frozenset[str] = frozenset()  # body parts that come in a left and a right ("knee", "eye", "testicle")
    felt: dict[str, str] = field(default_factory=dict)  # condition -> the symptom it is when felt now (felt_conditions)

    def phrases(self, base: str, value: str) -> list[str]:
        return self.by_value.get((base, value), [])


def _phrases(raw: object, where: str) -> list[str]:
    if not isinstance(raw, list) or not all(isinstance(p, str) and p.strip() for p in raw):
        raise LexiconError(f"{where}: expected a list of phrases")
    return [" ".join(p.lower().split()) for p in raw]


def _value_table(raw: object, where: str) -> dict[str, list[str]]:
    if not isinstance(raw, dict):
        raise LexiconError(f"{where}: expected a mapping value -> [phrases]")
    return {str(v): _phrases(p, f"{where}.{v}") for v, p in raw.items()}


# Single words the ontology lists as keywords of some symptom that, said by a patient, name no symptom
# (body parts, "symptoms", "all"): matching them would put invented symptoms in the state.
_NOT_A_SYMPTOM_WORD = frozenset("""
all general symptom symptoms back backs bed arm arms leg legs face faces facial eye eyes eyeball eyeballs mouth nose
noses throat neck necks head heads heart cardiac chest chests stomach stomachs abdomen abdomens abdominal foot feet limb
limbs extremity extremities tongue tongues vision hearing discharge discomfort discomforts weakness weaknesses spell
spells stool gas burning rigid rigidity os cor globe smelling cheek cheeks clot clots bleed bleeding jaw jaws pes pedal
dorsum caput collum nasal ocular flush prolapse prolapses tenderness spasm spasms drainage ulcer ulcers brachium
thorax thoraces gastric gastro pharynx pharyngeal oculus palpebra eyelid eyelids
""".split())


_ANATOMY_QUALIFIERS = frozenset("""region regions structure structures part parts area areas entire whole surface left
right sides bone bones abdomen abdominal facial cardiac limb extremity extremities eyeball eyeballs eyelid eyelids
thorax pharyngeal backs chests faces heads jaws necks noses brachium caput collum dorsum oculus palpebra pes""".split())
"""Words of anatomy that are not a body part of their own (``agent.core.ontology.body_part_words`` is their home): the
words that qualify a part, plurals, and the UMLS's Latin and adjective names."""


def _names_only_a_place(k: str, place_words: frozenset[str]) -> bool:
    """A keyword made only of the names of body parts and the words that qualify them ("lower leg", "upper arm",
    "foot structure", "face muscle"): UMLS lists such anatomy among a symptom's keywords (the weak limb's "lower leg"),
    but a patient who says "a pain in my lower leg" names the place, not the symptom."""
    words = k.split()
    return len(words) > 1 and all(w in place_words or w in _ANATOMY_QUALIFIERS for w in words)


def _usable_keyword(k: str) -> bool:
    # UMLS-style keywords ("fever, unspecified", "temperature;high", "pain nos") are not what people say.
    if not k or any(c in k for c in ",;()[]/<>+?") or "--" in k or " nos" in k:
        return False
    words = k.split()
    return len(words) <= _MAX_KEYWORD_WORDS and not (len(words) == 1 and k in _NOT_A_SYMPTOM_WORD)


def _number_forms(phrase: str) -> tuple[str, ...]:
    """An ontology name and its other grammatical number ("urinary tract infections" and "... infection"): HPO
    labels a term in one number, a patient says either, and the phrase matcher compares whole words."""
    head, _, last = phrase.rpartition(" ")
    if not head or len(last) < 4 or (last.endswith("s") and not looks_plural(last)):
        return (phrase,)  # "abscess", "tinnitus": singular, and no plural is spelt by adding -s
    return phrase, f"{head} {singular(last) if looks_plural(last) else last + 's'}"


_NAMES_SKIN = re.compile(r"\b(?:skin|cutaneous|dermal)\b", re.I)
_NAMES_ORGAN = re.compile(r"\b(?:eyes?|ears?|nose|nasal|throat|mouth|tongue|lips?)\b", re.I)


def entry_names(entry: SymptomEntry) -> list[str]:
    """A symptom's display name and keywords, less the skin's words for a symptom of another organ: UMLS folds skin
    erythema into the eye's redness ("red skin", "skin erythema" are keywords of eye redness), and read as its names
    a red rash would be a red eye (and raise the sight-threatening red-eye screen)."""
    names = [entry.display_name, *entry.keywords]
    if _NAMES_ORGAN.search(entry.display_name) and not _NAMES_SKIN.search(entry.display_name):
        names = [n for n in names if not _NAMES_SKIN.search(n)]
    return names


def _ontology_terms(vocab: Vocabulary, emitted: dict[str, dict[str, list[str]]]) -> list[Term]:
    """Ontology keywords, attached to the lexicon value that shares their code (or to the code itself)."""
    out: list[Term] = []
    onto = vocab.ontology
    by_code: dict[str, str] = {}
    for value in emitted.get("symptom", {}):
        code = vocab.code("symptom", value)
        if code is not None:
            by_code.setdefault(code, value)
    codes_of: dict[str, set[str]] = {}
    for entry in onto.symptoms.values():
        for k in entry_names(entry):
            codes_of.setdefault(" ".join(k.lower().split()), set()).add(entry.code)
    place_words = ontology_part_words(onto.locations) | frozenset(
        w for loc in onto.locations for w in re.findall(r"[a-z]+", loc.lower()))
    for k, codes in codes_of.items():
        if len(codes) == 1 and _usable_keyword(k) and not _names_only_a_place(k, place_words):
            # a keyword of several symptoms names none of them
            code = next(iter(codes))
            out.append(Term(k, "symptom", by_code.get(code, code)))
    return out


def load_lexicon(
    path: str | Path = DEFAULT_LEXICON, vocab: Vocabulary | None = None, lay_terms: bool = True
) -> Lexicon:
    """The lexicon of ``path``; with ``lay_terms``, plus the HPO labels and lay synonyms and the drug-class names of
    ``agent.core.lay_terms`` (off: to measure what they add)."""
    vocab = vocab or default_vocabulary()
    raw = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(raw, dict):
        raise LexiconError(f"{path}: expected a mapping")
    if unknown := set(raw) - _KEYS:
        raise LexiconError(f"{path}: unknown keys {sorted(unknown)}; allowed: {sorted(_KEYS)}")
    values = raw.get("values") or {}
    emitted: dict[str, dict[str, list[str]]] = {}
    for base, table in values.items():
        if base not in cmas.SLOTS or not cmas.SLOTS[base].medical:
            raise LexiconError(f"{path}: values.{base}: not a medical CMAS slot type")
        emitted[base] = _value_table(table, f"{path}: values.{base}")
    conditions = _value_table(raw.get("conditions") or {}, f"{path}: conditions")
    for base, table in [*emitted.items(), *(("medical_history", conditions), ("family_history", conditions))]:
        for value in table:
            if not vocab.known(base, value):
                raise LexiconError(
                    f"{path}: {value!r} is neither an ontology code nor a configs/vocabulary.yaml "
                    f"term of {base}: add it to the vocabulary or fix the spelling"
                )
    terms = [Term(p, base, v) for base, table in emitted.items() for v, ps in table.items() for p in ps]
    terms += [Term(p, CONDITION, v) for v, ps in conditions.items() for p in ps]
    explicit = {t.phrase for t in terms}
    for lay in lay_phrases() if lay_terms else ():  # HPO labels and lay synonyms, drug-class names
        slot = "medical_history" if lay.base == CONDITION else lay.base  # a condition is known as history
        for phrase in _number_forms(lay.phrase):
            if phrase not in explicit and _usable_keyword(phrase) and vocab.known(slot, lay.value):
                terms.append(Term(phrase, lay.base, lay.value))
                explicit.add(phrase)
    terms += [t for t in _ontology_terms(vocab, emitted) if t.phrase not in explicit]
    terms += _near_miss_terms(raw.get("near_misses") or {}, terms, vocab, path)
    locations = {p: v for v, ps in _value_table(raw.get("locations") or {}, f"{path}: locations").items() for p in ps}
    for phrase, site in _ontology_locations(vocab).items():
        locations.setdefault(phrase, site)
    factors = {p: v for v, ps in _value_table(raw.get("factors") or {}, f"{path}: factors").items() for p in ps}
    answers = raw.get("answers") or {}
    if set(answers) != {"affirm", "deny", "unsure"}:
        raise LexiconError(f"{path}: answers needs exactly affirm, deny and unsure")
    felt = raw.get("felt_conditions") or {}
    if not isinstance(felt, dict):
        raise LexiconError(f"{path}: felt_conditions: expected a mapping condition -> symptom value")
    for cond, symptom in felt.items():
        if cond not in conditions:
            raise LexiconError(f"{path}: felt_conditions: {cond!r} is not a condition of the lexicon")
        if not isinstance(symptom, str) or not vocab.known("symptom", symptom):
            raise LexiconError(f"{path}: felt_conditions.{cond}: {symptom!r} is not a symptom value of the vocabulary")
    lex = Lexicon(
        felt={str(k): str(v) for k, v in felt.items()},
        terms=terms,
        relations=tuple(_phrases(raw.get("relations") or [], f"{path}: relations")),
        locations=locations,
        factors=factors,
        characteristics={
            p: v
            for v, ps in _value_table(raw.get("characteristics") or {}, f"{path}: characteristics").items()
            for p in ps
        },
        answers={k: tuple(_phrases(v, f"{path}: answers.{k}")) for k, v in answers.items()},
        acknowledgements=frozenset(_phrases(raw.get("acknowledgements") or [], f"{path}: acknowledgements")),
        sided=frozenset(_SIDED.sub("", code).strip() for code in vocab.ontology.locations if _SIDED.search(code))
        | _ALSO_SIDED,
    )
    for t in terms:
        lex.by_value.setdefault((t.base, t.value), []).append(t.phrase)
    return lex


def _near_miss_terms(raw: object, terms: list[Term], vocab: Vocabulary, path: str | Path) -> list[Term]:
    """``near_misses``: symptom value -> the event whose phrases, said as a near miss ("nearly fainted", "I thought I
    was going to pass out"), name it: a faint the patient nearly had is presyncope, and read as the event it would
    put a syncope (and its red flag) in the state."""
    if not isinstance(raw, dict):
        raise LexiconError(f"{path}: near_misses: expected a mapping symptom value -> the event it nearly is")
    out: list[Term] = []
    have = {t.phrase for t in terms}
    for value, event in raw.items():
        for v in (value, event):
            if not isinstance(v, str) or not vocab.known("symptom", v):
                raise LexiconError(f"{path}: near_misses: {v!r} is not a symptom value of the vocabulary")
        phrases = [t.phrase for t in terms if t.base == "symptom" and t.value == event]
        if not phrases:
            raise LexiconError(f"{path}: near_misses.{value}: the lexicon has no phrase for {event!r}")
        out += [Term(p, "symptom", value) for p in near_misses(phrases) if p not in have]
    return out


_SIDED = re.compile(r"\((?:L|R)\)$")
_ALSO_SIDED = frozenset({"hand", "foot", "wrist", "shin"})
"""Paired parts the ontology names only by their aspects ("dorsal aspect of the hand(L)")."""
_LOCATION_PLURAL = {"eyes": "eye", "ears": "ear", "elbows": "elbow", "fingers": "finger", "heels": "heel",
                    "hips": "hip", "legs": "leg", "arms": "arm", "shoulders": "shoulder", "temples": "temple",
                    "thighs": "thigh", "thumbs": "thumb", "toes": "toe", "tonsils": "tonsil", "cheeks": "cheek"}


def _ontology_locations(vocab: Vocabulary) -> dict[str, str]:
    """Where a symptom can be, as the questionnaire ontology names it (``all_symptom_locations``: "eye(L)", "jaw",
    "flank", ...): each plain name (no side, no coded parentheses) is a location phrase for itself, and a listed
    plural's singular for the plural ("my eye hurts": ``eyes``), so a site the lexicon's hand list lacks is still
    recorded. The lexicon's own location phrases come first (they map lay words: "tummy" -> abdomen)."""
    sites = {_SIDED.sub("", code).strip() for code in vocab.ontology.locations}
    out: dict[str, str] = {}
    for site in sorted(sites):
        if "(" in site or site == "nowhere" or not site:
            continue
        out[site] = site
        if (one := _LOCATION_PLURAL.get(site)) is not None and one not in sites:
            out[one] = site
    return out


def body_part_words(lexicon: Lexicon) -> frozenset[str]:
    """The parts a quality can be said of (:func:`agent.core.ontology.body_part_words`), the lexicon's lay locations
    ("tummy", "belly") among them, for the phrase finder's predicative reading (``PhraseFinder(parts=...)``)."""
    return ontology_part_words(lexicon.locations)


@lru_cache(maxsize=2)
def default_lexicon() -> Lexicon:
    return load_lexicon()
