"""Storage linear in the interview, on real SQLite and PostgreSQL stores.

A session is its transcript rows (``medhx_turns``, each appended once) plus one checkpoint; clinician review still
resumes after pruning, from another store object as another process would; a store written before this layout (the
transcript inside every checkpoint, a checkpoint per node) still reads and continues; ``medhx sessions purge`` gives
the space back (the SQLite file and the PostgreSQL relations shrink). The bytes against interview length are the
benchmark's (``medhx storage-bench``), not a test's.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from graph_fixtures import assert_cmas_valid, gold_config, patient_lines, run_medhx, transcript, write_config
from langgraph.types import Command

from agent.app.graph_state import InterviewState, Turn, utc_now
from agent.app.sessions import Session, SessionStore
from agent.app.transcript import decode, encode

LINES = patient_lines("115", 6)


def _file_bytes(path: Path) -> int:
    """A SQLite store's size: its file and its write-ahead log (gone once the last connection closed)."""
    wal = path.with_name(path.name + "-wal")
    return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


def _checkpoints(store: SessionStore, sid: str) -> int:
    return len(list(store.saver.list({"configurable": {"thread_id": sid}})))


def _interview_keeps_one_checkpoint(cfg: dict, sid: str) -> None:
    with SessionStore(cfg) as store:
        s = store.start(sid)
        assert _checkpoints(store, sid) == 1
        first_rows: list = []
        for n, line in enumerate(LINES, 1):
            s.send(line)
            rows = store.checkpoints.turn_rows(sid)
            assert len(rows) == 2 * n + 1 == len(s.state().turns)  # every turn on record once the turn is done
            assert _checkpoints(store, sid) == 1  # older checkpoints pruned
            assert store.checkpoints.received(sid, 2 * n - 1) is None  # the consumed utterance is forgotten
            if n == 2:
                first_rows = rows
        assert store.checkpoints.turn_rows(sid)[: len(first_rows)] == first_rows  # appended, never rewritten
        st = s.state()
        assert [t.text for t in st.patient_turns()] == LINES
        assert_cmas_valid(st)
        # the checkpoint carries the last turns only, not the transcript
        tail = store.graph.get_state(s.config).values["turns"]
        assert len(tail) <= 2
        # a fresh store object (another process) reads the same interview
        with SessionStore(cfg) as other:
            assert other.resume(sid).state() == st
        store.delete(sid)
        assert store.checkpoints.turn_rows(sid) == [] and _checkpoints(store, sid) == 0


def test_sqlite_session_is_one_checkpoint_and_its_transcript(tmp_path):
    _interview_keeps_one_checkpoint(gold_config(tmp_path / "store"), "linear")


@pytest.mark.postgres
def test_postgres_session_is_one_checkpoint_and_its_transcript(tmp_path, postgres_url):
    cfg = gold_config(tmp_path, store="postgres", postgres_url=postgres_url)
    _interview_keeps_one_checkpoint(cfg, f"linear-{uuid.uuid4().hex[:8]}")


def _review_resumes_after_pruning(cfg: dict, sid: str) -> None:
    with SessionStore(cfg) as store:
        s = store.start(sid)
        s.review({"approve": True}, by="dr_a")
        assert s.send(LINES[0]) is None  # waits for review
        assert _checkpoints(store, sid) == 1
        assert [t.speaker for t in s.state().turns] == ["doctor", "patient"]  # the patient turn is on record
        assert len(store.checkpoints.turn_rows(sid)) == 2
        with SessionStore(cfg) as other:  # another process answers the review from the pruned store
            again = other.resume(sid)
            planned = again.pending_review()
            assert planned is not None and planned["turn"] == 2
            sent = again.review({"edit": "How long have you had the cough?"}, by="dr_b")
            assert sent is not None and sent.text == "How long have you had the cough?"
        st = s.state()
        assert [(t.speaker, t.index) for t in st.turns] == [("doctor", 0), ("patient", 1), ("doctor", 2)]
        assert [(e.turn, e.kind, e.by) for e in st.review_edits] == [(0, "approve", "dr_a"), (2, "edit", "dr_b")]
        assert s.send(LINES[1]) is None and s.pending_review()["turn"] == 4
        assert _checkpoints(store, sid) == 1
        store.delete(sid)


def test_sqlite_review_resumes_after_pruning(tmp_path):
    _review_resumes_after_pruning(gold_config(tmp_path / "store", review=True), "reviewed")


@pytest.mark.postgres
def test_postgres_review_resumes_after_pruning(tmp_path, postgres_url):
    cfg = gold_config(tmp_path, store="postgres", postgres_url=postgres_url, review=True)
    _review_resumes_after_pruning(cfg, f"reviewed-{uuid.uuid4().hex[:8]}")


def _write_the_old_way(store: SessionStore, sid: str, lines: list[str], stop_in_last: bool = False) -> None:
    """A session written the way sessions were before the transcript table: every node checkpointed
    (``durability="sync"``), the whole transcript in each checkpoint, nothing in ``medhx_turns``; with
    ``stop_in_last`` the last line's turn stops after its NLU, as a process killed there leaves it."""
    config = {"configurable": {"thread_id": sid}}
    first = InterviewState(session_id=sid, created_at=utc_now())
    store.checkpoints.add_session(sid, None, first.created_at)
    store.graph.invoke(first.model_dump(mode="json"), config, durability="sync")
    for n, line in enumerate(lines, 1):
        said = Command(resume={"text": line, "at": utc_now()})
        if not (stop_in_last and n == len(lines)):
            store.graph.invoke(said, config, durability="sync")
            continue
        for event in store.graph.stream(said, config, stream_mode="updates", durability="sync"):
            if "nlu" in event:
                break
    assert _checkpoints(store, sid) > 5 * len(lines) and store.checkpoints.turn_rows(sid) == []


def test_a_store_from_before_the_transcript_table_reads_and_continues(tmp_path):
    cfg = gold_config(tmp_path / "store")
    sid = "old"
    with SessionStore(cfg) as store:
        _write_the_old_way(store, sid, LINES[:2], stop_in_last=True)
        assert Session(store, sid).waiting_for() == "running"

        s = store.resume(sid)  # finishes the stopped turn, then puts the whole transcript on record
        assert len(store.checkpoints.turn_rows(sid)) == 5 and _checkpoints(store, sid) == 1
        s.send(LINES[2])
        old = s.state()
    with SessionStore(gold_config(tmp_path / "reference")) as ref:
        r = ref.start(sid)
        for line in LINES[:3]:
            r.send(line)
        new = r.state()
    assert transcript(old) == transcript(new)
    assert [t.state for t in old.patient_turns()] == [t.state for t in new.patient_turns()]
    assert old.patient_state == new.patient_state


def test_compact_brings_an_old_store_to_one_checkpoint_per_session(tmp_path):
    """``medhx sessions compact`` on sessions written the old way: one ended (turn budget), one waiting for the
    patient, one stopped inside a turn (left for its resume). States read the same after; the file shrinks."""
    cfg = gold_config(tmp_path / "store", max_turns=4)
    with SessionStore(cfg) as store:
        _write_the_old_way(store, "ended", LINES[:3])
        _write_the_old_way(store, "waiting", LINES[:2])
        _write_the_old_way(store, "stopped", LINES[:2], stop_in_last=True)
        before = {sid: Session(store, sid).state() for sid in ("ended", "waiting", "stopped")}
        stopped_checkpoints = _checkpoints(store, "stopped")
        assert before["ended"].status == "budget_reached"
    path = tmp_path / "store" / "sessions.sqlite"
    size = _file_bytes(path)
    r = run_medhx("sessions", "--config", str(write_config(tmp_path / "c.yaml", cfg)), "compact")
    assert r.returncode == 0, r.stderr
    done = {x["session_id"]: x["compacted"] for x in map(json.loads, r.stdout.splitlines())}
    assert done == {"ended": True, "waiting": True, "stopped": False}
    assert _file_bytes(path) < size / 2, (size, _file_bytes(path))
    with SessionStore(cfg) as store:
        for sid, st in before.items():
            assert Session(store, sid).state() == st
            assert _checkpoints(store, sid) == (1 if done[sid] else stopped_checkpoints)
        assert Session(store, "waiting").waiting_for() == "patient"
        assert store.resume("waiting").send(LINES[2]).speaker == "doctor"  # and it goes on
        assert len(store.checkpoints.turn_rows("waiting")) == 7 and _checkpoints(store, "waiting") == 1


def test_a_session_object_reads_turns_another_wrote_and_a_session_started_again(tmp_path):
    """A session object decodes the transcript once and then only the rows past what it read: turns another
    process appended are read, and a session deleted and started again under its id is read afresh."""
    cfg = gold_config(tmp_path / "store")
    with SessionStore(cfg) as store, SessionStore(cfg) as other:
        held = store.start("again")
        held.send(LINES[0])
        assert len(held.state().turns) == 3
        other.resume("again").send(LINES[1])  # another process takes the next turn
        assert held.state() == Session(store, "again").state()  # a fresh object decodes everything
        assert [t.text for t in held.state().patient_turns()] == LINES[:2]
        store.delete("again")
        store.start("again").send(LINES[2])
        assert [t.text for t in held.state().patient_turns()] == [LINES[2]]
        assert held.state() == Session(store, "again").state()


def test_transcript_rows_give_back_every_turn_and_state():
    """The rows' patient states are patches from the previous patient turn; decoding gives each whole state back, a
    slot added, changed and dropped included, and text the store could not take as UTF-8 (a lone surrogate)."""
    cough = {"value": "coughing", "onset": "two weeks ago"}
    smoking = {"value": "smoking", "status": "positive"}
    states = [{"positive_symptom": [cough]},
              {"positive_symptom": [cough, {"value": "dyspnea"}], "habit": [smoking]},
              {"positive_symptom": [{**cough, "onset": "a month ago"}, {"value": "dyspnea"}]}]
    turns = [Turn(index=0, speaker="doctor", text="Hello", at="t0", actions=[{"action": "nod_prompt_salutations"}])]
    for i, state in enumerate(states):
        turns.append(Turn(index=2 * i + 1, speaker="patient", text=f"line {i} \ud800", at="t", key=str(i), state=state,
                          nlu=[]))
        turns.append(Turn(index=2 * i + 2, speaker="doctor", text="Go on", at="t", latency={"nlu": 0.01}))
    rows = encode(turns[:3], None) + encode(turns[3:], states[0])  # appended in two runs, as sessions do
    assert [r[0] for r in rows] == list(range(len(turns)))
    assert all(r[2].isascii() for r in rows)
    assert decode(rows) == turns


def test_sqlite_prune_keeps_the_latest_checkpoint_with_its_pending_writes(tmp_path):
    """``SqliteSaver.prune`` (medhx's, agent.app.sqlite_saver) on a thread of per-node checkpoints."""
    with SessionStore(gold_config(tmp_path / "store")) as store:
        config = {"configurable": {"thread_id": "t"}}
        store.graph.invoke(InterviewState(session_id="t").model_dump(mode="json"), config, durability="sync")
        before = store.saver.get_tuple(config)
        assert _checkpoints(store, "t") > 1 and before.pending_writes  # the interrupt waiting for the patient
        store.saver.prune(["t"], strategy="keep_latest")
        after = store.saver.get_tuple(config)
        assert _checkpoints(store, "t") == 1 and after.parent_config is None
        assert after.checkpoint == before.checkpoint and after.pending_writes == before.pending_writes
        assert store.graph.get_state(config).interrupts[0].value["kind"] == "patient"
        with pytest.raises(TypeError):
            store.saver.prune("t")
        store.saver.prune(["t"], strategy="delete")
        assert store.saver.get_tuple(config) is None


# --------------------------------------------------------------------------- purge gives the space back


def _old_sessions(cfg: dict, n: int) -> None:
    """``n`` idle interviews of six patient turns, and one recent one."""
    with SessionStore(cfg) as store:
        for i in range(n):
            s = store.start(f"old-{i}-{uuid.uuid4().hex[:6]}")
            for line in LINES:
                s.send(line)
            store.checkpoints.touch(s.id, "2020-01-01T00:00:00.000+00:00")
        store.start(f"new-{uuid.uuid4().hex[:6]}").send(LINES[0])


def _purge(cfg: dict, tmp_path: Path) -> str:
    r = run_medhx("sessions", "--config", str(write_config(tmp_path / "c.yaml", cfg)), "purge", "--older-than", "30")
    assert r.returncode == 0, r.stderr
    return r.stderr


def test_sqlite_purge_shrinks_the_file(tmp_path):
    cfg = gold_config(tmp_path / "store")
    _old_sessions(cfg, 4)
    path = tmp_path / "store" / "sessions.sqlite"
    before = _file_bytes(path)
    err = _purge(cfg, tmp_path)
    assert "deleted 4 session" in err and "bytes" in err
    after = _file_bytes(path)
    assert after < before / 2, (before, after)
    with SessionStore(cfg) as store:
        (info,) = store.list_sessions()
        assert info.session_id.startswith("new-") and info.turns == 3


@pytest.mark.postgres
def test_postgres_purge_shrinks_the_relations(tmp_path, postgres_url):
    """A database of its own, its tables out of autovacuum's reach: ``VACUUM FULL`` keeps every deleted row that an
    open snapshot in the same database may still see, and an autovacuum ``ANALYZE`` of the shared test database
    (PostgreSQL 14+ counts its snapshot) had kept the four sessions' rows through the purge now and then."""
    from psycopg import Connection

    name = f"medhx_purge_{uuid.uuid4().hex[:8]}"
    with Connection.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = postgres_url.rsplit("/", 1)[0] + f"/{name}"
    cfg = gold_config(tmp_path, store="postgres", postgres_url=url)
    tables = ["medhx_sessions", "medhx_turns", "medhx_utterances", "checkpoints", "checkpoint_blobs",
              "checkpoint_writes"]

    def size() -> int:
        with Connection.connect(url, autocommit=True) as conn:
            return int(conn.execute("SELECT sum(pg_total_relation_size(to_regclass(t))) FROM unnest(%s::text[]) t",
                                    (tables,)).fetchone()[0])

    with SessionStore(cfg):  # creates the tables
        pass
    with Connection.connect(url, autocommit=True) as conn:
        for table in tables:
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
    empty = size()
    _old_sessions(cfg, 4)
    before = size()
    err = _purge(cfg, tmp_path)
    assert "deleted 4 session" in err
    after = size()
    assert after < before, (before, after)
    assert after - empty < (before - empty) / 2, (empty, before, after)  # most of what the four took is back
    with SessionStore(cfg) as store:
        (info,) = store.list_sessions()
        assert info.session_id.startswith("new-")
    with Connection.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_purge_can_keep_the_space(tmp_path):
    """``--no-reclaim``: the sessions go, the file keeps its size (its pages are free for the next interviews)."""
    cfg = gold_config(tmp_path / "store")
    _old_sessions(cfg, 2)
    path = tmp_path / "store" / "sessions.sqlite"
    with SessionStore(cfg) as store:  # fold the write-ahead log in, so the file alone is the store
        store.checkpoints.reclaim()
    before = path.stat().st_size
    r = run_medhx("sessions", "--config", str(write_config(tmp_path / "c.yaml", cfg)), "purge", "--older-than", "30",
                  "--no-reclaim")
    assert r.returncode == 0 and "deleted 2 session" in r.stderr and "bytes" not in r.stderr, r.stderr
    assert path.stat().st_size >= before


def test_the_command_line_writes_the_access_log(tmp_path):
    """``medhx sessions show/export/delete/purge`` record who did what, as the console does; the owner reads it."""
    import getpass

    from agent.app.access_log import AccessLog

    cfg = gold_config(tmp_path / "store")
    with SessionStore(cfg) as store:
        kept = store.start("kept-1", owner="dr_a")
        kept.send(LINES[0])
        gone = store.start("gone-1", owner="dr_a")
        gone.send(LINES[0])
        store.checkpoints.touch(gone.id, "2020-01-01T00:00:00.000+00:00")
        dropped = store.start("dropped-1", owner="dr_a")
    conf = str(write_config(tmp_path / "c.yaml", cfg))
    for args in (("show", "kept-1"), ("export", "kept-1", "--format", "note"), ("delete", dropped.id)):
        r = run_medhx("sessions", "--config", conf, *args)
        assert r.returncode == 0, r.stderr
    _purge(cfg, tmp_path)
    with SessionStore(cfg) as store:
        entries = AccessLog(store.checkpoints).entries("dr_a")
    got = [(e.session_id, e.action, e.detail) for e in entries]
    assert got == [("kept-1", "opened", "cli"), ("kept-1", "exported", "note"), ("dropped-1", "deleted", "cli"),
                   ("gone-1", "deleted", "purge")], got
    assert {e.actor for e in entries} == {f"cli:{getpass.getuser()}"}
