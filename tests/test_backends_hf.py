"""The hf backend (transformers + peft) on the tiny random Llama and its LoRA adapters."""

from __future__ import annotations

import logging

import pytest

from models.backends import BackendError, GenerationRequest, make_backend


@pytest.fixture(scope="module")
def hf(tiny_model_dir, tiny_adapters):
    backend = make_backend({"kind": "hf", "model": str(tiny_model_dir), "adapters": tiny_adapters, "batch_size": 4})
    yield backend
    backend.close()


def chat(tokenizer, text: str) -> str:
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
    )


PATIENT = [
    "I have had a dry cough for two weeks.",
    "No fever.",
    "It gets worse at night when I lie down, and I feel tired.",
]


def test_batched_left_padded_generation_equals_one_at_a_time(hf):
    prompts = [chat(hf.tokenizer, t) for t in PATIENT]
    lengths = [len(hf.tokenizer(p, add_special_tokens=False)["input_ids"]) for p in prompts]
    assert len(set(lengths)) == 3  # different lengths: the batch really is padded
    batched = hf.generate([GenerationRequest(p, adapter="nlu", max_tokens=10) for p in prompts])
    single = [hf.generate([GenerationRequest(p, adapter="nlu", max_tokens=10)])[0] for p in prompts]
    assert [r.token_ids for r in batched] == [r.token_ids for r in single]
    for r, n in zip(batched, lengths, strict=True):
        assert r.prompt_tokens == n and r.completion_tokens == len(r.token_ids) == 10
        assert r.finish_reason == "length" and r.latency_s > 0 and r.text


def test_each_adapter_changes_the_output_and_none_is_the_base_model(hf):
    prompt = chat(hf.tokenizer, PATIENT[0])
    outs = hf.generate([GenerationRequest(prompt, adapter=a, max_tokens=8) for a in (None, "nlu", "pol", "nlg", None)])
    ids = [tuple(r.token_ids) for r in outs]
    assert len(set(ids[:4])) == 4
    assert ids[0] == ids[4]  # disable_adapter really gives the base model back after adapters ran


def test_unknown_adapter_is_a_backend_error(hf):
    with pytest.raises(BackendError, match=r"unknown adapter\(s\) \['nluu'\]; configured: \['nlg', 'nlu', 'pol'\]"):
        hf.generate([GenerationRequest("x", adapter="nluu")])


def test_schema_is_not_enforced_and_says_so_once(hf, caplog):
    caplog.set_level(logging.WARNING, logger="models.backends.hf")
    hf._warned_schema = False
    req = GenerationRequest(chat(hf.tokenizer, "hi"), adapter="nlu", json_schema={"type": "array"}, max_tokens=2)
    hf.generate([req])
    hf.generate([req])
    assert [r.getMessage() for r in caplog.records].count(
        "hf backend does not enforce json_schema; outputs are parsed/repaired downstream") == 1
