"""Checkpoints and resume of ``medhx train`` (``models.train``); the callbacks that write them are in
``models.train_callbacks``.

A checkpoint is ``Trainer``'s ``output_dir/checkpoint-N`` plus two medhx files: ``medhx_train.json`` (the
config that decides the trajectory, checked on resume) and, for AdaLoRA, ``adalora_state.pt`` (its rank
allocator, which peft keeps in memory only).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

CHECKPOINT_RE = re.compile(r"^checkpoint-(\d+)$")
CHECKPOINT_CONFIG = "medhx_train.json"  # the trajectory-relevant config, written into every checkpoint
ADALORA_STATE = "adalora_state.pt"  # AdaLoRA's rank allocator (importance averages, rank pattern) per checkpoint


# --------------------------------------------------------------------------- checkpoints + resume


def list_checkpoints(out_dir: Path) -> list[tuple[int, Path]]:
    """``(step, path)`` of the complete checkpoints in ``out_dir``, oldest first. A checkpoint is complete
    once ``trainer_state.json`` is written (``Trainer`` writes it last), so one cut short by a kill is skipped."""
    if not out_dir.is_dir():
        return []
    found = []
    for p in out_dir.iterdir():
        m = CHECKPOINT_RE.match(p.name)
        if m and p.is_dir() and (p / "trainer_state.json").is_file():
            found.append((int(m.group(1)), p))
    return sorted(found)


def checkpoint_dirs(out_dir: Path) -> list[Path]:
    return [p for p in out_dir.iterdir() if CHECKPOINT_RE.match(p.name) and p.is_dir()] if out_dir.is_dir() else []


def trajectory_config(cfg: Any, train_hash: str) -> dict[str, Any]:  # cfg: models.train.TrainConfig
    """What decides the training trajectory: a checkpoint resumes only under the same (logging, saving,
    evaluation, device, precision, naming and the data's location may change between the runs; the training
    split's content may not: its hash is part of it). An exact resume also needs the same number of processes."""
    dump = cfg.model_dump(exclude={"eval", "output_dir", "adapter_name", "device", "valid_split", "data", "dtype"})
    for key in ("resume", "save_steps", "save_total_limit", "keep_checkpoints", "logging_steps", "report_to",
                "trainer_args", "mixed_precision", "gradient_checkpointing"):
        dump["train"].pop(key)
    return {"config": dump, "train_hash": train_hash}


def resolve_resume(cfg: Any, train_hash: str) -> tuple[Path | None, list[Path]]:
    """The checkpoint to resume from (or ``None``) and the checkpoint directories to delete first.

    Reads the disk only: the caller deletes, on the main process, so every process decides alike."""
    out_dir, resume = Path(cfg.output_dir), cfg.train.resume
    complete = list_checkpoints(out_dir)
    if isinstance(resume, str):
        path = Path(resume)
        if not (path / "trainer_state.json").is_file():
            raise ValueError(f"--resume {resume}: not a complete checkpoint directory (no trainer_state.json)")
        chosen: Path | None = path
    elif resume is True:
        chosen = complete[-1][1] if complete else None
        if chosen is None:
            log.info("--resume: no checkpoint in %s, starting from the beginning", out_dir)
    else:
        if complete and resume is None:
            state = json.loads((complete[-1][1] / "trainer_state.json").read_text())
            if state.get("global_step", 0) < state.get("max_steps", 0):
                raise ValueError(
                    f"{out_dir} holds {complete[-1][1].name} of an unfinished run ({state['global_step']} of "
                    f"{state['max_steps']} steps): pass --resume to continue it, or --no-resume to delete its "
                    "checkpoints and start over")
        return None, checkpoint_dirs(out_dir)
    if chosen is not None:
        _check_same_trajectory(chosen, trajectory_config(cfg, train_hash))
        step = int(json.loads((chosen / "trainer_state.json").read_text())["global_step"])
        # checkpoints past the resume point (or cut short) would be overwritten or confuse the rotation
        stale = [p for p in checkpoint_dirs(out_dir)
                 if int(CHECKPOINT_RE.match(p.name).group(1)) > step and p.resolve() != chosen.resolve()]
        return chosen, stale
    return None, checkpoint_dirs(out_dir)


def _check_same_trajectory(checkpoint: Path, expected: dict[str, Any]) -> None:
    stamp = checkpoint / CHECKPOINT_CONFIG
    if not stamp.is_file():
        log.warning("%s has no %s: cannot check that it was trained with this config", checkpoint, CHECKPOINT_CONFIG)
        return
    saved = json.loads(stamp.read_text())
    diffs = sorted(_diff(saved, json.loads(json.dumps(expected))))
    if diffs:
        raise ValueError(f"{checkpoint} was trained with a different config ({', '.join(diffs)}): resume with the "
                         "same config, or train into a new output_dir")


def _diff(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _diff(a.get(k), b.get(k), f"{prefix}{k}.")]
    return [] if a == b else [prefix.rstrip(".").removeprefix("config.")]
