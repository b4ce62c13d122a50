"""``medhx simulate --config configs/simulate/<name>.yaml [--json]``: whole interviews against simulated patients.

The real agent (the compiled LangGraph interview, any module configuration, a SQLite session store of its own)
interviews a simulated patient (:mod:`eval.runs.simulators`) for every case card (:mod:`eval.runs.cases`: hand-written
cards and MediTOD dialogues), in two modes:

- ``end_to_end``: the agent's own NLU reads the simulator's words;
- ``oracle``: the simulator hands the agent the gold frame of each reply (:class:`eval.runs.simulators.OracleNLU` in
  place of the configured NLU, through the same grounding gate), so the policy is judged without NLU errors.

Each (agent, mode, case, seed) interview is scored (:mod:`eval.runs.simulate_metrics`) and appended to
``<output_dir>/results.jsonl`` (flushed and fsync'd), so a run killed mid-way continues where it stopped on the same
command; a result whose configuration changed is recomputed, never reused, and a line that does not parse is
reported and recomputed. Interviews run concurrently (``workers`` threads, each with its own agent and session
store), with a progress bar. The run writes ``summary.json`` (what ``--json`` prints), ``report.md`` (the
comparison table, the aims, per-case figures and why each fact was missed) and ``coverage.png``.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import logging
import os
import queue
import re
import sys
import tempfile
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.app.graph_state import InterviewState
from agent.app.sessions import SessionStore
from agent.core import cmas
from agent.core.ontology import default_vocabulary
from agent.core.paths import ConfigPath, load_typed, resolve_path
from agent.core.safety import clean_patient_text
from eval.runs.cases import CaseCard, CaseError, cards_from_meditod, load_cards
from eval.runs.simulate_metrics import interview_metrics
from eval.runs.simulate_report import headline, summarize, write_outputs
from eval.runs.simulators import (
    DEFAULT_LEXICON,
    SILENCE,
    DoctorTurn,
    SimulatorFactory,
    close_channel,
    open_channel,
    parse_simulator_settings,
)
from policies.agent_config import check_agent_config, load_config, resolve_agent_paths

log = logging.getLogger(__name__)

Mode = Literal["end_to_end", "oracle"]
ORACLE_NLU = "eval.runs.simulators:OracleNLU"


# --------------------------------------------------------------------------- config


class AgentEntry(BaseModel):
    """One agent configuration to interview with: an agent config file or an inline mapping."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[\w.-]+$")
    config: ConfigPath | dict[str, Any]


class MeditodCases(BaseModel):
    """Cards from a MediTOD release directory (its annotated dialogues' final states)."""

    model_config = ConfigDict(extra="forbid")
    data: ConfigPath
    split: str = "all"
    ids: list[str] | None = None
    domain: str = "respiratory"


class Aims(BaseModel):
    """What the first agent should reach. The coverage aims are over every case; the ``cards_*`` aims (issue 18) over
    the hand-written case cards only (the MediTOD dialogues are reported beside them, not in these aims)."""

    model_config = ConfigDict(extra="forbid")
    oracle_canonical: float = 0.9  # oracle-NLU canonical coverage, first agent
    end_to_end_canonical: float = 0.7  # end-to-end canonical coverage, first agent
    cards_oracle_canonical: float | None = None
    cards_oracle_negatives: float | None = None
    cards_oracle_max_turns: float | None = None  # mean doctor turns until close, at most
    cards_oracle_screen_on_time: float | None = None  # share of cards with a plan whose screen came on time
    cards_oracle_diagnosis_top3: float | None = None  # share of cards with a diagnosis among the top 3 considerations
    cards_end_to_end_canonical: float | None = None


class SimulateConfig(BaseModel):
    """A simulation run. Relative paths are relative to this file's directory; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")
    agents: list[AgentEntry] = Field(min_length=1, description="the first is the one the headline figures are of")
    cases: list[ConfigPath] = Field(default_factory=list, description="case card files or directories of *.yaml")
    meditod: list[MeditodCases] = Field(default_factory=list)
    simulator: dict[str, Any] = Field(default_factory=lambda: {"kind": "agenda"})
    modes: list[Mode] = Field(default_factory=lambda: ["end_to_end", "oracle"], min_length=1)
    seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
    max_turns: int | None = Field(default=None, ge=2, description="overrides each agent's session.max_turns")
    workers: int = Field(default=2, ge=1)
    output_dir: ConfigPath
    keep_sessions: bool = True  # sessions stay under <output_dir>/sessions/<agent>-<mode>-w<n> (medhx sessions --dir)
    aims: Aims = Aims()


@dataclass
class Run:
    """A loaded config: the typed settings, the agent configs (paths resolved), the cards, the simulator."""

    config: SimulateConfig
    path: Path
    agents: dict[str, dict]
    cards: list[CaseCard]
    simulator: Any

    @property
    def output_dir(self) -> Path:
        return Path(self.config.output_dir)


def prepare(path: str | Path, only: list[str] | None = None) -> Run:
    """Everything checked before a single interview runs: the config, every agent config, every card."""
    cfg, base = load_typed(SimulateConfig, path)
    agents: dict[str, dict] = {}
    for entry in cfg.agents:
        if entry.name in agents:
            raise ValueError(f"agents: the name {entry.name!r} appears twice")
        raw = load_config(entry.config) if isinstance(entry.config, str) else resolve_agent_paths(entry.config, base)
        try:
            check_agent_config(raw)
        except ValueError as exc:
            raise ValueError(f"agents.{entry.name}: {exc}") from None
        agents[entry.name] = raw
    try:
        cards = load_cards(cfg.cases) if cfg.cases else []
        for m in cfg.meditod:
            cards += cards_from_meditod(m.data, m.split, m.ids, m.domain)
    except CaseError as exc:
        raise ValueError(str(exc)) from None
    if only:
        unknown = sorted(set(only) - {c.id for c in cards})
        if unknown:
            raise ValueError(f"--case {unknown}: no such case (cases: {sorted(c.id for c in cards)})")
        cards = [c for c in cards if c.id in only]
    if not cards:
        raise ValueError(f"{path}: no case cards (set 'cases' and/or 'meditod')")
    ids = [c.id for c in cards]
    if len(set(ids)) != len(ids):
        raise ValueError(f"case ids appear twice: {sorted({i for i in ids if ids.count(i) > 1})}")
    return Run(cfg, resolve_path(path), agents, cards, parse_simulator_settings(cfg.simulator, base))


# --------------------------------------------------------------------------- one interview


def session_config(agent: dict, mode: Mode, session_dir: Path, max_turns: int | None, channel: str) -> dict:
    """The agent config an interview runs with: its own SQLite store, no clinician review (nobody would answer
    it), the run's turn budget, and in oracle mode the oracle NLU in place of the configured one."""
    cfg = copy.deepcopy(agent)
    session = {**(cfg.get("session") or {}), "store": "sqlite", "dir": str(session_dir), "postgres_url": None,
               "review": False}
    if max_turns is not None:
        session["max_turns"] = max_turns
    cfg["session"] = session
    if mode == "oracle":
        cfg["nlu"] = {"kind": ORACLE_NLU, "channel": channel}
    return cfg


class Slot:
    """One worker's agent and session store (and, in oracle mode, its own frame channel)."""

    def __init__(self, agent: dict, mode: Mode, session_dir: Path, max_turns: int | None):
        self.channel_name = f"simulate-{uuid.uuid4().hex[:12]}"
        self.channel = open_channel(self.channel_name) if mode == "oracle" else None
        session_dir.mkdir(parents=True, exist_ok=True)
        self.config = session_config(agent, mode, session_dir, max_turns, self.channel_name)
        self.store = SessionStore(self.config)
        self.max_turns = self.config["session"].get("max_turns") or check_agent_config(self.config).session.max_turns

    def close(self) -> None:
        self.store.close()
        close_channel(self.channel_name)


def _session_id(agent: str, mode: str, case: str, seed: int) -> str:
    return re.sub(r"[^\w.-]", "_", f"{agent}.{mode}.{case}.s{seed}")


def interview(slot: Slot, card: CaseCard, seed: int, simulators: SimulatorFactory, agent: str, mode: Mode) -> dict:
    """One whole interview of ``card``; never raises for what the agent or the simulator does (it is reported)."""
    sid = _session_id(agent, mode, card.id, seed)
    if slot.store.exists(sid):  # left by a killed run: start the interview again
        slot.store.delete(sid)
    session = slot.store.start(session_id=sid)
    sim = simulators.new(card, seed)
    replies: list[dict] = []
    error: str | None = None
    capped = False
    cap = slot.max_turns + 2
    try:
        while session.waiting_for() == "patient":
            if len(replies) >= cap:
                capped = True
                break
            doctor = session.state().turns[-1]
            try:
                reply = sim.respond(DoctorTurn(doctor.text, list(doctor.actions or []), doctor.index))
            except Exception as exc:  # a simulator's bug is reported, not a crashed run
                error = f"simulator failed at turn {doctor.index}: {type(exc).__name__}: {exc}"
                break
            text = reply.text if isinstance(reply.text, str) else ""
            meta = dict(reply.meta or {})
            try:
                frames = cmas.parse_nlu(reply.frames)
            except cmas.CMASError as exc:
                frames, meta["invalid_frames"] = [], str(exc)
            sent = text if clean_patient_text(text) else SILENCE
            if sent is SILENCE:
                meta["empty"] = True
            if slot.channel is not None:
                slot.channel.put(sent, frames)
            session.send(sent)
            replies.append({"turn": doctor.index + 1, "text": text, "frames": frames, "meta": meta})
    except Exception as exc:  # one interview's failure (a backend down, a module's bug) is that interview's result
        error = f"agent failed after {len(replies)} patient turns: {type(exc).__name__}: {exc}"
        log.warning("%s: %s", sid, error)
    st = session.state()
    metrics = interview_metrics(card, st, replies, default_vocabulary(), error, capped)
    return {"metrics": metrics, "session": sid, "transcript": transcript(st, replies),
            "final_state": st.patient_state, "clinician_summary": st.summary}


def transcript(st: InterviewState, replies: list[dict]) -> list[dict]:
    by_turn = {r["turn"]: r for r in replies}
    out = []
    for t in st.turns:
        row: dict[str, Any] = {"turn": t.index, "speaker": t.speaker, "text": t.text}
        if t.speaker == "doctor":
            row["actions"] = t.actions
            if t.meta.get("stage"):  # where the policy was (the questionnaire's stages; plan: its id)
                row["stage"] = t.meta["stage"]
        else:
            row["nlu"] = t.nlu
            if (r := by_turn.get(t.index)) is not None:
                row["gold"] = r["frames"]
                if r["meta"]:
                    row["simulator"] = r["meta"]
        out.append(row)
    return out


# --------------------------------------------------------------------------- the results file


def fingerprint(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


class ResultsFile:
    """``results.jsonl``: one finished interview a line, appended, flushed and fsync'd under a lock."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()

    def load(self) -> tuple[dict[str, dict], list[str]]:
        done: dict[str, dict] = {}
        problems: list[str] = []
        if not self.path.exists():
            return done, problems
        for n, line in enumerate(self.path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                done[rec["key"]] = rec
            except (ValueError, KeyError, TypeError) as exc:
                problems.append(f"{self.path}:{n}: unreadable result line ({type(exc).__name__}), recomputed")
        return done, problems

    def append(self, record: dict) -> None:
        line = json.dumps(record, default=str) + "\n"
        with self._lock, self.path.open("a") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())


# --------------------------------------------------------------------------- the run


@dataclass(frozen=True)
class Job:
    agent: str
    mode: Mode
    card: CaseCard
    seed: int

    @property
    def key(self) -> str:
        return f"{self.agent}|{self.mode}|{self.card.id}|{self.seed}"


def run(path: str | Path, fresh: bool = False, only: list[str] | None = None, workers: int | None = None,
        progress: bool = True) -> dict:
    """Run (or finish) every interview of a simulate config; returns the summary (also written to the run dir)."""
    prepared = prepare(path, only)
    cfg = prepared.config
    out = prepared.output_dir
    out.mkdir(parents=True, exist_ok=True)
    results = ResultsFile(out / "results.jsonl")
    if fresh and results.path.exists():
        results.path.unlink()
    done, problems = results.load()
    sim_desc = {**prepared.simulator.model_dump(mode="json"), "lexicon_sha": _lexicon_hash(prepared.simulator)}
    jobs = [Job(a, m, c, s) for a in prepared.agents for m in cfg.modes for c in prepared.cards for s in cfg.seeds]
    prints = {j.key: fingerprint(prepared.agents[j.agent], j.mode, sim_desc, j.card.model_dump(mode="json"),
                                 cfg.max_turns) for j in jobs}
    stale = [k for k in prints if k in done and done[k].get("fingerprint") != prints[k]]
    problems += [f"{k}: configuration changed since this result was written, recomputed" for k in stale]
    records = {k: done[k] for k in prints if k in done and k not in stale}
    pending = [j for j in jobs if j.key not in records]

    from tqdm import tqdm

    bar = tqdm(total=len(jobs), initial=len(records), desc="simulated interviews", unit="interview",
               disable=not progress, file=sys.stderr)
    factory = SimulatorFactory(prepared.simulator) if pending else None
    scratch = None if cfg.keep_sessions else tempfile.TemporaryDirectory(prefix="medhx-simulate-")
    session_root = out / "sessions" if scratch is None else Path(scratch.name)
    try:
        for agent in prepared.agents:
            for mode in cfg.modes:
                group = [j for j in pending if j.agent == agent and j.mode == mode]
                if group:
                    assert factory is not None
                    _run_group(prepared, agent, mode, group, factory, session_root, workers or cfg.workers,
                               results, prints, records, bar)
    finally:
        bar.close()
        if factory is not None:
            factory.close()
        if scratch is not None:
            scratch.cleanup()
    summary = summarize(prepared, records, problems, ran=len(pending))
    write_outputs(summary, records, out)
    return summary


def _lexicon_hash(settings: Any) -> str | None:
    """The lay lexicon's content is part of a result's identity (its path alone is not)."""
    path = getattr(settings, "lexicon", None) or (DEFAULT_LEXICON if hasattr(settings, "lexicon") else None)
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16] if path else None


def _run_group(prepared: Run, agent: str, mode: Mode, jobs: list[Job], factory: SimulatorFactory, root: Path,
               workers: int, results: ResultsFile, prints: dict[str, str], records: dict[str, dict], bar: Any) -> None:
    n = min(workers, len(jobs))
    slots: queue.Queue[Slot] = queue.Queue()
    built: list[Slot] = []
    lock = threading.Lock()

    def take() -> Slot:
        try:
            return slots.get_nowait()
        except queue.Empty:
            with lock:
                slot = Slot(
                    prepared.agents[agent], mode, root / f"{agent}-{mode}-w{len(built)}", prepared.config.max_turns
                )
                built.append(slot)
            return slot

    def one(job: Job) -> dict:
        slot = take()
        try:
            out = interview(slot, job.card, job.seed, factory, agent, mode)
        finally:
            slots.put(slot)
        record = {"key": job.key, "fingerprint": prints[job.key], "agent": agent, "mode": mode, "case": job.card.id,
                  "seed": job.seed, **out}
        results.append(record)
        return record

    try:
        with ThreadPoolExecutor(max_workers=n, thread_name_prefix="simulate") as pool:
            futures = {pool.submit(one, j): j for j in jobs}
            for fut in as_completed(futures):
                record = fut.result()
                records[record["key"]] = record
                bar.update(1)
                bar.set_postfix_str(f"{agent}/{mode} {record['case']}", refresh=False)
    finally:
        for slot in built:
            slot.close()


# --------------------------------------------------------------------------- CLI


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="whole interviews against simulated patients: history coverage, turns, "
                                        "red flags (end-to-end and oracle NLU)")
    p.add_argument("--config", required=True, help="a simulate config (configs/simulate/*.yaml)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    p.add_argument("--fresh", action="store_true", help="discard the results file and run every interview again")
    p.add_argument("--case", action="append", default=None, help="only this case id (repeatable)")
    p.add_argument("--workers", type=int, default=None, help="concurrent interviews (default: the config's)")
    p.set_defaults(func=_cmd_simulate)


def _cmd_simulate(args: argparse.Namespace) -> int:
    summary = run(args.config, fresh=args.fresh, only=args.case, workers=args.workers, progress=True)
    if args.json:
        print(json.dumps(summary, indent=2, default=str))
    else:
        print(headline(summary))
    return 0
