"""One generation interface for every backend (vLLM server, in-process vLLM, transformers).

Prompts arrive fully rendered (chat template applied by ``models.prompts``), so the
same string reaches every backend and training: greedy outputs are comparable token
for token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


@dataclass
class GenerationRequest:
    prompt: str
    adapter: str | None = None  # LoRA module name (vLLM) / adapter name (peft); None = base model
    json_schema: dict | None = None  # structured-output constraint (NLU, POL)
    max_tokens: int = 256
    temperature: float = 0.0  # greedy by default (MediTOD's setting)
    stop: list[str] | None = None
    min_tokens: int = 0  # no end of sequence before this many tokens (0: vLLM's and transformers' default)
    ignore_eos: bool = False  # keep generating past end of sequence, up to max_tokens (speed benchmarks)


@dataclass
class GenerationResult:
    text: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    token_ids: list[int] = field(default_factory=list)
    finish_reason: str | None = None


class BackendError(RuntimeError):
    """The backend cannot serve the request (server down, unknown adapter, ...), with a clear message.

    The message says what failed (status code, which request, lengths) and never quotes a prompt or a
    model output: both are patient text, and errors end up in logs and on screens. Details go to DEBUG logging.
    """


@runtime_checkable
class Backend(Protocol):
    name: str

    def generate(self, requests: list[GenerationRequest], progress: bool = False) -> list[GenerationResult]: ...

    def close(self) -> None: ...
