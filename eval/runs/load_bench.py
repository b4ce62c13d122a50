"""``medhx load-bench``: many interviews at once on one session store, the way a clinic loads it and past that.

What a clinic deployment does when several clinicians interview at the same time, measured rather than asserted
(config: :mod:`eval.runs.load_bench_config`):

- **clinic pace**: each simulated clinician runs 20-turn interviews one after another with a think time before each
  patient turn (drawn from 5-20 s); clinicians join over a 1-minute ramp and turn latency is measured over the
  5 minutes after it, at 25, 50 and 100 interviews at once;
- **stress**: the closed loop, every interview at once with its turns back to back (50 by default): the machine's
  ceiling, not a clinic.

Each runs per store (SQLite, PostgreSQL) and per process count (1 and 2 processes on one store, as that many console
processes behind a proxy run). A process is a worker (:mod:`eval.runs.load_bench_clients`) with one agent and one
store, its clinicians in threads as the console's queue runs turns; the parent only coordinates, shows progress and
checks. Traffic stays inside the machine: the agent runs in the workers, the store is a temporary SQLite directory or
the configured PostgreSQL (loopback in the tests).

Each patient turn goes with an idempotency key, and afterwards every session is read back from the store and
compared with what its client sent, turn by turn (:mod:`eval.runs.load_bench_check`): lost, duplicated, altered
and reordered turns, missing sessions. Reported per run: turn latency p50/p95/p99 (one ``send``: NLU, tracking, red
flags, policy, NLG and the checkpoint writes), turns/s, errors by type, the checks, and which modules fell back
(an answer from a simpler module: not an error, but a turn the configured models did not serve under this load).
Errors and every check must be 0; the exit code is 1 when they are not. Outputs in ``output_dir``: ``report.json``,
``report.md`` (a clinic table and a stress table) and ``p95.png`` (p95 against interviews at once per store and
process count).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import queue
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agent.app.cpu_threads import THREADS_ENV
from agent.app.graph_state import InterviewState
from agent.app.overrides import overrides
from agent.app.sessions import Session, SessionStore
from agent.core.paths import REPO_ROOT
from eval.runs.load_bench_check import check_transcripts
from eval.runs.load_bench_clients import ClientPlan, Records, worker_main
from eval.runs.load_bench_config import LoadBenchConfig, Store, load_config
from eval.runs.load_bench_report import summarise, write_outputs
from policies.agent_config import load_config as load_agent_config

__all__ = ["LoadBenchConfig", "add_parser", "load_config", "run"]

READY_TIMEOUT_S = 600  # a worker builds its agent and runs a warm-up turn (a vLLM-backed agent may start a server)
START_DELAY_S = 1.0  # between handing out the plans and the run's start, so every worker starts on time
POSTGRES_CONNECTIONS = 32  # pooled connections of all workers together (each also holds one for its locks)


def store_session(agent_cfg: dict, store: Store, cfg: LoadBenchConfig, tmp: str, pool: int) -> dict:
    """The agent's session section for one store: that store, a temporary SQLite directory, a turn budget above the
    longest interview, and for PostgreSQL a pool of ``pool`` connections."""
    longest = max(s.turns for s in (cfg.clinic, cfg.stress) if s is not None)
    session = {**(agent_cfg.get("session") or {}), "store": store, "dir": tmp, "max_turns": 2 * longest + 4}
    if store == "postgres":
        session["postgres_url"] = cfg.store_url()
        session["pool_size"] = pool
    return session


class Progress:
    """One line per run on stderr: elapsed seconds of the ramp and window (clinic) or turns done (stress), with the
    turns and errors so far."""

    def __init__(self, desc: str, total: float, unit: str, by_time: bool, enabled: bool):
        from tqdm import tqdm

        self.bar = tqdm(total=total, desc=desc, unit=unit, disable=not enabled, file=sys.stderr,
                        bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} {unit} [{elapsed}<{remaining}{postfix}]")
        self.by_time, self.turns, self.errors = by_time, 0, 0

    def turn(self, ok: bool) -> None:
        self.turns += 1
        self.errors += not ok
        if not self.by_time:
            self.bar.update(1)

    def tick(self, elapsed: float) -> None:
        if self.by_time:
            self.bar.n = max(0.0, min(elapsed, self.bar.total))
        self.bar.set_postfix(turns=self.turns, errors=self.errors, refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


class Workers:
    """``n`` worker processes on one store (``spawn``: fresh interpreters). ``with Workers(...) as w:`` starts them
    and returns when each has built its agent; :meth:`run` hands out clients and collects their records."""

    def __init__(self, n: int, agent_cfg: dict, data: str, progress: bool):
        ctx = multiprocessing.get_context("spawn")
        self.events: Any = ctx.Queue()
        self.commands: list[Any] = [ctx.Queue() for _ in range(n)]
        self.procs = [ctx.Process(target=worker_main, args=(i, agent_cfg, data, self.commands[i], self.events),
                                  name=f"medhx-load-{i}", daemon=True) for i in range(n)]
        self.progress = progress

    def __enter__(self) -> Workers:
        for p in self.procs:
            p.start()
        bar = Progress(f"starting {len(self.procs)} process(es)", len(self.procs), "ready", False, self.progress)
        try:
            waiting = len(self.procs)
            deadline = time.monotonic() + READY_TIMEOUT_S
            while waiting:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"load-bench workers not ready after {READY_TIMEOUT_S} s")
                if (event := self._next()) is not None and event[0] == "ready":
                    waiting -= 1
                    bar.turn(True)
        except BaseException:
            self.__exit__()
            raise
        finally:
            bar.close()
        return self

    def run(self, plans: list[ClientPlan], desc: str, total: float, by_time: bool) -> tuple[Records, float]:
        """Every plan run by worker ``client % n``, all starting together; the merged records and the wall time."""
        n = len(self.procs)
        t0 = time.monotonic() + START_DELAY_S
        for i, q in enumerate(self.commands):
            q.put((t0, [p for p in plans if p.client % n == i]))
        merged = Records()
        bar = Progress(desc, total, "s" if by_time else "turns", by_time, self.progress)
        try:
            waiting = n
            while waiting:
                event = self._next()
                bar.tick(time.monotonic() - t0)
                if event is None:
                    continue
                kind, _, payload = event
                if kind == "turn":
                    bar.turn(payload)
                elif kind == "done":
                    merged.sent += payload.sent
                    merged.opened += payload.opened
                    waiting -= 1
        finally:
            bar.close()
        return merged, time.monotonic() - t0

    def _next(self) -> tuple | None:
        """The next event (None after half a second without one); a worker that failed or died is an error."""
        try:
            event = self.events.get(timeout=0.5)
        except queue.Empty:
            if dead := [p.name for p in self.procs if not p.is_alive()]:
                raise RuntimeError(f"load-bench worker(s) {', '.join(dead)} exited unexpectedly") from None
            return None
        if event[0] == "failed":
            raise RuntimeError(f"load-bench worker {event[1]} failed:\n{event[2]}")
        return event

    def __exit__(self, *exc: object) -> None:
        for q in self.commands:
            q.put(None)
        for p in self.procs:
            p.join(timeout=60)
            if p.is_alive():
                p.terminate()
                p.join(timeout=10)


def clinic_plans(cfg: LoadBenchConfig, level: int) -> list[ClientPlan]:
    c = cfg.clinic
    assert c is not None
    return [ClientPlan(client=i, start_s=c.ramp_s * i / level, turns=c.turns, think_s=c.think_s, interviews=None,
                       stop_s=c.ramp_s + c.window_s, seed=c.seed) for i in range(level)]


def stress_plans(cfg: LoadBenchConfig) -> list[ClientPlan]:
    s = cfg.stress
    assert s is not None
    return [ClientPlan(client=i, turns=s.turns) for i in range(s.interviews)]


@contextmanager
def on_store(agent_cfg: dict, store: Store, processes: int, cfg: LoadBenchConfig,
             progress: bool) -> Iterator[tuple[Workers, SessionStore]]:
    """``processes`` workers on a fresh SQLite directory or the configured PostgreSQL, and a reader on the same
    store for the checks (it never builds the agent: it only reads)."""
    largest = max([*(cfg.clinic.concurrency if cfg.clinic else []), cfg.stress.interviews if cfg.stress else 0])
    # PostgreSQL: the clients of a worker, up to an even share of POSTGRES_CONNECTIONS (a turn holds a connection only
    # while it reads or writes a checkpoint, and two cores run few turns at once); the reader needs two
    pool = max(2, min(-(-largest // processes) + 2, POSTGRES_CONNECTIONS // processes))
    with tempfile.TemporaryDirectory(prefix="medhx-load-") as tmp:
        run_cfg = {**agent_cfg, "session": store_session(agent_cfg, store, cfg, tmp, pool)}
        read_cfg = {**agent_cfg, "session": store_session(agent_cfg, store, cfg, tmp, 2)}
        with Workers(processes, run_cfg, cfg.data, progress) as workers, SessionStore(read_cfg) as reader:
            yield workers, reader


def measure(workers: Workers, reader: SessionStore, plans: list[ClientPlan], desc: str, total: float,
            by_time: bool, window: tuple[float, float] | None) -> dict:
    """One run: the clients at once, then every session read back and checked."""
    records, wall = workers.run(plans, desc, total, by_time)

    def read(sid: str) -> InterviewState | None:
        return Session(reader, sid).state() if reader.exists(sid) else None

    checked = check_transcripts(read, records.sent, records.opened)
    return summarise(records, checked, window, wall)


def run(cfg: LoadBenchConfig, progress: bool = True) -> dict:
    """Every configured run; the report (JSON, table, plot) is rewritten after each one, marked ``complete: false``
    until the last: a long run that fails late (a store that goes away) keeps the levels it finished."""
    agent_cfg = load_agent_config(cfg.agent)
    report: dict = {"config": json.loads(cfg.model_dump_json()),
                    "agent": {role: agent_cfg.get(role, {}).get("kind") for role in ("nlu", "policy", "nlg")},
                    "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                                "model_threads_per_process": int(os.environ.get(THREADS_ENV) or 1)},
                    "clinic": [], "stress": [], "complete": False}

    def done(kind: str, result: dict) -> None:
        report[kind].append(result)
        report["ok"] = all(r["ok"] for r in report["clinic"] + report["stress"])
        write_outputs(report, Path(cfg.output_dir))

    for store in cfg.stores:
        for processes in cfg.processes:
            with on_store(agent_cfg, store, processes, cfg, progress) as (workers, reader):
                where = reader.describe().split("@")[-1] if store == "postgres" else "sqlite (temporary directory)"
                head = {"store": store, "where": where, "processes": processes}
                for level in cfg.clinic.concurrency if cfg.clinic else []:
                    c = cfg.clinic
                    desc = f"clinic {store} x{processes} {level} at once"
                    run_ = measure(workers, reader, clinic_plans(cfg, level), desc, c.ramp_s + c.window_s, True,
                                   (c.ramp_s, c.ramp_s + c.window_s))
                    done("clinic", {"mode": "clinic", **head, "concurrency": level, **run_})
                if cfg.stress:
                    s = cfg.stress
                    desc = f"stress {store} x{processes} {s.interviews} at once"
                    run_ = measure(workers, reader, stress_plans(cfg), desc, s.interviews * s.turns, False, None)
                    done("stress", {"mode": "stress", **head, "concurrency": s.interviews, **run_})
    report["complete"] = True
    report["ok"] = all(r["ok"] for r in report["clinic"] + report["stress"])
    write_outputs(report, Path(cfg.output_dir))
    return report


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("load-bench", help="interviews at once on one session store: clinic pace and closed-loop stress")
    p.add_argument("--config", default=str(REPO_ROOT / "configs" / "load_bench.yaml"))
    p.add_argument("--mode", choices=("clinic", "stress"), help="only this one (default: what the config has)")
    p.add_argument("--store", action="append", choices=("sqlite", "postgres"), help="only these stores")
    p.add_argument("--processes", action="append", type=int, help="only these process counts")
    p.add_argument("--concurrency", action="append", type=int, help="clinic: only these levels")
    p.add_argument("--interviews", type=int, help="stress: this many interviews")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cmd_load_bench)


def _cmd_load_bench(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    raw = json.loads(cfg.model_dump_json())
    if args.mode:
        raw["stress" if args.mode == "clinic" else "clinic"] = None
    raw.update(overrides(args, {"store": "stores", "processes": "processes"}))
    if args.concurrency and raw["clinic"]:
        raw["clinic"]["concurrency"] = args.concurrency
    if args.interviews and raw["stress"]:
        raw["stress"]["interviews"] = args.interviews
    report = run(LoadBenchConfig.model_validate(raw), progress=not args.no_progress)
    print((Path(cfg.output_dir) / "report.md").read_text())
    print(f"report, table and plot in {cfg.output_dir}", file=sys.stderr)
    return 0 if report["ok"] else 1
