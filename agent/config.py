"""Typed configuration: the agent config's schema, and ``medhx config check|show FILE`` for every config kind.

An agent config has ``base_model``, ``backends``, one section per module role (``nlu``, ``dst``, ``policy``,
``nlg``: typed by their kind's settings in :mod:`policies.registry`), ``session`` and ``safety``. Every level
forbids unknown keys, so a misspelt key fails at start with its path and the allowed keys instead of silently
falling back to a default. Train configs (``models.train.TrainConfig``), bench configs (``eval.bench.BenchConfig``)
and serve configs (``models.serve``) have their own schemas; ``medhx config`` recognises which one a file is.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent import safety
from agent.paths import resolve_path
from policies.registry import DEFAULT_DST, check_section


class SessionSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    store: Literal["sqlite", "postgres"] = "sqlite"
    dir: str = ".medhx"  # sqlite file: <dir>/sessions.sqlite
    postgres_url: str | None = None  # or $MEDHX_POSTGRES_URL
    max_turns: int = Field(default=40, ge=2)  # doctor turns, greeting and closing included
    review: bool = False  # a clinician approves / edits each doctor turn before it is sent
    turn_deadline_s: float = Field(default=60.0, gt=0)  # a module call past this falls back for the turn


class SafetySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    red_flags: str | None = str(safety.DEFAULT_RULES)  # null turns the red-flag rules off


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    base_model: str = "smollm2"
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


def check_agent_config(config: dict) -> AgentConfig:
    """The agent config validated; errors name the key path and what is allowed."""
    try:
        return AgentConfig.model_validate(config)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(x) for x in e['loc']) or '(top level)'}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"agent config: {problems} (top-level keys: {sorted(AgentConfig.model_fields)})") from None


def config_type(raw: dict) -> str:
    """Which schema a config mapping follows: ``agent``, ``train``, ``bench`` or ``serve``."""
    if "agent" in raw and "output_dir" in raw:
        return "bench"
    if "nlu" in raw or "policy" in raw or "nlg" in raw:
        return "agent"
    if {"peft", "train", "tasks", "adapter_name"} & set(raw):
        return "train"
    return "serve"


def validate(path: str | Path, kind: str | None = None) -> tuple[str, dict]:
    """``(type, config with defaults filled in)``; raises ValueError naming what is wrong."""
    p = resolve_path(path)
    raw = yaml.safe_load(p.read_text())
    if not isinstance(raw, dict):
        raise ValueError(f"{p}: a config is a YAML mapping")
    kind = kind or config_type(raw)
    if kind == "agent":
        return kind, check_agent_config(raw).model_dump()
    if kind == "bench":
        from eval.bench import BenchConfig

        try:
            cfg = BenchConfig.model_validate(raw)
        except ValidationError as exc:
            raise ValueError(f"{p}: {exc}") from None
        out = cfg.model_dump()
        if isinstance(out["agent"], dict):
            out["agent"] = check_agent_config(out["agent"]).model_dump()
        return kind, out
    if kind == "train":
        from models.train import TrainConfig

        try:
            return kind, TrainConfig.model_validate(raw).model_dump()
        except ValidationError as exc:
            raise ValueError(f"{p}: {exc}") from None
    if kind == "serve":
        from models.serve import DEFAULTS

        section = raw.get("serve", raw)
        unknown = sorted(set(section) - set(DEFAULTS))
        if unknown:
            raise ValueError(f"{p}: unknown serve config keys {unknown} (allowed: {sorted(DEFAULTS)})")
        return kind, {**DEFAULTS, **section}
    raise ValueError(f"unknown config type {kind!r}; use agent, train, bench or serve")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="validate a config (agent, train, bench, serve) or print it with defaults")
    csub = p.add_subparsers(dest="config_command", required=True)
    for name, help_ in (("check", "validate; exit 2 with the key path on an error"),
                        ("show", "print the config with every default filled in")):
        c = csub.add_parser(name, help=help_)
        c.add_argument("file")
        c.add_argument("--type", choices=("agent", "train", "bench", "serve"), help="default: recognised from the keys")
        c.set_defaults(func=_cmd_config)


def _cmd_config(args: argparse.Namespace) -> int:
    kind, cfg = validate(args.file, args.type)
    if args.config_command == "check":
        print(f"{args.file}: valid {kind} config")
    else:
        print(yaml.safe_dump(json.loads(json.dumps(cfg, default=str)), sort_keys=False))
    return 0
