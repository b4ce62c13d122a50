"""Durable interview sessions: the interview graph checkpointed per session (thread id = session id).

Where and how sessions are kept (SQLite or PostgreSQL, the session index, the transcript tables, per-session locks)
is :mod:`agent.app.checkpoints`; this module runs the graph over them. The ``medhx sessions`` command is
:mod:`agent.app.sessions_cli`.

One turn at a time per session: every operation that runs the graph holds the session's lock, so a second tab or
process gets :class:`SessionBusy` instead of a duplicated or lost turn.

Storage linear in the interview. The graph checkpoints once per run, when it stops at an interrupt or ends
(``durability="exit"``): once per turn, twice with clinician review. After each run the turns it finished are
appended to the transcript table (:mod:`agent.app.transcript`) and the session's older checkpoints are pruned: a
session is its transcript rows plus one checkpoint that holds the patient state and the turns of the last run only.

Exactly-once turns. The patient's utterance is stored (``medhx_utterances``) before the graph runs. So after a crash:

- a turn that stopped mid-way left no checkpoint: the session still waits for that utterance, and
  :meth:`Session.settle` runs the turn again from the stored one (a turn's modules run again from its start);
- a turn whose checkpoint was saved but whose turns were not yet appended to the transcript still has them in that
  checkpoint: :meth:`Session.settle` appends them;
- a client that does not know whether its last ``send`` went through sends it again with the
  same ``key``: a patient turn with that key is never added twice, and the doctor turn that
  answered it is returned instead of a new one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from langgraph.types import Command

from agent.app.checkpoints import CheckpointStore, SessionBusy, SessionError, SessionNotFound, StoreSettings
from agent.app.graph import build_agent, build_graph
from agent.app.graph_nodes import Agent
from agent.app.graph_state import InterviewState, OnRecord, Turn, parse_review_decision, utc_now, with_record
from agent.app.transcript import decode, encode, last_patient_state
from agent.core.safety import clean_patient_text

__all__ = ["Session", "SessionBusy", "SessionError", "SessionInfo", "SessionNotFound", "SessionStore"]


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


# --------------------------------------------------------------------------- store


class SessionStore:
    """Sessions in one checkpoint store. The agent (models) is built on first use, so listing,
    showing and exporting sessions never loads a model."""

    def __init__(self, config: dict, agent: Agent | None = None):
        self.config = config
        self._agent = agent
        self._owns_agent = agent is None
        self.checkpoints = CheckpointStore(StoreSettings.from_config(config.get("session")))
        self.saver = self.checkpoints.saver
        self.graph = build_graph(self.agent, self.saver)
        if self.checkpoints.new_index:
            self.checkpoints.index_unlisted(self._describe_unlisted)

    def agent(self) -> Agent:
        if self._agent is None:
            self._agent = build_agent(self.config)
        return self._agent

    def close(self) -> None:
        if self._agent is not None and self._owns_agent:
            self._agent.close()
        self.checkpoints.close()

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
        with self.checkpoints.lock(session_id):
            self.checkpoints.add_session(session_id, owner, first.created_at)
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
        with self.checkpoints.lock(session_id):  # never under a running turn
            self.checkpoints.remove_session(session_id)

    def compact(self, session_id: str) -> bool:
        """A session stored before the transcript table (every node's checkpoint, each with the whole transcript)
        brought to today's layout without running anything: its turns put on record, its checkpoints but the latest
        dropped. False (left as it is, for its next resume to finish) when it stopped inside a node; SessionBusy when
        a turn of it is running."""
        with self.checkpoints.lock(session_id):
            return Session(self, session_id)._put_on_record()

    def list_sessions(self, owner: str | None = None) -> list[SessionInfo]:
        """Sessions, most recent activity first; only ``owner``'s when given."""
        out = []
        for row in self.checkpoints.sessions():
            if owner is not None and row.owner != owner:
                continue
            session = Session(self, row.session_id)
            snap = self.graph.get_state(session.config)
            turns = session._length(snap)
            values = snap.values
            out.append(SessionInfo(
                session_id=row.session_id, created_at=row.created_at, updated_at=row.updated_at,
                status=values.get("status", "active"), waiting_for=session._waiting(snap, turns), turns=turns,
                red_flags=len(values.get("red_flags") or []), owner=row.owner,
            ))
        return out

    def _describe_unlisted(self, session_id: str) -> tuple[str | None, str, str]:
        st = Session(self, session_id).state()
        return st.owner, st.created_at, st.turns[-1].at if st.turns else st.created_at

    def describe(self) -> str:
        return self.checkpoints.describe()


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
        self._on_record: list[Turn] = []  # the transcript rows decoded so far (see _record)
        self._last_row: tuple[int, str, str] | None = None

    # -- reading

    def state(self) -> InterviewState:
        """The interview: the turns on record and those of the checkpoint past them; and a patient utterance stored
        but not yet taken by a finished turn (its turn is running, or stopped mid-way) as the last turn, without its
        NLU and state yet, as the patient said it."""
        snap = self.store.graph.get_state(self.config)
        turns = with_record(self._record(), InterviewState.model_validate(snap.values).turns)
        if (said := self._unconsumed(len(turns))) is not None:
            turns.append(Turn(index=len(turns), speaker="patient", text=said["text"], at=said["at"], key=said["key"]))
        return InterviewState.model_validate({**snap.values, "turns": turns})

    def waiting_for(self) -> str | None:
        """``patient`` / ``review`` (an open interrupt), ``running`` (a turn stopped mid-way: inside a node, or an
        utterance stored that no turn has consumed yet), None (ended)."""
        snap = self.store.graph.get_state(self.config)
        return self._waiting(snap, self._length(snap))

    def pending_review(self) -> dict | None:
        snap = self.store.graph.get_state(self.config)
        for intr in snap.interrupts:
            if isinstance(intr.value, dict) and intr.value.get("kind") == "review":
                return intr.value
        return None

    def last_doctor_turn(self) -> Turn | None:
        doctor = self.state().doctor_turns()
        return doctor[-1] if doctor else None

    def _record(self) -> list[Turn]:
        """The turns in the transcript table. Its rows are only appended, never changed, so the turns decoded before
        are kept and only the rows past them are read and patched: decoding the whole transcript three times a turn
        cost the live agent about 16 ms a turn on the shared dialogues, growing with the interview. The last known
        row is read again and compared, so a session deleted and started again under its id is decoded afresh."""
        rows = self.store.checkpoints.turn_rows(self.id, since=max(len(self._on_record) - 1, 0))
        if self._last_row is not None:
            if rows[:1] == [self._last_row]:
                rows = rows[1:]
            else:
                self._on_record, self._last_row = [], None
                rows = self.store.checkpoints.turn_rows(self.id)
        if rows:
            self._on_record = [*self._on_record, *decode(rows, last_patient_state(self._on_record))]
            self._last_row = rows[-1]
        return list(self._on_record)

    def _length(self, snap: Any) -> int:
        """How many turns the session holds: on record, or in its checkpoint's tail."""
        tail = snap.values.get("turns") or []
        last = max((t["index"] if isinstance(t, dict) else t.index for t in tail), default=-1)
        return max(self.store.checkpoints.turn_count(self.id), last + 1)

    def _waiting(self, snap: Any, length: int) -> str | None:
        waiting = _waiting_for(snap)
        if waiting == "patient" and self._unconsumed(length) is not None:
            return "running"
        return waiting

    def _unconsumed(self, length: int) -> dict | None:
        """The patient utterance stored for the next turn (index ``length``) that no turn has consumed yet."""
        body = self.store.checkpoints.received(self.id, length)
        return json.loads(body) if body is not None else None

    # -- running

    def stream(self, graph_input: Any) -> Iterator[dict]:
        """Run the graph until it waits or ends, yielding UI events:
        ``{"type": "update", "node", "data"}`` per finished node, ``{"type": "custom", ...}``
        (``event: latency`` with node and seconds; ``event: doctor`` with the new doctor turn),
        ``{"type": "interrupt", "value"}`` when it stops for the patient or for review.
        The run checkpoints once, when it stops; its turns then go on record (:meth:`_put_on_record`)."""
        context = OnRecord(self._record())
        for mode, chunk in self.store.graph.stream(
            graph_input, self.config, stream_mode=["updates", "custom"], durability="exit", context=context
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
        self._put_on_record()

    def _put_on_record(self) -> bool:
        """Append the turns the checkpoint holds past the record to the transcript table, forget the utterances they
        consumed, and prune the checkpoints before the latest. Only at rest (an interrupt or the end; False
        otherwise): a run stopped inside a node has turns a node may still change."""
        snap = self.store.graph.get_state(self.config)
        if snap.next and not snap.interrupts:
            return False
        checkpoints = self.store.checkpoints
        tail = InterviewState.model_validate(snap.values).turns
        count = checkpoints.turn_count(self.id)
        new = [t for t in tail if t.index >= count]
        if new:
            checkpoints.append_turns(self.id, encode(new, last_patient_state(self._record())))
            checkpoints.forget_received(self.id, count + len(new))
        if snap.parent_config is not None:  # a pruned checkpoint has no parent
            checkpoints.prune(self.id)
        return True

    def _drain(self, graph_input: Any) -> None:
        for _ in self.stream(graph_input):
            pass

    def settle(self) -> None:
        """Finish whatever a crashed process left: a turn stopped inside a node, turns checkpointed but not yet on
        record, or an utterance stored but not yet consumed. At an open interrupt with nothing stored this is a
        no-op. A turn another holder is running is theirs to finish."""
        try:
            with self.store.checkpoints.lock(self.id):
                self._settle()
        except SessionBusy:
            return

    def _settle(self) -> None:
        snap = self.store.graph.get_state(self.config)
        if snap.next and not snap.interrupts:  # stopped inside a node: a run that raised, or an older store
            self._drain(None)
        else:
            self._put_on_record()
        snap = self.store.graph.get_state(self.config)
        if _waiting_for(snap) == "patient" and (said := self._unconsumed(self._length(snap))) is not None:
            self._drain(Command(resume=said))

    def stream_send(self, text: str, key: str | None = None) -> Iterator[dict]:
        """:meth:`send` as a stream of UI events. Holds the session's lock until the turn is done."""
        if not isinstance(text, str):
            raise ValueError(f"patient utterance must be a string, got {type(text).__name__}")
        text = clean_patient_text(text)
        if not text:
            raise ValueError("patient utterance is empty")
        with self.store.checkpoints.lock(self.id):
            yield from self._send(text, key)
            self.store.checkpoints.touch(self.id, utc_now())

    def _send(self, text: str, key: str | None) -> Iterator[dict]:
        self._settle()
        st = self.state()
        if key is not None and (index := _keyed_turn(st, key, text)) is not None:
            yield {"type": "custom", "event": "duplicate", "key": key, "turn": index}
            return
        waiting = self.waiting_for()
        if waiting is None:
            raise SessionError(f"session {self.id} has ended ({st.status})")
        if waiting == "review":
            raise SessionError(f"session {self.id} awaits clinician review of the planned doctor turn")
        said = {"text": text, "key": key, "at": utc_now()}
        self.store.checkpoints.receive(self.id, len(st.turns), json.dumps(said))  # before the run
        yield from self.stream(Command(resume=said))

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
        with self.store.checkpoints.lock(self.id):
            self._settle()
            if self.pending_review() is None:
                raise SessionError(f"session {self.id} has no doctor turn awaiting review")
            payload = {"by": by, **decision, "at": utc_now()}
            parse_review_decision(payload, self.state().patient_state)
            self._drain(Command(resume=payload))
            self.store.checkpoints.touch(self.id, payload["at"])
        return self.last_doctor_turn()


def _keyed_turn(st: InterviewState, key: str, text: str) -> int | None:
    """Index of the patient turn sent with ``key`` (None if no turn has it)."""
    for turn in st.patient_turns():
        if turn.key == key:
            if turn.text != clean_patient_text(text):
                raise ValueError(f"key {key!r} was already used for a different utterance: {turn.text!r}")
            return turn.index
    return None
