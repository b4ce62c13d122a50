"""Distant supervision: the clinical NLU labels the OSCE transcripts, giving silver training data.

``medhx silver --out DIR`` writes a MediTOD release-layout directory (``dialogs.json``, ``*_ids.json``) that
``medhx train`` reads like the real dataset:

- patient turns carry the clinical NLU's frames (``nlu``) and the tracked state (``dialog_state``);
- doctor turns carry silver actions: the concepts the doctor names become ``inquire`` items and question
  cues ("when did it start?", "on a scale of 1 to 10") become checks, about the named item or, when none is
  named, the symptom under discussion; so short patient answers are read in context, as in the live agent.

Never labelled: the transcripts of ``data/eval_holdout.txt`` (evaluation material), any utterance of another
transcript that contains a passage of them (stock questions recur across transcripts), and the sources of the
shared annotated dialogues (RES0006 -> 115, RES0045 -> 317), so a model trained on silver data is scored on
dialogues it never saw. ``--gold DIR --gold-train IDS --gold-valid IDS`` adds gold dialogues to the splits.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from tqdm import tqdm

from agent.core import cmas
from agent.core.data import DEFAULT_OSCE_DIR, Dialogue, Utterance, load_dialogues, load_osce
from agent.core.paths import REPO_ROOT
from agent.core.protocol import TurnContext
from agent.core.tracker import update_state
from policies.nlu.clinical import ClinicalNLU

HOLDOUT_FILE = REPO_ROOT / "data" / "eval_holdout.txt"
SHARED_SOURCES = {"RES0006": "115", "RES0045": "317"}

_CHECK_CUES: list[tuple[str, re.Pattern]] = [
    ("onset", re.compile(r"\bwhen did|\bhow long ago\b|\bwhen (?:was|were)\b.*\bstart|\bstart(?:ed)?\b")),
    ("duration", re.compile(r"\bhow long (?:does|do|did) .*\blast|\bconstant\b|\ball the time\b")),
    ("frequency", re.compile(r"\bhow often\b|\bhow many times\b|\bhow frequent")),
    ("severity", re.compile(r"\bscale\b|\brate\b|\bhow bad\b|\bhow severe\b|\bout of (?:10|ten)\b")),
    ("progression", re.compile(r"\bgetting (?:worse|better)\b|\bstaying the same\b|\bchanged over\b")),
    ("location", re.compile(r"\bwhere\b")),
    ("ana_factors", re.compile(r"\bworse\b|\bbetter\b|\btrigger|\brelieve|\bhelps?\b")),
    ("characteristics", re.compile(r"\bdescribe\b|\bwhat kind\b|\bdry or\b|\bsharp\b|\bdull\b")),
]
_SYMPTOM_ONLY = {"onset", "duration", "severity", "progression", "location", "ana_factors", "characteristics"}


def read_holdout(path: str | Path = HOLDOUT_FILE) -> set[str]:
    return {line.strip() for line in Path(path).read_text().splitlines() if line.strip()}


MIN_SHARED_CHARS = 20  # a holdout sentence this long is a passage
SHARED_WORDS = 10  # ... and so is any run of this many words of a holdout utterance


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower())


def _norm(text: str) -> str:
    """Words only, lower-cased, one space apart and padded, so containment respects word boundaries and ignores
    punctuation ("OK, and any fevers?" and "ok and any fevers" are one passage)."""
    return " " + " ".join(_words(text)) + " "


def _runs(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + SHARED_WORDS]) for i in range(len(words) - SHARED_WORDS + 1)}


class HoldoutText:
    """The text of the holdout transcripts, as passages another transcript may share: each utterance and each
    sentence of one at least ``MIN_SHARED_CHARS`` long (stock questions such as "have you had any fevers or
    chills?" and stock answers), and every run of ``SHARED_WORDS`` words (a stock phrase inside a longer turn)."""

    def __init__(self, names: set[str], osce_dir: str | Path = DEFAULT_OSCE_DIR):
        dialogues = {d.dialog_id: d for d in load_osce(osce_dir)}
        self.passages: set[str] = set()
        self.runs: set[tuple[str, ...]] = set()
        for n in names:
            for u in dialogues[n].utterances if n in dialogues else []:
                for piece in (u.text, *re.split(r"(?<=[.?!])\s+", u.text)):
                    if len(piece.strip()) >= MIN_SHARED_CHARS:
                        self.passages.add(_norm(piece))
                self.runs |= _runs(_words(u.text))

    def __contains__(self, text: str) -> bool:
        norm = _norm(text)
        return any(p in norm for p in self.passages) or not self.runs.isdisjoint(_runs(_words(text)))


def without_holdout_text(dialogue: Dialogue, held: HoldoutText) -> tuple[Dialogue, int]:
    """``dialogue`` minus every utterance that shares a holdout passage (a doctor question goes with the answer
    after it, so no answer is read against the wrong question). Other transcripts share stock phrasings
    ("are you currently sexually active?") with the holdout ones; evaluation text stays out of training data
    even then."""
    keep: list[Utterance] = []
    dropped = 0
    skip_answer = False
    for u in dialogue.utterances:
        if u.text in held:
            dropped += 1
            skip_answer = u.speaker == "doctor"
            continue
        if skip_answer and u.speaker == "patient":
            dropped += 1
            skip_answer = False
            continue
        skip_answer = False
        keep.append(Utterance(u.speaker, len(keep), u.text))
    return Dialogue(dialogue.dialog_id, keep), dropped


def doctor_actions(nlu: ClinicalNLU, text: str, state: dict) -> list[dict]:
    """Silver doctor actions for one doctor utterance."""
    low = text.lower()
    mentions, _ = nlu.mentions(text) if text.strip() else ([], [])
    checks = [name for name, cue in _CHECK_CUES if cue.search(low)]
    items: dict[str, list[dict]] = {}
    for m in mentions:
        base = m.base
        own = [c for c in checks if c in cmas.SLOTS[base].check_types and (base == "symptom" or c not in _SYMPTOM_ONLY)]
        item = {"value": m.value, **({"checks": [{"type": c} for c in own]} if own else {})}
        if item not in items.setdefault(base, []):
            items[base].append(item)
    if not items and checks and "?" in text:
        current = (state.get("positive_symptom") or [])[-1:]
        if current:
            items["symptom"] = [{"value": current[0]["value"], "checks": [{"type": c} for c in checks]}]
    if re.search(r"\b(?:your|the) age\b|\bhow old\b", low):
        items.setdefault("basic_information", []).append({"value": "none", "checks": [{"type": "age"}]})
    if items:
        return cmas.parse_actions([{"action": "inquire", **items}])
    if "?" in text:
        return [{"action": "chit-chat"}]
    return [{"action": "nod_prompt_salutations" if len(low.split()) <= 6 else "chit-chat"}]


def label_dialogue(nlu: ClinicalNLU, dialogue: Dialogue) -> Dialogue:
    turns: list[tuple[str, str]] = []
    past: list[list[dict]] = []
    state: dict = {}
    out: list[Utterance] = []
    for u in dialogue.utterances:
        turns.append((u.speaker, u.text))
        if u.speaker == "doctor":
            actions = doctor_actions(nlu, u.text, state)
            past.append(actions)
            out.append(Utterance("doctor", u.uttr_id, u.text, actions=actions))
            continue
        frames = nlu.understand(TurnContext(turns=list(turns), state=state, past_actions=list(past))).value
        state = cmas.parse_state(update_state(state, frames))
        out.append(Utterance("patient", u.uttr_id, u.text, nlu=frames, dialog_state=state))
    return Dialogue(f"silver-{dialogue.dialog_id}", out)


def build_silver(out_dir: str | Path, osce_dir: str | Path = DEFAULT_OSCE_DIR, limit: int | None = None,
                 gold_dir: str | Path | None = None, gold_train: tuple[str, ...] = (), gold_valid: tuple[str, ...] = (),
                 holdout: str | Path = HOLDOUT_FILE, progress: bool = True, second_stage: bool = True) -> dict:
    """Silver NLU labels of the OSCE transcripts (holdout and shared sources left out). ``second_stage``: the clinical
    NLU's recognition by meaning (off: the lexicon alone, about ten times faster)."""
    held = read_holdout(holdout)
    excluded = held | set(SHARED_SOURCES)
    sources = [d for d in load_osce(osce_dir) if d.dialog_id not in excluded]
    sources = sources[:limit] if limit else sources
    holdout_text = HoldoutText(held, osce_dir)
    cleaned = [without_holdout_text(d, holdout_text) for d in sources]
    sources = [d for d, _ in cleaned]
    nlu = ClinicalNLU(second_stage=second_stage)
    silver = [label_dialogue(nlu, d) for d in tqdm(sources, desc="silver", disable=not progress)]
    dialogs = {d.dialog_id: d.to_json() for d in silver}
    train_ids = [d.dialog_id for d in silver]
    valid_ids: list[str] = []
    if gold_dir is not None:
        gold = {d.dialog_id: d for d in load_dialogues(gold_dir, "all")}
        for gid in (*gold_train, *gold_valid):
            if gid not in gold:
                raise ValueError(f"gold dialogue {gid!r} is not in {gold_dir}")
            dialogs[gid] = gold[gid].to_json()
        train_ids += list(gold_train)
        valid_ids += list(gold_valid)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "dialogs.json").write_text(json.dumps(dialogs, ensure_ascii=False))
    for name, ids in (("train", train_ids), ("valid", valid_ids), ("test", [])):
        (out / f"{name}_ids.json").write_text(json.dumps(ids))
    patient_turns = sum(1 for d in silver for u in d.utterances if u.speaker == "patient")
    informs = sum(1 for d in silver for u in d.utterances if u.nlu and u.nlu[0].get("slots"))
    summary = {"out": str(out), "transcripts": len(silver), "excluded": sorted(excluded),
               "utterances_dropped_sharing_holdout_text": sum(n for _, n in cleaned), "patient_turns": patient_turns,
               "patient_turns_with_slots": informs, "train_ids": len(train_ids), "valid_ids": valid_ids}
    (out / "silver.json").write_text(json.dumps(summary, indent=2))
    return summary


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("silver", help="label the OSCE transcripts with the clinical NLU (silver data for medhx train)")
    p.add_argument("--out", required=True, help="directory to write (MediTOD release layout)")
    p.add_argument("--osce", default=str(DEFAULT_OSCE_DIR))
    p.add_argument("--limit", type=int, help="first N transcripts (after exclusions)")
    p.add_argument("--gold", help="a MediTOD directory whose dialogues join the splits")
    p.add_argument("--gold-train", nargs="*", default=[], help="gold dialogue ids added to train")
    p.add_argument("--gold-valid", nargs="*", default=[], help="gold dialogue ids used as valid")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cmd)


def _cmd(args: argparse.Namespace) -> int:
    summary = build_silver(args.out, args.osce, args.limit, args.gold, tuple(args.gold_train), tuple(args.gold_valid),
                           progress=not args.no_progress)
    print(json.dumps(summary, indent=2))
    return 0
