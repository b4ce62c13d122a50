"""The simulated clinicians of ``medhx load-bench`` and the worker process that runs them (:mod:`eval.runs.load_bench`).

A worker is one process on the store, as one console process is: one :class:`SessionStore` (one compiled graph, one
set of modules, one connection pool), its clinicians one thread each, as the console's queue runs turns in threads.
The parent starts the workers (``spawn``: a fresh interpreter, no copied locks or connections), waits until each has
built its agent and run a warm-up turn, then gives every worker its share of the clinicians and one start time on
the machine's monotonic clock (system-wide on Linux, so the processes share it).

Every client records what it sent, per patient turn: the session, the idempotency key, the text, when it was sent,
how long ``send`` took or what it raised. The parent compares these records with the transcripts stored
(:mod:`eval.runs.load_bench_check`); nothing a worker believes about its own turns is taken on trust.
"""

from __future__ import annotations

import random
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.app.cpu_threads import limit_model_threads
from agent.app.sessions import Session, SessionStore
from agent.core.data import load_dialogues


@dataclass(frozen=True)
class ClientPlan:
    """What one simulated clinician does: start ``start_s`` after the run's start, then run interviews of ``turns``
    patient turns, thinking ``think_s`` before each turn, until ``interviews`` are done or the run reaches
    ``stop_s`` (a turn that would be sent later is not sent)."""

    client: int
    start_s: float = 0.0
    turns: int = 4
    think_s: tuple[float, float] = (0.0, 0.0)
    interviews: int | None = 1  # None: as many as fit before stop_s
    stop_s: float | None = None
    seed: int = 0


@dataclass
class Sent:
    """One patient turn a client sent: ``seconds`` is how long ``send`` took, None when it raised (``error``)."""

    client: int
    session: str
    key: str
    text: str
    at: float  # seconds after the run's start, when the send began
    seconds: float | None = None
    error: str | None = None


@dataclass
class Opened:
    """One interview a client started (the doctor's opening turn): ``session`` is empty when the start raised."""

    client: int
    session: str
    at: float
    seconds: float | None = None
    error: str | None = None


@dataclass
class Records:
    """What a worker's clients did (plain data: it travels back to the parent)."""

    sent: list[Sent] = field(default_factory=list)
    opened: list[Opened] = field(default_factory=list)


class Recorder:
    """:class:`Records` written by many client threads."""

    def __init__(self) -> None:
        self.records = Records()
        self.lock = threading.Lock()

    def add(self, item: Sent | Opened) -> None:
        with self.lock:
            (self.records.sent if isinstance(item, Sent) else self.records.opened).append(item)


def patient_lines(data: str) -> list[str]:
    """The shared dialogues' patient utterances: what the simulated patients say."""
    lines = [u.text for d in load_dialogues(data) for u in d.utterances if u.speaker == "patient" and u.text.strip()]
    if not lines:
        raise ValueError(f"{data}: no patient utterances to replay")
    return lines


def script(lines: list[str], client: int, interview: int, turns: int) -> list[str]:
    """The patient lines of a client's ``interview``-th interview: consecutive lines from a place of its own."""
    start = (client * 7919 + interview * 104_729) % len(lines)
    return [lines[(start + j) % len(lines)] for j in range(turns)]


def run_client(sessions: SessionStore, plan: ClientPlan, lines: list[str], t0: float, records: Recorder,
               tick: Callable[[bool], None], stop: threading.Event) -> None:
    """One clinician's interviews (see :class:`ClientPlan`); every outcome recorded, never raised."""
    rng = random.Random(f"{plan.seed}-{plan.client}")

    def now() -> float:
        return time.monotonic() - t0

    def wait_until(at: float) -> bool:
        """Sleep until ``at`` (run time); False when the run stops first or ``at`` is past ``stop_s``."""
        if plan.stop_s is not None and at >= plan.stop_s:
            return False
        return not stop.wait(max(0.0, at - now()))

    if not wait_until(plan.start_s):
        return
    done = 0
    while plan.interviews is None or done < plan.interviews:
        if plan.stop_s is not None and now() >= plan.stop_s:
            return
        session = _open(sessions, plan.client, now(), records)
        if session is None:
            tick(False)
            if not wait_until(now() + max(plan.think_s[1], 0.5)):  # a failed start is not retried in a tight loop
                return
            continue
        for line in script(lines, plan.client, done, plan.turns):
            if not wait_until(now() + rng.uniform(*plan.think_s)):
                return
            ok, closed = _send(session, plan.client, line, now(), records)
            tick(ok)
            if closed:  # the interview ended (the doctor closed it): the clinician starts the next
                break
        done += 1


def _open(sessions: SessionStore, client: int, at: float, records: Recorder) -> Session | None:
    t = time.perf_counter()
    try:
        session = sessions.start(f"load-{uuid.uuid4().hex[:12]}")
    except Exception as exc:  # recorded, never raised: the run goes on
        records.add(Opened(client, "", at, error=type(exc).__name__))
        return None
    records.add(Opened(client, session.id, at, seconds=time.perf_counter() - t))
    return session


def _send(session: Session, client: int, line: str, at: float, records: Recorder) -> tuple[bool, bool]:
    """``(sent, closed)``: whether ``send`` returned, and whether its answer ended the interview."""
    key = uuid.uuid4().hex
    t = time.perf_counter()
    closed = False
    try:
        answer = session.send(line, key=key)
        sent = Sent(client, session.id, key, line, at, seconds=time.perf_counter() - t)
        closed = answer is not None and "closing" in answer.meta
    except Exception as exc:  # a busy session, a backend or database error: recorded, never raised
        sent = Sent(client, session.id, key, line, at, error=type(exc).__name__)
    records.add(sent)
    return sent.error is None, closed


def warm_up(sessions: SessionStore, line: str) -> None:
    """One interview with one turn, then deleted: the agent's lazy parts (models, encoders, caches) are loaded and
    the store's tables exist before the clock starts."""
    session = sessions.start(f"load-warmup-{uuid.uuid4().hex[:12]}")
    session.send(line)
    sessions.delete(session.id)


def worker_main(index: int, agent_cfg: dict, data: str, commands: Any, events: Any) -> None:
    """A worker process: build the store and agent, report ``ready``, then run each command's clients
    (``(t0, [ClientPlan])``) and report ``done`` with the records, until a ``None`` command. Progress goes to
    ``events`` as ``("turn", index, ok)``; a failure as ``("failed", index, traceback)``."""
    try:
        limit_model_threads()  # as a console process runs its models
        lines = patient_lines(data)
        with SessionStore(agent_cfg) as sessions:
            warm_up(sessions, lines[0])
            events.put(("ready", index, None))
            while (command := commands.get()) is not None:
                t0, plans = command
                events.put(("done", index, run_clients(sessions, plans, lines, t0, events, index)))
    except BaseException:
        events.put(("failed", index, traceback.format_exc()))


def run_clients(sessions: SessionStore, plans: list[ClientPlan], lines: list[str], t0: float, events: Any,
                index: int) -> Records:
    """Every plan in a thread of its own, all sharing ``sessions``; returns when all are done."""
    records = Recorder()
    stop = threading.Event()

    def tick(ok: bool) -> None:
        events.put(("turn", index, ok))

    threads = [threading.Thread(target=run_client, args=(sessions, p, lines, t0, records, tick, stop),
                                name=f"clinician-{p.client}", daemon=True) for p in plans]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    finally:
        stop.set()
    return records.records
