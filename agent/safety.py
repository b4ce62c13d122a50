"""Safety: red-flag rules over the patient state, the standing disclaimer, and patient-text hygiene.

Red flags are data (``configs/red_flags.yaml``): which CMAS values, in which slot and status,
all-of / any-of, and the escalation message. Values match through the vocabulary
(``agent.ontology``), so a rule written with the ontology's ``fainting`` fires on the
dataset's ``syncope``.

Patient text is data, never instructions: the only way it changes the patient state is
through NLU frames that are valid CMAS (:func:`admit_frames`); whatever else a model
produced is set aside and reported, never merged.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from agent import cmas
from agent.clinical_text import PhraseFinder
from agent.grounding import ground_frames
from agent.ontology import Vocabulary, default_vocabulary
from agent.paths import REPO_ROOT
from agent.tracker import update_state

DEFAULT_RULES = REPO_ROOT / "configs" / "red_flags.yaml"

DISCLAIMER = (
    "This history was taken by an automated assistant. It is not a diagnosis or medical advice and does not "
    "replace assessment by a qualified clinician. If you feel very unwell or your symptoms get worse, call your "
    "local emergency number."
)

LEVELS = ("emergency", "urgent", "possible")
"""Flag levels, most severe first: the one home (banner, note and sort order read it). A rule is written
``emergency`` or ``urgent``; a flag raised on uncertain evidence (a hedged or merely similar clause) is shown as
``possible``: the clinician sees it with its evidence, and the patient gets the rule's message all the same."""
RULE_LEVELS = LEVELS[:2]


class RuleError(ValueError):
    pass


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class Condition:
    slot: str
    values: tuple[str, ...]
    status: tuple[str, ...] = ("positive",)
    location: tuple[str, ...] = ()
    min_severity: float | None = None


@dataclass(frozen=True)
class Rule:
    id: str
    message: str
    level: str = "urgent"
    all_of: tuple[Condition, ...] = ()
    any_of: tuple[Condition, ...] = ()
    phrases: tuple[str, ...] = ()  # lay phrasings that raise the flag from the patient's own words


@dataclass
class RedFlag:
    """A fired rule; ``evidence``: the state items that made it fire (``{"slot": "positive_symptom", "value": ...}``)."""

    id: str
    message: str
    level: str
    evidence: list[dict] = field(default_factory=list)


@dataclass
class RuleSet:
    rules: list[Rule]
    vocab: Vocabulary
    finder: PhraseFinder | None = None  # the rules' phrases, with ConText status


def _condition(raw: object, where: str, vocab: Vocabulary) -> Condition:
    if not isinstance(raw, dict):
        raise RuleError(f"{where}: expected a mapping")
    if unknown := set(raw) - {"slot", "values", "status", "location", "min_severity"}:
        raise RuleError(f"{where}: unknown keys {sorted(unknown)}")
    slot = raw.get("slot")
    if slot not in cmas.SLOTS:
        raise RuleError(f"{where}: unknown slot type {slot!r}")
    spec = cmas.SLOTS[slot]
    values = raw.get("values")
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise RuleError(f"{where}: 'values' must be a non-empty list of strings")
    for v in values:
        if not vocab.known(slot, v):
            raise RuleError(f"{where}: {v!r} is neither an ontology code nor a configs/vocabulary.yaml term of {slot}")
    status = raw.get("status", ["positive"])
    status = [status] if isinstance(status, str) else status
    for s in status:
        if s not in spec.statuses:
            raise RuleError(f"{where}: status {s!r} is not one of {spec.statuses}")
    sev = raw.get("min_severity")
    if sev is not None and not isinstance(sev, int | float):
        raise RuleError(f"{where}: min_severity must be a number")
    return Condition(slot, tuple(values), tuple(status), tuple(raw.get("location") or ()), sev)


def load_rules(path: str | Path = DEFAULT_RULES, vocab: Vocabulary | None = None) -> RuleSet:
    vocab = vocab or default_vocabulary()
    raw = yaml.safe_load(Path(path).read_text())
    if not isinstance(raw, dict) or not isinstance(raw.get("rules"), list):
        raise RuleError(f"{path}: expected a mapping with a 'rules' list")
    rules, seen = [], set()
    for i, r in enumerate(raw["rules"]):
        where = f"{path}: rules.{i}"
        if not isinstance(r, dict):
            raise RuleError(f"{where}: expected a mapping")
        if unknown := set(r) - {"id", "message", "level", "all_of", "any_of", "phrases"}:
            raise RuleError(f"{where}: unknown keys {sorted(unknown)}")
        rid, message = r.get("id"), r.get("message")
        if not isinstance(rid, str) or not rid or rid in seen:
            raise RuleError(f"{where}: 'id' must be a unique non-empty string")
        if not isinstance(message, str) or not message.strip():
            raise RuleError(f"{where}: 'message' is required")
        level = r.get("level", "urgent")
        if level not in RULE_LEVELS:
            raise RuleError(f"{where}: level {level!r} is not one of {RULE_LEVELS}")
        all_of = tuple(_condition(c, f"{where}.all_of.{j}", vocab) for j, c in enumerate(r.get("all_of") or []))
        any_of = tuple(_condition(c, f"{where}.any_of.{j}", vocab) for j, c in enumerate(r.get("any_of") or []))
        if not all_of and not any_of:
            raise RuleError(f"{where}: a rule needs 'all_of' or 'any_of'")
        phrases = r.get("phrases") or []
        if not isinstance(phrases, list) or not all(isinstance(p, str) and p.strip() for p in phrases):
            raise RuleError(f"{where}: 'phrases' must be a list of non-empty strings")
        seen.add(rid)
        rules.append(Rule(rid, message.strip(), level, all_of, any_of, tuple(" ".join(p.lower().split()) for p in phrases)))
    finder = PhraseFinder((p, r.id) for r in rules for p in r.phrases)
    return RuleSet(rules, vocab, finder)


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _severity(item: dict) -> float | None:
    m = _NUMBER.search(str(item.get("severity") or ""))
    return float(m.group()) if m else None


def _matches(state: dict, cond: Condition, vocab: Vocabulary) -> list[dict]:
    spec = cmas.SLOTS[cond.slot]
    names = [f"{s}_{cond.slot}" for s in cond.status] if spec.statuses else [cond.slot]
    evidence = []
    for name in names:
        for item in state.get(name) or []:
            value = item.get("value")
            if not isinstance(value, str) or not any(vocab.same(cond.slot, value, v) for v in cond.values):
                continue
            if cond.location and not set(cond.location) & set(item.get("location") or []):
                continue
            if cond.min_severity is not None and ((sev := _severity(item)) is None or sev < cond.min_severity):
                continue
            evidence.append({"slot": name, "value": value, **({"severity": item["severity"]} if "severity" in item else {})})
    return evidence


def check_red_flags(state: dict, rules: RuleSet | None = None) -> list[RedFlag]:
    """The rules the state satisfies, in rule order, each with its evidence."""
    rules = rules or default_rules()
    flags = []
    for rule in rules.rules:
        evidence: list[dict] = []
        ok = True
        for cond in rule.all_of:
            found = _matches(state, cond, rules.vocab)
            if not found:
                ok = False
                break
            evidence.extend(found)
        if not ok:
            continue
        if rule.any_of:
            found = [e for cond in rule.any_of for e in _matches(state, cond, rules.vocab)]
            if not found:
                continue
            evidence.extend(found)
        flags.append(RedFlag(rule.id, rule.message, rule.level, evidence))
    return flags


def check_text_flags(text: str, rules: RuleSet | None = None) -> list[RedFlag]:
    """The rules whose lay phrasings the patient used, affirmed (ConText: "no blood in my sputum" does not fire,
    nor does "my father coughed up blood"), so a red flag never depends on the NLU alone."""
    rules = rules or default_rules()
    if rules.finder is None or not text.strip():
        return []
    hits: dict[str, list[dict]] = {}
    for f in rules.finder.find(text)[0]:
        if f.status == "positive" and not f.family:
            hits.setdefault(f.key, []).append({"text": f.text, "sentence": f.sentence})
    return [RedFlag(r.id, r.message, r.level, hits[r.id]) for r in rules.rules if r.id in hits]


@lru_cache(maxsize=1)
def default_rules() -> RuleSet:
    return load_rules()


# --------------------------------------------------------------------------- patient text is data

MAX_PATIENT_CHARS = 2000
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
_INJECTION = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bignore (all |any )?(your |the |previous |prior |above )*(instructions|rules|prompt)",
        r"\bdisregard (all |any )?(your |the |previous |prior |above )*(instructions|rules|prompt)",
        r"\b(system|developer) (prompt|message)\b",
        r"\byou are now\b",
        r"\bact as\b",
        r"\bpretend (to be|you are)\b",
        r"<\|?(im_start|im_end|system|assistant|user)\|?>",
        r"\bnew instructions\b",
    )
]


def clean_patient_text(text: str, max_chars: int = MAX_PATIENT_CHARS) -> str:
    """Patient text as it may enter a prompt: NFC, no control or bidi-override characters, bounded length.
    A lone UTF-16 surrogate (``"\\ud800"``: not a character, and no session store can encode it) becomes U+FFFD; a
    well-formed pair becomes its character. Nothing else changes: the words are the patient's and stay so."""
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = _CONTROL.sub("", unicodedata.normalize("NFC", text)).strip()
    return text[:max_chars]


def injection_markers(text: str) -> list[str]:
    """The instruction-like phrases found in patient text (for the session record; never used to act)."""
    found = [m for p in _INJECTION if (m := p.search(text))]
    return [m.group(0) for m in sorted(found, key=lambda m: m.start())]


@dataclass
class Admitted:
    """NLU output after the CMAS gate: ``frames`` are strict CMAS; ``rejected`` is what was set aside, by path."""

    frames: list[dict]
    rejected: dict


def admit_frames(raw: object, vocab: Vocabulary | None = None, utterance: str | None = None) -> Admitted:
    """The only door from NLU output to the patient state: schema-valid CMAS frames pass, anything else
    (unknown slots, attributes, intents, free text, instructions) is set aside and reported.

    With ``vocab``, the frames must also be grounded (``agent.grounding``): a medical head value the vocabulary
    does not know is set aside, and with ``utterance`` so is a free-text value the patient did not say.
    """
    lenient = cmas.parse_nlu_lenient(raw)
    frames, rejected = cmas.parse_nlu(lenient.value), dict(lenient.extra)
    if vocab is not None:
        frames = cmas.parse_nlu(ground_frames(frames, utterance, vocab, rejected))
    return Admitted(frames, rejected)


def apply_patient_turn(state: dict, raw_nlu: object, vocab: Vocabulary | None = None) -> tuple[dict, Admitted]:
    """The new patient state after one patient turn, changed only through admitted frames."""
    admitted = admit_frames(raw_nlu, vocab)
    return cmas.parse_state(update_state(state, admitted.frames)), admitted


# --------------------------------------------------------------------------- the agent is not a clinician

_CLINICIAN_CLAIMS = re.compile(
    r"\b(i am|i'm|i’m|as) (a |an |your )?(doctor|physician|clinician|nurse|gp|medical doctor|specialist)\b"
    r"|\bmy diagnosis is\b|\bi (can )?diagnose you\b|\byou (definitely|certainly) have\b",
    re.IGNORECASE,
)


def claims_clinician(text: str) -> bool:
    """True when agent text presents the agent as a clinician or states a diagnosis as fact."""
    return bool(_CLINICIAN_CLAIMS.search(text))
