"""``medhx config check|show FILE`` for every config kind.

An agent config (schema: :mod:`policies.agent_config`) has ``base_model``, ``backends``, one section per module
role (``nlu``, ``dst``, ``policy``,
``nlg``: typed by their kind's settings in :mod:`policies.registry`), ``session`` and ``safety``. Every level
forbids unknown keys, so a misspelt key fails at start with its path and the allowed keys instead of silently
falling back to a default. Train configs (``models.train.TrainConfig``), bench configs (``eval.runs.bench.BenchConfig``)
and serve configs (``models.serve``) have their own schemas; ``medhx config`` recognises which one a file is by the
keys only that kind has (:data:`MARKS`).

Paths inside a config follow one rule (:mod:`agent.core.paths`): relative to the directory of the config file.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from pathlib import Path

import yaml

from agent.core.paths import load_typed, read_config_file, resolve_path
from policies.agent_config import check_agent_config, load_config

Loader = Callable[[Path], dict]
"""Validates one config file of a kind the layers above own (the console's ``ui``, plugged in by ``agent.cli``) and
returns it with defaults filled in."""

MARKS: dict[str, frozenset[str]] = {
    "agent": frozenset({"nlu", "dst", "policy", "nlg", "backends"}),  # the module sections
    "train": frozenset({"peft", "train", "adapter_name", "train_split", "valid_split", "quantization"}),
    "bench": frozenset({"chunk", "encoder", "match", "llm_match", "paper_reference"}),  # how predictions are scored
    "bench-speed": frozenset({"bench_speed", "probe", "hf", "hf_batched", "constrained", "live"}),  # the engines
    "serve": frozenset({"serve"}),  # the serve settings under one key (else: see _SHAPES)
    "simulate": frozenset({"agents", "modes", "seeds", "workers", "keep_sessions", "meditod"}),
    "load-bench": frozenset({"clinic", "stress", "interviews", "processes"}),  # clinic pace, the closed loop
    "storage-bench": frozenset({"turns", "case_ids", "baseline"}),  # bytes per interview against its length
    "ui": frozenset({"ui"}),
    "presentation": frozenset({"triggers", "characterise", "red_flag_screen", "associated", "considerations",
                               "risk_factors"}),
}
"""Each config kind's marks: top-level keys that kind alone has, so any one of them names it. No key marks two
kinds (tests/test_config.py checks), and a key that several kinds share (``agent``, ``output_dir``, ``tasks``,
``stores``) or that a data file has too (a case card's ``domain``, ``id``, ``title``) is no mark."""

KINDS = tuple(MARKS)


def _serve_shape(keys: set[str]) -> bool:
    from models.serve import ServeConfig

    return keys <= set(ServeConfig.model_fields)


_SHAPES: dict[str, Callable[[set[str]], bool]] = {
    "bench": lambda keys: {"agent", "output_dir"} <= keys,  # its two required keys
    "train": lambda keys: "tasks" in keys and "agent" not in keys,  # tasks to train, no agent to run
    "serve": _serve_shape,  # nothing but serve settings at top level (an empty file included)
}
"""How a config with no mark is recognised: the kinds whose every key may be one another kind has too (a bench
config needs only ``agent`` and ``output_dir``; a train config, a serve config have defaults for every key)."""


def config_type(raw: dict) -> str:
    """Which schema a config mapping follows (one of :data:`KINDS`): the one kind whose :data:`MARKS` it has; a
    mapping with no mark, the one kind whose shape (:data:`_SHAPES`) it has. No kind, or several, is an error that
    names the keys it read and asks for ``--type``."""
    keys = set(raw)
    found = {kind: f"keys {sorted(keys & marks)}" for kind, marks in MARKS.items() if keys & marks}
    if not found:
        found = {kind: "its shape" for kind, shape in _SHAPES.items() if shape(keys)}
    if len(found) == 1:
        return next(iter(found))
    types = f"name the type with --type ({', '.join(KINDS)})"
    if found:
        raise ValueError(f"the config has the marks of several medhx config types: "
                         f"{'; '.join(f'{kind} ({why})' for kind, why in found.items())}; {types}")
    raise ValueError(f"keys {sorted(keys)[:8]} match no medhx config type (a lexicon or rules file is data, not a "
                     f"config); {types}")


def validate(
    path: str | Path, kind: str | None = None, loaders: Mapping[str, Loader] | None = None
) -> tuple[str, dict]:
    """``(type, config with defaults filled in and paths resolved)``; raises ValueError naming what is wrong. Each
    type is loaded by its own loader, the one its command uses, so what passes here is what the command runs.
    ``loaders``: the kinds of the layers above (``ui``), which this module may not import."""
    p = resolve_path(path)
    raw, _ = read_config_file(p)
    kind = kind or config_type(raw)
    if kind == "agent":
        return kind, check_agent_config(load_config(p)).model_dump()
    if kind == "bench":
        from eval.runs.bench import load_config as load_bench

        out = load_bench(p).model_dump()
        if isinstance(out["agent"], dict):
            out["agent"] = check_agent_config(out["agent"]).model_dump()
        return kind, out
    if kind == "bench-speed":
        from eval.runs.bench_speed import load_bench_config

        return kind, load_bench_config(p)
    if kind == "train":
        from models.train import load_config as load_train

        return kind, load_train(p).model_dump()
    if kind == "serve":
        from models.serve import read_serve_config

        return kind, read_serve_config(p).model_dump()
    if kind == "simulate":
        from eval.runs.simulate import SimulateConfig

        return kind, load_typed(SimulateConfig, p)[0].model_dump()
    if kind == "load-bench":
        from eval.runs.load_bench import load_config as load_load_bench

        return kind, load_load_bench(p).model_dump()
    if kind == "storage-bench":
        from eval.runs.storage_bench import load_config as load_storage_bench

        return kind, load_storage_bench(p).model_dump()
    if loaders and kind in loaders:
        return kind, loaders[kind](p)
    if kind == "presentation":
        from policies.presentations import load_plan

        return kind, load_plan(p).model_dump()
    raise ValueError(f"unknown config type {kind!r}; use one of {', '.join(KINDS)}")


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """``medhx config``; the top (``agent.cli``) sets the ``loaders`` default for the kinds of the layers above."""
    p = sub.add_parser(
        "config",
        help=f"validate any config ({', '.join(KINDS)}) or print it with defaults",
    )
    csub = p.add_subparsers(dest="config_command", required=True)
    for name, help_ in (("check", "validate; exit 1 with the key path on an error"),
                        ("show", "print the config with every default filled in")):
        c = csub.add_parser(name, help=help_)
        c.add_argument("file")
        c.add_argument("--type", choices=KINDS, help="default: recognised from the keys")
        c.set_defaults(func=_cmd_config)
    p.set_defaults(loaders={})
    return p


def _cmd_config(args: argparse.Namespace) -> int:
    kind, cfg = validate(args.file, args.type, args.loaders)
    if args.config_command == "check":
        print(f"{args.file}: valid {kind} config")
    else:
        print(yaml.safe_dump(json.loads(json.dumps(cfg, default=str)), sort_keys=False))
    return 0
