"""The serve config (``configs/serve.yaml``): what a vLLM server serves and how. Unknown keys are an error."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.core.paths import ConfigPath, ModelRef, read_config_file, resolve_paths, unknown_keys, validation_problems
from models.prepare import resolve_base_model
from models.serve.endpoint import Endpoint


class ServeConfig(BaseModel):
    """A vLLM server: base model, LoRA modules, engine settings. Unknown keys are an error."""

    model_config = ConfigDict(extra="forbid")

    model: ModelRef = "smollm2"  # embedded SmolLM2-135M-Instruct, an HF id, or a local directory
    served_model_name: str | None = None  # default: the model path
    host: str = "127.0.0.1"  # loopback; another address only when written here
    port: int = Field(default=8000, ge=1, le=65535)
    adapters: dict[str, ConfigPath | None] = {}  # LoRA module name -> adapter directory; empty entries are not served
    max_lora_rank: int = Field(default=32, ge=1)
    max_loras: int | Literal["auto"] = "auto"  # auto = number of adapters (+1 spare slot on CPU, see default_max_loras)
    dtype: str = "auto"
    max_model_len: int = Field(default=4096, ge=1)
    device: Literal["auto", "cpu", "gpu", "cuda"] = "auto"  # cuda = gpu
    enforce_eager: bool | Literal["auto"] = "auto"  # auto = true on CPU
    # guidance (llguidance) emits strict JSON; xgrammar 0.2.8 let raw control characters into strings.
    # disable_any_whitespace forces compact JSON, the format cmas.dumps writes training targets in;
    # random/untrained models would otherwise never stop emitting whitespace.
    structured_outputs: dict[str, Any] | None = {"backend": "guidance", "disable_any_whitespace": True}
    cpu_kvcache_space_gib: int = Field(default=2, ge=1)
    cpu_omp_threads_bind: str = "auto"
    engine_args: dict[str, Any] = {}  # any other vLLM engine argument, e.g. {tensor_parallel_size: 2}
    extra_args: list[str | int | float] = []  # verbatim command-line arguments
    env: dict[str, str | int | float | bool] = {}
    startup_timeout_s: float = Field(default=900, gt=0)
    log_file: ConfigPath | None = None  # default: <cache>/servers/<host>-<port>.log

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.host, self.port)

    @property
    def url(self) -> str:
        return self.endpoint.url

    @property
    def adapter_paths(self) -> dict[str, str]:
        """The adapters that are served (entries with a path)."""
        return {name: str(path) for name, path in self.adapters.items() if path}

    def base_model_path(self) -> str:
        """What vLLM gets as ``--model`` (the embedded model is prepared on first use)."""
        return resolve_base_model(self.model)

    def served_name(self) -> str:
        """The base model's id in ``/v1/models``."""
        return self.served_model_name or self.base_model_path()

    def config_hash(self) -> str:
        """Identifies what a server serves and how; the endpoint, timeout and log file are not part of it."""
        data = self.model_dump(exclude={"host", "port", "startup_timeout_s", "log_file"})
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:12]


DEFAULTS: dict[str, Any] = ServeConfig().model_dump()  # the defaults as a mapping (``medhx config show``)


def check_serve_config(data: dict | ServeConfig, base_dir: str | Path | None = None) -> ServeConfig:
    """A validated serve config with relative paths made absolute; ValueError names the bad keys.

    Relative adapter, model and log paths resolve against ``base_dir``: the serve config file's directory, or
    for a mapping written inside another config (``launch: {...}``) that file's directory; the working
    directory when there is no file (the one rule of :mod:`agent.core.paths`).
    """
    if isinstance(data, ServeConfig):
        return data
    if not isinstance(data, dict):
        raise ValueError(f"a serve config is a mapping, not {type(data).__name__}")
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    data = resolve_paths(ServeConfig, data, base)
    try:
        config = ServeConfig.model_validate(data)
    except ValidationError as exc:
        if unknown := unknown_keys(exc):
            raise ValueError(
                f"unknown serve config keys {unknown} (allowed: {sorted(ServeConfig.model_fields)})"
            ) from None
        raise ValueError(f"serve config: {validation_problems(exc)}") from None
    return config


def load_serve_config(path: str | Path) -> dict:
    """:func:`read_serve_config` as a mapping, every key filled in (``eval.runs.bench`` records its adapters)."""
    return read_serve_config(path).model_dump()


def read_serve_config(path: str | Path) -> ServeConfig:
    """A serve config file: the serve settings at top level or under a ``serve:`` key."""
    data, base = read_config_file(path)
    try:
        return check_serve_config(data.get("serve", data), base_dir=base)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
