"""The one registry of dialogue-module kinds: NLU, DST (state tracker), policy and NLG.

Every section of an agent config (``nlu:``, ``dst:``, ``policy:``, ``nlg:``) names a ``kind``:

- a built-in kind, registered below with :func:`register`;
- or a researcher's own class by dotted path, ``kind: mypkg.mymodule:MyPolicy``: it is imported, called with the
  section's other keys as keyword arguments, and must speak the role's protocol (:mod:`agent.core.protocol`), so a new
  module plugs in with no change to medhx.

Model kinds share backends: a backend named by several modules is built once (``Builder.backend``), its ``model``
defaulting to the config's ``base_model``. A kind's path settings are typed :data:`agent.core.paths.ConfigPath`, so
:func:`resolve_section` makes them relative to the config file's directory (the one rule, :mod:`agent.core.paths`);
builders receive them resolved.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.core.bounds import MAX_VALUE_CHARS
from agent.core.ontology import Vocabulary, default_vocabulary
from agent.core.paths import REPO_ROOT, ConfigPath, ModelRef, resolve_paths, validation_problems
from agent.core.protocol import DST, NLG, NLU, Policy
from agent.core.tracker import RuleTracker

ROLES = ("nlu", "dst", "policy", "nlg")
PROTOCOLS: dict[str, type] = {"nlu": NLU, "dst": DST, "policy": Policy, "nlg": NLG}
TASK_OF = {"nlu": "nlu", "policy": "pol", "nlg": "nlg"}  # the MediTOD task a model module of a role is trained on
LLM_KEYS = ("adapter", "tokenizer", "mode", "k", "max_tokens", "history", "constrained", "max_prompt_tokens",
            "schema_max_items", "schema_max_length")
DEFAULT_DST = {"kind": "rule", "list_merge": "replace"}

BuildFn = Callable[["Builder", dict], Any]
_KINDS: dict[str, dict[str, BuildFn]] = {role: {} for role in ROLES}


class Settings(BaseModel):
    """A kind's settings: an unknown or misspelt key is an error naming the allowed keys (a typo in a safety
    setting must not turn it off silently)."""

    model_config = ConfigDict(extra="forbid")
    kind: str


DEFAULT_DATA = REPO_ROOT / "data" / "meditod"


class Exemplars(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data: ConfigPath | None = None  # default: the bundled data/meditod
    split: str = "train"
    encoder: ConfigPath | None = None  # default: the packaged all-MiniLM-L6-v2


class LLMSettings(Settings):
    """An LLM module (``models.modules``) on a backend named under ``backends``."""

    backend: str
    adapter: str | None = None  # LoRA module name on the backend; None = the base model
    tokenizer: ModelRef | None = None
    mode: str = Field(default="supervised", pattern="^(supervised|icl)$")
    k: int | None = Field(default=None, ge=1)  # in-context exemplars
    max_tokens: int | None = Field(default=None, ge=1)
    history: int | None = Field(default=None, ge=0)
    constrained: bool | None = None  # JSON-Schema-constrained decoding (NLU, POL)
    max_prompt_tokens: int | None = Field(default=None, ge=1)
    schema_max_items: int | None = None
    schema_max_length: int | None = Field(default=None, ge=1, le=MAX_VALUE_CHARS)  # parsing bounds every value at that
    exemplars: Exemplars | None = None


class Grounding(BaseModel):
    grounding: bool | None = None  # default: on for every kind but gold
    known_values_only: bool | None = None  # grounding's earlier name


class ClinicalSettings(Settings, Grounding):
    lexicon: ConfigPath | None = None  # default configs/nlu_lexicon.yaml
    second_stage: bool = True  # symptoms the lexicon misses, matched by meaning (policies/nlu/concepts.py)
    lay_terms: bool = True  # the HPO lay synonyms and drug-class names in the lexicon (agent/core/lay_terms.py)
    concept_threshold: float = Field(default=0.64, gt=0, le=1)  # cosine similarity the second stage needs


class ModelNLUSettings(LLMSettings, Grounding):
    pass


class EnsembleSettings(LLMSettings, Grounding):
    lexicon: ConfigPath | None = None
    model_timeout_s: float | None = Field(default=20.0, gt=0)  # then the clinical frames stand alone


class GoldSettings(Settings, Grounding):
    data: ConfigPath | None = None  # default: the bundled data/meditod


class RuleTrackerSettings(Settings):
    list_merge: str = Field(default="replace", pattern="^(replace|union)$")


class QuestionnaireSettings(Settings):
    questionnaire: ConfigPath | None = None  # default configs/questionnaire.yaml


class HybridSettings(LLMSettings):
    questionnaire: ConfigPath | None = None


class TemplateSettings(Settings):
    lexicon: ConfigPath | None = None  # default configs/nlg_lexicon.yaml


class ModelNLGSettings(LLMSettings):
    lexicon: ConfigPath | None = None  # the fallback template NLG's
    fallback: bool = True


_SETTINGS: dict[str, dict[str, type[Settings]]] = {role: {} for role in ROLES}


def register(role: str, kind: str, settings: type[Settings]) -> Callable[[BuildFn], BuildFn]:
    """Decorator: ``fn(builder, section) -> module`` builds ``kind`` for ``role``; ``settings`` types its section."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; use one of {ROLES}")

    def wrap(fn: BuildFn) -> BuildFn:
        _KINDS[role][kind] = fn
        _SETTINGS[role][kind] = settings
        return fn

    return wrap


def check_section(role: str, section: Any) -> dict:
    """A role's section validated against its kind's settings, defaults filled in (dotted-path kinds: as given;
    their class signature checks them when built)."""
    if not isinstance(section, dict) or "kind" not in section:
        raise ValueError(f"config: section {role!r} with a 'kind' is required")
    kind = section["kind"]
    if isinstance(kind, str) and ":" in kind:
        return dict(section)
    if kind not in _SETTINGS[role]:
        raise ValueError(f"config: {role} kind {kind!r} unknown; use one of {kinds(role)} or a dotted path "
                         "'package.module:Class'")
    model = _SETTINGS[role][kind]
    try:
        return model.model_validate(section).model_dump()
    except ValidationError as exc:
        allowed = sorted(model.model_fields)
        raise ValueError(f"config: {validation_problems(exc, role)} (allowed keys for {role} kind {kind!r}: "
                         f"{allowed})") from None


def resolve_section(role: str, section: Any, base: Path) -> Any:
    """A role's raw section with its kind's path settings resolved against ``base`` (nothing else changes;
    dotted-path kinds are the researcher's own and keep their settings as written)."""
    if not isinstance(section, dict) or section.get("kind") not in _SETTINGS.get(role, {}):
        return section
    return resolve_paths(_SETTINGS[role][section["kind"]], section, base)


def kinds(role: str) -> tuple[str, ...]:
    return tuple(_KINDS[role])


@dataclass
class Modules:
    """The four modules of an agent, the NLU grounding settings, and what to close when done."""

    nlu: NLU
    dst: DST
    policy: Policy
    nlg: NLG
    nlu_vocabulary: Vocabulary | None = None  # set: ungrounded NLU values are set aside (agent.core.grounding)
    nlu_ground_words: bool = False  # free-text values must also occur in the patient's words
    closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        for close in self.closers:
            close()
        self.closers.clear()


class Builder:
    """Builds the modules of one agent config; holds the backends they share."""

    def __init__(self, config: dict):
        self.config = config
        self.backends: dict[str, Any] = {}
        self.closers: list[Callable[[], None]] = []

    def section(self, role: str) -> dict:
        cfg = self.config.get(role)
        if cfg is None and role == "dst":
            return dict(DEFAULT_DST)
        if not isinstance(cfg, dict) or "kind" not in cfg:
            raise ValueError(f"config: section {role!r} with a 'kind' is required")
        return cfg

    def build(self, role: str) -> Any:
        cfg = self.section(role)
        kind = check_section(role, cfg)["kind"]
        if ":" in kind:
            module = _custom(role, kind, {k: v for k, v in cfg.items() if k != "kind"})
        else:
            module = _KINDS[role][kind](self, cfg)
        if not isinstance(module, PROTOCOLS[role]):
            raise TypeError(f"config: {role} kind {kind!r} built a {type(module).__name__}, which does not speak the "
                            f"{PROTOCOLS[role].__name__} protocol (agent.core.protocol)")
        return module

    def backend(self, name: str | None) -> tuple[Any, dict]:
        from models.backends import make_backend

        specs = self.config.get("backends") or {}
        if name not in specs:
            raise ValueError(f"config: a model module names backend {name!r}, not defined under 'backends' "
                             f"({sorted(specs)})")
        spec = dict(specs[name])
        if name not in self.backends:
            kwargs = {k: v for k, v in spec.items() if k != "tokenizer"}  # the tokenizer is the modules'
            if kwargs.get("kind") in ("hf", "vllm-offline") and self.config.get("base_model"):
                kwargs.setdefault("model", self.config["base_model"])
            self.backends[name] = make_backend(kwargs)
            self.closers.append(self.backends[name].close)
        return self.backends[name], spec

    def llm(self, role: str) -> Any:
        """The LLM module (``models.modules``) of a role's section: backend, adapter, prompt mode, exemplars."""
        from models import modules

        cfg = self.section(role)  # validated by build(), which calls this
        backend, spec = self.backend(cfg.get("backend"))
        kwargs = {k: cfg[k] for k in LLM_KEYS if k in cfg}  # as written: an explicit null (history) means something
        if "tokenizer" not in kwargs and (spec.get("tokenizer") or spec.get("kind") == "vllm-server"):
            kwargs["tokenizer"] = spec.get("tokenizer") or self.config.get("base_model") or "smollm2"
        if kwargs.get("mode") == "icl":
            kwargs["retriever"] = exemplar_index(TASK_OF[role], cfg)
        cls = {"nlu": modules.LLMNLU, "policy": modules.LLMPolicy, "nlg": modules.LLMNLG}[role]
        return cls(backend, **kwargs)


def _custom(role: str, kind: str, settings: dict) -> Any:
    module_name, _, attr = kind.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"config: {role} kind {kind!r}: cannot import {attr!r} from {module_name!r}: {exc}") from None
    try:
        return factory(**settings)
    except TypeError as exc:
        raise ValueError(f"config: {role} kind {kind!r} rejected its settings {sorted(settings)}: {exc}") from None


def exemplar_index(task: str, cfg: dict) -> Any:
    """Exemplar index for the in-context format: ``exemplars: {data: DIR, split: train, encoder: DIR}``."""
    from agent.core.data import load_dialogues
    from models.retrieval import ExemplarIndex

    ex = cfg.get("exemplars") or {}
    dialogues = load_dialogues(Path(ex.get("data") or DEFAULT_DATA), ex.get("split", "train"))
    return ExemplarIndex.build(dialogues, task, history=cfg.get("history", 4), encoder_path=ex.get("encoder"))


def build_modules(config: dict) -> Modules:
    """NLU, DST, policy and NLG of an agent config, with the NLU grounding the config asks for.

    Grounding (agent.core.grounding) is on for every NLU kind but the gold oracle unless ``nlu.grounding: false``
    (``known_values_only`` is its earlier name): head values must resolve in the vocabulary for every kind, free
    text must occur in the patient's words for a bare model (the clinical NLU takes its values from its lexicon,
    and the ensemble grounds its model part itself)."""
    builder = Builder(config)
    try:
        nlu = builder.build("nlu")
        modules = Modules(nlu=nlu, dst=builder.build("dst"), policy=builder.build("policy"), nlg=builder.build("nlg"),
                          closers=builder.closers)
    except Exception:
        for close in builder.closers:
            close()
        raise
    nlu_cfg = builder.section("nlu")
    grounding = nlu_cfg.get("grounding")
    grounding = nlu_cfg.get("known_values_only") if grounding is None else grounding
    if grounding if grounding is not None else nlu_cfg["kind"] != "gold":
        modules.nlu_vocabulary = default_vocabulary()
        modules.nlu_ground_words = nlu_cfg["kind"] == "model"
    return modules


# --------------------------------------------------------------------------- built-in kinds


def _lexicon(cfg: dict) -> Any:
    from policies.nlu.lexicon import DEFAULT_LEXICON, load_lexicon

    return load_lexicon(Path(cfg["lexicon"]) if cfg.get("lexicon") else DEFAULT_LEXICON,
                        lay_terms=cfg.get("lay_terms", True))


@register("nlu", "clinical", ClinicalSettings)
def _clinical(b: Builder, cfg: dict) -> NLU:
    from policies.nlu.clinical import ClinicalNLU

    return ClinicalNLU(_lexicon(cfg), second_stage=cfg.get("second_stage", True),
                       concept_threshold=cfg.get("concept_threshold", 0.64))


@register("nlu", "model", ModelNLUSettings)
def _nlu_model(b: Builder, cfg: dict) -> NLU:
    return b.llm("nlu")


@register("nlu", "ensemble", EnsembleSettings)
def _ensemble(b: Builder, cfg: dict) -> NLU:
    from policies.nlu.clinical import ClinicalNLU
    from policies.nlu.ensemble import EnsembleNLU

    return EnsembleNLU(b.llm("nlu"), ClinicalNLU(_lexicon(cfg)), model_timeout_s=cfg.get("model_timeout_s", 20.0))


@register("nlu", "gold", GoldSettings)
def _gold(b: Builder, cfg: dict) -> NLU:
    from policies.nlu.gold import GoldNLU

    return GoldNLU.from_dir(Path(cfg.get("data") or DEFAULT_DATA))


@register("dst", "rule", RuleTrackerSettings)
def _rule_tracker(b: Builder, cfg: dict) -> DST:
    return RuleTracker(cfg.get("list_merge", "replace"))


def make_questionnaire(cfg: dict) -> Policy:
    from policies.questionnaire import DEFAULT_CONFIG, QuestionnairePolicy, load_questionnaire_config

    path = Path(cfg["questionnaire"]) if cfg.get("questionnaire") else DEFAULT_CONFIG
    return QuestionnairePolicy(load_questionnaire_config(path))


@register("policy", "questionnaire", QuestionnaireSettings)
def _questionnaire(b: Builder, cfg: dict) -> Policy:
    return make_questionnaire(cfg)


@register("policy", "model", LLMSettings)
def _policy_model(b: Builder, cfg: dict) -> Policy:
    from policies.model import ModelPolicy

    return ModelPolicy(b.llm("policy"))


@register("policy", "hybrid", HybridSettings)
def _hybrid(b: Builder, cfg: dict) -> Policy:
    from policies.hybrid import HybridPolicy
    from policies.model import ModelPolicy

    return HybridPolicy(ModelPolicy(b.llm("policy")), make_questionnaire(cfg))


def make_template_nlg(cfg: dict) -> NLG:
    from policies.template_nlg import DEFAULT_LEXICON, TemplateNLG, load_lexicon

    return TemplateNLG(load_lexicon(Path(cfg["lexicon"]) if cfg.get("lexicon") else DEFAULT_LEXICON))


@register("nlg", "template", TemplateSettings)
def _template(b: Builder, cfg: dict) -> NLG:
    return make_template_nlg(cfg)


@register("nlg", "model", ModelNLGSettings)
def _nlg_model(b: Builder, cfg: dict) -> NLG:
    """A model NLG falls back to the template NLG on an empty or unsafe utterance unless ``fallback: false``."""
    from policies.nlg_fallback import FallbackNLG

    model = b.llm("nlg")
    return FallbackNLG(model, make_template_nlg(cfg)) if cfg.get("fallback", True) else model
