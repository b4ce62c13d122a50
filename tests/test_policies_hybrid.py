"""Hybrid policy fallback, the model adapter, model NLG fallback.

The LLM modules are the boundary here: a fixed-output policy / NLG object stands in for them
(test names say ``fake``); the real LLM modules are exercised end to end by the graph tests.
"""

from __future__ import annotations

import pytest

from agent.core import cmas
from agent.core.protocol import ModuleOutput, TurnContext
from policies.hybrid import HybridPolicy
from policies.model import ModelPolicy
from policies.nlg_fallback import FallbackNLG
from policies.questionnaire import QuestionnairePolicy
from policies.template_nlg import TemplateNLG


class FixedPolicy:
    """Fake model policy: always returns the same output."""

    def __init__(self, value, format_error=None, raw="<model text>"):
        self.out = ModuleOutput(value=value, raw=raw, format_error=format_error, meta={"backend": "fake"})

    def next_actions(self, ctx: TurnContext) -> ModuleOutput:
        return self.out


class FixedNLG:
    """Fake model NLG: always returns the same text."""

    def __init__(self, text, format_error=None):
        self.out = ModuleOutput(value=text, raw=text, format_error=format_error, meta={"backend": "fake"})

    def verbalize(self, actions, ctx) -> ModuleOutput:
        return self.out


GREETED = [[{"action": "nod_prompt_salutations"}]]
STATE = {"positive_symptom": [{"value": "coughing", "onset": "4 days ago"}], "negative_symptom": [{"value": "syncope"}]}
CTX = TurnContext(turns=[("doctor", "What brings you in?"), ("patient", "A cough for 4 days.")], state=STATE,
                  past_actions=GREETED + [[{"action": "inquire", "symptom": [{"value": "fever"}]}]])


@pytest.fixture(scope="module")
def questionnaire() -> QuestionnairePolicy:
    return QuestionnairePolicy()


def hybrid(questionnaire, value, format_error=None) -> HybridPolicy:
    return HybridPolicy(ModelPolicy(FixedPolicy(value, format_error)), questionnaire)


def test_fake_model_with_a_new_valid_question_is_used(questionnaire):
    ask = [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "severity"}]}]}]
    out = hybrid(questionnaire, ask).next_actions(CTX)
    assert out.value == ask
    assert out.meta["source"] == "model" and "fallback" not in out.meta


@pytest.mark.parametrize(
    ("value", "format_error", "reason"),
    [
        ([], "no JSON array in output", "format_error: no JSON array in output"),
        ([{"action": "prescribe", "symptom": [{"value": "fever"}]}], None, "invalid_cmas: 0.action"),
        ([{"action": "inquire", "symptom": [{"value": "fever", "checks": [{"type": "colour"}]}]}], None,
         "invalid_cmas: 0.symptom.0.checks.0.type"),
        ([], None, "empty: no actions"),
        # onset of the cough is in the state
        ([{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"}]}]}], None,
         "already_answered: symptom/coughing/onset"),
        # the state says syncope (dataset spelling); fainting is the ontology's name for it
        ([{"action": "inquire", "symptom": [{"value": "fainting"}]}], None, "already_answered: symptom/fainting"),
        # fever was asked at the previous turn and not answered
        ([{"action": "inquire", "symptom": [{"value": "fever"}]}], None, "already_asked: symptom/fever"),
    ],
)
def test_fake_model_output_that_cannot_be_used_falls_back_to_the_questionnaire(
    questionnaire, value, format_error, reason
):
    out = hybrid(questionnaire, value, format_error).next_actions(CTX)
    assert out.meta["fallback"].startswith(reason), out.meta["fallback"]
    assert out.meta["source"] == "questionnaire"
    assert out.value == questionnaire.next_actions(CTX).value
    assert out.meta["model_value"] == value and out.raw == "<model text>"


def test_a_farewell_after_the_opening_or_a_diagnosis_closes_the_interview(questionnaire):
    out = hybrid(questionnaire, [{"action": "nod_prompt_salutations"}]).next_actions(CTX)
    assert cmas.closing_reason(out.value, after_opening=True) == "farewell"
    assert cmas.closing_reason(out.value, after_opening=False) is None  # the greeting
    assert (
        cmas.closing_reason([{"action": "diagnosis", "disease": [{"value": "flu"}]}], after_opening=True) == "diagnosis"
    )
    assert cmas.closing_reason([{"action": "inquire", "symptom": [{"value": "fever"}]}], after_opening=True) is None


def test_model_policy_adapter_flags_invalid_cmas_from_a_fake_model():
    out = ModelPolicy(FixedPolicy([{"action": "inquire", "symptom": [{"value": 3}]}])).next_actions(CTX)
    assert out.format_error.startswith("not valid CMAS: 0.symptom.0.value")
    ok = ModelPolicy(FixedPolicy([{"action": "diagnosis", "disease": [{"value": "influenza"}]}])).next_actions(CTX)
    assert ok.format_error is None and ok.value == [{"action": "diagnosis", "disease": [{"value": "influenza"}]}]


@pytest.mark.parametrize(
    ("text", "format_error", "reason"),
    [
        ("", None, "empty"),
        ("When did the {symptom} start?", None, "placeholder"),
        ("whatever", "truncated", "format_error: truncated"),
    ],
)
def test_fake_model_nlg_falls_back_to_the_template(text, format_error, reason):
    actions = [{"action": "inquire", "symptom": [{"value": "fever"}]}]
    out = FallbackNLG(FixedNLG(text, format_error), TemplateNLG()).verbalize(actions, CTX)
    assert out.value == "Have you had any fever?"
    assert out.meta["fallback"].startswith(reason)


def test_fake_model_nlg_text_is_kept_when_fine():
    out = FallbackNLG(FixedNLG(" Any fever lately? "), TemplateNLG()).verbalize([{"action": "other"}], CTX)
    assert out.value == "Any fever lately?" and "fallback" not in out.meta
