"""``medhx nlu-check``: a label-free generalisation measure of the clinical NLU on the OSCE transcripts.

No annotation is needed: each measure asks something the transcript itself answers. The transcripts are those of
``data/osce_transcripts/`` minus the evaluation holdout (``data/eval_holdout.txt``) and the sources of the shared
annotated dialogues (RES0006, RES0045), as ``medhx silver`` excludes them (``policies.nlu.silver``). They are split
by sorted name: every fifth (index % 5 == 4) is the frozen CHECK slice, listed in ``data/nlu_check_slice.txt``
and read from there (nobody reads those transcripts while building), the rest the DEV slice. Transcripts are read
whole (``medhx silver`` also drops utterances that share a holdout passage; nothing here is trained on).

Measures, per slice:

(a) **opening**: share of transcripts whose first substantive patient statement, the first patient turn of at
    least :data:`OPENING_MIN_WORDS` words (a greeting such as "Hi." or "Yes." is not one; a transcript where the
    patient speaks first counts that turn), yields at least one positive symptom or positive medical history item.
(b) **closed answers**: for every doctor turn that is a closed question about a named concept (read by the
    project's doctor-utterance reader, ``policies.nlu.doctor_reader.FactReader``: an ``inquire`` action with at
    least one medical item whose value is not open, ``agent.core.cmas.OPEN_VALUES``; and the text reads as a yes/no
    question, see :func:`reads_yes_no`), the share of the patient's next turns whose frames hold an item about an
    asked concept (same slot type, the same concept by ``Vocabulary.same``). ``--sample-out`` writes a seeded random
    sample of :data:`SAMPLE_SIZE` answers that did, for a human to judge precision.
(c) **red flags** per 1,000 patient turns: ``agent.core.safety.check_text_flags`` on every patient turn, overall, per
    rule id and per level; ``--flags-out`` writes every raised flag (for a human to read a random 50).
(d) **second stage**: share of frame items whose value or status came from the clinical NLU's second recognition
    stage (``ClinicalNLU.read(...).second_stage``).

``--sample-out`` and ``--flags-out`` write DEV-slice text only: the check slice stays frozen, its transcripts unread.

Each transcript is read turn by turn as in an interview: the NLU sees the previous doctor turn's text and the actions
the fact reader reads in it, and a running patient state (``agent.core.tracker.update_state``) folds each turn's frames
(the NLU's frames as emitted; the live agent's grounding gate changes nothing for the clinical NLU, whose values all
come from the vocabulary).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.core.data import DEFAULT_OSCE_DIR, Dialogue
from agent.core.paths import REPO_ROOT

SLICE_FILE = REPO_ROOT / "data" / "nlu_check_slice.txt"
SLICES = ("dev", "check")
CHECK_EVERY = 5  # the check slice: index % CHECK_EVERY == CHECK_EVERY - 1 in sorted order
OPENING_MIN_WORDS = 4
SAMPLE_SIZE = 50
POSITIVE_FINDINGS = ("positive_symptom", "positive_medical_history")
YES_NO_WORDS = frozenset({"do", "does", "did", "have", "has", "had", "any", "is", "are", "was", "were", "can", "could"})
WH_WORDS = frozenset({"what", "when", "where", "why", "how", "which", "who", "whom", "whose"})
_WORD = re.compile(r"[a-z0-9']+")


# --------------------------------------------------------------------------- the slices


def excluded_names(holdout: str | Path | None = None) -> set[str]:
    """The transcripts nlu-check never reads: the evaluation holdout and the shared dialogues' sources."""
    from policies.nlu.silver import HOLDOUT_FILE, SHARED_SOURCES, read_holdout

    return read_holdout(holdout or HOLDOUT_FILE) | set(SHARED_SOURCES)


def eligible_names(osce_dir: str | Path = DEFAULT_OSCE_DIR, holdout: str | Path | None = None) -> list[str]:
    """Sorted names of the transcripts nlu-check may read (holdout and shared sources excluded)."""
    excluded = excluded_names(holdout)
    return sorted(p.stem for p in Path(osce_dir).glob("*.txt") if p.stem not in excluded)


def check_slice_rule(names: list[str]) -> list[str]:
    """The check slice by its rule (used once to write ``data/nlu_check_slice.txt``, and by the tests)."""
    return [n for i, n in enumerate(sorted(names)) if i % CHECK_EVERY == CHECK_EVERY - 1]


def read_slice_file(path: str | Path = SLICE_FILE) -> list[str]:
    """The frozen check-slice names, one a line; ``#`` comments and blank lines skipped."""
    path = Path(path)
    if not path.is_file():
        raise OSError(f"no check-slice file {path}")
    names = [line.split("#", 1)[0].strip() for line in path.read_text().splitlines()]
    return [n for n in names if n]


def split_slices(osce_dir: str | Path = DEFAULT_OSCE_DIR, slice_file: str | Path = SLICE_FILE,
                 holdout: str | Path | None = None) -> dict[str, list[str]]:
    """``{"dev": names, "check": names}``, sorted; the check slice as the file lists it. A name there that is not a
    transcript of ``osce_dir``, or that is a holdout transcript, is an error."""
    present = {p.stem for p in Path(osce_dir).glob("*.txt")}
    if not present:
        raise OSError(f"no OSCE transcripts (*.txt) in {osce_dir}")
    check = read_slice_file(slice_file)
    if not check:
        raise ValueError(f"the check-slice file {slice_file} lists no transcript")
    missing = [n for n in check if n not in present]
    if missing:
        raise ValueError(f"the check-slice file {slice_file} names transcripts missing from {osce_dir}: "
                         f"{', '.join(missing[:10])}{f' (and {len(missing) - 10} more)' if len(missing) > 10 else ''}")
    held = sorted(set(check) & excluded_names(holdout))
    if held:
        raise ValueError(f"the check-slice file {slice_file} names holdout transcripts (evaluation "
                         f"material, never read here): {', '.join(held)}")
    dupes = sorted(n for n, c in Counter(check).items() if c > 1)
    if dupes:
        raise ValueError(f"the check-slice file {slice_file} names transcripts twice: {', '.join(dupes)}")
    frozen = set(check)
    return {"dev": [n for n in eligible_names(osce_dir, holdout) if n not in frozen], "check": sorted(frozen)}


# --------------------------------------------------------------------------- what counts


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def reads_yes_no(text: str) -> bool:
    """A yes/no question: the text starts with an auxiliary or "any" ("Do you smoke?", "Any fevers?"), or its last
    sentence ends in "?" with one of those within its first 3 words ("OK, and do you smoke?") and no question word
    before it ("When did it start?" and "How long have you had it?" are open)."""
    ws = words(text)
    if ws and ws[0] in YES_NO_WORDS:
        return True
    stripped = text.strip()
    if not stripped.endswith("?"):
        return False
    last = re.split(r"(?<=[.?!])\s+", stripped.rstrip("?").strip())[-1]
    for w in words(last)[:3]:
        if w in WH_WORDS:
            return False
        if w in YES_NO_WORDS:
            return True
    return False


def asked_concepts(actions: list[dict]) -> list[tuple[str, str]]:
    """(slot type, value) of each named medical concept the doctor's ``inquire`` actions ask about."""
    from agent.core import cmas

    out: list[tuple[str, str]] = []
    for action in actions:
        if action.get("action") != "inquire":
            continue
        for base, items in action.items():
            if base not in cmas.SLOTS or not cmas.SLOTS[base].medical or not isinstance(items, list):
                continue
            for item in items:
                value = str(item.get("value") or "")
                if value.strip().lower() not in cmas.OPEN_VALUES and (base, value) not in out:
                    out.append((base, value))
    return out


def frame_items(frames: list[dict]) -> list[tuple[str, dict]]:
    """(slot name, item) of every item of ``frames``."""
    return [(name, item) for frame in frames for name, items in (frame.get("slots") or {}).items() for item in items]


def items_about(frames: list[dict], asked: list[tuple[str, str]], vocab: Any) -> list[dict]:
    """The frame items about an asked concept: same slot type, the same concept by the vocabulary."""
    from agent.core import cmas

    out = []
    for name, item in frame_items(frames):
        base = cmas.split_slot_name(name)[1]
        value = str(item.get("value") or "")
        if value and any(b == base and vocab.same(base, value, v) for b, v in asked):
            out.append({"slot": name, **item})
    return out


def opening_index(dialogue: Dialogue) -> int | None:
    """Index of the first substantive patient statement: the first patient turn of OPENING_MIN_WORDS+ words."""
    return next((i for i, u in enumerate(dialogue.utterances)
                 if u.speaker == "patient" and len(words(u.text)) >= OPENING_MIN_WORDS), None)


# --------------------------------------------------------------------------- reading a transcript


def read_turn(nlu: Any, text: str, last_actions: list[dict], state: dict, doctor: str,
              turns: list[tuple[str, str]] | None = None) -> tuple[list[dict], set]:
    """The clinical NLU's frames of one patient turn and the (slot name, value) pairs its second stage gave.
    ``turns``: the conversation before it, from which the live agent knows whom a guardian speaks for
    (``spoken_for``: then "he" and "she" are the patient)."""
    from agent.core.clinical_text import spoken_for

    out = nlu.read(text, last_actions, state, doctor, proxy=spoken_for(turns) if turns else None)
    return out.frames, {tuple(p) for p in out.second_stage}


@dataclass
class SliceCounts:
    """What one slice's transcripts gave, summed."""

    transcripts: int = 0
    patient_turns: int = 0
    openings: int = 0
    openings_positive: int = 0
    closed: int = 0
    closed_answered: int = 0
    flags: Counter = field(default_factory=Counter)  # rule id -> raised
    flag_levels: Counter = field(default_factory=Counter)  # level -> raised
    items: int = 0
    second_stage_items: int = 0

    def report(self) -> dict:
        def per_1000(n: int) -> float:
            return round(1000 * n / self.patient_turns, 2) if self.patient_turns else 0.0

        def share(a: int, b: int) -> float:
            return round(a / b, 4) if b else 0.0

        raised = sum(self.flags.values())
        return {
            "transcripts": self.transcripts,
            "patient_turns": self.patient_turns,
            "opening": {"n": self.openings, "positive": self.openings_positive,
                        "share": share(self.openings_positive, self.openings)},
            "closed_answers": {"n": self.closed, "about_asked": self.closed_answered,
                               "share": share(self.closed_answered, self.closed)},
            "red_flags": {"raised": raised, "per_1000": per_1000(raised),
                          "per_rule": {k: per_1000(v) for k, v in sorted(self.flags.items())},
                          "per_level": {k: per_1000(v) for k, v in sorted(self.flag_levels.items())}},
            "second_stage": {"items": self.items, "from_second_stage": self.second_stage_items,
                             "share": share(self.second_stage_items, self.items)},
        }


class Checker:
    """Reads transcripts with one NLU, the fact reader and the red-flag rules; sums into :class:`SliceCounts`."""

    def __init__(self, nlu: Any):
        from agent.core.ontology import default_vocabulary
        from policies.nlu.doctor_reader import default_reader

        self.nlu = nlu
        self.reader = default_reader()
        self.vocab = default_vocabulary()

    def transcript(self, d: Dialogue, counts: SliceCounts, answers: list[dict], flags: list[dict]) -> None:
        from agent.core import cmas
        from agent.core.safety import check_text_flags
        from agent.core.tracker import update_state

        counts.transcripts += 1
        opening = opening_index(d)
        counts.openings += 1  # a transcript with no substantive patient turn counts as an opening with no finding
        state: dict = {}
        turns: list[tuple[str, str]] = []
        doctor, actions = "", []
        for i, u in enumerate(d.utterances):
            if u.speaker == "doctor":
                doctor, actions = u.text, self.reader.read(u.text, turns)
                turns.append(("doctor", u.text))
                continue
            frames, second = read_turn(self.nlu, u.text, actions, state, doctor, turns)
            turns.append(("patient", u.text))
            state = cmas.parse_state(update_state(state, frames))
            counts.patient_turns += 1
            items = frame_items(frames)
            counts.items += len(items)
            counts.second_stage_items += sum(1 for name, it in items if (name, it.get("value", "")) in second)
            if i == opening and any(name in POSITIVE_FINDINGS for name, _ in items):
                counts.openings_positive += 1
            asked = asked_concepts(actions) if doctor and reads_yes_no(doctor) else []
            if asked:
                counts.closed += 1
                about = items_about(frames, asked, self.vocab)
                if about:
                    counts.closed_answered += 1
                    answers.append({"transcript": d.dialog_id, "turn": u.uttr_id, "doctor": doctor, "patient": u.text,
                                    "asked": [{"slot": b, "value": v} for b, v in asked], "frames": about})
            for flag in check_text_flags(u.text, opening=i == opening):
                counts.flags[flag.id] += 1
                counts.flag_levels[flag.level] += 1
                flags.append({"transcript": d.dialog_id, "turn": u.uttr_id, "patient": u.text, "id": flag.id,
                              "level": flag.level, "evidence": flag.evidence})
            doctor, actions = "", []  # a patient turn after a patient turn answers no question


# --------------------------------------------------------------------------- the run


def build_nlu(config: str | Path | None = None) -> tuple[Any, str]:
    """The agent's NLU from the config's ``nlu:`` section, through the registry; it must be the clinical NLU (the
    measures read its frames given a doctor turn, and its second stage)."""
    from policies.agent_config import config_for_cli
    from policies.nlu.clinical import ClinicalNLU
    from policies.registry import Builder

    cfg = config_for_cli(str(config) if config else None)
    builder = Builder(cfg)
    kind = str(builder.section("nlu").get("kind"))
    nlu = builder.build("nlu")
    if not isinstance(nlu, ClinicalNLU):
        raise ValueError(f"nlu-check measures the clinical NLU; the config's nlu.kind is {kind!r} "
                         "(use configs/default.yaml or another config with nlu.kind: clinical)")
    return nlu, kind


def write_jsonl(path: str | Path, rows: list[dict]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows))


def run(config: str | Path | None = None, osce_dir: str | Path = DEFAULT_OSCE_DIR, slices: tuple[str, ...] = SLICES,
        limit: int | None = None, seed: int = 0, sample_out: str | Path | None = None,
        flags_out: str | Path | None = None, slice_file: str | Path = SLICE_FILE,
        holdout: str | Path | None = None, progress: bool = True) -> dict:
    """The four measures per slice (``slices``: dev and/or check; ``limit``: the first N transcripts of each)."""
    from tqdm import tqdm

    from agent.core.data import load_osce

    unknown = [s for s in slices if s not in SLICES]
    if unknown or not slices:
        raise ValueError(f"unknown slice {unknown}; use {SLICES}")
    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be at least 1, not {limit}")
    if (sample_out or flags_out) and "dev" not in slices:
        raise ValueError("--sample-out and --flags-out write dev-slice text only (the check slice is "
                         "frozen: nobody reads its transcripts); run with --slice dev or both")
    names = split_slices(osce_dir, slice_file, holdout)
    chosen = {s: names[s][:limit] if limit else names[s] for s in slices}
    wanted = {n for ns in chosen.values() for n in ns}
    dialogues = {d.dialog_id: d for d in load_osce(osce_dir) if d.dialog_id in wanted}
    t0 = time.perf_counter()
    nlu, kind = build_nlu(config)
    checker = Checker(nlu)
    build_s = time.perf_counter() - t0  # the pipelines load lazily: their load falls in read_s
    counts = {s: SliceCounts() for s in slices}
    answers: dict[str, list[dict]] = {s: [] for s in slices}
    flags: dict[str, list[dict]] = {s: [] for s in slices}
    t1 = time.perf_counter()
    bar = tqdm(total=len(wanted), desc="nlu-check", unit="transcript", disable=not progress)
    for s in slices:
        for name in chosen[s]:
            checker.transcript(dialogues[name], counts[s], answers[s], flags[s])
            bar.update(1)
    bar.close()
    read_s = time.perf_counter() - t1
    turns = sum(c.patient_turns for c in counts.values())
    report: dict[str, Any] = {
        "config": str(config or "configs/default.yaml"), "nlu": kind, "osce": str(osce_dir),
        "slice_file": str(slice_file), "limit": limit,
        "slices": {s: counts[s].report() for s in slices},
        "build_s": round(build_s, 2), "read_s": round(read_s, 2),
        "ms_per_patient_turn": round(1000 * read_s / turns, 3) if turns else None,
    }
    if sample_out:
        pool = answers["dev"]
        sample = sorted(random.Random(seed).sample(pool, min(SAMPLE_SIZE, len(pool))),
                        key=lambda r: (r["transcript"], r["turn"]))
        write_jsonl(sample_out, sample)
        report["sample_out"] = {"path": str(sample_out), "rows": len(sample), "seed": seed, "slice": "dev"}
    if flags_out:
        write_jsonl(flags_out, flags["dev"])
        report["flags_out"] = {"path": str(flags_out), "rows": len(flags["dev"]), "slice": "dev"}
    return report


ROWS = (
    ("(a) opening statement yields a positive finding", "opening"),
    ("(b) closed answer yields a frame about the asked concept", "closed_answers"),
    ("(c) red flags per 1,000 patient turns", "red_flags"),
    ("(d) frame items from the second stage", "second_stage"),
)


def _cell(measure: str, r: dict) -> str:
    m = r[measure]
    if measure == "opening":
        return f"{m['share']:.2f} ({m['positive']}/{m['n']})"
    if measure == "closed_answers":
        return f"{m['share']:.2f} ({m['about_asked']}/{m['n']})"
    if measure == "red_flags":
        return f"{m['per_1000']:.1f} ({m['raised']} in {r['patient_turns']:,} turns)"
    return f"{m['share']:.2f} ({m['from_second_stage']}/{m['items']:,})"


def markdown(report: dict) -> str:
    """The README's table: rows (a)-(d), columns dev / check."""
    slices = report["slices"]
    head = " | ".join(f"{s} ({slices[s]['transcripts']} transcripts)" if s in slices else s for s in SLICES)
    lines = [f"| measure | {head} |", "|---|" + "---|" * len(SLICES)]
    for label, measure in ROWS:
        cells = [_cell(measure, slices[s]) if s in slices else "-" for s in SLICES]
        lines.append(f"| {label} | {' | '.join(cells)} |")
    return "\n".join(lines)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("nlu-check", help="label-free generalisation of the clinical NLU on the OSCE transcripts "
                                         "(dev slice and the frozen check slice)")
    p.add_argument("--config", default=None, help="agent config whose nlu: section is measured "
                                                  "(default configs/default.yaml; nlu.kind must be clinical)")
    p.add_argument("--osce", default=str(DEFAULT_OSCE_DIR), help="directory of OSCE transcripts (*.txt)")
    p.add_argument("--slice", choices=("dev", "check", "both"), default="both")
    p.add_argument("--limit", type=int, default=None, help="the first N transcripts of each slice (sorted by name)")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object")
    p.add_argument("--sample-out", default=None, help=f"write {SAMPLE_SIZE} random dev-slice closed answers that "
                                                      "yielded a frame about the asked concept (JSONL)")
    p.add_argument("--flags-out", default=None, help="write every red flag raised on the dev slice (JSONL)")
    p.add_argument("--seed", type=int, default=0, help="seed of the --sample-out draw")
    p.set_defaults(func=_cmd)


def _cmd(args: argparse.Namespace) -> int:
    slices = SLICES if args.slice == "both" else (args.slice,)
    report = run(args.config, args.osce, slices, args.limit, args.seed, args.sample_out, args.flags_out)
    print(json.dumps(report, indent=2) if args.json else markdown(report))
    return 0
