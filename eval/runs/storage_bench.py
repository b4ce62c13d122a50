"""``medhx storage-bench``: bytes a stored interview takes, against its length, on SQLite and PostgreSQL.

A clinic keeps every interview, so what one costs in the session store decides what a thousand cost. This runs
simulated interviews of fixed lengths (the default agent against the agenda patient of a case card, the oracle NLU
by default so no NLU model is loaded; the turn budget ``session.max_turns`` cuts each at its length) and reads back,
for each, the bytes its session occupies:

- **bytes**: the stored size of every row the session owns, in every table of the store that has a ``thread_id``
  (LangGraph's) or a ``session_id`` (medhx's) column: SQLite ``length()`` of each value, PostgreSQL
  ``pg_column_size()`` of each value (compressed where PostgreSQL compressed it). Per table, with its row count.
- **file_bytes** (SQLite): the size of the store file holding only that interview, after ``VACUUM`` (pages,
  indexes and the empty schema included).

The aims (issue 20): at most ``aims.max_bytes`` for the longest interview, and bytes at the longest length at most
``aims.max_growth`` times bytes at half of it (``turns`` must contain both); storage linear in the interview, not
quadratic. Outputs in ``output_dir``: ``report.json``, ``report.md`` and ``bytes_per_interview.png``; the exit code
is 1 when an aim is missed. ``baseline`` (an earlier run's ``report.json``, e.g. of the code before a change) is
tabled and drawn beside the run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sqlite3
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.app.checkpoints import POSTGRES_ENV, SQLITE_FILE
from agent.app.graph import build_agent
from agent.app.overrides import absolute_path, overrides
from agent.app.sessions import SessionStore
from agent.core.paths import REPO_ROOT, ConfigPath, load_typed
from eval.runs.cases import DEFAULT_CASES_DIR, CaseCard, load_cards
from eval.runs.oracle_nlu import OracleChannel, close_channel, open_channel
from eval.runs.simulate import Mode, interview, session_config
from eval.runs.simulator_factory import SimulatorFactory, parse_simulator_settings
from policies.agent_config import load_config as load_agent_config

Store = Literal["sqlite", "postgres"]


class Aims(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_bytes: int = Field(default=300_000, ge=1, description="bytes of one interview at the longest length, at most")
    max_growth: float = Field(default=2.2, gt=0, description="bytes at the longest length / bytes at half of it")


class StorageBenchConfig(BaseModel):
    """Paths relative to the config file's directory (:mod:`agent.core.paths`); unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")
    agent: ConfigPath = str(REPO_ROOT / "configs" / "default.yaml")  # its session section is replaced per run
    cases: ConfigPath = str(DEFAULT_CASES_DIR)
    case_ids: list[str] = Field(default_factory=lambda: ["endo-diabetic-ketoacidosis"], min_length=1,
                                description="cards whose interviews run to the longest length (not closed earlier)")
    mode: Mode = "oracle"  # oracle: the patient's gold frames (no NLU model); end_to_end: the agent's own NLU
    simulator: dict[str, Any] = Field(default_factory=lambda: {"kind": "agenda"})
    seed: int = 0
    turns: list[int] = Field(default_factory=lambda: [6, 10, 20, 30, 40], min_length=1,
                             description="interview lengths in doctor turns (session.max_turns), greeting included")
    stores: list[Store] = ["sqlite", "postgres"]
    postgres_url: str | None = None  # default $MEDHX_POSTGRES_URL; required when postgres is listed
    output_dir: ConfigPath = str(REPO_ROOT / "runs" / "storage_bench")
    baseline: ConfigPath | None = None  # an earlier run's report.json (other code), drawn and tabled beside this one
    aims: Aims = Aims()


def load_config(path: str | Path) -> StorageBenchConfig:
    cfg, base = load_typed(StorageBenchConfig, path)
    # checked now, and its paths (a lexicon) resolved against this file's directory
    cfg.simulator = parse_simulator_settings(cfg.simulator, base).model_dump()
    return cfg


# --------------------------------------------------------------------------- measuring one session


def sqlite_session_bytes(path: Path, session_id: str) -> dict[str, dict[str, int]]:
    """Per table with a ``thread_id`` or ``session_id`` column: the session's rows and their stored bytes."""
    conn = sqlite3.connect(str(path))
    try:
        out: dict[str, dict[str, int]] = {}
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            cols = [r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')]
            key = next((k for k in ("thread_id", "session_id") if k in cols), None)
            if key is None:
                continue
            size = " + ".join(f'coalesce(length(CAST("{c}" AS BLOB)), 0)' for c in cols)
            rows, total = conn.execute(f'SELECT count(*), coalesce(sum({size}), 0) FROM "{table}" WHERE "{key}" = ?',
                                       (session_id,)).fetchone()
            out[table] = {"rows": rows, "bytes": total}
        return out
    finally:
        conn.close()


def sqlite_file_bytes(path: Path) -> int:
    """The store file's size once its write-ahead log is folded in and free pages are returned (``VACUUM``)."""
    conn = sqlite3.connect(str(path))
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return path.stat().st_size


def postgres_session_bytes(url: str, session_id: str) -> dict[str, dict[str, int]]:
    """As :func:`sqlite_session_bytes`, with ``pg_column_size`` (the stored, possibly compressed, size) per value."""
    from psycopg import Connection, sql

    with Connection.connect(url, autocommit=True) as conn:
        cols: dict[str, list[str]] = {}
        for table, column in conn.execute(
                "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() "
                "ORDER BY table_name, ordinal_position").fetchall():
            cols.setdefault(table, []).append(column)
        out: dict[str, dict[str, int]] = {}
        for table, names in sorted(cols.items()):
            key = next((k for k in ("thread_id", "session_id") if k in names), None)
            if key is None:
                continue
            size = sql.SQL(" + ").join(sql.SQL("coalesce(pg_column_size({}), 0)").format(sql.Identifier(c))
                                       for c in names)
            query = sql.SQL("SELECT count(*), coalesce(sum({}), 0) FROM {} WHERE {} = %s").format(
                size, sql.Identifier(table), sql.Identifier(key))
            rows, total = conn.execute(query, (session_id,)).fetchone()
            out[table] = {"rows": int(rows), "bytes": int(total)}
        return out


# --------------------------------------------------------------------------- one interview


@dataclass
class _Slot:
    """What :func:`eval.runs.simulate.interview` drives: a session store, the oracle channel, the turn budget."""

    store: SessionStore
    channel: OracleChannel | None
    max_turns: int


def measure_interview(agent_cfg: dict, agent: Any, card: CaseCard, turns: int, store: Store, cfg: StorageBenchConfig,
                      channel_name: str, factory: SimulatorFactory, workdir: Path) -> dict:
    """One interview of ``card`` cut at ``turns`` doctor turns, in a store of its own (SQLite: a fresh file; PostgreSQL:
    the shared database, the session deleted afterwards), and the bytes it takes there."""
    session_dir = workdir / f"{store}-{card.id}-{turns}"
    session_dir.mkdir(parents=True)
    run_cfg = session_config(agent_cfg, cfg.mode, session_dir, turns, channel_name)
    if store == "postgres":
        url = cfg.postgres_url or os.environ.get(POSTGRES_ENV)
        assert url, "checked in run()"
        run_cfg["session"] |= {"store": "postgres", "postgres_url": url}
    channel = open_channel(channel_name) if cfg.mode == "oracle" else None
    t0 = time.perf_counter()
    with SessionStore(run_cfg, agent=agent) as sessions:
        result = interview(_Slot(sessions, channel, turns), card, cfg.seed, factory, "storage", cfg.mode)
        sid = result["session"]
        wall = time.perf_counter() - t0
        if store == "postgres":
            tables = postgres_session_bytes(run_cfg["session"]["postgres_url"], sid)
            sessions.delete(sid)
    if store == "sqlite":
        path = session_dir / SQLITE_FILE
        tables = sqlite_session_bytes(path, sid)
        file_bytes: int | None = sqlite_file_bytes(path)
    else:
        file_bytes = None
    doctor = sum(1 for t in result["transcript"] if t["speaker"] == "doctor")
    return {
        "store": store, "case": card.id, "max_turns": turns, "doctor_turns": doctor,
        "utterances": len(result["transcript"]), "ended_by": result["metrics"]["turns"]["ended_by"],
        "bytes": sum(t["bytes"] for t in tables.values()), "tables": tables, "file_bytes": file_bytes,
        "wall_s": round(wall, 2),
    }


# --------------------------------------------------------------------------- the run


def run(cfg: StorageBenchConfig, progress: bool = True) -> dict:
    from tqdm import tqdm

    if "postgres" in cfg.stores and not (cfg.postgres_url or os.environ.get(POSTGRES_ENV)):
        raise ValueError(f"store postgres is listed but no postgres_url (or ${POSTGRES_ENV}) is set")
    cards = {c.id: c for c in load_cards([cfg.cases])}
    unknown = sorted(set(cfg.case_ids) - set(cards))
    if unknown:
        raise ValueError(f"case_ids {unknown}: no such card in {cfg.cases}")
    agent_cfg = load_agent_config(cfg.agent)
    channel_name = f"storage-bench-{uuid.uuid4().hex[:12]}"
    factory = SimulatorFactory(parse_simulator_settings(cfg.simulator, REPO_ROOT))
    # one agent for every interview (the turn budget is the graph's: rebuilt per run below, the modules shared)
    agent = build_agent(session_config(agent_cfg, cfg.mode, Path(tempfile.gettempdir()), max(cfg.turns),
                                       channel_name))
    rows: list[dict] = []
    jobs = [(s, c, n) for s in cfg.stores for c in cfg.case_ids for n in sorted(cfg.turns)]
    try:
        with tempfile.TemporaryDirectory(prefix="medhx-storage-") as tmp, \
                tqdm(total=len(jobs), desc="storage-bench", unit="interview", disable=not progress) as bar:
            for store, case, n in jobs:
                agent.max_turns = n
                rows.append(measure_interview(agent_cfg, agent, cards[case], n, store, cfg, channel_name, factory,
                                              Path(tmp)))
                bar.update(1)
    finally:
        agent.close()
        close_channel(channel_name)
    report = {"config": json.loads(cfg.model_dump_json()),
              "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform()},
              "interviews": rows, "summary": summarize(rows, cfg)}
    report["ok"] = all(s["ok"] for s in report["summary"].values())
    baseline = json.loads(Path(cfg.baseline).read_text()) if cfg.baseline else None
    write_outputs(report, Path(cfg.output_dir), baseline)
    return report


def summarize(rows: list[dict], cfg: StorageBenchConfig) -> dict[str, dict]:
    """Per store: mean bytes per interview at each length, and the aims checked on every case."""
    out: dict[str, dict] = {}
    longest = max(cfg.turns)
    half = longest // 2
    for store in cfg.stores:
        mine = [r for r in rows if r["store"] == store]
        by_len = {n: [r for r in mine if r["max_turns"] == n] for n in sorted(cfg.turns)}
        entry: dict[str, Any] = {
            "mean_bytes": {n: round(statistics.mean(r["bytes"] for r in rs)) for n, rs in by_len.items() if rs},
            "max_bytes_at_longest": max((r["bytes"] for r in by_len.get(longest, [])), default=None),
        }
        if store == "sqlite":
            entry["mean_file_bytes"] = {n: round(statistics.mean(r["file_bytes"] for r in rs))
                                        for n, rs in by_len.items() if rs}
        growth = []
        for case in cfg.case_ids:
            at = {r["max_turns"]: r["bytes"] for r in mine if r["case"] == case}
            if longest in at and half in at and at[half]:
                growth.append(at[longest] / at[half])
        entry["max_growth"] = round(max(growth), 3) if growth else None
        short = [r for r in by_len.get(longest, []) if r["doctor_turns"] < longest]
        entry["short_of_longest"] = [r["case"] for r in short]  # closed before the budget: a weaker measure
        entry["ok"] = (entry["max_bytes_at_longest"] is not None and entry["max_bytes_at_longest"] <= cfg.aims.max_bytes
                       and (entry["max_growth"] is None or entry["max_growth"] <= cfg.aims.max_growth))
        out[store] = entry
    return out


def write_outputs(report: dict, out: Path, baseline: dict | None = None) -> None:
    """``report.json``, ``report.md`` (per length, mean bytes per store, beside the baseline's; then every interview)
    and ``bytes_per_interview.png`` (bytes against doctor turns, a line per store and case; the baseline dashed)."""
    out.mkdir(parents=True, exist_ok=True)
    if baseline:
        baseline = {k: v for k, v in baseline.items() if k != "baseline"}
    (out / "report.json").write_text(json.dumps({**report, "baseline": baseline}, indent=2) + "\n")
    cfg = report["config"]
    runs = {"": report} | ({"baseline ": baseline} if baseline else {})
    columns = [(f"{name}{store}", r["summary"][store]["mean_bytes"]) for name, r in runs.items()
               for store in r["summary"]]
    lines = [f"# Storage per interview ({cfg['mode']} NLU, cases {', '.join(cfg['case_ids'])})", "",
             "Mean bytes per interview (rows of the session in every table) by turn budget:", "",
             "| doctor turns | " + " | ".join(c for c, _ in columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for n in sorted(cfg["turns"]):
        cells = [_kb(m.get(n, m.get(str(n)))) for _, m in columns]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines += ["", "| store | case | doctor turns | utterances | bytes (rows) | checkpoint rows | file bytes (SQLite, "
              "vacuumed) |", "|---|---|---|---|---|---|---|"]
    for r in report["interviews"]:
        checkpoints = r["tables"].get("checkpoints", {}).get("rows", 0)
        lines.append(f"| {r['store']} | {r['case']} | {r['doctor_turns']} | {r['utterances']} | {r['bytes']:,} "
                     f"| {checkpoints} | {'' if r['file_bytes'] is None else format(r['file_bytes'], ',')} |")
    lines += ["", f"Aims: at most {cfg['aims']['max_bytes']:,} bytes at {max(cfg['turns'])} turns; growth from "
              f"{max(cfg['turns']) // 2} to {max(cfg['turns'])} turns at most {cfg['aims']['max_growth']}x.", ""]
    for store, s in report["summary"].items():
        lines.append(f"- {store}: {s['max_bytes_at_longest']:,} bytes at the longest, growth {s['max_growth']}x: "
                     f"{'met' if s['ok'] else 'MISSED'}")
    (out / "report.md").write_text("\n".join(lines) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # with a baseline: both runs on a log scale, and this run alone on a linear one (where linear growth shows)
    fig, axes = plt.subplots(1, 2 if baseline else 1, figsize=(12 if baseline else 7.5, 4.5), squeeze=False)
    colours = {"sqlite": "tab:blue", "postgres": "tab:orange"}
    for k, ax in enumerate(axes[0]):
        shown = runs if k == 0 else {"": report}
        for name, r in shown.items():
            for store in r["summary"]:
                for i, case in enumerate(r["config"]["case_ids"]):
                    mine = sorted((x for x in r["interviews"] if x["store"] == store and x["case"] == case),
                                  key=lambda x: x["doctor_turns"])
                    ax.plot([x["doctor_turns"] for x in mine], [x["bytes"] / 1000 for x in mine], marker="o",
                            markersize=3, color=colours.get(store), linestyle="--" if name else "-", linewidth=1,
                            label=f"{name}{store}" if i == 0 else None)
        ax.axhline(cfg["aims"]["max_bytes"] / 1000, color="grey", linestyle=":", linewidth=1, label="aim at 40 turns")
        ax.set_xlabel("interview length (doctor turns)")
        ax.set_ylabel("stored kB per interview")
        if baseline and k == 0:
            ax.set_yscale("log")
            ax.set_title("this run (solid) and the baseline (dashed), log scale")
        else:
            ax.set_ylim(bottom=0)
            ax.set_title("this run, linear scale (a line per case)")
        ax.legend(fontsize=8)
    fig.suptitle("Session store: bytes per interview")
    fig.tight_layout()
    fig.savefig(out / "bytes_per_interview.png", dpi=120)
    plt.close(fig)


def _kb(n: float | None) -> str:
    return "" if n is None else f"{n / 1000:,.1f} kB"


# --------------------------------------------------------------------------- CLI


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("storage-bench", help="bytes a stored interview takes against its length (SQLite, PostgreSQL)")
    p.add_argument("--config", default=str(REPO_ROOT / "configs" / "storage_bench.yaml"))
    p.add_argument("--store", action="append", choices=("sqlite", "postgres"), help="only these stores")
    p.add_argument("--turns", type=int, nargs="+", help="override the config's interview lengths")
    p.add_argument("--case", action="append", help="only these case cards (ids)")
    p.add_argument("--output-dir", type=absolute_path, help="override the config's output_dir")
    p.add_argument("--baseline", type=absolute_path,
                   help="an earlier run's report.json, drawn and tabled beside this run")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cmd_storage_bench)
    return p


def _cmd_storage_bench(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    cfg = cfg.model_copy(update=overrides(args, {"store": "stores", "turns": "turns", "case": "case_ids",
                                                 "output_dir": "output_dir", "baseline": "baseline"}))
    report = run(cfg, progress=not args.no_progress)
    print(json.dumps({"summary": report["summary"], "ok": report["ok"], "output_dir": cfg.output_dir}, indent=2))
    return 0 if report["ok"] else 1
