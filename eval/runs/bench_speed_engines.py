"""The timed runs of ``medhx bench-speed`` (see :mod:`eval.runs.bench_speed`): the workload (every annotated patient
turn's NLU prompt and target length), transformers one at a time and batched (:class:`HFRunner`), and in-process
vLLM with and without the CMAS schema, each with its probed dtype."""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import Any

from eval.runs.bench_speed_config import dtype_candidates, hf_device, omp_bind
from eval.runs.bench_speed_measure import (
    Contention,
    decode_overhead,
    forced_batches,
    long_schema,
    pick_fastest,
    summarize,
    target_lengths,
)

# --------------------------------------------------------------------------- data


def build_workload(config: dict, tokenizer: Any) -> tuple[list[str], list[int]]:
    from agent.core.data import load_dialogues, nlu_examples
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

    def __init__(self, path: str, dtype: str, threads: int, device: str = "cpu"):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(threads)
        self.torch, self.dtype, self.device = torch, dtype, device
        self.tok = AutoTokenizer.from_pretrained(path)
        if self.tok.pad_token_id is None:
            self.tok.pad_token = self.tok.eos_token
        t0 = time.perf_counter()
        self.model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype)).to(device).eval()
        self.load_s = time.perf_counter() - t0

    def generate(self, prompts_: list[str], steps: int) -> int:
        from transformers import GenerationConfig

        enc = self.tok(prompts_, return_tensors="pt", padding=True, padding_side="left",
                       add_special_tokens=False).to(self.device)
        config = GenerationConfig(max_new_tokens=steps, min_new_tokens=steps, do_sample=False, top_k=None,
                                  top_p=None, temperature=None, pad_token_id=self.tok.pad_token_id,
                                  eos_token_id=self.model.generation_config.eos_token_id)
        with self.torch.inference_mode():
            out = self.model.generate(**enc, generation_config=config)
        if self.device != "cpu":
            self.torch.cuda.synchronize()  # the clock stops when the GPU has finished, not when the launch returned
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
    device = hf_device(config)
    runners = {d: HFRunner(base, d, threads, device) for d in dict.fromkeys(d for ds in wanted.values() for d in ds)}
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
                                 device=device, load_s=round(runner.load_s, 2), contention=runner.contention.result)
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
    settings = {
        "dtype": dtype,
        "max_model_len": v["max_model_len"],
        "cpu_kvcache_space_gib": v["cpu_kvcache_space_gib"],
        "cpu_omp_threads_bind": omp_bind(v["cpu_omp_threads_bind"], threads),
        "enable_prefix_caching": bool(v["enable_prefix_caching"]),
        "structured_outputs": v["structured_outputs"],
        **(v["engine_args"] or {}),
    }
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
    from agent.core import cmas

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
