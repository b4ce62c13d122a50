"""``medhx generalisation``: how the agent does with patients nobody tuned it on, through the real graph.

Three sets of held-aside material (``tests/generalisation/``, ``tests/data/red_flag_phrasings.yaml``), written by
helpers that had not seen the lexicon, the rules or the code, each run through a fresh interview on the given agent
config (default: the embedded default agent) exactly as a patient's turns would be:

- **stories**: a few patient turns each (the agent's own questions in between, unscripted); the final patient
  state is compared with the facts the patient stated: recall, wrong statuses, items that must not appear
  (invented facts, a relative's illness as the patient's own), stated red flags raised, flags on quiet stories;
- **statements**: single first turns carrying a red flag, or quiet ones close to one: share raised, false alarms;
- **phrasings**: per red-flag rule, lay phrasings and their negated forms: share firing, share of negations silent.

A flag raised as ``possible`` counts as raised, and on a quiet statement as a false alarm. Nothing here is tuned to:
the material measures the mechanisms (semantic matching, context rules, answer handling), not the lexicon.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agent.app.sessions import SessionStore
from agent.core import cmas
from agent.core.ontology import Vocabulary, default_vocabulary, symptom_names
from agent.core.paths import REPO_ROOT
from policies.agent_config import DEFAULT_CONFIG, load_config

MATERIAL = REPO_ROOT / "tests" / "generalisation"
STORIES = MATERIAL / "stories.yaml"
STATEMENTS = MATERIAL / "red_flag_statements.yaml"
PHRASINGS = REPO_ROOT / "tests" / "data" / "red_flag_phrasings.yaml"


@dataclass
class Interview:
    """What a patient's turns left behind: the patient state and the red flags raised (id -> level)."""

    state: dict
    flags: dict[str, str]
    doctor: list[str] = field(default_factory=list)


def interview(store: SessionStore, turns: Iterable[str]) -> Interview:
    """A fresh session, the patient's turns sent in order (whatever the agent asks in between)."""
    session = store.start()
    doctor = []
    for text in turns:
        if session.waiting_for() != "patient":
            break  # the interview closed
        answer = session.send(text)
        doctor.append(answer.text if answer is not None else "")
    st = session.state()
    return Interview(st.patient_state, {f["id"]: f["level"] for f in st.red_flags}, doctor)


def find_status(state: dict, slot: str, value: str, vocab: Vocabulary) -> str | None:
    """The status under which ``state`` holds ``value`` of ``slot`` (through the vocabulary), or None."""
    for status, item in cmas.slot_items(state, slot):
        if any(vocab.same(slot, n, value) for n in symptom_names(str(item.get("value", "")), item)):
            return status or "positive"
    return None


_TEST_STATUS = {"positive": "avail", "negative": "unavail"}
"""A medical test's statuses are whether it was done (CMAS ``avail``/``unavail``); material written by people who
think of it as any other fact says "positive"/"negative" for the same thing."""


def _as_cmas(item: dict) -> dict:
    """An item of the material with a medical test's status in CMAS terms (:data:`_TEST_STATUS`)."""
    if item.get("slot") == "medical_test" and item.get("status") in _TEST_STATUS:
        return {**item, "status": _TEST_STATUS[item["status"]]}
    return item


def _story_report(story: dict, got: Interview, vocab: Vocabulary) -> dict:
    expected = [_as_cmas(e) for e in story.get("expected") or []]
    found, wrong, missed = [], [], []
    for e in expected:
        status = find_status(got.state, e["slot"], e["value"], vocab)
        if status == e["status"]:
            found.append(e)
        elif status is not None:
            wrong.append({**e, "got": status})
        else:
            missed.append(e)
    violations = []
    for m in [_as_cmas(m) for m in story.get("must_not") or []]:
        status = find_status(got.state, m["slot"], m["value"], vocab)
        if status is not None and status == m.get("status", status):
            violations.append({**m, "got": status})
    listed = {(e["slot"], e["value"]) for e in [*expected, *(story.get("must_not") or [])]}
    unlisted = []
    for slot in cmas.SLOTS:
        if not cmas.SLOTS[slot].medical:
            continue
        for status, item in cmas.slot_items(got.state, slot):
            if not any(
                s == slot and any(vocab.same(slot, n, v) for n in symptom_names(str(item.get("value", "")), item))
                for s, v in listed
            ):
                unlisted.append({"slot": slot, "value": item.get("value"), "status": status or "positive"})
    stated = story.get("red_flags") or []
    raised = [any(r in got.flags for r in group) for group in stated]
    return {
        "id": story["id"],
        "system": story.get("system"),
        "expected": len(expected),
        "found": len(found),
        "wrong_status": wrong,
        "missed": missed,
        "must_not_present": violations,
        "unlisted": unlisted,
        "red_flags_stated": len(stated),
        "red_flags_raised": sum(raised),
        "flags": got.flags,
        "false_alarm": bool(got.flags) and not stated,
    }


def run_stories(
    store: SessionStore, path: Path = STORIES, vocab: Vocabulary | None = None, progress: bool = True
) -> dict:
    vocab = vocab or default_vocabulary()
    stories = _load(path)["stories"]
    rows = [_story_report(s, interview(store, s["patient"]), vocab) for s in _bar(stories, "stories", progress)]
    expected = sum(r["expected"] for r in rows)
    stated = sum(r["red_flags_stated"] for r in rows)
    quiet = [r for r in rows if not r["red_flags_stated"]]
    return {
        "stories": len(rows),
        "recall": round(sum(r["found"] for r in rows) / max(expected, 1), 3),
        "facts_stated": expected,
        "wrong_status": sum(len(r["wrong_status"]) for r in rows),
        "must_not_present": sum(len(r["must_not_present"]) for r in rows),
        "unlisted_items": sum(len(r["unlisted"]) for r in rows),
        "red_flags_stated": stated,
        "red_flags_raised": sum(r["red_flags_raised"] for r in rows),
        "quiet_stories": len(quiet),
        "quiet_stories_with_a_flag": sum(r["false_alarm"] for r in quiet),
        "by_story": rows,
    }


def run_statements(store: SessionStore, path: Path = STATEMENTS, progress: bool = True) -> dict:
    data = _load(path)
    flagged, quiet = data["flagged"], data["quiet"]
    hits, misses = 0, []
    for s in _bar(flagged, "red-flag statements", progress):
        got = interview(store, [s["text"]]).flags
        if any(r in got for r in s["expected"]):
            hits += 1
        else:
            misses.append({"text": s["text"], "expected": s["expected"], "raised": got})
    alarms = []
    for s in _bar(quiet, "quiet statements", progress):
        got = interview(store, [s["text"]]).flags
        if got:
            alarms.append({"text": s["text"], "raised": got})
    return {
        "flagged": len(flagged),
        "raised": hits,
        "raised_share": round(hits / max(len(flagged), 1), 3),
        "quiet": len(quiet),
        "false_alarms": len(alarms),
        "false_alarm_share": round(len(alarms) / max(len(quiet), 1), 3),
        "missed": misses,
        "alarms": alarms,
    }


def run_phrasings(store: SessionStore, path: Path = PHRASINGS, progress: bool = True) -> dict:
    data = _load(path)["rules"]
    per_rule, fired, silent, total = {}, 0, 0, 0
    for rule, entry in _bar(list(data.items()), "red-flag phrasings", progress):
        f = [rule in interview(store, [t]).flags for t in entry["fires"]]
        n = [rule not in interview(store, [t]).flags for t in entry["negated"]]
        per_rule[rule] = {
            "fires": f"{sum(f)}/{len(f)}",
            "negated_silent": f"{sum(n)}/{len(n)}",
            "missed": [t for t, ok in zip(entry["fires"], f, strict=True) if not ok],
            "negated_fired": [t for t, ok in zip(entry["negated"], n, strict=True) if not ok],
        }
        fired, silent, total = fired + sum(f), silent + sum(n), total + len(f)
    return {
        "phrasings": total,
        "fired": fired,
        "fired_share": round(fired / max(total, 1), 3),
        "negated_silent": silent,
        "negated_silent_share": round(silent / max(total, 1), 3),
        "rules_all_firing": sum(r["fires"].split("/")[0] == r["fires"].split("/")[1] for r in per_rule.values()),
        "rules": len(per_rule),
        "by_rule": per_rule,
    }


DEV_MATERIAL = REPO_ROOT / "data" / "generalisation_dev"


def run(
    config: str | Path = DEFAULT_CONFIG,
    parts: Iterable[str] = ("stories", "statements", "phrasings"),
    progress: bool = True,
    material: str | Path | None = None,
) -> dict:
    """The held-aside material's report; ``material``: another folder with ``stories.yaml`` and
    ``red_flag_statements.yaml`` in the same formats (the development set, ``data/generalisation_dev``, is the one
    mechanisms are tuned on; the held-aside set only measures them)."""
    cfg = load_config(config)
    out: dict[str, Any] = {"config": str(config), "material": str(material or MATERIAL)}
    paths = {"stories": STORIES, "statements": STATEMENTS, "phrasings": PHRASINGS}
    if material is not None:
        paths = {"stories": Path(material) / "stories.yaml", "statements": Path(material) / "red_flag_statements.yaml"}
        if unknown := [p for p in parts if p not in paths]:
            raise ValueError(f"{material}: has no {unknown} material (stories and statements only)")
    with tempfile.TemporaryDirectory(prefix="medhx-generalisation-") as tmp:
        cfg["session"] = {**(cfg.get("session") or {}), "store": "sqlite", "dir": tmp}
        with SessionStore(cfg) as store:
            for part in parts:
                out[part] = {"stories": run_stories, "statements": run_statements, "phrasings": run_phrasings}[part](
                    store, paths[part], progress=progress
                )
    return out


def table(report: dict) -> str:
    """The README's rows."""
    rows = ["| measure | value |", "| --- | --- |"]
    if s := report.get("stories"):
        rows += [
            f"| stories: recall of stated facts ({s['facts_stated']} facts, {s['stories']} stories) |"
            f" {s['recall']:.3f} |",
            f"| stories: facts with the wrong status | {s['wrong_status']} |",
            f"| stories: items that must not appear (invented, wrong owner) | {s['must_not_present']} |",
            f"| stories: state items not among the stated facts | {s['unlisted_items']} |",
            f"| stories: stated red flags raised | {s['red_flags_raised']}/{s['red_flags_stated']} |",
            f"| stories: quiet stories with a flag | {s['quiet_stories_with_a_flag']}/{s['quiet_stories']} |",
        ]
    if s := report.get("statements"):
        rows += [
            f"| red-flag statements raised | {s['raised']}/{s['flagged']} ({s['raised_share']:.2f}) |",
            f"| quiet statements with a flag (false alarms) | {s['false_alarms']}/{s['quiet']} "
            f"({s['false_alarm_share']:.2f}) |",
        ]
    if s := report.get("phrasings"):
        rows += [
            f"| rule phrasings firing | {s['fired']}/{s['phrasings']} ({s['fired_share']:.2f}) |",
            f"| negated phrasings silent | {s['negated_silent']}/{s['phrasings']} ({s['negated_silent_share']:.2f}) |",
            f"| rules with every phrasing firing | {s['rules_all_firing']}/{s['rules']} |",
        ]
    return "\n".join(rows)


def _load(path: Path) -> dict:
    try:
        raw = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError as exc:
        raise OSError(f"{path}: no such file") from exc
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping")
    return raw


def _bar(items: list, desc: str, progress: bool) -> Iterable:
    if not progress:
        return items
    from tqdm import tqdm

    return tqdm(items, desc=desc, file=sys.stderr)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "generalisation", help="held-aside stories, red-flag statements and rule phrasings through the graph"
    )
    p.add_argument("--config", default=str(DEFAULT_CONFIG), help="agent config (default: the embedded default agent)")
    p.add_argument(
        "--only",
        choices=["stories", "statements", "phrasings"],
        action="append",
        help="run only these parts (repeatable)",
    )
    p.add_argument(
        "--material",
        help="a folder with stories.yaml and red_flag_statements.yaml instead of the held-aside "
        "set (e.g. data/generalisation_dev, the development set mechanisms are tuned on)",
    )
    p.add_argument("--json", action="store_true", help="the whole report as JSON (default: the README table)")
    p.add_argument("--out", help="also write the JSON report here")
    p.set_defaults(func=_cmd)


def _cmd(args: argparse.Namespace) -> int:
    default_parts = ("stories", "statements") if args.material else ("stories", "statements", "phrasings")
    report = run(args.config, args.only or default_parts, material=args.material)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1) if args.json else table(report))
    return 0
