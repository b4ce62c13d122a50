"""``medhx bench-speed``'s config (:class:`BenchSpeedConfig`), its loader, and the machine settings read from it
(see :mod:`eval.runs.bench_speed`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.core.data import DEFAULT_DATA_DIR
from agent.core.paths import REPO_ROOT, ConfigPath, ModelRef, read_config_file, resolve_paths

ENGINES = ("hf", "hf_batched", "vllm", "vllm_constrained")

Dtype = Literal["float32", "bfloat16", "float16"]
Dtypes = Dtype | list[Dtype]  # one value skips the probe; a list is probed in order


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ProbeSettings(_Section):
    turns: int = Field(default=4, ge=1)  # the dtype probe: first N turns, each forced to this many tokens
    tokens: int = Field(default=16, ge=1)


class HFSettings(_Section):
    dtype: Dtypes = Field(default_factory=lambda: ["bfloat16", "float32"])


class HFBatchedSettings(_Section):
    enabled: bool = True
    dtype: Dtypes = Field(default_factory=lambda: ["bfloat16", "float32"])
    batch_size: int = Field(default=16, ge=1)
    sort_by_length: bool = True


class VLLMSettings(_Section):
    dtype: Dtypes = Field(default_factory=lambda: ["bfloat16", "float32"])  # the last engine is kept when it wins
    cpu_omp_threads_bind: str = "all"  # "all" = cores 0..threads-1; or vLLM's own syntax ("0-1", "auto", "nobind")
    cpu_kvcache_space_gib: float = 4
    max_model_len: int = 4096
    enable_prefix_caching: bool = True
    structured_outputs: dict[str, Any] = Field(default_factory=lambda: {"backend": "guidance",
                                                                        "disable_any_whitespace": True})
    engine_args: dict[str, Any] = Field(default_factory=dict)  # passed to vllm.LLM untouched


class ConstrainedSettings(_Section):
    enabled: bool = True
    min_items: int = Field(default=32, ge=1)


class LiveSettings(_Section):
    enabled: bool = True
    config: ConfigPath = str(REPO_ROOT / "configs" / "default.yaml")
    cold_runs: int = Field(default=3, ge=1)
    limit: int | None = None


class BenchSpeedConfig(_Section):
    """``medhx bench-speed``'s config; paths relative to the config file's directory (:mod:`agent.core.paths`)."""

    base_model: ModelRef = "smollm2"
    data: ConfigPath = str(DEFAULT_DATA_DIR)
    split: str = "all"
    limit: int | None = None  # first N patient turns only (None = every annotated patient turn)
    history: int = 4
    threads: int | None = None  # cores for every engine (torch threads, vLLM OpenMP threads); None = every core
    # where transformers runs (vLLM picks its own device from its build): auto = cuda when a GPU is visible
    device: Literal["auto", "cpu", "cuda"] = "auto"
    output_dir: ConfigPath = str(REPO_ROOT / "runs" / "bench_speed")
    probe: ProbeSettings = Field(default_factory=ProbeSettings)
    hf: HFSettings = Field(default_factory=HFSettings)
    hf_batched: HFBatchedSettings = Field(default_factory=HFBatchedSettings)
    vllm: VLLMSettings = Field(default_factory=VLLMSettings)
    constrained: ConstrainedSettings = Field(default_factory=ConstrainedSettings)
    live: LiveSettings = Field(default_factory=LiveSettings)


DEFAULTS: dict[str, Any] = BenchSpeedConfig().model_dump()
AGENT_SECTIONS = ("nlu", "policy", "nlg")


class ConfigError(ValueError):
    pass


def load_bench_config(path: str | Path) -> dict:
    """A bench-speed config: :class:`BenchSpeedConfig`'s keys at top level or under ``bench_speed:``; unknown keys are
    an error. Any medhx agent config (with ``nlu``/``policy``/``nlg`` sections, e.g. configs/default.yaml) is also
    accepted: then only its ``base_model`` is used."""
    raw, base = read_config_file(path)
    return bench_config_from(raw, str(path), base=base)


def bench_config_from(raw: Any, where: str = "config", base: Path | None = None) -> dict:
    """The config as a plain mapping, defaults filled in, paths resolved against ``base`` (default: the current
    directory)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping")
    prefix: tuple[str, ...] = ()
    if "bench_speed" in raw:
        raw, prefix = raw["bench_speed"] or {}, ("bench_speed",)
    elif any(k in raw for k in AGENT_SECTIONS):
        raw = {"base_model": raw["base_model"]} if raw.get("base_model") else {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: {'.'.join(prefix)} must be a mapping")
    try:
        return BenchSpeedConfig.model_validate(resolve_paths(BenchSpeedConfig, raw, base or Path.cwd())).model_dump()
    except ValidationError as exc:
        raise ConfigError(f"{where}: " + "; ".join(_problem(e, prefix) for e in exc.errors())) from None


def _problem(error: Any, prefix: tuple[str, ...]) -> str:
    loc = [str(x) for x in error["loc"] if not str(x).startswith(("list[", "literal["))]
    if error["type"] == "extra_forbidden":
        *parent, key = loc
        at = ".".join((*prefix, *parent)) or "top level"
        model: type[BaseModel] = BenchSpeedConfig
        for name in parent:
            model = model.model_fields[name].annotation  # type: ignore[assignment]
        return f"unknown key(s) [{key!r}] at {at}; allowed: {sorted(model.model_fields)}"
    if error["type"] in ("model_type", "dict_type"):
        return f"{'.'.join((*prefix, *loc))} must be a mapping"
    return f"{'.'.join((*prefix, *loc))}: {error['msg']}"


def dtype_candidates(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def machine_threads(config: dict) -> int:
    if config.get("threads"):
        return int(config["threads"])
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def hf_device(config: dict) -> str:
    """The transformers engines' device: ``auto`` is ``cuda`` where torch sees a GPU, so a GPU machine compares
    GPU against GPU (vLLM's CUDA build runs there too) rather than CPU transformers against GPU vLLM."""
    setting = str(config.get("device") or "auto")
    if setting != "auto":
        return setting
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def omp_bind(setting: str | None, threads: int) -> str | None:
    """vLLM's VLLM_CPU_OMP_THREADS_BIND for ``setting``: ``all`` binds cores 0..threads-1 (vLLM's ``auto``
    reserves a core for its scheduler process, which on a 2-core machine halves the compute)."""
    if setting is None:
        return None
    if str(setting) == "all":
        return "0" if threads <= 1 else f"0-{threads - 1}"
    return str(setting)
