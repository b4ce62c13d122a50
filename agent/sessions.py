"""Durable interview sessions: the interview graph checkpointed per session (thread id = session id).

SQLite (``<session.dir>/sessions.sqlite``) by default; PostgreSQL when a URL is configured
(``session.postgres_url`` or ``$MEDHX_POSTGRES_URL``), so several app replicas share one database.

Exactly-once turns. Every node's writes are checkpointed before the next node runs
(``durability="sync"``), and the patient's utterance is stored the moment it is handed to
the graph (LangGraph keeps a resume value as a pending write). So after a crash:

- a turn that stopped inside any node is finished by :meth:`Session.settle` (``invoke(None)``
  continues from the last finished node; an utterance stored but not yet consumed is consumed);
- a client that does not know whether its last ``send`` went through sends it again with the
  same ``key``: a patient turn with that key is never added twice, and the doctor turn that
  answered it is returned instead of a new one.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agent.export import export_session
from agent.graph import build_agent, build_graph, load_config
from agent.graph_nodes import Agent
from agent.graph_state import InterviewState, Turn, parse_review_decision, utc_now
from agent.safety import clean_patient_text

DEFAULT_DIR = ".medhx"
SQLITE_FILE = "sessions.sqlite"
POSTGRES_ENV = "MEDHX_POSTGRES_URL"
DEFAULT_CONFIG = "configs/default.yaml"


class SessionError(RuntimeError):
    """A session operation that cannot be done in the session's current state."""


class SessionNotFound(SessionError):
    pass


@dataclass
class SessionInfo:
    session_id: str
    created_at: str
    updated_at: str
    status: str
    waiting_for: str | None
    turns: int
    red_flags: int
    owner: str | None = None


# --------------------------------------------------------------------------- checkpointer


def store_settings(session_cfg: dict | None) -> dict:
    """``{"store": "sqlite", "path": ...}`` or ``{"store": "postgres", "url": ...}`` from the config."""
    cfg = dict(session_cfg or {})
    url = cfg.get("postgres_url") or os.environ.get(POSTGRES_ENV)
    store = cfg.get("store") or ("postgres" if url else "sqlite")
    if store == "postgres":
        if not url:
            raise ValueError(f"session.store is postgres but no session.postgres_url (or ${POSTGRES_ENV}) is set")
        return {"store": "postgres", "url": url}
    if store != "sqlite":
        raise ValueError(f"session.store must be sqlite or postgres, got {store!r}")
    return {"store": "sqlite", "path": str(Path(cfg.get("dir") or DEFAULT_DIR).expanduser() / SQLITE_FILE)}


def open_checkpointer(settings: dict) -> tuple[Any, Callable[[], None]]:
    if settings["store"] == "postgres":
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg import Connection
        from psycopg.rows import dict_row

        try:
            conn = Connection.connect(settings["url"], autocommit=True, prepare_threshold=0, row_factory=dict_row)
        except Exception as exc:  # psycopg.OperationalError: name the URL without its password
            raise ConnectionError(f"cannot connect to PostgreSQL session store: {exc}") from None
        saver = PostgresSaver(conn)
        saver.setup()
        return saver, conn.close
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = Path(settings["path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()
    return saver, conn.close


def _thread_ids(saver: Any) -> list[str]:
    sql = "SELECT DISTINCT thread_id FROM checkpoints WHERE checkpoint_ns = '' ORDER BY thread_id"
    if hasattr(saver, "cursor"):  # SqliteSaver
        with saver.cursor(transaction=False) as cur:
            return [row[0] for row in cur.execute(sql).fetchall()]
    with saver._cursor() as cur:  # PostgresSaver: no public "list threads"
        cur.execute(sql)
        return [row["thread_id"] for row in cur.fetchall()]


# --------------------------------------------------------------------------- store


class SessionStore:
    """Sessions in one checkpoint store. The agent (models) is built on first use, so listing,
    showing and exporting sessions never loads a model."""

    def __init__(self, config: dict, agent: Agent | None = None):
        self.config = config
        self._agent = agent
        self._owns_agent = agent is None
        self.settings = store_settings(config.get("session"))
        self.saver, self._close_saver = open_checkpointer(self.settings)
        self.graph = build_graph(self.agent, self.saver)

    def agent(self) -> Agent:
        if self._agent is None:
            self._agent = build_agent(self.config)
        return self._agent

    def close(self) -> None:
        if self._agent is not None and self._owns_agent:
            self._agent.close()
        self._close_saver()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sessions

    def exists(self, session_id: str) -> bool:
        return self.saver.get_tuple(_thread(session_id)) is not None

    def start(self, session_id: str | None = None, owner: str | None = None) -> Session:
        """A new session, greeted: the doctor's first turn is ``session.state().turns[0]``. ``owner`` records who
        started it (a clinician's login in the console)."""
        session_id = session_id or uuid.uuid4().hex[:12]
        if self.exists(session_id):
            raise SessionError(f"session {session_id!r} already exists (resume it instead)")
        session = Session(self, session_id)
        first = InterviewState(session_id=session_id, created_at=utc_now(), owner=owner)
        session._drain(first.model_dump(mode="json"))
        return session

    def resume(self, session_id: str) -> Session:
        if not self.exists(session_id):
            raise SessionNotFound(f"no session {session_id!r} in {self.describe()}")
        session = Session(self, session_id)
        session.settle()
        return session

    def open(self, session_id: str | None) -> Session:
        """Resume ``session_id`` when it exists, else start it."""
        if session_id and self.exists(session_id):
            return self.resume(session_id)
        return self.start(session_id)

    def delete(self, session_id: str) -> None:
        if not self.exists(session_id):
            raise SessionNotFound(f"no session {session_id!r} in {self.describe()}")
        self.saver.delete_thread(session_id)

    def list_sessions(self) -> list[SessionInfo]:
        out = []
        for sid in _thread_ids(self.saver):
            snap = self.graph.get_state(_thread(sid))
            st = InterviewState.model_validate(snap.values)
            out.append(SessionInfo(
                session_id=sid, created_at=st.created_at, updated_at=st.turns[-1].at if st.turns else st.created_at,
                status=st.status, waiting_for=_waiting_for(snap), turns=len(st.turns), red_flags=len(st.red_flags),
                owner=st.owner,
            ))
        return sorted(out, key=lambda i: i.updated_at, reverse=True)

    def describe(self) -> str:
        if self.settings["store"] == "sqlite":
            return f"sqlite {self.settings['path']}"
        return "postgres " + self.settings["url"].split("@")[-1]


def _thread(session_id: str) -> dict:
    return {"configurable": {"thread_id": session_id}}


def _waiting_for(snap: Any) -> str | None:
    """``patient`` / ``review`` (an open interrupt), ``running`` (a turn stopped mid-way), None (ended)."""
    if not snap.next:
        return None
    for intr in snap.interrupts:
        kind = intr.value.get("kind") if isinstance(intr.value, dict) else None
        if kind in ("patient", "review"):
            return kind
    return "running"


# --------------------------------------------------------------------------- one session


class Session:
    def __init__(self, store: SessionStore, session_id: str):
        self.store = store
        self.id = session_id
        self.config = _thread(session_id)

    # -- reading

    def state(self) -> InterviewState:
        return InterviewState.model_validate(self.store.graph.get_state(self.config).values)

    def waiting_for(self) -> str | None:
        return _waiting_for(self.store.graph.get_state(self.config))

    def pending_review(self) -> dict | None:
        snap = self.store.graph.get_state(self.config)
        for intr in snap.interrupts:
            if isinstance(intr.value, dict) and intr.value.get("kind") == "review":
                return intr.value
        return None

    def last_doctor_turn(self) -> Turn | None:
        doctor = self.state().doctor_turns()
        return doctor[-1] if doctor else None

    # -- running

    def stream(self, graph_input: Any) -> Iterator[dict]:
        """Run the graph until it waits or ends, yielding UI events:
        ``{"type": "update", "node", "data"}`` per finished node, ``{"type": "custom", ...}``
        (``event: latency`` with node and seconds; ``event: doctor`` with the new doctor turn),
        ``{"type": "interrupt", "value"}`` when it stops for the patient or for review."""
        for mode, chunk in self.store.graph.stream(
            graph_input, self.config, stream_mode=["updates", "custom"], durability="sync"
        ):
            if mode == "custom":
                yield {"type": "custom", **chunk}
                continue
            for node, data in chunk.items():
                if node == "__interrupt__":
                    for intr in data:
                        yield {"type": "interrupt", "value": intr.value}
                else:
                    yield {"type": "update", "node": node, "data": data}

    def _drain(self, graph_input: Any) -> None:
        for _ in self.stream(graph_input):
            pass

    def settle(self) -> None:
        """Finish whatever a crashed process left: a turn stopped inside a node, or an utterance
        stored but not yet consumed. At an open interrupt with nothing stored this is a no-op
        (the waiting node re-raises the same interrupt)."""
        if self.store.graph.get_state(self.config).next:
            self._drain(None)

    def stream_send(self, text: str, key: str | None = None) -> Iterator[dict]:
        """:meth:`send` as a stream of UI events."""
        from langgraph.types import Command

        if not isinstance(text, str):
            raise ValueError(f"patient utterance must be a string, got {type(text).__name__}")
        text = clean_patient_text(text)
        if not text:
            raise ValueError("patient utterance is empty")
        self.settle()
        st = self.state()
        if key is not None and (index := _keyed_turn(st, key, text)) is not None:
            yield {"type": "custom", "event": "duplicate", "key": key, "turn": index}
            return
        waiting = self.waiting_for()
        if waiting is None:
            raise SessionError(f"session {self.id} has ended ({st.status})")
        if waiting == "review":
            raise SessionError(f"session {self.id} awaits clinician review of the planned doctor turn")
        yield from self.stream(Command(resume={"text": text, "key": key, "at": utc_now()}))

    def send(self, text: str, key: str | None = None) -> Turn | None:
        """One patient utterance in, the doctor's answer out (None while it awaits review).

        ``key`` makes the call idempotent: sending a key the session already holds returns
        the doctor turn that answered it (finishing that turn first if a crash interrupted it)."""
        for _ in self.stream_send(text, key):
            pass
        st = self.state()
        index = _keyed_turn(st, key, text) if key is not None else st.patient_turns()[-1].index
        answer = st.turns[index + 1] if index is not None and index + 1 < len(st.turns) else None
        return answer if answer is not None and answer.speaker == "doctor" else None

    def review(self, decision: dict, by: str = "clinician") -> Turn | None:
        """Answer the review interrupt (``{"approve": true}`` / ``{"edit": ...}`` /
        ``{"replace_actions": [...]}``, optionally with ``{"state_patch": {...}}``); returns the
        doctor turn sent."""
        from langgraph.types import Command

        self.settle()
        if self.pending_review() is None:
            raise SessionError(f"session {self.id} has no doctor turn awaiting review")
        payload = {"by": by, **decision, "at": utc_now()}
        parse_review_decision(payload, self.state().patient_state)
        self._drain(Command(resume=payload))
        return self.last_doctor_turn()


def _keyed_turn(st: InterviewState, key: str, text: str) -> int | None:
    """Index of the patient turn sent with ``key`` (None if no turn has it)."""
    for turn in st.patient_turns():
        if turn.key == key:
            if turn.text != clean_patient_text(text):
                raise ValueError(f"key {key!r} was already used for a different utterance: {turn.text!r}")
            return turn.index
    return None


# --------------------------------------------------------------------------- CLI


def config_for_cli(path: str | None) -> dict:
    """The config named on the command line, or configs/default.yaml if there is one, else defaults."""
    if path:
        return load_config(path)
    try:
        return load_config(DEFAULT_CONFIG)
    except FileNotFoundError:
        return {}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sessions", help="list, show, delete and export stored interview sessions")
    p.add_argument("--config", default=None, help=f"config naming the session store (default {DEFAULT_CONFIG})")
    p.add_argument("--dir", default=None, help="SQLite session dir (overrides session.dir)")
    p.add_argument("--postgres-url", default=None, help="PostgreSQL URL (overrides session.postgres_url)")
    ssub = p.add_subparsers(dest="sessions_command", required=True)
    ssub.add_parser("list", help="one line per session, most recent first").set_defaults(func=_cmd_list)
    s = ssub.add_parser("show", help="transcript, patient state, red flags and review edits")
    s.add_argument("session_id")
    s.add_argument("--json", action="store_true", help="the whole session state as JSON")
    s.set_defaults(func=_cmd_show)
    d = ssub.add_parser("delete", help="delete a session and all its checkpoints")
    d.add_argument("session_id")
    d.set_defaults(func=_cmd_delete)
    e = ssub.add_parser("export", help="MediTOD-format JSON or a clinician-readable history note")
    e.add_argument("session_id")
    e.add_argument("--format", choices=("meditod", "note"), default="meditod")
    e.add_argument("--out", default=None, help="file to write (default stdout)")
    e.set_defaults(func=_cmd_export)


def _store(args: argparse.Namespace) -> SessionStore:
    config = config_for_cli(args.config)
    session_cfg = dict(config.get("session") or {})
    if args.dir:
        session_cfg.update(store="sqlite", dir=args.dir)
    if args.postgres_url:
        session_cfg.update(store="postgres", postgres_url=args.postgres_url)
    return SessionStore({**config, "session": session_cfg})


def _cmd_list(args: argparse.Namespace) -> int:
    with _store(args) as store:
        for info in store.list_sessions():
            print(json.dumps(asdict(info)))
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    with _store(args) as store:
        st = _read(store, args.session_id)
        if args.json:
            print(json.dumps(st.model_dump(mode="json"), indent=2))
            return 0
        print(f"session {st.session_id}  created {st.created_at}  status {st.status}")
        for t in st.turns:
            print(f"[{t.index}] {t.speaker}: {t.text}")
        print("patient state: " + json.dumps(st.patient_state))
        for f in st.red_flags:
            print("red flag: " + json.dumps(f))
        for e in st.review_edits:
            print(f"review edit: turn {e.turn} {e.kind} by {e.by} at {e.at}")
    return 0


def _read(store: SessionStore, session_id: str) -> InterviewState:
    if not store.exists(session_id):
        raise SessionNotFound(f"no session {session_id!r} in {store.describe()}")
    return Session(store, session_id).state()


def _cmd_delete(args: argparse.Namespace) -> int:
    with _store(args) as store:
        store.delete(args.session_id)
        print(f"deleted {args.session_id}", file=sys.stderr)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    with _store(args) as store:
        st = _read(store, args.session_id)
    text = export_session(st, args.format)
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
