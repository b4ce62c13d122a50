"""The arithmetic of ``medhx bench-speed`` (see :mod:`eval.runs.bench_speed`): target lengths, static batches, rates,
ratios, the constrained-decoding overhead, the aim, and the meter of what other processes took while a run was
timed (:class:`Contention`)."""

from __future__ import annotations

import copy
import time
from typing import Any

from eval.runs.bench_speed_config import ENGINES

MIN_TOKENS_FOR_OVERHEAD = 8


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
