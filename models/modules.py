"""LLM-backed NLU, policy and NLG: prompt (``models.prompts``) -> backend -> parse (``models.parsing``).

The live agent calls :class:`LLMNLU` / :class:`LLMPolicy` / :class:`LLMNLG` one turn at a
time through the ``agent.core.protocol`` protocols; evaluation calls :func:`predict` over a whole
split, which batches every request into one backend call (continuous batching on vLLM).
Both go through :meth:`LLMModule.run_examples`, so a turn is handled identically either way.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from agent.core import cmas
from agent.core.data import Example
from agent.core.protocol import ModuleOutput, TurnContext
from models import prompts
from models.backends.base import Backend, GenerationRequest, GenerationResult
from models.parsing import ParseResult, ParseStats, parse_output

log = logging.getLogger(__name__)

DEFAULT_MAX_TOKENS = {"nlu": 256, "pol": 192, "nlg": 96}


def output_json_schema(task: str, mode: str, max_items: int | None = 8, max_length: int | None = 80) -> dict | None:
    """The structured-output constraint of a task's answer: arrays and strings bounded so decoding terminates."""
    if task == "nlu":
        if mode == "icl":
            return cmas.nlu_json_schema(max_items, max_length, status_attribute=True)
        return cmas.nlu_json_schema(max_items, max_length)
    if task == "pol":
        return cmas.action_json_schema(max_items, max_length)
    return None


@lru_cache(maxsize=4)
def load_tokenizer(name_or_path: str) -> Any:
    """One tokenizer per base model, shared by the NLU, POL and NLG modules that use it."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoTokenizer

    from models.prepare import resolve_base_model

    return AutoTokenizer.from_pretrained(resolve_base_model(name_or_path))


def resolve_tokenizer(tokenizer: Any, backend: Any) -> Any:
    """A tokenizer object as given; a string is loaded; ``None`` takes the backend's tokenizer or model path."""
    if isinstance(tokenizer, (str, os.PathLike)):
        return load_tokenizer(str(tokenizer))
    if tokenizer is not None:
        return tokenizer
    own = getattr(backend, "tokenizer", None)
    if own is not None and hasattr(own, "apply_chat_template"):
        return own
    for attr in ("model_path", "model"):
        path = getattr(backend, attr, None)
        if isinstance(path, str) and Path(path).is_dir():
            return load_tokenizer(path)
    raise ValueError(f"no tokenizer for backend {getattr(backend, 'name', backend)!r}: pass tokenizer= (the base "
                     "model's local directory, or 'smollm2')")


class LLMModule:
    """One task's model: backend + adapter + prompt format (+ exemplar retriever for ``icl``).

    ``tokenizer``: the base model's HF tokenizer, or a path / ``smollm2`` to load it from; by default
    the backend's own (only its chat template and token counts are used).
    ``constrained``: send the task's CMAS JSON Schema as a structured-output constraint (NLU, POL), its
    arrays bounded by ``schema_max_items`` and strings by ``schema_max_length``.
    ``max_prompt_tokens``: in ``icl`` mode, drop the least similar exemplars until the prompt fits.
    """

    task: str = ""

    def __init__(
        self,
        backend: Backend,
        adapter: str | None = None,
        tokenizer: Any = None,
        mode: prompts.Mode = "supervised",
        retriever: Any = None,
        k: int = 5,
        max_tokens: int | None = None,
        history: int | None = 4,
        constrained: bool = True,
        max_prompt_tokens: int | None = 7000,
        schema_max_items: int | None = 8,
        schema_max_length: int | None = 80,
    ):
        if mode not in prompts.MODES:
            raise ValueError(f"unknown prompt mode {mode!r}; use one of {prompts.MODES}")
        if mode == "icl" and retriever is None:
            log.warning("%s: icl mode without a retriever: zero-shot prompts (definitions + query only)", self.task)
        self.backend = backend
        self.tokenizer = resolve_tokenizer(tokenizer, backend)
        self.adapter = adapter
        self.mode = mode
        self.retriever = retriever
        self.k = k
        self.max_tokens = max_tokens or DEFAULT_MAX_TOKENS[self.task]
        self.history = history
        self.schema = output_json_schema(self.task, mode, schema_max_items, schema_max_length) if constrained else None
        self.max_prompt_tokens = max_prompt_tokens
        self.stats = ParseStats()

    # ------------------------------------------------------------------ prompts

    def prompt_for(self, example: Example) -> str:
        if self.mode == "supervised":
            return prompts.render_prompt(prompts.build_messages(example, "supervised"), self.tokenizer)
        exemplars = self.retriever.top_k(example, self.k) if self.retriever is not None else []
        exemplars = list(reversed(exemplars))  # most similar last, nearest the query
        while True:
            prompt = prompts.render_prompt(prompts.build_messages(example, "icl", exemplars), self.tokenizer)
            if not exemplars or not self.max_prompt_tokens:
                return prompt
            if len(prompts.encode_prompt(prompt, self.tokenizer)) <= self.max_prompt_tokens:
                return prompt
            exemplars = exemplars[1:]

    def request_for(self, example: Example) -> GenerationRequest:
        return GenerationRequest(prompt=self.prompt_for(example), adapter=self.adapter, json_schema=self.schema,
                                 max_tokens=self.max_tokens)

    # ------------------------------------------------------------------ run

    def parse(self, result: GenerationResult) -> ParseResult:
        return self.stats.add(parse_output(self.task, result.text, status_attribute=self.mode == "icl"))

    def output(self, result: GenerationResult) -> ModuleOutput:
        parsed = self.parse(result)
        if parsed.format_error:
            log.warning("%s format error: %s", self.task, parsed.format_error)
        meta = {
            "backend": getattr(self.backend, "name", type(self.backend).__name__),
            "adapter": self.adapter,
            "mode": self.mode,
            "latency_s": result.latency_s,
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "finish_reason": result.finish_reason,
            "fixes": parsed.fixes,
            "lenient": parsed.lenient,
        }
        return ModuleOutput(value=parsed.value, raw=result.text, format_error=parsed.format_error,
                            repaired=parsed.repaired, extra=parsed.extra, meta=meta)

    def run_examples(self, examples: Sequence[Example], progress: bool = False) -> list[ModuleOutput]:
        requests = [self.request_for(e) for e in examples]
        results = self.backend.generate(requests, progress=progress)
        if len(results) != len(requests):
            raise RuntimeError(f"backend returned {len(results)} results for {len(requests)} requests")
        return [self.output(r) for r in results]

    def run_one(self, example: Example) -> ModuleOutput:
        return self.run_examples([example])[0]


class LLMNLU(LLMModule):
    task = "nlu"

    def understand(self, ctx: TurnContext) -> ModuleOutput:
        return self.run_one(prompts.example_from_context("nlu", ctx, history=self.history))


class LLMPolicy(LLMModule):
    task = "pol"

    def next_actions(self, ctx: TurnContext) -> ModuleOutput:
        return self.run_one(prompts.example_from_context("pol", ctx, history=self.history))


class LLMNLG(LLMModule):
    task = "nlg"

    def verbalize(self, actions: list[dict], ctx: TurnContext) -> ModuleOutput:
        return self.run_one(prompts.example_from_context("nlg", ctx, actions=actions, history=self.history))


MODULE_CLASSES: dict[str, type[LLMModule]] = {"nlu": LLMNLU, "pol": LLMPolicy, "nlg": LLMNLG}


def prediction_row(example: Example, out: ModuleOutput) -> dict:
    """One line of a prediction file (``medhx score`` reads ``dialog_id``, ``uttr_id``, ``prediction``).

    A format error writes ``prediction: null`` (scored as a format error), never an invented value.
    """
    return {
        "dialog_id": example.dialog_id,
        "uttr_id": example.uttr_id,
        "prediction": None if out.format_error else out.value,
        "raw": out.raw,
        "format_error": out.format_error,
        "repaired": out.repaired,
        "extra": out.extra or None,
        "prompt_tokens": out.meta.get("prompt_tokens"),
        "completion_tokens": out.meta.get("completion_tokens"),
        "latency_s": out.meta.get("latency_s"),
    }


def predict(
    task: str,
    examples: Sequence[Example],
    backend: Backend,
    tokenizer: Any = None,
    adapter: str | None = None,
    mode: prompts.Mode = "supervised",
    retriever: Any = None,
    stats: ParseStats | None = None,
    progress: bool = True,
    **module_kwargs: Any,
) -> list[dict]:
    """Prediction-file rows for ``examples`` (one batched backend call); parse counts go to ``stats``."""
    if task not in MODULE_CLASSES:
        raise ValueError(f"unknown task {task!r}; use one of {tuple(MODULE_CLASSES)}")
    module = MODULE_CLASSES[task](backend, adapter=adapter, tokenizer=tokenizer, mode=mode, retriever=retriever,
                                  **module_kwargs)
    if stats is not None:
        module.stats = stats
    outs = module.run_examples(examples, progress=progress)
    return [prediction_row(e, o) for e, o in zip(examples, outs, strict=True)]
