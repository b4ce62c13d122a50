"""Items only one sex has (``configs/sex_specific.yaml``, ``agent.core.sex_specific``): the patient's sex as the state
tells it, the questionnaire never asking an item of the other sex (and asking the sex before the first such item
outside the red-flag screen), and the clinician's summary marking a screen or a consideration of the other sex not
applicable. Real objects only: the shipped table, plans, questionnaire config, tracker and clinical NLU."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from policy_driver import run_interview

from agent.core.sex_specific import SexSpecificError, default_sex_specific, load_sex_specific
from policies.nlu import attributes
from policies.presentations import default_plans
from policies.questionnaire import QuestionnairePolicy, load_questionnaire_config
from policies.questions import Question, questions_of
from policies.summary import clinician_summary

REPO = Path(__file__).resolve().parents[1]
PLANS = default_plans()
SEXES = default_sex_specific()

FEMALE_ONLY = {("symptom", "amenorrhea"), ("symptom", "vaginal bleeding"), ("symptom", "vaginal discharge"),
               ("medical_history", "pregnancy"), ("medication", "oral contraceptives")}


@pytest.fixture(scope="module")
def policy() -> QuestionnairePolicy:
    return QuestionnairePolicy(dataclasses.replace(load_questionnaire_config(), plans=PLANS))


def patient(sex: str | None):
    """Says no to every screening question, tells the onset when asked, and its sex (``None``: never says it)."""
    def answer(questions: list[Question]) -> dict:
        slots: dict[str, list] = {}
        for q in questions:
            if q.base == "basic_information":
                said = {"age": "40", "sex": sex}[q.value]
                if said:
                    slots.setdefault("basic_information", [{}])[0][q.value] = said
            elif q.base == "symptom" and q.screening:
                slots.setdefault("negative_symptom", []).append(
                    {"value": q.value, **({"location": list(q.values)} if q.values else {})})
            elif q.base == "symptom" and q.check == "onset":
                slots.setdefault("positive_symptom", []).append({"value": q.value, "onset": "2 days ago"})
            elif q.screening and q.base in ("medical_history", "medication", "habit", "family_history"):
                slots.setdefault(f"negative_{q.base}", []).append({"value": q.value})
        return slots
    return answer


def asked_items(past: list[list[dict]]) -> list[tuple[str, str, tuple[str, ...]]]:
    return [(q.base, q.value, q.values) for turn in past for q in questions_of(turn)]


# --------------------------------------------------------------------------- the table


def test_the_table_names_items_and_places_of_one_sex():
    assert SEXES.of_item("symptom", "pain", ["testicles"]) == "male"
    assert SEXES.of_item("symptom", "swelling", ["left testicle"]) == SEXES.of_item("symptom", "pain", ["testicle(R)"])
    assert SEXES.of_item("symptom", "testicular pain") == "male"
    assert SEXES.of_item("symptom", "amenorrhea") == "female"
    assert SEXES.of_item("medical_history", "pregnancy") == "female"
    assert SEXES.of_item("symptom", "pain", ["abdomen"]) is None
    assert SEXES.of_item("symptom", "syncope") is None


def test_the_patients_sex_is_the_stated_one_else_the_one_its_items_tell():
    assert SEXES.patient_sex({"basic_information": [{"sex": "Female"}]}) == "female"
    assert SEXES.patient_sex({"positive_symptom": [{"value": "pain", "location": ["testicles"]}]}) == "male"
    assert SEXES.patient_sex({"positive_medical_history": [{"value": "pregnancy"}]}) == "female"
    # a stated gender is not the sex assigned at birth; a denied item tells nothing; items that disagree tell nothing
    assert SEXES.patient_sex({"basic_information": [{"gender": "man"}]}) is None
    assert SEXES.patient_sex({"negative_symptom": [{"value": "amenorrhea"}]}) is None
    assert SEXES.patient_sex({"positive_medical_history": [{"value": "pregnancy"}],
                              "positive_symptom": [{"value": "testicular pain"}]}) is None


@pytest.mark.parametrize(("text", "message"), [
    ("female:\n  symptom: [amenorhea]\nmale: {}\n", "female.symptom: 'amenorhea' is not a symptom value"),
    ("female: {}\nmale: {}\nother: {}\n", "other"),
    ("female:\n  symptoms: [amenorrhea]\nmale: {}\n", "symptoms"),
])
def test_a_bad_table_fails_at_load_naming_the_key(tmp_path, text, message):
    path = tmp_path / "sex.yaml"
    path.write_text(text)
    with pytest.raises(SexSpecificError, match=message):
        load_sex_specific(path)


def test_the_shipped_places_are_body_locations_of_the_lexicon():
    from policies.nlu.lexicon import default_lexicon
    from policies.presentations import place

    known = {place(p) for p in default_lexicon().locations}
    table = yaml.safe_load((REPO / "configs" / "sex_specific.yaml").read_text())
    for sex in ("female", "male"):
        assert {place(p) for p in table[sex]["locations"]} <= known


# --------------------------------------------------------------------------- the interview


@pytest.mark.parametrize("plan_id", ["abdominal_pain", "vomiting_diarrhoea", "urinary", "headache"])
def test_a_man_is_never_asked_what_only_a_woman_has(policy, plan_id):
    t = PLANS[plan_id].triggers[0]
    first = {"positive_symptom": [{"value": t.value, **({"location": [t.location[0]]} if t.location else {})}],
             "basic_information": [{"sex": "male"}]}
    _, past, _, _ = run_interview(policy, patient("male"), first)
    asked = {(b, v) for b, v, _ in asked_items(past[1:])}  # after the greeting, which asks everyone's (greeting_asks)
    assert not asked & FEMALE_ONLY, asked & FEMALE_ONLY
    assert ("basic_information", "sex") not in asked  # told at the start: never asked again


def test_a_woman_is_asked_the_ectopic_screen_and_never_about_her_testicles(policy):
    first = {"positive_symptom": [{"value": "pain", "location": ["abdomen"]}],
             "basic_information": [{"sex": "female"}]}
    _, past, _, _ = run_interview(policy, patient("female"), first)
    items = asked_items(past)
    assert ("symptom", "amenorrhea", ()) in items and ("symptom", "vaginal bleeding", ()) in items
    assert not [i for i in items if "testicles" in i[2]]


def test_a_patient_whose_sex_is_unknown_is_asked_it_before_the_first_item_of_one_sex(policy):
    """Outside the red-flag screen: the vomiting plan asks about missed periods among its associated symptoms."""
    first = {"positive_symptom": [{"value": "vomiting"}]}
    _, past, _, _ = run_interview(policy, patient("male"), first)
    items = asked_items(past)
    at_sex = items.index(("basic_information", "sex", ()))
    assert not any(v == "amenorrhea" for _, v, _ in items[:at_sex])
    assert not {(b, v) for b, v, _ in items} & FEMALE_ONLY
    # a woman who says so is then asked it
    _, past, _, _ = run_interview(policy, patient("female"), first)
    assert ("symptom", "amenorrhea", ()) in asked_items(past)


@pytest.mark.parametrize("plan_id", ["abdominal_pain", "vomiting_diarrhoea"])
def test_in_the_red_flag_screen_too_the_sex_is_asked_before_an_item_of_one_sex(policy, plan_id):
    """A man whose sex nothing has told is not asked about missed periods or a pregnancy first: a screen with such
    items asks his sex before its first item of one sex, then leaves the other sex's items out."""
    t = PLANS[plan_id].triggers[0]
    first = {"positive_symptom": [{"value": t.value, **({"location": [t.location[0]]} if t.location else {})}]}
    _, past, _, _ = run_interview(policy, patient("male"), first)
    items = asked_items(past)
    at_sex = items.index(("basic_information", "sex", ()))
    assert not [i for i in items[:at_sex] if SEXES.of_item(*i)], items[:at_sex]
    assert not {(b, v) for b, v, _ in items} & FEMALE_ONLY


def test_a_pain_in_the_testicle_tells_the_sex(policy):
    first = {"positive_symptom": [{"value": "pain", "location": ["testicles"]}, {"value": "vomiting"}]}
    _, past, _, _ = run_interview(policy, patient(None), first)
    asked = {(b, v) for b, v, _ in asked_items(past[1:])}  # after the greeting's question, left unanswered
    assert not asked & FEMALE_ONLY and ("basic_information", "sex") not in asked


# --------------------------------------------------------------------------- the clinician's summary


def test_the_summary_leaves_out_what_only_the_other_sex_has():
    state = {"positive_symptom": [{"value": "pain", "location": ["abdomen"]}, {"value": "syncope"}],
             "negative_symptom": [{"value": "fever"}], "basic_information": [{"sex": "male", "age": "30"}]}
    man = clinician_summary(state, PLANS, used=["abdominal_pain"])
    ectopic = next(r for r in man["red_flag_screen"] if r["rule"] == "ectopic_pregnancy")
    assert ectopic["result"] == "not applicable" and ectopic["needs"] == ["sex: female"]
    assert "ectopic pregnancy" not in [c["label"] for c in man["considerations"]]
    woman = clinician_summary({**state, "basic_information": [{"sex": "female"}]}, PLANS, used=["abdominal_pain"])
    assert next(r for r in woman["red_flag_screen"] if r["rule"] == "ectopic_pregnancy")["result"] == "incomplete"
    assert "ectopic pregnancy" in [c["label"] for c in woman["considerations"]]
    torsion = next(r for r in woman["red_flag_screen"] if r["rule"] == "testicular_torsion")
    assert torsion["result"] == "not applicable" and torsion["needs"] == ["sex: male"]


# --------------------------------------------------------------------------- the NLU hears it


@pytest.mark.parametrize(("text", "sex"), [
    ("i'm a 45-year-old man and i keep being sick", "male"), ("i am a fifteen year old boy", "male"),
    ("i'm a 67 year old woman", "female"), ("i'm a man", "male"), ("i'm a bit worried", None),
])
def test_the_nlu_hears_a_stated_sex(text, sex):
    assert attributes.sex(text) == sex
