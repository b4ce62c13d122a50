"""Ensemble predictions from a recorded model run: the clinical NLU reads each turn live, the LLM's answers are
replayed from its ``medhx predict`` file (a per-turn cache of the real model's outputs, so a slow CPU model is run
once for both its own row and the ensemble row), and ``EnsembleNLU`` merges them exactly as in the live agent.

    python -m eval.runs.ensemble_replay --model-pred runs/x/silver_all.jsonl --split all --out runs/x/ens_all.jsonl

Each output row's ``latency_s`` is the clinical NLU's time plus the recorded model latency of that turn.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from agent.core.data import DEFAULT_DATA_DIR, load_dialogues
from agent.core.ontology import default_vocabulary
from agent.core.protocol import ModuleOutput
from agent.core.safety import admit_frames
from eval.metrics.score import load_predictions
from eval.runs.predict import teacher_forced_contexts
from policies.nlu.ensemble import EnsembleNLU


class ReplayedNLU:
    """The recorded answer of the real model for the turn being replayed (set by :func:`replay`)."""

    def __init__(self) -> None:
        self.row: dict = {}

    def understand(self, ctx) -> ModuleOutput:
        r = self.row
        return ModuleOutput(value=r.get("prediction") or [], raw=r.get("raw") or "", format_error=r.get("format_error"),
                            meta={"latency_s": r.get("latency_s") or 0.0})


def replay(model_pred: str | Path, data_dir: str | Path, split: str, out: str | Path) -> dict:
    recorded = load_predictions(model_pred)
    model = ReplayedNLU()
    ensemble = EnsembleNLU(model)
    vocab = default_vocabulary()
    rows = []
    for dialog_id, uttr_id, ctx in teacher_forced_contexts(load_dialogues(data_dir, split)):
        if (dialog_id, uttr_id) not in recorded:
            raise ValueError(f"{model_pred}: no recorded model answer for {dialog_id}/{uttr_id}")
        model.row = recorded[(dialog_id, uttr_id)]
        t0 = time.perf_counter()
        result = ensemble.understand(ctx)
        admitted = admit_frames(result.value, vocab)
        own = time.perf_counter() - t0
        rows.append({"dialog_id": dialog_id, "uttr_id": uttr_id, "prediction": admitted.frames, "raw": result.raw,
                     "extra": {**result.extra, **admitted.rejected} or None, "meta": result.meta,
                     "latency_s": round(own + float(model.row.get("latency_s") or 0.0), 6)})
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    added = sum(len(r["meta"]["added_from_model"]) for r in rows)
    enriched = sum(len(r["meta"]["enriched_from_model"]) for r in rows)
    return {"rows": len(rows), "out": str(out), "items_added_from_model": added, "items_enriched_from_model": enriched,
            "status_disagreements": sum(len(r["meta"]["disagreements"]) for r in rows)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-pred", required=True)
    p.add_argument("--data", default=str(DEFAULT_DATA_DIR))
    p.add_argument("--split", default="all")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    print(json.dumps(replay(args.model_pred, args.data, args.split, args.out), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
