"""``medhx bench``'s report: ``report.md`` and the PNG plots, the run beside the paper's reported rows.

The paper's rows (configs/bench/paper_reference.yaml, MediTOD Tables 4-10, 12-13) were measured on the full
MediTOD test sets; a run on another split (the shared dialogues, say) sits beside them as orientation, not as a
like-for-like comparison, and every table says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TASK_TITLE = {"nlu": "NLU", "pol": "POL", "nlg": "NLG"}
PLOT_METRICS = {"nlu": ["overall_f1", "canonical_f1", "non_canonical_f1"],
                "pol": ["overall_f1", "canonical_f1", "non_canonical_f1", "p_at_1", "p_at_inf"],
                "nlg": ["bleu2", "bleu4", "rouge1", "rougeL", "bertscore"]}


def flat_metrics(task: str, scores: dict) -> dict[str, float | None]:
    """The run's scores under the paper's metric names and scale (fractions; BLEU x100)."""
    if task == "nlg":
        return {k: scores.get(k) for k in ("bleu2", "bleu4", "rouge1", "rougeL", "bertscore")}
    out: dict[str, float | None] = {}
    for part in ("overall", "canonical", "non_canonical"):
        for m in ("precision", "recall", "f1"):
            out[f"{part}_{m}"] = scores[part][m]
    out["joint_accuracy"] = scores["joint_accuracy"]
    for k, v in (scores.get("precision_at_k") or {}).items():
        out[f"p_at_{k}"] = v
    return out


def paper_tables(paper: dict, task: str, domain: str) -> list[tuple[str, dict]]:
    return [
        (n, t) for n, t in (paper.get("tables") or {}).items() if t.get("task") == task and t.get("domain") == domain
    ]


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.4f}" if abs(v) <= 1 else f"{v:.2f}"
    return str(v)


def plot_all(metrics: dict, paper: dict, cfg: Any, out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    tasks = list(metrics["tasks"])
    # 1. the run beside the paper's rows, per task
    fig, axes = plt.subplots(len(tasks), 1, figsize=(11, 3.8 * len(tasks)), squeeze=False)
    for ax, task in zip(axes[:, 0], tasks, strict=True):
        ours = flat_metrics(task, metrics["tasks"][task]["scores"])
        reference: dict[str, dict] = {}  # one entry per paper model, its metrics merged across the task's tables
        for _, table in paper_tables(paper, task, cfg.domain):
            for r in table["rows"]:
                reference.setdefault(f"{r['model']} ({'sup' if r['setting'] == 'supervised' else 'icl'})", {}).update(r)
        rows = [("medhx (this run)", ours), *reference.items()]
        keys = [k for k in PLOT_METRICS[task] if ours.get(k) is not None]
        if task == "nlg":
            keys = [k for k in keys if k != "bleu2" and k != "bleu4"]  # BLEU is x100: its own scale
        width = 0.8 / max(len(rows), 1)
        for i, (label, vals) in enumerate(rows):
            xs = [j + i * width for j in range(len(keys))]
            ys = [float(vals.get(k) or 0.0) for k in keys]
            ax.bar(xs, ys, width, label=label, color="#d62728" if i == 0 else None, alpha=1.0 if i == 0 else 0.7)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))], keys)
        ax.set_title(f"{TASK_TITLE[task]}: this run ({cfg.split} of {Path(cfg.data).name}) beside the paper's "
                     f"rows (reported on the full MediTOD {cfg.domain} test set)", fontsize=9)
        ax.legend(fontsize=6, ncol=4, loc="upper right")
        ax.set_ylim(0, 1.05)
    fig.tight_layout()
    fig.savefig(out / "metrics_vs_paper.png", dpi=110)
    plt.close(fig)
    written.append("metrics_vs_paper.png")

    # 2. NLU F1 per slot type and per attribute
    groups = (metrics["tasks"].get("nlu") or {}).get("scores", {}).get("per_group_f1")
    if groups:
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        for ax, kind in zip(axes, ("slot", "attribute"), strict=True):
            items = sorted(groups[kind].items(), key=lambda kv: -kv[1])
            ax.barh([k for k, _ in items][::-1], [v for _, v in items][::-1], color="#3b75af")
            ax.set_xlim(0, 1)
            ax.set_title(f"NLU F1 per {kind} (official tuples, exact)")
            ax.tick_params(axis="y", labelsize=7)
        fig.tight_layout()
        fig.savefig(out / "nlu_f1_per_group.png", dpi=110)
        plt.close(fig)
        written.append("nlu_f1_per_group.png")

    # 3. latency per module
    import json

    fig, ax = plt.subplots(figsize=(8, 3.6))
    for task in tasks:
        path = out / "predictions" / f"{task}.jsonl"
        lat = [json.loads(line).get("latency_s") for line in path.read_text().splitlines() if line.strip()]
        lat = [1000 * float(x) for x in lat if x is not None]
        if lat:
            ax.hist(lat, bins=30, alpha=0.6, label=f"{TASK_TITLE[task]} ({metrics['tasks'][task]['module']})")
    ax.set_xlabel("latency per turn (ms)")
    ax.set_ylabel("turns")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "latency.png", dpi=110)
    plt.close(fig)
    written.append("latency.png")
    return written


def write_report(metrics: dict, provenance: dict, paper: dict, cfg: Any, plots: list[str], path: Path) -> None:
    lines = [f"# medhx bench: {cfg.split} of {cfg.data} ({cfg.domain})", ""]
    lines += [
        f"- date: {provenance['date']}; data hash {provenance['data_hash']}; seed {cfg.seed}; "
        f"limit {cfg.limit or 'none'}",
        f"- base model: {provenance['models']['base_model'].get('name')} "
        f"(sha256/16 {provenance['models']['base_model'].get('sha256_16')}); adapters: "
        + (", ".join(f"{k} {v['sha256_16']}" for k, v in provenance["models"]["adapters"].items()) or "none"),
        "- versions: " + ", ".join(f"{k} {v}" for k, v in provenance["versions"].items()),
        "- headline scores are MediTOD's official definitions (exact tuple match; eval/metrics/official.py, "
        "eval/metrics/nlg.py)."
        " The paper's rows below were reported on the full MediTOD test set (non-medical values adjudicated by"
        " ChatGPT in the paper); on another split they are orientation, not a like-for-like comparison.",
        "",
    ]
    for task, m in metrics["tasks"].items():
        s = m["scores"]
        ours = flat_metrics(task, s)
        lines += [f"## {TASK_TITLE[task]} — module `{m['module']}`", ""]
        for _, table in paper_tables(paper, task, cfg.domain):
            keys = [k for k in table["metrics"] if k in ours]
            if not keys:
                continue
            lines += [
                f"{table['caption']} ({table['units']}; the paper's rows on the full dataset)",
                "",
                "| model | setting | " + " | ".join(keys) + " |",
                "|---|---|" + "---|" * len(keys),
                f"| **medhx (this run)** | {cfg.split} split | "
                + " | ".join(f"**{_fmt(ours[k])}**" for k in keys)
                + " |",
            ]
            lines += [f"| {r['model']} | {r['setting']} | " + " | ".join(_fmt(r.get(k)) for k in keys) + " |"
                      for r in table["rows"]]
            lines.append("")
        if task != "nlg":
            lines += ["Official: " + ", ".join(f"{k} {_fmt(v)}" for k, v in ours.items()), ""]
            lines += ["Soft matching (medhx's lenient variant, not the official definition):", "",
                      "| matcher | overall F1 | non-canonical F1 | joint accuracy |", "|---|---|---|---|"]
            for name, r in s.get("soft_match", {}).items():
                if "skipped" in r:
                    lines.append(f"| {name} | skipped: {r['skipped']} | | |")
                else:
                    lines.append(f"| {name} | {_fmt(r['overall_f1'])} | {_fmt(r['non_canonical_f1'])} | "
                                 f"{_fmt(r['joint_accuracy'])} |")
            lines.append("")
        else:
            lines += [f"BERTScore: {s['bertscore_model']['library']}, {s['encoder']} layer "
                      f"{s['bertscore_model']['layer']} (the paper: roberta-large; compare as a trend).", ""]
            facts = s.get("facts") or {}
            if facts:
                lines += [
                    "Fact-level score (eval/metrics/nlg_facts.py: the generated utterance read back into CMAS facts, "
                    "compared with the planned action's):",
                    "",
                    "| matcher | precision | recall | F1 |",
                    "|---|---|---|---|",
                ]
                lines += [f"| {n} | {_fmt(r.get('precision'))} | {_fmt(r.get('recall'))} | {_fmt(r.get('f1'))} |"
                          for n, r in facts.items()]
                lines.append("")
        st, run = m["stats"], m["run"]
        lines += [
            "| turns | schema-valid before repair | after repair | format errors | fallbacks | tokens in / out | "
            "latency p50 / p95 (s) | throughput (turns/s) | computed / reused from cache |",
            "|---|---|---|---|---|---|---|---|---|",
            f"| {st['turns']} | {_fmt(st['schema_valid_before_repair'])} | {_fmt(st['schema_valid_after_repair'])}"
            f" | {st['format_errors']} | {st['fallbacks']} | {st['tokens_in']} / {st['tokens_out']}"
            f" | {_fmt(st['latency_p50_s'])} / "
            f"{_fmt(st['latency_p95_s'])} | {_fmt(run['turns_per_s'])} | {run['computed']} / {run['reused']} |",
            "",
        ]
        if run["corrupted_lines"]:
            lines += [f"**{len(run['corrupted_lines'])} corrupted cache lines were set aside and their turns "
                      "recomputed:** " + "; ".join(f"line {c['line']}: {c['reason']}" for c in run["corrupted_lines"]),
                      ""]
    lines += ["## Plots", ""] + [f"![{p}]({p})" for p in plots] + [""]
    path.write_text("\n".join(lines))
