"""What ``medhx simulate`` reports: the summary (``summary.json``, the ``--json`` output), ``report.md`` (agents and
modes side by side, the aims, per-case figures, why each fact was missed, what happened) and ``coverage.png``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from eval.runs.simulate_metrics import aggregate

MODES = ("end_to_end", "oracle")


def _of(records: dict[str, dict], agent: str, mode: str) -> list[dict]:
    return [r for r in records.values() if r["agent"] == agent and r["mode"] == mode]


def summarize(run: Any, records: dict[str, dict], problems: list[str], ran: int) -> dict[str, Any]:
    """The run's figures: ``overall`` (the first agent: ``coverage`` end to end, ``oracle_coverage``, and every
    other figure per mode), ``cases`` (the first agent, per case and seed), ``agents`` (every agent and mode),
    ``aims``."""
    cfg = run.config
    agents = list(run.agents)
    comparison = {a: {m: aggregate([r["metrics"] for r in _of(records, a, m)]) for m in cfg.modes} for a in agents}
    first = comparison[agents[0]]
    overall = {"coverage": first["end_to_end"]["coverage"] if "end_to_end" in first else None,
               "oracle_coverage": first["oracle"]["coverage"] if "oracle" in first else None,
               **{m: first[m] for m in cfg.modes}}
    cases = []
    for card in run.cards:
        for seed in cfg.seeds:
            row: dict[str, Any] = {"case": card.id, "seed": seed, "title": card.title, "domain": card.domain,
                                   "source": card.source}
            for mode in cfg.modes:
                rec = records.get(f"{agents[0]}|{mode}|{card.id}|{seed}")
                row[mode] = {**rec["metrics"], "session": rec["session"]} if rec else None
            cases.append(row)

    def aim(value: float | None, target: float, at_most: bool = False) -> dict:
        met = value is not None and (value <= target if at_most else value >= target)
        return {"aim": target, "value": value, "met": met, **({"at_most": True} if at_most else {})}

    hand_written = {c.id for c in run.cards if not c.source.startswith("meditod:")}
    cards = {m: aggregate([r["metrics"] for r in _of(records, agents[0], m) if r["case"] in hand_written])
             for m in cfg.modes}
    overall["cards"] = cards

    aims = {}
    if overall["oracle_coverage"] is not None:
        aims["oracle_canonical_coverage"] = aim(overall["oracle_coverage"]["canonical"], cfg.aims.oracle_canonical)
    if overall["coverage"] is not None:
        aims["end_to_end_canonical_coverage"] = aim(overall["coverage"]["canonical"], cfg.aims.end_to_end_canonical)
    a, oracle, e2e = cfg.aims, cards.get("oracle"), cards.get("end_to_end")
    if oracle and oracle["interviews"]:
        share = lambda x: round(x[0] / x[1], 4) if x[1] else None  # noqa: E731
        wanted = {"cards_oracle_canonical": (oracle["coverage"]["canonical"], False),
                  "cards_oracle_negatives": (oracle["coverage"]["negative"], False),
                  "cards_oracle_max_turns": (oracle["turns_until_close"], True),
                  "cards_oracle_screen_on_time": (share((oracle["red_flag_screen"]["on_time"],
                                                         oracle["red_flag_screen"]["cases"])), False),
                  "cards_oracle_diagnosis_top3": (share((oracle["diagnosis"]["matched"],
                                                         oracle["diagnosis"]["cases"])), False)}
        for key, (value, at_most) in wanted.items():
            if getattr(a, key) is not None:
                aims[key] = aim(value, getattr(a, key), at_most)
    if e2e and e2e["interviews"] and a.cards_end_to_end_canonical is not None:
        aims["cards_end_to_end_canonical"] = aim(e2e["coverage"]["canonical"], a.cards_end_to_end_canonical)
    return {
        "config": str(run.path),
        "output_dir": str(run.output_dir),
        "agent": agents[0],
        "simulator": run.simulator.model_dump(mode="json"),
        "modes": list(cfg.modes),
        "seeds": list(cfg.seeds),
        "n_cases": len(run.cards),
        "overall": overall,
        "aims": aims,
        "agents": comparison,
        "cases": cases,
        "run": {"interviews": len(records), "ran_now": ran, "reused": len(records) - ran, "problems": problems},
    }


# --------------------------------------------------------------------------- markdown


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def comparison_table(summary: dict) -> str:
    head = ("| agent | mode | canonical | non-canonical | positive | negatives | precision | turns | repeated | "
            "already answered | red flags hit / expected | screen on time | facts / turn | diagnosis in top 3 |")
    rows = [head, "|" + "---|" * 14]
    for agent, modes in summary["agents"].items():
        for mode, a in modes.items():
            c = a["coverage"]
            q, rf, dx = a["questions"], a["red_flags"], a["diagnosis"]
            sc = a.get("red_flag_screen") or {"on_time": 0, "cases": 0}
            rows.append(f"| {agent} | {mode} | {_pct(c['canonical'])} | {_pct(c['non_canonical'])} | "
                        f"{_pct(c['positive'])} | {_pct(c['negative'])} | {_pct(a['precision'])} | "
                        f"{a['turns_until_close']} | {q.get('repeated', 0)} | {q.get('already_answered', 0)} | "
                        f"{rf.get('hit', 0)} / {rf.get('expected', 0)} | {sc['on_time']} / {sc['cases']} | "
                        f"{a.get('facts_per_turn')} | {dx['matched']} / {dx['cases']} |")
    return "\n".join(rows)


def aims_text(summary: dict) -> str:
    names = {"oracle_canonical_coverage": "oracle-NLU canonical coverage",
             "end_to_end_canonical_coverage": "end-to-end canonical coverage",
             "cards_oracle_canonical": "cards, oracle NLU: canonical coverage",
             "cards_oracle_negatives": "cards, oracle NLU: pertinent negatives",
             "cards_oracle_max_turns": "cards, oracle NLU: mean turns until close",
             "cards_oracle_screen_on_time": "cards, oracle NLU: red-flag screen on time (share of cards with a plan)",
             "cards_oracle_diagnosis_top3": "cards, oracle NLU: diagnosis in the top 3 considerations",
             "cards_end_to_end_canonical": "cards, end to end: canonical coverage"}
    return "\n".join(f"- {names[k]} of `{summary['agent']}`: {_pct(v['value'])} (aim "
                     f"{'<=' if v.get('at_most') else '>='} {v['aim']}): {'met' if v['met'] else 'NOT met'}"
                     for k, v in summary["aims"].items())


def headline(summary: dict) -> str:
    out = [comparison_table(summary), "", aims_text(summary), ""]
    run = summary["run"]
    out.append(f"{run['interviews']} interviews ({run['ran_now']} run now, {run['reused']} reused); "
               f"report {summary['output_dir']}/report.md")
    out += [f"note: {p}" for p in run["problems"]]
    return "\n".join(out)


def case_table(summary: dict, mode: str) -> str:
    rows = ["| case | seed | canonical | non-canonical | negatives | precision | turns | ended by | red flags "
            "(missed / unexpected) | screen (first / last turn) | diagnosis rank | missed: never elicited / not "
            "understood / set aside / lost later |",
            "|" + "---|" * 12]
    for row in summary["cases"]:
        m = row.get(mode)
        if not m:
            continue
        c, rf = m["coverage"], m["red_flags"]
        why = Counter(x["reason"] for x in m["missed"])
        rows.append(
            f"| {row['case']} | {row['seed']} | {_pct(c['canonical'])} | {_pct(c['non_canonical'])} | "
            f"{_pct(c['negative'])} | {_pct(m['precision']['value'])} | {m['turns']['doctor']} | "
            f"{m['turns']['ended_by']} | {','.join(rf['missed']) or '-'} / {','.join(rf['unexpected']) or '-'} | "
            f"{_screen(m.get('red_flag_screen'))} | {_rank(m.get('diagnosis'))} | "
            f"{why['never elicited']} / {why['said, not understood']} / "
            f"{why['said, set aside by grounding']} / {why['understood, lost later']} |"
        )
    return "\n".join(rows)


def _screen(sc: dict | None) -> str:
    if sc is None:
        return "no plan"
    mark = "on time" if sc["on_time"] else "LATE" if sc["done"] == sc["items"] else f"{sc['done']}/{sc['items']} asked"
    return f"{mark} ({sc['first'] or '-'} / {sc['last'] or '-'})"


def _rank(dx: dict | None) -> str:
    if dx is None:
        return "-"
    return str(dx.get("rank") or "not offered")


def misses_text(summary: dict, mode: str) -> str:
    out = []
    for row in summary["cases"]:
        m = row.get(mode)
        if not m:
            continue
        lines = [f"- {'(canonical) ' if x['canonical'] else ''}{x['fact']}: {x['reason']}" for x in m["missed"]]
        events = {k: v for k, v in m["events"].items() if v}
        if m.get("error"):
            lines.append(f"- error: {m['error']}")
        if events:
            lines.append(f"- events: {json.dumps(events, default=str)}")
        if lines:
            out += [f"#### {row['case']} (seed {row['seed']})", *lines, ""]
    return "\n".join(out) or "(nothing missed)"


def report_markdown(summary: dict) -> str:
    sim = summary["simulator"]
    parts = [
        "# Simulated interviews",
        "",
        f"Config `{summary['config']}`; simulator `{sim.get('kind')}`; {summary['n_cases']} cases; seeds "
        f"{summary['seeds']}; modes {', '.join(summary['modes'])}. Coverage is the recall of the cards' facts in the "
        "agent's final state (micro-averaged); definitions in `eval/runs/simulate_metrics.py`.",
        "",
        "## Agents side by side",
        "",
        comparison_table(summary),
        "",
        "![coverage](coverage.png)",
        "",
        "## Aims",
        "",
        aims_text(summary) or "(no aims measured)",
        "",
    ]
    for mode in summary["modes"]:
        parts += [f"## Per case: `{summary['agent']}`, {mode}", "", case_table(summary, mode), "",
                  f"### What was missed, and why ({mode})", "", misses_text(summary, mode), ""]
    if summary["run"]["problems"]:
        parts += ["## Notes", "", *[f"- {p}" for p in summary["run"]["problems"]], ""]
    return "\n".join(parts)


def plot_coverage(summary: dict, path: Path) -> None:
    """Grouped bars: canonical and non-canonical coverage per agent and mode, with the aims as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = [(f"{mode} {kind.replace('_', '-')}", mode, kind)
              for mode in summary["modes"] for kind in ("canonical", "non_canonical")]
    agents = list(summary["agents"])
    fig, ax = plt.subplots(figsize=(max(6, 1.8 * len(agents) + 3), 4))
    width = 0.8 / len(series)
    for i, (label, mode, kind) in enumerate(series):
        values = [summary["agents"][a][mode]["coverage"][kind] or 0.0 for a in agents]
        ax.bar([x + i * width for x in range(len(agents))], values, width, label=label)
    for name, aim in summary["aims"].items():
        ax.axhline(aim["aim"], linestyle="--", linewidth=0.8, color="grey")
        label = name.replace("_canonical_coverage", "").replace("_", "-")
        ax.text(len(agents) - 0.5, aim["aim"], f"{label} aim {aim['aim']}", va="bottom", ha="right", fontsize=7,
                color="grey")
    ax.set_xticks([x + width * (len(series) - 1) / 2 for x in range(len(agents))], agents)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("history coverage (recall of card facts)")
    ax.set_title(f"Simulated interviews: {summary['n_cases']} cases")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_outputs(summary: dict, records: dict[str, dict], out: Path) -> None:
    summary["files"] = {"summary": str(out / "summary.json"), "report": str(out / "report.md"),
                        "plot": str(out / "coverage.png"), "results": str(out / "results.jsonl")}
    plot_coverage(summary, out / "coverage.png")
    (out / "report.md").write_text(report_markdown(summary))
    (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
