"""``medhx`` exit codes, in real subprocesses: 1 on a runtime error with one clear line on stderr, 2 only on a usage
error (argparse), and a traceback only with ``-v``.

The failures are real: a config with a misspelt key, a PostgreSQL URL nothing listens at, a vLLM URL nothing
listens at, and a socket that accepts the connection but never answers (a hung server).
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from graph_fixtures import REPO, run_medhx

DEAD = "127.0.0.1:1"  # nothing listens on port 1


def _one_error_line(stderr: str, command: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"medhx {command}: error: ") and "Traceback" not in stderr
    return lines[0]


@pytest.fixture
def misspelt(tmp_path) -> Path:
    cfg = yaml.safe_load((REPO / "configs" / "default.yaml").read_text())
    cfg["session"]["max_turn"] = cfg["session"].pop("max_turns")
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_a_misspelt_config_key_exits_1_naming_its_path(misspelt):
    r = run_medhx("config", "check", str(misspelt))
    assert r.returncode == 1, r.stderr
    line = _one_error_line(r.stderr, "config")
    assert "session.max_turn" in line and "Extra inputs are not permitted" in line


def test_verbose_adds_the_traceback(misspelt):
    r = run_medhx("-v", "config", "check", str(misspelt))
    assert r.returncode == 1 and "Traceback (most recent call last)" in r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("medhx config: error: ")


@pytest.mark.slow
def test_an_unreachable_database_exits_1_in_one_line():
    r = run_medhx("sessions", "--postgres-url", f"postgresql://nobody@{DEAD}/x", "list")
    assert r.returncode == 1, r.stderr
    line = _one_error_line(r.stderr, "sessions")
    assert "PostgreSQL" in line and DEAD in line


@pytest.mark.parametrize("args", [["nosuchcommand"], ["sessions", "list", "--no-such-flag"], ["config"]])
def test_usage_errors_exit_2(args):
    r = run_medhx(*args)
    assert r.returncode == 2 and "usage: medhx" in r.stderr and "Traceback" not in r.stderr


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A TCP server that accepts connections and never answers: a hung model server."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


@pytest.mark.slow
@pytest.mark.parametrize("where", ["down", "silent"])
def test_a_model_server_down_or_hung_exits_1(tmp_path, silent_server, where):
    address = DEAD if where == "down" else silent_server
    cfg = {"backends": {"local": {"kind": "vllm-server", "url": f"http://{address}", "tokenizer": "smollm2",
                                  "deadline_s": 2}},
           "nlu": {"kind": "model", "backend": "local"}, "policy": {"kind": "questionnaire"},
           "nlg": {"kind": "template"}}
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(cfg))
    r = run_medhx("predict", "--config", str(path), "--task", "nlu", "--split", "valid", "--limit", "1",
                  "--out", str(tmp_path / "out.jsonl"), "--no-progress", timeout=120)
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]  # (the client's retry warnings come first, one line each)
    assert last.startswith("medhx predict: error: ") and address in last and "Traceback" not in r.stderr


def test_a_command_imports_its_own_module_and_help_lists_them_all():
    """``medhx sessions ...`` builds the parser of ``sessions`` only: the clinical NLU (spaCy, torch) that other
    commands import at their top is not loaded in its process; ``medhx --help`` still names every command."""
    import subprocess
    import sys

    code = ("import sys\nfrom agent.cli import build_parser, COMMAND_MODULES\n"
            "build_parser(['sessions', 'list']).parse_args(['sessions', '--dir', 'x', 'list'])\n"
            "print(sorted(m for m in ('spacy', 'torch', 'policies.nlu.clinical') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]", r.stdout
    from agent.cli import COMMAND_MODULES

    shown = run_medhx("--help")
    assert shown.returncode == 0 and all(c in shown.stdout for c in COMMAND_MODULES), shown.stdout
