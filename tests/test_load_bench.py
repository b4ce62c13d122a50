"""``medhx load-bench`` on the default agent (no model server), short: clinic pace and the closed loop, in two
processes on one store, for SQLite and PostgreSQL; nothing lost, duplicated, altered or reordered, no error. The
figures themselves are the README's (a quiet machine, the shipped config); this checks the harness, the checks and
the stores under several processes.

The checks are also run against a real stored transcript with records that do not match it (a turn claimed sent
that the store lacks, a stored turn nobody sent...), so a check that could not see a loss would fail here.
"""

from __future__ import annotations

import json

import pytest
from graph_fixtures import REPO, default_store

from agent.app.sessions import Session
from eval.runs.load_bench import LoadBenchConfig, load_config, run
from eval.runs.load_bench_check import Checked, check_transcripts
from eval.runs.load_bench_clients import Opened, Sent

SHORT = {"concurrency": [3], "turns": 3, "think_s": [0.1, 0.4], "ramp_s": 1, "window_s": 3}


@pytest.mark.postgres
def test_clinic_and_stress_in_two_processes_lose_nothing(tmp_path, postgres_url):
    cfg = LoadBenchConfig(agent=str(REPO / "configs" / "default.yaml"), stores=["sqlite", "postgres"], processes=[2],
                          clinic=SHORT, stress={"interviews": 4, "turns": 2}, postgres_url=postgres_url,
                          output_dir=str(tmp_path / "out"))
    report = run(cfg, progress=False)
    runs = report["clinic"] + report["stress"]
    assert [(r["mode"], r["store"], r["processes"], r["concurrency"]) for r in runs] == [
        ("clinic", "sqlite", 2, 3), ("clinic", "postgres", 2, 3),
        ("stress", "sqlite", 2, 4), ("stress", "postgres", 2, 4)]
    for r in runs:
        checks = {k: r[k] for k in ("errors", "lost", "duplicated", "altered", "out_of_order", "missing_sessions")}
        assert set(checks.values()) == {0}, (checks, r["errors_by_type"])
        assert r["turns_measured"] > 0 and r["sessions_checked"] == r["interviews"] > 0
        lat = r["latency_ms"]
        assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"] <= lat["max"]
    for r in report["stress"]:
        assert r["interviews"] == 4 and r["turns_measured"] == r["turns_sent"] == 8
    assert report["ok"]
    saved = json.loads((tmp_path / "out" / "report.json").read_text())
    assert saved["config"]["clinic"]["window_s"] == 3 and len(saved["clinic"]) == 2
    text = (tmp_path / "out" / "report.md").read_text()
    assert "## Clinic pace" in text and "## Stress (closed loop)" in text and "| postgres | 2 | 3 |" in text
    assert (tmp_path / "out" / "p95.png").stat().st_size > 10_000


def test_the_checks_see_what_the_store_does_not_hold(tmp_path):
    """A real transcript (three keyed turns on the default agent) against records that do and do not match it."""
    lines = ["I have a cough", "It started two weeks ago", "I smoke a pack a day"]
    with default_store(tmp_path / "store") as store:
        session = store.start()
        for i, line in enumerate(lines):
            session.send(line, key=f"k{i}")
        sid = session.id

        def read(s: str):
            return Session(store, s).state() if store.exists(s) else None

        def check(sent: list[Sent], opened: list[Opened] | None = None) -> Checked:
            return check_transcripts(read, sent, opened or [Opened(0, sid, 0.0, 0.1)])

        truth = [Sent(0, sid, f"k{i}", line, at=float(i), seconds=0.1) for i, line in enumerate(lines)]
        assert check(truth) == Checked(sessions=1)
        lost = check([*truth, Sent(0, sid, "k9", "I have a fever", at=9.0, seconds=0.1)])
        assert (lost.lost, lost.duplicated) == (1, 0)
        # a send that raised may or may not have been stored: neither lost nor duplicated
        assert check([*truth, Sent(0, sid, "k9", "I have a fever", at=9.0, error="SessionBusy")]).ok()
        assert check(truth[:2]).duplicated == 1  # the store holds a turn no client sent
        altered = [*truth[:2], Sent(0, sid, "k2", "I smoke a cigar a day", at=2.0, seconds=0.1)]
        assert check(altered).altered == 1
        swapped = [truth[0], Sent(**{**vars(truth[1]), "at": 5.0}), truth[2]]
        assert check(swapped).out_of_order == 1
        gone = check(truth, [Opened(0, sid, 0.0, 0.1), Opened(1, "load-missing", 0.0, 0.1)])
        assert (gone.missing_sessions, gone.lost) == (1, 0)
        assert check([*truth, Sent(1, "load-missing", "k0", lines[0], at=0.0, seconds=0.1)]).lost == 1


def test_the_shipped_configs_load_and_unknown_keys_fail(tmp_path):
    cfg = load_config(REPO / "configs" / "load_bench.yaml")
    assert cfg.agent == str(REPO / "configs" / "default.yaml") and cfg.data == str(REPO / "data" / "meditod")
    assert cfg.clinic is not None and cfg.clinic.concurrency == [25, 50, 100] and cfg.clinic.turns == 20
    assert (cfg.clinic.think_s, cfg.clinic.ramp_s, cfg.clinic.window_s, cfg.processes) == ((5, 20), 60, 300, [1, 2])
    assert cfg.stress is not None and cfg.stress.interviews == 50
    for name in ("load_bench_smoke.yaml", "load_bench_ensemble.yaml"):
        assert load_config(REPO / "configs" / name).clinic is not None
    bad = tmp_path / "bad.yaml"
    for text, why in (("clinic: {ramp: 5}", "clinic.ramp"), ("interviews: 8", "interviews"),
                      ("clinic: {think_s: [20, 5]}", "think_s"), ("clinic: null\nstress: null", "nothing to run"),
                      ("processes: [0]", "processes")):
        bad.write_text(text)
        with pytest.raises(ValueError, match=why):
            load_config(bad)
