"""Every string that enters the patient state, the doctor's plan or the NLG is bounded (``agent.core.bounds``).

A 100 KB value in an otherwise valid model output is refused and recorded (its length and first characters), never
passed on: in NLU output (it never reaches the patient state), in policy output (it never reaches the NLG), in NLG
output (the template speaks instead), in a clinician's review (refused, nothing changed), and in CMAS parsed
strictly anywhere. The models are :class:`model_fixtures.ScriptedModel` (their answer is the input under test);
the modules, parsing, graph and SQLite session store are the real ones.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator

import pytest
from model_fixtures import ScriptedModel

from agent.app.graph_nodes import Agent
from agent.app.sessions import SessionStore
from agent.core import cmas, cmas_lenient
from agent.core.bounds import MAX_RECORD_CHARS, MAX_UTTERANCE_CHARS, MAX_VALUE_CHARS, bound_record, set_aside
from agent.core.ontology import default_vocabulary
from agent.core.protocol import ModuleOutput, TurnContext
from agent.core.tracker import RuleTracker
from models.modules import LLMNLG, LLMNLU, LLMPolicy
from policies.model import ModelPolicy
from policies.registry import make_template_nlg

KB100 = 100_000
BIG = "".join(random.Random(20).choice("abcdefghij klmnop") for _ in range(KB100))
SAID = "I've had a cough for two weeks and I smoke a pack a day."
NLU_WITH_BIG = [{"intent": "inform", "slots": {
    "positive_symptom": [{"value": "coughing", "onset": "two weeks"}, {"value": BIG}],
    "positive_habit": [{"value": "smoking", "frequency": BIG}],
}}]
POL_WITH_BIG = [{"action": "inquire", "symptom": [
    {"value": BIG, "checks": [{"type": "onset"}]},
    {"value": "coughing", "checks": [{"type": "onset", "values": [BIG, "today"]}]},
]}]
POL_KEPT = [{"action": "inquire",
             "symptom": [{"value": "coughing", "checks": [{"type": "onset", "values": ["today"]}]}]}]
POL_VALID = [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"}]}]}]


class SeenByNLG:
    """The template NLG, recording the actions it is asked to say (what reaches the NLG is what is checked)."""

    def __init__(self) -> None:
        self.template = make_template_nlg({})
        self.seen: list[list[dict]] = []

    def verbalize(self, actions: list[dict], ctx: TurnContext) -> ModuleOutput:
        self.seen.append(json.loads(json.dumps(actions)))
        return self.template.verbalize(actions, ctx)


def store_with(tmp_path, nlu: str, pol: str, nlg: object, review: bool = False) -> SessionStore:
    """A SQLite session store whose NLU and policy are LLM modules answered by scripted models."""
    agent = Agent(
        nlu=LLMNLU(ScriptedModel(nlu), tokenizer="smollm2"), policy=ModelPolicy(LLMPolicy(ScriptedModel(pol),
                                                                                         tokenizer="smollm2")),
        nlg=nlg, dst=RuleTracker("replace"), nlu_vocabulary=default_vocabulary(), nlu_ground_words=True,
        guard_nlg=make_template_nlg({}), review=review,
    )
    return SessionStore({"session": {"store": "sqlite", "dir": str(tmp_path / "store")}}, agent=agent)


def strings(obj: object) -> Iterator[str]:
    """Every string (keys included) inside ``obj``."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from strings(k)
            yield from strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from strings(v)


def assert_stored_bounded(store: SessionStore, session_id: str) -> None:
    """Nothing in the checkpointed session is longer than a record may be, and no part of the 100 KB is there."""
    stored = store.resume(session_id).state().model_dump(mode="json")
    assert max(map(len, strings(stored))) <= MAX_RECORD_CHARS
    assert BIG[1000:1200] not in json.dumps(stored)


def test_cmas_refuses_an_over_long_value_wherever_it_is_parsed_strictly():
    with pytest.raises(cmas.CMASError, match=r"slots\.positive_habit\.0\.frequency"):
        cmas.parse_nlu([{"intent": "inform", "slots": {"positive_habit": [{"value": "smoking", "frequency": BIG}]}}])
    with pytest.raises(cmas.CMASError, match=r"0\.symptom\.0\.value"):
        cmas.parse_actions(POL_WITH_BIG)
    with pytest.raises(cmas.CMASError, match=r"positive_symptom\.0\.location\.1"):
        cmas.parse_state({"positive_symptom": [{"value": "pain", "location": ["chest", BIG]}]})
    edge = "x" * MAX_VALUE_CHARS  # the bound itself is allowed
    assert cmas.parse_state({"positive_symptom": [{"value": "pain", "onset": edge}]})["positive_symptom"][0]["onset"] \
        == edge
    # constrained decoding keeps its own, tighter bound
    assert '"maxLength": 80' in json.dumps(cmas.nlu_json_schema()) and str(MAX_VALUE_CHARS) not in json.dumps(
        cmas.action_json_schema())


def test_lenient_parsing_sets_aside_the_over_long_value_and_keeps_the_rest():
    kept = cmas_lenient.parse_nlu_lenient(NLU_WITH_BIG)
    assert kept.value == [{"intent": "inform", "slots": {
        "positive_symptom": [{"value": "coughing", "onset": "two weeks"}], "positive_habit": [{"value": "smoking"}]}}]
    assert kept.extra == {"0.slots.positive_symptom.1.value": set_aside(BIG),
                          "0.slots.positive_habit.0.frequency": set_aside(BIG)}
    assert set_aside(BIG) == {"too_long": KB100, "limit": MAX_VALUE_CHARS, "start": BIG[:80]}
    actions = cmas_lenient.parse_actions_lenient(POL_WITH_BIG)
    assert actions.value == POL_KEPT
    assert actions.extra == {"0.symptom.0.value": set_aside(BIG), "0.symptom.1.checks.0.values.0": set_aside(BIG)}
    # whatever else lenient parsing records is bounded too: a 100 KB unknown key and an unknown slot's value
    odd_slots = {"mood": BIG, "positive_symptom": [{BIG: "x"}]}
    odd = cmas_lenient.parse_nlu_lenient([{"intent": "inform", "slots": odd_slots}])
    assert odd.value == [{"intent": "inform"}] and max(map(len, strings(odd.extra))) <= MAX_RECORD_CHARS
    assert bound_record({"raw": BIG})["raw"]["too_long"] == KB100


def test_a_100kb_value_in_nlu_output_never_reaches_the_patient_state(tmp_path):
    with store_with(tmp_path, json.dumps(NLU_WITH_BIG), json.dumps(POL_VALID), SeenByNLG()) as store:
        session = store.start()
        session.send(SAID)
        st = session.state()
        assert st.patient_state == {"positive_symptom": [{"value": "coughing", "onset": "two weeks"}],
                                    "positive_habit": [{"value": "smoking"}]}
        patient = st.patient_turns()[-1]
        assert patient.meta["extra"]["0.slots.positive_symptom.1.value"]["too_long"] == KB100
        assert patient.meta["extra"]["0.slots.positive_habit.0.frequency"] == set_aside(BIG)
        assert patient.meta["raw"]["too_long"] > KB100  # the model's whole answer, recorded by length only
        assert_stored_bounded(store, session.id)


def test_a_100kb_value_in_policy_output_never_reaches_the_nlg(tmp_path):
    nlg = SeenByNLG()
    with store_with(tmp_path, "[]", json.dumps(POL_WITH_BIG), nlg) as store:
        session = store.start()
        doctor = session.send(SAID)
        assert doctor is not None and doctor.actions == POL_KEPT
        assert nlg.seen[-1] == POL_KEPT  # what the NLG was given
        assert all(BIG[:MAX_VALUE_CHARS + 1] not in json.dumps(seen) for seen in nlg.seen)
        assert doctor.meta["extra"] == {"0.symptom.0.value": set_aside(BIG),
                                        "0.symptom.1.checks.0.values.0": set_aside(BIG)}
        assert_stored_bounded(store, session.id)


def test_a_100kb_nlg_utterance_is_replaced_by_the_template(tmp_path):
    model_nlg = LLMNLG(ScriptedModel(BIG), tokenizer="smollm2")
    with store_with(tmp_path, "[]", json.dumps(POL_VALID), model_nlg) as store:
        session = store.start()
        doctor = session.send(SAID)
        assert doctor is not None and 0 < len(doctor.text) <= MAX_UTTERANCE_CHARS and BIG[:100] not in doctor.text
        guard = doctor.meta["nlg_guard"]
        assert guard["reason"] == f"longer than {MAX_UTTERANCE_CHARS} characters"
        assert guard["rejected_text"] == {"too_long": KB100, "limit": MAX_UTTERANCE_CHARS, "start": BIG[:80]}
        assert_stored_bounded(store, session.id)


def test_a_100kb_review_decision_is_refused_and_changes_nothing(tmp_path):
    with store_with(tmp_path, "[]", json.dumps(POL_VALID), SeenByNLG(), review=True) as store:
        session = store.start()
        session.review({"approve": True}, by="dr_a")  # the opening turn
        assert session.send(SAID) is None  # the planned answer awaits review
        before = session.state().model_dump(mode="json")
        refused = [  # (decision, who, why)
            ({"edit": BIG}, "dr_a", "at most 2000 characters"),
            ({"replace_actions": POL_WITH_BIG}, "dr_a", r"0\.symptom\.0\.value"),
            ({"state_patch": {"positive_symptom": [{"value": "coughing", "onset": BIG}]}}, "dr_a", r"onset"),
            ({"approve": True}, BIG, "at most 200 characters"),
        ]
        for decision, by, why in refused:
            with pytest.raises(ValueError, match=why):
                session.review(decision, by=by)
            assert session.state().model_dump(mode="json") == before  # nothing changed
        doctor = session.review({"approve": True}, by="dr_a")
        assert doctor is not None and [e.kind for e in session.state().review_edits] == ["approve", "approve"]
        assert_stored_bounded(store, session.id)
