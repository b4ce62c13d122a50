"""NLU / POL scoring with hand-computed expectations.

Gold turn used throughout (5 tuples): canonical (coughing), (coughing, location, chest);
non-canonical (onset, two months ago), (positive_characteristics, wet cough),
(positive_characteristics, productive).
"""

import copy

import pytest

from agent.core.data import Example
from eval.metrics.lenient import score_nlu_lenient, score_pol_lenient

GOLD = [{"intent": "inform", "slots": {"positive_symptom": [
    {"value": "coughing", "onset": "two months ago", "location": ["chest"],
     "positive_characteristics": ["wet cough", "productive"]}]}}]


def nlu_example(target, dialog_id="d", uttr_id=1):
    return Example("nlu", dialog_id, uttr_id, [], [], target)


def pol_example(target, dialog_id="d", uttr_id=2):
    return Example("pol", dialog_id, uttr_id, [], [], target, state={})


def item(frames):
    return frames[0]["slots"]["positive_symptom"][0]


def score_one(pred):
    return score_nlu_lenient([nlu_example(GOLD)], {("d", 1): pred})


def prf(p, r, f):
    return {
        "precision": pytest.approx(p, abs=1e-4),
        "recall": pytest.approx(r, abs=1e-4),
        "f1": pytest.approx(f, abs=1e-4),
    }


def test_flipped_status_loses_every_tuple():
    pred = copy.deepcopy(GOLD)
    pred[0]["slots"] = {"negative_symptom": pred[0]["slots"].pop("positive_symptom")}
    r = score_one(pred)
    assert r["counts"]["overall"] == {"tp": 0, "fp": 5, "fn": 5}
    assert r["canonical"] == prf(0, 0, 0) and r["non_canonical"] == prf(0, 0, 0)
    assert r["joint_accuracy"] == 0


def test_missing_attribute_costs_non_canonical_recall():
    pred = copy.deepcopy(GOLD)
    del item(pred)["onset"]
    r = score_one(pred)
    assert r["canonical"] == prf(1, 1, 1)
    assert r["non_canonical"] == prf(1, 2 / 3, 0.8)
    assert r["overall"] == prf(1, 4 / 5, 8 / 9)
    assert r["joint_accuracy"] == 0


def test_extra_canonical_attribute_costs_canonical_precision():
    pred = copy.deepcopy(GOLD)
    item(pred)["severity"] = "moderate"
    r = score_one(pred)
    assert r["canonical"] == prf(2 / 3, 1, 0.8)
    assert r["non_canonical"] == prf(1, 1, 1)
    assert r["overall"] == prf(5 / 6, 1, 10 / 11)


def test_wrong_canonical_value():
    pred = copy.deepcopy(GOLD)
    item(pred)["location"] = ["throat"]
    r = score_one(pred)
    assert r["counts"]["canonical"] == {"tp": 1, "fp": 1, "fn": 1}
    assert r["canonical"] == prf(0.5, 0.5, 0.5)
    assert r["overall"] == prf(0.8, 0.8, 0.8)


def test_case_and_spacing_do_not_matter():
    pred = copy.deepcopy(GOLD)
    item(pred)["onset"] = "Two  Months ago"
    assert score_one(pred)["joint_accuracy"] == 1.0


@pytest.mark.parametrize("bad", [None, "{not json", 42, "not a list"])
def test_malformed_prediction_is_a_format_error_scored_as_empty(bad):
    r = score_one(bad)
    assert r["format_errors"] == 1 and r["missing_predictions"] == 0
    assert r["counts"]["overall"] == {"tp": 0, "fp": 0, "fn": 5}
    assert r["overall"] == prf(0, 0, 0)


def test_missing_prediction_is_a_format_error_and_unknown_turns_are_reported():
    r = score_nlu_lenient([nlu_example(GOLD)], {("other", 9): GOLD})
    assert (r["format_errors"], r["missing_predictions"], r["unscored_predictions"]) == (1, 1, 1)


def test_prediction_as_json_text_is_accepted():
    import json

    assert score_one(json.dumps(GOLD))["joint_accuracy"] == 1.0


def test_non_cmas_parts_are_counted_and_the_rest_scored():
    pred = copy.deepcopy(GOLD)
    item(pred)["colour"] = "green"
    r = score_one(pred)
    assert (r["format_errors"], r["schema_errors"], r["schema_extra_items"]) == (0, 1, 1)
    assert r["overall"] == prf(1, 1, 1)


def test_joint_accuracy_divides_by_all_turns_including_skipped_ones():
    bare = [{"intent": "inform"}]
    examples = [nlu_example(bare, uttr_id=1), nlu_example(GOLD, uttr_id=3), nlu_example(GOLD, uttr_id=5)]
    wrong = copy.deepcopy(GOLD)
    del item(wrong)["onset"]
    r = score_nlu_lenient(examples, {("d", 1): bare, ("d", 3): GOLD, ("d", 5): wrong})
    assert (r["turns"], r["scored_turns"], r["skipped_turns"]) == (3, 2, 1)
    assert r["joint_accuracy"] == pytest.approx(2 / 3, abs=1e-4)
    assert r["counts"]["overall"] == {"tp": 9, "fp": 0, "fn": 1}  # the bare inform turn is not in P/R/F1
    assert any("all 3 gold turns" in n for n in r["notes"])


def test_micro_average_over_turns():
    missing_attr, wrong_loc = copy.deepcopy(GOLD), copy.deepcopy(GOLD)
    del item(missing_attr)["onset"]
    item(wrong_loc)["location"] = ["throat"]
    r = score_nlu_lenient(
        [nlu_example(GOLD, uttr_id=1), nlu_example(GOLD, uttr_id=3)], {("d", 1): missing_attr, ("d", 3): wrong_loc}
    )
    # canonical: 2 + 1 TP, 1 FP, 1 FN; non-canonical: 2 + 3 TP, 1 FN
    assert r["counts"]["canonical"] == {"tp": 3, "fp": 1, "fn": 1}
    assert r["counts"]["non_canonical"] == {"tp": 5, "fp": 0, "fn": 1}
    assert r["overall"] == prf(8 / 9, 8 / 10, 2 * (8 / 9) * 0.8 / (8 / 9 + 0.8))


# ------------------------------------------------------------------------------------------------ POL

A = [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"}]}]}]
B = [{"action": "inquire", "symptom": [{"value": "hemoptysis"}]}]
C = [{"action": "inquire", "medication": [{"value": "other", "checks": [{"type": "respone_to"}]}]}]
D = [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "characteristics",
                                                                          "values": ["dry or wet"]}]}]}]


def test_pol_action_one_turn_late():
    examples = [pol_example(g, uttr_id=u) for g, u in ((A, 2), (B, 4), (C, 6))]
    preds = {("d", 2): B, ("d", 4): C, ("d", 6): D}  # each correct action one turn late; the last one never right
    r = score_pol_lenient(examples, preds)
    assert r["precision_at_k"] == {"1": 0.0, "4": pytest.approx(2 / 3, abs=1e-4), "8": pytest.approx(2 / 3, abs=1e-4),
                                   "inf": pytest.approx(2 / 3, abs=1e-4)}
    assert r["joint_accuracy"] == 0.0
    one = score_pol_lenient(examples[:2], {("d", 2): B, ("d", 4): D})
    # turn 2's action B is the gold of turn 4: P@1 = 0 and P@4 = 1 for that turn; turn 4 (D) matches nothing
    assert one["precision_at_k"]["1"] == 0.0 and one["precision_at_k"]["4"] == 0.5


def test_precision_at_k_window_and_dialogue_boundary():
    gold = [A, B, C, B, C, C, D]
    examples = [pol_example(g, uttr_id=2 * i + 2) for i, g in enumerate(gold)]
    examples.append(pol_example(A, dialog_id="e", uttr_id=2))
    preds = {(ex.dialog_id, ex.uttr_id): ex.target for ex in examples}
    preds[("d", 2)] = D  # first equal gold turn is 6 turns ahead
    preds[("e", 2)] = B  # B is gold only in dialogue d
    r = score_pol_lenient(examples, preds)
    # 8 turns; exact at own turn: 6 (d turns 2..7); d turn 1 needs K > 6; e never
    assert r["precision_at_k"] == {"1": 0.75, "4": 0.75, "8": 0.875, "inf": 0.875}


def test_pol_tuple_scores_and_bare_inquire_skip():
    bare = [{"action": "inquire"}]
    examples = [pol_example(D, uttr_id=2), pol_example(bare, uttr_id=4)]
    pred_d = [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "characteristics",
                                                                                  "values": ["wet or dry"]}]}]}]
    r = score_pol_lenient(examples, {("d", 2): pred_d, ("d", 4): bare})
    assert r["skipped_turns"] == 1
    assert r["canonical"] == prf(1, 1, 1)  # (coughing), (coughing, characteristics)
    assert r["non_canonical"] == prf(0, 0, 0)  # "wet or dry" != "dry or wet" under exact matching
    assert r["joint_accuracy"] == 0.5
    assert r["format_errors"] == 0


def test_pol_malformed_prediction():
    r = score_pol_lenient([pol_example(A)], {("d", 2): [{"action": "shout"}]})
    assert r["schema_errors"] == 1 and r["counts"]["overall"] == {"tp": 0, "fp": 0, "fn": 2}
    r = score_pol_lenient([pol_example(A)], {("d", 2): None})
    assert r["format_errors"] == 1 and r["precision_at_k"]["inf"] == 0.0
