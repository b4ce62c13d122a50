"""MediTOD's official NLU and POL metrics, exactly as the authors' ``metrics/nlu_metrics.py`` and
``metrics/pol_metrics.py`` define them (dair-iitd/MediTOD), on any prediction: raw JSON as a model wrote it,
schema-valid or not.

What the official definition does that ``eval.metrics.lenient`` (the schema-lenient variant) does not:
- every predicted key and value is unrolled, whether or not CMAS allows it on that slot;
- values are compared as written (no lower-casing or whitespace folding);
- a prediction whose unrolling fails (a dict where a list belongs, a frame without ``intent``, an unhashable value)
  is a format error and scores as empty;
- turns whose gold is empty or a bare ``inform`` are left out of P/R/F1 *and* out of joint accuracy's numerator,
  while joint accuracy still divides by all turns (so gold scored against itself is below 1.0 when such turns exist).

Slot classes follow the official substring tests: ``_symptom`` in the slot name (canonical attributes: location,
progression, severity, lesion_size, rash_swollen, itching, lesions_peel_off), ``_medical_history``,
``_family_history``, ``_habit``, ``_medical_test``, ``_exposure`` (no canonical attributes), ``_medication``
(respone_to, impact); occupation / residence / travel (``status`` canonical) and basic_information (all canonical);
any other slot contributes nothing.

POL: an action's slot is medical when it is exactly ``symptom`` (canonical check values: the symptom's canonical
attributes) or contains ``medical_history`` / ``family_history`` / ``habit`` / ``medical_test`` / ``exposure`` /
``disease`` (none canonical) or ``medication`` (respone_to, impact): (action, slot, value) and (action, slot, value,
check type) are canonical, (…, check type, v) canonical iff the type is a canonical attribute. occupation /
residence / travel give (action, slot, value) non-canonical and (action, slot, check type [, v]) with ``status``
canonical; basic_information gives (action, slot, value) non-canonical. An action whose unrolling fails
contributes nothing (the others of the turn still count); a dict instead of a list is one action. Turns whose
gold is empty or one bare ``inquire`` are left out of P/R/F1 and of joint accuracy's numerator. Precision@K is
over every doctor turn, none skipped: predicted turn i scores 1 when its whole tuple set equals the gold set of
one of turns i..i+K-1 of its dialogue.

Written from the published definitions; issue 8 moves ``medhx score``'s headline onto this module.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent.core.data import Example

_SYMPTOM_CANONICAL = (
    "location",
    "progression",
    "severity",
    "lesion_size",
    "rash_swollen",
    "itching",
    "lesions_peel_off",
)
_PLAIN = ("_medical_history", "_family_history", "_habit", "_medical_test", "_exposure")
_NO_HEAD = "dummy"


def _values(v: Any) -> list:
    return v if type(v) is list else [v]  # noqa: E721 - the official test is on the exact type


def _frame_sets(frame: Any) -> tuple[set, set]:
    intent = frame["intent"]
    slots = frame.get("slots", dict())
    if len(slots) == 0:
        return {(intent,)}, set()
    canon: set = set()
    noncanon: set = set()
    for slot, data in slots.items():
        canonical_attrs: tuple[str, ...] | None = None
        if "_symptom" in slot:
            canonical_attrs = _SYMPTOM_CANONICAL
        elif any(x in slot for x in _PLAIN):
            canonical_attrs = ()
        elif "_medication" in slot:
            canonical_attrs = ("respone_to", "impact")
        if canonical_attrs is not None:
            for item in data:
                if "value" in item:
                    head = item["value"]
                    canon.add((intent, slot, head))
                else:
                    head = _NO_HEAD
                for key in item:
                    if key == "value":
                        continue
                    target = canon if key in canonical_attrs else noncanon
                    for v in _values(item[key]):
                        target.add((intent, slot, head, key, v))
        elif slot in ("occupation", "residence", "travel"):
            for item in data:
                for key in item:
                    target = canon if key == "status" else noncanon
                    for v in _values(item[key]):
                        target.add((intent, slot, key, v))
        elif slot == "basic_information":
            for item in data:
                for key in item:
                    for v in _values(item[key]):
                        canon.add((intent, slot, key, v))
    return canon, noncanon


def nlu_sets(frames: Any) -> tuple[set, set]:
    """Canonical and non-canonical tuple sets of one turn; raises on what the official unrolling cannot read."""
    canon: set = set()
    noncanon: set = set()
    for frame in frames:
        c, n = _frame_sets(frame)
        canon |= c
        noncanon |= n
    return canon, noncanon


def nlu_skipped(gold: list[dict]) -> bool:
    return len(gold) == 0 or (
        len(gold) == 1 and gold[0]["intent"] == "inform" and len(gold[0].get("slots", dict())) == 0
    )


class _Tally:
    """Micro counts over scored turns, canonical and non-canonical apart, and the joint-accuracy numerator."""

    def __init__(self) -> None:
        self.c = [0, 0, 0]  # tp, fp, fn
        self.n = [0, 0, 0]
        self.joint = 0

    def add(self, gold: tuple[set, set], pred: tuple[set, set]) -> None:
        for counts, g, p in ((self.c, gold[0], pred[0]), (self.n, gold[1], pred[1])):
            counts[0] += len(g & p)
            counts[1] += len(p - g)
            counts[2] += len(g - p)
        self.joint += int((gold[0] | gold[1]) == (pred[0] | pred[1]))

    def report(self, n_turns: int) -> dict:
        both = [a + b for a, b in zip(self.c, self.n, strict=True)]
        return {"turns": n_turns, "joint_accuracy": self.joint / n_turns if n_turns else 0.0,
                "canonical": _prf(*self.c), "non_canonical": _prf(*self.n), "overall": _prf(*both)}


def _prf(tp: float, fp: float, fn: float) -> dict[str, float]:
    p = tp / (tp + fp) if tp + fp > 0 else 0.0
    r = tp / (tp + fn) if tp + fn > 0 else 0.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r > 0 else 0.0}


# --------------------------------------------------------------------------- POL

_POL_PLAIN = ("medical_history", "family_history", "habit", "medical_test", "exposure")


def _action_sets(entry: Any) -> tuple[set, set]:
    intent = entry["action"]
    slots = dict(entry)
    del slots["action"]
    if len(slots) == 0:
        return {(intent,)}, set()
    canon: set = set()
    noncanon: set = set()
    for slot, data in slots.items():
        canonical_attrs: tuple[str, ...] | None = None
        if slot == "symptom":
            canonical_attrs = _SYMPTOM_CANONICAL
        elif any(x in slot for x in _POL_PLAIN):
            canonical_attrs = ()
        elif "medication" in slot:
            canonical_attrs = ("respone_to", "impact")
        elif "disease" in slot:
            canonical_attrs = ()
        if canonical_attrs is not None:
            if type(data) is not list:  # noqa: E721 - the official assertion
                raise TypeError(f"{slot}: expected a list")
            for item in data:
                if "value" in item:
                    head = item["value"]
                    canon.add((intent, slot, head))
                else:
                    head = _NO_HEAD
                for check in item.get("checks", []):
                    ctype = check.get("type", _NO_HEAD)
                    if "type" in check:
                        canon.add((intent, slot, head, ctype))
                    for v in check.get("values", []):
                        (canon if ctype in canonical_attrs else noncanon).add((intent, slot, head, ctype, v))
        elif slot in ("occupation", "residence", "travel"):
            for item in data:
                if "value" in item:
                    noncanon.add((intent, slot, item["value"]))
                for check in item.get("checks", []):
                    ctype = check.get("type", _NO_HEAD)
                    if "type" in check:
                        canon.add((intent, slot, ctype))
                    for v in check.get("values", []):
                        (canon if ctype == "status" else noncanon).add((intent, slot, ctype, v))
        elif slot == "basic_information":
            for item in data:
                if "value" in item:
                    noncanon.add((intent, slot, item["value"]))
    return canon, noncanon


def pol_sets(actions: Any) -> tuple[set, set]:
    """Canonical and non-canonical tuple sets of one doctor turn; an action that cannot be unrolled adds nothing."""
    if type(actions) is dict:  # noqa: E721
        actions = [actions]
    canon: set = set()
    noncanon: set = set()
    for entry in actions:
        try:
            c, n = _action_sets(entry)
        except Exception:  # the official definition drops the action and keeps the turn's others
            c, n = set(), set()
        canon |= c
        noncanon |= n
    return canon, noncanon


def pol_skipped(gold: list[dict]) -> bool:
    return len(gold) == 0 or (len(gold) == 1 and gold[0]["action"] == "inquire" and len(gold[0]) == 1)


def _pred_pol_sets(predictions: Mapping, ex: Example) -> tuple[set, set]:
    pred = predictions.get((ex.dialog_id, ex.uttr_id))
    if pred is None:
        return set(), set()  # missing: an empty prediction (the official script has no such case)
    try:
        return pol_sets(pred)
    except Exception:  # not iterable at all (a number, say): nothing predicted
        return set(), set()


def score_pol_official(examples: Sequence[Example], predictions: Mapping[tuple[str, int], Any],
                       ks: Sequence[float] = (1, 4, 8, float("inf"))) -> dict:
    """The official POL report (unrounded): P/R/F1, joint accuracy and Precision@K."""
    tally = _Tally()
    for ex in examples:
        if not pol_skipped(ex.target):
            tally.add(pol_sets(ex.target), _pred_pol_sets(predictions, ex))
    by_dialogue: dict[str, list[Example]] = {}
    for ex in examples:
        by_dialogue.setdefault(ex.dialog_id, []).append(ex)
    hits = {k: 0 for k in ks}
    total = 0
    for turns in by_dialogue.values():
        turns = sorted(turns, key=lambda e: e.uttr_id)
        gold = [set().union(*pol_sets(e.target)) for e in turns]
        for i, ex in enumerate(turns):
            pred = set().union(*_pred_pol_sets(predictions, ex))
            total += 1
            for k in ks:
                end = len(turns) if k == float("inf") else min(i + int(k), len(turns))
                hits[k] += max(int(pred == gold[j]) for j in range(i, end))
    return {
        **tally.report(len(examples)),
        "precision_at_k": {
            ("inf" if k == float("inf") else str(int(k))): hits[k] / total if total else 0.0 for k in ks
        },
    }


def score_nlu_official(examples: Sequence[Example], predictions: Mapping[tuple[str, int], Any]) -> dict:
    """The official NLU report (unrounded): canonical / non-canonical / overall P/R/F1, joint accuracy, format
    errors (as a share of all turns, as the official script reports it). A missing prediction is a format error."""
    tally = _Tally()
    format_errors = 0
    for ex in examples:
        if nlu_skipped(ex.target):
            continue
        try:
            pred = nlu_sets(predictions[(ex.dialog_id, ex.uttr_id)])
        except Exception:  # the official definition: whatever cannot be unrolled scores as empty
            format_errors += 1
            pred = (set(), set())
        tally.add(nlu_sets(ex.target), pred)
    n = len(examples)
    return {**tally.report(n), "format_errors": format_errors / n if n else 0.0}
