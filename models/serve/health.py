"""Is a server there, ready, and serving what the config asks: ``/health`` and ``/v1/models``."""

from __future__ import annotations

import os
import time
from pathlib import Path

import httpx

from models.backends.base import BackendError
from models.serve.config import ServeConfig
from models.serve.endpoint import API_KEY_ENV, api_key_for
from models.serve.process import pid_alive, returncode, tail


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def responds(url: str) -> bool:
    """Something answers HTTP at ``url`` (``/health`` is not behind the API key)."""
    try:
        httpx.get(f"{url}/health", timeout=2.0)
        return True
    except httpx.HTTPError:
        return False


def wait_ready(url: str, timeout_s: float, pid: int | None = None, log_file: str | Path | None = None,
               api_key: str | None = None) -> list[str]:
    """Block until ``/health`` answers 200 and ``/v1/models`` lists the models; returns the model ids.

    Raises RuntimeError when the server process ``pid`` exits first, TimeoutError after ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        if pid is not None and not pid_alive(pid):
            raise RuntimeError(f"vLLM server exited with code {returncode(pid)} during startup (log: {log_file})\n"
                               f"{tail(log_file)}")
        try:
            if httpx.get(f"{url}/health", timeout=5.0).status_code == 200:
                r = httpx.get(f"{url}/v1/models", timeout=5.0, headers=auth_headers(api_key))
                if r.status_code == 200:
                    return [m["id"] for m in r.json()["data"]]
        except httpx.HTTPError:
            pass
        if time.monotonic() >= deadline:
            raise TimeoutError(f"vLLM server at {url} not ready after {timeout_s:.0f}s (log: {log_file})")
        time.sleep(min(1.0, max(0.05, deadline - time.monotonic())))


class ServerMismatch(BackendError):
    """A server answers at the endpoint but does not serve the configured model and adapters."""


def check_serves(url: str, config: ServeConfig, api_key: str | None) -> None:
    """Raise :class:`ServerMismatch` unless ``/v1/models`` lists the base model and every adapter with its path."""
    models = list_models(url, api_key)
    bases = [m["id"] for m in models if m.get("parent") is None]
    served = {m["id"]: str(m.get("root")) for m in models if m.get("parent") is not None}
    want_base = config.served_name()
    wanted = config.adapter_paths
    problems = []
    if want_base not in bases:
        problems.append(f"base model {want_base!r} is not served")
    for name, path in wanted.items():
        if name not in served:
            problems.append(f"adapter {name!r} is not served")
        elif os.path.normpath(served[name]) != os.path.normpath(path):
            problems.append(f"adapter {name!r} comes from {served[name]}, not {path}")
    if problems:
        have = ", ".join(f"{n}={r}" for n, r in served.items()) or "none"
        want = ", ".join(f"{n}={p}" for n, p in wanted.items()) or "none"
        port = httpx.URL(url).port
        raise ServerMismatch(
            f"the vLLM server at {url} serves base model {', '.join(bases) or '(none)'} with adapters {have}; "
            f"wanted base model {want_base} with adapters {want} ({'; '.join(problems)}). Stop it "
            f"(`medhx serve stop --port {port}`) or give this backend another port")


def list_models(url: str, api_key: str | None = None) -> list[dict]:
    """``/v1/models`` (key: ``api_key``, else ``$MEDHX_VLLM_API_KEY``, else the endpoint's state file)."""
    key = api_key or api_key_for(url)
    try:
        r = httpx.get(f"{url}/v1/models", timeout=10.0, headers=auth_headers(key))
    except httpx.HTTPError as exc:
        raise BackendError(f"vLLM server at {url} unreachable: {exc}") from exc
    if r.status_code == 401:
        raise BackendError(
            f"the server at {url} requires an API key and {'rejected ours' if key else 'medhx has none'} "
            f"(set ${API_KEY_ENV}, or let medhx launch it)"
        )
    try:
        r.raise_for_status()
    except httpx.HTTPError as exc:
        raise BackendError(f"vLLM server at {url}: /v1/models failed: {exc}") from exc
    return r.json()["data"]
