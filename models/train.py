"""``medhx train --config configs/train/<nlu|pol|nlg|multitask>.yaml``: supervised fine-tuning with peft on
``transformers.Trainer``.

**Why ``Trainer`` and not TRL's ``SFTTrainer``.** medhx trains on examples it has already rendered and
tokenised: ``models.prompts`` builds the prompt exactly as inference does (``encode_prompt``), the target is
appended, and the labels are -100 on the prompt (``models.train_data``). What ``SFTTrainer`` adds over
``Trainer`` is the part medhx does not want: chat templating and tokenising of prompt/completion text,
packing, a completion mask derived from text, and a ``compute_loss`` that also computes token accuracy and
entropy from the full logits (which would forbid cutting the logits to the target columns). With
pre-tokenised input it would be ``Trainer`` plus a dependency (trl, datasets). ``Trainer`` itself brings what
users expect: checkpoints and exact resume (optimizer, scheduler, RNG and data order), bf16/fp16 autocast,
gradient checkpointing, ``accelerate launch`` / DeepSpeed / FSDP, and ``report_to`` loggers.

**Loss.** Completion-only: ``CompletionCollator`` left-pads, cuts the labels to the target columns and sets
``logits_to_keep``, and the model's own causal-LM loss is the training loss (so peft's AdaLoRA adds its
orthogonal regulariser). ``Trainer`` passes ``num_items_in_batch`` (the target tokens of the whole
optimizer step, across gradient accumulation and devices) into that loss, so a step's loss is the mean over
its effective batch's target tokens, as one big batch would give, whatever the micro-batch. AdaLoRA's
regulariser is added by peft to every micro-batch's loss; its weight is divided by the number of
micro-batches per step so each optimizer step carries it once (``orth_reg_weight`` as configured), and
``update_and_allocate`` runs after every optimizer step (``AdaLoraCallback``).

**Checkpoints and resume.** Every ``train.save_steps`` steps ``Trainer`` writes
``output_dir/checkpoint-N`` (adapter, optimizer, scheduler, RNG states, ``trainer_state.json``; the newest
``train.save_total_limit`` are kept). Resuming is explicit: ``medhx train --config ... --resume`` continues
from the newest complete checkpoint in ``output_dir`` (or starts fresh when there is none, so a job script
can always pass it), ``--resume PATH`` from that checkpoint. Without ``--resume`` a run refuses to start over
an unfinished run's checkpoints (``--no-resume`` deletes them and starts fresh). A checkpoint carries the
trajectory-relevant config; resuming with a different one is an error. Data order is the sampler's, seeded
by ``train.seed`` per epoch, and ``Trainer`` skips the batches already seen, so a resumed run reproduces the
uninterrupted one. The checkpoints are deleted after a successful run unless ``train.keep_checkpoints``.

Defaults follow MediTOD section 4.3: LoRA r=32, alpha=32, lr 1e-4, effective batch 16, cosine schedule
with 10% warm-up. At the end: the adapter in ``output_dir``, token loss on the valid split, generation on the
valid split through the ``hf`` backend with the saved adapter, MediTOD metrics (``eval.metrics.score``) and parse
statistics, all written to a card (``card.json`` + ``card.md``) beside the adapter.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import logging
import math
import os
import random
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.core.data import data_hash, load_dialogues, task_examples
from models import prompts
from models.train_card import Scorer, evaluate, headline, short_parse, versions, write_card
from models.train_checkpoints import checkpoint_dirs, resolve_resume, trajectory_config
from models.train_config import VLLM_LORA_RANKS, PeftSettings, TrainConfig, TrainSettings, load_config
from models.train_data import (  # noqa: F401  (re-exported: the helpers tests and notebooks import from here)
    CompletionCollator,
    FeatureDataset,
    build_features,
    collate,
    group_loss,
    n_target_tokens,
    target_span,
    token_loss,
    tokenize_example,
)

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- model


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``. One process trains on one device; several GPUs
    are several processes (``accelerate launch``), one GPU each."""
    import torch

    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"device {device!r}: use auto, cpu or cuda (pick GPUs with CUDA_VISIBLE_DEVICES; "
                         "several GPUs: accelerate launch -m agent.cli train ...)")
    if device != "auto":
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_dtype(dtype: str, device: str) -> Any:
    import torch

    if dtype == "auto":
        if not device.startswith("cuda"):
            return torch.float32
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return getattr(torch, dtype)


def resolve_mixed_precision(setting: str, device: str) -> str:
    """``auto``: bf16 autocast on a GPU that has it, fp16 (with loss scaling) on one that does not, none on CPU."""
    import torch

    if setting != "auto":
        return setting
    if not device.startswith("cuda"):
        return "no"
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def peft_config(settings: PeftSettings, total_steps: int, warmup_steps: int = 0) -> Any:
    import peft

    if settings.method == "lora":
        return peft.LoraConfig(r=settings.r, lora_alpha=settings.alpha, lora_dropout=settings.dropout,
                               target_modules=settings.target_modules, bias="none", task_type="CAUSAL_LM")
    if settings.method == "adalora":
        return peft.AdaLoraConfig(init_r=settings.r, target_r=settings.adalora_target_r, lora_alpha=settings.alpha,
                                  lora_dropout=settings.dropout, target_modules=settings.target_modules,
                                  orth_reg_weight=settings.adalora_orth_reg_weight,
                                  total_step=max(total_steps, 1), tinit=min(warmup_steps, max(total_steps - 1, 0)),
                                  tfinal=0, task_type="CAUSAL_LM")  # rank budgeting starts after warm-up
    if settings.method == "ia3":
        return peft.IA3Config(target_modules=settings.ia3_target_modules,
                              feedforward_modules=settings.ia3_feedforward_modules, task_type="CAUSAL_LM")
    if settings.method == "prompt_tuning":
        return peft.PromptTuningConfig(num_virtual_tokens=settings.num_virtual_tokens, task_type="CAUSAL_LM")
    raise ValueError(f"unknown peft method {settings.method!r}")


def load_base(cfg: TrainConfig, base_path: str, device: str) -> Any:
    """The base model on the CPU (``Trainer`` places it), or, for QLoRA, quantised onto this process's GPU."""
    import torch
    from transformers import AutoModelForCausalLM

    kwargs: dict[str, Any] = {"dtype": resolve_dtype(cfg.dtype, device)}
    if cfg.quantization == "4bit":
        if importlib.util.find_spec("bitsandbytes") is None:
            raise RuntimeError("quantization: 4bit (QLoRA) needs bitsandbytes: pip install bitsandbytes "
                               "(and a CUDA GPU), or set quantization: none")
        from accelerate import PartialState
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16)
        kwargs["device_map"] = {"": PartialState().local_process_index if device == "cuda" else device}
    model = AutoModelForCausalLM.from_pretrained(base_path, **kwargs)
    if cfg.quantization == "4bit":
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=cfg.train.gradient_checkpointing,
            gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


# --------------------------------------------------------------------------- schedule + Trainer arguments


def plan_steps(t: TrainSettings, n_examples: int, world_size: int = 1) -> dict[str, int]:
    """Gradient accumulation, optimizer steps and warm-up, counted as ``Trainer`` counts them (an epoch is
    ``ceil(batches / accumulation)`` steps, the last one possibly short)."""
    per_pass = t.micro_batch_size * world_size
    accumulation = max(1, round(t.effective_batch_size / per_pass))
    if accumulation * per_pass != t.effective_batch_size:
        log.warning("effective_batch_size %d is not micro_batch_size %d x %d device(s) x an integer: training with %d",
                    t.effective_batch_size, t.micro_batch_size, world_size, accumulation * per_pass)
    batches = math.ceil(n_examples / per_pass)  # per process
    steps_per_epoch = max(batches // accumulation + int(batches % accumulation > 0), 1)
    total = t.max_steps or max(1, math.ceil(steps_per_epoch * t.epochs))
    return {"gradient_accumulation_steps": accumulation, "effective_batch_size": accumulation * per_pass,
            "steps_per_epoch": steps_per_epoch, "total_steps": total,
            "warmup_steps": math.ceil(t.warmup_ratio * total), "world_size": world_size}


def training_arguments(cfg: TrainConfig, plan: dict[str, int], device: str, progress: bool) -> Any:
    """``TrainingArguments`` from the config; ``train.trainer_args`` passes anything else through."""
    from transformers import TrainingArguments

    t = cfg.train
    precision = resolve_mixed_precision(t.mixed_precision, device)
    kwargs: dict[str, Any] = dict(
        output_dir=cfg.output_dir,
        per_device_train_batch_size=t.micro_batch_size,
        gradient_accumulation_steps=plan["gradient_accumulation_steps"],
        max_steps=plan["total_steps"],
        learning_rate=t.lr,
        lr_scheduler_type={"constant": "constant_with_warmup"}.get(t.scheduler, t.scheduler),
        warmup_steps=plan["warmup_steps"],
        weight_decay=t.weight_decay,
        max_grad_norm=t.max_grad_norm,
        seed=t.seed,
        data_seed=t.seed,
        logging_steps=t.logging_steps,
        save_strategy="steps" if t.save_steps else "no",
        save_steps=t.save_steps or 500,
        save_total_limit=t.save_total_limit,
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        gradient_checkpointing=t.gradient_checkpointing and cfg.quantization == "none",  # QLoRA: set by peft
        gradient_checkpointing_kwargs={"use_reentrant": False},
        report_to=t.report_to,
        disable_tqdm=not progress,
        remove_unused_columns=False,  # the collator reads the features' own keys
        use_cpu=device == "cpu",
        dataloader_pin_memory=device == "cuda",
    )
    if t.optim:
        kwargs["optim"] = t.optim
    return TrainingArguments(**(kwargs | t.trainer_args))


# --------------------------------------------------------------------------- training


@dataclass
class TrainData:
    """The training features and what the card says about the data."""

    data_dir: Path
    train_hash: str
    valid_dialogues: list
    features: list[dict]
    skipped: int  # examples longer than train.max_length: skipped, never cut


@dataclass
class Fitted:
    """What one training run did, for the card (the main process only)."""

    plan: dict[str, int]
    trainable: int
    losses: list[float]
    resumed_from: Path | None
    train_time_s: float
    device: str
    valid_loss_before: float | None
    valid_loss_after: float | None
    adalora_calls: int | None
    orth_scale: int


def train(cfg: TrainConfig, progress: bool = True, callbacks: list | None = None, scorer: Scorer | None = None) -> dict:
    """Train, save the adapter and its card into ``cfg.output_dir``; returns the card (an empty dict on the
    processes other than the main one of a multi-process run). ``callbacks``: extra ``TrainerCallback``\\ s;
    ``scorer``: the valid split's metrics (``medhx train`` passes ``eval.metrics.score.score_rows``)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoTokenizer

    from models.prepare import resolve_base_model

    started = time.time()
    device = resolve_device(cfg.device)
    base_path = resolve_base_model(cfg.base_model)
    tokenizer = AutoTokenizer.from_pretrained(base_path)
    data = load_train_data(cfg, tokenizer)
    fitted = fit(cfg, base_path, device, tokenizer, data, started, progress, callbacks)
    if fitted is None:  # not the main process of a multi-process run
        return {}
    gc.collect()  # the Trainer and the training model are gone: free their memory before evaluating
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    card = build_card(cfg, base_path, device, data, fitted)
    if cfg.eval.enabled and data.valid_dialogues:
        card["valid"]["tasks"] = evaluate(cfg, base_path, Path(cfg.output_dir), tokenizer, data.valid_dialogues,
                                          progress, scorer)
    card["wall_time_s"] = round(time.time() - started, 1)
    write_card(Path(cfg.output_dir), card)
    return card


def load_train_data(cfg: TrainConfig, tokenizer: Any) -> TrainData:
    """The training split's examples of every task, shuffled together, tokenised; the valid split's dialogues."""
    data_dir = Path(cfg.data)
    train_dialogues = load_dialogues(data_dir, cfg.train_split)
    valid_dialogues = load_dialogues(data_dir, cfg.valid_split) if cfg.valid_split else []
    train_examples = [e for t in cfg.tasks for e in task_examples(t, train_dialogues, cfg.history)]
    random.Random(cfg.train.seed).shuffle(train_examples)  # multitask: the three tasks mixed (PromptCBLUE style)
    if cfg.train.limit_examples:
        train_examples = train_examples[:cfg.train.limit_examples]
    features, skipped = build_features(train_examples, tokenizer, cfg.train.max_length)
    if not features:
        raise ValueError(f"no training examples for tasks {cfg.tasks} in split {cfg.train_split!r} of {cfg.data}")
    return TrainData(data_dir, data_hash(train_dialogues), valid_dialogues, features, skipped)


def fit(cfg: TrainConfig, base_path: str, device: str, tokenizer: Any, data: TrainData, started: float,
        progress: bool, callbacks: list | None) -> Fitted | None:
    """Train the adapter with ``Trainer`` and save it into ``output_dir``; ``None`` on the processes other than
    the main one. The model and the ``Trainer`` live in this function only, so they are freed when it returns."""
    from accelerate import PartialState

    resume_from, stale = resolve_resume(cfg, data.train_hash)
    plan, args = plan_training(cfg, len(data.features), device, progress)
    state = PartialState()
    if state.is_main_process:
        for p in stale:
            log.warning("deleting checkpoint %s (%s)", p, "past the resume point" if resume_from else "starting over")
            shutil.rmtree(p, ignore_errors=True)
    state.wait_for_everyone()

    model, trainable = build_peft_model(cfg, base_path, device, plan)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    trainer, adalora = make_trainer(cfg, model, args, data, pad_id, resume_from,
                                    trajectory_config(cfg, data.train_hash), progress, callbacks)
    orth_scale = scale_adalora_regulariser(cfg, trainer, adalora, plan, args)

    sharded = bool(trainer.is_deepspeed_enabled or trainer.is_fsdp_enabled)
    valid_features: list[dict] = []
    for t in cfg.tasks:
        exs = task_examples(t, data.valid_dialogues, cfg.history)[:cfg.eval.limit or None]
        valid_features += build_features(exs, tokenizer, cfg.train.max_length)[0]
    measure = cfg.eval.enabled and state.is_main_process and not sharded
    micro = cfg.train.micro_batch_size
    valid_loss_before = token_loss(model, valid_features, micro, pad_id, args.device) if measure else None

    trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    train_time = time.time() - started
    if adalora is not None:
        adalora.adapter_config.orth_reg_weight = cfg.peft.adalora_orth_reg_weight  # as configured, in the saved config
    out_dir = Path(cfg.output_dir)
    trainer.save_model(str(out_dir))  # the adapter (gathered from all processes under DeepSpeed / FSDP)
    if trainer.is_world_process_zero():
        (out_dir / "training_args.bin").unlink(missing_ok=True)  # a pickle; the card carries the config
    losses = [e["loss"] for e in trainer.state.log_history if "loss" in e]
    if not trainer.is_world_process_zero():
        return None
    valid_loss_after = token_loss(model, valid_features, micro, pad_id, args.device) if measure else None
    if not cfg.train.keep_checkpoints:
        for p in checkpoint_dirs(out_dir):
            shutil.rmtree(p, ignore_errors=True)
    return Fitted(plan=plan, trainable=trainable, losses=losses, resumed_from=resume_from, train_time_s=train_time,
                  device=str(args.device), valid_loss_before=valid_loss_before, valid_loss_after=valid_loss_after,
                  adalora_calls=adalora.calls if adalora is not None else None, orth_scale=orth_scale)


def plan_training(cfg: TrainConfig, n_features: int, device: str, progress: bool) -> tuple[dict[str, int], Any]:
    """The step plan and ``TrainingArguments``, made before the model (DeepSpeed ZeRO-3 needs them first)."""
    plan = plan_steps(cfg.train, n_features, int(os.environ.get("WORLD_SIZE", "1")))
    args = training_arguments(cfg, plan, device, progress)
    devices = args.world_size * max(args.n_gpu, 1)  # n_gpu > 1: one process feeding all visible GPUs (DataParallel)
    if devices != plan["world_size"]:
        log.warning("one process on %d GPUs (DataParallel): for several GPUs prefer accelerate launch -m agent.cli "
                    "train ...; CUDA_VISIBLE_DEVICES=0 trains on one", devices)
        plan = plan_steps(cfg.train, n_features, devices)
        args = training_arguments(cfg, plan, device, progress)
    return plan, args


def build_peft_model(cfg: TrainConfig, base_path: str, device: str, plan: dict[str, int]) -> tuple[Any, int]:
    """The base model with a fresh adapter, and its number of trainable parameters."""
    from peft import get_peft_model
    from transformers import set_seed

    set_seed(cfg.train.seed)
    model = load_base(cfg, base_path, device)
    set_seed(cfg.train.seed)  # the adapter's initialisation depends on the seed alone
    model = get_peft_model(model, peft_config(cfg.peft, plan["total_steps"], plan["warmup_steps"]))
    trainable, total_params = model.get_nb_trainable_parameters()
    log.info("peft %s: %d trainable of %d parameters (%.3f%%)", cfg.peft.method, trainable, total_params,
             100 * trainable / total_params)
    if cfg.peft.method != "lora":
        log.warning("peft method %s: only LoRA adapters are servable by vLLM; this adapter loads with the hf backend "
                    "(transformers + peft) only", cfg.peft.method)
    elif cfg.peft.r not in VLLM_LORA_RANKS:
        log.warning("LoRA r=%d is not a rank vLLM accepts for --max-lora-rank %s", cfg.peft.r, VLLM_LORA_RANKS)
    return model, trainable


def make_trainer(cfg: TrainConfig, model: Any, args: Any, data: TrainData, pad_id: int, resume_from: Path | None,
                 stamp: dict[str, Any], progress: bool, callbacks: list | None) -> tuple[Any, Any]:
    """The ``Trainer`` with medhx's callbacks, and the AdaLoRA callback (``None`` for the other methods)."""
    from transformers import Trainer
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    from models.train_callbacks import AdaLoraCallback, BarCallback, LossLogCallback, StampCallback

    own = [StampCallback(stamp), LossLogCallback()]
    adalora = AdaLoraCallback(model, resume_from) if cfg.peft.method == "adalora" else None
    if adalora is not None:
        own.append(adalora)
    trainer = Trainer(model=model, args=args, train_dataset=FeatureDataset(data.features),
                      data_collator=CompletionCollator(pad_id, trim=not model.active_peft_config.is_prompt_learning),
                      callbacks=own + list(callbacks or []))
    trainer.remove_callback(PrinterCallback)  # stdout carries the summary only: log lines go to logging
    if progress:
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(BarCallback)
    if adalora is not None and trainer.is_fsdp_enabled:
        raise ValueError("AdaLoRA's rank budget reads whole gradients, which FSDP shards: train it with DDP or "
                         "DeepSpeed (accelerate launch --use_deepspeed ...)")
    return trainer, adalora


def scale_adalora_regulariser(cfg: TrainConfig, trainer: Any, adalora: Any, plan: dict[str, int], args: Any) -> int:
    """Divide AdaLoRA's orthogonal regulariser so that each optimizer step carries it once; returns the divisor.

    peft adds the regulariser to every micro-batch's loss, and ``Trainer`` sums those (scaled by the number of
    processes, whose gradients DDP averages) when the model takes the loss's token count."""
    if adalora is None or not trainer.model_accepts_loss_kwargs:
        return 1
    orth_scale = plan["gradient_accumulation_steps"] * (plan["world_size"] if args.average_tokens_across_devices else 1)
    adalora.adapter_config.orth_reg_weight = cfg.peft.adalora_orth_reg_weight / orth_scale
    return orth_scale


def build_card(cfg: TrainConfig, base_path: str, device: str, data: TrainData, fitted: Fitted) -> dict[str, Any]:
    """The card of a trained adapter (the valid-split evaluation and the wall time are added after)."""
    losses, plan = fitted.losses, fitted.plan
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
            "dir": str(data.data_dir),
            "train_split": cfg.train_split,
            "train_hash": data.train_hash,
            "valid_split": cfg.valid_split,
            "valid_hash": data_hash(data.valid_dialogues),
            "history": cfg.history,
        },
        "train": {
            "trainer": "transformers.Trainer",
            "examples": len(data.features),
            "skipped_too_long": data.skipped,
            "optimizer_steps": plan["total_steps"],
            "warmup_steps": plan["warmup_steps"],
            "effective_batch_size": plan["effective_batch_size"],
            "micro_batch_size": cfg.train.micro_batch_size,
            "gradient_accumulation_steps": plan["gradient_accumulation_steps"],
            "processes": plan["world_size"],
            "mixed_precision": resolve_mixed_precision(cfg.train.mixed_precision, device),
            "gradient_checkpointing": cfg.train.gradient_checkpointing,
            "trainable_parameters": fitted.trainable,
            "loss_first": losses[0] if losses else None,
            "loss_last": losses[-1] if losses else None,
            "losses": [round(x, 5) for x in losses],
            "resumed_from": str(fitted.resumed_from) if fitted.resumed_from else None,
            "wall_time_s": round(fitted.train_time_s, 1),
            "device": fitted.device,
        },
        "valid": {"token_loss_before": fitted.valid_loss_before, "token_loss_after": fitted.valid_loss_after},
        "config": cfg.model_dump(),
        "versions": versions(),
    }
    if fitted.adalora_calls is not None:
        card["train"]["adalora"] = {
            "update_and_allocate_calls": fitted.adalora_calls,
            "orth_reg_weight": cfg.peft.adalora_orth_reg_weight,
            "orth_reg_weight_per_micro_batch": cfg.peft.adalora_orth_reg_weight / fitted.orth_scale,
        }
    return card


# --------------------------------------------------------------------------- CLI


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """``medhx train``; the top (``agent.cli``) sets the ``scorer`` default: the valid split's metrics."""
    p = sub.add_parser("train", help="fine-tune a peft adapter (LoRA by default) for nlu / pol / nlg / multitask")
    p.add_argument("--config", required=True, help="YAML, e.g. configs/train/nlu.yaml")
    p.add_argument("--output-dir", help="override output_dir")
    p.add_argument("--max-steps", type=int, help="override train.max_steps")
    p.add_argument("--resume", nargs="?", const=True, default=None, metavar="CHECKPOINT",
                   help="continue from the newest checkpoint in output_dir (fresh start when there is none), "
                        "or from CHECKPOINT")
    p.add_argument("--no-resume", dest="resume", action="store_const", const=False,
                   help="delete output_dir's checkpoints and start over")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config key (dotted, YAML value), e.g. --set peft.method=ia3")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cmd_train, scorer=None)
    return p


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
    if getattr(args, "resume", None) is not None:
        out["train.resume"] = args.resume
    return out


def _cmd_train(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, _parse_overrides(args))
    card = train(cfg, progress=not args.no_progress, scorer=args.scorer)
    if not card:  # not the main process of a multi-process run
        return 0
    print(
        json.dumps(
            {k: card[k] for k in ("adapter", "peft_method", "wall_time_s")}
            | {
                "output_dir": cfg.output_dir,
                "loss_first": card["train"]["loss_first"],
                "loss_last": card["train"]["loss_last"],
                "resumed_from": card["train"]["resumed_from"],
                "valid": {k: v for k, v in card["valid"].items() if k != "tasks"}
                | {
                    t: {"parse": short_parse(r["parse"]), "metrics": headline(t, r["metrics"])}
                    for t, r in (card["valid"].get("tasks") or {}).items()
                },
            },
            indent=2,
        )
    )
    return 0
