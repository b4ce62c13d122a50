"""Helpers behind the vLLM session fixtures of conftest.py (importable by tests)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

ADAPTER_SEEDS = {"nlu": 1, "pol": 2, "nlg": 3}
LORA_RANK = 8


def free_port(start: int = 18100, stop: int = 18200) -> int:
    """A free TCP port on 127.0.0.1; MEDHX_TEST_PORT_RANGE="a-b" overrides the range."""
    spec = os.environ.get("MEDHX_TEST_PORT_RANGE")
    if spec:
        start, stop = (int(x) for x in spec.split("-"))
    for port in range(start, stop):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {start}-{stop}")


def tiny_serve_config(model_dir: Path, adapters: dict[str, str], port: int) -> dict:
    return {
        "model": str(model_dir),
        "host": "127.0.0.1",
        "port": port,
        "adapters": adapters,
        "max_lora_rank": LORA_RANK,
        "dtype": "float32",
        "max_model_len": 2048,
        "enforce_eager": True,
        # Compact JSON: a random-weight model under a free-whitespace grammar may never stop.
        "structured_outputs": {"backend": "guidance", "disable_any_whitespace": True},
        "cpu_kvcache_space_gib": 1,
        "cpu_omp_threads_bind": "auto",
        "startup_timeout_s": 600,
    }
