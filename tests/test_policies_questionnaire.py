"""The questionnaire policy: interview order, never asking what the state answers, never repeating."""

from __future__ import annotations

import dataclasses
import json

import pytest
from policy_driver import ctx_of
from policy_driver import run_interview as drive

from agent.core import cmas
from agent.core.data import load_dialogues
from agent.core.ontology import find_item
from agent.core.protocol import TurnContext
from policies.questionnaire import QuestionnaireConfigError, QuestionnairePolicy, load_questionnaire_config
from policies.questions import questions_of
from policies.template_nlg import TemplateNLG

SYMPTOM_CHECK_ATTRS = {
    # check type -> the state attributes that answer it (written out here, independent of the policy code)
    "onset": ["onset"], "location": ["location"], "duration": ["duration"], "severity": ["severity"],
    "progression": ["progression"], "frequency": ["frequency"], "volume": ["volume"], "color": ["color"],
    "characteristics": ["positive_characteristics", "negative_characteristics", "unknown_characteristics"],
    "ana_factors": ["alleviating_factor", "aggravating_factor", "not_alleviating_factor", "not_aggravating_factor",
                    "not_alleviating_aggravating_factor", "unknown_factor"],
}


@pytest.fixture(scope="module")
def policy() -> QuestionnairePolicy:
    """The review-of-systems interview: the shipped config with its presentation plans off (``plans: null``; the
    plan-led interview is tested in tests/test_policy_plans.py)."""
    return QuestionnairePolicy(dataclasses.replace(load_questionnaire_config(), plans=None))


@pytest.fixture(scope="module")
def dialogues():
    return {d.dialog_id: d for d in load_dialogues()}


def key(q) -> str:
    return json.dumps([q.base, q.value, q.check, sorted(q.values)])


def state_answers_literally(state: dict, q) -> bool:
    """An independent judge for exact spellings: the state has the value under any status, and for an
    attribute question of a positive symptom, that attribute."""
    for name, items in state.items():
        status, base = cmas.split_slot_name(name)
        if base != q.base:
            continue
        for item in items:
            if item.get("value") != q.value:
                continue
            if q.check is None:
                return True
            if q.base == "symptom" and status == "positive" and q.check != "location":
                return any(item.get(a) for a in SYMPTOM_CHECK_ATTRS[q.check])
    return False


# --------------------------------------------------------------------------- opening and shape


def test_greets_first_to_elicit_the_chief_complaint(policy):
    # with the age and sex (greeting_asks): they frame the differential and spare the screens a turn
    out = policy.next_actions(TurnContext())
    assert out.value == [{"action": "nod_prompt_salutations"},
                         {"action": "inquire", "basic_information": [{"value": "age"}, {"value": "sex"}]}]
    assert out.meta["stage"] == "greeting" and cmas.closing_reason(out.value, after_opening=False) is None


def test_asks_missing_hpi_attributes_of_the_chief_complaint_in_clinical_order(policy):
    # the patient said: a cough since four days; onset is known, so character, frequency and course come next (a
    # cough has no episodes to time: hpi.episodic)
    state = {"positive_symptom": [{"value": "coughing", "onset": "4 days ago"}]}
    out = policy.next_actions(ctx_of(state, [[{"action": "nod_prompt_salutations"}]]))
    assert out.value == [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [
        {"type": "characteristics", "values": ["dry or wet"]}, {"type": "frequency"}, {"type": "progression"}]}]}]
    assert out.meta["stage"] == "hpi"


def test_location_only_for_symptoms_that_have_one(policy):
    state = {"positive_symptom": [{"value": "pain", "onset": "yesterday"}]}
    out = policy.next_actions(ctx_of(state, [[{"action": "nod_prompt_salutations"}]]))
    assert out.value == [{"action": "inquire", "symptom": [{"value": "pain", "checks": [
        {"type": "location"}, {"type": "duration"}, {"type": "characteristics"}]}]}]


# --------------------------------------------------------------------------- the whole interview order


def scripted_answers(questions) -> dict:
    """The scripted patient: a cough whose attributes it gives when asked; no to every screening question;
    no medications; a desk job, a flat, no travel; 45, female."""
    slots: dict[str, list] = {}
    for q in questions:
        if q.base == "symptom" and q.value == "coughing":
            attr = {"duration": ("duration", "all day"), "characteristics": ("positive_characteristics", ["dry cough"]),
                    "frequency": ("frequency", "hourly"), "severity": ("severity", "5"),
                    "progression": ("progression", "unchanged with time"),
                    "ana_factors": ("not_aggravating_factor", ["physical exertion"])}[q.check]
            slots.setdefault("positive_symptom", []).append({"value": "coughing", attr[0]: attr[1]})
        elif q.base == "basic_information":
            slots.setdefault("basic_information", [{}])[0][q.value] = {"age": "45", "sex": "female"}[q.value]
        elif q.base in ("travel", "occupation", "residence"):
            slots[q.base] = [
                {
                    "travel": {"status": "not_traveled"},
                    "occupation": {"value": "desk job", "status": "true"},
                    "residence": {"value": "flat", "status": "living"},
                }[q.base]
            ]
        else:
            item = {"value": q.value, **({"location": list(q.values)} if q.check == "location" else {})}
            slots.setdefault(f"negative_{q.base}", []).append(item)
    return slots


def run_interview(policy, answer, max_turns=80, first_state=None):
    return drive(policy, answer, first_state, TemplateNLG(), max_turns)


def test_whole_interview_order_on_a_scripted_state_evolution(policy):
    cough = {"positive_symptom": [{"value": "coughing", "onset": "4 days ago"}]}
    state, past, stages, texts = run_interview(policy, scripted_answers, first_state=cough)
    order = [s for i, s in enumerate(stages) if i == 0 or s != stages[i - 1]]
    assert order == [
        "greeting",
        "hpi",
        "associated_symptoms",
        "review_of_systems",
        "past_medical_history",
        "medications",
        "allergies_exposures",
        "family_history",
        "habits",
        "social_history",
        "wrap_up",
        "close",
    ]
    # the chief complaint's attributes in hpi.checks order (onset was volunteered); a cough is neither timed by
    # episode nor scored from 1 to 10 (hpi.episodic, hpi.scored)
    hpi = [questions_of(a) for a, s in zip(past, stages, strict=True) if s == "hpi"]
    assert [[q.check for q in qs] for qs in hpi] == [["characteristics", "frequency", "progression"], ["ana_factors"]]
    # associated symptoms are the respiratory system's, then the related systems (respiratory -> constitutional...)
    first_assoc = questions_of(past[stages.index("associated_symptoms")])
    assert [q.value for q in first_assoc] == ["dyspnea", "chest pain", "colored/excess sputum"]
    first_ros = questions_of(past[stages.index("review_of_systems")])
    assert [q.value for q in first_ros] == ["fever", "chills", "fatigue"]
    assert past[-1] == [{"action": "nod_prompt_salutations"}]
    assert all(t.strip() and "{" not in t for t in texts)
    assert len(past) < 60


def test_symptom_found_by_screening_gets_its_own_short_history_next(policy):
    def answers(questions):
        slots = scripted_answers([q for q in questions if q.value != "fever"])
        if any(q.value == "fever" and q.check is None for q in questions):
            slots.setdefault("positive_symptom", []).append({"value": "fever"})
        return slots

    _, past, stages, _ = run_interview(policy, answers,
                                       first_state={"positive_symptom": [{"value": "coughing", "onset": "4 days ago"}]})
    i = next(i for i, a in enumerate(past) if any(q.value == "fever" and q.check is None for q in questions_of(a)))
    assert stages[i + 1] == "hpi"
    # secondary_checks: onset, location (not for fever), severity (skipped for fever: skip_checks), progression
    assert past[i + 1] == [{"action": "inquire", "symptom": [{"value": "fever", "checks": [
        {"type": "onset"}, {"type": "progression"}]}]}]


def test_no_question_a_clinician_would_not_ask_of_the_symptom(policy):
    """skip_checks: nobody is asked to describe their fever or rate their night sweats from 1 to 10."""
    fever = [q.check for q in policy.hpi_questions({"value": "fever"})]
    assert "characteristics" not in fever and "severity" not in fever and "ana_factors" not in fever
    assert fever[0] == "onset"
    assert "severity" in [q.check for q in policy.hpi_questions({"value": "chest pain"})]


# --------------------------------------------------------------------------- never asks what is known, never repeats


def test_never_asks_what_the_gold_states_answer_nor_what_gold_doctors_asked(policy, dialogues):
    checked = 0
    for d in dialogues.values():
        state, past = {}, []
        for u in d.utterances:
            if u.speaker == "patient":
                state = u.dialog_state or state
                continue
            if past:
                out = policy.next_actions(ctx_of(state, past))
                qs = questions_of(out.value)
                assert len(qs) <= policy.config.questions_per_turn
                for q in qs:
                    assert not state_answers_literally(state, q), (d.dialog_id, u.uttr_id, q)
                    assert find_item(state, q.base, q.value, policy.vocab) is None or q.check is not None, q
                    earlier = {key(p) for turn in past for p in questions_of(turn)}
                    assert key(q) not in earlier, (d.dialog_id, u.uttr_id, q)
                checked += 1
            past.append(u.actions)
    assert checked == 104


def test_at_a_gold_turn_it_skips_everything_the_patient_already_told(policy, dialogues):
    # dialogue 317 before the doctor's turn 30: cough fully characterised (onset, duration, frequency, character,
    # severity, progression, factors), dyspnea with onset and aggravating factors, hemoptysis and wheezing denied
    d = dialogues["317"]
    past = [u.actions for u in d.utterances[:30] if u.speaker == "doctor"]
    state = d.utterances[29].dialog_state
    out = policy.next_actions(ctx_of(state, past))
    # dyspnea was screened for (turn 24), so its short history applies: onset known (turn 27), no location for
    # dyspnea, progression asked of "all" symptoms at turn 18 -> severity alone is left
    assert out.value == [{"action": "inquire", "symptom": [{"value": "dyspnea", "checks": [{"type": "severity"}]}]}]


def test_dyspnea_was_screened_for_in_317_so_its_history_is_the_short_one(policy, dialogues):
    # the 317 doctor asked "how about shortness of breath?" at turn 24: dyspnea is a secondary symptom
    d = dialogues["317"]
    past = [u.actions for u in d.utterances[:30] if u.speaker == "doctor"]
    questions = policy.hpi_questions({"value": "dyspnea"}, secondary=True)
    assert [q.check for q in questions] == ["onset", "severity", "progression"]
    assert any(q.value == "dyspnea" and q.check is None for a in past for q in questions_of(a))


def test_simulated_patient_state_fills_and_nothing_is_asked_twice(policy, dialogues):
    truth = dialogues["115"].utterances[-2].dialog_state  # the last patient state of dialogue 115

    def answers(questions):
        slots: dict[str, list] = {}
        for q in questions:
            if q.base == "basic_information":
                slots["basic_information"] = truth.get("basic_information") or [{"age": "40"}]
                continue
            if q.base in ("travel", "occupation", "residence"):
                slots[q.base] = truth.get(q.base) or [{"travel": {"status": "not_traveled"},
                                                       "occupation": {"status": "false"},
                                                       "residence": {"value": "house", "status": "living"}}[q.base]]
                continue
            if q.value == "other":
                for name, items in truth.items():
                    if name.endswith(q.base) and not name.startswith("negative"):
                        slots.setdefault(name, []).extend(items)
                continue
            found = find_item(truth, q.base, q.value, policy.vocab)
            if found:
                status, item = found
                slots.setdefault(f"{status}_{q.base}", []).append(item)
            else:
                item = {"value": q.value, **({"location": list(q.values)} if q.check == "location" else {})}
                slots.setdefault(f"negative_{q.base}", []).append(item)
        return slots

    first = {"positive_symptom": [{"value": "coughing", "onset": "few months ago"}, {"value": "dyspnea"}]}
    state, past, stages, _ = run_interview(policy, answers, first_state=first)
    asked = [key(q) for turn in past[1:] for q in questions_of(turn)]  # the greeting's left unanswered come back
    assert len(asked) == len(set(asked))
    # the state filled as it asked: the truth's smoking (with its amount) and medications are in it
    assert state["positive_habit"][0]["value"] == "smoking"
    assert {"albuterol", "antibiotics"} <= {it["value"] for it in state["positive_medication"]}
    assert stages[-1] == "close"


def test_unanswered_questions_are_not_repeated(policy):
    # a patient who only makes small talk: the interview still moves on and ends; what the greeting asked unanswered
    # (the age and sex) is asked once more where the interview needs it, nothing else twice
    _, past, stages, _ = run_interview(policy, lambda qs: {})
    asked = [key(q) for turn in past[1:] for q in questions_of(turn)]
    assert len(asked) == len(set(asked))
    assert {key(q) for q in questions_of(past[0])} <= set(asked)
    assert stages[-2:] == ["wrap_up", "close"]


def test_after_the_farewell_it_stays_closed(policy):
    past = [[{"action": "nod_prompt_salutations"}], [{"action": "chit-chat"}], [{"action": "nod_prompt_salutations"}]]
    out = policy.next_actions(ctx_of({"positive_symptom": [{"value": "fever"}]}, past))
    assert out.value == [{"action": "nod_prompt_salutations"}] and out.meta["stage"] == "close"
    assert cmas.closing_reason(out.value, after_opening=True) == "farewell"


def test_vocabulary_links_dataset_and_ontology_spellings(policy):
    # "syncope" (dataset) and "fainting" (ontology code) are one concept: screening for it is answered
    state = {"negative_symptom": [{"value": "fainting"}]}
    out = policy.next_actions(ctx_of(state, [[{"action": "nod_prompt_salutations"}],
                                             [{"action": "inquire", "symptom": [{"value": "chest pain"}]}]]))
    assert "syncope" not in {q.value for q in questions_of(out.value)}
    assert policy.vocab.same("symptom", "syncope", "fainting")
    assert not policy.vocab.same("symptom", "syncope", "dizziness")


# --------------------------------------------------------------------------- config validation


def test_config_rejects_values_outside_the_ontology_and_vocabulary(tmp_path):
    bad = tmp_path / "q.yaml"
    bad.write_text("hpi: {checks: [onset]}\nsystems: {respiratory: [dyspnoea]}\n")
    with pytest.raises(QuestionnaireConfigError, match="dyspnoea"):
        load_questionnaire_config(bad)
    bad.write_text("hpi: {checks: [onset, colour]}\n")
    with pytest.raises(QuestionnaireConfigError, match="colour"):
        load_questionnaire_config(bad)
    bad.write_text("sections: {habits: {ask: [{habbit: smoking}]}}\n")
    with pytest.raises(QuestionnaireConfigError, match="habbit"):
        load_questionnaire_config(bad)
    bad.write_text("questions_per_turn: 1\nspeed: fast\n")
    with pytest.raises(QuestionnaireConfigError, match="speed"):
        load_questionnaire_config(bad)


def test_one_question_per_turn_when_configured(tmp_path):
    cfg = tmp_path / "q.yaml"
    cfg.write_text("questions_per_turn: 1\nhpi: {checks: [onset, severity]}\n"
                   "systems: {resp: [coughing, dyspnea]}\ndefault_review: [resp]\n")
    pol = QuestionnairePolicy(load_questionnaire_config(cfg))
    out = pol.next_actions(
        ctx_of({"positive_symptom": [{"value": "coughing"}]}, [[{"action": "nod_prompt_salutations"}]])
    )
    assert out.value == [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"}]}]}]


def test_a_pregnancy_answers_the_missed_periods_question():
    """"I'm nine weeks gone" answers "any missed periods?": asking it tells a clinician the interview did not listen.
    A denied pregnancy answers nothing about the periods."""
    from agent.core.ontology import default_vocabulary
    from policies.questions import Question, answered

    vocab = default_vocabulary()
    periods = Question("symptom", "amenorrhea")
    assert answered({"positive_medical_history": [{"value": "pregnancy"}]}, periods, vocab)
    assert not answered({"negative_medical_history": [{"value": "pregnancy"}]}, periods, vocab)
    assert not answered({}, periods, vocab)


def test_a_pain_that_spreads_to_a_place_answers_the_question_about_pain_there():
    """A chest pain that goes into the jaw and down the left arm answers "any jaw pain?" and "any pain in your arm?":
    the interview does not ask for the radiation the patient has just described."""
    from agent.core.ontology import default_vocabulary
    from policies.questions import Question, answered

    vocab = default_vocabulary()
    state = {"positive_symptom": [{"value": "chest pain", "location": ["left arm", "jaw"]}]}
    assert find_item(state, "symptom", "jaw pain", vocab) is not None
    assert answered(state, Question("symptom", "pain", "location", ("arm",)), vocab)
    assert not answered(state, Question("symptom", "pain", "location", ("back",)), vocab)
    assert find_item(state, "symptom", "back pain", vocab) is None


def test_a_kind_of_the_asked_condition_already_told_answers_it():
    """"Have you ever had cancer?" is answered by a prostate cancer already told (the red-flag rules read kinds the
    same way, ``ontology.is_a_kind_of``); with nothing told it is still to ask."""
    from agent.core.ontology import default_vocabulary
    from policies.questions import Question, answered

    vocab = default_vocabulary()
    told = {"positive_medical_history": [{"value": "prostate cancer"}]}
    assert answered(told, Question("medical_history", "malignant neoplasms"), vocab)
    assert not answered({}, Question("medical_history", "malignant neoplasms"), vocab)
    mum = {"positive_family_history": [{"value": "breast cancer", "relation": "mum"}]}
    assert answered(mum, Question("family_history", "malignant neoplasms", "relation"), vocab)
