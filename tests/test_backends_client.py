"""The vllm-server client and the serve launcher without a model: errors, retries, request and command building."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from vllm_fixtures import free_port

from agent.core import cmas
from models.backends import BackendError, GenerationRequest, make_backend
from models.backends.vllm_server import VLLMServerBackend
from models.serve import check_serve_config, default_max_loras, engine_flags, server_command, server_environment


def test_unreachable_server_is_a_clear_backend_error():
    port = free_port()
    with make_backend({"kind": "vllm-server", "url": f"http://127.0.0.1:{port}", "model": "m",
                       "retries": 2, "backoff_s": 0.01}) as backend, pytest.raises(BackendError) as err:
        backend.generate([GenerationRequest("hello")])
    message = str(err.value)
    assert f"http://127.0.0.1:{port}" in message
    assert "unreachable or failing after 3 attempts" in message
    assert "ConnectError" in message


class _Flaky503(BaseHTTPRequestHandler):
    """Answers 503 to the first two completions, then one OpenAI-style completion."""

    calls = 0

    def do_POST(self):  # noqa: N802 (http.server API)
        type(self).calls += 1
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if type(self).calls <= 2:
            self.send_response(503)
            self.end_headers()
            self.wfile.write(b"warming up")
            return
        payload = {"choices": [{"text": "ok:" + body["model"], "finish_reason": "stop", "token_ids": [7, 8]}],
                   "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_fake_server_503_twice_then_ok_is_retried_with_backoff():
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _Flaky503)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        with VLLMServerBackend(url=url, model="base", retries=3, backoff_s=0.01) as backend:
            [result] = backend.generate([GenerationRequest("hi", adapter="nlu")])
    finally:
        server.shutdown()
    assert _Flaky503.calls == 3
    assert result.text == "ok:nlu"
    assert (result.prompt_tokens, result.completion_tokens, result.token_ids) == (3, 2, [7, 8])
    assert result.finish_reason == "stop" and result.latency_s > 0


def test_request_body_carries_adapter_schema_and_vllm_extensions():
    schema = cmas.nlu_json_schema()
    with VLLMServerBackend(url="http://127.0.0.1:1/v1", model="base") as backend:
        assert backend.url == "http://127.0.0.1:1"
        body = backend.body(GenerationRequest("p", adapter="nlu", json_schema=schema, max_tokens=5, stop=["\n"]))
        assert body == {"model": "nlu", "prompt": "p", "max_tokens": 5, "temperature": 0.0, "stop": ["\n"],
                        "return_token_ids": True, "add_special_tokens": False,
                        "structured_outputs": {"json": schema}}
        assert backend.body(GenerationRequest("p"))["model"] == "base"
    with VLLMServerBackend(url="http://x", model="b", structured_output="response_format",
                           return_token_ids=None, add_special_tokens=None) as backend:
        body = backend.body(GenerationRequest("p", json_schema=schema))
        assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "output", "schema": schema}}
        assert "return_token_ids" not in body and "add_special_tokens" not in body and "structured_outputs" not in body


def test_bad_configs_are_rejected_clearly():
    with pytest.raises(ValueError, match="unknown config keys.*'urll'"):
        VLLMServerBackend(urll="http://x")
    with pytest.raises(ValueError, match="backend kind must be one of"):
        make_backend({"kind": "openai"})
    with pytest.raises(ValueError, match="unknown serve config keys"):
        check_serve_config({"prot": 1})


def test_serve_command_line_and_environment(tmp_path):
    config = {"model": str(tmp_path), "port": 18123, "adapters": {"nlu": "/a/nlu", "pol": "/a/pol", "nlg": None},
              "device": "cpu", "max_lora_rank": 16, "dtype": "bfloat16",
              "structured_outputs": {"backend": "guidance", "disable_any_whitespace": True},
              "engine_args": {"tensor_parallel_size": 2, "enable_prefix_caching": True, "seed": None},
              "cpu_kvcache_space_gib": 1, "cpu_omp_threads_bind": "0-1"}
    serve_config = check_serve_config(config)
    cmd = server_command(serve_config)
    assert cmd[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]
    joined = " ".join(cmd)
    assert f"--model {tmp_path} --host 127.0.0.1 --port 18123 --dtype bfloat16" in joined
    # nlg has no path: not served. One spare LoRA slot on CPU (see default_max_loras).
    assert "--enable-lora --max-lora-rank 16 --max-loras 3 --lora-modules nlu=/a/nlu pol=/a/pol" in joined
    assert "--enforce-eager" in cmd
    assert (
        cmd[cmd.index("--structured-outputs-config") + 1] == '{"backend": "guidance", "disable_any_whitespace": true}'
    )
    # Engine arguments pass through; request logging (prompts are patient text) is pinned off after them.
    assert joined.endswith("--tensor-parallel-size 2 --enable-prefix-caching --no-enable-log-requests")
    env = server_environment(serve_config, "k3y")
    assert env["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"
    assert (env["VLLM_CPU_KVCACHE_SPACE"], env["VLLM_CPU_OMP_THREADS_BIND"]) == ("1", "0-1")
    # The API key travels in the environment, not on the command line every local user can read.
    assert env["VLLM_API_KEY"] == "k3y" and "k3y" not in joined and "--api-key" not in cmd
    assert serve_config.url == "http://127.0.0.1:18123"


def test_gpu_command_has_no_spare_slot_and_no_forced_eager(tmp_path):
    cmd = server_command(check_serve_config({"model": str(tmp_path), "device": "gpu", "adapters": {"nlu": "/x"}}))
    assert cmd[cmd.index("--max-loras") + 1] == "1"
    assert "--enforce-eager" not in cmd
    assert default_max_loras(3, "cpu") == 4 and default_max_loras(0, "gpu") == 1


def test_engine_flags_pass_vllm_arguments_through():
    assert engine_flags({"pipeline_parallel_size": 2, "data_parallel_size": 1, "disable_log_stats": True,
                         "enable_chunked_prefill": False, "compilation_config": {"mode": 0}}) == [
        "--pipeline-parallel-size", "2", "--data-parallel-size", "1", "--disable-log-stats",
        "--compilation-config", '{"mode": 0}']
