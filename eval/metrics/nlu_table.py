"""The README's NLU comparison table from prediction files (``medhx predict`` output), scored per held-out
dialogue with the official MediTOD NLU definition (``eval.metrics.official``).

    python -m eval.metrics.nlu_table --row "clinical=runs/pred/clinical_{dialog}.jsonl" --row ... [--data DIR]

``{dialog}`` is replaced by each dialogue id of the data directory; each file must hold that dialogue's
turns (leave-one-dialogue-out: the model behind it was fitted without that dialogue). Time per turn is the
median ``latency_s`` of the rows (for LLM rows: per-request latency with the run's requests in flight).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from agent.core.data import DEFAULT_DATA_DIR, load_dialogues, nlu_examples
from eval.metrics.official import score_nlu_official
from eval.metrics.score import load_predictions


def row(name: str, pattern: str, data_dir: str) -> list[str]:
    cells = [name]
    per_turn: list[float] = []
    for d in load_dialogues(data_dir, "all"):
        path = Path(pattern.format(dialog=d.dialog_id))
        records = {k: v for k, v in load_predictions(path).items() if k[0] == d.dialog_id}
        per_turn += [float(r["latency_s"]) for r in records.values() if r.get("latency_s") is not None]
        rep = score_nlu_official(nlu_examples([d]), {k: r.get("prediction") for k, r in records.items()})
        cells.append(" / ".join(f"{rep[k]['f1']:.2f}" for k in ("overall", "canonical", "non_canonical"))
                     + f" / {rep['joint_accuracy']:.2f}")
    cells.append(f"{1000 * sorted(per_turn)[len(per_turn) // 2]:.1f}" if per_turn else "n/a")
    return cells


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--row", action="append", required=True, help="NAME=PATTERN with {dialog} in PATTERN")
    p.add_argument("--data", default=str(DEFAULT_DATA_DIR))
    args = p.parse_args(argv)
    ids = [d.dialog_id for d in load_dialogues(args.data, "all")]
    print("| NLU | " + " | ".join(f"held-out {i}: F1 overall / canonical / non-canonical / joint acc" for i in ids)
          + " | ms per turn (p50) |")
    print("|---" * (len(ids) + 2) + "|")
    for spec in args.row:
        name, pattern = spec.split("=", 1)
        print("| " + " | ".join(row(name, pattern, args.data)) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
