"""``medhx storage-bench`` on a short run: real interviews on real SQLite and PostgreSQL stores, bytes read back per
table, the report, the plot. The bound itself (300 kB at 40 turns, growth at most 2.2x from 20 to 40) is the
benchmark's to report (README), not a test's: this checks the harness and that each store holds a session as one
checkpoint and its transcript."""

from __future__ import annotations

import json

import pytest
from graph_fixtures import REPO

from eval.runs.storage_bench import StorageBenchConfig, load_config, run


@pytest.mark.slow
@pytest.mark.postgres
def test_storage_bench_measures_both_stores(tmp_path, postgres_url):
    cfg = StorageBenchConfig(case_ids=["endo-diabetic-ketoacidosis"], turns=[4, 8], postgres_url=postgres_url,
                             output_dir=str(tmp_path / "out"))
    report = run(cfg, progress=False)
    rows = report["interviews"]
    assert [(r["store"], r["doctor_turns"]) for r in rows] == [("sqlite", 4), ("sqlite", 8), ("postgres", 4),
                                                               ("postgres", 8)]
    for r in rows:
        assert r["tables"]["checkpoints"]["rows"] == 1  # a session is one checkpoint
        assert r["tables"]["medhx_turns"]["rows"] == r["utterances"]  # and its transcript, a row per turn
        assert r["bytes"] == sum(t["bytes"] for t in r["tables"].values()) > 0
    assert all(r["file_bytes"] > 0 for r in rows if r["store"] == "sqlite")
    for store in ("sqlite", "postgres"):
        s = report["summary"][store]
        assert s["mean_bytes"][4] < s["mean_bytes"][8] == s["max_bytes_at_longest"]
        assert s["max_growth"] == round(s["mean_bytes"][8] / s["mean_bytes"][4], 3)
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["ok"] == report["ok"] and len(saved["interviews"]) == 4
    assert (tmp_path / "out" / "bytes_per_interview.png").stat().st_size > 0
    assert "| postgres | endo-diabetic-ketoacidosis | 8 |" in (tmp_path / "out" / "report.md").read_text()


def test_the_shipped_config_loads_with_paths_next_to_it(tmp_path):
    cfg = load_config(REPO / "configs" / "storage_bench.yaml")
    assert cfg.agent == str(REPO / "configs" / "default.yaml") and cfg.cases == str(REPO / "data" / "cases")
    assert max(cfg.turns) == 40 and cfg.aims.max_bytes == 300_000 and cfg.stores == ["sqlite", "postgres"]
    (tmp_path / "bad.yaml").write_text("turns: [6]\nmax_turns: 40\n")
    with pytest.raises(ValueError, match="allowed keys"):
        load_config(tmp_path / "bad.yaml")
