"""Typed configuration: a misspelt key fails at start with its path and the allowed keys; ``medhx config check``
validates every config of the repository; ``medhx config show`` fills in the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agent.cli import main
from agent.config import check_agent_config
from agent.graph import build_agent

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
    files = [*sorted((REPO / "configs").glob("*.yaml")), *sorted((REPO / "configs" / "train").glob("*.yaml")),
             *sorted((REPO / "configs" / "bench").glob("*.yaml"))]
    data_files = {"nlu_lexicon.yaml", "nlg_lexicon.yaml", "questionnaire.yaml", "vocabulary.yaml", "red_flags.yaml",
                  "paper_reference.yaml", "nlg_facts.yaml", "bench_speed.yaml"}
    checked = 0
    for f in files:
        if f.name in data_files:
            continue
        assert main(["config", "check", str(f)]) == 0, f
        checked += 1
    assert checked >= 12 and "valid agent config" in capsys.readouterr().out


def test_show_fills_in_defaults_and_check_reports_errors_with_exit_code_2(tmp_path, capsys):
    assert main(["config", "show", str(REPO / "configs" / "default.yaml")]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["dst"] == {"kind": "rule", "list_merge": "replace"}
    assert shown["session"]["max_turns"] == 40 and shown["nlu"]["grounding"] is True
    assert shown["policy"]["questionnaire"] == "configs/questionnaire.yaml"
    bad = tmp_path / "bad.yaml"
    cfg = default()
    cfg["nlg"]["lexicn"] = "x.yaml"
    bad.write_text(yaml.safe_dump(cfg))
    assert main(["config", "check", str(bad)]) == 2
    assert "nlg.lexicn" in capsys.readouterr().err
