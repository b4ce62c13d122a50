"""The official MediTOD NLU definition (eval/official.py), hand-computed cases."""

from __future__ import annotations

import pytest

from agent.data import Example
from eval.official import nlu_sets, score_nlu_official


def ex(i: int, gold: list[dict]) -> Example:
    return Example("nlu", "d", i, [], [], gold)


GOLD = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "coughing", "onset": "two weeks ago",
                                                              "location": ["chest"]}]}}]


def test_every_predicted_tuple_counts_even_outside_the_schema():
    # `colour` is no CMAS attribute of a symptom: the official definition still unrolls it (a false positive)
    pred = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "coughing", "onset": "two weeks ago",
                                                                  "location": ["chest"], "colour": "red"}]}}]
    r = score_nlu_official([ex(1, GOLD)], {("d", 1): pred})
    assert r["canonical"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert r["non_canonical"]["precision"] == pytest.approx(1 / 2) and r["non_canonical"]["recall"] == 1.0
    assert r["overall"]["precision"] == pytest.approx(3 / 4)
    assert r["joint_accuracy"] == 0.0


def test_values_are_compared_as_written():
    pred = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "Coughing", "onset": "two weeks ago",
                                                                  "location": ["chest"]}]}}]
    r = score_nlu_official([ex(1, GOLD)], {("d", 1): pred})
    assert r["canonical"]["recall"] == 0.0  # the head and its location tuple both carry "Coughing"
    assert r["non_canonical"]["recall"] == 0.0


def test_skipped_turn_counts_in_joint_accuracy_denominator_only():
    bare = [{"intent": "inform"}]
    r = score_nlu_official([ex(1, GOLD), ex(2, bare)], {("d", 1): GOLD, ("d", 2): bare})
    assert r["overall"]["f1"] == 1.0
    assert r["joint_accuracy"] == 0.5  # the skipped turn is not credited, and still divides


def test_a_dict_instead_of_a_list_is_a_format_error():
    r = score_nlu_official([ex(1, GOLD)], {("d", 1): GOLD[0]})
    assert r["format_errors"] == 1.0 and r["overall"]["recall"] == 0.0
    with pytest.raises(TypeError):  # iterating a dict yields its keys: "intent"["intent"] fails
        nlu_sets({"intent": "inform"})
    r = score_nlu_official([ex(1, GOLD)], {})  # missing
    assert r["format_errors"] == 1.0
