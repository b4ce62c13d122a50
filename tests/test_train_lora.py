"""Training: loss on target tokens only, the token-weighted valid loss, a tiny real run (transformers.Trainer)
whose adapter loads with peft."""

from __future__ import annotations

import importlib.util
import json
import os
import random

import pytest

from agent.core.data import load_dialogues, task_examples
from eval.metrics.score import score_rows
from models import prompts
from models.train import TrainConfig, build_features, group_loss, load_config, tokenize_example, train

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def tiny_dir(tiny_model_dir):
    return str(tiny_model_dir)


@pytest.fixture(scope="module")
def tokenizer(tiny_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_dir)


@pytest.fixture(scope="module")
def nlu_examples():
    return task_examples("nlu", load_dialogues(split="train"))


def test_labels_mask_the_prompt_and_keep_the_target(tokenizer, nlu_examples):
    ex = nlu_examples[3]
    ids, labels = tokenize_example(ex, tokenizer)
    prompt, completion = prompts.render_training_text(ex, tokenizer)
    n_prompt = len(prompts.encode_prompt(prompt, tokenizer))
    assert ids[:n_prompt] == prompts.encode_prompt(prompt, tokenizer)
    assert labels[:n_prompt] == [-100] * n_prompt
    assert all(x != -100 for x in labels[n_prompt:])
    assert tokenizer.decode(labels[n_prompt:]) == prompts.target_text(ex) + "<|im_end|>"


def test_group_loss_is_the_token_weighted_mean_whatever_the_micro_batch(tiny_dir, tokenizer, nlu_examples):
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_dir).eval()
    features, _ = build_features(nlu_examples[:3], tokenizer, 4096)
    # reference: transformers' own mean loss per example, weighted by its number of target tokens
    total, tokens = 0.0, 0
    with torch.no_grad():
        for f in features:
            out = model(input_ids=torch.tensor([f["input_ids"]]), labels=torch.tensor([f["labels"]]))
            n = sum(1 for x in f["labels"][1:] if x != -100)
            total, tokens = total + out.loss.item() * n, tokens + n
    for micro in (1, 2, 3):
        loss, n = group_loss(model, features, micro, tokenizer.pad_token_id, "cpu", backward=False)
        assert n == tokens
        assert loss == pytest.approx(total / tokens, rel=1e-5)


def test_too_long_examples_are_skipped_and_counted(tokenizer, nlu_examples):
    features, skipped = build_features(nlu_examples[:5], tokenizer, max_length=50)
    assert (features, skipped) == ([], 5)


def test_tiny_lora_run_learns_saves_a_peft_adapter_and_evaluates(tiny_dir, tokenizer, nlu_examples, tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    out = tmp_path / "nlu"
    cfg = TrainConfig.model_validate({
        "base_model": tiny_dir, "tasks": ["nlu"], "output_dir": str(out),
        "peft": {"r": 8, "alpha": 16, "dropout": 0.0},
        "train": {"lr": 3e-3, "micro_batch_size": 4, "effective_batch_size": 4, "max_steps": 6, "limit_examples": 4,
                  "warmup_ratio": 0.0, "scheduler": "constant"},
        "eval": {"limit": 2, "max_tokens": 8},
    })
    card = train(cfg, progress=False, scorer=score_rows)  # the scorer medhx train passes (agent.cli)
    losses = card["train"]["losses"]
    assert len(losses) == 6 and losses[-1] < losses[0]

    config = json.loads((out / "adapter_config.json").read_text())
    assert config["peft_type"] == "LORA" and config["r"] == 8
    assert set(config["target_modules"]) == {
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    }
    assert (out / "adapter_model.safetensors").is_file()
    # the layout is the adapter and its card: Trainer's checkpoints are deleted after a successful run, and its
    # pickled arguments never land beside the adapter
    assert card["train"]["trainer"] == "transformers.Trainer" and card["train"]["gradient_accumulation_steps"] == 1
    assert not list(out.glob("checkpoint-*")) and not (out / "training_args.bin").exists()

    # the saved adapter loads with peft and fits the training examples better than the base model
    trained_on = list(nlu_examples)
    random.Random(cfg.train.seed).shuffle(trained_on)  # as train() picks its limit_examples
    features, _ = build_features(trained_on[:cfg.train.limit_examples], tokenizer, 4096)
    base = AutoModelForCausalLM.from_pretrained(tiny_dir).eval()
    base_loss, _ = group_loss(base, features, 4, tokenizer.pad_token_id, "cpu", backward=False)
    tuned = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_dir), str(out)).eval()
    tuned_loss, _ = group_loss(tuned, features, 4, tokenizer.pad_token_id, "cpu", backward=False)
    assert tuned_loss < base_loss
    with torch.no_grad():
        b = [p for n, p in tuned.named_parameters() if "lora_B" in n]
        assert b and all(p.abs().sum() > 0 for p in b)  # peft starts B at zero; training moved it

    # the card: data hash, config, valid metrics from eval/ and parse stats; predictions written
    assert card["data"]["train_hash"] and card["config"]["peft"]["r"] == 8
    assert card["servable_by_vllm"] and card["vllm"] == {"max_lora_rank": 8}
    nlu = card["valid"]["tasks"]["nlu"]
    assert nlu["examples"] == 2 and nlu["parse"]["total"] == 2
    assert nlu["parse"]["schema_valid_after_repair"] + nlu["parse"]["lenient"] + nlu["parse"]["format_errors"] == 2
    assert nlu["metrics"]["turns"] == 2 and "overall" in nlu["metrics"]
    rows = [json.loads(x) for x in (out / "valid_predictions_nlu.jsonl").read_text().splitlines()]
    assert [(r["dialog_id"], r["uttr_id"]) for r in rows] == [
        (e.dialog_id, e.uttr_id) for e in task_examples("nlu", load_dialogues(split="valid"))[:2]]
    assert json.loads((out / "card.json").read_text())["adapter"] == "nlu"
    assert "valid nlu (2 turns)" in (out / "card.md").read_text()


@pytest.mark.parametrize(
    "method,peft_type", [("adalora", "ADALORA"), ("ia3", "IA3"), ("prompt_tuning", "PROMPT_TUNING")]
)
def test_other_peft_methods_train_and_save(method, peft_type, tiny_dir, tmp_path):
    cfg = TrainConfig.model_validate({
        "base_model": tiny_dir, "tasks": ["nlu", "pol", "nlg"], "output_dir": str(tmp_path / method),
        "peft": {"method": method, "r": 8, "alpha": 16, "adalora_target_r": 4, "num_virtual_tokens": 4},
        "train": {"lr": 1e-3, "micro_batch_size": 2, "effective_batch_size": 2, "max_steps": 2, "limit_examples": 6},
        "eval": {"enabled": False},
    })
    card = train(cfg, progress=False)
    assert card["adapter"] == "multitask" and not card["servable_by_vllm"]
    assert json.loads((tmp_path / method / "adapter_config.json").read_text())["peft_type"] == peft_type
    assert all(loss > 0 for loss in card["train"]["losses"])


def test_config_files_parse_with_the_paper_defaults():
    for name in ("nlu", "pol", "nlg", "multitask", "smoke"):
        cfg = load_config(f"configs/train/{name}.yaml")
        assert cfg.peft.method == "lora" and cfg.peft.r == 32 and cfg.peft.alpha == 32
    cfg = load_config("configs/train/multitask.yaml")
    assert (cfg.tasks, cfg.train.lr, cfg.train.effective_batch_size, cfg.train.scheduler, cfg.train.warmup_ratio) == (
        ["nlu", "pol", "nlg"], 1e-4, 16, "cosine", 0.1)
    assert load_config("configs/train/nlu.yaml", {"train.max_steps": 3}).train.max_steps == 3
    with pytest.raises(ValueError, match="learning_rate"):
        load_config("configs/train/nlu.yaml", {"train.learning_rate": 0.1})
    with pytest.raises(ValueError, match="adalora_target_r"):
        load_config("configs/train/nlu.yaml", {"peft.method": "adalora", "peft.adalora_target_r": 32})


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is not None, reason="bitsandbytes is installed")
def test_qlora_without_bitsandbytes_is_a_clear_error(tiny_dir, tmp_path):
    cfg = TrainConfig.model_validate({"base_model": tiny_dir, "quantization": "4bit", "output_dir": str(tmp_path),
                                      "eval": {"enabled": False}, "train": {"max_steps": 1}})
    with pytest.raises(RuntimeError, match="bitsandbytes"):
        train(cfg, progress=False)
