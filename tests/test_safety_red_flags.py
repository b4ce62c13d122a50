"""Red-flag rules over the patient state, the rule file's validation, and the disclaimer."""

from __future__ import annotations

import pytest

from agent.data import load_dialogues
from agent.ontology import default_vocabulary
from agent.safety import DISCLAIMER, RuleError, check_red_flags, claims_clinician, load_rules
from agent.tracker import update_state
from policies.template_nlg import FAREWELL, GREETING


@pytest.fixture(scope="module")
def rules():
    return load_rules()


def ids(state, rules) -> list[str]:
    return [f.id for f in check_red_flags(state, rules)]


def levels(state, rules) -> list[tuple[str, str]]:
    return [(f.id, f.level) for f in check_red_flags(state, rules)]


def test_a_located_pain_is_the_pain_of_that_place(rules):
    # the state may hold "pain" located in the chest (as a model NLU writes it) where the rule says "chest pain"
    state = {"positive_symptom": [{"value": "pain", "location": ["chest"]}, {"value": "dyspnea"}]}
    assert "chest_pain_with_dyspnea" in ids(state, rules)


def test_chest_pain_with_dyspnea_fires_with_its_evidence(rules):
    state = {"positive_symptom": [{"value": "chest pain", "onset": "an hour ago"}, {"value": "dyspnea"}]}
    flags = check_red_flags(state, rules)
    assert [f.id for f in flags] == ["chest_pain_with_dyspnea"]
    assert flags[0].level == "emergency"
    assert flags[0].evidence == [{"slot": "positive_symptom", "value": "chest pain"},
                                 {"slot": "positive_symptom", "value": "dyspnea"}]
    assert "emergency" in flags[0].message


def test_all_of_needs_every_condition_and_status_matters(rules):
    assert ids({"positive_symptom": [{"value": "chest pain"}]}, rules) == []
    assert ids({"positive_symptom": [{"value": "chest pain"}], "negative_symptom": [{"value": "dyspnea"}]}, rules) == []
    # an item the patient was unsure about raises the flag as "possible" (recall before precision)
    assert levels({"unknown_symptom": [{"value": "hemoptysis"}]}, rules) == [("hemoptysis", "possible")]
    assert ids({"negative_symptom": [{"value": "hemoptysis"}]}, rules) == []


def test_dataset_spellings_match_rules_written_with_ontology_codes(rules):
    # the dataset says "syncope" / "palpitations"; the rules say "fainting" / "palpitation"
    assert ids({"positive_symptom": [{"value": "syncope"}]}, rules) == ["syncope"]
    state = {"positive_symptom": [{"value": "chest pain"}, {"value": "palpitations"}]}
    assert ids(state, rules) == ["chest_pain_with_syncope_or_palpitations"]
    assert ids({"positive_symptom": [{"value": "shortness of breath"}, {"value": "chest pain"}]}, rules) == \
        ["chest_pain_with_dyspnea"]


def test_single_symptom_flags(rules):
    assert ids({"positive_symptom": [{"value": "hemoptysis"}]}, rules) == ["hemoptysis"]
    assert ids({"positive_symptom": [{"value": "suicidal ideation"}]}, rules) == ["suicidal_ideation"]
    assert ids({"positive_medical_history": [{"value": "self-harm"}]}, rules) == ["self_harm"]
    assert ids({"positive_symptom": [{"value": "stridor"}]}, rules) == ["stridor_or_choking"]
    assert ids({"positive_symptom": [{"value": "melena"}]}, rules) == ["gastrointestinal_bleeding"]
    assert ids({"positive_symptom": [{"value": "seizure"}]}, rules) == ["seizure"]


def test_severity_threshold(rules):
    assert ids({"positive_symptom": [{"value": "dyspnea", "severity": "9"}]}, rules) == ["severe_dyspnea"]
    assert ids({"positive_symptom": [{"value": "dyspnea", "severity": "8/10"}]}, rules) == ["severe_dyspnea"]
    assert ids({"positive_symptom": [{"value": "dyspnea", "severity": "6"}]}, rules) == []
    assert ids({"positive_symptom": [{"value": "dyspnea", "severity": "quite bad"}]}, rules) == []


def test_all_of_plus_any_of(rules):
    base = {"positive_symptom": [{"value": "unexplained weight loss"}]}
    assert ids(base, rules) == []  # weight loss alone is asked about further, not flagged
    state = update_state(base, [{"intent": "inform", "slots": {"positive_symptom": [{"value": "night sweats"}]}}])
    assert ids(state, rules) == ["weight_loss_with_hemoptysis_or_night_sweats"]


def test_gold_dialogue_states_raise_no_flag(rules):
    # 115: chest pain, palpitations, presyncope and hemoptysis denied; 317: fever without confusion, hemoptysis,
    # chest pain and syncope denied, dyspnea without a severity
    for d in load_dialogues():
        for u in d.utterances:
            if u.dialog_state:  # 317 ends unsure about weight loss "these past couple of days": possible at most
                firm = [f.id for f in check_red_flags(u.dialog_state, rules) if f.level != "possible"]
                assert firm == [], (d.dialog_id, u.uttr_id)


def test_flag_appears_when_the_state_evolves_into_it(rules):
    state = {"positive_symptom": [{"value": "chest pain"}]}
    assert ids(state, rules) == []
    state = update_state(state, [{"intent": "inform", "slots": {"positive_symptom": [{"value": "dyspnea"}]}}])
    assert ids(state, rules) == ["chest_pain_with_dyspnea"]


def test_every_rule_value_is_an_ontology_code_or_a_vocabulary_term(rules):
    vocab = default_vocabulary()
    for rule in rules.rules:
        for cond in (*rule.all_of, *rule.any_of):
            for v in cond.values:
                assert vocab.known(cond.slot, v), (rule.id, v)
    # the spellings the brief asked to check: these three are ontology symptom codes as written
    assert {"dyspnea", "fainting", "hemoptysis"} <= vocab.ontology.codes["symptom"]


@pytest.mark.parametrize(
    ("yaml_text", "match"),
    [
        ("rules: [{id: a, message: m, any_of: [{slot: symptoms, values: [fever]}]}]", "unknown slot type 'symptoms'"),
        ("rules: [{id: a, message: m, any_of: [{slot: symptom, values: [haemoptisis]}]}]", "haemoptisis"),
        ("rules: [{id: a, message: m, any_of: [{slot: symptom, values: [fever], status: [maybe]}]}]", "status 'maybe'"),
        ("rules: [{id: a, any_of: [{slot: symptom, values: [fever]}]}]", "'message' is required"),
        ("rules: [{id: a, message: m}]", "needs 'all_of' or 'any_of'"),
        ("rules: [{id: a, message: m, any_of: [{slot: symptom, values: [fever]}]},"
         " {id: a, message: m, any_of: [{slot: symptom, values: [fever]}]}]", "unique"),
        ("rules: [{id: a, message: m, level: low, any_of: [{slot: symptom, values: [fever]}]}]", "level 'low'"),
        ("rules: [{id: a, message: m, any_of: [{slot: symptom, value: [fever]}]}]", "unknown keys"),
    ],
)
def test_rule_file_errors_are_clear(tmp_path, yaml_text, match):
    path = tmp_path / "rules.yaml"
    path.write_text(yaml_text)
    with pytest.raises(RuleError, match=match):
        load_rules(path)


def test_disclaimer_and_agent_texts_never_claim_to_be_a_clinician(rules):
    assert "not a diagnosis" in DISCLAIMER and "clinician" in DISCLAIMER
    for text in (DISCLAIMER, GREETING, FAREWELL, *(r.message for r in rules.rules)):
        assert not claims_clinician(text), text
    assert claims_clinician("As your doctor, I recommend rest.")
    assert claims_clinician("I'm a physician and you definitely have pneumonia.")
    assert claims_clinician("My diagnosis is bronchitis.")
    assert not claims_clinician("Please talk to your doctor about this.")
