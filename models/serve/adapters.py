"""Runtime adapter swaps on a running server: vLLM's ``/v1/load_lora_adapter`` and ``/v1/unload_lora_adapter``
(enabled by ``VLLM_ALLOW_RUNTIME_LORA_UPDATING``, which the launcher sets)."""

from __future__ import annotations

from pathlib import Path

import httpx

from models.backends.base import BackendError
from models.serve.endpoint import api_key_for
from models.serve.health import auth_headers


def _post(url: str, path: str, body: dict) -> str:
    try:
        r = httpx.post(f"{url}{path}", json=body, timeout=120.0, headers=auth_headers(api_key_for(url)))
    except httpx.HTTPError as exc:
        raise BackendError(f"vLLM server at {url} unreachable: {exc}") from exc
    if r.status_code != 200:
        detail = r.text[:500]  # adapter names and paths, no patient text
        if r.status_code == 404 and "lora" in path and "Not Found" in detail:
            detail += " (start the server with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; the launcher does)"
        raise BackendError(f"{path} failed ({r.status_code}): {detail}")
    return r.text


def load_adapter(url: str, name: str, path: str | Path, replace: bool = False) -> str:
    """Load (or with ``replace`` swap in place) LoRA adapter ``name`` from ``path`` on a running server."""
    return _post(url, "/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(path), "load_inplace": replace})


def unload_adapter(url: str, name: str) -> str:
    return _post(url, "/v1/unload_lora_adapter", {"lora_name": name})
