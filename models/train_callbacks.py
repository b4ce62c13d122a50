"""The ``TrainerCallback``\\ s of ``medhx train`` (``models.train``): the progress bar, the loss log, the
trajectory stamp in every checkpoint, and AdaLoRA's rank budget.

This module imports torch and transformers at its top: ``models.train`` imports it inside ``train()`` only, so
``medhx --help`` never loads them.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback
from transformers.trainer_callback import ProgressCallback

from models.train_checkpoints import ADALORA_STATE, CHECKPOINT_CONFIG

log = logging.getLogger(__name__)


class BarCallback(ProgressCallback):
    """``Trainer``'s progress bar (stderr) with the loss as its postfix, instead of log lines on stdout."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and self.training_bar is not None and logs and "loss" in logs:
            self.training_bar.set_postfix(loss=f"{logs['loss']:.4f}", lr=f"{logs.get('learning_rate', 0):.2e}")


class StampCallback(TrainerCallback):
    """Writes the trajectory config into every checkpoint, so a resume can check it."""

    def __init__(self, stamp: dict[str, Any]):
        self.stamp = stamp

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            path = Path(args.output_dir) / f"checkpoint-{state.global_step}" / CHECKPOINT_CONFIG
            if path.parent.is_dir():
                path.write_text(json.dumps(self.stamp, indent=1) + "\n")


class LossLogCallback(TrainerCallback):
    """Logs each logged loss through ``logging`` (``Trainer``'s printer is removed: stdout stays clean)."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs and "loss" in logs:
            log.info("step %d/%d loss %.4f lr %.3g", state.global_step, state.max_steps, logs["loss"],
                     logs.get("learning_rate", float("nan")))


class AdaLoraCallback(TrainerCallback):
    """AdaLoRA's budget: ``update_and_allocate`` after each optimizer step, before the gradients are zeroed
    (its importance scores read them), as peft's own loop does.

    Checkpoints: peft would save a masked adapter resized by its rank pattern, which then cannot be
    loaded back into the full-rank model being trained; the pattern is held back while ``Trainer`` saves
    (the masked singular values are zero in the saved weights anyway) and written, with the allocator's
    importance averages, to ``adalora_state.pt`` in the checkpoint, and restored on resume."""

    def __init__(self, model: Any, resume_from: Path | None):
        self.model = model
        self.resume_from = resume_from
        self.calls = 0
        self._held: Any = None
        self._holding = False

    @property
    def tuner(self) -> Any:
        return self.model.base_model

    @property
    def adapter_config(self) -> Any:
        return self.tuner.peft_config[self.tuner.trainable_adapter_name]

    def on_optimizer_step(self, args, state, control, **kwargs):
        if self.resume_from is not None:
            self._restore(self.resume_from)
            self.resume_from = None
        self.tuner.update_and_allocate(state.global_step)
        self.calls += 1

    def on_step_end(self, args, state, control, **kwargs):
        if control.should_save:
            self._held, self._holding = self.adapter_config.rank_pattern, True
            self.adapter_config.rank_pattern = None

    def on_save(self, args, state, control, **kwargs):
        if self._holding:
            self.adapter_config.rank_pattern, self._holding = self._held, False
        ckpt = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if state.is_world_process_zero and ckpt.is_dir():
            alloc = self.tuner.rankallocator
            torch.save({"rank_pattern": self.adapter_config.rank_pattern, "ipt": alloc.ipt,
                        "exp_avg_ipt": alloc.exp_avg_ipt, "exp_avg_unc": alloc.exp_avg_unc}, ckpt / ADALORA_STATE)

    def _restore(self, checkpoint: Path) -> None:
        path = checkpoint / ADALORA_STATE
        if not path.is_file():
            log.warning("%s has no %s: AdaLoRA's importance averages restart from zero", checkpoint, ADALORA_STATE)
            return
        device = next(p.device for p in self.model.parameters() if p.requires_grad)
        saved = torch.load(path, map_location=device, weights_only=True)
        self.adapter_config.rank_pattern = saved["rank_pattern"]
        alloc = self.tuner.rankallocator
        alloc.ipt, alloc.exp_avg_ipt, alloc.exp_avg_unc = saved["ipt"], saved["exp_avg_ipt"], saved["exp_avg_unc"]
