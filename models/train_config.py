"""The typed config of ``medhx train`` (``configs/train/*.yaml``): base model, tasks, data, peft method, the
``Trainer`` schedule and the evaluation after training. Unknown keys are an error; ``train.trainer_args`` passes
any other ``TrainingArguments`` field through, except the ones medhx sets from its own keys.

Defaults follow MediTOD section 4.3: LoRA r=32, alpha=32, lr 1e-4, effective batch 16, cosine schedule with 10%
warm-up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agent.core.data import DEFAULT_DATA_DIR
from agent.core.paths import ConfigPath, ModelRef, read_config_file, resolve_paths

LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
PeftMethod = Literal["lora", "adalora", "ia3", "prompt_tuning"]


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
    mixed_precision: Literal["auto", "no", "bf16", "fp16"] = (
        "auto"  # auto: bf16 (fp16 without bf16) on CUDA, none on CPU
    )
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

    Paths in the file are relative to the file's directory (:mod:`agent.core.paths`); paths given as overrides on the
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
