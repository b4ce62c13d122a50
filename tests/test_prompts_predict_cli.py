"""``medhx predict`` writes a prediction file that ``medhx score`` reads."""

from __future__ import annotations

import json
import shutil

import yaml
from graph_fixtures import REPO

from agent.cli import main
from agent.core.data import load_dialogues, task_examples
from models import prompts
from models.modules import load_tokenizer


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
    assert (summary["rows"], summary["adapter"], summary["mode"], summary["parse"]["total"]) == (
        3,
        "nlu",
        "supervised",
        3,
    )
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["uttr_id"] for r in rows] == [1, 3, 5] and {r["dialog_id"] for r in rows} == {"317"}

    assert main(["score", "nlu", "--split", "valid", "--pred", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["turns"] == 53 and report["missing_predictions"] == 50
    assert report["format_errors"] >= 50  # the 50 turns without a prediction, plus any unparseable ones

    # a module that is not an LLM cannot predict: a clear error, exit code 1
    assert main(["predict", "--config", str(cfg), "--task", "pol", "--split", "valid", "--out", str(out)]) == 1
    assert "kind: model" in capsys.readouterr().err


def test_predict_draws_icl_exemplars_where_the_configs_exemplars_say(tiny_model_dir, tmp_path, monkeypatch, capsys):
    """``exemplars:`` (the schema's key) decides the in-context exemplar pool; predict used to read a ``retrieval:``
    key instead and ignored it. Each setting below leaves a pool of the queried dialogue alone, which the real
    retriever never returns for its own turns: zero-shot prompts. The default pool (``--data``'s train split) has
    another dialogue: longer prompts."""
    monkeypatch.setenv("MEDHX_CACHE", str(tmp_path / "cache"))  # the exemplar index's embeddings
    bundled = REPO / "data" / "meditod"
    own_only = tmp_path / "own_only"  # a dataset whose train split is the queried (valid) dialogue 317
    own_only.mkdir()
    shutil.copy(bundled / "dialogs.json", own_only / "dialogs.json")
    for split, ids in (("train", ["317"]), ("valid", []), ("test", [])):
        (own_only / f"{split}_ids.json").write_text(json.dumps(ids))

    def prompt_tokens(exemplars: dict | None) -> list[int]:
        nlu = {"kind": "model", "backend": "local", "mode": "icl", "k": 1, "max_tokens": 2, "constrained": False}
        config = {"base_model": str(tiny_model_dir), "backends": {"local": {"kind": "hf"}},
                  "nlu": nlu | ({"exemplars": exemplars} if exemplars else {}),
                  "policy": {"kind": "questionnaire"}, "nlg": {"kind": "template"}}
        cfg, out = tmp_path / "agent.yaml", tmp_path / "pred.jsonl"
        cfg.write_text(yaml.safe_dump(config))
        assert main(["predict", "--config", str(cfg), "--task", "nlu", "--data", str(bundled), "--split", "valid",
                     "--limit", "2", "--out", str(out), "--no-progress"]) == 0
        capsys.readouterr()
        return [json.loads(line)["prompt_tokens"] for line in out.read_text().splitlines()]

    tokenizer = load_tokenizer(str(tiny_model_dir))
    queries = task_examples("nlu", load_dialogues(bundled, "valid"), 4)[:2]
    zero_shot = [len(prompts.encode_prompt(prompts.render_prompt(prompts.build_messages(e, "icl", []), tokenizer),
                                           tokenizer)) for e in queries]
    assert prompt_tokens({"split": "valid"}) == zero_shot
    assert prompt_tokens({"data": str(own_only)}) == zero_shot
    assert all(n > z for n, z in zip(prompt_tokens(None), zero_shot, strict=True))
