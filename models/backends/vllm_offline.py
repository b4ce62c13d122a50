"""In-process ``vllm.LLM`` with one ``LoRARequest`` per module adapter, for batch evaluation.

A whole split goes to ``llm.generate`` in one call, so vLLM's continuous batching
schedules it. Engine settings (tensor/pipeline/data parallelism, dtype, max_model_len,
...) are handed to ``vllm.LLM`` untouched: scale-out is vLLM's own.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from models.backends.base import BackendError, GenerationRequest, GenerationResult
from models.prepare import resolve_base_model
from models.serve import default_max_loras, detect_device

log = logging.getLogger(__name__)

DEFAULT_ENGINE: dict[str, Any] = {"max_lora_rank": 32, "max_model_len": 4096}


class VLLMOfflineBackend:
    name = "vllm-offline"

    def __init__(
        self,
        model: str = "smollm2",
        adapters: dict[str, str] | None = None,
        structured_outputs: dict | None = None,
        cpu_kvcache_space_gib: float | None = None,
        cpu_omp_threads_bind: str | None = None,
        add_special_tokens: bool = False,
        **engine: Any,
    ):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        # vLLM reads these when the engine starts (CPU build only; harmless on GPU).
        if cpu_kvcache_space_gib is not None:
            os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(cpu_kvcache_space_gib)
        if cpu_omp_threads_bind is not None:
            os.environ["VLLM_CPU_OMP_THREADS_BIND"] = str(cpu_omp_threads_bind)
        from vllm import LLM
        from vllm.lora.request import LoRARequest

        self.add_special_tokens = add_special_tokens  # False: the chat template already wrote them
        self.adapters = {name: str(path) for name, path in (adapters or {}).items() if path}
        kwargs = {**DEFAULT_ENGINE, **engine}
        device = detect_device()
        if device == "cpu":
            kwargs.setdefault("enforce_eager", True)  # no torch.compile warm-up on CPU
        if self.adapters:
            kwargs["enable_lora"] = True
            kwargs.setdefault("max_loras", default_max_loras(len(self.adapters), device))
        else:
            kwargs.pop("max_lora_rank", None)
            kwargs.pop("max_loras", None)
        if structured_outputs is None:  # same default as models.serve (and why)
            structured_outputs = {"backend": "guidance", "disable_any_whitespace": True}
        if structured_outputs:
            kwargs["structured_outputs_config"] = dict(structured_outputs)
        self.model = resolve_base_model(model)
        log.info("vllm.LLM(model=%s, %s)", self.model, kwargs)
        self.llm = LLM(model=self.model, **kwargs)
        self.lora = {
            name: LoRARequest(name, i + 1, path) for i, (name, path) in enumerate(sorted(self.adapters.items()))
        }

    def generate(self, requests: list[GenerationRequest], progress: bool = False) -> list[GenerationResult]:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        if not requests:
            return []
        unknown = sorted({r.adapter for r in requests if r.adapter and r.adapter not in self.lora})
        if unknown:
            raise BackendError(f"vllm-offline: unknown adapter(s) {unknown}; configured: {sorted(self.lora)}")
        params = [
            SamplingParams(
                temperature=r.temperature,
                max_tokens=r.max_tokens,
                stop=r.stop or None,
                min_tokens=r.min_tokens,
                ignore_eos=r.ignore_eos,
                structured_outputs=StructuredOutputsParams(json=r.json_schema) if r.json_schema is not None else None,
            )
            for r in requests
        ]
        loras = [self.lora[r.adapter] if r.adapter else None for r in requests]
        start = time.perf_counter()
        outputs = self.llm.generate([r.prompt for r in requests], params, lora_request=loras, use_tqdm=progress,
                                    tokenization_kwargs={"add_special_tokens": self.add_special_tokens})
        wall = time.perf_counter() - start
        results = []
        for out in outputs:
            completion = out.outputs[0]
            results.append(GenerationResult(
                text=completion.text,
                prompt_tokens=len(out.prompt_token_ids or []),
                completion_tokens=len(completion.token_ids),
                latency_s=_latency(out, wall),
                token_ids=list(completion.token_ids),
                finish_reason=completion.finish_reason,
            ))
        return results

    def close(self) -> None:
        """Stop the engine-core process now rather than at interpreter exit."""
        llm, self.llm = getattr(self, "llm", None), None
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()


def _latency(out: Any, wall: float) -> float:
    """Per-request engine time when vLLM recorded it; else the whole batch's wall time (an upper bound)."""
    m = getattr(out, "metrics", None)
    queued, last = getattr(m, "queued_ts", 0.0), getattr(m, "last_token_ts", 0.0)
    return float(last - queued) if queued and last > queued else wall


def main(argv: list[str] | None = None) -> int:
    """``python -m models.backends.vllm_offline JOB.json OUT.json``: run one batch in a fresh process.

    JOB: ``{"config": {...backend config...}, "requests": [{GenerationRequest fields}, ...]}``;
    OUT: a list of GenerationResult dicts. Lets a caller that already holds memory (a test
    session, a training process) use the in-process engine without keeping it alive.
    """
    import argparse
    import dataclasses
    import json

    parser = argparse.ArgumentParser(prog="python -m models.backends.vllm_offline")
    parser.add_argument("job")
    parser.add_argument("out")
    args = parser.parse_args(argv)
    with open(args.job) as f:
        job = json.load(f)
    backend = VLLMOfflineBackend(**job["config"])
    try:
        results = backend.generate([GenerationRequest(**r) for r in job["requests"]], progress=True)
    finally:
        backend.close()
    with open(args.out, "w") as f:
        json.dump([dataclasses.asdict(r) for r in results], f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
