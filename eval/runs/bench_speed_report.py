"""What ``medhx bench-speed`` reports (see :mod:`eval.runs.bench_speed`): the chart, the one-line summary and the CPU's
vector flags."""

from __future__ import annotations

import math
from pathlib import Path

from eval.runs.bench_speed_config import ENGINES

LABELS = {"hf": "transformers\none at a time\n(paper)", "hf_batched": "transformers\nbatched",
          "vllm": "vLLM\nbatched", "vllm_constrained": "vLLM batched\n+ CMAS schema\n(medhx)"}


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = report["runs"]
    names = [n for n in ENGINES if n in runs]
    live = report.get("live")
    fig, axes = plt.subplots(1, 2 if live else 1, figsize=(12 if live else 7, 4.4), squeeze=False)
    ax = axes[0][0]
    values = [runs[n]["turns_per_s"] for n in names]
    bars = ax.bar([LABELS[n] for n in names], values, color=["#8c8c8c", "#b0b0b0", "#3b75af", "#5fa55a"][: len(names)])
    labels = []
    for n in names:
        r = report["ratios"].get(n, {})
        parts = [f"{runs[n]['turns_per_s']:.2f}/s"]
        if "vs_hf" in r:
            parts.append(f"{r['vs_hf']:.1f}x paper")
        if "vs_hf_batched" in r and n not in ("hf", "hf_batched"):
            parts.append(f"{r['vs_hf_batched']:.1f}x batched")
        labels.append("\n".join(parts))
    ax.bar_label(bars, labels=labels, fontsize=8)
    ax.set_ylim(0, max(values) * 1.35)
    ax.set_ylabel("NLU turns / s")
    ax.set_title(f"{report['turns']} turns, {report['completion_tokens_per_turn']:.1f} target tokens/turn", fontsize=9)
    ax.tick_params(axis="x", labelsize=8)
    if live:
        ax2 = axes[0][1]
        ms = [max(1000 * s, 1e-3) for s in live["turn_seconds"]]
        lo, hi = math.log10(min(ms)), math.log10(max(ms))
        bins = [10 ** (lo + (hi - lo) * k / 30) for k in range(31)] if hi > lo else 10
        ax2.hist(ms, bins=bins, color="#3b75af")
        ax2.set_xscale("log")
        t = live["turn"]
        for q, style in (("p50_ms", "--"), ("p95_ms", ":")):
            ax2.axvline(t[q], color="k", linestyle=style, label=f"{q[:3]} {t[q]:.0f} ms")
        ax2.set_xlabel("one agent turn (ms)")
        ax2.set_ylabel("turns")
        cold = live.get("first_turn") or {}
        ax2.set_title(f"live turn, default agent ({t['n']} turns); first doctor turn cold "
                      f"{_fmt(cold.get('cold_s'), 's')}, warm {_fmt(cold.get('warm_s'), 's')}", fontsize=9)
        ax2.legend(fontsize=8)
    fig.suptitle(f"{report['model_name']} on {report['machine']['threads']} CPU cores", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _fmt(x: float | None, unit: str) -> str:
    return "n/a" if x is None else f"{x:.2f} {unit}"


def _cpu_flags() -> list[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    return sorted(f for f in flags if f.startswith(("avx", "amx", "fma")))


def summary_line(report: dict) -> str:
    r, q = report["runs"], report["ratios"]
    parts = []
    for n in ENGINES:
        if n in r:
            parts.append(f"{n}[{r[n].get('dtype', '?')}]={r[n]['turns_per_s']:.2f} turns/s "
                         f"{r[n]['tokens_per_s']:.1f} tok/s")
    line = "nlu " + ", ".join(parts)
    best = "vllm_constrained" if "vllm_constrained" in r else "vllm"
    if best in q:
        line += f" | {best}: {q[best].get('vs_hf', float('nan')):.1f}x paper"
        if "vs_hf_batched" in q[best]:
            line += f", {q[best]['vs_hf_batched']:.1f}x hf batched"
    overhead = (report.get("constrained_overhead") or {}).get("constrained_overhead_per_token")
    if report.get("constrained_overhead") is not None:
        line += f" | schema overhead/token {'n/a' if overhead is None else f'{100 * overhead:+.0f}%'}"
    shares = {n: r[n]["contention"]["others_cpu_share"] for n in ENGINES if n in r and r[n].get("contention")}
    if shares:
        line += " | others' CPU share " + " ".join(f"{n} {v:.0%}" for n, v in shares.items())
    live = report.get("live")
    if live:
        first = live.get("first_turn") or {}
        line += (f" | live turn p50 {live['turn']['p50_ms']:.0f} ms p95 {live['turn']['p95_ms']:.0f} ms, "
                 f"first doctor turn cold {_fmt(first.get('cold_s'), 's')} warm {_fmt(first.get('warm_s'), 's')}")
    return line
