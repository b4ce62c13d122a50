"""``medhx predict --config C --task nlu --split valid --out preds.jsonl``: a prediction file for ``medhx score``.

The config is the agent's (``base_model``, ``backends: {name: {kind: ..}}`` and one section
per module: ``nlu`` / ``policy`` / ``nlg`` with ``backend``, ``adapter``, ``mode``,
``max_tokens``, ``history``, ``constrained`` and, for ``mode: icl``, ``retrieval``), so
the same YAML that runs the live agent evaluates its modules.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Any

from agent import safety
from agent.data import DEFAULT_DATA_DIR, load_dialogues, task_examples
from agent.protocol import TurnContext
from models.backends import make_backend
from models.modules import predict, resolve_tokenizer
from models.parsing import ParseStats
from models.retrieval import ExemplarIndex
from policies.agent_config import load_config
from policies.registry import build_modules

log = logging.getLogger(__name__)

SECTIONS = {"nlu": "nlu", "pol": "policy", "nlg": "nlg"}
MODULE_KEYS = ("max_tokens", "history", "constrained", "k", "max_prompt_tokens", "schema_max_items", "schema_max_length")


def backend_spec(config: dict, name: str) -> dict:
    specs = config.get("backends") or {}
    if name not in specs:
        raise ValueError(f"config: backend {name!r} is not defined under 'backends' ({sorted(specs)})")
    spec = {k: v for k, v in specs[name].items() if k != "tokenizer"}  # tokenizer: for the modules, not the backend
    if spec.get("kind") in ("hf", "vllm-offline"):
        spec.setdefault("model", config.get("base_model", "smollm2"))
    return spec


def module_settings(config: dict, task: str) -> dict:
    section = SECTIONS[task]
    cfg = config.get(section)
    if not isinstance(cfg, dict):
        raise ValueError(f"config: no {section!r} section for task {task}")
    if cfg.get("kind", "model") not in ("model", "hybrid"):
        raise ValueError(f"config: {section}.kind is {cfg.get('kind')!r}; predict needs an LLM module (kind: model)")
    if not cfg.get("backend"):
        raise ValueError(f"config: {section}.backend is required")
    return cfg


def build_retriever(settings: dict, task: str, data_dir: str, history: int | None) -> Any:
    r = settings.get("retrieval") or {}
    dialogues = load_dialogues(r.get("data", data_dir), r.get("split", "train"))
    return ExemplarIndex.build(dialogues, task, history=history, encoder_path=r.get("encoder"),
                               cache_dir=r.get("cache_dir"))


NON_LLM_NLU = ("clinical", "ensemble", "gold")


def teacher_forced_contexts(dialogues) -> list[tuple[str, int, TurnContext]]:
    """One context per annotated patient turn, as the live agent would have it with the gold past: the dialogue
    so far, the gold doctor actions so far, and the gold patient state before the turn."""
    out = []
    for d in dialogues:
        turns: list[tuple[str, str]] = []
        past: list[list[dict]] = []
        state: dict = {}
        for u in d.utterances:
            turns.append((u.speaker, u.text))
            if u.speaker == "doctor":
                past.append(u.actions or [])
                continue
            if u.nlu is not None:
                out.append((d.dialog_id, u.uttr_id, TurnContext(turns=list(turns), state=dict(state), past_actions=list(past))))
            state = u.dialog_state if u.dialog_state is not None else state
    return out


def teacher_forced_doctor_contexts(dialogues) -> dict[tuple[str, int], TurnContext]:
    """One context per scored doctor turn (every doctor turn but a dialogue's first utterance, as
    :func:`agent.data.pol_examples`): the dialogue before the turn, the gold doctor actions before it, and the
    gold patient state after the last patient turn."""
    out: dict[tuple[str, int], TurnContext] = {}
    for d in dialogues:
        turns: list[tuple[str, str]] = []
        past: list[list[dict]] = []
        state: dict = {}
        for i, u in enumerate(d.utterances):
            if u.speaker == "doctor" and u.actions is not None and i > 0:
                out[(d.dialog_id, u.uttr_id)] = TurnContext(turns=list(turns), state=dict(state), past_actions=list(past))
            turns.append((u.speaker, u.text))
            if u.speaker == "doctor":
                past.append(u.actions or [])
            elif u.dialog_state is not None:
                state = u.dialog_state
    return out


def run_predict_nlu_module(config: dict, data_dir: str, split: str, out: str | Path, limit: int | None = None,
                           progress: bool = True) -> dict:
    """``medhx predict --task nlu`` for any NLU kind the config names (clinical, ensemble, gold, model): the
    agent's own NLU module, turn by turn, with the gold previous doctor actions as context."""
    import time

    from tqdm import tqdm

    contexts = teacher_forced_contexts(load_dialogues(data_dir, split))
    if not contexts:
        raise ValueError(f"no nlu turns in split {split!r} of {data_dir}")
    contexts = contexts[:limit] if limit else contexts
    agent = build_modules(config)
    rows, seconds = [], []
    try:
        for dialog_id, uttr_id, ctx in tqdm(contexts, desc=f"nlu ({config['nlu']['kind']})", disable=not progress):
            t0 = time.perf_counter()
            result = agent.nlu.understand(ctx)
            admitted = safety.admit_frames(result.value, agent.nlu_vocabulary,
                                           ctx.turns[-1][1] if agent.nlu_ground_words else None)
            seconds.append(time.perf_counter() - t0)
            rows.append({"dialog_id": dialog_id, "uttr_id": uttr_id, "prediction": admitted.frames, "raw": result.raw,
                         "format_error": result.format_error, "extra": {**result.extra, **admitted.rejected} or None,
                         "latency_s": round(seconds[-1], 6)})
    finally:
        agent.close()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    ms = sorted(1000 * x for x in seconds)
    return {"task": "nlu", "kind": config["nlu"]["kind"], "split": split, "rows": len(rows), "out": str(out),
            "ms_per_turn_mean": round(sum(ms) / len(ms), 3), "ms_per_turn_p50": round(ms[len(ms) // 2], 3)}


def run_predict(config: dict, task: str, data_dir: str, split: str, out: str | Path, limit: int | None = None,
                overrides: dict | None = None, progress: bool = True) -> dict:
    if task == "nlu" and (config.get("nlu") or {}).get("kind") in NON_LLM_NLU:
        if overrides:
            raise ValueError(f"--mode/--adapter apply to kind: model, not nlu kind {config['nlu']['kind']!r}")
        return run_predict_nlu_module(config, data_dir, split, out, limit, progress)
    settings = {**module_settings(config, task), **(overrides or {})}
    examples = task_examples(task, load_dialogues(data_dir, split), settings.get("history", 4))  # type: ignore[arg-type]
    if not examples:
        raise ValueError(f"no {task} turns in split {split!r} of {data_dir}")
    examples = examples[:limit] if limit else examples
    mode = settings.get("mode", "supervised")
    retriever = build_retriever(settings, task, data_dir, settings.get("history", 4)) if mode == "icl" else None
    backend = make_backend(backend_spec(config, settings["backend"]))
    try:
        spec_tokenizer = (config.get("backends") or {}).get(settings["backend"], {}).get("tokenizer")
        tokenizer = settings.get("tokenizer") or spec_tokenizer
        if tokenizer is None:
            try:
                tokenizer = resolve_tokenizer(None, backend)
            except ValueError:  # a remote server: the chat template comes from the local base model
                tokenizer = config.get("base_model", "smollm2")
        stats = ParseStats()
        rows = predict(task, examples, backend, tokenizer=tokenizer, adapter=settings.get("adapter"), mode=mode,
                       retriever=retriever, stats=stats, progress=progress,
                       **{k: settings[k] for k in MODULE_KEYS if k in settings})
    finally:
        backend.close()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return {"task": task, "split": split, "rows": len(rows), "out": str(out), "mode": mode,
            "adapter": settings.get("adapter"), "parse": stats.to_dict()}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predict", help="run one module over a split (teacher-forced) and write a prediction file for "
                                       "medhx score; --task nlu runs whatever NLU kind the config names")
    p.add_argument("--config", required=True, help="agent YAML with backends and nlu/policy/nlg sections")
    p.add_argument("--task", required=True, choices=tuple(SECTIONS))
    p.add_argument("--data", default=str(DEFAULT_DATA_DIR), help="directory with dialogs.json and *_ids.json")
    p.add_argument("--split", default="valid")
    p.add_argument("--out", required=True, help="prediction file to write (JSON lines)")
    p.add_argument("--limit", type=int, help="first N turns only")
    p.add_argument("--mode", choices=("supervised", "icl"), help="override the module's prompt mode")
    p.add_argument("--adapter", help="override the module's adapter name")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cmd_predict)


def _cmd_predict(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    overrides = {k: v for k, v in (("mode", args.mode), ("adapter", args.adapter)) if v}
    summary = run_predict(config, args.task, args.data, args.split, args.out, args.limit, overrides,
                          progress=not args.no_progress)
    print(json.dumps(summary, indent=2))
    return 0
