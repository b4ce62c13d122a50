"""Prompts: training and inference see the same prompt; the live agent's examples match the data layer's."""

from __future__ import annotations

import json
import os

import pytest

from agent.core import cmas
from agent.core.data import load_dialogues, task_examples
from agent.core.protocol import TurnContext
from models import prompts

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from models.prepare import prepare

    return AutoTokenizer.from_pretrained(str(prepare()))


@pytest.fixture(scope="module")
def dialogues():
    return load_dialogues(split="all")


@pytest.mark.parametrize("task", ["nlu", "pol", "nlg"])
def test_training_prompt_is_the_inference_prompt(task, tokenizer, dialogues):
    from models.modules import MODULE_CLASSES

    module = MODULE_CLASSES[task](backend=None, tokenizer=tokenizer)  # type: ignore[arg-type]
    for ex in task_examples(task, dialogues)[:10]:
        train_prompt, completion = prompts.render_training_text(ex, tokenizer)
        assert train_prompt == module.prompt_for(ex)
        assert train_prompt == prompts.render_prompt(prompts.build_messages(ex), tokenizer)
        assert train_prompt.endswith("<|im_start|>assistant\n")
        # the completion is the target and the template's end-of-turn marker, nothing else
        assert completion == prompts.target_text(ex) + "<|im_end|>"


def test_supervised_pol_prompt_content(tokenizer, dialogues):
    ex = task_examples("pol", dialogues)[5]
    user = prompts.build_messages(ex)[1]["content"]
    assert user.startswith("[dialogue history]\ndoctor: OK, and how much sputum")
    assert (
        "[last turn]\ndoctor: OK um. And have you noticed any blood?\npatient: No, um I haven't noticed any blood."
        in user
    )
    state_json = user.split("[patient state]\n", 1)[1]
    assert json.loads(state_json) == ex.state
    assert prompts.target_text(ex) == cmas.dumps(ex.target)
    assert json.loads(prompts.target_text(ex)) == [
        {"action": "inquire", "symptom": [{"value": "dyspnea", "checks": [{"type": "onset"}]}]}]


def test_nlg_prompt_carries_actions_and_targets_the_utterance(dialogues):
    ex = task_examples("nlg", dialogues)[1]
    user = prompts.build_messages(ex)[1]["content"]
    assert json.loads(user.split("[actions]\n", 1)[1]) == ex.actions
    assert prompts.target_text(ex) == "OK, and has the cough been dry or have you been bringing up sputum?"


@pytest.mark.parametrize("task", ["nlu", "pol", "nlg"])
def test_live_context_builds_the_training_example(task, dialogues):
    """For every turn of dialogue 115, a TurnContext of the dialogue so far yields the data layer's example."""
    d = next(d for d in dialogues if d.dialog_id == "115")
    for ex in task_examples(task, [d]):
        i = next(j for j, u in enumerate(d.utterances) if u.uttr_id == ex.uttr_id)
        upto = i + 1 if task == "nlu" else i
        turns = [(u.speaker, u.text) for u in d.utterances[:upto]]
        prev_patient = next((u for u in reversed(d.utterances[:upto]) if u.speaker == "patient"), None)
        state = (prev_patient.dialog_state or {}) if prev_patient else {}
        live = prompts.example_from_context(task, TurnContext(turns=turns, state=state), actions=ex.actions)
        assert (live.history, live.last_exchange) == (ex.history, ex.last_exchange)
        if task != "nlu":
            assert live.state == ex.state
        assert prompts.build_messages(live) == prompts.build_messages(ex)


def test_live_context_errors():
    with pytest.raises(ValueError, match="patient"):
        prompts.example_from_context("nlu", TurnContext(turns=[("doctor", "Hello")]))
    with pytest.raises(ValueError, match="actions"):
        prompts.example_from_context("nlg", TurnContext(turns=[("doctor", "Hi"), ("patient", "Hi")]))
    opening = prompts.example_from_context("pol", TurnContext())
    assert (opening.history, opening.last_exchange) == ([], [])
    assert "[dialogue history]\n(none)" in prompts.build_messages(opening)[1]["content"]


def test_icl_definitions_are_generated_from_cmas():
    defs = prompts.schema_definitions("nlu")
    slots = json.loads(defs.split("slots = ", 1)[1])
    assert [s["slot"] for s in slots] == list(cmas.SLOTS)
    symptom = slots[0]["related_attributes"]
    assert [a["name"] for a in symptom][:3] == ["value", "status", "onset"]
    assert {a["name"] for a in symptom} == set(cmas.SLOTS["symptom"].attributes) | {"status"}
    assert symptom[1]["description"] == (
        "The status is 'positive' if the patient has the symptom currently or 'negative' if not; "
        "otherwise, it is 'unknown'.")
    intents = json.loads(defs.split("intents = ", 1)[1].split("\n\nslots")[0])
    assert [i["name"] for i in intents] == list(cmas.PATIENT_INTENTS)
    pol_slots = json.loads(prompts.schema_definitions("pol").split("slots = ", 1)[1])
    assert [a["name"] for a in pol_slots[0]["related_attributes"]] == [
        t for t in cmas.SLOTS["symptom"].check_types if t != "status"]


def test_icl_prompt_has_exemplars_in_attribute_form_then_the_query(dialogues):
    exs = task_examples("nlu", dialogues)
    query, shots = exs[10], [exs[1], exs[2]]
    msgs = prompts.build_messages(query, "icl", exemplars=shots)
    assert "```\nintents = [" in msgs[0]["content"] and "IMPORTANT INSTRUCTIONS:\n1. " in msgs[0]["content"]
    blocks = msgs[1]["content"].split("\n\n[dialogue history]\n")
    assert len(blocks) == 3
    first_answer = json.loads(blocks[0].rsplit("[output]\n", 1)[1])
    assert first_answer == [{"intent": "inform", "slots": {"symptom": [
        {"value": "coughing", "onset": "two months ago", "status": "positive"}]}}]
    assert msgs[1]["content"].endswith(
        "[last turn]\n" + "\n".join(f"{s}: {t}" for s, t in query.last_exchange) + "\n\n[output]")
    with pytest.raises(ValueError, match="icl"):
        prompts.build_messages(query, "supervised", exemplars=shots)
