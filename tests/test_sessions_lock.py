"""One turn at a time per session, across real processes, on SQLite and PostgreSQL; where sessions are kept.

Process A (``medhx chat --cli``) parks inside its NLU (``fault_modules.Stall``, a few seconds) holding the session;
process B drives the same session meanwhile and is refused with "session ... is busy" (no turn added); once A's
turn is done, process C sends B's line and the session holds exactly the turns that were accepted, none twice.
"""

from __future__ import annotations

import os
import select
import stat
import subprocess
import time
from pathlib import Path

import pytest
from graph_fixtures import REPO, gold_config, medhx_cmd, medhx_env, patient_lines, stalled_config, write_config

from agent.app.checkpoints import SessionBusy, StoreSettings, default_data_dir
from agent.app.sessions import SessionStore

LINES = patient_lines("115", 2)


def _env() -> dict:
    return medhx_env(PYTHONPATH=str(REPO / "tests") + os.pathsep + medhx_env()["PYTHONPATH"])


def _two_processes_one_session(cfg: dict, tmp_path: Path) -> None:
    from fault_modules import MARKER

    sid = "shared-1"
    with SessionStore(cfg) as store:  # greeted: the doctor's first turn exists
        store.start(sid, owner="dr-a")
    stalled = stalled_config(cfg, "nlu", 1)
    stalled["nlu"]["seconds"] = 6
    a_cfg = write_config(tmp_path / "a.yaml", stalled)
    plain = write_config(tmp_path / "plain.yaml", cfg)
    a = subprocess.Popen(medhx_cmd("chat", "--cli", "--config", str(a_cfg), "--session", sid), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO, env=_env())
    assert a.stdin is not None and a.stderr is not None
    a.stdin.write(LINES[0] + "\n/quit\n")
    a.stdin.flush()
    marker, err, deadline = MARKER.format(role="nlu", turn=1), "", time.monotonic() + 120
    while marker not in err:  # A is inside its turn now, holding the session
        assert a.poll() is None and time.monotonic() < deadline, f"A never reached its NLU:\n{err}"
        if select.select([a.stderr], [], [], 1.0)[0]:
            err += a.stderr.readline()
    b = subprocess.run(medhx_cmd("chat", "--cli", "--config", str(plain), "--session", sid), input=LINES[1] + "\n",
                       capture_output=True, text=True, cwd=REPO, env=_env(), timeout=120)
    assert b.returncode != 0 and "is busy" in b.stderr, (b.returncode, b.stderr)
    assert "Traceback" not in b.stderr
    out, rest = a.communicate(timeout=120)
    assert a.returncode == 0, err + rest
    c = subprocess.run(medhx_cmd("chat", "--cli", "--config", str(plain), "--session", sid), input=LINES[1] + "\n",
                       capture_output=True, text=True, cwd=REPO, env=_env(), timeout=120)
    assert c.returncode == 0, c.stderr
    with SessionStore(cfg) as store:
        st = store.resume(sid).state()
        listed = {i.session_id: i for i in store.list_sessions()}
    assert [t.text for t in st.patient_turns()] == LINES[:2]  # A's line once, B's line once (sent by C)
    assert [t.speaker for t in st.turns] == ["doctor", "patient", "doctor", "patient", "doctor"]
    assert listed[sid].owner == "dr-a" and listed[sid].turns == 5


def test_two_processes_on_one_sqlite_session(tmp_path):
    _two_processes_one_session(gold_config(tmp_path / "store"), tmp_path)


@pytest.mark.postgres
def test_two_processes_on_one_postgres_session(tmp_path, postgres_url):
    cfg = gold_config(tmp_path / "unused", store="postgres", postgres_url=postgres_url)
    with SessionStore(cfg) as store:  # a clean slate on a shared test database
        for info in store.list_sessions():
            store.delete(info.session_id)
        assert store.checkpoints.pool is not None  # connections come from psycopg_pool
    _two_processes_one_session(cfg, tmp_path)


def test_a_second_holder_in_the_same_process_is_refused_too(tmp_path):
    with SessionStore(gold_config(tmp_path)) as store:
        session = store.start("s1")
        with store.checkpoints.lock("s1"), pytest.raises(SessionBusy, match="s1 is busy"):
            session.send(LINES[0])
        assert len(session.state().turns) == 1  # nothing was added
        assert session.send(LINES[0]) is not None  # free again


def test_the_sqlite_file_is_private_and_lives_in_a_per_user_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDHX_DATA", str(tmp_path / "data"))
    assert default_data_dir() == tmp_path / "data"
    settings = StoreSettings.from_config({"store": "sqlite", "dir": None})
    assert settings.path == tmp_path / "data" / "sessions.sqlite"
    cfg = gold_config(tmp_path)
    cfg["session"]["dir"] = None
    with SessionStore(cfg) as store:
        store.start()
    mode = stat.S_IMODE(os.stat(settings.path).st_mode)
    assert mode == 0o600, oct(mode)
    assert stat.S_IMODE(os.stat(settings.path.parent).st_mode) == 0o700
    monkeypatch.delenv("MEDHX_DATA")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "xdg" / "medhx"


def test_purge_deletes_only_sessions_idle_longer_than_asked(tmp_path):
    cfg = gold_config(tmp_path)
    with SessionStore(cfg) as store:
        store.start("old")
        store.start("new")
        store.checkpoints.touch("old", "2020-01-01T00:00:00.000+00:00")
    config = write_config(tmp_path / "c.yaml", cfg)
    dry = subprocess.run(medhx_cmd("sessions", "--config", str(config), "purge", "--older-than", "30", "--dry-run"),
                         capture_output=True, text=True, cwd=REPO, env=_env(), timeout=120)
    assert dry.returncode == 0 and '"old"' in dry.stdout and '"new"' not in dry.stdout, dry.stderr
    run = subprocess.run(medhx_cmd("sessions", "--config", str(config), "purge", "--older-than", "30"),
                         capture_output=True, text=True, cwd=REPO, env=_env(), timeout=120)
    assert run.returncode == 0 and "deleted 1 session" in run.stderr, run.stderr
    with SessionStore(cfg) as store:
        assert [i.session_id for i in store.list_sessions()] == ["new"]
        assert not store.exists("old")
