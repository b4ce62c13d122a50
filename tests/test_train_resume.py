"""``medhx train`` on ``transformers.Trainer``: a run killed (SIGKILL) after a checkpoint and resumed ends exactly
where the uninterrupted run ends; the token-weighted loss does not depend on the micro-batch; AdaLoRA's loss
carries its orthogonal regulariser and its budget is updated every step."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent.core.data import load_dialogues, task_examples
from models.train import TrainConfig, build_features, group_loss, load_config, peft_config, plan_steps, train

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent

# 6 examples, micro-batch 1, 2 per step: 3 steps an epoch, 6 steps = 2 epochs. Checkpoints every 2 steps; the
# killed run stops after step 5, so it resumes from checkpoint-4, one step into the second epoch (the sampler's
# second shuffle and the skipping of seen batches both matter). Dropout on: the RNG state must resume too.
RUN = {
    "tasks": ["nlu"],
    "peft": {"r": 8, "alpha": 16, "dropout": 0.1},
    "train": {"lr": 3e-3, "micro_batch_size": 1, "effective_batch_size": 2, "max_steps": 6, "limit_examples": 6,
              "warmup_ratio": 0.2, "scheduler": "cosine", "save_steps": 2, "save_total_limit": None,
              "keep_checkpoints": True},
    "eval": {"enabled": False},
}

KILLABLE = """
import json, sys, time
from pathlib import Path
from transformers import TrainerCallback
from models.train import TrainConfig, train

cfg = TrainConfig.model_validate(json.loads(sys.argv[1]))
stop_at, marker = int(sys.argv[2]), Path(sys.argv[3])

class Stall(TrainerCallback):
    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == stop_at:  # past a checkpoint, mid-run: wait here to be killed
            marker.write_text(str(state.global_step))
            time.sleep(600)

train(cfg, progress=False, callbacks=[Stall()])
"""


def _config(tiny_dir: Path, out: Path, **train_overrides) -> TrainConfig:
    raw = json.loads(json.dumps(RUN)) | {"base_model": str(tiny_dir), "output_dir": str(out)}
    raw["train"] |= train_overrides
    return TrainConfig.model_validate(raw)


def _log_losses(checkpoint: Path) -> list[float]:
    """The exact per-step losses (the card rounds its curve to 5 decimals)."""
    history = json.loads((checkpoint / "trainer_state.json").read_text())["log_history"]
    return [e["loss"] for e in history if "loss" in e]


def _adapter(out: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(out / "adapter_model.safetensors"))


def _kill_after(cfg: TrainConfig, stop_at: int, tmp_path: Path) -> None:
    """Run ``train(cfg)`` in a subprocess and SIGKILL it once it has finished step ``stop_at``."""
    marker = tmp_path / "stalled"
    script = tmp_path / "killable.py"
    script.write_text(KILLABLE)
    env = os.environ | {"PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, str(script), cfg.model_dump_json(), str(stop_at), str(marker)],
                            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 240
        while not marker.exists():
            if proc.poll() is not None:
                raise AssertionError(f"training exited ({proc.returncode}) before step {stop_at}: {proc.stderr.read()}")
            if time.time() > deadline:
                raise AssertionError(f"no step {stop_at} within 240 s")
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL


@pytest.fixture(scope="module")
def uninterrupted(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted") / "nlu"
    card = train(_config(tiny_model_dir, out), progress=False)
    return out, card


def test_killed_run_resumes_to_the_uninterrupted_result(tiny_model_dir, uninterrupted, tmp_path):
    import torch

    ref_out, ref_card = uninterrupted
    out = tmp_path / "nlu"
    cfg = _config(tiny_model_dir, out)
    _kill_after(cfg, stop_at=5, tmp_path=tmp_path)
    steps = sorted(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*"))
    assert steps == [2, 4] and not (out / "adapter_model.safetensors").exists()

    # without --resume a run refuses to start over an unfinished run's checkpoints
    with pytest.raises(ValueError, match="unfinished run"):
        train(cfg, progress=False)
    # nor resumes under a config that changes the trajectory
    with pytest.raises(ValueError, match="different config.*train.lr"):
        train(_config(tiny_model_dir, out, lr=1e-3, resume=True), progress=False)

    card = train(cfg.model_copy(update={"train": cfg.train.model_copy(update={"resume": True})}), progress=False)
    assert card["train"]["resumed_from"] == str(out / "checkpoint-4")

    ref_losses, losses = _log_losses(ref_out / "checkpoint-6"), _log_losses(out / "checkpoint-6")
    assert len(losses) == len(ref_losses) == 6
    assert losses == pytest.approx(ref_losses, abs=1e-5, rel=0)
    assert card["train"]["losses"] == ref_card["train"]["losses"]
    assert card["train"]["loss_last"] == pytest.approx(ref_card["train"]["loss_last"], abs=1e-5, rel=0)
    ref_weights, weights = _adapter(ref_out), _adapter(out)
    assert weights.keys() == ref_weights.keys() and weights
    for name, tensor in weights.items():
        torch.testing.assert_close(tensor, ref_weights[name], atol=1e-6, rtol=0)


def test_resume_without_a_checkpoint_starts_fresh_and_no_resume_deletes_them(tiny_model_dir, tmp_path):
    out = tmp_path / "nlu"
    card = train(_config(tiny_model_dir, out, max_steps=2, save_steps=1, keep_checkpoints=False, resume=True),
                 progress=False)
    assert card["train"]["resumed_from"] is None and len(card["train"]["losses"]) == 2
    assert not list(out.glob("checkpoint-*"))  # deleted after a successful run unless keep_checkpoints
    assert (out / "adapter_model.safetensors").is_file() and (out / "card.json").is_file()

    (out / "checkpoint-1").mkdir()  # an unfinished run's leftovers
    (out / "checkpoint-1" / "trainer_state.json").write_text(json.dumps({"global_step": 1, "max_steps": 2}))
    with pytest.raises(ValueError, match="unfinished run"):
        train(_config(tiny_model_dir, out, max_steps=2), progress=False)
    card = train(_config(tiny_model_dir, out, max_steps=2, resume=False, keep_checkpoints=False), progress=False)
    assert card["train"]["resumed_from"] is None and not list(out.glob("checkpoint-*"))


def test_trainer_loss_is_the_target_token_mean_of_the_step_whatever_the_micro_batch(tiny_model_dir, tmp_path):
    """Step 1 sees all four examples (effective batch 4) with the adapter at its initialisation (LoRA's B = 0,
    so the base model): its loss is the target-token mean over the four, in one micro-batch or four."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    examples = task_examples("nlu", load_dialogues(split="train"))
    random.Random(0).shuffle(examples)  # as train() picks its limit_examples
    features, _ = build_features(examples[:4], tokenizer, 4096)
    base = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)).eval()
    expected, _ = group_loss(base, features, 4, tokenizer.pad_token_id, "cpu")
    first = []
    for micro in (1, 4):
        card = train(_config(tiny_model_dir, tmp_path / f"m{micro}", micro_batch_size=micro, effective_batch_size=4,
                             limit_examples=4, max_steps=1, save_steps=0), progress=False)
        assert card["train"]["gradient_accumulation_steps"] == 4 // micro
        first.append(card["train"]["loss_first"])
    assert first == pytest.approx([expected, expected], rel=1e-5)


def test_adalora_loss_carries_the_orthogonal_regulariser_once_per_step(tiny_model_dir, tmp_path):
    """AdaLoRA starts with its singular values at zero (the base model's output) and random, non-orthogonal A and
    B: the first reported loss is the plain target cross-entropy plus orth_reg_weight x the regulariser, although
    the step is two micro-batches of two; update_and_allocate ran after every optimizer step."""
    import torch
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed

    cfg = _config(tiny_model_dir, tmp_path / "adalora", micro_batch_size=2, effective_batch_size=4, limit_examples=4,
                  max_steps=3, save_steps=0, warmup_ratio=0.0)
    cfg = cfg.model_copy(update={"peft": cfg.peft.model_copy(update={
        "method": "adalora", "adalora_target_r": 4, "dropout": 0.0})})
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    examples = task_examples("nlu", load_dialogues(split="train"))
    random.Random(0).shuffle(examples)
    features, _ = build_features(examples[:4], tokenizer, 4096)
    base = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)).eval()
    cross_entropy, _ = group_loss(base, features, 4, tokenizer.pad_token_id, "cpu")
    plan = plan_steps(cfg.train, 4)
    set_seed(cfg.train.seed)  # train() seeds just before wrapping the model: the same initial A and B
    initial = get_peft_model(base, peft_config(cfg.peft, plan["total_steps"], plan["warmup_steps"]))
    terms = []
    for name, p in initial.named_parameters():  # AdaLoRA's regulariser: mean of ||PP^T - I||_F over A and B
        if "lora_A" in name:
            terms.append(torch.linalg.matrix_norm(p @ p.T - torch.eye(p.shape[0])).item())
        elif "lora_B" in name:
            terms.append(torch.linalg.matrix_norm(p.T @ p - torch.eye(p.shape[1])).item())
    regulariser = sum(terms) / len(terms)
    assert regulariser > 0.1

    card = train(cfg, progress=False)
    assert card["train"]["loss_first"] == pytest.approx(cross_entropy + 0.5 * regulariser, rel=1e-5)
    assert card["train"]["adalora"]["update_and_allocate_calls"] == 3
    saved = json.loads((tmp_path / "adalora" / "adapter_config.json").read_text())
    assert saved["peft_type"] == "ADALORA" and saved["orth_reg_weight"] == 0.5


def test_adalora_resumes_exactly_too(tiny_model_dir, tmp_path):
    """The allocator's importance averages and rank pattern travel in the checkpoint (adalora_state.pt): after the
    resume they, the losses and the adapter are the uninterrupted run's."""
    import torch
    from transformers import TrainerCallback

    class Importance(TrainerCallback):  # runs after medhx's own update_and_allocate each step
        def __init__(self):
            self.seen: dict[int, float] = {}

        def on_optimizer_step(self, args, state, control, model=None, **kwargs):
            alloc = model.base_model.rankallocator
            self.seen[state.global_step] = sum(float(v.abs().sum()) for v in alloc.exp_avg_unc.values())

    def config(out: Path) -> TrainConfig:
        cfg = _config(tiny_model_dir, out, warmup_ratio=0.0)
        return cfg.model_copy(update={"peft": cfg.peft.model_copy(update={"method": "adalora", "adalora_target_r": 4})})

    ref_seen, seen = Importance(), Importance()
    ref = train(config(tmp_path / "ref"), progress=False, callbacks=[ref_seen])
    cfg = config(tmp_path / "killed")
    _kill_after(cfg, stop_at=5, tmp_path=tmp_path)
    assert (tmp_path / "killed" / "checkpoint-4" / "adalora_state.pt").is_file()
    card = train(cfg.model_copy(update={"train": cfg.train.model_copy(update={"resume": True})}), progress=False,
                 callbacks=[seen])
    assert sorted(seen.seen) == [4, 5] and card["train"]["adalora"]["update_and_allocate_calls"] == 2
    assert [seen.seen[s] for s in (4, 5)] == pytest.approx([ref_seen.seen[s] for s in (4, 5)], rel=1e-6)
    assert _log_losses(tmp_path / "killed" / "checkpoint-6") == pytest.approx(
        _log_losses(tmp_path / "ref" / "checkpoint-6"), abs=1e-5, rel=0)
    assert card["train"]["losses"] == ref["train"]["losses"]
    ref_weights, weights = _adapter(tmp_path / "ref"), _adapter(tmp_path / "killed")
    assert weights.keys() == ref_weights.keys()
    for name, tensor in weights.items():
        torch.testing.assert_close(tensor, ref_weights[name], atol=1e-6, rtol=0)


def test_gradient_checkpointing_trains_the_same_adapter(tiny_model_dir, uninterrupted, tmp_path):
    _, ref_card = uninterrupted
    card = train(_config(tiny_model_dir, tmp_path / "gc", gradient_checkpointing=True, save_steps=0), progress=False)
    assert card["train"]["gradient_checkpointing"]
    assert card["train"]["losses"] == pytest.approx(ref_card["train"]["losses"], abs=1e-4)


def test_new_config_keys_and_the_cli_flags():
    from agent.cli import build_parser
    from models.train import _parse_overrides

    cfg = load_config("configs/train/nlu.yaml")
    assert (cfg.train.save_steps, cfg.train.mixed_precision, cfg.train.report_to, cfg.train.resume) == (
        50, "auto", "none", None)
    for argv, expected in ((["--resume"], True), (["--resume", "runs/nlu/checkpoint-50"], "runs/nlu/checkpoint-50"),
                           (["--no-resume"], False), ([], None)):
        args = build_parser().parse_args(["train", "--config", "configs/train/nlu.yaml", *argv])
        assert load_config(args.config, _parse_overrides(args)).train.resume == expected
    assert load_config("configs/train/nlu.yaml", {"train.trainer_args": {"torch_compile": True}}).train.trainer_args
    with pytest.raises(ValueError, match="set by medhx: use train.lr"):
        load_config("configs/train/nlu.yaml", {"train.trainer_args": {"learning_rate": 0.1}})
    with pytest.raises(ValueError, match="not a transformers TrainingArguments field"):
        load_config("configs/train/nlu.yaml", {"train.trainer_args": {"learning_rat": 0.1}})
