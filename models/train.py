"""``medhx train --config configs/train/<nlu|pol|nlg|multitask>.yaml``: supervised fine-tuning with peft.

A plain torch loop (no Trainer) so the loss is exactly what the paper trains: token
cross-entropy on the target only (labels -100 on the prompt), summed over an effective
batch and divided by its target-token count. Prompts come from ``models.prompts``, the
same builder inference uses. Defaults follow MediTOD section 4.3: LoRA r=32, alpha=32,
lr 1e-4, effective batch 16, cosine schedule with 10% warm-up.

At the end: token loss on the valid split, generation on the valid split through the
``hf`` backend with the saved adapter, MediTOD metrics (``eval.score``) and parse
statistics, all written to a card (``card.json`` + ``card.md``) beside the adapter.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import math
import os
import random
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent.data import DEFAULT_DATA_DIR, Example, data_hash, load_dialogues, task_examples
from agent.paths import resolve_path
from models import prompts

log = logging.getLogger(__name__)

LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
PeftMethod = Literal["lora", "adalora", "ia3", "prompt_tuning"]

# --------------------------------------------------------------------------- config


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PeftSettings(_Strict):
    method: PeftMethod = "lora"
    r: int = 32
    alpha: int = 32
    dropout: float = 0.05
    target_modules: list[str] = Field(default_factory=lambda: list(LORA_TARGETS))
    adalora_target_r: int = 8  # AdaLoRA prunes from r down to this average rank
    ia3_target_modules: list[str] = Field(default_factory=lambda: ["k_proj", "v_proj", "down_proj"])
    ia3_feedforward_modules: list[str] = Field(default_factory=lambda: ["down_proj"])
    num_virtual_tokens: int = 20  # prompt tuning

    @model_validator(mode="after")
    def _adalora_prunes(self) -> PeftSettings:
        if self.method == "adalora" and self.adalora_target_r >= self.r:
            raise ValueError(f"adalora_target_r ({self.adalora_target_r}) must be below r ({self.r}): AdaLoRA prunes "
                             "the rank from r down to it")
        return self


class TrainSettings(_Strict):
    lr: float = 1e-4
    micro_batch_size: int = 1
    effective_batch_size: int = 16
    epochs: float = 3
    max_steps: int | None = None  # optimizer steps; overrides epochs
    warmup_ratio: float = 0.1
    scheduler: Literal["cosine", "linear", "constant"] = "cosine"
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    max_length: int = 2048  # longer examples are skipped and counted, never cut
    limit_examples: int | None = None  # first N training examples (after shuffling), for smoke runs
    gradient_checkpointing: bool = False
    seed: int = 0

    @field_validator("effective_batch_size")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v < 1:
            raise ValueError("effective_batch_size must be >= 1")
        return v


class EvalSettings(_Strict):
    enabled: bool = True
    limit: int | None = None  # first N valid examples per task
    max_tokens: int | None = None  # per task default of models.modules
    constrained: bool = False  # hf generation has no JSON-schema constraint; the vLLM backends do
    match: str = "exact"


class TrainConfig(_Strict):
    base_model: str = "smollm2"
    tasks: list[Literal["nlu", "pol", "nlg"]] = Field(default_factory=lambda: ["nlu"])
    adapter_name: str | None = None  # default: the task, or "multitask"
    data: str = str(DEFAULT_DATA_DIR)
    train_split: str = "train"
    valid_split: str = "valid"
    history: int | None = 4
    output_dir: str = "runs/adapter"
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    quantization: Literal["none", "4bit"] = "none"  # 4bit = QLoRA (needs bitsandbytes)
    device: str = "auto"
    peft: PeftSettings = Field(default_factory=PeftSettings)
    train: TrainSettings = Field(default_factory=TrainSettings)
    eval: EvalSettings = Field(default_factory=EvalSettings)

    @field_validator("tasks")
    @classmethod
    def _tasks(cls, v: list[str]) -> list[str]:
        if not v or len(set(v)) != len(v):
            raise ValueError("tasks must be a non-empty list without repeats")
        return v

    @property
    def name(self) -> str:
        return self.adapter_name or (self.tasks[0] if len(self.tasks) == 1 else "multitask")


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """A YAML training config, with ``overrides`` (dotted keys, e.g. ``train.max_steps``) applied on top."""
    import yaml

    raw = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected a mapping")
    for key, value in (overrides or {}).items():
        node = raw
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    try:
        return TrainConfig.model_validate(raw)
    except Exception as exc:  # pydantic's message names the bad key; prefix the file
        raise ValueError(f"{path}: {exc}") from None


# --------------------------------------------------------------------------- data


def tokenize_example(example: Example, tokenizer: Any) -> tuple[list[int], list[int]]:
    """``(input_ids, labels)``: prompt tokens exactly as inference encodes them, labels -100 there."""
    prompt, completion = prompts.render_training_text(example, tokenizer)
    prompt_ids = prompts.encode_prompt(prompt, tokenizer)
    target_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    return prompt_ids + target_ids, [-100] * len(prompt_ids) + target_ids


def build_features(examples: list[Example], tokenizer: Any, max_length: int) -> tuple[list[dict], int]:
    """Tokenised examples and how many were skipped for exceeding ``max_length``."""
    features, skipped = [], 0
    for ex in examples:
        ids, labels = tokenize_example(ex, tokenizer)
        if len(ids) > max_length:
            skipped += 1
            log.warning("skipping %s example %s/%s: %d tokens > max_length %d", ex.task, ex.dialog_id, ex.uttr_id,
                        len(ids), max_length)
            continue
        features.append({"input_ids": ids, "labels": labels, "task": ex.task})
    return features, skipped


def collate(batch: list[dict], pad_id: int) -> dict[str, Any]:
    """Left-padded batch: every sequence ends at the last column, so the targets sit in the last columns and
    only those need logits (``logits_to_keep``). Position ids restart at 0 after the padding, as at inference."""
    import torch

    width = max(len(f["input_ids"]) for f in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), -100, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for i, f in enumerate(batch):
        n = len(f["input_ids"])
        ids[i, width - n:] = torch.tensor(f["input_ids"])
        labels[i, width - n:] = torch.tensor(f["labels"])
        mask[i, width - n:] = 1
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    return {"input_ids": ids, "labels": labels, "attention_mask": mask, "position_ids": positions}


def n_target_tokens(feature: dict) -> int:
    """Tokens that carry a loss: the label of position t is predicted from position t-1, so the first never does."""
    return sum(1 for x in feature["labels"][1:] if x != -100)


def target_span(feature: dict) -> int:
    """How many trailing positions hold targets (from the first target token to the end)."""
    labels = feature["labels"]
    first = next((i for i, x in enumerate(labels) if x != -100), len(labels))
    return len(labels) - first


def summed_target_loss(model: Any, batch: dict[str, Any], keep: int) -> Any:
    """Sum of target-token cross-entropies, computing logits for the last ``keep`` + 1 positions only
    (the prompt's logits are never needed, and the vocabulary projection dominates small models)."""
    import torch.nn.functional as F

    labels = batch["labels"]
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    peft_cfg = getattr(model, "active_peft_config", None)
    if peft_cfg is not None and peft_cfg.is_prompt_learning:
        inputs.pop("position_ids")  # peft prepends virtual tokens and numbers positions itself
    logits = model(**inputs, logits_to_keep=keep + 1).logits  # positions W-keep-1 .. W-1
    pred = logits[:, :-1, :].float()  # position t predicts token t+1
    gold = labels[:, -keep:]
    return F.cross_entropy(pred.reshape(-1, pred.size(-1)), gold.reshape(-1), ignore_index=-100, reduction="sum")


# --------------------------------------------------------------------------- model


def resolve_device(device: str) -> str:
    import torch

    if device != "auto":
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(dtype: str, device: str) -> Any:
    import torch

    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    return getattr(torch, dtype)


def peft_config(settings: PeftSettings, total_steps: int, warmup_steps: int = 0) -> Any:
    import peft

    if settings.method == "lora":
        return peft.LoraConfig(r=settings.r, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
                               target_modules=settings.target_modules, bias="none", task_type="CAUSAL_LM")
    if settings.method == "adalora":
        return peft.AdaLoraConfig(init_r=settings.r, target_r=settings.adalora_target_r, lora_alpha=settings.alpha,
                                  lora_dropout=settings.dropout, target_modules=settings.target_modules,
                                  total_step=max(total_steps, 1), tinit=min(warmup_steps, max(total_steps - 1, 0)),
                                  tfinal=0, task_type="CAUSAL_LM")  # rank budgeting starts after warm-up
    if settings.method == "ia3":
        return peft.IA3Config(target_modules=settings.ia3_target_modules,
                              feedforward_modules=settings.ia3_feedforward_modules, task_type="CAUSAL_LM")
    if settings.method == "prompt_tuning":
        return peft.PromptTuningConfig(num_virtual_tokens=settings.num_virtual_tokens, task_type="CAUSAL_LM")
    raise ValueError(f"unknown peft method {settings.method!r}")


def load_base(cfg: TrainConfig, base_path: str, device: str) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"dtype": resolve_dtype(cfg.dtype, device)}
    if cfg.quantization == "4bit":
        if importlib.util.find_spec("bitsandbytes") is None:
            raise RuntimeError("quantization: 4bit (QLoRA) needs bitsandbytes: pip install bitsandbytes "
                               "(and a CUDA GPU), or set quantization: none")
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16)
        kwargs["device_map"] = {"": device}
    model = AutoModelForCausalLM.from_pretrained(base_path, **kwargs)
    if cfg.quantization == "4bit":
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=cfg.train.gradient_checkpointing)
    else:
        model.to(device)
    return model


def make_scheduler(optimizer: Any, kind: str, warmup: int, total: int) -> Any:
    from transformers import (
        get_constant_schedule_with_warmup,
        get_cosine_schedule_with_warmup,
        get_linear_schedule_with_warmup,
    )

    if kind == "cosine":
        return get_cosine_schedule_with_warmup(optimizer, warmup, total)
    if kind == "linear":
        return get_linear_schedule_with_warmup(optimizer, warmup, total)
    return get_constant_schedule_with_warmup(optimizer, warmup)


# --------------------------------------------------------------------------- loop


def group_loss(model: Any, group: list[dict], micro: int, pad_id: int, device: str, backward: bool) -> tuple[float, int]:
    """Target-token loss summed over ``group`` (in micro-batches) and divided by the group's target tokens:
    one optimizer step sees the mean over its effective batch's tokens, as one big batch would.
    Returns ``(mean token loss, target tokens)``."""
    import torch

    tokens = sum(n_target_tokens(f) for f in group)
    if tokens == 0:
        return 0.0, 0
    total = 0.0
    for start in range(0, len(group), micro):
        chunk = group[start:start + micro]
        if not any(n_target_tokens(f) for f in chunk):
            continue
        batch = {k: v.to(device) for k, v in collate(chunk, pad_id).items()}
        keep = max(target_span(f) for f in chunk)
        with torch.set_grad_enabled(backward):
            loss = summed_target_loss(model, batch, keep) / tokens
        if backward:
            loss.backward()
        total += float(loss.detach())
    return total, tokens


def token_loss(model: Any, features: list[dict], micro: int, pad_id: int, device: str) -> float | None:
    """Mean target-token loss over ``features`` (no gradient)."""
    if not features:
        return None
    model.eval()
    loss_sum, tokens = 0.0, 0
    for start in range(0, len(features), 16):
        loss, n = group_loss(model, features[start:start + 16], micro, pad_id, device, backward=False)
        loss_sum += loss * n
        tokens += n
    return loss_sum / tokens if tokens else None


def train(cfg: TrainConfig, progress: bool = True) -> dict:
    """Train, save the adapter and its card into ``cfg.output_dir``; returns the card."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from peft import get_peft_model
    from tqdm import tqdm
    from transformers import AutoTokenizer

    from models.prepare import resolve_base_model

    started = time.time()
    random.seed(cfg.train.seed)
    torch.manual_seed(cfg.train.seed)
    device = resolve_device(cfg.device)
    base_path = resolve_base_model(cfg.base_model)
    out_dir = Path(cfg.output_dir)
    tokenizer = AutoTokenizer.from_pretrained(base_path)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    data_dir = resolve_path(cfg.data)
    train_dialogues = load_dialogues(data_dir, cfg.train_split)
    valid_dialogues = load_dialogues(data_dir, cfg.valid_split) if cfg.valid_split else []
    train_examples = [e for t in cfg.tasks for e in task_examples(t, train_dialogues, cfg.history)]
    random.Random(cfg.train.seed).shuffle(train_examples)  # multitask: the three tasks mixed (PromptCBLUE style)
    if cfg.train.limit_examples:
        train_examples = train_examples[:cfg.train.limit_examples]
    features, skipped = build_features(train_examples, tokenizer, cfg.train.max_length)
    if not features:
        raise ValueError(f"no training examples for tasks {cfg.tasks} in split {cfg.train_split!r} of {cfg.data}")

    effective, micro = cfg.train.effective_batch_size, cfg.train.micro_batch_size
    steps_per_epoch = math.ceil(len(features) / effective)
    total_steps = cfg.train.max_steps or max(1, math.ceil(steps_per_epoch * cfg.train.epochs))
    warmup = math.ceil(cfg.train.warmup_ratio * total_steps)

    model = load_base(cfg, base_path, device)
    if cfg.train.gradient_checkpointing and cfg.quantization == "none":
        model.gradient_checkpointing_enable()
        model.enable_input_require_grads()
    model = get_peft_model(model, peft_config(cfg.peft, total_steps, warmup))
    trainable, total_params = model.get_nb_trainable_parameters()
    log.info("peft %s: %d trainable of %d parameters (%.3f%%)", cfg.peft.method, trainable, total_params,
             100 * trainable / total_params)
    if cfg.peft.method != "lora":
        log.warning("peft method %s: only LoRA adapters are servable by vLLM; this adapter loads with the hf backend "
                    "(transformers + peft) only", cfg.peft.method)
    elif cfg.peft.r not in VLLM_LORA_RANKS:
        log.warning("LoRA r=%d is not a rank vLLM accepts for --max-lora-rank %s", cfg.peft.r, VLLM_LORA_RANKS)

    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=cfg.train.lr, weight_decay=cfg.train.weight_decay)
    scheduler = make_scheduler(optimizer, cfg.train.scheduler, warmup, total_steps)

    valid_features: list[dict] = []
    for t in cfg.tasks:
        exs = task_examples(t, valid_dialogues, cfg.history)[:cfg.eval.limit or None]
        valid_features += build_features(exs, tokenizer, cfg.train.max_length)[0]
    valid_loss_before = token_loss(model, valid_features, micro, pad_id, device) if cfg.eval.enabled else None

    order = list(range(len(features)))
    rng = random.Random(cfg.train.seed + 1)
    losses: list[float] = []
    cursor = len(order)
    bar = tqdm(range(total_steps), desc=f"train {cfg.name}", disable=not progress, unit="step")
    for step in bar:
        group = []
        while len(group) < min(effective, len(features)):
            if cursor >= len(order):
                rng.shuffle(order)
                cursor = 0
            group.append(features[order[cursor]])
            cursor += 1
        model.train()
        loss, _ = group_loss(model, group, micro, pad_id, device, backward=True)
        if cfg.train.max_grad_norm:
            torch.nn.utils.clip_grad_norm_(params, cfg.train.max_grad_norm)
        optimizer.step()
        scheduler.step()
        if cfg.peft.method == "adalora":
            model.base_model.update_and_allocate(step)
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss)
        bar.set_postfix(loss=f"{loss:.4f}", lr=f"{scheduler.get_last_lr()[0]:.2e}")
    train_time = time.time() - started

    valid_loss_after = token_loss(model, valid_features, micro, pad_id, device) if cfg.eval.enabled else None
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out_dir))
    del model, optimizer
    card: dict[str, Any] = {
        "adapter": cfg.name,
        "peft_method": cfg.peft.method,
        "servable_by_vllm": cfg.peft.method == "lora",
        "vllm": {"max_lora_rank": cfg.peft.r} if cfg.peft.method == "lora" else None,
        "base_model": cfg.base_model,
        "base_model_path": base_path,
        "prompt_version": prompts.PROMPT_VERSION,
        "prompt_mode": "supervised",
        "tasks": cfg.tasks,
        "data": {
            "dir": str(data_dir),
            "train_split": cfg.train_split,
            "train_hash": data_hash(train_dialogues),
            "valid_split": cfg.valid_split,
            "valid_hash": data_hash(valid_dialogues),
            "history": cfg.history,
        },
        "train": {
            "examples": len(features),
            "skipped_too_long": skipped,
            "optimizer_steps": total_steps,
            "warmup_steps": warmup,
            "effective_batch_size": effective,
            "trainable_parameters": trainable,
            "loss_first": losses[0],
            "loss_last": losses[-1],
            "losses": [round(x, 5) for x in losses],
            "wall_time_s": round(train_time, 1),
            "device": device,
        },
        "valid": {"token_loss_before": valid_loss_before, "token_loss_after": valid_loss_after},
        "config": cfg.model_dump(),
        "versions": _versions(),
    }
    if cfg.eval.enabled and valid_dialogues:
        card["valid"]["tasks"] = evaluate(cfg, base_path, out_dir, tokenizer, valid_dialogues, progress)
    card["wall_time_s"] = round(time.time() - started, 1)
    write_card(out_dir, card)
    return card


# --------------------------------------------------------------------------- evaluation + card


def evaluate(cfg: TrainConfig, base_path: str, adapter_dir: Path, tokenizer: Any, dialogues: list,
             progress: bool) -> dict:
    """Generate on the valid split with the saved adapter through the ``hf`` backend; score with ``eval``."""
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
                             "metrics": score_rows(task, examples, rows, cfg.eval.match),
                             "predictions": pred_file.name}
            log.info("valid %s: %s", task, stats.summary())
    finally:
        backend.close()
    return results


def make_eval_backend(base_path: str, adapters: dict[str, str], device: str) -> Any:
    from models.backends.hf import HFBackend

    return HFBackend(base_path, adapters=adapters, device=device)


def score_rows(task: str, examples: list[Example], rows: list[dict], match: str) -> dict:
    """MediTOD metrics of the predictions (``eval.score``); the matcher is exact by default (no LLM judge)."""
    from eval.matching import make_matcher
    from eval.score import score

    predictions = {(r["dialog_id"], r["uttr_id"]): r["prediction"] for r in rows}
    matcher = make_matcher(match) if task != "nlg" else None
    report = score(task, examples, predictions, matcher, progress=False)
    report.pop("notes", None)
    return report


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {}
    for pkg in ("torch", "transformers", "peft"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            pass
    return out


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
        f"loss {card['train']['loss_first']:.4f} -> {card['train']['loss_last']:.4f}, "
        f"{card['train']['wall_time_s']} s on {card['train']['device']}",
    ]
    if card["servable_by_vllm"]:
        lines.append(f"- servable by vLLM: yes (serve with max_lora_rank >= {card['vllm']['max_lora_rank']})")
    else:
        lines.append("- servable by vLLM: no (only LoRA adapters are; load it with the hf backend)")
    valid = card.get("valid", {})
    if valid.get("token_loss_after") is not None:
        lines.append(f"- valid token loss: {valid['token_loss_before']:.4f} before -> {valid['token_loss_after']:.4f} after")
    for task, res in (valid.get("tasks") or {}).items():
        lines.append(f"- valid {task} ({res['examples']} turns): parse {json.dumps(_short_parse(res['parse']))}; "
                     f"metrics {json.dumps(_headline(task, res['metrics']))}")
    (out_dir / "card.md").write_text("\n".join(lines) + "\n")


def _short_parse(p: dict) -> dict:
    keys = ("valid_rate_before_repair", "valid_rate_after_repair", "lenient", "format_errors")
    return {k: p[k] for k in keys}


def _headline(task: str, m: dict) -> dict:
    if task == "nlg":
        return {k: m.get(k) for k in ("bleu4", "rougeL", "bertscore")}
    out = {"f1": (m.get("overall") or {}).get("f1"), "joint_accuracy": m.get("joint_accuracy")}
    if task == "pol":
        out["precision_at_k"] = m.get("precision_at_k")
    return out


# --------------------------------------------------------------------------- CLI


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="fine-tune a peft adapter (LoRA by default) for nlu / pol / nlg / multitask")
    p.add_argument("--config", required=True, help="YAML, e.g. configs/train/nlu.yaml")
    p.add_argument("--output-dir", help="override output_dir")
    p.add_argument("--max-steps", type=int, help="override train.max_steps")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config key (dotted, YAML value), e.g. --set peft.method=ia3")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cmd_train)


def _parse_overrides(args: argparse.Namespace) -> dict[str, Any]:
    import yaml

    out: dict[str, Any] = {}
    for item in args.set:
        if "=" not in item:
            raise ValueError(f"--set expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        out[key.strip()] = yaml.safe_load(value)
    if args.output_dir:
        out["output_dir"] = args.output_dir
    if args.max_steps is not None:
        out["train.max_steps"] = args.max_steps
    return out


def _cmd_train(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, _parse_overrides(args))
    card = train(cfg, progress=not args.no_progress)
    print(json.dumps({k: card[k] for k in ("adapter", "peft_method", "wall_time_s")} | {
        "output_dir": cfg.output_dir, "loss_first": card["train"]["loss_first"], "loss_last": card["train"]["loss_last"],
        "valid": {k: v for k, v in card["valid"].items() if k != "tasks"} | {
            t: {"parse": _short_parse(r["parse"]), "metrics": _headline(t, r["metrics"])}
            for t, r in (card["valid"].get("tasks") or {}).items()}}, indent=2))
    return 0
