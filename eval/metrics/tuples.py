"""Unrolling NLU frames and POL actions into the tuples MediTOD scores (paper section 4.1, Appendix B).

Canonical vs non-canonical comes from the schema (``agent.core.cmas.SLOTS``): the head
``value`` of a medical slot and the attributes in ``SlotSpec.canonical`` are
canonical, everything else is not. The official MediTOD metric scripts fix the
details the paper leaves open; these functions follow them:

NLU (status prefix kept in the slot name):
  ``(intent,)``                                   frame without slots
  ``(intent, slot, value)``                       medical slot head value, canonical
  ``(intent, slot, value, attr, attr_value)``     one per (list) attribute value
  ``(intent, slot, key, key_value)``              record slots (travel, occupation, residence, basic_information)
POL (no status prefix; ``disease`` is a slot):
  ``(action,)``                                   action without slots
  ``(action, slot, value)``                       medical slot: canonical; record slot: non-canonical
  ``(action, slot, value, check_type)``           medical slot check: always canonical
  ``(action, slot, value, check_type, v)``        canonical iff check_type is a canonical attribute
  ``(action, slot, check_type)``                  record slot check (the official script leaves the record's
  ``(action, slot, check_type, v)``               value out of these): type canonical, values as above
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.core import cmas

Tuple = tuple[Any, ...]


def normalize_value(value: Any) -> Any:
    # Values (never intent/slot/attribute names) are compared lower-cased with whitespace runs collapsed to one
    # space and stripped, identically on the gold and the predicted side; non-strings are kept as they are.
    return " ".join(value.split()).lower() if isinstance(value, str) else value


@dataclass(frozen=True)
class TupleSets:
    canonical: frozenset[Tuple] = frozenset()
    non_canonical: frozenset[Tuple] = frozenset()

    @property
    def all(self) -> frozenset[Tuple]:
        return self.canonical | self.non_canonical

    def __or__(self, other: TupleSets) -> TupleSets:
        return TupleSets(self.canonical | other.canonical, self.non_canonical | other.non_canonical)


class _Collector:
    def __init__(self) -> None:
        self.canonical: set[Tuple] = set()
        self.non_canonical: set[Tuple] = set()

    def add(self, canonical: bool, *elements: Any) -> None:
        # Intent, slot and attribute names are schema enums, unchanged by normalize_value; values are normalised.
        t = tuple(normalize_value(e) for e in elements)
        (self.canonical if canonical else self.non_canonical).add(t)

    def freeze(self) -> TupleSets:
        return TupleSets(frozenset(self.canonical), frozenset(self.non_canonical))


def _as_list(v: Any) -> list:
    return v if isinstance(v, list) else [v]


def nlu_tuples(frames: list[dict]) -> TupleSets:
    """Tuples of one patient turn's NLU frames (prefix form, as :func:`agent.core.cmas.parse_nlu` returns them)."""
    out = _Collector()
    for frame in frames:
        intent = frame["intent"]
        slots = frame.get("slots") or {}
        if not any(slots.values()):
            out.add(True, intent)
            continue
        for slot, items in slots.items():
            spec = cmas.SLOTS[cmas.split_slot_name(slot)[1]]
            for item in items or []:
                if spec.medical:
                    head = item.get("value")
                    if head is not None:
                        out.add(True, intent, slot, head)
                    for attr, values in item.items():
                        if attr == "value":
                            continue
                        for v in _as_list(values):
                            out.add(attr in spec.canonical, intent, slot, head, attr, v)
                else:
                    for key, values in item.items():
                        for v in _as_list(values):
                            out.add(key in spec.canonical, intent, slot, key, v)
    return out.freeze()


def pol_tuples(actions: list[dict]) -> TupleSets:
    """Tuples of one doctor turn's actions (as :func:`agent.core.cmas.parse_actions` returns them)."""
    out = _Collector()
    for act in actions:
        name = act["action"]
        n_items = 0
        for slot, items in act.items():
            if slot == "action":
                continue
            spec = cmas.SLOTS[slot]
            for item in items or []:
                n_items += 1
                head = item.get("value")
                if head is not None:
                    out.add(spec.medical, name, slot, head)
                for check in item.get("checks") or []:
                    ctype = check["type"]
                    where = (name, slot, head, ctype) if spec.medical else (name, slot, ctype)
                    out.add(True, *where)
                    for v in check.get("values") or []:
                        out.add(ctype in spec.canonical, *where, v)
        if n_items == 0:
            out.add(True, name)
    return out.freeze()

