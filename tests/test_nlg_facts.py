"""The fact-level NLG score (eval/metrics/nlg_facts.py): facts, the doctor-utterance reader it scores with
(policies/nlu/doctor_reader.py), scoring, validation.

Expected values are computed by hand from the fact definition; the validation test asserts the property the score
must have (own action above another turn's, right utterance above a wrong one), with thresholds a margin below what
was measured on the shared dialogues (mean own 0.92 vs other 0.06, own > other on 95% of 99 turns, right > wrong on
66 of 66 turns)."""

from __future__ import annotations

import pytest

from agent.core.data import Example, load_dialogues, nlg_examples
from eval.metrics.matching import ExactMatcher, Matcher
from eval.metrics.nlg_facts import (
    action_facts,
    score_nlg_facts,
    text_facts,
    turn_fact_counts,
    turn_fact_f1,
    validate,
)
from policies.nlu.doctor_reader import default_reader

COUGH_ONSET = [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"}]}]}]


@pytest.fixture(scope="module")
def reader():
    return default_reader()


def _example(uttr_id: int, actions: list[dict], target: str) -> Example:
    return Example("nlg", "d1", uttr_id, [], [], target, state={}, actions=actions)


# --------------------------------------------------------------------------- facts


def test_action_facts_cough_onset():
    # the vocabulary puts the dataset's "coughing" on the ontology code "cough"
    assert action_facts(COUGH_ONSET) == ({("symptom", "cough"), ("symptom", "cough", "onset")}, set())


def test_action_facts_families_records_and_values():
    actions = [
        {"action": "inquire",
         "symptom": [{"value": "pain", "checks": [{"type": "location", "values": ["abdomen"]},
                                                  {"type": "duration", "values": ["Constant"]},
                                                  {"type": "status"}]}],
         "residence": [{"value": "other", "checks": [{"type": "household_size"}]}]},
        {"action": "diagnosis", "disease": [{"value": "Chronic bronchitis"}]},
    ]
    canonical, non_canonical = action_facts(actions)
    assert canonical == {
        ("symptom", "pain"), ("symptom", "pain", "location"), ("symptom", "pain", "location", "abdomen"),
        ("symptom", "pain", "duration"), ("residence", "household_size"),
    }  # a status check restates the item; location values are canonical in MediTOD
    assert non_canonical == {("symptom", "pain", "duration", "constant"), ("residence", "other"),
                             ("disease", "chronic bronchitis")}
    # a status-prefixed slot (the NLU's form) is the same family as the doctor's slot
    prefixed = [{"action": "inquire", "positive_symptom": [{"value": "coughing"}]}]
    assert action_facts(prefixed)[0] == {("symptom", "cough")}
    # chit-chat has no facts; junk is skipped, not raised
    assert action_facts([{"action": "chit-chat"}]) == (set(), set())
    assert action_facts([{"action": "inquire", "nonsense": [1], "symptom": ["x", {"checks": 3}]}]) == (set(), set())


# --------------------------------------------------------------------------- the reader


def test_reader_reads_a_cough_onset_question(reader):
    assert reader.read("Could you tell me when the cough started?") == COUGH_ONSET
    assert text_facts("When did your cough begin?", reader) == action_facts(COUGH_ONSET)
    assert turn_fact_f1(COUGH_ONSET, "OK, and when did the cough start?", reader=reader) == 1.0


def test_reader_checks_open_values_family_diagnosis(reader):
    def facts(text, context=None):
        c, n = text_facts(text, reader, context)
        return c | n

    assert facts("On a scale of 1 to 10, how bad is the chest pain?") == {
        ("symptom", "chest pain"), ("symptom", "chest pain", "severity")}
    assert facts("Any abdominal pain?") == {
        ("symptom", "pain"), ("symptom", "pain", "location"), ("symptom", "pain", "location", "abdomen")}
    assert facts("Are you on any medications at the moment?") == {("medication", "other")}
    assert facts("Does anyone in your family have diabetes?") == {("family_history", "diabetes mellitus")}
    assert facts("I think it's most likely pneumonia.") == {("disease", "pneumonia")}
    # a check that names nothing goes to the topic of the context (the patient's last turn)
    context = [("doctor", "Any change in your sense of smell?"), ("patient", "Yes, I can't smell anything.")]
    assert facts("When did you notice that?", context) == {("symptom", "smell loss"),
                                                           ("symptom", "smell loss", "onset")}
    assert facts("When did you notice that?") == set()
    # safety-netting advice names symptoms without asking about them
    assert facts("If you get a fever, come back to the ER.") == set()
    assert reader.read("") == []


# --------------------------------------------------------------------------- scores


def test_wrong_symptom_scores_lower(reader):
    right = turn_fact_f1(COUGH_ONSET, "When did the cough start?", reader=reader)
    wrong = turn_fact_f1(COUGH_ONSET, "When did the shortness of breath start?", reader=reader)
    partial = turn_fact_counts(COUGH_ONSET, "Have you had a cough?", reader=reader)
    assert right == 1.0 and wrong == 0.0
    # gold {cough, cough/onset}, read {cough}: 1 match, 2 gold, 1 predicted -> F1 = 2/3
    assert (partial.tp, partial.gold, partial.pred) == (1, 2, 1)
    assert partial.f1 == pytest.approx(2 / 3)


def test_missing_prediction_scores_zero_recall(reader):
    examples = [_example(2, COUGH_ONSET, "When did the cough start?"),
                _example(4, [{"action": "inquire", "symptom": [{"value": "fever"}]}], "Any fever?")]
    empty = score_nlg_facts(examples, {}, reader=reader)
    assert (empty["recall"], empty["precision"], empty["f1"]) == (0.0, 0.0, 0.0)
    assert (empty["missing"], empty["format_errors"], empty["gold_facts"]) == (2, 2, 3)
    # one turn right, one missing (None is a format error): 2 of 3 gold facts, 2 of 2 predicted
    half = score_nlg_facts(examples, {("d1", 2): "When did the cough start?", ("d1", 4): None}, reader=reader)
    assert (half["precision"], half["recall"]) == (1.0, pytest.approx(2 / 3, abs=1e-4))
    assert half["f1"] == pytest.approx(0.8)
    assert (half["missing"], half["format_errors"], half["turns_without_facts"]) == (0, 1, 0)
    assert half["matcher"] == {"name": "exact"} and half["reader"]["name"] == "clinical-question-reader"


class _OptionMatcher(Matcher):
    """Soft: a predicted option said is the same as a gold "x or y" that offers it."""

    name = "option"

    def same(self, gold: str, pred: str) -> bool:
        return gold == pred or pred in gold.split(" or ")


def test_soft_matcher_plugs_in(reader):
    actions = [{"action": "inquire", "symptom": [{"value": "coughing",
                                                   "checks": [{"type": "characteristics", "values": ["dry or wet"]}]}]}]
    text = "Has the cough been dry?"
    assert text_facts(text, reader)[1] == {("symptom", "cough", "characteristics", "dry")}
    # gold: 2 canonical + 1 non-canonical; read: the same shape with "dry" for "dry or wet"
    assert turn_fact_f1(actions, text, ExactMatcher(), reader) == pytest.approx(2 / 3)
    assert turn_fact_f1(actions, text, _OptionMatcher(), reader) == 1.0
    report = score_nlg_facts([_example(2, actions, text)], {("d1", 2): text}, _OptionMatcher(), reader)
    assert report["f1"] == 1.0 and report["non_canonical"]["f1"] == 1.0 and report["matcher"] == {"name": "option"}


# --------------------------------------------------------------------------- validation


def test_validate_separates_own_from_other_and_right_from_wrong(reader):
    report = validate(reader=reader)
    n = len([ex for ex in nlg_examples(load_dialogues()) if any(action_facts(ex.actions))])
    assert report["n"] == n > 50
    assert report["mean_own"] > report["mean_other"]
    assert report["mean_own"] >= 2 * report["mean_other"]
    assert report["share_own_gt_other"] >= 0.85
    wrong = report["wrong_utterance"]
    assert wrong["n"] > 30
    assert wrong["mean_right"] > wrong["mean_wrong"]
    assert wrong["share_right_gt_wrong"] >= 0.9
