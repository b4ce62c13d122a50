"""Valid is not true: a model's frame enters the patient state only where it is grounded.

- A medical head value (symptom, history, medication...) must resolve in the shared vocabulary
  (``agent.core.ontology``: an ontology code, a dataset term, or an unambiguous ontology keyword), so a
  sentence, a repeated token or an insult in the ``value`` field never becomes a "symptom".
- Any other free-text value (onset, frequency, colour, occupation, residence, destination, relation...)
  must be grounded in the patient's own words: most of its content words occur in the utterance (a fuzzy
  match, so "two weeks ago" is grounded by "for two weeks" and "yellowish" by "yellow").
- Closed values (statuses, severity, progression) are checked by the CMAS schema and here against their
  option lists.

Whatever fails is set aside under its path with the reason, never applied (``agent.core.safety.admit_frames``
records it in the turn).
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import Any

from agent.core import cmas
from agent.core.numbers import with_digits
from agent.core.ontology import Vocabulary

PROGRESSIONS = frozenset({
    "unchanged with time", "gradually getting worse over time", "gradually getting better over time",
    "rapidly getting worse over time", "rapidly getting better over time", "fluctuating",
})
_SEVERITY = re.compile(r"^(?:\d|10)(?:\.\d)?$|^(?:mild|moderate|severe|excruciating|unbearable)$")
_STOP = frozenset("a an the of and or to in on at for with my i it ago is was be been about around like just".split())
_WORD = re.compile(r"[a-z0-9]+")
_NUMBER_WORDS = {w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}
_CLOSED = {"progression": PROGRESSIONS}


def _words(text: str) -> list[str]:
    return [_NUMBER_WORDS.get(w, w) for w in _WORD.findall(with_digits(text).lower())]


def grounded_in(value: str, utterance: str, threshold: float = 0.75) -> bool:
    """True when the content words of ``value`` occur (exactly or nearly: "yellowish"/"yellow") in ``utterance``."""
    wanted = [w for w in _words(value) if w not in _STOP] or _words(value)
    if not wanted:
        return False
    said = set(_words(utterance))
    hits = 0
    for w in wanted:
        if w in said or any(len(w) > 3 and SequenceMatcher(None, w, s).ratio() >= 0.8 for s in said):
            hits += 1
    return hits / len(wanted) >= threshold


def value_known(vocab: Vocabulary, base: str, value: str) -> bool:
    return (
        vocab.known(base, value)
        or vocab.code(base, value) is not None
        or (bool(value) and value.casefold() in cmas.OPEN_VALUES)
    )


def ground_item(base: str, item: dict[str, Any], utterance: str | None, vocab: Vocabulary) -> dict[str, str]:
    """Reasons, by attribute, why parts of ``item`` are not grounded (empty: all grounded)."""
    spec = cmas.SLOTS[base]
    bad: dict[str, str] = {}
    for key, raw in item.items():
        values = raw if isinstance(raw, list) else [raw]
        for v in values:
            if not isinstance(v, str):
                continue
            if key == "value" and spec.medical:
                if not value_known(vocab, base, v):
                    bad[key] = "not in the vocabulary"
            elif key in _CLOSED:
                if v.casefold() not in _CLOSED[key]:
                    bad[key] = f"not one of the {key} options"
            elif key == "severity":
                if not _SEVERITY.match(v.strip().casefold()):
                    bad[key] = "not a 0-10 number or mild/moderate/severe"
            elif key == "status" or key == "respone_to":
                continue  # enums (schema) / a value of another slot
            elif utterance is not None and not grounded_in(v, utterance):
                bad[key] = "not in the patient's words"
    return bad


def ground_frames(
    frames: list[dict[str, Any]], utterance: str | None, vocab: Vocabulary, rejected: dict[str, Any]
) -> list[dict[str, Any]]:
    """``frames`` with every ungrounded item (bad head value) or attribute removed; what goes is put in ``rejected``."""
    out = []
    for i, frame in enumerate(frames):
        slots: dict[str, list[Any]] = {}
        for name, items in (frame.get("slots") or {}).items():
            base = cmas.split_slot_name(name)[1]
            keep = []
            for j, item in enumerate(items):
                bad = ground_item(base, item, utterance, vocab)
                path = f"{i}.slots.{name}.{j}"
                if "value" in bad:  # a medical head the vocabulary lacks, or a record value never said
                    rejected[path] = {"unrecognized_value": item}
                    continue
                if bad:
                    rejected[path] = {"ungrounded": {k: item[k] for k in bad}, "why": bad}
                    item = {k: v for k, v in item.items() if k not in bad}
                if item and (not cmas.SLOTS[base].medical or "value" in item):
                    keep.append(item)
            if keep:
                slots[name] = keep
        out.append({"intent": frame["intent"], **({"slots": slots} if slots else {})})
    return out
