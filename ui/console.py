"""What the console does with sessions, apart from how it draws them: one object shared by every browser tab.

- One :class:`agent.app.sessions.SessionStore` per :class:`ui.presets.Variant`, all on the console's one store, so a
  clinician switching preset, adapter or review mode keeps the session: the next turn is run by the graph built
  from the other config on the same checkpointed session. The modules of a variant are built once, in the
  background (a few seconds for the clinical NLU; an LLM preset may start a vLLM server), and the page shows
  progress while it waits.
- A turn runs in its own thread (:class:`TurnRun`): a closed browser tab never cuts a turn in half, and the page
  follows the turn's events (one per finished graph node) as they come.
- One turn at a time per session: the console's per-session lock (tabs of this process) in front of the store's
  own (other processes); the loser gets "session busy", never a duplicated or lost turn.
- Each clinician sees only the sessions they started (``ui.share_sessions`` shares them all); a session that is
  not theirs is reported as not found, so its existence is not revealed either, and the attempt is recorded.
- Every access to an interview (started, opened, a turn, reviewed, exported, downloaded, deleted; refused
  attempts too) goes to the access log in the store (:mod:`agent.app.access_log`), which its owner reads.
- Exports are files in the private data directory (:mod:`ui.exports`), served by the console's own
  owner-checked route, never by Gradio.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import queue
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import httpx

from agent.app.access_log import AccessEntry, AccessLog, access_log_json
from agent.app.checkpoints import default_data_dir
from agent.app.export import ExportError, export_session
from agent.app.graph import TURN_NODES, build_agent
from agent.app.graph_nodes import Agent
from agent.app.graph_state import InterviewState
from agent.app.sessions import Session, SessionBusy, SessionError, SessionInfo, SessionNotFound, SessionStore
from agent.core import safety
from agent.core.protocol import TurnContext
from models.backends.base import BackendError
from ui.exports import EXPORT_SUFFIX, ExportFiles, format_of
from ui.presets import Preset, Variant, discover_presets
from ui.render import printable_note
from ui.settings import StoreSettings, UISettings

log = logging.getLogger(__name__)

BUSY = ("Session busy: another tab or clinician is running a turn of this interview right now. "
        "Wait for it to finish, then try again (nothing was sent).")
NEXT_NODE = dict(zip(TURN_NODES[:-1], TURN_NODES[1:], strict=True))
"""The node that runs after each one: a finished node tells which node a long turn is in now."""


def user_message(exc: BaseException) -> str:
    """An error as the clinician reads it: what happened and that the interview is kept; never a traceback."""
    if isinstance(exc, SessionBusy):
        return f"{BUSY} ({exc})"
    if isinstance(exc, SessionNotFound):
        return f"Interview not found: {exc}. It may have been deleted; pick another one in the sidebar."
    if isinstance(exc, SessionError):
        return f"Not done: {exc}."
    if isinstance(exc, TimeoutError):
        return f"Timed out: {exc}. The interview is saved; try again."
    if isinstance(exc, BackendError | httpx.HTTPError | ConnectionError):
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return f"Model server problem: {first}. The interview is saved; try again once the server is up."
    if isinstance(exc, ExportError | ValueError):
        return f"Not applied: {exc}"
    if isinstance(exc, FileNotFoundError):
        return f"File not found: {exc}"
    return (f"Unexpected error ({type(exc).__name__}); the interview is saved. "
            "The details are in the console's log.")


WARM_UP = TurnContext(turns=[("doctor", "What brings you in today?"), ("patient", "I have had a cough.")],
                      past_actions=[[]])


def build_warm_agent(config: dict, warm_nlu: bool) -> Agent:
    """The agent of ``config``, its lazily loaded pipelines loaded (spaCy + medspaCy: a few seconds) while the page
    shows progress, not inside the first turn: the red-flag phrase rules read one utterance, and with ``warm_nlu``
    the NLU too (only for agents without an LLM module: warming one would be a model request)."""
    agent = build_agent(config)
    try:
        if agent.red_flag_rules is not None:
            safety.check_text_flags(WARM_UP.turns[-1][1], agent.red_flag_rules)
        if warm_nlu:
            agent.nlu.understand(WARM_UP)
    except Exception:
        agent.close()
        raise
    return agent


class TurnRun:
    """One patient turn, run to its end in a thread while the page follows its events."""

    DONE = object()

    def __init__(self, session: Session, text: str, release: threading.Lock):
        self.session, self.text, self._release = session, text, release
        self.key = uuid.uuid4().hex  # the session never adds a turn twice under one key
        self.error: BaseException | None = None
        self._events: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=f"turn-{session.id}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for event in self.session.stream_send(self.text, key=self.key):
                self._events.put(event)
        except BaseException as exc:  # reported to the page by follow(); the session keeps every finished node
            if not isinstance(exc, SessionError | ValueError):
                log.exception("turn of session %s failed", self.session.id)
            self.error = exc
        finally:
            self._release.release()
            self._events.put(self.DONE)

    def follow(self, tick_s: float = 1.0) -> Iterator[dict | None]:
        """The turn's events as they come; ``None`` every ``tick_s`` without one (to show time passing)."""
        while True:
            try:
                event = self._events.get(timeout=tick_s)
            except queue.Empty:
                yield None
                continue
            if event is self.DONE:
                return
            yield event


@dataclass
class TurnProgress:
    """A running turn as far as its events tell: the one reading of a :class:`TurnRun`'s events, for the page (which
    shows it as it grows) and the API (which returns the nodes that ran)."""

    nodes: list[str] = field(default_factory=list)  # the graph nodes finished, in order
    latency: dict[str, float] = field(default_factory=dict)  # seconds per finished timed node
    running: str = "nlu"  # the node running now
    started: float = field(default_factory=time.monotonic)

    def follow(self, run: TurnRun) -> Iterator[Literal["timed", "tick"]]:
        """Record ``run``'s events here until the turn ends; yields ``timed`` when a node's latency came (something
        new to draw) and ``tick`` every second without an event (only time has passed)."""
        for event in run.follow():
            if event is None:
                yield "tick"
            elif event.get("type") == "update":
                self.nodes.append(event["node"])
                self.running = NEXT_NODE.get(event["node"], self.running)
            elif event.get("type") == "custom" and event.get("event") == "latency":
                self.latency[event["node"]] = float(event["seconds"])
                yield "timed"

    def seconds(self) -> float:
        return time.monotonic() - self.started


@dataclass(frozen=True)
class TurnEnd:
    """Where a turn or a review left the session: its state and what it waits for (None: ended)."""

    state: InterviewState
    waiting: str | None


class Console:
    def __init__(self, settings: UISettings):
        self.settings = settings
        self.presets: dict[str, Preset] = discover_presets(settings)
        self.default_preset = next(iter(self.presets))
        # one store for every preset: ui.session, else the one the default agent config names
        default_session = self.presets[self.default_preset].config.get("session") or {}
        self.store_settings = settings.session or StoreSettings.model_validate(
            {k: default_session.get(k) for k in StoreSettings.model_fields if default_session.get(k) is not None})
        self._agents: dict[tuple, Future] = {}
        self._stores: dict[Variant, SessionStore] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._mutex = threading.Lock()
        self._builder = ThreadPoolExecutor(max_workers=2, thread_name_prefix="medhx-build")
        self._closed = False
        # reading, listing, exporting and deleting need no modules: one store that never runs the graph
        self.reader = SessionStore(self.config_for(self.default_variant()))
        self.access = AccessLog(self.reader.checkpoints)
        self.files = ExportFiles(self.export_root(), settings.export_keep_minutes * 60)
        self.files.sweep()

    def close(self) -> None:
        """Close the stores and the built modules (once; the server's shutdown and its owner may both call it)."""
        if self._closed:
            return
        self._closed = True
        self._builder.shutdown(wait=False, cancel_futures=True)
        for store in self._stores.values():
            store.close()
        for fut in self._agents.values():
            if fut.done() and fut.exception() is None:
                fut.result().close()
        self.reader.close()

    # -- variants and their modules

    def export_root(self) -> Path:
        """Where exports are written: ``ui.export_dir``, else ``exports`` beside the SQLite store, else in the
        per-user data directory (PostgreSQL): the private data directory, never a shared temporary one."""
        if self.settings.export_dir:
            return Path(self.settings.export_dir)
        store = self.reader.checkpoints.settings
        return (store.path.parent if store.path is not None else default_data_dir()) / "exports"

    def default_variant(self) -> Variant:
        return Variant.of(self.default_preset, review=self.presets[self.default_preset].review)

    def preset(self, name: str) -> Preset:
        if name not in self.presets:
            raise ValueError(f"unknown preset {name!r}; choose one of {sorted(self.presets)}")
        return self.presets[name]

    def config_for(self, variant: Variant) -> dict:
        return self.preset(variant.preset).variant_config(variant, self.store_settings)

    def prepare(self, variant: Variant) -> Future:
        """The variant's modules, built once in the background (a failed build is retried on the next call)."""
        key = variant.agent_key()
        with self._mutex:
            fut = self._agents.get(key)
            if fut is None or (fut.done() and fut.exception() is not None):
                config = self.config_for(dataclasses.replace(variant, review=False))
                warm = not self.preset(variant.preset).llm_roles
                fut = self._agents[key] = self._builder.submit(build_warm_agent, config, warm)
            return fut

    def is_ready(self, variant: Variant) -> bool:
        fut = self._agents.get(variant.agent_key())
        return fut is not None and fut.done() and fut.exception() is None

    def store(self, variant: Variant) -> SessionStore:
        """The variant's store (its modules built: blocks until they are; :meth:`prepare` first to show progress)."""
        agent: Agent = self.prepare(variant).result()
        with self._mutex:
            store = self._stores.get(variant)
            if store is None:
                store = self._stores[variant] = SessionStore(
                    self.config_for(variant), agent=dataclasses.replace(agent, review=variant.review))
            return store

    # -- per-session lock

    @contextmanager
    def turn_lock(self, session_id: str) -> Iterator[threading.Lock]:
        lock = self._acquire(session_id)
        try:
            yield lock
        finally:
            lock.release()

    def _acquire(self, session_id: str) -> threading.Lock:
        with self._mutex:
            lock = self._locks.setdefault(session_id, threading.Lock())
        if not lock.acquire(blocking=False):
            raise SessionBusy(f"session {session_id} has a turn running in this console")
        return lock

    # -- reading (owner checked)

    def _visible(self, owner: str | None, user: str) -> bool:
        return self.settings.share_sessions or owner == user

    def sessions(self, user: str) -> list[SessionInfo]:
        return [i for i in self.reader.list_sessions() if self._visible(i.owner, user)]

    def checked(self, session_id: str, user: str, action: str = "opened") -> tuple[Session, str | None]:
        """The session and its owner, if ``user`` may see it; else :class:`SessionNotFound`, and when the session
        exists the refused ``action`` is recorded in its access log (its owner sees who tried)."""
        if not session_id:
            raise SessionError("no interview is open: start a new one or pick one in the sidebar")
        if not self.reader.exists(session_id):
            raise SessionNotFound(f"no session {session_id!r}")
        session = Session(self.reader, session_id)
        owner = session.state().owner
        if not self._visible(owner, user):
            self.access.record(session_id, owner, user, action, "refused")
            raise SessionNotFound(f"no session {session_id!r}")
        return session, owner

    def session(self, session_id: str, user: str, action: str = "opened") -> Session:
        """The session for reading, if ``user`` may see it (a refusal is recorded, a read is not: the page redraws
        from the session all the time; :meth:`open` records a clinician opening it)."""
        return self.checked(session_id, user, action)[0]

    def open(self, session_id: str, user: str) -> Session:
        """The session a clinician opens (a click in the sidebar, a reloaded page, the API): recorded."""
        session, owner = self.checked(session_id, user, "opened")
        self.access.record(session_id, owner, user, "opened")
        return session

    def state(self, session_id: str, user: str) -> InterviewState:
        return self.session(session_id, user).state()

    def export(self, session_id: str, user: str, fmt: str) -> str:
        """MediTOD JSON (``meditod``), the markdown history note (``note``), the printable note (``html``) or the
        interview's access log (``access``, its owner only); recorded."""
        if fmt not in EXPORT_SUFFIX:
            raise ValueError(f"unknown export format {fmt!r}; use {', '.join(EXPORT_SUFFIX)}")
        session, owner = self.checked(session_id, user, "exported")
        self._check_format(session_id, owner, user, fmt, "exported")
        text = self._export_text(session, fmt)
        self.access.record(session_id, owner, user, "exported", detail=fmt)
        return text

    def _check_format(self, session_id: str, owner: str | None, user: str, fmt: str, action: str) -> None:
        """The access log is its owner's alone, even where sessions are shared: anyone else is refused (and
        recorded)."""
        if fmt == "access" and owner != user:
            self.access.record(session_id, owner, user, action, "refused", detail=fmt)
            raise SessionNotFound(f"no access log of session {session_id!r} for {user}: only its owner sees it")

    def _export_text(self, session: Session, fmt: str) -> str:
        """The export's text (the caller checked who may have it)."""
        if fmt == "access":
            owner = session.state().owner or ""
            return access_log_json(self.access_entries(owner, session.id), owner, session.id)
        st = session.state()
        return printable_note(st) if fmt == "html" else export_session(st, fmt)

    def export_file(self, session_id: str, user: str, fmt: str) -> Path:
        """The export as a file in the private data directory (0600 in 0700), for the console's own route
        (``/export/<session>/<name>``: :mod:`ui.exports`) to serve to clinicians who may see the interview."""
        return self.files.write(session_id, fmt, self.export(session_id, user, fmt))

    def download(self, session_id: str, user: str, name: str) -> tuple[Path, str]:
        """The file behind an export link (written again from the store when it is gone) and its name; recorded.
        Anything but an export of an interview ``user`` may see is :class:`SessionNotFound`."""
        session, owner = self.checked(session_id, user, "downloaded")
        fmt = format_of(session_id, name)
        if fmt is None:
            raise SessionNotFound(f"no export {name!r} of session {session_id!r}")
        self._check_format(session_id, owner, user, fmt, "downloaded")
        path = self.files.fresh(session_id, fmt) if fmt != "access" else None  # a log is read as it is now
        if path is None:
            path = self.files.write(session_id, fmt, self._export_text(session, fmt))
        self.access.record(session_id, owner, user, "downloaded", detail=fmt)
        return path, name

    def access_entries(self, user: str, session_id: str | None = None) -> list[AccessEntry]:
        """The access log of ``user``'s own interviews (one with ``session_id``; deleted ones included): nobody
        else's, whatever the sharing setting."""
        return self.access.entries(user, session_id)

    # -- changing (owner checked, one at a time per session)

    def start(self, variant: Variant, user: str) -> str:
        """A new interview owned by ``user``; the doctor's greeting is in it (or awaits review)."""
        session_id = self.store(variant).start(owner=user).id
        self.access.record(session_id, user, user, "started")
        return session_id

    def begin_turn(self, variant: Variant, session_id: str, user: str, text: str) -> TurnRun:
        """Start a patient turn; raises at once (nothing sent) when the session is busy, ended or awaits review."""
        _, owner = self.checked(session_id, user, "turn")
        store = self.store(variant)
        lock = self._acquire(session_id)
        try:
            session = Session(store, session_id)
            waiting = session.waiting_for()
            if waiting == "review":
                raise SessionError("the planned doctor turn awaits your review: approve or edit it first")
            if waiting is None:
                raise SessionError(f"this interview has ended ({session.state().status}); start a new one")
            self.access.record(session_id, owner, user, "turn", detail=len(session.state().turns))
            return TurnRun(session, text, lock)
        except BaseException:
            lock.release()
            raise

    def review(self, variant: Variant, session_id: str, user: str, decision: dict) -> TurnEnd:
        """Answer the review interrupt as ``user`` (recorded with the time in the session's review edits); where it
        left the session."""
        _, owner = self.checked(session_id, user, "reviewed")
        store = self.store(variant)
        with self.turn_lock(session_id):
            Session(store, session_id).review(decision, by=user)
        kind = next((k for k in ("edit", "replace_actions", "approve", "state_patch") if k in decision), "")
        self.access.record(session_id, owner, user, "reviewed", detail=kind)
        return self.turn_end(session_id, user)

    def turn_end(self, session_id: str, user: str) -> TurnEnd:
        """The session after a turn (:meth:`begin_turn`, followed to its end) or a review."""
        session = self.session(session_id, user)
        return TurnEnd(session.state(), session.waiting_for())

    def settle(self, variant: Variant, session_id: str, user: str) -> None:
        """Finish a turn a crash or restart left half-done (the store resumes from the last finished node)."""
        self.session(session_id, user)
        with self.turn_lock(session_id):
            self.store(variant).resume(session_id)

    def delete(self, session_id: str, user: str) -> None:
        """Delete the interview, its checkpoints and its export files; the access log keeps the deletion."""
        _, owner = self.checked(session_id, user, "deleted")
        with self.turn_lock(session_id):
            self.reader.delete(session_id)
        self.files.remove(session_id)
        self.access.record(session_id, owner, user, "deleted")

    def wait_ready(self, variant: Variant, tick_s: float = 1.0) -> Iterator[float]:
        """Seconds waited, every ``tick_s``, until the variant's modules are built (raises if the build fails)."""
        fut = self.prepare(variant)
        t0 = time.monotonic()
        while not fut.done():
            yield time.monotonic() - t0
            with contextlib.suppress(TimeoutError):
                fut.exception(timeout=tick_s)
        fut.result()
