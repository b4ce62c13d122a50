"""``medhx predict --config C --task nlu --split valid --out preds.jsonl``: a prediction file for ``medhx score``.

The config is the agent's, and the module is built by the registry that builds the live agent
(:mod:`policies.registry`), so the same YAML that runs the agent evaluates its modules: for ``--task nlu`` the
agent's NLU, whatever its kind; for ``pol`` / ``nlg`` the LLM module of the ``policy`` / ``nlg`` section (a model or
hybrid policy's model, a model NLG without its template fallback), with the section's backend, adapter, prompt
mode, ``max_tokens``, ``history``, ``constrained`` and, for ``mode: icl``, ``exemplars``. ``--mode`` and
``--adapter`` are written into that section, so they apply where its kind takes them.

An LLM module predicts the whole split in one batched backend call; any other NLU runs turn by turn with the gold
past (teacher-forced), its frames admitted by the agent's grounding.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from agent.core import safety
from agent.core.data import DEFAULT_DATA_DIR, load_dialogues, task_examples
from agent.core.protocol import TurnContext
from models.modules import LLMModule, prediction_row
from policies.agent_config import load_config
from policies.registry import TASK_OF, Builder, Modules, build_modules, check_section

log = logging.getLogger(__name__)

ROLE_OF = {task: role for role, task in TASK_OF.items()}  # the config section of each task: pol -> policy


def predict_config(config: dict, task: str, data_dir: str, overrides: dict | None = None) -> dict:
    """The agent config with ``overrides`` (``--mode``, ``--adapter``) written into the task's section, checked
    by the registry (a key the section's kind does not take is an error that names the keys it takes).

    In ``icl`` mode the exemplars come from the predicted dataset (``data_dir``), split ``train``, unless the
    section's ``exemplars`` says otherwise: a run on the licensed MediTOD draws its exemplars from its training
    split, not from the two bundled dialogues the live agent falls back on."""
    role = ROLE_OF[task]
    section = {**Builder(config).section(role), **(overrides or {})}
    settings = check_section(role, section)
    if settings.get("mode") == "icl" and "exemplars" in settings:  # a kind that takes exemplar settings
        exemplars = dict(section.get("exemplars") or {})
        exemplars["data"] = exemplars.get("data") or data_dir
        section["exemplars"] = exemplars
    return {**config, role: section}


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
                out.append(
                    (d.dialog_id, u.uttr_id, TurnContext(turns=list(turns), state=dict(state), past_actions=list(past)))
                )
            state = u.dialog_state if u.dialog_state is not None else state
    return out


def teacher_forced_doctor_contexts(dialogues) -> dict[tuple[str, int], TurnContext]:
    """One context per scored doctor turn (every doctor turn but a dialogue's first utterance, as
    :func:`agent.core.data.pol_examples`): the dialogue before the turn, the gold doctor actions before it, and the
    gold patient state after the last patient turn."""
    out: dict[tuple[str, int], TurnContext] = {}
    for d in dialogues:
        turns: list[tuple[str, str]] = []
        past: list[list[dict]] = []
        state: dict = {}
        for i, u in enumerate(d.utterances):
            if u.speaker == "doctor" and u.actions is not None and i > 0:
                out[(d.dialog_id, u.uttr_id)] = TurnContext(
                    turns=list(turns), state=dict(state), past_actions=list(past)
                )
            turns.append((u.speaker, u.text))
            if u.speaker == "doctor":
                past.append(u.actions or [])
            elif u.dialog_state is not None:
                state = u.dialog_state
    return out


def predict_llm(module: LLMModule, task: str, data_dir: str, split: str, limit: int | None,
                progress: bool) -> list[dict]:
    """Prediction rows of an LLM module over a split's ``task`` turns, in one batched backend call."""
    examples = task_examples(task, load_dialogues(data_dir, split), module.history)  # type: ignore[arg-type]
    if not examples:
        raise ValueError(f"no {task} turns in split {split!r} of {data_dir}")
    examples = examples[:limit] if limit else examples
    outs = module.run_examples(examples, progress=progress)
    return [prediction_row(e, o) for e, o in zip(examples, outs, strict=True)]


def predict_nlu_turns(agent: Modules, kind: str, data_dir: str, split: str, limit: int | None,
                      progress: bool) -> tuple[list[dict], list[float]]:
    """The agent's NLU turn by turn, with the gold previous doctor actions as context, its frames admitted by the
    agent's grounding (any NLU kind: clinical, ensemble, gold, a researcher's own); rows and seconds per turn."""
    from tqdm import tqdm

    contexts = teacher_forced_contexts(load_dialogues(data_dir, split))
    if not contexts:
        raise ValueError(f"no nlu turns in split {split!r} of {data_dir}")
    contexts = contexts[:limit] if limit else contexts
    rows, seconds = [], []
    for dialog_id, uttr_id, ctx in tqdm(contexts, desc=f"nlu ({kind})", disable=not progress):
        t0 = time.perf_counter()
        result = agent.nlu.understand(ctx)
        admitted = safety.admit_frames(result.value, agent.nlu_vocabulary,
                                       ctx.turns[-1][1] if agent.nlu_ground_words else None)
        seconds.append(time.perf_counter() - t0)
        rows.append({"dialog_id": dialog_id, "uttr_id": uttr_id, "prediction": admitted.frames, "raw": result.raw,
                     "format_error": result.format_error, "extra": {**result.extra, **admitted.rejected} or None,
                     "latency_s": round(seconds[-1], 6)})
    return rows, seconds


def run_predict(config: dict, task: str, data_dir: str, split: str, out: str | Path, limit: int | None = None,
                overrides: dict | None = None, progress: bool = True) -> dict:
    """Write ``out`` (JSON lines, the ``medhx score`` format) and return a summary of the run."""
    config = predict_config(config, task, data_dir, overrides)
    if task == "nlu":
        agent = build_modules(config)  # the agent's own NLU, with its grounding
        try:
            if isinstance(agent.nlu, LLMModule):
                module = agent.nlu
                rows = predict_llm(module, task, data_dir, split, limit, progress)
                summary = llm_summary(module)
            else:
                kind = config["nlu"]["kind"]
                rows, seconds = predict_nlu_turns(agent, kind, data_dir, split, limit, progress)
                ms = sorted(1000 * x for x in seconds)
                summary = {"kind": kind, "ms_per_turn_mean": round(sum(ms) / len(ms), 3),
                           "ms_per_turn_p50": round(ms[len(ms) // 2], 3)}
        finally:
            agent.close()
    else:
        role = ROLE_OF[task]
        if "backend" not in check_section(role, config[role]):  # an LLM kind's settings name its backend
            raise ValueError(f"config: {role}.kind is {config[role]['kind']!r}; predict needs an LLM module "
                             "(kind: model)")
        builder = Builder(config)
        try:
            module = builder.llm(role)
            rows = predict_llm(module, task, data_dir, split, limit, progress)
            summary = llm_summary(module)
        finally:
            for close in builder.closers:
                close()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return {"task": task, "split": split, "rows": len(rows), "out": str(out)} | summary


def llm_summary(module: LLMModule) -> dict:
    return {"mode": module.mode, "adapter": module.adapter, "parse": module.stats.to_dict()}


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predict", help="run one module over a split (teacher-forced) and write a prediction file for "
                                       "medhx score; --task nlu runs whatever NLU kind the config names")
    p.add_argument("--config", required=True, help="agent YAML with backends and nlu/policy/nlg sections")
    p.add_argument("--task", required=True, choices=tuple(ROLE_OF))
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
