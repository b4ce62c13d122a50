"""``medhx config check|show FILE`` for every config kind.

An agent config (schema: :mod:`policies.agent_config`) has ``base_model``, ``backends``, one section per module
role (``nlu``, ``dst``, ``policy``,
``nlg``: typed by their kind's settings in :mod:`policies.registry`), ``session`` and ``safety``. Every level
forbids unknown keys, so a misspelt key fails at start with its path and the allowed keys instead of silently
falling back to a default. Train configs (``models.train.TrainConfig``), bench configs (``eval.bench.BenchConfig``)
and serve configs (``models.serve``) have their own schemas; ``medhx config`` recognises which one a file is.

Paths inside a config follow one rule (:mod:`agent.paths`): relative to the directory of the config file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from agent.paths import resolve_path
from policies.agent_config import check_agent_config, load_config

KINDS = ("agent", "train", "bench", "bench-speed", "serve")


def config_type(raw: dict) -> str:
    """Which schema a config mapping follows (one of :data:`KINDS`), recognised from its keys."""
    if "agent" in raw and "output_dir" in raw:
        return "bench"
    if "nlu" in raw or "policy" in raw or "nlg" in raw:
        return "agent"
    if {"peft", "train", "tasks", "adapter_name"} & set(raw):
        return "train"
    if {"bench_speed", "probe", "hf", "hf_batched", "constrained", "live"} & set(raw):
        return "bench-speed"
    return "serve"


def validate(path: str | Path, kind: str | None = None) -> tuple[str, dict]:
    """``(type, config with defaults filled in and paths resolved)``; raises ValueError naming what is wrong. Each
    type is loaded by its own loader, the one its command uses, so what passes here is what the command runs."""
    p = resolve_path(path)
    raw = yaml.safe_load(p.read_text())
    if not isinstance(raw, dict):
        raise ValueError(f"{p}: a config is a YAML mapping")
    kind = kind or config_type(raw)
    if kind == "agent":
        return kind, check_agent_config(load_config(p)).model_dump()
    if kind == "bench":
        from eval.bench import load_config as load_bench

        out = load_bench(p).model_dump()
        if isinstance(out["agent"], dict):
            out["agent"] = check_agent_config(out["agent"]).model_dump()
        return kind, out
    if kind == "bench-speed":
        from eval.bench_speed import load_bench_config

        return kind, load_bench_config(p)
    if kind == "train":
        from models.train import load_config as load_train

        return kind, load_train(p).model_dump()
    if kind == "serve":
        from models.serve import DEFAULTS

        section = raw.get("serve", raw)
        unknown = sorted(set(section) - set(DEFAULTS))
        if unknown:
            raise ValueError(f"{p}: unknown serve config keys {unknown} (allowed: {sorted(DEFAULTS)})")
        return kind, {**DEFAULTS, **section}
    raise ValueError(f"unknown config type {kind!r}; use one of {', '.join(KINDS)}")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("config", help="validate any config (agent, train, bench, bench-speed, serve) or print it with defaults")
    csub = p.add_subparsers(dest="config_command", required=True)
    for name, help_ in (("check", "validate; exit 2 with the key path on an error"),
                        ("show", "print the config with every default filled in")):
        c = csub.add_parser(name, help=help_)
        c.add_argument("file")
        c.add_argument("--type", choices=KINDS, help="default: recognised from the keys")
        c.set_defaults(func=_cmd_config)


def _cmd_config(args: argparse.Namespace) -> int:
    kind, cfg = validate(args.file, args.type)
    if args.config_command == "check":
        print(f"{args.file}: valid {kind} config")
    else:
        print(yaml.safe_dump(json.loads(json.dumps(cfg, default=str)), sort_keys=False))
    return 0
