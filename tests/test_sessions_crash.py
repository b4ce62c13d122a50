"""Kill -9 mid-turn, resume in a new process: no patient utterance lost, no doctor turn duplicated.

A real ``medhx chat --cli`` process runs the interview; a test module plugged in by dotted path
(``tests/fault_modules.py``: it wraps the real module of one role) parks it inside that node at one patient turn
and the test SIGKILLs it there. A second ``medhx chat --cli --session ID`` process gets the utterances the
first one had not read yet. The result must equal an uninterrupted run of the same script.
The agent is deterministic (gold NLU, questionnaire policy, template NLG), so "equal" is exact.

Sessions checkpoint at turn boundaries only, so a turn killed mid-way left no checkpoint of its own: what saves its
utterance is that it was stored before the graph ran (``medhx_utterances``), which each kill test checks.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from graph_fixtures import (
    assert_cmas_valid,
    chat_killed_in_node,
    gold_config,
    keyed_client_cmd,
    killed_in_node,
    medhx_env,
    patient_lines,
    run_medhx,
    stalled_config,
    transcript,
    write_config,
)

from agent.app.sessions import SessionStore

LINES = patient_lines("115", 5)
KILL_TURN = 3  # the third patient utterance is in flight when the process dies


def _reference(tmp_path, session: dict, sid: str) -> list[tuple[str, str]]:
    with SessionStore(gold_config(tmp_path / "reference", **session)) as store:
        s = store.start(sid)
        for line in LINES:
            s.send(line)
        return transcript(s.state())


def _kill_and_resume(tmp_path, node: str, session: dict, sid: str) -> None:
    cfg = gold_config(tmp_path / "store", **session)
    path = write_config(tmp_path / "agent.yaml", cfg)

    chat_killed_in_node(path, sid, LINES, node, KILL_TURN)
    with SessionStore(cfg) as store:
        assert store.exists(sid)
        # killed inside a node: the turn shows as running, and its utterance was stored before the graph ran
        assert store.list_sessions()[0].waiting_for == "running"
        stored = store.checkpoints.received(sid, 2 * KILL_TURN - 1)  # turn 2k-1 is the k-th patient turn
        assert stored is not None and json.loads(stored)["text"] == LINES[KILL_TURN - 1]

    # the new process gets only what the dead one had not read: lines after the one in flight
    rest = LINES[KILL_TURN:]
    r = run_medhx("chat", "--cli", "--config", str(path), "--session", sid,
                  stdin="".join(f"{x}\n" for x in rest) + "/quit\n", env=medhx_env())
    assert r.returncode == 0, r.stderr
    assert f"session {sid} (resumed" in r.stdout

    with SessionStore(cfg) as store:
        st = store.resume(sid).state()
    assert_cmas_valid(st)
    got = transcript(st)
    assert [t for s, t in got if s == "patient"] == LINES  # each utterance exactly once, in order
    assert got == _reference(tmp_path, session, f"{sid}-reference")  # and no doctor turn lost or repeated


@pytest.mark.slow
@pytest.mark.parametrize("node", ["dst", "policy", "nlg"])
def test_sqlite_kill_mid_turn_then_resume(tmp_path, node):
    """Killed inside the tracker (dst: the NLU has run), the policy, or the NLG of the third patient turn: the
    resumed process runs that turn again from the stored utterance."""
    _kill_and_resume(tmp_path, node, {"store": "sqlite"}, f"crash-{node}")


@pytest.mark.slow
def test_sqlite_kill_during_the_greeting_then_open_again(tmp_path):
    """Killed before the session's first checkpoint (inside the greeting's policy): the session is indexed but holds
    nothing, and opening it again starts it under the same id."""
    cfg = gold_config(tmp_path / "store")
    path = write_config(tmp_path / "agent.yaml", cfg)
    sid = "crash-greeting"
    chat_killed_in_node(path, sid, LINES, "policy", 0)
    with SessionStore(cfg) as store:
        assert not store.exists(sid)
    r = run_medhx("chat", "--cli", "--config", str(path), "--session", sid,
                  stdin="".join(f"{x}\n" for x in LINES) + "/quit\n", env=medhx_env())
    assert r.returncode == 0, r.stderr
    with SessionStore(cfg) as store:
        st = store.resume(sid).state()
        assert [i.session_id for i in store.list_sessions()] == [sid]
    assert transcript(st) == _reference(tmp_path, {}, f"{sid}-reference")


@pytest.mark.slow
def test_sqlite_kill_then_client_retries_every_utterance_by_key(tmp_path):
    """The client does not know how far the dead process got, so it sends the whole script again,
    each utterance with the same key as before: answered keys are not sent twice."""
    cfg = gold_config(tmp_path / "store")
    path = write_config(tmp_path / "agent.yaml", cfg)
    script = "".join(f"{x}\n" for x in LINES)
    stalled = write_config(tmp_path / "agent-stall-nlu.yaml", stalled_config(cfg, "nlu", KILL_TURN))
    killed_in_node(keyed_client_cmd(stalled, "keyed"), script, "nlu", KILL_TURN)
    r = subprocess.run(keyed_client_cmd(path, "keyed"), input=script, capture_output=True, text=True, env=medhx_env(),
                       timeout=300)
    assert r.returncode == 0, r.stderr
    answers = [json.loads(x) for x in r.stdout.splitlines()]
    # every key answered by the doctor turn right after its patient turn: 2, 4, 6, ...
    assert answers == [{"key": str(i), "doctor_turn": 2 * (i + 1)} for i in range(len(LINES))]
    with SessionStore(cfg) as store:
        st = store.resume("keyed").state()
    assert [t.key for t in st.patient_turns()] == [str(i) for i in range(len(LINES))]
    assert transcript(st) == _reference(tmp_path, {}, "keyed-reference")


@pytest.mark.slow
@pytest.mark.postgres
def test_postgres_kill_mid_turn_then_resume(tmp_path, postgres_url):
    url = postgres_url
    sid = f"crash-pg-{os.getpid()}-{tmp_path.name}"
    session = {"store": "postgres", "postgres_url": url}
    try:
        _kill_and_resume(tmp_path, "policy", session, sid)
    finally:
        with SessionStore(gold_config(tmp_path, **session)) as store:
            for s in (sid, f"{sid}-reference"):
                if store.exists(s):
                    store.delete(s)
