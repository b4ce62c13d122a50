"""``medhx predict`` writes a prediction file that ``medhx score`` reads."""

from __future__ import annotations

import json

import yaml

from agent.cli import main


def test_predict_then_score(tiny_model_dir, tiny_adapters, tmp_path, capsys):
    config = {
        "base_model": str(tiny_model_dir),
        "backends": {"local": {"kind": "hf", "adapters": tiny_adapters}},
        "nlu": {"kind": "model", "backend": "local", "adapter": "nlu", "max_tokens": 6},
        "policy": {"kind": "questionnaire"},
        "nlg": {"kind": "template"},
    }
    cfg = tmp_path / "agent.yaml"
    cfg.write_text(yaml.safe_dump(config))
    out = tmp_path / "pred.jsonl"
    assert main(["predict", "--config", str(cfg), "--task", "nlu", "--split", "valid", "--limit", "3",
                 "--out", str(out), "--no-progress"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["rows"], summary["adapter"], summary["mode"], summary["parse"]["total"]) == (3, "nlu", "supervised", 3)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["uttr_id"] for r in rows] == [1, 3, 5] and {r["dialog_id"] for r in rows} == {"317"}

    assert main(["score", "nlu", "--split", "valid", "--pred", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["turns"] == 53 and report["missing_predictions"] == 50
    assert report["format_errors"] >= 50  # the 50 turns without a prediction, plus any unparseable ones

    # a module that is not an LLM cannot predict: a clear error, exit code 1
    assert main(["predict", "--config", str(cfg), "--task", "pol", "--split", "valid", "--out", str(out)]) == 1
    assert "kind: model" in capsys.readouterr().err
