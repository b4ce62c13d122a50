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

- vLLM (``--only vllm``, on a machine with vLLM's CUDA build): ``medhx bench-speed`` with
  ``configs/bench_speed_gpu.yaml`` (transformers on the GPU against vLLM, unconstrained and under the CMAS schema),
  then a real ``medhx serve`` server (:mod:`models.serve`) with a LoRA module, driven through the live agent's client
  (:class:`models.backends.vllm_server.VLLMServerBackend`): base against LoRA, LoRA under the schema, the deployed
  NLU schema's validity, and a runtime adapter swap.

``--random-base DIR`` builds the base from DIR's ``config.json`` and tokenizer with seeded random weights. Why: a
device call carries 64 MiB, and vLLM's CUDA build fills three calls before the 94 MiB GGUF could travel. Every
speed figure here forces each turn's output length, so the weights do not change the work; the model's architecture,
tokenizer and prompt lengths are SmolLM2-135M's.
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


def random_base(config_dir: Path, out: Path, seed: int = 0) -> str:
    """SmolLM2's architecture and tokenizer with seeded random weights, saved in bf16 (see the module docstring)."""
    import shutil

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    out.mkdir(parents=True, exist_ok=True)
    for f in config_dir.iterdir():
        if f.is_file() and f.name != "config.json":
            shutil.copy(f, out / f.name)
    torch.manual_seed(seed)
    config = AutoConfig.from_pretrained(config_dir)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(out)
    return str(out)


def random_adapter(base: str, out: Path, seed: int) -> str:
    """A LoRA adapter of the NLU config's shape (rank, alpha, projections) with non-zero random weights, so that
    serving it does the adapter's arithmetic (peft's default zero-initialised B would be a no-op worth nothing)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from models.train_config import load_config

    lora = load_config(NLU_CONFIG).peft
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.bfloat16)
    peft_model = get_peft_model(model, LoraConfig(r=lora.r, lora_alpha=lora.alpha, target_modules=lora.target_modules,
                                                  init_lora_weights=False, task_type="CAUSAL_LM"))
    peft_model.save_pretrained(str(out))
    return str(out)


def vllm_bench(base: str, out: Path, limit: int | None, eager: bool) -> dict[str, Any]:
    """``medhx bench-speed`` on this GPU (``configs/bench_speed_gpu.yaml``; its base model replaced by ``base``, its
    turn limit by ``limit`` when given)."""
    from eval.runs.bench_speed import load_bench_config, run_bench, summary_line

    config = {**load_bench_config(REPO_ROOT / "configs" / "bench_speed_gpu.yaml"), "base_model": base,
              "output_dir": str(out / "bench_speed")}
    if limit is not None:
        config["limit"] = limit
    if eager:
        config["vllm"] = {**config["vllm"], "engine_args": {**config["vllm"]["engine_args"], "enforce_eager": True}}
    report = run_bench(config)
    print(summary_line(report), flush=True)
    return {k: report[k] for k in ("turns", "completion_tokens_per_turn", "dtype_choice", "runs", "ratios",
                                   "constrained_overhead")}


def _timed(backend: Any, requests: list[Any]) -> dict[str, Any]:
    backend.generate(requests[:2])  # warm-up, untimed
    start = time.perf_counter()
    results = backend.generate(requests)
    wall = time.perf_counter() - start
    tokens = sum(r.completion_tokens for r in results)
    latencies = sorted(r.latency_s for r in results)
    return {"requests": len(results), "tokens": tokens, "seconds": round(wall, 3),
            "tokens_per_s": round(tokens / wall, 1), "latency_p50_s": round(latencies[len(latencies) // 2], 3),
            "results": results}


def vllm_serve(base: str, adapters: tuple[str, str], out: Path, limit: int | None, eager: bool) -> dict[str, Any]:
    """A real ``medhx serve`` server with the NLU LoRA module, driven by the live agent's client."""
    import jsonschema
    from transformers import AutoTokenizer

    from agent.core import cmas
    from eval.runs.bench_speed_engines import build_workload
    from eval.runs.bench_speed_measure import long_schema
    from models.backends import GenerationRequest
    from models.backends.vllm_server import VLLMServerBackend
    from models.serve.adapters import load_adapter, unload_adapter
    from models.serve.config import ServeConfig
    from models.serve.endpoint import Endpoint
    from models.serve.lifecycle import ensure_running, stop_server

    config = ServeConfig(model=base, adapters={"nlu": adapters[0]}, port=8011, dtype="bfloat16",
                         log_file=str(out / "serve.log"), startup_timeout_s=480, enforce_eager=eager or "auto",
                         engine_args={"gpu_memory_utilization": 0.4})
    t0 = time.perf_counter()
    info = ensure_running(config, announce=False)
    report: dict[str, Any] = {"start_s": round(time.perf_counter() - t0, 1)}
    workload = {"data": str(REPO_ROOT / "data" / "meditod"), "split": "all", "history": 4, "limit": limit}
    prompts_, lengths = build_workload(workload, AutoTokenizer.from_pretrained(base))
    long = long_schema(cmas.nlu_json_schema(), 32)
    schema = cmas.nlu_json_schema()
    try:
        backend = VLLMServerBackend(url=info.url, api_key=info.api_key, concurrency=64, deadline_s=300)

        def forced(adapter: str | None, json_schema: dict[str, Any] | None = None) -> list[Any]:
            return [GenerationRequest(p, adapter=adapter, max_tokens=n, min_tokens=n, ignore_eos=json_schema is None,
                                      json_schema=json_schema) for p, n in zip(prompts_, lengths, strict=True)]

        for label, requests in (("base", forced(None)), ("lora", forced("nlu")),
                                ("lora_constrained", forced("nlu", long))):
            run = _timed(backend, requests)
            run.pop("results")
            report[label] = run
            print(json.dumps({label: run}), flush=True)
        deployed = _timed(backend, [GenerationRequest(p, adapter="nlu", json_schema=schema, max_tokens=256)
                                    for p in prompts_])
        valid = 0
        for r in deployed.pop("results"):
            try:
                jsonschema.validate(json.loads(r.text), schema)
                valid += 1
            except (ValueError, jsonschema.ValidationError):
                pass
        report["lora_deployed_schema"] = {**deployed, "schema_valid": valid}
        t1 = time.perf_counter()
        load_adapter(info.url, "nlu_swap", adapters[1])
        swap_load_s = time.perf_counter() - t1
        swapped = backend.generate(forced("nlu_swap")[:8])
        unload_adapter(info.url, "nlu_swap")
        report["runtime_swap"] = {"load_s": round(swap_load_s, 2), "requests": len(swapped),
                                  "tokens": sum(r.completion_tokens for r in swapped)}
        backend.close()
    finally:
        stop_server(Endpoint(config.host, config.port))
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m eval.runs.gpu_check", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="directory for gpu_check.json and the two adapters")
    p.add_argument("--steps", type=int, default=30, help="optimizer steps per training run (default 30)")
    p.add_argument("--eval-limit", type=int, default=None, help="valid turns scored after training (default all)")
    p.add_argument("--gen-limit", type=int, default=None, help="patient turns in the generation workload (default all)")
    p.add_argument("--batch-size", type=int, default=16, help="generation batch (the batched runs)")
    p.add_argument("--micro-batch", type=int, default=8, help="training micro-batch, both precisions (effective 16)")
    p.add_argument("--device", default="cuda", help="cuda (the point of this check); cpu for a dry run")
    p.add_argument("--only", choices=("train", "generation", "vllm"), default=None,
                   help="one part (each fits one 10-minute device call); generation reuses --out's bf16 adapter; "
                        "vllm needs vLLM's CUDA build")
    p.add_argument("--eager", action="store_true",
                   help="vLLM without torch.compile and CUDA graphs (starts in seconds; not its best speed)")
    p.add_argument("--random-base", type=Path, default=None,
                   help="a directory with SmolLM2's config.json and tokenizer: random weights (see the docstring)")
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
    base = (random_base(args.random_base, out / "random-base") if args.random_base else resolve_base_model("smollm2"))
    report["base"] = f"random weights, the architecture of {args.random_base}" if args.random_base else "smollm2"
    report["prepare_s"] = round(time.perf_counter() - t0, 1)
    if args.only == "vllm":
        adapters = (random_adapter(base, out / "lora-a", 1), random_adapter(base, out / "lora-b", 2))
        report["vllm_bench_speed"] = vllm_bench(base, out, args.gen_limit, args.eager)
        path.write_text(json.dumps(report, indent=2, default=str) + "\n")
        report["vllm_serve"] = vllm_serve(base, adapters, out, args.gen_limit, args.eager)
        path.write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(json.dumps(report["vllm_serve"], indent=1), flush=True)
        return 0
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
