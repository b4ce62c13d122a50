"""Dialogue state tracking: merge each patient NLU turn into the CMAS patient state.

Rules (issue 2 §4): an item is identified by its slot type and head ``value`` (and, for a symptom the patient has
at places apart from every place it was placed before, begun at another time, those places: a second complaint of
its own, whose onset and character must not overwrite the first's; MediTOD keeps one item per value, and the
shared dialogues replay 104/104 either way); a value
that changes status moves to the new status list keeping its attributes, except a symptom
the patient has somewhere, denied somewhere else (that denial is an item of its own); scalar
attributes overwrite; the record slots (travel, occupation, residence,
basic_information) update their single record.

List attributes (location, characteristics, factors): MediTOD's gold states *replace*
a list when a turn mentions it again (replaying the shared dialogues: 104/104 turns
exact with ``replace``, 99/104 with ``union``), so ``replace`` is the default, because
POL models are trained on those gold states. ``union`` keeps every value ever
mentioned, which a clinician reading the state may prefer.
"""

from __future__ import annotations

import argparse
import copy
import json
from typing import Any, Literal

from agent.core import cmas
from agent.core.data import DEFAULT_DATA_DIR, Dialogue, load_dialogues


def _sides(places: list[str]) -> set[str]:
    """The sides a placement names: "left side", "left knee", MediTOD's "knee(L)"."""
    return {side for p in places for side in ("left", "right")
            if side in p.lower() or p.endswith(f"({side[0].upper()})")}


def same_place(a: list[str] | None, b: list[str] | None) -> bool:
    """Whether two placements say the same place: a place in common and no sides that differ ("right side, back"
    and "back, left side" are the two flanks)."""
    a, b = list(a or []), list(b or [])
    if (sa := _sides(a)) and (sb := _sides(b)) and not sa & sb:
        return False
    return bool(set(a) & set(b))


def _find(state: dict[str, Any], base: str, value: str, places: list[str] | None = None) -> tuple[str, int] | None:
    """Where the item of ``value`` is; of several (the same symptom at two places), the one at one of ``places``."""
    found = [(f"{status}_{base}", i, item) for status in cmas.SLOTS[base].statuses
             for i, item in enumerate(state.get(f"{status}_{base}", [])) if item.get("value") == value]
    placed = [(n, i) for n, i, item in found if places and same_place(places, item.get("location"))]
    return placed[0] if placed else (found[0][0], found[0][1]) if found else None


ListMerge = Literal["replace", "union"]


def _merge_item(target: dict[str, Any], new: dict[str, Any], spec: cmas.SlotSpec, list_merge: ListMerge) -> None:
    for attr, v in new.items():
        if attr in spec.lists and list_merge == "union":
            merged = list(target.get(attr, []))
            merged.extend(x for x in v if x not in merged)
            target[attr] = merged
        else:
            target[attr] = v


def _elsewhere_too(state: dict[str, Any], name: str, base: str, item: dict[str, Any]) -> bool:
    """A symptom the patient has at other places than every item of that value already placed, begun at another
    time: a second complaint of its own ("a colicky pain in my right side" since four hours, then "my back's been
    sore on the left for a week"), kept beside the first so the first keeps its onset and character. A place shared
    with an item, an item not placed or not dated yet, or a new place said without a time ("it goes down my arm":
    where the pain spreads) is the same complaint (merged as before)."""
    if base != "symptom" or name != f"positive_{base}" or not item.get("location") or not item.get("onset"):
        return False
    same = [it for it in state.get(name) or [] if it.get("value") == item.get("value")]
    return bool(same) and all(it.get("location") and not same_place(item["location"], it["location"])
                              and it.get("onset") and it["onset"] != item["onset"] for it in same)


def _denied_elsewhere(have: dict[str, Any], where: str, item: dict[str, Any], status: str | None, base: str) -> bool:
    """A symptom the patient has, denied (or not known) at a place: "no, the pain doesn't go to my back" of a chest
    pain. The denial is about that place only, so it is kept as its own item and the positive one stays; moving the
    item would deny the chest pain itself. Only a denial of every place the positive item is at moves it."""
    if base != "symptom" or status not in ("negative", "unknown") or where != f"positive_{base}":
        return False
    theirs, here = set(item.get("location") or []), set(have.get("location") or [])
    return bool(theirs) and not (here and here <= theirs)


def update_state(
    state: dict[str, Any], nlu_frames: list[dict[str, Any]], list_merge: ListMerge = "replace"
) -> dict[str, Any]:
    """The patient state after one patient turn; ``state`` is left unchanged."""
    new = copy.deepcopy(state)
    for frame in nlu_frames:
        for name, items in (frame.get("slots") or {}).items():
            status, base = cmas.split_slot_name(name)
            spec = cmas.SLOTS[base]
            if base in cmas.RECORD_SLOTS:
                record = new.setdefault(name, [{}])
                for item in items:
                    _merge_item(record[0], item, spec, list_merge)
                continue
            for item in items:
                found = _find(new, base, item.get("value"), item.get("location"))
                if found is None or _elsewhere_too(new, name, base, item):
                    new.setdefault(name, []).append(copy.deepcopy(item))
                    continue
                where, i = found
                if _denied_elsewhere(new[where][i], where, item, status, base):
                    new.setdefault(name, []).append(copy.deepcopy(item))  # beside the positive, never over it
                    continue
                if where == name:
                    _merge_item(new[where][i], item, spec, list_merge)
                else:
                    moved = new[where].pop(i)
                    if not new[where]:
                        del new[where]
                    _merge_item(moved, item, spec, list_merge)
                    new.setdefault(name, []).append(moved)
    return new


# --------------------------------------------------------------------------- evaluation against gold


class RuleTracker:
    """The state tracker as a dialogue module (``dst: {kind: rule, list_merge: replace|union}``)."""

    def __init__(self, list_merge: ListMerge = "replace"):
        if list_merge not in ("replace", "union"):
            raise ValueError(f"dst: list_merge must be 'replace' or 'union', got {list_merge!r}")
        self.list_merge: ListMerge = list_merge

    def update(self, state: dict[str, Any], frames: list[dict[str, Any]]) -> dict[str, Any]:
        return update_state(state, frames, self.list_merge)


def canonical_state(state: dict[str, Any]) -> dict[str, Any]:
    """Order-free form for comparison: the order of items and of list values carries no meaning."""
    out = {}
    for name, items in state.items():
        if not items:
            continue
        norm = [{k: sorted(v) if isinstance(v, list) else v for k, v in item.items()} for item in items]
        out[name] = sorted(norm, key=lambda x: json.dumps(x, sort_keys=True))
    return out


def diff_states(pred: dict[str, Any], gold: dict[str, Any]) -> list[str]:
    """Human-readable differences, one per item: what the tracker has that gold lacks and vice versa."""
    p, g = canonical_state(pred), canonical_state(gold)
    reasons = []
    for name in sorted(set(p) | set(g)):
        pi = {json.dumps(x, sort_keys=True) for x in p.get(name, [])}
        gi = {json.dumps(x, sort_keys=True) for x in g.get(name, [])}
        reasons += [f"{name}: tracker has {x} not in gold" for x in sorted(pi - gi)]
        reasons += [f"{name}: gold has {x} not produced by the tracker" for x in sorted(gi - pi)]
    return reasons


def _explain(prev_gold: dict[str, Any], nlu: list[dict[str, Any]], gold: dict[str, Any], pred: dict[str, Any]) -> str:
    """Why a replay mismatches: the gold state change is not derivable from the turn's gold NLU."""
    gold_values = {(n, it.get("value")) for n, its in gold.items() for it in its}
    prev_values = {(n, it.get("value")) for n, its in prev_gold.items() for it in its}
    nlu_values = {(n, it.get("value")) for f in nlu for n, its in (f.get("slots") or {}).items() for it in its}
    dropped = sorted(str(v) for v in prev_values - gold_values if v not in nlu_values)
    if dropped:
        return f"annotation: gold state drops or re-files {', '.join(dropped)} with no NLU evidence in this turn"
    appeared = sorted(str(v) for v in gold_values - prev_values - nlu_values)
    if appeared:
        return f"annotation: gold state gains {', '.join(appeared)} absent from this turn's NLU"
    for f in nlu:
        for name, items in (f.get("slots") or {}).items():
            spec = cmas.SLOTS[cmas.split_slot_name(name)[1]]
            if any(a in spec.lists for it in items for a in it):
                return ("list attribute: gold replaces the list this turn mentions; the tracker unions it "
                        "(--list-merge union)")
    return "annotation: gold state edits attributes of an item the turn's NLU does not mention"


def replay(dialogues: list[Dialogue], list_merge: ListMerge = "replace") -> dict[str, Any]:
    """Replay gold NLU through the tracker, resyncing to the gold state after every patient turn."""
    turns, exact, mismatches = 0, 0, []
    for d in dialogues:
        prev: dict[str, Any] = {}
        for u in d.utterances:
            if u.speaker != "patient" or u.nlu is None or u.dialog_state is None:
                continue
            turns += 1
            pred = update_state(prev, u.nlu, list_merge)
            if canonical_state(pred) == canonical_state(u.dialog_state):
                exact += 1
            else:
                mismatches.append(
                    {
                        "dialog_id": d.dialog_id,
                        "uttr_id": u.uttr_id,
                        "reason": _explain(prev, u.nlu, u.dialog_state, pred),
                        "diff": diff_states(pred, u.dialog_state),
                    }
                )
            prev = u.dialog_state
    return {
        "turns": turns,
        "exact_match": exact / turns if turns else 0.0,
        "list_merge": list_merge,
        "mismatches": mismatches,
    }


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("track", help="replay gold NLU through the state tracker and compare with gold states")
    p.add_argument("--data", default=str(DEFAULT_DATA_DIR))
    p.add_argument("--split", default="all")
    p.add_argument("--list-merge", choices=["replace", "union"], default="replace")
    p.set_defaults(func=_cmd_track)


def _cmd_track(args: argparse.Namespace) -> int:
    print(json.dumps(replay(load_dialogues(args.data, args.split), args.list_merge), indent=2))
    return 0
