"""``python -m eval.runs.gpu_check --out DIR``: the GPU path of the model layer, measured on one CUDA machine.

Why a script of its own: CI and the development machines have no GPU, so the CUDA side of ``medhx train`` (the
``Trainer``'s bf16 autocast, LoRA on the device) and of transformers generation is exercised only where a GPU is
lent, in one command whose report (``gpu_check.json``) is what the README quotes. Each comparison is made inside one
run on one machine, both sides at their best settings:

- training: the NLU LoRA of ``configs/train/nlu.yaml`` on the embedded SmolLM2 for ``--steps`` optimizer steps,
  ``mixed_precision: auto`` (bf16 on a GPU) against ``no`` (float32), each then scored on the valid split by the
  MediTOD metric, as ``medhx train`` does;
- generation: the NLU workload of ``medhx bench-speed`` (every annotated patient turn forced to its gold target's
  length) through transformers on the GPU, bf16 and float32, one turn at a time and in batches, and with the trained
  adapter attached (unmerged LoRA) against merged into the base.

vLLM is not run here: it needs its own CUDA build (``pip install -e ".[gpu]"``), and the check reports whether one is
importable so that the same command, on a machine that has it, says so.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from agent.core.paths import REPO_ROOT

NLU_CONFIG = REPO_ROOT / "configs" / "train" / "nlu.yaml"


def environment() -> dict[str, Any]:
    """What the numbers were measured on: the GPU, its bf16 support and the library versions."""
    import peft
    import torch
    import transformers

    env: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                           "transformers": transformers.__version__, "peft": peft.__version__,
                           "cuda_available": torch.cuda.is_available()}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1),
                   capability=f"{props.major}.{props.minor}", bf16_supported=torch.cuda.is_bf16_supported(),
                   cuda=torch.version.cuda)
    try:
        import vllm

        env["vllm"] = vllm.__version__
    except Exception as exc:  # reported, not fatal: the check measures what is there
        env["vllm"] = f"not importable: {type(exc).__name__}: {exc}"[:300]
    return env


class _TrainClock:
    """Wall time of the optimizer steps alone (``on_train_begin`` .. ``on_train_end``): the card's own
    ``wall_time_s`` also counts preparing the data and loading the model, which precision does not change."""

    def __init__(self) -> None:
        from transformers import TrainerCallback

        clock = self

        class _Callback(TrainerCallback):  # type: ignore[misc]
            def on_train_begin(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                clock.start = time.perf_counter()

            def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                clock.seconds = time.perf_counter() - clock.start

        self.start, self.seconds = 0.0, 0.0
        self.callback = _Callback()


def train_runs(out: Path, steps: int, eval_limit: int | None, device: str, micro_batch: int) -> dict[str, Any]:
    """The NLU LoRA trained twice, bf16 autocast (``auto`` on a GPU) and float32, same data, seed and steps."""
    import torch

    from eval.metrics.score import score_rows
    from models.train import train
    from models.train_config import load_config

    runs: dict[str, Any] = {}
    for precision in ("auto", "no"):
        cfg = load_config(NLU_CONFIG, {"train.max_steps": steps, "train.mixed_precision": precision,
                                       "train.save_steps": 10**6, "train.micro_batch_size": micro_batch,
                                       "device": device, "output_dir": str(out / f"nlu-{precision}")})
        # the valid-split scoring: a sample, outputs capped (an untrained format can run to the default cap)
        cfg = cfg.model_copy(update={"eval": cfg.eval.model_copy(update={"limit": eval_limit, "max_tokens": 256})})
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        clock = _TrainClock()
        card = train(cfg, progress=True, callbacks=[clock.callback], scorer=score_rows)
        t = card["train"]
        examples = steps * t["effective_batch_size"]
        runs[precision] = {
            "mixed_precision": t["mixed_precision"], "device": t["device"], "optimizer_steps": t["optimizer_steps"],
            "effective_batch_size": t["effective_batch_size"], "train_s": round(clock.seconds, 2),
            "examples_per_s": round(examples / clock.seconds, 2) if clock.seconds else None,
            "loss_first": t["loss_first"], "loss_last": t["loss_last"],
            "peak_gpu_memory_gib": (round(torch.cuda.max_memory_allocated() / 2**30, 2)
                                    if torch.cuda.is_available() else None),
            "valid": card.get("valid", {}), "card_wall_time_s": card.get("wall_time_s"),
        }
        nlu = runs[precision]["valid"].get("tasks", {}).get("nlu", {})
        headline = {k: v for k, v in runs[precision].items() if k != "valid"}
        headline.update(valid_f1=nlu.get("metrics", {}).get("overall", {}).get("f1"),
                        valid_json_rate=nlu.get("parse", {}).get("valid_rate_after_repair"))
        print(json.dumps({precision: headline}, default=str), flush=True)
    auto, fp32 = runs["auto"]["train_s"], runs["no"]["train_s"]
    runs["speedup_auto_vs_fp32"] = round(fp32 / auto, 2) if auto else None
    return runs


def generation_speed(base: str, adapter: Path, limit: int | None, batch_size: int, device: str) -> dict[str, Any]:
    """Tokens a second through transformers ``generate`` on ``device`` (bench-speed's workload and runner)."""
    from peft import PeftModel

    from eval.runs.bench_speed_engines import HFRunner, build_workload

    config = {"data": str(REPO_ROOT / "data" / "meditod"), "split": "all", "history": 4, "limit": limit}
    result: dict[str, Any] = {}
    runners = {}
    for dtype in ("bfloat16", "float32"):
        runner = HFRunner(base, dtype, threads=1, device=device)
        prompts_, lengths = build_workload(config, runner.tok)
        runner.generate(prompts_[:2], 4)  # warm-up (kernels, allocator), untimed
        for label, size in (("one_at_a_time", 1), (f"batch_{batch_size}", batch_size)):
            wall, generated = runner.run(prompts_, lengths, size, True, desc=f"{dtype} {label}")
            result[f"{dtype}/{label}"] = {"turns": len(prompts_), "tokens": generated, "seconds": round(wall, 2),
                                          "tokens_per_s": round(generated / wall, 1)}
        runners[dtype] = runner
    bf16 = runners.pop("bfloat16")
    del runners
    bf16.model = PeftModel.from_pretrained(bf16.model, str(adapter)).eval()  # the trained LoRA, unmerged
    prompts_, lengths = build_workload(config, bf16.tok)
    for label in ("lora_unmerged", "lora_merged"):
        if label == "lora_merged":
            bf16.model = bf16.model.merge_and_unload().eval()
        bf16.generate(prompts_[:2], 4)
        wall, generated = bf16.run(prompts_, lengths, batch_size, True, desc=f"bfloat16 {label}")
        result[f"bfloat16/{label}/batch_{batch_size}"] = {"tokens": generated, "seconds": round(wall, 2),
                                                          "tokens_per_s": round(generated / wall, 1)}
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.runs.gpu_check", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="directory for gpu_check.json and the two adapters")
    p.add_argument("--steps", type=int, default=30, help="optimizer steps per training run (default 30)")
    p.add_argument("--eval-limit", type=int, default=None, help="valid turns scored after training (default all)")
    p.add_argument("--gen-limit", type=int, default=None, help="patient turns in the generation workload (default all)")
    p.add_argument("--batch-size", type=int, default=16, help="generation batch (the batched runs)")
    p.add_argument("--micro-batch", type=int, default=8, help="training micro-batch, both precisions (effective 16)")
    p.add_argument("--device", default="cuda", help="cuda (the point of this check); cpu for a dry run")
    p.add_argument("--only", choices=("train", "generation"), default=None,
                   help="one half (each fits one 10-minute device call); generation reuses --out's bf16 adapter")
    args = p.parse_args(argv)
    from models.prepare import resolve_base_model

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "gpu_check.json"
    report: dict[str, Any] = json.loads(path.read_text()) if path.is_file() else {}
    report.update(environment=environment())
    report.setdefault("commands", []).append(" ".join(sys.argv))
    print(json.dumps(report["environment"]), flush=True)
    t0 = time.perf_counter()
    base = resolve_base_model("smollm2")
    report["prepare_s"] = round(time.perf_counter() - t0, 1)
    if args.only != "generation":
        report["train"] = train_runs(out, args.steps, args.eval_limit, args.device, args.micro_batch)
        path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    if args.only != "train":
        report["generation"] = generation_speed(base, out / "nlu-auto", args.gen_limit, args.batch_size, args.device)
        path.write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(json.dumps(report["generation"], indent=1), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
