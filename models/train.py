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
valid split through the ``hf`` backend with the saved adapter, MediTOD metrics (``eval.score``) and parse
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
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent.data import DEFAULT_DATA_DIR, Example, data_hash, load_dialogues, task_examples
from agent.paths import ConfigPath, ModelRef, read_config_file, resolve_paths
from agent.provenance import package_versions
from models import prompts
from models.train_checkpoints import checkpoint_dirs, make_callbacks, resolve_resume, trajectory_config
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
    adalora_orth_reg_weight: float = 0.5  # AdaLoRA's orthogonal regulariser, once per optimizer step
    ia3_target_modules: list[str] = Field(default_factory=lambda: ["k_proj", "v_proj", "down_proj"])
    ia3_feedforward_modules: list[str] = Field(default_factory=lambda: ["down_proj"])
    num_virtual_tokens: int = 20  # prompt tuning

    @model_validator(mode="after")
    def _adalora_prunes(self) -> PeftSettings:
        if self.method == "adalora" and self.adalora_target_r >= self.r:
            raise ValueError(f"adalora_target_r ({self.adalora_target_r}) must be below r ({self.r}): AdaLoRA prunes "
                             "the rank from r down to it")
        if self.adalora_orth_reg_weight < 0:
            raise ValueError("adalora_orth_reg_weight must be >= 0")
        return self


# TrainingArguments fields medhx sets from its own keys: trainer_args may not set them
_MANAGED_TRAINER_ARGS = {
    "output_dir": "output_dir", "per_device_train_batch_size": "train.micro_batch_size",
    "gradient_accumulation_steps": "train.effective_batch_size", "max_steps": "train.max_steps",
    "num_train_epochs": "train.epochs", "learning_rate": "train.lr", "lr_scheduler_type": "train.scheduler",
    "warmup_steps": "train.warmup_ratio", "weight_decay": "train.weight_decay",
    "max_grad_norm": "train.max_grad_norm", "seed": "train.seed", "data_seed": "train.seed",
    "save_steps": "train.save_steps", "save_strategy": "train.save_steps", "save_total_limit": "train.save_total_limit",
    "logging_steps": "train.logging_steps", "bf16": "train.mixed_precision", "fp16": "train.mixed_precision",
    "gradient_checkpointing": "train.gradient_checkpointing", "report_to": "train.report_to", "optim": "train.optim",
    "use_cpu": "device", "resume_from_checkpoint": "train.resume", "remove_unused_columns": "(fixed)",
    "disable_tqdm": "--no-progress",
}


class TrainSettings(_Strict):
    lr: float = 1e-4
    micro_batch_size: int = 1  # per device
    effective_batch_size: int = 16  # micro_batch_size x gradient accumulation x devices
    epochs: float = 3
    max_steps: int | None = None  # optimizer steps; overrides epochs
    warmup_ratio: float = 0.1
    scheduler: Literal["cosine", "linear", "constant"] = "cosine"
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    max_length: int = 2048  # longer examples are skipped and counted, never cut
    limit_examples: int | None = None  # first N training examples (after shuffling), for smoke runs
    gradient_checkpointing: bool = False
    mixed_precision: Literal["auto", "no", "bf16", "fp16"] = "auto"  # auto: bf16 (fp16 without bf16) on CUDA, none on CPU
    optim: str | None = None  # a transformers optimizer name (adamw_torch, adamw_torch_fused, paged_adamw_8bit...)
    seed: int = 0
    save_steps: int = 50  # a resumable checkpoint every N optimizer steps (0: none)
    save_total_limit: int | None = 2  # newest checkpoints kept
    keep_checkpoints: bool = False  # keep output_dir/checkpoint-* after a successful run
    resume: bool | str | None = None  # true: newest checkpoint in output_dir; a path: that one; false: start over
    logging_steps: int = 1  # the card's loss curve and report_to get the mean loss of every N steps
    report_to: str | list[str] = "none"  # transformers' report_to: none | all | tensorboard | wandb | mlflow ...
    trainer_args: dict[str, Any] = Field(default_factory=dict)  # any other TrainingArguments field, passed through

    @field_validator("effective_batch_size", "micro_batch_size", "logging_steps")
    @classmethod
    def _positive(cls, v: int, info: Any) -> int:
        if v < 1:
            raise ValueError(f"{info.field_name} must be >= 1")
        return v

    @field_validator("save_steps")
    @classmethod
    def _non_negative(cls, v: int) -> int:
        if v < 0:
            raise ValueError("save_steps must be >= 0 (0: no checkpoints)")
        return v

    @field_validator("trainer_args")
    @classmethod
    def _trainer_args(cls, v: dict[str, Any]) -> dict[str, Any]:
        if not v:
            return v
        import dataclasses

        from transformers import TrainingArguments

        known = {f.name for f in dataclasses.fields(TrainingArguments)}
        for key in v:
            if key in _MANAGED_TRAINER_ARGS:
                raise ValueError(f"trainer_args.{key} is set by medhx: use {_MANAGED_TRAINER_ARGS[key]}")
            if key not in known:
                raise ValueError(f"trainer_args.{key} is not a transformers TrainingArguments field")
        return v


class EvalSettings(_Strict):
    enabled: bool = True
    limit: int | None = None  # first N valid examples per task
    max_tokens: int | None = None  # per task default of models.modules
    constrained: bool = False  # hf generation has no JSON-schema constraint; the vLLM backends do
    match: str = "exact"


class TrainConfig(_Strict):
    base_model: ModelRef = "smollm2"
    tasks: list[Literal["nlu", "pol", "nlg"]] = Field(default_factory=lambda: ["nlu"])
    adapter_name: str | None = None  # default: the task, or "multitask"
    data: ConfigPath = str(DEFAULT_DATA_DIR)
    train_split: str = "train"
    valid_split: str = "valid"
    history: int | None = 4
    output_dir: ConfigPath = "runs/adapter"  # relative to the config file's directory
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    quantization: Literal["none", "4bit"] = "none"  # 4bit = QLoRA (needs bitsandbytes)
    device: str = "auto"  # auto | cpu | cuda: one process, one device (several GPUs: accelerate launch)
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
    """A YAML training config, with ``overrides`` (dotted keys, e.g. ``train.max_steps``) applied on top.

    Paths in the file are relative to the file's directory (:mod:`agent.paths`); paths given as overrides on the
    command line are relative to the current directory, as anything typed at a prompt."""

    raw, base = read_config_file(path)
    raw = resolve_paths(TrainConfig, raw, base)
    for key, value in (overrides or {}).items():
        node = raw
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    raw = resolve_paths(TrainConfig, raw, Path.cwd())
    try:
        return TrainConfig.model_validate(raw)
    except Exception as exc:  # pydantic's message names the bad key; prefix the file
        raise ValueError(f"{path}: {exc}") from None



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


def train(cfg: TrainConfig, progress: bool = True, callbacks: list | None = None) -> dict:
    """Train, save the adapter and its card into ``cfg.output_dir``; returns the card (an empty dict on the
    processes other than the main one of a multi-process run). ``callbacks``: extra ``TrainerCallback``\\ s."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from accelerate import PartialState
    from peft import get_peft_model
    from transformers import AutoTokenizer, Trainer, set_seed
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    from models.prepare import resolve_base_model

    started = time.time()
    device = resolve_device(cfg.device)
    base_path = resolve_base_model(cfg.base_model)
    out_dir = Path(cfg.output_dir)
    tokenizer = AutoTokenizer.from_pretrained(base_path)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id

    data_dir = Path(cfg.data)
    train_dialogues = load_dialogues(data_dir, cfg.train_split)
    valid_dialogues = load_dialogues(data_dir, cfg.valid_split) if cfg.valid_split else []
    train_hash = data_hash(train_dialogues)
    train_examples = [e for t in cfg.tasks for e in task_examples(t, train_dialogues, cfg.history)]
    random.Random(cfg.train.seed).shuffle(train_examples)  # multitask: the three tasks mixed (PromptCBLUE style)
    if cfg.train.limit_examples:
        train_examples = train_examples[:cfg.train.limit_examples]
    features, skipped = build_features(train_examples, tokenizer, cfg.train.max_length)
    if not features:
        raise ValueError(f"no training examples for tasks {cfg.tasks} in split {cfg.train_split!r} of {cfg.data}")

    resume_from, stale = resolve_resume(cfg, train_hash)
    plan = plan_steps(cfg.train, len(features), int(os.environ.get("WORLD_SIZE", "1")))
    args = training_arguments(cfg, plan, device, progress)  # before the model: DeepSpeed ZeRO-3 needs it first
    devices = args.world_size * max(args.n_gpu, 1)  # n_gpu > 1: one process feeding all visible GPUs (DataParallel)
    if devices != plan["world_size"]:
        log.warning("one process on %d GPUs (DataParallel): for several GPUs prefer accelerate launch -m agent.cli "
                    "train ...; CUDA_VISIBLE_DEVICES=0 trains on one", devices)
        plan = plan_steps(cfg.train, len(features), devices)
        args = training_arguments(cfg, plan, device, progress)
    state = PartialState()
    if state.is_main_process:
        for p in stale:
            log.warning("deleting checkpoint %s (%s)", p, "past the resume point" if resume_from else "starting over")
            shutil.rmtree(p, ignore_errors=True)
    state.wait_for_everyone()

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

    made = make_callbacks()
    own = [made["stamp"](trajectory_config(cfg, train_hash)), made["log"]()]
    adalora = made["adalora"](model, resume_from) if cfg.peft.method == "adalora" else None
    if adalora is not None:
        own.append(adalora)
    trainer = Trainer(model=model, args=args, train_dataset=FeatureDataset(features),
                      data_collator=CompletionCollator(pad_id, trim=not model.active_peft_config.is_prompt_learning),
                      callbacks=own + list(callbacks or []))
    trainer.remove_callback(PrinterCallback)  # stdout carries the summary only: log lines go to logging
    if progress:
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(made["bar"])
    if adalora is not None and trainer.is_fsdp_enabled:
        raise ValueError("AdaLoRA's rank budget reads whole gradients, which FSDP shards: train it with DDP or "
                         "DeepSpeed (accelerate launch --use_deepspeed ...)")
    orth_scale = 1
    if adalora is not None and trainer.model_accepts_loss_kwargs:
        # peft adds the regulariser to every micro-batch's loss, and Trainer sums those (scaled by the number of
        # processes, whose gradients DDP averages): divide so that each optimizer step carries it once
        orth_scale = plan["gradient_accumulation_steps"] * (
            plan["world_size"] if args.average_tokens_across_devices else 1)
        adalora.adapter_config.orth_reg_weight = cfg.peft.adalora_orth_reg_weight / orth_scale

    sharded = bool(trainer.is_deepspeed_enabled or trainer.is_fsdp_enabled)
    valid_features: list[dict] = []
    for t in cfg.tasks:
        exs = task_examples(t, valid_dialogues, cfg.history)[:cfg.eval.limit or None]
        valid_features += build_features(exs, tokenizer, cfg.train.max_length)[0]
    measure = cfg.eval.enabled and state.is_main_process and not sharded
    micro = cfg.train.micro_batch_size
    valid_loss_before = token_loss(model, valid_features, micro, pad_id, args.device) if measure else None

    trainer.train(resume_from_checkpoint=str(resume_from) if resume_from else None)
    train_time = time.time() - started
    if adalora is not None:
        adalora.adapter_config.orth_reg_weight = cfg.peft.adalora_orth_reg_weight  # as configured, in the saved config
    trainer.save_model(str(out_dir))  # the adapter (gathered from all processes under DeepSpeed / FSDP)
    if trainer.is_world_process_zero():
        (out_dir / "training_args.bin").unlink(missing_ok=True)  # a pickle; the card carries the config
    history = trainer.state.log_history
    losses = [e["loss"] for e in history if "loss" in e]
    if not trainer.is_world_process_zero():
        return {}
    valid_loss_after = token_loss(model, valid_features, micro, pad_id, args.device) if measure else None
    if not cfg.train.keep_checkpoints:
        for p in checkpoint_dirs(out_dir):
            shutil.rmtree(p, ignore_errors=True)
    adalora_calls = adalora.calls if adalora is not None else None
    del trainer, model
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()

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
            "train_hash": train_hash,
            "valid_split": cfg.valid_split,
            "valid_hash": data_hash(valid_dialogues),
            "history": cfg.history,
        },
        "train": {
            "trainer": "transformers.Trainer",
            "examples": len(features),
            "skipped_too_long": skipped,
            "optimizer_steps": plan["total_steps"],
            "warmup_steps": plan["warmup_steps"],
            "effective_batch_size": plan["effective_batch_size"],
            "micro_batch_size": cfg.train.micro_batch_size,
            "gradient_accumulation_steps": plan["gradient_accumulation_steps"],
            "processes": plan["world_size"],
            "mixed_precision": resolve_mixed_precision(cfg.train.mixed_precision, device),
            "gradient_checkpointing": cfg.train.gradient_checkpointing,
            "trainable_parameters": trainable,
            "loss_first": losses[0] if losses else None,
            "loss_last": losses[-1] if losses else None,
            "losses": [round(x, 5) for x in losses],
            "resumed_from": str(resume_from) if resume_from else None,
            "wall_time_s": round(train_time, 1),
            "device": str(args.device),
        },
        "valid": {"token_loss_before": valid_loss_before, "token_loss_after": valid_loss_after},
        "config": cfg.model_dump(),
        "versions": _versions(),
    }
    if adalora_calls is not None:
        card["train"]["adalora"] = {"update_and_allocate_calls": adalora_calls,
                                    "orth_reg_weight": cfg.peft.adalora_orth_reg_weight,
                                    "orth_reg_weight_per_micro_batch": cfg.peft.adalora_orth_reg_weight / orth_scale}
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
        lines.append(f"- valid token loss: {valid['token_loss_before']:.4f} before -> {valid['token_loss_after']:.4f} after")
    for task, res in (valid.get("tasks") or {}).items():
        lines.append(f"- valid {task} ({res['examples']} turns): parse {json.dumps(_short_parse(res['parse']))}; "
                     f"metrics {json.dumps(_headline(task, res['metrics']))}")
    (out_dir / "card.md").write_text("\n".join(lines) + "\n")


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


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
    p.add_argument("--resume", nargs="?", const=True, default=None, metavar="CHECKPOINT",
                   help="continue from the newest checkpoint in output_dir (fresh start when there is none), "
                        "or from CHECKPOINT")
    p.add_argument("--no-resume", dest="resume", action="store_const", const=False,
                   help="delete output_dir's checkpoints and start over")
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
    if getattr(args, "resume", None) is not None:
        out["train.resume"] = args.resume
    return out


def _cmd_train(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, _parse_overrides(args))
    card = train(cfg, progress=not args.no_progress)
    if not card:  # not the main process of a multi-process run
        return 0
    print(json.dumps({k: card[k] for k in ("adapter", "peft_method", "wall_time_s")} | {
        "output_dir": cfg.output_dir, "loss_first": card["train"]["loss_first"], "loss_last": card["train"]["loss_last"],
        "resumed_from": card["train"]["resumed_from"],
        "valid": {k: v for k, v in card["valid"].items() if k != "tasks"} | {
            t: {"parse": _short_parse(r["parse"]), "metrics": _headline(t, r["metrics"])}
            for t, r in (card["valid"].get("tasks") or {}).items()}}, indent=2))
    return 0
