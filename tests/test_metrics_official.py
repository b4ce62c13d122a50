"""The official MediTOD NLU definition (eval/metrics/official.py), hand-computed cases."""

from __future__ import annotations

import pytest

from agent.core.data import Example
from eval.metrics.official import nlu_sets, score_nlu_official


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


# --------------------------------------------------------------------------- POL

from eval.metrics.official import pol_sets, score_pol_official  # noqa: E402


def pex(i: int, gold: list[dict], dialog: str = "d") -> Example:
    return Example("pol", dialog, i, [], [], gold)


ASK_ONSET = [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"}]}]}]
ASK_FEVER = [{"action": "inquire", "symptom": [{"value": "fever"}]}]


def test_pol_invalid_check_type_counts_as_a_false_positive():
    pred = [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"},
                                                                             {"type": "colourfulness"}]}]}]
    r = score_pol_official([pex(1, ASK_ONSET)], {("d", 1): pred})
    assert r["canonical"]["recall"] == 1.0 and r["canonical"]["precision"] == pytest.approx(2 / 3)


def test_pol_skipped_turn_in_joint_accuracy_and_precision_at_k():
    bare = [{"action": "inquire"}]
    examples = [pex(1, ASK_ONSET), pex(3, bare), pex(5, ASK_FEVER)]
    preds = {("d", 1): ASK_ONSET, ("d", 3): bare, ("d", 5): ASK_ONSET}
    r = score_pol_official(examples, preds)
    assert r["joint_accuracy"] == pytest.approx(1 / 3)  # turn 3 is skipped: not credited, still divides
    # P@K counts every turn, the skipped one included: turn 1 and 3 hit at K=1, turn 5 never
    assert r["precision_at_k"]["1"] == pytest.approx(2 / 3)
    assert r["precision_at_k"]["inf"] == pytest.approx(2 / 3)


def test_pol_dict_instead_of_list_is_one_action():
    assert pol_sets(ASK_ONSET[0]) == pol_sets(ASK_ONSET)
    # a broken action is dropped, the others of the turn still count
    can, _ = pol_sets([ASK_FEVER[0], {"action": "inquire", "symptom": "fever"}])
    assert can == {("inquire", "symptom", "fever")}


# --------------------------------------------------------------------------- medhx score's headline

from eval.metrics.score import score  # noqa: E402


def test_medhx_score_headline_is_official_and_the_lenient_variant_is_named_apart():
    invalid_attr = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "coughing", "onset": "two weeks ago",
                                                                          "location": ["chest"], "colour": "red"}]}}]
    bare = [{"intent": "inform"}]
    r = score("nlu", [ex(1, GOLD), ex(2, bare)], {("d", 1): invalid_attr, ("d", 2): bare})
    assert r["definition"] == "official" and r["skipped_turns"] == 1
    assert r["overall"]["precision"] == pytest.approx(3 / 4)  # the invalid attribute is a false positive
    assert r["joint_accuracy"] == 0.0  # turn 1 differs; turn 2 is skipped, never credited
    assert r["lenient"]["overall"]["precision"] == 1.0  # the variant sets the attribute aside ...
    assert r["lenient"]["schema_extra_items"] == 1
    assert r["lenient"]["joint_accuracy"] == 1.0  # ... and credits the skipped turn

    r = score("nlu", [ex(1, GOLD)], {("d", 1): GOLD[0]})  # a dict instead of a list
    assert r["format_errors"] == 1 and r["overall"]["recall"] == 0.0
    r = score("nlu", [ex(1, GOLD)], {("d", 1): "not json"})  # the model's text did not parse
    assert r["format_errors"] == 1 and r["overall"]["recall"] == 0.0


def test_medhx_score_pol_skipped_turn_in_joint_accuracy_and_precision_at_k():
    bare = [{"action": "inquire"}]
    r = score("pol", [pex(1, ASK_ONSET), pex(3, bare), pex(5, ASK_FEVER)],
              {("d", 1): ASK_ONSET, ("d", 3): bare, ("d", 5): ASK_ONSET})
    assert r["joint_accuracy"] == pytest.approx(1 / 3) and r["lenient"]["joint_accuracy"] == pytest.approx(
        2 / 3, abs=1e-4
    )
    assert r["precision_at_k"]["1"] == pytest.approx(2 / 3)
