"""``medhx load-bench``'s figures: one run's records and checks summarised, and the report written (``report.json``,
``report.md``, ``p95.png``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from eval.metrics.stats import percentile
from eval.runs.load_bench_check import Checked
from eval.runs.load_bench_clients import Records

CLINIC_P95_TARGET_S = 1.0  # the aim at clinic pace; drawn on the plot


def summarise(records: Records, checked: Checked, measured: tuple[float, float] | None, wall_s: float) -> dict:
    """One run's figures. ``measured``: the window (run seconds) whose sends are measured, None for all of them.
    Errors, lost and duplicated turns count over the whole run: a turn lost during the ramp is lost all the same."""
    lo, hi = measured if measured is not None else (float("-inf"), float("inf"))
    window = [s for s in records.sent if lo <= s.at < hi]
    latencies = [s.seconds for s in window if s.seconds is not None]
    starts = [o.seconds for o in records.opened if o.seconds is not None]
    errors = Counter(s.error for s in records.sent if s.error) + Counter(
        f"start: {o.error}" for o in records.opened if o.error)
    span = (hi - lo) if measured is not None else wall_s
    out = {
        "interviews": sum(o.error is None for o in records.opened),
        "turns_sent": len(records.sent),
        "turns_measured": len(latencies),
        "turns_per_s": round(len(latencies) / span, 3) if span else None,
        "latency_ms": _quantiles(latencies),
        "start_ms": _quantiles(starts),
        "errors": sum(errors.values()),
        "errors_by_type": dict(errors),
        "lost": checked.lost,
        "duplicated": checked.duplicated,
        "altered": checked.altered,
        "out_of_order": checked.out_of_order,
        "missing_sessions": checked.missing_sessions,
        "sessions_checked": checked.sessions,
        "fallbacks_by_module": dict(checked.fallbacks_by_module),
        "wall_s": round(wall_s, 1),
    }
    out["ok"] = out["errors"] == 0 and checked.ok()
    return out


def _quantiles(seconds: list[float]) -> dict[str, float | None]:
    q = {f"p{p}": percentile(seconds, p) for p in (50, 95, 99)} | {"max": max(seconds, default=None)}
    return {k: None if v is None else round(1000 * v, 1) for k, v in q.items()}


def write_outputs(report: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "report.md").write_text(markdown(report))
    plot(report, out / "p95.png")


def markdown(report: dict) -> str:
    agent = ", ".join(f"{k}: {v}" for k, v in report["agent"].items())
    machine = report["machine"]
    text = [f"# Load benchmark\n\nAgent: {agent} ({report['config']['agent']}); {machine['cpu_count']} cores, "
            f"{machine['model_threads_per_process']} model thread(s) per process.\n"]
    if not report.get("complete", True):
        text.append("\n**Partial**: the runs finished so far; the rest did not run (yet).\n")
    if report["clinic"]:
        c = report["config"]["clinic"]
        text += [f"\n## Clinic pace\n\n{c['turns']}-turn interviews, think {c['think_s'][0]:g}-{c['think_s'][1]:g} s "
                 f"between turns, {c['ramp_s']:g} s ramp, measured over {c['window_s']:g} s.\n",
                 _table(report["clinic"], "interviews at once")]
    if report["stress"]:
        s = report["config"]["stress"]
        text += [f"\n## Stress (closed loop)\n\n{s['interviews']} interviews at once, {s['turns']} turns each, "
                 "back to back.\n", _table(report["stress"], "interviews")]
    return "\n".join(text)


def _table(runs: list[dict], what: str) -> str:
    rows = [f"| store | processes | {what} | turns measured | turns/s | p50 / p95 / p99 ms | errors | lost "
            "| duplicated | altered | fallbacks |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        lat = r["latency_ms"]
        fallbacks = sum(r["fallbacks_by_module"].values())
        rows.append(f"| {r['store']} | {r['processes']} | {r['concurrency']} | {r['turns_measured']} "
                    f"| {r['turns_per_s']} | {lat['p50']} / {lat['p95']} / {lat['p99']} | {r['errors']} "
                    f"| {r['lost']} | {r['duplicated']} | {r['altered']} | {fallbacks} |")
    return "\n".join(rows) + "\n"


def plot(report: dict, path: Path) -> None:
    """Turn p95 against interviews at once, a line per store and process count (clinic pace); the stress runs as
    bars beside it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [k for k in ("clinic", "stress") if report[k]]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.2), squeeze=False)
    for ax, kind in zip(axes[0], panels, strict=True):
        if kind == "clinic":
            _clinic_panel(ax, report)
        else:
            _stress_panel(ax, report)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _series(runs: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in runs:
        out.setdefault(f"{r['store']}, {r['processes']} process{'es' if r['processes'] > 1 else ''}", []).append(r)
    return out


def _clinic_panel(ax: Any, report: dict) -> None:
    for label, runs in _series(report["clinic"]).items():
        runs = sorted(runs, key=lambda r: r["concurrency"])
        ax.plot([r["concurrency"] for r in runs], [(r["latency_ms"]["p95"] or 0) / 1000 for r in runs],
                marker="o", label=label)
    ax.axhline(CLINIC_P95_TARGET_S, color="grey", linestyle="--", linewidth=1, label="aim: p95 1 s")
    ax.set_xticks(sorted({r["concurrency"] for r in report["clinic"]}))
    c = report["config"]["clinic"]
    ax.set_title(f"clinic pace (think {c['think_s'][0]:g}-{c['think_s'][1]:g} s, {c['turns']}-turn interviews)")
    ax.set_xlabel("interviews at once")
    ax.set_ylabel("turn latency p95 (s)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)


def _stress_panel(ax: Any, report: dict) -> None:
    labels = [label for label in _series(report["stress"])]
    values = [(runs[0]["latency_ms"]["p95"] or 0) / 1000 for runs in _series(report["stress"]).values()]
    bars = ax.bar(range(len(values)), values, color=[f"C{i}" for i in range(len(values))])
    ax.bar_label(bars, fmt="%.2f s", fontsize=8)
    ax.set_xticks(range(len(values)), labels, rotation=20, fontsize=8)
    s = report["config"]["stress"]
    ax.set_title(f"stress: {s['interviews']} interviews back to back")
    ax.set_ylabel("turn latency p95 (s)")
