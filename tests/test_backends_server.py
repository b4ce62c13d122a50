"""The vllm-server backend against a real vLLM CPU server (tiny random Llama + three LoRA adapters)."""

from __future__ import annotations

import json
import threading

import pytest

from agent.core import cmas
from agent.core.data import load_dialogues, nlu_examples, pol_examples
from models import prompts
from models.backends import BackendError, GenerationRequest, make_backend
from models.serve import list_models, load_adapter, start_server, stop_server, unload_adapter

pytestmark = pytest.mark.vllm

ADAPTERS = ("nlu", "pol", "nlg")


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


@pytest.fixture(scope="module")
def client(vllm_server):
    with make_backend({"kind": "vllm-server", "url": vllm_server, "concurrency": 50}) as backend:
        yield backend


def chat(tokenizer, text: str) -> str:
    return tokenizer.apply_chat_template(
        [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
    )


def test_server_lists_the_base_model_and_the_adapters(vllm_server, tiny_model_dir, tiny_adapters):
    models = {m["id"]: m for m in list_models(vllm_server)}
    assert set(models) == {str(tiny_model_dir), *ADAPTERS}
    for name in ADAPTERS:
        assert models[name]["parent"] == str(tiny_model_dir) and models[name]["root"] == tiny_adapters[name]


def test_adapter_is_selected_by_name(client, tokenizer):
    prompt = chat(tokenizer, "I have had a dry cough for two weeks.")
    solo = {name: client.generate([GenerationRequest(prompt, adapter=name, max_tokens=12)])[0]
            for name in (None, *ADAPTERS)}
    assert len({tuple(r.token_ids) for r in solo.values()}) == 4  # base and each adapter differ
    for r in solo.values():
        assert (r.completion_tokens, len(r.token_ids), r.finish_reason) == (12, 12, "length")
        assert r.prompt_tokens == len(prompts.encode_prompt(prompt, tokenizer)) and r.latency_s > 0
    # The same requests in one concurrent batch (base and LoRA requests decoded together) give the same
    # tokens: guards the spare CPU LoRA slot (models.serve.default_max_loras).
    batch = client.generate([GenerationRequest(prompt, adapter=name, max_tokens=12) for name in (None, *ADAPTERS)] * 2)
    assert [r.token_ids for r in batch] == [solo[name].token_ids for name in (None, *ADAPTERS)] * 2


def test_unknown_adapter_is_a_clear_backend_error(client, tokenizer):
    with pytest.raises(BackendError, match=r"unknown model or adapter 'nluu' \(served: .*nlu, pol, nlg\)"):
        client.generate([GenerationRequest(chat(tokenizer, "hello"), adapter="nluu")])


def _task_prompts(tokenizer, task: str, n: int = 50) -> list[str]:
    dialogues = load_dialogues("data/meditod")
    examples = (nlu_examples if task == "nlu" else pol_examples)(dialogues)[:n]
    assert len(examples) == n
    return [prompts.render_prompt(prompts.build_messages(e), tokenizer) for e in examples]


@pytest.mark.parametrize(("task", "schema", "parse"), [
    ("nlu", cmas.nlu_json_schema(max_items=3, max_length=24), cmas.parse_nlu),
    ("pol", cmas.action_json_schema(max_items=3, max_length=24), cmas.parse_actions),
], ids=["nlu", "pol"])
def test_constrained_outputs_of_a_random_model_are_all_schema_valid(client, tokenizer, task, schema, parse):
    """50 generations of random weights, sent as one concurrent batch; tighter bounds than the
    defaults keep a random model's JSON short enough to finish within max_tokens."""
    batch = [
        GenerationRequest(p, adapter=task, json_schema=schema, max_tokens=600) for p in _task_prompts(tokenizer, task)
    ]
    results = client.generate(batch)
    assert [r.finish_reason for r in results] == ["stop"] * 50
    parsed = [parse(json.loads(r.text)) for r in results]  # raises on the first invalid one
    assert len(parsed) == 50
    assert sum(1 for p in parsed if p) >= 5  # not only "[]": the grammar's objects were exercised
    # Without the constraint the same model writes no JSON at all.
    free = client.generate([GenerationRequest(r.prompt, adapter=task, max_tokens=16) for r in batch[:10]])
    for r in free:
        with pytest.raises(json.JSONDecodeError):
            json.loads(r.text)


def test_adapters_load_and_unload_at_runtime(vllm_server, client, tokenizer, tiny_adapters):
    prompt = chat(tokenizer, "Any allergies?")
    [pol] = client.generate([GenerationRequest(prompt, adapter="pol", max_tokens=10)])
    assert "added successfully" in load_adapter(vllm_server, "pol_v2", tiny_adapters["pol"])
    [swapped] = client.generate([GenerationRequest(prompt, adapter="pol_v2", max_tokens=10)])
    assert swapped.token_ids == pol.token_ids
    # Replace in place: the name now serves nlg's weights.
    load_adapter(vllm_server, "pol_v2", tiny_adapters["nlg"], replace=True)
    [nlg] = client.generate([GenerationRequest(prompt, adapter="nlg", max_tokens=10)])
    [replaced] = client.generate([GenerationRequest(prompt, adapter="pol_v2", max_tokens=10)])
    assert replaced.token_ids == nlg.token_ids != pol.token_ids
    assert "removed successfully" in unload_adapter(vllm_server, "pol_v2")
    with pytest.raises(BackendError, match="unknown model or adapter 'pol_v2'"):
        client.generate([GenerationRequest(prompt, adapter="pol_v2", max_tokens=10)])
    with pytest.raises(BackendError, match="cannot be found"):
        unload_adapter(vllm_server, "pol_v2")


def test_down_server_is_a_clear_error_and_retries_recover_after_restart(vllm_server_process, client, tokenizer):
    """Runs last in this module: stops the session server and starts it again."""
    prompt = chat(tokenizer, "The pain started yesterday.")
    [before] = client.generate([GenerationRequest(prompt, adapter="nlu", max_tokens=10)])
    url = vllm_server_process.url
    stop_server(vllm_server_process.endpoint)

    with make_backend({"kind": "vllm-server", "url": url, "retries": 1, "backoff_s": 0.05}) as impatient, \
            pytest.raises(BackendError, match=f"vLLM server at {url} unreachable or failing after 2 attempts"):
        impatient.generate([GenerationRequest(prompt, adapter="nlu", max_tokens=10)])

    outcome: dict = {}
    # A restart takes a minute or more on CPU: a deadline that covers it (the default, 60 s, bounds a live turn).
    patient = make_backend(
        {"kind": "vllm-server", "url": url, "deadline_s": 300, "backoff_s": 0.5, "max_backoff_s": 4.0}
    )

    def run() -> None:
        try:
            outcome["results"] = patient.generate([GenerationRequest(prompt, adapter="nlu", max_tokens=10)] * 3)
        except Exception as exc:  # reported by the assertion below
            outcome["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()  # requests start failing now (nothing listens) and keep retrying
    start_server(vllm_server_process)
    thread.join(timeout=300)
    patient.close()
    assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")
    assert [r.token_ids for r in outcome["results"]] == [before.token_ids] * 3
