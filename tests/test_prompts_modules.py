"""LLM modules: prompt -> backend -> parse, live (TurnContext) and batch (prediction rows)."""

from __future__ import annotations

import json
import os

import pytest

from agent.core import cmas
from agent.core.data import load_dialogues, task_examples
from agent.core.protocol import NLG, NLU, ModuleOutput, Policy, TurnContext
from models import prompts
from models.backends.base import GenerationRequest, GenerationResult
from models.modules import LLMNLG, LLMNLU, LLMPolicy, predict
from models.parsing import ParseStats, parse_output

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def hf(tiny_model_dir, tiny_adapters):
    from models.backends.hf import HFBackend

    backend = HFBackend(str(tiny_model_dir), adapters=tiny_adapters)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def valid_dialogue():
    return load_dialogues(split="valid")[0]


def _ctx(dialogue, upto: int) -> TurnContext:
    utts = dialogue.utterances[:upto]
    last_patient = next((u for u in reversed(utts) if u.speaker == "patient"), None)
    return TurnContext(
        turns=[(u.speaker, u.text) for u in utts], state=(last_patient.dialog_state or {}) if last_patient else {}
    )


def _check_consistent(module, out: ModuleOutput, example) -> None:
    """What the module returns is what parsing the raw text gives, and the meta describes the real request."""
    parsed = parse_output(module.task, out.raw)
    assert (out.value, out.format_error, out.repaired, out.extra) == (
        parsed.value, parsed.format_error, parsed.repaired, parsed.extra)
    prompt = module.prompt_for(example)
    assert out.meta["prompt_tokens"] == len(prompts.encode_prompt(prompt, module.tokenizer))
    assert 1 <= out.meta["completion_tokens"] <= module.max_tokens
    assert out.meta["backend"] == "hf" and out.meta["latency_s"] > 0


def test_live_modules_speak_the_protocols(hf, valid_dialogue):
    nlu = LLMNLU(hf, adapter="nlu", max_tokens=12)
    pol = LLMPolicy(hf, adapter="pol", max_tokens=12)
    nlg = LLMNLG(hf, adapter="nlg", max_tokens=12)
    assert isinstance(nlu, NLU) and isinstance(pol, Policy) and isinstance(nlg, NLG)
    assert nlu.tokenizer is hf.tokenizer  # taken from the backend when not given

    ctx = _ctx(valid_dialogue, 4)  # ends with the patient's turn
    out = nlu.understand(ctx)
    _check_consistent(nlu, out, prompts.example_from_context("nlu", ctx))
    assert out.meta["adapter"] == "nlu"

    out = pol.next_actions(ctx)
    _check_consistent(pol, out, prompts.example_from_context("pol", ctx))

    actions = [{"action": "inquire", "symptom": [{"value": "fever"}]}]
    out = nlg.verbalize(actions, ctx)
    _check_consistent(nlg, out, prompts.example_from_context("nlg", ctx, actions=actions))
    assert isinstance(out.value, str)
    assert (nlu.stats.total, pol.stats.total, nlg.stats.total) == (1, 1, 1)


def test_predict_rows_for_score(hf):
    examples = task_examples("pol", load_dialogues(split="valid"))[:3]
    stats = ParseStats()
    rows = predict("pol", examples, hf, adapter="pol", stats=stats, progress=False, max_tokens=10)
    assert [(r["dialog_id"], r["uttr_id"]) for r in rows] == [(e.dialog_id, e.uttr_id) for e in examples]
    for r in rows:
        assert (r["prediction"] is None) == (r["format_error"] is not None)
        assert isinstance(r["raw"], str) and r["completion_tokens"] <= 10
    assert stats.total == 3


def test_icl_mode_retrieves_exemplars_from_other_dialogues(hf, tmp_path):
    from models.retrieval import ExemplarIndex

    dialogues = load_dialogues(split="all")
    index = ExemplarIndex.build(dialogues, "nlu", cache_dir=tmp_path)
    nlu = LLMNLU(hf, adapter="nlu", mode="icl", retriever=index, k=2, max_tokens=8)
    query = task_examples("nlu", load_dialogues(split="valid"))[5]
    shots = index.top_k(query, 2)
    prompt = nlu.prompt_for(query)
    assert prompt == prompts.render_prompt(prompts.build_messages(query, "icl", list(reversed(shots))), nlu.tokenizer)
    assert all(s.dialog_id == "115" for s in shots)  # query is from 317
    request = nlu.request_for(query)
    assert request.json_schema == cmas.nlu_json_schema(status_attribute=True)
    out = nlu.run_one(query)
    assert out.meta["mode"] == "icl" and out.meta["prompt_tokens"] > 2000
    # a prompt budget drops the least similar exemplars first, then stops at zero exemplars
    tight = LLMNLU(hf, adapter="nlu", mode="icl", retriever=index, k=2, max_prompt_tokens=100)
    assert tight.prompt_for(query) == prompts.render_prompt(prompts.build_messages(query, "icl", []), nlu.tokenizer)


class FakeScriptedBackend:
    """Stands in for the model's text (which we cannot choose) to drive every parse outcome deterministically."""

    name = "fake"

    def __init__(self, texts: list[str]):
        self.texts = list(texts)
        self.requests: list[GenerationRequest] = []

    def generate(self, requests, progress=False):
        self.requests += requests
        return [GenerationResult(text=self.texts.pop(0), prompt_tokens=1, completion_tokens=1, latency_s=0.001)
                for _ in requests]

    def close(self):
        pass


def test_fake_backend_outputs_flow_through_repair_and_format_errors(tiny_model_dir):
    texts = [
        '[{"intent": "inform", "slots": {"positive_symptom": [{"value": "fever"}]}}]',
        '```json\n[{"intent": "inform", "slots": {"symptom": [{"value": "fever", "status": "negative"}]}}]\n```',
        '[{"intent": "inform", "slots": {"positive_symptom": [{"value": "fever", "hue": "red"}]}}]',
        "I cannot tell.",
    ]
    backend = FakeScriptedBackend(texts)
    examples = task_examples("nlu", load_dialogues(split="valid"))[:4]
    stats = ParseStats()
    rows = predict("nlu", examples, backend, tokenizer=str(tiny_model_dir), adapter="nlu", stats=stats, progress=False)
    assert [r["prediction"] for r in rows] == [
        [{"intent": "inform", "slots": {"positive_symptom": [{"value": "fever"}]}}],
        [{"intent": "inform", "slots": {"negative_symptom": [{"value": "fever"}]}}],
        [{"intent": "inform", "slots": {"positive_symptom": [{"value": "fever"}]}}],
        None,
    ]
    assert [r["repaired"] for r in rows] == [False, True, False, False]
    assert rows[2]["extra"] == {"0.slots.positive_symptom.0.hue": "red"}
    assert rows[3]["format_error"].startswith("not JSON")
    assert stats.to_dict()["valid_rate_before_repair"] == 0.25 and stats.format_errors == 1
    assert all(r.adapter == "nlu" and r.json_schema == cmas.nlu_json_schema() for r in backend.requests)

    nlg_backend = FakeScriptedBackend(["  Do you have a fever?  "])
    nlg = LLMNLG(nlg_backend, adapter="nlg", tokenizer=str(tiny_model_dir))
    out = nlg.verbalize([{"action": "inquire", "symptom": [{"value": "fever"}]}], TurnContext())
    assert out.value == "Do you have a fever?" and nlg_backend.requests[0].json_schema is None
    assert json.loads(nlg_backend.requests[0].prompt.split("[actions]\n", 1)[1].split("<|im_end|>")[0]) == [
        {"action": "inquire", "symptom": [{"value": "fever"}]}]
