"""The ``simulator:`` section of a simulate config, typed by its ``kind``, and the factory that builds one
simulator per interview (see :mod:`eval.runs.simulators`)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.core.paths import ConfigPath, ModelRef, resolve_against, resolve_paths, validation_problems
from eval.runs.agenda_simulator import AgendaSimulator
from eval.runs.cases import CaseCard
from eval.runs.lay_lexicon import DEFAULT_LEXICON, load_lexicon
from eval.runs.llm_simulator import ClinicalJudge, Judge, LLMClient, LLMJudge, LLMSimulator
from eval.runs.patient_protocol import PatientSimulator


class AgendaSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["agenda"] = "agenda"
    lexicon: ConfigPath | None = None  # default configs/simulate/lay_phrases.yaml
    volunteer_p: float = Field(default=0.3, ge=0, le=1, description="chance of volunteering one more attribute")
    short_answer_p: float = Field(default=0.3, ge=0, le=1, description="chance of a bare 'No.' to all-denied questions")


class LLMSimulatorSettings(AgendaSettings):
    kind: Literal["llm"] = "llm"  # type: ignore[assignment]
    backend: dict[str, Any] = Field(description="a backend spec, as under an agent config's backends")
    tokenizer: ModelRef | None = None  # default: the backend's model (or the embedded SmolLM2)
    adapter: str | None = None
    max_tokens: int = Field(default=80, ge=1)
    temperature: float = Field(default=0.7, ge=0)
    guided: bool = True
    judge: Literal["clinical", "llm", "none"] = "clinical"
    on_invention: Literal["agenda", "keep"] = "agenda"
    retries: int = Field(default=1, ge=0)


class CustomSimulatorSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str = Field(pattern=r"^[\w.]+:\w+$")
    options: dict[str, Any] = {}


SimulatorSettings = AgendaSettings | LLMSimulatorSettings | CustomSimulatorSettings


def parse_simulator_settings(raw: Any, base: Path) -> SimulatorSettings:
    """A ``simulator:`` section by its ``kind``, paths resolved against ``base`` (the config file's directory)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ValueError("simulator: expected a mapping with a 'kind'")
    kind = raw.get("kind", "agenda")
    model: type[BaseModel] = {"agenda": AgendaSettings, "llm": LLMSimulatorSettings}.get(kind, CustomSimulatorSettings)
    data = resolve_paths(model, raw, base)
    if model is LLMSimulatorSettings and isinstance(data.get("backend"), dict):
        spec = dict(data["backend"])
        if isinstance(spec.get("launch"), str):
            spec["launch"] = resolve_against(spec["launch"], base)
        for key in ("model", "tokenizer"):
            if isinstance(spec.get(key), str):
                spec[key] = resolve_against(spec[key], base, exists_only=True)
        data["backend"] = spec
    try:
        return model.model_validate(data)  # type: ignore[return-value]
    except ValidationError as exc:
        raise ValueError(f"{validation_problems(exc, 'simulator')} (kinds: agenda, llm, or a dotted path "
                         "'pkg.mod:Class')") from None


class SimulatorFactory:
    """Builds one simulator per interview; holds what interviews share (lexicon, LLM client, judge)."""

    def __init__(self, settings: SimulatorSettings):
        self.settings = settings
        self.client: LLMClient | None = None
        self.judge: Judge | None = None
        self._custom: Callable[..., PatientSimulator] | None = None
        if isinstance(settings, CustomSimulatorSettings):
            module, _, attr = settings.kind.partition(":")
            try:
                self._custom = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError) as exc:
                raise ValueError(
                    f"simulator kind {settings.kind!r}: cannot import {attr!r} from {module!r}: {exc}"
                ) from None
            return
        self.lexicon = load_lexicon(settings.lexicon or DEFAULT_LEXICON)
        if isinstance(settings, LLMSimulatorSettings):
            from models.backends import make_backend
            from models.modules import resolve_tokenizer

            backend = make_backend(settings.backend)
            try:
                tokenizer = resolve_tokenizer(settings.tokenizer or settings.backend.get("tokenizer")
                                              or settings.backend.get("model") or "smollm2", backend)
            except Exception:
                backend.close()
                raise
            self.client = LLMClient(backend, tokenizer, settings.adapter, settings.max_tokens, settings.temperature)
            if settings.judge == "clinical":
                self.judge = ClinicalJudge()
            elif settings.judge == "llm":
                self.judge = LLMJudge(self.client, self.lexicon)

    def new(self, card: CaseCard, seed: int) -> PatientSimulator:
        s = self.settings
        if isinstance(s, CustomSimulatorSettings):
            assert self._custom is not None
            sim = self._custom(card=card, seed=seed, **s.options)
            if not isinstance(sim, PatientSimulator):
                raise TypeError(f"simulator kind {s.kind!r} built a {type(sim).__name__} with no respond(doctor)")
            return sim
        if isinstance(s, LLMSimulatorSettings):
            assert self.client is not None
            return LLMSimulator(card, self.client, self.lexicon, seed, s.guided, self.judge, s.on_invention, s.retries,
                                volunteer_p=s.volunteer_p, short_answer_p=s.short_answer_p)
        return AgendaSimulator(card, self.lexicon, seed, s.volunteer_p, s.short_answer_p)

    def describe(self) -> dict:
        return self.settings.model_dump(mode="json")

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
