"""The model boundary, faked for tests whose input is what a model answered (named as such: everything after the
model, its module, parsing, the graph and the store, is the real code)."""

from __future__ import annotations

from models.backends.base import GenerationResult


class ScriptedModel:
    """Every request is answered with :attr:`text`, the output under test."""

    name = "scripted-model"

    def __init__(self, text: str = "") -> None:
        self.text = text

    def generate(self, requests: list, progress: bool = False) -> list[GenerationResult]:
        return [GenerationResult(text=self.text, prompt_tokens=0, completion_tokens=0, latency_s=0.0)
                for _ in requests]

    def close(self) -> None:
        pass
