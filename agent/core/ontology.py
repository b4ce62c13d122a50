"""The MediTOD questionnaire ontology and the vocabulary that ties dataset values to it.

Two spellings of the same concept meet in the live agent: the questionnaire ontology's
codes (``cough``, ``fainting``, ``palpitation``) and the canonical values of the released
dialogues, which NLU models learn to predict (``coughing``, ``syncope``, ``palpitations``).
``configs/vocabulary.yaml`` maps the second onto the first, per slot type, so the
policies and the red-flag rules can tell whether two values name the same thing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from agent.core import cmas
from agent.core.clinical_text import looks_plural
from agent.core.data import DEFAULT_DATA_DIR
from agent.core.paths import REPO_ROOT

DEFAULT_ONTOLOGY = DEFAULT_DATA_DIR / "questionnaire_ontology.json"
DEFAULT_VOCABULARY = REPO_ROOT / "configs" / "vocabulary.yaml"

# Which list of the ontology JSON holds the codes of each slot type.
_CODE_SOURCES: dict[str, tuple[str, ...]] = {
    "symptom": ("all_symptom_values",),
    "medical_history": ("medical_history_config",),
    "family_history": ("family_history_config",),
    "habit": ("habit_config",),
    "exposure": ("exposure_config",),
    "medication": ("medication_config",),
    "disease": ("all_diseases",),
    "occupation": ("occupation_config",),
    "residence": ("residence_config",),
}


# The slot types a bare value is tried as, most specific first (a symptom name is also a history antecedent).
_CONCEPT_ORDER = ("symptom", "medical_history", "family_history", "medication", "habit", "exposure", "disease")


class VocabularyError(ValueError):
    pass


@dataclass(frozen=True)
class SymptomEntry:
    code: str
    display_name: str
    description: str
    keywords: tuple[str, ...]


def normalize(form: str) -> str:
    """The one normalisation of a surface form before lookup: case-folded, whitespace collapsed."""
    return " ".join(form.casefold().split())


@dataclass
class Ontology:
    """Codes per slot type; symptoms with their descriptions and surface keywords; body locations; and the one
    synonym index: every entry of the ontology that lists ``keywords`` (symptoms, diseases, medical-history
    antecedents), its code, display name and keywords -> ``group:code``."""

    codes: dict[str, frozenset[str]]
    symptoms: dict[str, SymptomEntry]
    locations: frozenset[str]
    _names: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)  # own code / display name
    _keywords: dict[str, frozenset[str]] = field(default_factory=dict, repr=False)

    def resolve(self, form: str, group: str | None = None) -> str | None:
        """The ``group:code`` a surface form names, or None. An entry's own code or display name names that entry;
        another form listed under several entries ("ache": pain, chest pain, jaw pain ...) is ambiguous and names
        nothing. ``group`` restricts the lookup to one list of the ontology (e.g. ``all_symptom_values``)."""
        v = normalize(form)
        for index in (self._names, self._keywords):
            hits = {c for c in index.get(v, ()) if group is None or c.startswith(f"{group}:")}
            if hits:
                return next(iter(hits)) if len(hits) == 1 else None
        return None

    def symptom_code(self, form: str) -> str | None:
        code = self.resolve(form, "all_symptom_values")
        return code.split(":", 1)[1] if code else None


def _config_values(raw: dict[str, Any], key: str) -> list[dict[str, Any]]:
    entries = raw.get(key, [])
    if key.endswith("_config"):
        for f in entries:
            if isinstance(f, dict) and f.get("name") == "value":
                return list(f.get("values", []))
        return []
    return list(entries)


@lru_cache(maxsize=4)
def load_ontology(path: str | Path = DEFAULT_ONTOLOGY) -> Ontology:
    raw = json.loads(Path(path).read_text())
    codes = {}
    for base, keys in _CODE_SOURCES.items():
        codes[base] = frozenset(e["code"] for k in keys for e in _config_values(raw, k) if isinstance(e, dict))
    symptoms = {
        e["code"]: SymptomEntry(
            e["code"], e.get("display_name", e["code"]), e.get("description", ""), tuple(e.get("keywords", []))
        )
        for e in raw["all_symptom_values"]
    }
    names: dict[str, set[str]] = {}
    keywords: dict[str, set[str]] = {}
    for group, entries in raw.items():
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or "keywords" not in entry:
                continue
            code = f"{group}:{entry['code']}"
            for form in (entry["code"], entry.get("display_name")):
                if isinstance(form, str) and form.strip():
                    names.setdefault(normalize(form), set()).add(code)
            for form in entry["keywords"]:
                if isinstance(form, str) and form.strip():
                    keywords.setdefault(normalize(form), set()).add(code)
    locations = frozenset(e["code"] for e in raw.get("all_symptom_locations", []))
    return Ontology(codes, symptoms, locations, {k: frozenset(v) for k, v in names.items()},
                    {k: frozenset(v) for k, v in keywords.items()})


@dataclass
class Vocabulary:
    """Resolves a slot value to its ontology code: the code itself, the mapping table, or a
    symptom keyword that names exactly one code. ``None`` means no ontology concept. ``names`` holds the other
    names of known values (``agent.core.lay_terms.other_names``: HPO labels and synonyms, drug-class members, everyday
    names), through which two spellings of one concept are one item (:meth:`same`)."""

    ontology: Ontology
    table: dict[str, dict[str, str | None]]
    names: dict[str, dict[str, str]] = field(default_factory=dict)
    drug_class: Callable[[str], str | None] | None = None  # a generic drug's class by its INN stem (lay_terms)
    # (base, value) -> canonical: the red-flag rules and the policy ask the same few hundred pairs every turn (about
    # 1,300 lookups a turn, most of a turn's rule time before this memo); emptied when loading changes the tables
    _canonical: dict[tuple[str, str], str | None] = field(default_factory=dict, repr=False, compare=False)

    def code(self, base: str, value: str) -> str | None:
        """The ontology code ``value`` names as slot type ``base``: the code itself, the mapping table, or (for
        symptoms) a keyword naming exactly one code. The one resolver: the NLU gate, red flags, policy, matcher and
        simulators all ask this."""
        v = normalize(value)
        if v in self.ontology.codes.get(base, ()):
            return v
        mapped = self.table.get(base, {})
        if v in mapped:
            return mapped[v]
        if base == "symptom":
            return self.ontology.symptom_code(v)
        return None

    def concept(self, value: str, base: str | None = None) -> str | None:
        """``base:code`` of the concept ``value`` names, trying every medical slot type when ``base`` is None (a
        matcher comparing bare values); else the ontology's own index (diseases, antecedents); None: no concept."""
        for b in (base,) if base else _CONCEPT_ORDER:
            if (c := self.code(b, value)) is not None:
                return f"{b}:{c}"
        return None if base else self.ontology.resolve(value)

    def known(self, base: str, value: str) -> bool:
        """True when ``value`` is an ontology code or a listed dataset term of slot type ``base``."""
        v = normalize(value)
        return self._listed(base, v) or (base == "medication" and self._stem_class(v) is not None)

    def _listed(self, base: str, v: str) -> bool:
        return v in self.ontology.codes.get(base, ()) or v in self.table.get(base, {})

    def _stem_class(self, form: str) -> str | None:
        """The known class a generic drug name belongs to by its INN stem ("ramipril": ace inhibitor), else None."""
        cls = self.drug_class(form) if self.drug_class is not None else None
        return cls if cls is not None and cls != form and self._listed("medication", cls) else None

    def canonical(self, base: str, value: str) -> str | None:
        """What ``value`` stands for as slot type ``base``: ``code:<ontology code>``, else ``term:<known value>``
        (the value itself, or the known value it is another name of, British spellings read as US ones:
        "hypercholesterolaemia", "oedema"; a generic drug stands for its INN-stem class); None when the vocabulary
        does not know it."""
        key = (base, value)
        if key not in self._canonical:
            if len(self._canonical) >= _CANONICAL_MEMO:  # a model NLU's free values must not grow it without end
                self._canonical.clear()
            self._canonical[key] = self._resolve(base, value)
        return self._canonical[key]

    def _resolve(self, base: str, value: str) -> str | None:
        spelt = (normalize(value), _us_spelling(normalize(value)))
        # the other grammatical number last: "oral contraceptive" is the known "oral contraceptives"
        for form in dict.fromkeys((*spelt, *(_other_number(f) for f in spelt))):
            target = form if self._listed(base, form) else self.names.get(base, {}).get(form)
            if target is None and base == "medication":
                target = self._stem_class(form)
            if target is None and (c := self.code(base, form)) is not None:
                return f"code:{c}"
            if target is not None:
                c = self.code(base, target)
                return f"code:{c}" if c is not None else f"term:{target}"
        return None

    def same(self, base: str, a: str, b: str) -> bool:
        """True when ``a`` and ``b`` name one concept of slot type ``base``: equal, one ontology code, or one known
        value through its other names. The one item identity (state merge, policy, cards, simulators, scorers)."""
        if a == b:
            return True
        ca = self.canonical(base, a)  # a function of the normalised value, so equal forms resolve alike
        if ca is not None:
            return ca == self.canonical(base, b)
        return normalize(a) == normalize(b)


_KINDS_OF = {
    "malignant neoplasms": re.compile(r"\b(?:cancers?|carcinomas?|malignan\w*|lymphomas?|leuk(?:a)?emias?|melanomas?|"
                                      r"myelomas?|sarcomas?|metasta\w*|mesotheliomas?|gliomas?|glioblastomas?)\b"),
}
"""General values a rule may ask for, and how a more specific value names one of their kind: a prostate cancer, a
lymphoma or a melanoma is a past cancer for the spinal-malignancy red flag (NICE CKS Back pain: "a history of
cancer"), though the vocabulary keeps each as a value of its own."""


def is_a_kind_of(value: str, general: str) -> bool:
    """Whether ``value`` names a kind of the general value ``general`` (:data:`_KINDS_OF`)."""
    kind = _KINDS_OF.get(normalize(general))
    return kind is not None and kind.search(normalize(value)) is not None


_CANONICAL_MEMO = 50_000
"""At most this many resolved (slot type, value) pairs are kept (:meth:`Vocabulary.canonical`)."""

_BRITISH = re.compile(r"(?<=[a-z])(ae|oe)(?=[a-z])")


def _other_number(form: str) -> str:
    """``form`` with its last word in the other grammatical number ("oral contraceptive" <-> "... contraceptives"):
    a value is listed in one number, a story, a card or a model writes either. Short words are left as they are."""
    head, _, last = form.rpartition(" ")
    if len(last) < 4:
        return form
    other = last[:-1] if looks_plural(last) else last + "s"
    return f"{head} {other}" if head else other


def _us_spelling(form: str) -> str:
    """``haematuria`` -> ``hematuria``, ``oedema`` -> ``edema``: the US spelling the MediTOD release mostly uses."""
    out = _BRITISH.sub(lambda m: "e", form)
    return re.sub(r"^oe", "e", out)


def load_vocabulary(path: str | Path = DEFAULT_VOCABULARY, ontology: Ontology | None = None,
                    extra: bool = True) -> Vocabulary:
    """The dataset-to-ontology table of ``path``, plus (``extra``) the values ``agent.core.lay_terms`` adds from the
    Human Phenotype Ontology and the curated drug classes."""
    onto = ontology or load_ontology()
    raw = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(raw, dict):
        raise VocabularyError(f"{path}: expected a mapping of slot type -> {{term: ontology code}}")
    table: dict[str, dict[str, str | None]] = {}
    for base, terms in raw.items():
        if base not in cmas.SLOTS:
            raise VocabularyError(f"{path}: unknown slot type {base!r}")
        if not isinstance(terms, dict):
            raise VocabularyError(f"{path}: {base}: expected a mapping term -> ontology code (or null)")
        table[base] = {}
        for term, code in terms.items():
            if code is not None and code not in onto.codes.get(base, ()):
                raise VocabularyError(f"{path}: {base}.{term}: {code!r} is not an ontology code of {base}")
            table[base][normalize(str(term))] = code
    vocab = Vocabulary(onto, table)
    if extra:
        from agent.core.lay_terms import common_names, extra_terms, inn_stems, other_names  # the sources beyond MediTOD

        for base, values in extra_terms().items():
            for value in values:
                if not vocab.known(base, value):  # a keyword of an ontology entry keeps pointing at its code
                    table.setdefault(base, {})[value] = vocab.code(base, value)
        for base, entries in common_names().items():
            for value in entries:
                if not vocab.known(base, value):
                    raise VocabularyError(f"common names: {base}.{value} is not a value the vocabulary knows")
        vocab.names = {base: {n: v for n, v in names.items() if vocab.known(base, v)}
                       for base, names in other_names().items()}
        vocab.drug_class = inn_stems().drug_class
    for base, terms in table.items():  # a value listed in its British spelling ("saddle anaesthesia", from HPO or a
        for term in terms:  # curated file) is known in the US one too, as the British of a US value already is
            us = _us_spelling(term)
            if us != term and not vocab._listed(base, us):
                vocab.names.setdefault(base, {}).setdefault(us, term)
    vocab._canonical.clear()  # nothing resolved while the tables were being filled stays
    return vocab


@lru_cache(maxsize=1)
def default_vocabulary() -> Vocabulary:
    return load_vocabulary()


SITE_VALUES = {"chest": "chest pain", "head": "headache", "jaw": "jaw pain"}
"""Body sites whose pain MediTOD records as a value of its own: the annotation guide's worked examples write ``chest
pain`` (never ``pain`` located in the chest), and the shared dialogues do so 76 times in 76; they write ``headache``
32 times and never a pain located in the head; ``jaw pain`` is a vocabulary value of its own. A pain in the abdomen,
the joints or a calf is ``pain`` with a location (26, 25 and 12 times). The order is the precedence when a pain is
at several of these sites: a chest pain that reaches the jaw is the chest pain, located at the jaw."""


_PART_OF = {
    # the chest and the head, whose pains are values of their own (SITE_VALUES)
    "upper chest": ("chest",), "lower chest": ("chest",), "side of the chest": ("chest",),
    "posterior chest wall": ("chest",),
    "forehead": ("head",), "temple": ("head",), "temples": ("head",), "back of head": ("head",),
    "occiput": ("head",), "top of the head": ("head",),
    # the limbs: a pain or a swelling of the calf is a leg's, a weakness of the hand an arm's
    "calf": ("leg",), "calves": ("leg",), "shin": ("leg",), "tibia": ("leg",), "thigh": ("leg",), "thighs": ("leg",),
    "popliteal fossa": ("leg",), "ischio jambier": ("leg",), "knee": ("leg", "joint"), "knees": ("leg", "joint"),
    "ankle": ("leg", "joint"), "ankles": ("leg", "joint"), "foot": ("leg",), "feet": ("leg",), "heel": ("leg",),
    "heels": ("leg",), "sole": ("leg",), "soles": ("leg",), "legs": ("leg",), "hip": ("joint",), "hips": ("joint",),
    "hand": ("arm",), "hands": ("arm",), "palm": ("arm",), "fingers": ("arm",), "thumb": ("arm",), "thumbs": ("arm",),
    "forearm": ("arm",), "wrist": ("arm", "joint"), "wrists": ("arm", "joint"), "elbow": ("arm", "joint"),
    "elbows": ("arm", "joint"), "upper arm": ("arm",), "biceps": ("arm",), "triceps": ("arm",), "arms": ("arm",),
    "shoulder": ("joint",), "shoulders": ("joint",),
    # the face, the back, the belly and the neck
    "cheek": ("face",), "cheeks": ("face",), "chin": ("face",), "jaw": ("face",), "upper lip": ("face",),
    "bottom lip": ("face",), "lips": ("face",),
    "lower back": ("back",), "upper back": ("back",), "lumbar spine": ("back",), "thoracic spine": ("back",),
    "belly": ("abdomen",), "tummy": ("abdomen",), "stomach": ("abdomen",), "epigastric": ("abdomen",),
    "hypochondrium": ("abdomen",), "iliac fossa": ("abdomen",), "lower abdomen": ("abdomen",),
    "upper abdomen": ("abdomen",),
    "back of the neck": ("neck",), "side of the neck": ("neck",), "cervical spine": ("neck",),
}
"""The larger parts a place of the ontology (or a lay name of one) belongs to, as findings are named by the larger
part: a pain in the calf is a leg pain, a swollen knee a swollen joint, a weakness of the hand an arm weakness, a
sore cheek a facial pain. Anatomy, not any one patient's words: the knee, ankle, hip, wrist, elbow and shoulder are the
large joints that OSCE guides examine as "the joints"; fingers and toes are left out (a sore toe is as often the nail).
MediTOD records a finding at a place as the finding located there (``swelling`` at ``leg``); this table only names
it for whoever asks by the larger part's name (a rule, a plan, a check written as "leg swelling")."""


def site_of(place: str) -> str | None:
    """The site of :data:`SITE_VALUES` that ``place`` is, or is part of (its side aside), if any."""
    bare = without_side(place)
    return bare if bare in SITE_VALUES else next((p for p in _PART_OF.get(bare, ()) if p in SITE_VALUES), None)


def part_members() -> dict[str, frozenset[str]]:
    """Each larger part of :data:`_PART_OF` -> the one-word places that belong to it ("joint" -> knee, hips, wrist
    ...), for the phrase finder's predicative reading: a listed "stiff joints" is also "my knees are stiff"."""
    out: dict[str, set[str]] = {}
    for place, larger in _PART_OF.items():
        if " " not in place:
            for part in larger:
                out.setdefault(part, set()).add(place)
    return {part: frozenset(places) for part, places in out.items()}


def sited_pain(places: list[str]) -> str | None:
    """The site whose pain is a value of its own (:data:`SITE_VALUES`, in its precedence) among ``places``, if any."""
    sites = {site_of(p) for p in places}
    return next((site for site in SITE_VALUES if site in sites), None)


_ADJECTIVE = {
    "abdomen": "abdominal",
    "face": "facial",
    "joints": "joint",
    "testicles": "testicular",
    "lower back": "low back",
    "ears": "ear",
}
"""A place as people and HPO name a finding there ("abdominal pain", "facial weakness")."""

_FINDING = {"pain": "pain", "swelling": "swelling", "weak limbs": "weakness", "weakness": "weakness",
            "paresthesia": "numbness", "numbness": "numbness", "stiffness": "stiffness", "joint stiffness": "stiffness",
            "edema": "swelling"}
"""The finding a located symptom value is, as it is named with its place ("leg swelling", "arm weakness")."""


def located_finding(value: str) -> str | None:
    """The finding a symptom value is when it is somewhere on the body (a pain, a swelling, a weakness, a numbness, a
    stiffness), so that a place said with it is its location; None for what has no place (a fever, a cough)."""
    return "pain" if value.endswith(" pain") else _FINDING.get(value)


def without_side(location: str) -> str:
    """A body location without its side, normalised: ``knee(L)``, ``left knee`` and ``Knee`` are one place (the side
    matters to the examination and the note, not to which part it is). ``left side`` and ``right side`` are places of
    their own. The one home of this reading: the plans' places, the pain's name and the sex of a part use it."""
    loc = re.sub(r"\s*\((?:l|r)\)$", "", normalize(location))
    return re.sub(r"^(?:left|right) (?=\S)", "", loc) if loc not in ("left side", "right side") else loc


FACULTIES = frozenset("""vision eyesight sight hearing voice memory breathing breath urine wee pee stools stool poo
periods bowels bladder waterworks""".split())
"""What patients describe that is no place: the faculties and the things they pass ("my vision's blurred", "my urine
is dark", "my periods are heavy"; "my bowels are normal" is their habit). A symptom's name may be one ("vision" of
visual impairment); a place's may not."""
_DESCRIBED = FACULTIES | frozenset("""skin scalp hair nails tongue lips gums face heart head throat
stomach tummy belly back hand hands foot feet joint joints muscle muscles ribs glands gland""".split())
"""What patients describe besides the ontology's places: the faculties, and the everyday names of parts the ontology
names otherwise ("throat" for the pharynx)."""
_NOT_A_PART = frozenset({"everywhere", "abdominal", "pelvic", "epigastric", "palace", "nowhere"})


def body_part_words(sites: Iterable[str]) -> frozenset[str]:
    """The one-word parts among ``sites`` (location names; a side or a coded suffix dropped: "eye(L)" is "eye"), and
    :data:`_DESCRIBED`: the words a quality can be said of ("my mouth has been dry"), for the phrase finder's
    predicative reading (``clinical_text.PhraseFinder(parts=...)``)."""
    bare = {re.sub(r"\s*\((?:l|r)\)$", "", normalize(s)) for s in sites}
    return frozenset(w for w in bare if w and " " not in w and "(" not in w and w not in _NOT_A_PART) | _DESCRIBED


def symptom_names(value: str, item: dict[str, Any]) -> list[str]:
    """What a symptom item names: its value, and for a finding at a place (a pain, a swelling, a weakness, a
    numbness, a stiffness) that finding of each place and of each larger part the place belongs to
    (:data:`_PART_OF`), as the dataset (``chest pain``) and lay speech (``abdominal pain``, ``leg swelling``) name
    it, so a rule, a plan or a check written either way sees it."""
    names = [value]
    if finding := located_finding(value):
        for loc in item.get("location") or []:
            if isinstance(loc, str):
                bare = without_side(loc)
                for site in dict.fromkeys((loc, bare, *_PART_OF.get(bare, ()))):  # "right shoulder": the shoulder's
                    names += [f"{site} {finding}", f"{_ADJECTIVE.get(site.casefold(), site)} {finding}"]
    return list(dict.fromkeys(names))


def find_item(
    state: dict[str, Any], base: str, value: str, vocab: Vocabulary
) -> tuple[str | None, dict[str, Any]] | None:
    """``(status, item)`` of the state's item naming the same concept as ``value`` under any status, or None: the one
    lookup the questionnaire policy, the case cards and the simulators share. A pain named by its site is also a pain
    at that site (:func:`symptom_names`), when no item has its name."""
    for status, item in cmas.slot_items(state, base):
        v = item.get("value")
        if isinstance(v, str) and vocab.same(base, v, value):
            return status, item
    if base == "symptom":  # "any jaw pain?" is answered by a chest pain that goes into the jaw
        for status, item in cmas.slot_items(state, base):
            v = item.get("value")
            if isinstance(v, str) and any(vocab.same(base, n, value) for n in symptom_names(v, item)[1:]):
                return status, item
    return None
