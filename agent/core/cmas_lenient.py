"""Lenient CMAS parsing: keep what fits the schema, set the rest aside by path.

Why apart from the strict parsers in :mod:`agent.core.cmas`: a model's output that is partly off-schema (an unknown
slot, an attribute the slot does not have, an over-long value) should still give the turn what it got right, and
what it got wrong must be recorded, never silently dropped. The strict parsers stay the gate: what this keeps is
parsed strictly again, and type errors that survive key filtering go to ``extra`` too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.core.bounds import any_too_long, bound_record, set_aside, too_long
from agent.core.cmas import (
    DOCTOR_ACTIONS,
    PATIENT_INTENTS,
    SLOTS,
    CMASError,
    Validated,
    parse_actions,
    parse_nlu,
    split_slot_name,
)


@dataclass
class Lenient:
    """Result of lenient parsing: the schema-valid part and what did not fit, by path."""

    value: Any
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n_extra(self) -> int:
        return len(self.extra)


def _keep_known(item: Any, allowed: set[str], path: str, extra: dict[str, Any]) -> dict[str, Any] | None:
    if not isinstance(item, dict):
        extra[path] = item
        return None
    kept = {}
    for k, v in item.items():
        if k not in allowed:
            extra[f"{path}.{k}"] = v
        elif isinstance(v, list) and any_too_long(v):  # the over-long strings of a list go, the others stay
            for n, x in enumerate(v):
                if too_long(x):
                    extra[f"{path}.{k}.{n}"] = set_aside(x)
            if short := [x for x in v if not too_long(x)]:
                kept[k] = short
        elif too_long(v):
            extra[f"{path}.{k}"] = set_aside(v)
        else:
            kept[k] = v
    return kept


def _lenient_slots(slots: Any, path: str, extra: dict[str, Any], status_attr: bool = False) -> dict[str, Any]:
    out: dict[str, list[Any]] = {}
    if not isinstance(slots, dict):
        extra[path] = slots
        return out
    for name, items in slots.items():
        try:
            base = name if status_attr else split_slot_name(name)[1]
            spec = SLOTS[base]
        except KeyError:
            extra[f"{path}.{name}"] = items
            continue
        if not isinstance(items, list):
            items = [items]
        allowed = set(spec.attributes) | ({"status"} if status_attr else set())
        kept = []
        for j, it in enumerate(items):
            k = _keep_known(it, allowed, f"{path}.{name}.{j}", extra)
            if spec.medical and k and "value" not in k and too_long(it.get("value")):
                continue  # its head value was too long (set aside): the item names nothing any more
            if k:
                kept.append(k)
        if kept:
            out[name] = kept
    return out


def parse_nlu_lenient(obj: Any) -> Lenient:
    """Keep what fits CMAS; unknown slots, attributes and intents go to ``extra`` (never dropped silently)."""
    extra: dict[str, Any] = {}
    frames = obj if isinstance(obj, list) else [obj]
    kept = []
    for i, frame in enumerate(frames):
        if not isinstance(frame, dict) or frame.get("intent") not in PATIENT_INTENTS:
            extra[str(i)] = frame
            continue
        out: dict[str, Any] = {"intent": frame["intent"]}
        for k, v in frame.items():
            if k == "slots":
                slots = _lenient_slots(v, f"{i}.slots", extra)
                if slots:
                    out["slots"] = slots
            elif k != "intent":
                extra[f"{i}.{k}"] = v
        kept.append(out)
    return Lenient(_strict_or_extra(parse_nlu, kept, extra), bound_record(extra))


def parse_actions_lenient(obj: Any) -> Lenient:
    if isinstance(obj, Validated) and obj.unchanged("actions"):
        return Lenient(obj)
    extra: dict[str, Any] = {}
    actions = obj if isinstance(obj, list) else [obj]
    kept = []
    for i, act in enumerate(actions):
        if not isinstance(act, dict) or act.get("action") not in DOCTOR_ACTIONS:
            extra[str(i)] = act
            continue
        out: dict[str, Any] = {"action": act["action"]}
        for slot, items in act.items():
            if slot == "action":
                continue
            if slot not in SLOTS:
                extra[f"{i}.{slot}"] = items
                continue
            good = []
            for j, it in enumerate(items if isinstance(items, list) else [items]):
                item = _keep_known(it, {"value", "checks"}, f"{i}.{slot}.{j}", extra)
                if item is None or not isinstance(item.get("value"), str):
                    if item is not None and not too_long(it.get("value")):  # (an over-long one is recorded)
                        extra[f"{i}.{slot}.{j}"] = it
                    continue
                checks, written = [], item.get("checks") or []
                if not isinstance(written, list):  # a check list that is not a list is set aside whole
                    extra[f"{i}.{slot}.{j}.checks"] = written
                    written = []
                for k, chk in enumerate(written):
                    chk = _keep_known(chk, {"type", "values"}, f"{i}.{slot}.{j}.checks.{k}", extra)
                    if chk and chk.get("type") in SLOTS[slot].check_types:
                        checks.append(chk)
                    elif chk:
                        extra[f"{i}.{slot}.{j}.checks.{k}"] = chk
                if "checks" in item:
                    item["checks"] = checks
                good.append(item)
            if good:
                out[slot] = good
        kept.append(out)
    return Lenient(_strict_or_extra(parse_actions, kept, extra), bound_record(extra))


def _strict_or_extra(parse: Callable[[list[Any]], list[Any]], kept: list[Any], extra: dict[str, Any]) -> list[Any]:
    """Type errors that survive key filtering (a list where a string belongs) also go to ``extra``."""
    result = []
    for i, item in enumerate(kept):
        try:
            result.extend(parse([item]))
        except CMASError as exc:
            extra[f"{i}:{exc.path}"] = item
    return result
