"""Template NLG: every gold doctor action and every check type of every slot verbalizes naturally."""

from __future__ import annotations

import pytest

from agent.core import cmas
from agent.core.data import load_dialogues
from agent.core.protocol import TurnContext
from agent.core.safety import claims_clinician
from policies.template_nlg import FAREWELL, GREETING, TemplateNLG

OPENING = TurnContext()
LATER = TurnContext(turns=[("doctor", "What brings you in today?"), ("patient", "A cough.")],
                    past_actions=[[{"action": "nod_prompt_salutations"}]])


@pytest.fixture(scope="module")
def nlg() -> TemplateNLG:
    return TemplateNLG()


def say(nlg: TemplateNLG, actions: list[dict], ctx: TurnContext = LATER) -> str:
    return nlg.verbalize(actions, ctx).value


def assert_clean(text: str) -> None:
    assert text.strip() and text == text.strip()
    for bad in ("{", "}", "None", "  ", "_"):
        assert bad not in text, (bad, text)
    assert text[0].isupper() and text[-1] in ".?", text
    assert not claims_clinician(text), text


def ways_to_say(nlg: TemplateNLG, base: str, value: str) -> list[str]:
    """How a value may appear in an utterance: its lexicon question or term, habit verbs, exposure object."""
    v = value.casefold()
    forms = [nlg.lex.question(base, value) or nlg.lex.term(base, value)]
    forms += list(nlg.lex.habit_verbs.get(v, ())) if base == "habit" else []
    forms += list(nlg.lex.exposure_phrases.get(v, ())[1:]) if base == "exposure" else []
    forms += [nlg.lex.terms["medical_test"].get(v, value)] if base == "medical_test" else []
    return forms


def test_every_gold_doctor_action_verbalizes_and_mentions_its_values(nlg):
    n = 0
    for d in load_dialogues():
        past: list[list[dict]] = []
        for u in d.utterances:
            if u.speaker != "doctor":
                continue
            ctx = TurnContext(turns=[("doctor", "."), ("patient", ".")] * len(past), past_actions=list(past))
            text = say(nlg, u.actions, ctx)
            assert_clean(text)
            for act in u.actions:
                for base, items in act.items():
                    if base == "action" or base in cmas.RECORD_SLOTS:
                        continue
                    for it in items:
                        v = it["value"]
                        if v.casefold() in cmas.OPEN_VALUES | {"general"}:
                            continue
                        said = ways_to_say(nlg, base, v)
                        assert any(w.casefold() in text.casefold() for w in said), (d.dialog_id, u.uttr_id, v, text)
            past.append(u.actions)
            n += 1
    assert n == 106


@pytest.mark.parametrize("base", list(cmas.SLOTS))
def test_every_check_type_of_every_slot_has_a_specific_question(nlg, base):
    value = {"basic_information": "none", "travel": "other", "occupation": "other", "residence": "other",
             "symptom": "coughing", "medical_history": "asthma", "family_history": "heart diseases", "habit": "smoking",
             "exposure": "dust", "medication": "albuterol", "medical_test": "plain x-ray", "disease": "influenza"}[base]
    for check in cmas.SLOTS[base].check_types:
        actions = [{"action": "inquire", base: [{"value": value, "checks": [{"type": check}]}]}]
        text = say(nlg, actions)
        assert_clean(text)
        assert "tell me more" not in text and "little more" not in text, (base, check, text)


def test_hand_written_expectations(nlg):
    assert say(nlg, [{"action": "inquire", "symptom": [{"value": "fever"}, {"value": "chills"}]}]) == \
        "Have you had any fever or chills?"
    assert say(nlg, [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"}]}]}]) == \
        "When did the cough start?"
    assert say(nlg, [{"action": "inquire", "symptom": [{"value": "pain", "checks": [
        {"type": "location", "values": ["abdomen"]}]}]}]) == "Have you had any pain in your abdomen?"
    assert say(nlg, [{"action": "inquire", "exposure": [
        {"value": "dust", "checks": [{"type": "where", "values": ["at work"]}]}]}]) == \
        "Have you been exposed to dust at work?"
    assert say(nlg, [{"action": "inquire", "habit": [{"value": "smoking"}, {"value": "alcohol abuse"},
                                                       {"value": "marijuana use"}]}]) == \
        "Do you smoke, drink alcohol or use marijuana?"
    # an amount asked with the question whether (a status check first): "if you do", never as if they did
    assert say(nlg, [{"action": "inquire", "habit": [
        {"value": "smoking"}, {"value": "alcohol abuse", "checks": [{"type": "status"}, {"type": "frequency"}]}]}]) == \
        "Do you smoke or drink alcohol? And if you drink alcohol, how often, and how much?"
    assert say(nlg, [{"action": "inquire", "habit": [
        {"value": "smoking", "checks": [{"type": "status"}, {"type": "frequency"}, {"type": "starting"}]},
        {"value": "alcohol abuse", "checks": [{"type": "status"}, {"type": "frequency"}]}]}]) == \
        "Do you smoke or drink alcohol? And if you do, how much, and for how long?"
    assert (
        say(nlg, [{"action": "inquire", "medication": [{"value": "albuterol", "checks": [{"type": "impact"}]}]}])
        == "Has the salbutamol (albuterol) helped?"
    )
    # what one medicine is for and whether it helped: one question, the name said once, the verb agreeing
    assert say(nlg, [{"action": "inquire", "medication": [
        {"value": "statin", "checks": [{"type": "respone_to"}, {"type": "impact"}]}]}]) == \
        "What do you take the statin for, and has it helped?"
    assert say(nlg, [{"action": "inquire", "medication": [
        {"value": "antihypertensive agents", "checks": [{"type": "respone_to"}, {"type": "impact"}]}]}]) == \
        "What do you take the blood pressure tablets for, and have they helped?"
    assert say(nlg, [{"action": "inquire", "symptom": [{"value": "all", "checks": [{"type": "progression"}]}]}]) == \
        "Have your symptoms been getting better, getting worse, or staying the same?"


def test_several_actions_make_one_fluent_utterance(nlg):
    text = say(nlg, [
        {"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"}, {"type": "severity"}]}]},
        {"action": "inquire", "symptom": [{"value": "hemoptysis"}]},
    ])
    # three questions are said as two sentences: the first two run together, the cough then "it"
    assert text == ("When did the cough start, and how bad is it, from 1 to 10? "
                    "Also, have you had any coughing up blood?")


def test_salutation_is_a_greeting_first_and_a_farewell_later(nlg):
    assert say(nlg, [{"action": "nod_prompt_salutations"}], OPENING) == GREETING
    assert say(nlg, [{"action": "nod_prompt_salutations"}], LATER) == FAREWELL
    assert "What brings you in" in GREETING and "clinician" in GREETING
    # a farewell said together with a question comes last
    text = say(nlg, [{"action": "nod_prompt_salutations"}, {"action": "inquire", "travel": [{"value": "other"}]}])
    assert text.endswith(FAREWELL) and text.startswith("Have you travelled")


def test_diagnosis_is_worded_as_possible_conditions_for_the_clinician(nlg):
    text = say(nlg, [{"action": "diagnosis", "disease": [{"value": "chronic bronchitis"}, {"value": "influenza"}]}])
    assert "possible conditions to discuss with your clinician include chronic bronchitis and influenza" in text
    assert "Only your clinician can make a diagnosis" in text
    assert_clean(text)


def test_chit_chat_and_other(nlg):
    assert say(nlg, [{"action": "chit-chat"}]).startswith("Is there anything else")
    assert say(nlg, [{"action": "other"}]) == "Could you tell me a little more about that?"
    combined = say(nlg, [{"action": "chit-chat"}, {"action": "inquire", "habit": [{"value": "smoking"}]}])
    assert combined == "Thank you for telling me. Do you smoke?"


def test_invalid_actions_raise_a_clear_error(nlg):
    with pytest.raises(cmas.CMASError, match="colour"):
        nlg.verbalize([{"action": "inquire", "symptom": [{"value": "fever", "checks": [{"type": "colour"}]}]}], LATER)
    with pytest.raises(cmas.CMASError):
        nlg.verbalize([{"action": "prescribe"}], LATER)


def test_an_open_other_ends_its_groups_question_and_the_social_history_is_one_question(nlg):
    """ "... or any other medicines?" closes the named items' question instead of asking the same thing twice; the
    open work, home and travel questions of one turn are one question."""
    text = say(nlg, [{"action": "inquire", "medication": [{"value": "aspirin"}, {"value": "other"}]}])
    assert text.count("?") == 1 and text.endswith("any other medicines?") and "aspirin" in text
    text = say(nlg, [{"action": "inquire", "family_history": [{"value": "stroke"}, {"value": "other"}]}])
    assert text.count("?") == 1 and "any other conditions that run in the family" in text
    alone = say(nlg, [{"action": "inquire", "medication": [{"value": "other"}]}])
    assert alone.count("?") == 1 and "other medicines" not in alone  # asked alone it keeps its own question
    social = [{"action": "inquire", b: [{"value": "other"}]} for b in ("occupation", "residence", "travel")]
    text = say(nlg, social)
    assert text.count("?") == 1 and all(w in text for w in ("work", "live", "travelled"))


def test_four_questions_of_one_topic_read_as_two_sentences():
    """join_questions: a joined pair takes a third question as a list, never a third sentence of its own."""
    from policies.template_nlg import join_questions

    out = join_questions([("Is it getting worse?", True, True), ("Does anything help?", True, False),
                          ("How often?", True, False), ("Have you had anything like this before?", True, True)])
    assert [t for t, _, _ in out] == ["Is it getting worse, does anything help, and how often?",
                                      "Have you had anything like this before?"]


def test_the_greeting_asks_the_age_and_sex_first_then_the_complaint(nlg):
    """greeting_asks: one question of the age and sex after the introduction, then the open question."""
    from policies.template_nlg import INTRODUCTION

    text = say(nlg, [{"action": "nod_prompt_salutations"},
                     {"action": "inquire", "basic_information": [{"value": "age"}, {"value": "sex"}]}], OPENING)
    assert text.startswith(INTRODUCTION)
    assert text.endswith("First, how old are you, and what sex were you assigned at birth? And what brings you in "
                         "today?")
