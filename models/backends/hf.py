"""transformers + peft in-process: the base model with several named LoRA adapters.

For machines without vLLM and for evaluation during training. Requests are grouped by
adapter (``set_adapter`` per group) and generated in left-padded batches. JSON Schema
constraints are NOT enforced here; downstream parsing/repair handles malformed output.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from models.backends.base import BackendError, GenerationRequest, GenerationResult
from models.prepare import resolve_base_model

log = logging.getLogger(__name__)


class HFBackend:
    name = "hf"

    def __init__(
        self,
        model: str = "smollm2",
        adapters: dict[str, str] | None = None,
        device: str = "auto",
        dtype: str = "float32",
        batch_size: int = 8,
        attn_implementation: str | None = None,
        add_special_tokens: bool = False,
        num_threads: int | None = None,
    ):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch = torch
        if num_threads:  # intra-op threads; on a loaded machine fewer threads avoid OpenMP barrier stalls
            torch.set_num_threads(int(num_threads))
        self.model_path = resolve_base_model(model)
        self.device = ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        self.batch_size = max(1, int(batch_size))
        self.add_special_tokens = add_special_tokens  # False: the chat template already wrote them
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        kwargs: dict[str, Any] = {"dtype": getattr(torch, dtype) if dtype != "auto" else "auto"}
        if attn_implementation:
            kwargs["attn_implementation"] = attn_implementation
        model_obj = AutoModelForCausalLM.from_pretrained(self.model_path, **kwargs)
        self.adapters = {name: str(path) for name, path in (adapters or {}).items() if path}
        if self.adapters:
            from peft import PeftModel

            names = list(self.adapters)
            model_obj = PeftModel.from_pretrained(model_obj, self.adapters[names[0]], adapter_name=names[0])
            for name in names[1:]:
                model_obj.load_adapter(self.adapters[name], adapter_name=name)
        self.model = model_obj.to(self.device).eval()
        eos = self.model.generation_config.eos_token_id
        self.eos_ids = set(eos if isinstance(eos, list) else [eos if eos is not None else self.tokenizer.eos_token_id])
        self._warned_schema = False

    def generate(self, requests: list[GenerationRequest], progress: bool = False) -> list[GenerationResult]:
        unknown = sorted({r.adapter for r in requests if r.adapter and r.adapter not in self.adapters})
        if unknown:
            raise BackendError(f"hf: unknown adapter(s) {unknown}; configured: {sorted(self.adapters)}")
        if any(r.json_schema is not None for r in requests) and not self._warned_schema:
            log.warning("hf backend does not enforce json_schema; outputs are parsed/repaired downstream")
            self._warned_schema = True
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            key = (r.adapter, r.max_tokens, r.temperature, tuple(r.stop or ()), r.min_tokens, r.ignore_eos)
            groups.setdefault(key, []).append(i)
        batches = [idx[k:k + self.batch_size] for idx in groups.values() for k in range(0, len(idx), self.batch_size)]
        results: list[GenerationResult | None] = [None] * len(requests)
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(requests), desc="hf", unit="req")
        for batch in batches:
            for i, result in zip(batch, self._generate_batch([requests[i] for i in batch]), strict=True):
                results[i] = result
            if bar is not None:
                bar.update(len(batch))
        if bar is not None:
            bar.close()
        return [r for r in results if r is not None]

    def _generate_batch(self, batch: list[GenerationRequest]) -> list[GenerationResult]:
        from transformers import GenerationConfig

        torch, tok, first = self.torch, self.tokenizer, batch[0]
        enc = tok([r.prompt for r in batch], return_tensors="pt", padding=True, padding_side="left",
                  add_special_tokens=self.add_special_tokens).to(self.device)
        sample = first.temperature > 0
        config = GenerationConfig(
            max_new_tokens=first.max_tokens,
            min_new_tokens=(first.max_tokens if first.ignore_eos else first.min_tokens) or None,
            do_sample=sample,
            temperature=first.temperature if sample else None,
            top_k=None,
            top_p=None,
            eos_token_id=sorted(self.eos_ids),
            pad_token_id=tok.pad_token_id,
            stop_strings=first.stop or None,
        )
        start = time.perf_counter()
        with torch.inference_mode(), self._adapter(first.adapter):
            out = self.model.generate(**enc, generation_config=config, tokenizer=tok if first.stop else None)
        latency = time.perf_counter() - start
        width = enc["input_ids"].shape[1]
        prompt_lens = enc["attention_mask"].sum(dim=1).tolist()
        results = []
        for row, prompt_len in zip(out[:, width:].tolist(), prompt_lens, strict=True):
            ids, finish = [], "length"
            for t in row:
                ids.append(t)
                if t in self.eos_ids:
                    finish = "stop"
                    break
            text = tok.decode([t for t in ids if t not in self.eos_ids], skip_special_tokens=True)
            for s in first.stop or ():
                if s in text:
                    text, finish = text[: text.index(s)], "stop"
            results.append(GenerationResult(text=text, prompt_tokens=int(prompt_len), completion_tokens=len(ids),
                                            latency_s=latency, token_ids=ids, finish_reason=finish))
        return results

    def _adapter(self, name: str | None):
        from contextlib import nullcontext

        if not self.adapters:
            return nullcontext()
        if name is None:
            return self.model.disable_adapter()
        self.model.set_adapter(name)
        return nullcontext()

    def close(self) -> None:
        self.model = None
