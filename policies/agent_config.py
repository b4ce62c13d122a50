"""The agent config: which module of each role (by registry kind, :mod:`policies.registry`), the session store
and turn budget, and the safety rules; loaded from YAML with its paths resolved by the one rule of
:mod:`agent.core.paths` (relative to the config file's directory).

Every level forbids unknown keys, so a misspelt key (``known_values_onyl``) fails at start with its path and the
allowed keys instead of silently turning a safety setting off. It lives beside the registry (not in the application)
because ``medhx bench`` and ``medhx simulate`` build agents from it too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent.core import safety
from agent.core.paths import (
    REPO_ROOT,
    ConfigPath,
    ModelRef,
    read_config_file,
    resolve_against,
    resolve_paths,
    validation_problems,
)
from models.serve import check_serve_config
from policies.registry import DEFAULT_DST, ROLES, check_section, resolve_section

DEFAULT_CONFIG = REPO_ROOT / "configs" / "default.yaml"


class SessionSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    store: Literal["sqlite", "postgres"] = "sqlite"
    dir: ConfigPath | None = (
        None  # sqlite file: <dir>/sessions.sqlite; None: the per-user data dir (agent.app.checkpoints)
    )
    postgres_url: str | None = None  # or $MEDHX_POSTGRES_URL
    pool_size: int = Field(default=8, ge=1)  # PostgreSQL connections kept by one process (psycopg_pool)
    max_turns: int = Field(default=40, ge=2)  # doctor turns, greeting and closing included
    review: bool = False  # a clinician approves / edits each doctor turn before it is sent
    turn_deadline_s: float = Field(default=60.0, gt=0)  # a module call past this falls back for the turn


class SafetySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    red_flags: ConfigPath | None = str(safety.DEFAULT_RULES)  # null turns the red-flag rules off


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    base_model: ModelRef = "smollm2"
    backends: dict[str, dict[str, Any]] = {}
    nlu: dict[str, Any]
    dst: dict[str, Any] = DEFAULT_DST
    policy: dict[str, Any]
    nlg: dict[str, Any]
    session: SessionSettings = SessionSettings()
    safety: SafetySettings = SafetySettings()

    @field_validator("nlu", "dst", "policy", "nlg", mode="before")
    @classmethod
    def _section(cls, value: Any, info: Any) -> dict:
        return check_section(info.field_name, value)

    @field_validator("backends")
    @classmethod
    def _backends(cls, value: dict) -> dict:
        for name, spec in value.items():
            if not isinstance(spec, dict) or "kind" not in spec:
                raise ValueError(f"backend {name!r} needs a 'kind' (vllm-server | vllm-offline | hf)")
        return value


def resolve_agent_paths(config: dict, base: Path) -> dict:
    """The raw agent config with every path it names made relative to ``base`` (the config file's directory):
    top-level and module settings by their types, and each backend's ``launch`` (a serve config file),
    ``model`` and ``tokenizer`` (a local directory when one exists there, else a model id)."""
    out = resolve_paths(AgentConfig, config, base)
    for role in ROLES:
        if role in out:
            out[role] = resolve_section(role, out[role], base)
    backends = {}
    for name, spec in (out.get("backends") or {}).items():
        if isinstance(spec, dict):
            spec = dict(spec)
            if isinstance(spec.get("launch"), str):
                spec["launch"] = resolve_against(spec["launch"], base)
            elif isinstance(spec.get("launch"), dict):  # an inline serve config: its adapter dirs are ours to resolve
                spec["launch"] = check_serve_config(spec["launch"], base).model_dump()
            for key in ("model", "tokenizer"):
                if isinstance(spec.get(key), str):
                    spec[key] = resolve_against(spec[key], base, exists_only=True)
        backends[name] = spec
    if backends:
        out["backends"] = backends
    return out


def load_config(path: str | Path) -> dict:
    """An agent config file, its paths resolved against the file's directory."""
    config, base = read_config_file(path)
    if not config:
        raise ValueError(f"{path}: a config is a YAML mapping")
    return resolve_agent_paths(config, base)


def config_for_cli(path: str | None) -> dict:
    """The agent config named on the command line, else ``configs/default.yaml``."""
    return load_config(path or DEFAULT_CONFIG)


def check_agent_config(config: dict) -> AgentConfig:
    """The agent config validated; errors name the key path and what is allowed."""
    try:
        return AgentConfig.model_validate(config)
    except ValidationError as exc:
        raise ValueError(f"agent config: {validation_problems(exc)} (top-level keys: "
                         f"{sorted(AgentConfig.model_fields)})") from None
