"""``medhx score`` on the shared MediTOD dialogues (data/meditod)."""

import copy
import json

import pytest

from agent.cli import main
from agent.core.data import DEFAULT_DATA_DIR, load_dialogues, pol_examples

DATA = str(DEFAULT_DATA_DIR)


def run(capsys, *argv):
    code = main(["score", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("task", ["nlu", "pol"])
@pytest.mark.parametrize("split", ["all", "train", "valid"])
def test_gold_as_pred_scores_one_everywhere(capsys, task, split):
    code, out, _ = run(capsys, task, "--data", DATA, "--split", split, "--gold-as-pred")
    assert code == 0
    r = json.loads(out)
    assert r["turns"] == {"all": 104, "train": 51, "valid": 53}[split]
    for part in ("overall", "canonical", "non_canonical"):
        assert r[part] == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert r["joint_accuracy"] == 1.0 and r["format_errors"] == 0 and r["lenient"]["schema_errors"] == 0
    assert r["definition"] == "official"
    if task == "pol":
        assert r["precision_at_k"] == {"1": 1.0, "4": 1.0, "8": 1.0, "inf": 1.0}


@pytest.mark.slow
def test_nlg_gold_as_pred_scores_one(capsys):
    code, out, _ = run(capsys, "nlg", "--data", DATA, "--split", "valid", "--gold-as-pred")
    r = json.loads(out)
    assert code == 0 and r["turns"] == 53
    assert (r["bleu2"], r["bleu4"], r["rouge1"], r["rougeL"], r["bertscore"]) == (100.0, 100.0, 1.0, 1.0, 1.0)
    assert r["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_prediction_file_one_action_late_and_one_malformed(capsys, tmp_path):
    examples = pol_examples(load_dialogues(DATA, "valid"))
    records = [{"dialog_id": ex.dialog_id, "uttr_id": ex.uttr_id, "prediction": copy.deepcopy(ex.target), "raw": ""}
               for ex in examples]
    records[0]["prediction"] = copy.deepcopy(examples[1].target)  # the second turn's action, one turn early
    records[2]["prediction"] = None  # the model's text did not parse
    pred = tmp_path / "pol.jsonl"
    pred.write_text("".join(json.dumps(r) + "\n" for r in records[:-1]))  # and the last turn has no prediction
    code, out, _ = run(capsys, "pol", "--data", DATA, "--split", "valid", "--pred", str(pred),
                       "--out", str(tmp_path / "report.json"))
    r = json.loads(out)
    assert code == 0 and json.loads((tmp_path / "report.json").read_text()) == r
    assert r["format_errors"] == 2 and r["missing_predictions"] == 1
    n = 53
    assert r["joint_accuracy"] == pytest.approx((n - 3) / n, abs=1e-4)
    assert r["precision_at_k"]["1"] == pytest.approx((n - 3) / n, abs=1e-4)
    assert r["precision_at_k"]["4"] == pytest.approx((n - 2) / n, abs=1e-4)


def test_malformed_prediction_file_is_a_clear_error(capsys, tmp_path):
    pred = tmp_path / "bad.jsonl"
    pred.write_text('{"dialog_id": "317", "uttr_id": 1, "prediction": []}\n{oops\n')
    code, _, err = run(capsys, "nlu", "--data", DATA, "--split", "valid", "--pred", str(pred))
    assert code == 1 and f"{pred}:2: not JSON" in err
    pred.write_text('{"dialog_id": "317", "uttr_id": 1}\n{"dialog_id": "317", "uttr_id": 1}\n')
    code, _, err = run(capsys, "nlu", "--data", DATA, "--split", "valid", "--pred", str(pred))
    assert code == 1 and "second prediction for dialogue 317 turn 1" in err
