"""``medhx load-bench`` on the in-process default agent: concurrent interviews in one process, one store each for
SQLite and PostgreSQL; nothing lost, nothing duplicated, no error (the figures for a vLLM-backed agent are in the
README; this checks the harness and the thread safety of the default modules and the stores)."""

from __future__ import annotations

import json

import pytest
from graph_fixtures import REPO

from eval.runs.load_bench import LoadBenchConfig, load_config, run


@pytest.mark.postgres
def test_concurrent_interviews_lose_and_duplicate_nothing(tmp_path, postgres_url):
    cfg = LoadBenchConfig(agent=str(REPO / "configs" / "default.yaml"), interviews=8, turns=3,
                          stores=["sqlite", "postgres"], postgres_url=postgres_url, output_dir=str(tmp_path / "out"))
    report = run(cfg, progress=False)
    for r in report["runs"]:
        assert (r["errors"], r["lost"], r["duplicated"]) == (0, 0, 0), r["errors_by_type"]
        assert r["turns_accepted"] == 24 and r["turns_per_s"] > 0
        assert r["latency_ms"]["p50"] <= r["latency_ms"]["p95"] <= r["latency_ms"]["p99"]
    assert report["ok"]
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [r["store"] for r in saved["runs"]] == ["sqlite", "postgres"]
    assert (tmp_path / "out" / "latency.png").stat().st_size > 0 and "| sqlite |" in (
        tmp_path / "out" / "report.md"
    ).read_text()


def test_the_shipped_config_loads_with_paths_next_to_it():
    cfg = load_config(REPO / "configs" / "load_bench.yaml")
    assert cfg.interviews == 50 and cfg.agent == str(REPO / "configs" / "ensemble.yaml")
    assert cfg.data == str(REPO / "data" / "meditod")
