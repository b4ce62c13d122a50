"""Helpers shared by the graph / sessions / chat tests (configs, dataset scripts, subprocess runs)."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from agent.app.graph_state import InterviewState
from agent.app.sessions import Session, SessionStore
from agent.core import cmas
from agent.core.data import load_dialogues
from policies.agent_config import load_config

REPO = Path(__file__).resolve().parent.parent


@contextmanager
def default_store(session_dir: Path | str) -> Iterator[SessionStore]:
    """A session store on the embedded default agent (configs/default.yaml), its sessions under ``session_dir``."""
    cfg = load_config(REPO / "configs" / "default.yaml")
    cfg["session"]["dir"] = str(session_dir)
    with SessionStore(cfg) as store:
        yield store


def talk(store: SessionStore, *lines: str) -> Session:
    """A fresh interview on ``store`` with the patient's ``lines`` sent in order (whatever the agent asks between)."""
    session = store.start()
    for line in lines:
        session.send(line)
    return session


def gold_config(session_dir: Path | str | None = None, **session: object) -> dict:
    """No-model agent: gold NLU (the dataset's annotations), questionnaire policy, template NLG."""
    cfg = {
        "nlu": {"kind": "gold", "data": str(REPO / "data" / "meditod")},
        "policy": {"kind": "questionnaire"},
        "nlg": {"kind": "template"},
        "session": {"store": "sqlite", "dir": str(session_dir or ".medhx"), "max_turns": 60, "review": False},
        "safety": {"red_flags": str(REPO / "configs" / "red_flags.yaml")},
    }
    cfg["session"].update(session)
    return cfg


def write_config(path: Path, cfg: dict) -> Path:
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def patient_lines(dialog_id: str, n: int | None = None) -> list[str]:
    """The patient utterances of a shared MediTOD dialogue, in order."""
    d = {x.dialog_id: x for x in load_dialogues(REPO / "data" / "meditod", "all")}[dialog_id]
    lines = [u.text for u in d.utterances if u.speaker == "patient"]
    return lines[:n] if n else lines


def assert_cmas_valid(st: InterviewState) -> None:
    """Every stored NLU frame, state and action parses strictly; turns alternate doctor/patient."""
    for i, t in enumerate(st.turns):
        assert t.index == i
        assert t.speaker == ("doctor" if i % 2 == 0 else "patient"), f"turn {i} is {t.speaker}"
        if t.speaker == "patient":
            assert cmas.parse_nlu(t.nlu) == t.nlu
            assert cmas.parse_state(t.state) == t.state
        else:
            assert cmas.parse_actions(t.actions) == t.actions
            assert t.text.strip()
    assert cmas.parse_state(st.patient_state) == st.patient_state


def transcript(st: InterviewState) -> list[tuple[str, str]]:
    return [(t.speaker, t.text) for t in st.turns]


# --------------------------------------------------------------------------- subprocesses


def medhx_env(**extra: str) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def medhx_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "agent.cli", *args]


def run_medhx(
    *args: str, stdin: str = "", env: dict | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    return subprocess.run(medhx_cmd(*args), input=stdin, capture_output=True, text=True, cwd=REPO,
                          env=env or medhx_env(), timeout=timeout)


SECTION = {"nlu": "nlu", "dst": "dst", "policy": "policy", "nlg": "nlg"}


def stalled_config(cfg: dict, role: str, patient_turn: int) -> dict:
    """``cfg`` with its ``role`` module wrapped in :class:`fault_modules.Stall` (parks the process inside that
    module at ``patient_turn``)."""
    inner = cfg.get(role) or {"kind": "rule", "list_merge": "replace"}
    wrapped = {"kind": "fault_modules:Stall", "role": role, "inner": inner, "turn": patient_turn}
    if role == "nlu":
        wrapped["grounding"] = inner.get("grounding", inner["kind"] != "gold")
    return {**cfg, role: wrapped}


def killed_in_node(cmd: list[str], stdin: str, node: str, patient_turn: int, timeout: float = 300) -> str:
    """Run ``cmd`` (whose config wraps ``node``'s module in a Stall: :func:`stalled_config`) with ``stdin`` and
    SIGKILL it while it sleeps inside that module at ``patient_turn``. Returns what it printed before dying."""
    from fault_modules import MARKER

    env = medhx_env(PYTHONPATH=str(REPO / "tests") + os.pathsep + medhx_env()["PYTHONPATH"])
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=REPO, env=env)
    assert proc.stdin is not None and proc.stderr is not None
    proc.stdin.write(stdin)
    proc.stdin.flush()
    marker = MARKER.format(role=node, turn=patient_turn)
    deadline = time.monotonic() + timeout
    err = ""
    try:
        while marker not in err:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"process never reached node {node} (rc={proc.poll()}):\n{err}")
            ready, _, _ = select.select([proc.stderr], [], [], 1.0)
            if ready:
                err += proc.stderr.readline()
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return proc.stdout.read() if proc.stdout else ""


def chat_killed_in_node(config: Path, session_id: str, lines: list[str], node: str, patient_turn: int) -> str:
    """``medhx chat --cli`` fed ``lines``, killed inside ``node`` at ``patient_turn`` (``config`` is written with
    that module stalled; the caller resumes with the unstalled config)."""
    stalled = config.with_name(config.stem + f"-stall-{node}.yaml")
    write_config(stalled, stalled_config(yaml.safe_load(config.read_text()), node, patient_turn))
    cmd = medhx_cmd("chat", "--cli", "--config", str(stalled), "--session", session_id)
    return killed_in_node(cmd, "".join(f"{line}\n" for line in lines), node, patient_turn)


def keyed_client_cmd(config: Path, session_id: str) -> list[str]:
    """A client of the Session API that sends each stdin line with its line number as idempotency key
    (``send(line, key=str(n))``) and prints one JSON line per doctor answer."""
    return [sys.executable, str(Path(__file__)), "keyed-client", str(config), session_id]


def _keyed_client(config: str, session_id: str) -> int:
    import json

    from agent.app.sessions import SessionStore
    from policies.agent_config import load_config

    with SessionStore(load_config(config)) as store:
        session = store.open(session_id)
        for n, line in enumerate(sys.stdin):
            turn = session.send(line.rstrip("\n"), key=str(n))
            print(json.dumps({"key": str(n), "doctor_turn": turn.index if turn else None}), flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "keyed-client":
        sys.exit(_keyed_client(sys.argv[2], sys.argv[3]))
    sys.exit(f"unknown command {sys.argv[1:]}")
