"""Policies and NLG modules from config dicts (the ``policy`` / ``nlg`` sections of an agent YAML).

``policy``: ``{kind: questionnaire | model | hybrid, questionnaire: <yaml path>?}``;
``nlg``: ``{kind: template | model, lexicon: <yaml path>?, fallback: true}``: a model NLG falls
back to the template NLG unless ``fallback: false``. Model kinds receive the
already-built LLM module (the graph builds backends); other keys of the section (backend,
adapter, ...) belong to that builder and are ignored here.
"""

from __future__ import annotations

from pathlib import Path

from agent.paths import REPO_ROOT
from policies.base import NLG, Policy
from policies.hybrid import HybridPolicy
from policies.model import ModelPolicy
from policies.nlg_fallback import FallbackNLG
from policies.questionnaire import DEFAULT_CONFIG, QuestionnairePolicy, load_questionnaire_config
from policies.template_nlg import DEFAULT_LEXICON, TemplateNLG, load_lexicon

POLICY_KINDS = ("questionnaire", "model", "hybrid")
NLG_KINDS = ("template", "model")


def _path(p: str | None, default: Path) -> Path:
    if p is None:
        return default
    path = Path(p)
    return path if path.is_absolute() or path.exists() else REPO_ROOT / path


def make_questionnaire(cfg: dict) -> QuestionnairePolicy:
    return QuestionnairePolicy(load_questionnaire_config(_path(cfg.get("questionnaire"), DEFAULT_CONFIG)))


def make_policy(cfg: dict, llm_policy: Policy | None = None) -> Policy:
    kind = cfg.get("kind")
    if kind not in POLICY_KINDS:
        raise ValueError(f"policy config: kind {kind!r} unknown; use one of {POLICY_KINDS}")
    if kind == "questionnaire":
        return make_questionnaire(cfg)
    if llm_policy is None:
        raise ValueError(f"policy config: kind {kind!r} needs the LLM policy module")
    if kind == "model":
        return ModelPolicy(llm_policy)
    return HybridPolicy(ModelPolicy(llm_policy), make_questionnaire(cfg))


def make_nlg(cfg: dict, llm_nlg: NLG | None = None) -> NLG:
    kind = cfg.get("kind")
    if kind not in NLG_KINDS:
        raise ValueError(f"nlg config: kind {kind!r} unknown; use one of {NLG_KINDS}")
    template = TemplateNLG(load_lexicon(_path(cfg.get("lexicon"), DEFAULT_LEXICON)))
    if kind == "template":
        return template
    if llm_nlg is None:
        raise ValueError("nlg config: kind 'model' needs the LLM NLG module")
    return FallbackNLG(llm_nlg, template) if cfg.get("fallback", True) else llm_nlg
