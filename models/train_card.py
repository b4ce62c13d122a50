"""The adapter's card (``card.json`` + ``card.md`` beside the adapter, written by ``medhx train``): generation on
the valid split with the saved adapter through the ``hf`` backend, its MediTOD metrics (through a :data:`Scorer`:
``medhx train`` passes ``eval.metrics.score.score_rows``, so models/ imports no eval/) and parse statistics, and the
card's short Markdown form.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent.core.data import Example, task_examples
from agent.core.provenance import package_versions
from models.train_config import TrainConfig

log = logging.getLogger(__name__)

Scorer = Callable[[str, list[Example], list[dict], str], dict]
"""MediTOD metrics of one task's valid predictions: ``scorer(task, examples, rows, match) -> report``, where ``rows``
are :func:`models.modules.predict`'s and ``match`` is ``cfg.eval.match``. The caller (``medhx train``) passes one;
without it the card has no metrics."""


def evaluate(cfg: TrainConfig, base_path: str, adapter_dir: Path, tokenizer: Any, dialogues: list,
             progress: bool, scorer: Scorer | None = None) -> dict:
    """Generate on the valid split with the saved adapter through the ``hf`` backend; score with ``scorer``."""
    from models.modules import predict
    from models.parsing import ParseStats

    backend = make_eval_backend(base_path, {cfg.name: str(adapter_dir)}, cfg.device)
    results: dict[str, Any] = {}
    try:
        for task in cfg.tasks:
            examples = task_examples(task, dialogues, cfg.history)[:cfg.eval.limit or None]
            stats = ParseStats()
            rows = predict(task, examples, backend, tokenizer, adapter=cfg.name, stats=stats, progress=progress,
                           max_tokens=cfg.eval.max_tokens, history=cfg.history, constrained=cfg.eval.constrained)
            pred_file = adapter_dir / f"valid_predictions_{task}.jsonl"
            pred_file.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            results[task] = {"examples": len(examples), "parse": stats.to_dict(),
                             "metrics": scorer(task, examples, rows, cfg.eval.match) if scorer else {},
                             "predictions": pred_file.name}
            log.info("valid %s: %s", task, stats.summary())
    finally:
        backend.close()
    return results


def make_eval_backend(base_path: str, adapters: dict[str, str], device: str) -> Any:
    from models.backends.hf import HFBackend

    return HFBackend(base_path, adapters=adapters, device=device)


def versions() -> dict[str, str]:
    return package_versions(("torch", "transformers", "peft", "accelerate"))


def write_card(out_dir: Path, card: dict) -> None:
    (out_dir / "card.json").write_text(json.dumps(card, indent=2, ensure_ascii=False, default=str) + "\n")
    lines = [
        f"# Adapter `{card['adapter']}` ({card['peft_method']})",
        "",
        f"- base model: `{card['base_model']}` (`{card['base_model_path']}`)",
        f"- tasks: {', '.join(card['tasks'])}; prompt format {card['prompt_version']} ({card['prompt_mode']})",
        f"- data: `{card['data']['dir']}` train={card['data']['train_split']} (hash {card['data']['train_hash']}), "
        f"valid={card['data']['valid_split']} (hash {card['data']['valid_hash']}), history {card['data']['history']}",
        f"- training: {card['train']['examples']} examples ({card['train']['skipped_too_long']} skipped as too long), "
        f"{card['train']['optimizer_steps']} steps of {card['train']['effective_batch_size']}, "
        f"loss {_num(card['train']['loss_first'])} -> {_num(card['train']['loss_last'])}, "
        f"{card['train']['wall_time_s']} s on {card['train']['device']}",
    ]
    if card["train"].get("resumed_from"):
        lines.append(f"- resumed from `{card['train']['resumed_from']}`")
    if card["servable_by_vllm"]:
        lines.append(f"- servable by vLLM: yes (serve with max_lora_rank >= {card['vllm']['max_lora_rank']})")
    else:
        lines.append("- servable by vLLM: no (only LoRA adapters are; load it with the hf backend)")
    valid = card.get("valid", {})
    if valid.get("token_loss_after") is not None:
        lines.append(
            f"- valid token loss: {valid['token_loss_before']:.4f} before -> {valid['token_loss_after']:.4f} after"
        )
    for task, res in (valid.get("tasks") or {}).items():
        lines.append(f"- valid {task} ({res['examples']} turns): parse {json.dumps(short_parse(res['parse']))}; "
                     f"metrics {json.dumps(headline(task, res['metrics']))}")
    (out_dir / "card.md").write_text("\n".join(lines) + "\n")


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def short_parse(p: dict) -> dict:
    keys = ("valid_rate_before_repair", "valid_rate_after_repair", "lenient", "format_errors")
    return {k: p[k] for k in keys}


def headline(task: str, m: dict) -> dict:
    if task == "nlg":
        return {k: m.get(k) for k in ("bleu4", "rougeL", "bertscore")}
    out = {"f1": (m.get("overall") or {}).get("f1"), "joint_accuracy": m.get("joint_accuracy")}
    if task == "pol":
        out["precision_at_k"] = m.get("precision_at_k")
    return out
