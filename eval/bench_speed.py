"""``medhx bench-speed``: NLU generation speed, transformers one request at a time vs vLLM batched.

Every annotated patient turn of the dialogues gets the supervised NLU prompt
(:mod:`models.prompts`). The ``hf`` backend generates them one by one (as the MediTOD
code does); vLLM (in-process engine) gets them as one batch, unconstrained and then
constrained by the CMAS NLU JSON Schema. Model loading and a warm-up request are not
timed. Writes ``report.json`` and ``bench_speed.png`` to the output directory.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DEFAULTS: dict[str, Any] = {
    "base_model": "smollm2",
    "data": "data/meditod",
    "split": "all",
    "limit": None,  # first N turns only (None = every patient turn)
    "max_tokens": 64,
    "history": 4,
    # One core each by default (equal compute; also robust on a loaded machine, where multi-threaded
    # OpenMP stalls at every barrier).
    "hf": {"device": "auto", "dtype": "float32", "batch_size": 1, "num_threads": 1},
    "vllm": {
        "dtype": "float32",
        "max_model_len": 4096,
        "cpu_kvcache_space_gib": 2,
        "cpu_omp_threads_bind": "0",
        "enable_prefix_caching": False,  # each timed run pays its own prefill
        # compact JSON: an untrained model under a free-whitespace grammar can emit whitespace until max_tokens
        "structured_outputs": {"backend": "guidance", "disable_any_whitespace": True},
    },
    "constrained": True,  # also time vLLM under the NLU JSON Schema
    "output_dir": "runs/bench_speed",
}


def load_bench_config(path: str | Path) -> dict:
    """A bench config (keys of DEFAULTS, at top level or under ``bench_speed:``), or any medhx config
    (e.g. configs/default.yaml): then only its ``base_model`` is used."""
    import yaml

    raw = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping")
    section = raw.get("bench_speed") if isinstance(raw.get("bench_speed"), dict) else {
        k: v for k, v in raw.items() if k in DEFAULTS}
    config = {**DEFAULTS, **section}
    if "base_model" not in section and raw.get("base_model"):
        config["base_model"] = raw["base_model"]
    for key in ("hf", "vllm"):
        config[key] = {**DEFAULTS[key], **(section.get(key) or {})}
    return config


def build_prompts(config: dict, tokenizer: Any) -> list[str]:
    from agent.data import load_dialogues, nlu_examples
    from models import prompts

    examples = nlu_examples(load_dialogues(config["data"], config["split"]), history=config["history"])
    if config["limit"]:
        examples = examples[: int(config["limit"])]
    if not examples:
        raise ValueError(f"no annotated patient turns in {config['data']} ({config['split']})")
    return [prompts.render_prompt(prompts.build_messages(e), tokenizer) for e in examples]


def _summary(results: list, wall: float) -> dict:
    tokens = sum(r.completion_tokens for r in results)
    return {"turns": len(results), "seconds": round(wall, 3), "turns_per_s": len(results) / wall,
            "completion_tokens": tokens, "tokens_per_s": tokens / wall,
            "mean_latency_s": sum(r.latency_s for r in results) / len(results),
            "stopped": sum(1 for r in results if r.finish_reason == "stop")}


def _valid_rate(results: list) -> float:
    from agent import cmas

    ok = 0
    for r in results:
        try:
            cmas.parse_nlu(json.loads(r.text))
            ok += 1
        except (ValueError, cmas.CMASError):
            pass
    return ok / len(results)


def run_hf(config: dict, base: str, prompts_: list[str]) -> dict:
    from models.backends import GenerationRequest
    from models.backends.hf import HFBackend

    t0 = time.perf_counter()
    backend = HFBackend(model=base, **config["hf"])
    load_s = time.perf_counter() - t0
    backend.generate([GenerationRequest(prompts_[0], max_tokens=4)])  # warm-up, untimed
    requests = [GenerationRequest(p, max_tokens=config["max_tokens"]) for p in prompts_]
    results = []
    from tqdm import tqdm

    start = time.perf_counter()
    for req in tqdm(requests, desc="hf (one at a time)", unit="turn"):
        results += backend.generate([req])
    wall = time.perf_counter() - start
    backend.close()
    return {**_summary(results, wall), "load_s": round(load_s, 1), "valid_json_rate": _valid_rate(results)}


def run_vllm(config: dict, base: str, prompts_: list[str]) -> dict[str, dict]:
    from agent import cmas
    from models.backends import GenerationRequest
    from models.backends.vllm_offline import VLLMOfflineBackend

    t0 = time.perf_counter()
    backend = VLLMOfflineBackend(model=base, **config["vllm"])
    load_s = time.perf_counter() - t0
    out: dict[str, dict] = {}
    try:
        backend.generate([GenerationRequest(prompts_[0], max_tokens=4)])  # warm-up, untimed
        start = time.perf_counter()
        backend.generate([GenerationRequest(p, max_tokens=1) for p in prompts_], progress=True)
        out["vllm_prefill_only"] = {"turns": len(prompts_), "seconds": round(time.perf_counter() - start, 3)}
        runs = [("vllm", None)]
        if config["constrained"]:
            runs.append(("vllm_constrained", cmas.nlu_json_schema()))
        for name, schema in runs:
            requests = [GenerationRequest(p, max_tokens=config["max_tokens"], json_schema=schema) for p in prompts_]
            start = time.perf_counter()
            results = backend.generate(requests, progress=True)
            wall = time.perf_counter() - start
            out[name] = {**_summary(results, wall), "load_s": round(load_s, 1), "valid_json_rate": _valid_rate(results)}
    finally:
        backend.close()
    return out


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n in ("hf", "vllm", "vllm_constrained") if n in report["runs"]]  # not the prefill-only run
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, key, title in ((axes[0], "turns_per_s", "NLU turns / s"), (axes[1], "tokens_per_s", "generated tokens / s")):
        values = [report["runs"][n][key] for n in names]
        bars = ax.bar(names, values, color=["#8c8c8c", "#3b75af", "#5fa55a"][: len(names)])
        ax.bar_label(bars, fmt="%.2f")
        ax.set_title(title)
    fig.suptitle(f"{report['model_name']} on {report['machine']['cpu_count']} CPU cores, {report['turns']} turns")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


MIN_TOKENS_FOR_OVERHEAD = 8


def constrained_overhead(runs: dict) -> dict:
    """Decode time per generated token with and without the schema, the batch's prefill (a
    max_tokens=1 run) taken out: constrained outputs are much shorter than free ones, so per-turn
    times would mislead. When constrained turns are too short (an untrained model answers ``[]``),
    the remainder is grammar set-up and noise, and no per-token overhead is reported."""
    prefill = runs["vllm_prefill_only"]["seconds"]
    decode = {n: runs[n]["seconds"] - prefill for n in ("vllm", "vllm_constrained")}
    tokens = {n: runs[n]["completion_tokens"] for n in decode}
    per_turn = tokens["vllm_constrained"] / max(runs["vllm_constrained"]["turns"], 1)
    if per_turn < MIN_TOKENS_FOR_OVERHEAD or min(decode.values()) <= 0:
        return {"decode_s_per_token": None, "constrained_overhead_per_token": None,
                "constrained_note": f"constrained outputs average {per_turn:.1f} tokens per turn: too short "
                                    "to time masking per token (use a trained NLU adapter)"}
    per_token = {n: decode[n] / max(tokens[n], 1) for n in decode}
    return {"decode_s_per_token": per_token,
            "constrained_overhead_per_token": per_token["vllm_constrained"] / per_token["vllm"] - 1}


def run_bench(config: dict) -> dict:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoTokenizer

    from models.prepare import resolve_base_model

    base = resolve_base_model(str(config["base_model"]))
    prompts_ = build_prompts(config, AutoTokenizer.from_pretrained(base))
    runs = {"hf": run_hf(config, base, prompts_)}
    runs.update(run_vllm(config, base, prompts_))
    report = {
        "task": "nlu",
        "model_name": str(config["base_model"]),
        "model_path": base,
        "turns": len(prompts_),
        "max_tokens": config["max_tokens"],
        "config": config,
        "runs": runs,
        "ratio_turns_per_s": runs["vllm"]["turns_per_s"] / runs["hf"]["turns_per_s"],
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if "vllm_constrained" in runs:
        report.update(constrained_overhead(runs))
    out = Path(config["output_dir"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report, out / "bench_speed.png")
    return report


def summary_line(report: dict) -> str:
    r = report["runs"]
    line = (f"nlu turns/s hf={r['hf']['turns_per_s']:.2f} vllm={r['vllm']['turns_per_s']:.2f} "
            f"ratio={report['ratio_turns_per_s']:.1f}x tokens/s hf={r['hf']['tokens_per_s']:.1f} "
            f"vllm={r['vllm']['tokens_per_s']:.1f}")
    if "vllm_constrained" in r:
        overhead = report.get("constrained_overhead_per_token")
        line += (f" constrained turns/s={r['vllm_constrained']['turns_per_s']:.2f} "
                 f"overhead/token={'n/a' if overhead is None else f'{100 * overhead:+.0f}%'}")
    return line


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench-speed", help="NLU generation speed: transformers one at a time vs vLLM batched")
    p.add_argument("--config", default="configs/bench_speed.yaml")
    p.add_argument("--limit", type=int, default=None, help="only the first N patient turns")
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
