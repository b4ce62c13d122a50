"""The held-aside material (tests/generalisation/, tests/data/red_flag_phrasings.yaml) through the real graph and
SQLite sessions on configs/default.yaml, by the same code as `medhx generalisation`.

The material was written by helpers that had not seen the lexicon, the rules or the code, and nothing is tuned to
its entries. These tests guard the measured figures against regression (the floors sit just under what the
README reports); the issue's aims (recall 0.85, every red flag raised) are not met yet and are reported, not
asserted."""

from __future__ import annotations

import pytest
import yaml
from graph_fixtures import default_store

from agent.core.safety import check_red_flags, check_text_flags
from agent.core.tracker import update_state
from eval.runs.generalisation import PHRASINGS, run_statements, run_stories
from policies.nlu.clinical import ClinicalNLU


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with default_store(tmp_path_factory.mktemp("material")) as s:
        yield s


def test_stories(store):
    r = run_stories(store, progress=False)
    assert r["stories"] >= 30 and r["facts_stated"] >= 300
    assert r["recall"] >= 0.38, r["recall"]
    assert r["red_flags_raised"] >= 13, r["red_flags_raised"]
    assert r["quiet_stories_with_a_flag"] == 0
    assert r["wrong_status"] + r["must_not_present"] <= 20


def test_red_flag_statements(store):
    r = run_statements(store, progress=False)
    assert r["flagged"] >= 40 and r["quiet"] >= 20
    assert r["raised_share"] >= 0.6, r["missed"]
    assert r["false_alarm_share"] <= 0.25, r["alarms"]


def first_turn_flags(nlu: ClinicalNLU, text: str) -> set[str]:
    """The flags a first patient turn raises, as the graph's red-flag node computes them (the state the NLU's frames
    make, and the patient's words), without a session per phrasing: 344 of them."""
    state = update_state({}, nlu.frames(text))
    return {f.id for f in [*check_red_flags(state), *check_text_flags(text, state=state)]}


def test_rule_phrasings_fire_and_their_negations_do_not():
    nlu = ClinicalNLU()
    rules = yaml.safe_load(PHRASINGS.read_text())["rules"]
    fired = silent = total = 0
    for rule, entry in rules.items():
        assert len(entry["fires"]) >= 5 and len(entry["negated"]) == len(entry["fires"]), rule
        hits = [rule in first_turn_flags(nlu, t) for t in entry["fires"]]
        assert any(hits), rule  # every rule fires on some of its lay phrasings
        fired += sum(hits)
        silent += sum(rule not in first_turn_flags(nlu, t) for t in entry["negated"])
        total += len(hits)
    assert len(rules) >= 20
    assert fired / total >= 0.6, fired / total
    assert silent / total >= 0.85, silent / total
