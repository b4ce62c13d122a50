"""A freshly trained LoRA adapter loads into a running vLLM server and matches the hf backend token for token."""

from __future__ import annotations

import pytest

from agent.core.data import load_dialogues, task_examples
from models import prompts
from models.backends import GenerationRequest, make_backend
from models.modules import predict
from models.parsing import ParseStats
from models.train import TrainConfig, train

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def trained_adapter(tiny_model_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("trained") / "nlu"
    cfg = TrainConfig.model_validate({
        "base_model": str(tiny_model_dir), "tasks": ["nlu"], "output_dir": str(out),
        "peft": {"r": 8, "alpha": 16, "dropout": 0.0},  # the fixture server's max_lora_rank is 8
        "train": {"lr": 3e-3, "micro_batch_size": 4, "effective_batch_size": 4, "max_steps": 3, "limit_examples": 8},
        "eval": {"enabled": False},
    })
    train(cfg, progress=False)
    return out


def test_trained_adapter_serves_on_vllm_like_on_hf(vllm_server, tiny_model_dir, trained_adapter):
    from models.serve import load_adapter, unload_adapter

    assert "added successfully" in load_adapter(vllm_server, "trained_nlu", trained_adapter)
    try:
        server = make_backend({"kind": "vllm-server", "url": vllm_server})
        hf = make_backend(
            {"kind": "hf", "model": str(tiny_model_dir), "adapters": {"trained_nlu": str(trained_adapter)}}
        )
        try:
            examples = task_examples("nlu", load_dialogues(split="valid"))[:6]
            # constrained decoding on the server: every output strictly schema-valid, no repair needed
            stats = ParseStats()
            rows = predict("nlu", examples, server, tokenizer=str(tiny_model_dir), adapter="trained_nlu", stats=stats,
                           progress=False, max_tokens=600, schema_max_items=3, schema_max_length=24)
            assert stats.valid == 6, stats.to_dict()
            assert all(r["prediction"] is not None for r in rows)
            # the same adapter, unconstrained greedy: identical tokens from vLLM and from transformers + peft
            prompt_texts = [prompts.render_prompt(prompts.build_messages(e), hf.tokenizer) for e in examples[:3]]
            reqs = [GenerationRequest(p, adapter="trained_nlu", max_tokens=8) for p in prompt_texts]
            assert [r.token_ids for r in server.generate(reqs)] == [r.token_ids for r in hf.generate(reqs)]
        finally:
            server.close()
            hf.close()
    finally:
        unload_adapter(vllm_server, "trained_nlu")
