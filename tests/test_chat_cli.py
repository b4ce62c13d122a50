"""``medhx chat --cli`` as a user scripts it: a real subprocess, patient lines on stdin."""

from __future__ import annotations

import subprocess
import time

import httpx
import pytest
from gradio_client import Client
from graph_fixtures import REPO, gold_config, medhx_cmd, medhx_env, patient_lines, run_medhx, write_config
from vllm_fixtures import free_port

from agent.app.sessions import SessionStore
from policies.agent_config import load_config

LINES = patient_lines("115", 3)


def _stdin(*lines: str) -> str:
    return "".join(f"{x}\n" for x in lines)


def test_chat_cli_scripted_then_resumed(tmp_path):
    cfg = gold_config(tmp_path / "store")
    path = write_config(tmp_path / "agent.yaml", cfg)

    r = run_medhx("chat", "--cli", "--config", str(path), stdin=_stdin(LINES[0], "", "/quit", LINES[1]))
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0].startswith("session ") and "(new; sqlite" in out[0]
    sid = out[0].split()[1]
    doctor = [x for x in out if x.startswith("doctor: ")]
    assert len(doctor) == 2 and "assistant" in doctor[0]  # greeting + one answer; the blank line is skipped
    assert out[-1].startswith(f"(saved session {sid}")

    with SessionStore(cfg) as store:
        st = store.resume(sid).state()
    assert [t.text for t in st.patient_turns()] == [LINES[0]]  # nothing after /quit was read
    assert [f"doctor: {t.text}" for t in st.doctor_turns()] == doctor

    r = run_medhx("chat", "--cli", "--config", str(path), "--session", sid, stdin=_stdin(LINES[1]))  # EOF ends too
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0].startswith(f"session {sid} (resumed")
    assert out[1:4] == [doctor[0], f"patient: {LINES[0]}", doctor[1]]  # the transcript so far
    with SessionStore(cfg) as store:
        st = store.resume(sid).state()
    assert [t.text for t in st.patient_turns()] == LINES[:2]
    assert out[4] == f"doctor: {st.turns[-1].text}"


def test_chat_cli_clinician_review(tmp_path):
    cfg = gold_config(tmp_path / "store", review=True)
    path = write_config(tmp_path / "agent.yaml", cfg)
    script = _stdin("/approve", LINES[0], "/edit How long have you had the cough?", "/quit")
    r = run_medhx("chat", "--cli", "--config", str(path), "--session", "rv", "--clinician", "dr_x", stdin=script)
    assert r.returncode == 0, r.stderr
    doctor = [x for x in r.stdout.splitlines() if x.startswith("doctor: ")]
    assert len(doctor) == 2 and doctor[1] == "doctor: How long have you had the cough?"
    assert "[review] planned text:" in r.stderr
    with SessionStore(cfg) as store:
        edits = store.resume("rv").state().review_edits
    assert [(e.turn, e.kind, e.by) for e in edits] == [(0, "approve", "dr_x"), (2, "edit", "dr_x")]


@pytest.mark.slow
def test_chat_cli_with_a_model_nlu(tmp_path, tiny_model_dir):
    """The shipped no-model-policy config (configs/agent_questionnaire.yaml) with its hf backend
    pointed at the tiny model: the LLM NLU runs in the chat process."""

    cfg = load_config(REPO / "configs" / "agent_questionnaire.yaml")
    cfg["base_model"] = str(tiny_model_dir)
    cfg["nlu"]["max_tokens"] = 16
    cfg["session"]["dir"] = str(tmp_path / "store")
    path = write_config(tmp_path / "agent.yaml", cfg)
    r = run_medhx("chat", "--cli", "--config", str(path), stdin=_stdin("I have a cough", "/quit"))
    assert r.returncode == 0, r.stderr
    assert len([x for x in r.stdout.splitlines() if x.startswith("doctor: ")]) == 2


def test_chat_without_cli_flag_serves_the_console(tmp_path):
    """``medhx chat`` without ``--cli`` is the clinician console (tests/test_ui_*.py test it in depth): it serves
    on loopback, starts on the agent config named by ``--config``, and keeps its sessions in that config's store."""
    cfg = gold_config(tmp_path / "store")
    port = free_port(18500, 18600)
    cmd = medhx_cmd("chat", "--config", str(write_config(tmp_path / "a.yaml", cfg)), "--port", str(port))
    env = {k: v for k, v in medhx_env().items() if k not in ("MEDHX_USER", "MEDHX_PASSWORD")}
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            try:
                if httpx.get(f"{url}/config", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the console did not start"
            time.sleep(0.3)
        client = Client(url, verbose=False)  # loopback, no credentials configured: no login
        assert client.predict(api_name="/modules")["preset"] == "a"
        sid = client.predict(api_name="/start_session")["session_id"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    with SessionStore(cfg) as store:
        assert store.resume(sid).state().owner == "local"


@pytest.mark.parametrize("missing", ["configs/nope.yaml"])
def test_chat_with_missing_config_is_a_clear_error(missing):
    r = run_medhx("chat", "--cli", "--config", missing)
    assert r.returncode == 1 and "nope.yaml" in r.stderr


def test_chat_cli_says_when_a_module_fell_back(tmp_path, capsys):
    """A dead NLG server at patient turn 1: the template answers, and the terminal says so (on stderr, so stdout stays
    the transcript)."""
    import io

    from agent.app.chat import run_cli
    from agent.app.graph_nodes import FALLBACK_NOTICE

    cfg = gold_config(tmp_path)
    cfg["nlg"] = {"kind": "fault_modules:Fail", "role": "nlg", "inner": {"kind": "template"}, "turn": 1}
    out = io.StringIO()
    with SessionStore(cfg) as store:
        assert run_cli(store, "fb-1", io.StringIO(LINES[0] + "\n"), out) == 0
    err = capsys.readouterr().err
    assert FALLBACK_NOTICE in err and "nlg: BackendError" in err
    assert out.getvalue().count("doctor: ") == 2  # greeting + the template's answer
