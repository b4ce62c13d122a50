"""MediTOD dialogues: loading the release layout, raw OSCE transcripts, and task examples.

The full dataset is licensed (UMLS), so everything loads from a user-given
directory in the release's own layout: ``dialogs.json`` (id -> {"utterances": [...]})
plus ``train_ids.json`` / ``valid_ids.json`` / ``test_ids.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from agent.core import cmas
from agent.core.paths import REPO_ROOT

SPLITS = ("train", "valid", "test")
Speaker = Literal["doctor", "patient"]
Task = Literal["nlu", "pol", "nlg"]

DEFAULT_DATA_DIR = REPO_ROOT / "data" / "meditod"
DEFAULT_OSCE_DIR = REPO_ROOT / "data" / "osce_transcripts"


@dataclass
class Utterance:
    speaker: Speaker
    uttr_id: int
    text: str
    keywords: list[str] = field(default_factory=list)
    nlu: list[dict[str, Any]] | None = None
    dialog_state: dict[str, Any] | None = None
    actions: list[dict[str, Any]] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "speaker": self.speaker,
            "uttr_id": self.uttr_id,
            "text": self.text,
            "keywords": self.keywords,
        }
        if self.speaker == "patient":
            if self.dialog_state is not None:
                out["dialog_state"] = self.dialog_state
            if self.nlu is not None:
                out["nlu"] = self.nlu
        elif self.actions is not None:
            out["actions"] = self.actions
        return out


@dataclass
class Dialogue:
    dialog_id: str
    utterances: list[Utterance]
    split: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"utterances": [u.to_json() for u in self.utterances]}


class DataError(ValueError):
    pass


def _utterance(raw: dict[str, Any], where: str, strict: bool) -> Utterance:
    try:
        speaker, uttr_id, text = raw["speaker"], raw["uttr_id"], raw["text"]
    except KeyError as exc:
        raise DataError(f"{where}: missing key {exc}") from None
    if speaker not in ("doctor", "patient"):
        raise DataError(f"{where}: unknown speaker {speaker!r}")
    u = Utterance(speaker, int(uttr_id), text, list(raw.get("keywords", [])))
    try:
        if "nlu" in raw:
            u.nlu = cmas.parse_nlu(raw["nlu"]) if strict else raw["nlu"]
        if "dialog_state" in raw:
            u.dialog_state = cmas.parse_state(raw["dialog_state"]) if strict else raw["dialog_state"]
        if "actions" in raw:
            u.actions = cmas.parse_actions(raw["actions"]) if strict else raw["actions"]
    except cmas.CMASError as exc:
        raise DataError(f"{where}: {exc}") from None
    return u


def load_dialogs_file(path: str | Path, strict: bool = True) -> dict[str, Dialogue]:
    raw = json.loads(Path(path).read_text())
    if not isinstance(raw, dict):
        raise DataError(f"{path}: expected an object of dialogue id -> dialogue")
    out = {}
    for did, dl in raw.items():
        utts = dl.get("utterances") if isinstance(dl, dict) else None
        if not isinstance(utts, list):
            raise DataError(f"{path}: dialogue {did} has no 'utterances' list")
        out[str(did)] = Dialogue(
            str(did), [_utterance(u, f"dialogue {did} utterance {i}", strict) for i, u in enumerate(utts)]
        )
    return out


def load_split_ids(data_dir: str | Path) -> dict[str, list[str]]:
    data_dir = Path(data_dir)
    ids = {}
    for split in SPLITS:
        p = data_dir / f"{split}_ids.json"
        ids[split] = [str(x) for x in json.loads(p.read_text())] if p.exists() else []
    return ids


def load_dialogues(data_dir: str | Path = DEFAULT_DATA_DIR, split: str = "all", strict: bool = True) -> list[Dialogue]:
    """Dialogues of one split (``train``/``valid``/``test``) or ``all``, in split-file order."""
    data_dir = Path(data_dir)
    if not (data_dir / "dialogs.json").exists():
        raise DataError(f"{data_dir}: no dialogs.json (expected the MediTOD release layout)")
    dialogs = load_dialogs_file(data_dir / "dialogs.json", strict)
    ids = load_split_ids(data_dir)
    for split_name, members in ids.items():
        for did in members:
            if did in dialogs:
                dialogs[did].split = split_name
    if split == "all":
        return list(dialogs.values())
    if split not in SPLITS:
        raise DataError(f"unknown split {split!r}; use one of {SPLITS + ('all',)}")
    missing = [d for d in ids[split] if d not in dialogs]
    if missing:
        raise DataError(f"{split}_ids.json names dialogues missing from dialogs.json: {missing[:5]}")
    return [dialogs[d] for d in ids[split]]


def data_hash(dialogues: Iterable[Dialogue]) -> str:
    h = hashlib.sha256()
    for d in dialogues:
        h.update(json.dumps([d.dialog_id, d.to_json()], sort_keys=True).encode())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------- raw OSCE transcripts

_LINE = re.compile(r"^\s*([DP])\s*:\s*(.*)$")


def parse_osce_transcript(text: str, dialog_id: str) -> Dialogue:
    """``D:``/``P:`` lines -> an unannotated dialogue; continuation lines join the previous turn."""
    turns: list[list[str]] = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            speaker = "doctor" if m.group(1) == "D" else "patient"
            if turns and turns[-1][0] == speaker:
                turns[-1][1] += " " + m.group(2).strip()
            else:
                turns.append([speaker, m.group(2).strip()])
        elif line.strip() and turns:
            turns[-1][1] += " " + line.strip()
    utts = [Utterance(cast(Speaker, s), i, t.strip()) for i, (s, t) in enumerate(turns) if t.strip()]
    for i, u in enumerate(utts):
        u.uttr_id = i
    return Dialogue(dialog_id, utts)


def load_osce(directory: str | Path = DEFAULT_OSCE_DIR) -> list[Dialogue]:
    return [parse_osce_transcript(p.read_text(errors="replace"), p.stem) for p in sorted(Path(directory).glob("*.txt"))]


# --------------------------------------------------------------------------- task examples


@dataclass
class Example:
    """One supervised example, as MediTOD defines its three tasks (paper section 4, Table 11).

    ``history``: earlier turns (speaker, text), oldest first, at most the window;
    ``last_exchange``: the doctor turn and patient turn the prediction is about;
    ``state``: the patient state before the doctor's turn (POL);
    ``actions``: the doctor's actions to verbalise (NLG).
    """

    task: Task
    dialog_id: str
    uttr_id: int
    history: list[tuple[str, str]]
    last_exchange: list[tuple[str, str]]
    target: Any
    state: dict[str, Any] | None = None
    actions: list[dict[str, Any]] | None = None


Turns = list[tuple[str, str]]  # (speaker, text), oldest first: a dataset dialogue's or a live session's


def _window(turns: Turns, end: int, history: int | None) -> Turns:
    start = 0 if history is None else max(0, end - history)
    return list(turns[start:end])


def _prev(turns: Turns, i: int, speaker: str) -> int | None:
    for j in range(i - 1, -1, -1):
        if turns[j][0] == speaker:
            return j
    return None


def nlu_window(turns: Turns, i: int, history: int | None = 4) -> tuple[Turns, Turns]:
    """``(history, last_exchange)`` for patient turn ``i``: the doctor turn before it and the turn itself, and up
    to ``history`` turns before those. One windowing for training data and the live agent."""
    j = i - 1 if i > 0 and turns[i - 1][0] == "doctor" else i
    return _window(turns, j, history), _window(turns, i + 1, i + 1 - j)


def doctor_window(turns: Turns, i: int, history: int | None = 4) -> tuple[Turns, Turns, int | None]:
    """``(history, last_exchange, p)`` for doctor turn ``i`` (POL, NLG): the last exchange runs from the doctor
    turn before the previous patient turn; ``p`` is that patient turn's index (its state conditions POL)."""
    p = _prev(turns, i, "patient")
    q = _prev(turns, p, "doctor") if p is not None else None
    start = q if q is not None else (p if p is not None else i)
    return _window(turns, start, history), _window(turns, i, i - start), p


def nlu_examples(dialogues: Iterable[Dialogue], history: int | None = 4) -> list[Example]:
    """Patient turn i: history + (doctor turn before, patient turn i) -> the turn's ``nlu``."""
    out = []
    for d in dialogues:
        turns: Turns = [(u.speaker, u.text) for u in d.utterances]
        for i, utt in enumerate(d.utterances):
            if utt.speaker != "patient" or utt.nlu is None:
                continue
            hist, last = nlu_window(turns, i, history)
            out.append(Example("nlu", d.dialog_id, utt.uttr_id, hist, last, utt.nlu))
    return out


def _doctor_examples(task: Task, dialogues: Iterable[Dialogue], history: int | None) -> list[Example]:
    out = []
    for d in dialogues:
        turns: Turns = [(u.speaker, u.text) for u in d.utterances]
        for i, utt in enumerate(d.utterances):
            if utt.speaker != "doctor" or utt.actions is None or i == 0:
                continue
            hist, last, p = doctor_window(turns, i, history)
            state = d.utterances[p].dialog_state if p is not None else None
            target = utt.actions if task == "pol" else utt.text
            out.append(Example(task, d.dialog_id, utt.uttr_id, hist, last, target, state=state or {},
                               actions=utt.actions if task == "nlg" else None))
    return out


def pol_examples(dialogues: Iterable[Dialogue], history: int | None = 4) -> list[Example]:
    """Doctor turn i (not the first utterance): previous patient state + history + last exchange -> ``actions``."""
    return _doctor_examples("pol", dialogues, history)


def nlg_examples(dialogues: Iterable[Dialogue], history: int | None = 4) -> list[Example]:
    """Doctor turn i: its ``actions`` + history + last exchange -> its text."""
    return _doctor_examples("nlg", dialogues, history)


def task_examples(task: Task, dialogues: Iterable[Dialogue], history: int | None = 4) -> list[Example]:
    return {"nlu": nlu_examples, "pol": pol_examples, "nlg": nlg_examples}[task](dialogues, history)


# --------------------------------------------------------------------------- stats / CLI


def stats(dialogues: list[Dialogue]) -> dict[str, Any]:
    per_split = Counter(d.split or "none" for d in dialogues)
    speakers: Counter[str] = Counter()
    intents: Counter[str] = Counter()
    actions: Counter[str] = Counter()
    slot_types: Counter[str] = Counter()
    for d in dialogues:
        for u in d.utterances:
            speakers[u.speaker] += 1
            for f in u.nlu or []:
                intents[f["intent"]] += 1
                for s in f.get("slots", {}):
                    slot_types[s] += 1
            for a in u.actions or []:
                actions[a["action"]] += 1
                for s in a:
                    if s != "action":
                        slot_types[f"action:{s}"] += 1
    return {
        "dialogues": len(dialogues),
        "utterances": sum(speakers.values()),
        "per_split": dict(per_split),
        "speakers": dict(speakers),
        "patient_intents": dict(intents),
        "doctor_actions": dict(actions),
        "slot_types": dict(sorted(slot_types.items())),
    }


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("data", help="inspect a MediTOD-format dataset")
    dsub = p.add_subparsers(dest="data_command", required=True)
    s = dsub.add_parser("stats", help="counts per split, speaker, intent and slot type")
    s.add_argument("--data", default=str(DEFAULT_DATA_DIR), help="directory with dialogs.json and *_ids.json")
    s.add_argument("--split", default="all")
    s.set_defaults(func=_cmd_stats)


def _cmd_stats(args: argparse.Namespace) -> int:
    print(json.dumps(stats(load_dialogues(args.data, args.split)), indent=2))
    return 0
