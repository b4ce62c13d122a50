"""Typed configuration: a misspelt key fails at start with its path and the allowed keys; ``medhx config check``
validates every config of the repository; ``medhx config show`` fills in the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agent.app.graph import build_agent
from agent.cli import main
from policies.agent_config import check_agent_config

REPO = Path(__file__).resolve().parents[1]


def default() -> dict:
    return yaml.safe_load((REPO / "configs" / "default.yaml").read_text())


def test_a_misspelt_safety_setting_fails_instead_of_turning_the_gate_off():
    cfg = default()
    cfg["nlu"]["known_value_only"] = False  # misspelt: the grounding gate would have stayed on silently ... or off
    with pytest.raises(ValueError, match=r"nlu\.known_value_only: Extra inputs are not permitted.*'grounding'"):
        build_agent(cfg)
    cfg = default()
    cfg["session"]["max_turn"] = 10
    with pytest.raises(ValueError, match=r"session\.max_turn"):
        check_agent_config(cfg)
    cfg = default()
    cfg["dst"]["list_merge"] = "append"
    with pytest.raises(ValueError, match=r"dst\.list_merge"):
        check_agent_config(cfg)
    cfg = default()
    cfg["polcy"] = {"kind": "questionnaire"}
    with pytest.raises(ValueError, match=r"polcy: Extra inputs"):
        check_agent_config(cfg)


def test_every_config_in_the_repository_checks(capsys):
    files = sorted((REPO / "configs").rglob("*.yaml"))
    data_files = {"nlu_lexicon.yaml", "nlg_lexicon.yaml", "questionnaire.yaml", "vocabulary.yaml", "red_flags.yaml",
                  "sex_specific.yaml", "bench/paper_reference.yaml", "nlg_facts.yaml", "simulate/lay_phrases.yaml",
                  "vocabulary/hpo_terms.yaml", "vocabulary/drug_classes.yaml", "vocabulary/lay_glossary.yaml",
                  "vocabulary/common_names.yaml", "vocabulary/inn_stems.yaml", "vocabulary/dialect.yaml",
                  "vocabulary/code_switching.yaml"}
    checked = 0
    for f in files:
        if str(f.relative_to(REPO / "configs")) in data_files:
            continue
        assert main(["config", "check", str(f)]) == 0, f
        checked += 1
    assert checked >= 20 and "valid agent config" in capsys.readouterr().out


def test_each_config_kind_is_told_by_keys_of_its_own():
    """No key marks two kinds, so which kind a config is never depends on the order the kinds are tried; a config
    with the marks of two kinds is an error that asks for ``--type``, and one with none is told by its shape."""
    from agent.app.config import MARKS, config_type

    marked_twice = [k for k in set().union(*MARKS.values()) if sum(k in m for m in MARKS.values()) > 1]
    assert marked_twice == []
    assert config_type({"agent": "a.yaml", "output_dir": "out", "clinic": {}}) == "load-bench"
    assert config_type({"agent": "a.yaml", "output_dir": "out", "tasks": ["nlu"]}) == "bench"
    assert config_type({"tasks": ["nlu"], "output_dir": "out"}) == "train"
    assert config_type({"host": "127.0.0.1"}) == "serve"
    with pytest.raises(ValueError, match=r"several medhx config types: agent \(keys \['nlu'\]\); bench-speed.*--type"):
        config_type({"nlu": {}, "probe": {}})
    with pytest.raises(ValueError, match="match no medhx config type"):
        config_type({"rules": []})


def test_show_fills_in_defaults_and_check_reports_errors_with_exit_code_1(tmp_path, capsys):
    assert main(["config", "show", str(REPO / "configs" / "default.yaml")]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["dst"] == {"kind": "rule", "list_merge": "replace"}
    assert shown["session"]["max_turns"] == 40 and shown["nlu"]["grounding"] is True
    assert shown["policy"]["questionnaire"] == str(REPO / "configs" / "questionnaire.yaml")  # relative to configs/
    bad = tmp_path / "bad.yaml"
    cfg = default()
    cfg["nlg"]["lexicn"] = "x.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    assert main(["config", "check", str(bad)]) == 1
    assert "nlg.lexicn" in capsys.readouterr().err


def test_paths_in_a_config_are_relative_to_the_config_files_directory(tmp_path, monkeypatch):
    """One rule: a config in any directory names its files relative to itself, whatever the working directory."""
    from policies.agent_config import load_config

    (tmp_path / "lex").mkdir()
    (tmp_path / "lex" / "mine.yaml").write_text((REPO / "configs" / "nlg_lexicon.yaml").read_text())
    cfg = default()
    cfg["nlg"]["lexicon"] = "lex/mine.yaml"
    cfg["nlu"]["lexicon"] = str(REPO / "configs" / "nlu_lexicon.yaml")  # absolute: taken as it is
    cfg["policy"]["questionnaire"] = "../" + tmp_path.name + "/q.yaml"
    (tmp_path / "q.yaml").write_text((REPO / "configs" / "questionnaire.yaml").read_text())
    cfg["safety"]["red_flags"] = str(REPO / "configs" / "red_flags.yaml")
    cfg["session"]["dir"] = "sessions"
    (tmp_path / "agent.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.chdir(REPO / "tests")  # not where the config is
    loaded = load_config(tmp_path / "agent.yaml")
    assert loaded["nlg"]["lexicon"] == str(tmp_path / "lex" / "mine.yaml")
    assert loaded["policy"]["questionnaire"] == str(tmp_path / "q.yaml")
    assert loaded["session"]["dir"] == str(tmp_path / "sessions")
    assert loaded["base_model"] == "smollm2"  # a model id, not a path next to the config
    agent = build_agent(loaded)
    try:
        assert agent.nlg is not None
    finally:
        agent.close()
    cfg["nlg"]["lexicon"] = "lex/missing.yaml"
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(cfg))
    with pytest.raises(FileNotFoundError, match="missing.yaml"):
        build_agent(load_config(tmp_path / "bad.yaml"))
