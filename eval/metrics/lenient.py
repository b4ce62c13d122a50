"""medhx's *lenient* NLU and POL scores: a variant of MediTOD's metrics, never reported under the official names.

:mod:`eval.metrics.official` is the headline (MediTOD's definitions exactly). This variant differs on purpose, to ask
"how good is the schema-valid content?" and to plug in soft matching of free-text values:
- a prediction's parts that break the CMAS schema are set aside (``schema_extra_items``), not counted;
- values are compared lower-cased with whitespace collapsed, non-canonical ones through a :class:`Matcher`
  (exact, synonym, embedding, llm);
- joint accuracy credits a skipped turn (empty / bare gold) when the prediction's tuple set equals the gold's.

``examples`` are :class:`agent.core.data.Example` (``nlu_examples`` / ``pol_examples``);
``predictions`` maps ``(dialog_id, uttr_id)`` to the predicted CMAS JSON (a list of
frames / actions, a JSON string of one, or ``None``). A missing, null or unparseable
prediction is a format error and scores as an empty prediction.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.core import cmas, cmas_lenient
from agent.core.data import Example
from eval.metrics.matching import ExactMatcher, Matcher, candidate_pairs, count_matches, values_to_compare
from eval.metrics.tuples import TupleSets, nlu_tuples, pol_tuples

PRECISION_AT = (1, 4, 8, math.inf)
DIGITS = 4


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, tp: int, n_gold: int, n_pred: int) -> None:
        self.tp += tp
        self.fp += n_pred - tp
        self.fn += n_gold - tp

    def prf(self) -> dict[str, float | None]:
        if self.tp + self.fp + self.fn == 0:  # nothing on either side: undefined, not 0
            return {"precision": None, "recall": None, "f1": None}
        p = self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0
        r = self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return {"precision": round(p, DIGITS), "recall": round(r, DIGITS), "f1": round(f, DIGITS)}


@dataclass
class ParsedPrediction:
    value: list[dict]
    status: str  # "ok" | "schema" (non-CMAS parts set aside) | "format" (missing / null / unparseable)
    extra: int = 0


MISSING = object()


def parse_prediction(task: str, prediction: Any) -> ParsedPrediction:
    """Strict CMAS parse; on failure keep the schema-valid part (lenient) and record the rest."""
    if prediction is MISSING or prediction is None:
        return ParsedPrediction([], "format")
    if isinstance(prediction, str):
        try:
            prediction = json.loads(prediction)
        except ValueError:
            return ParsedPrediction([], "format")
    if isinstance(prediction, dict):
        prediction = [prediction]
    if not isinstance(prediction, list):
        return ParsedPrediction([], "format")
    strict, lenient = (cmas.parse_nlu, cmas_lenient.parse_nlu_lenient) if task == "nlu" else (cmas.parse_actions,
                                                                                       cmas_lenient.parse_actions_lenient)
    try:
        return ParsedPrediction(strict(prediction), "ok")
    except cmas.CMASError:
        pass
    try:
        kept = lenient(prediction)
    except (cmas.CMASError, TypeError, ValueError, AttributeError):
        return ParsedPrediction([], "format")
    return ParsedPrediction(kept.value, "schema", kept.n_extra)


def nlu_skipped(gold: list[dict]) -> bool:
    """MediTOD leaves out of P/R/F1 the turns whose gold is empty or a bare ``inform``."""
    return not gold or (
        len(gold) == 1 and gold[0]["intent"] == "inform" and not any((gold[0].get("slots") or {}).values())
    )


def pol_skipped(gold: list[dict]) -> bool:
    """... and, for POL, the turns whose gold is empty or a bare ``inquire``."""
    return not gold or (len(gold) == 1 and gold[0]["action"] == "inquire" and not any(v for k, v in gold[0].items()
                                                                                        if k != "action"))


def sets_equal(gold: TupleSets, pred: TupleSets, matcher: Matcher) -> bool:
    """Whole-turn equality: canonical tuples exactly, non-canonical ones through a perfect one-to-one matching."""
    if gold.canonical != pred.canonical or len(gold.non_canonical) != len(pred.non_canonical):
        return False
    return count_matches(gold.non_canonical, pred.non_canonical, matcher) == len(gold.non_canonical)


@dataclass
class Turn:
    example: Example
    gold: TupleSets
    pred: TupleSets
    parsed: ParsedPrediction
    missing: bool
    skipped: bool


def _turns(task: str, examples: Sequence[Example], predictions: Mapping[tuple[str, int], Any],
           unroll: Callable[[list[dict]], TupleSets], skipped: Callable[[list[dict]], bool]) -> list[Turn]:
    turns = []
    for ex in examples:
        raw = predictions.get((ex.dialog_id, ex.uttr_id), MISSING)
        parsed = parse_prediction(task, raw)
        turns.append(Turn(ex, unroll(ex.target), unroll(parsed.value), parsed, raw is MISSING, skipped(ex.target)))
    return turns


def _notes(task: str, n: int, n_skipped: int) -> list[str]:
    bare = "inform" if task == "nlu" else "inquire"
    return [
        f"precision/recall/f1 leave out the {n_skipped} turns whose gold is empty or a bare '{bare}'",
        f"joint_accuracy divides by all {n} gold turns, the skipped ones included (each judged by exact tuple-set "
        "match), as the official definition divides by all turns",
        "format_errors counts predictions that are missing, null or not parseable as CMAS JSON; they score as empty "
        "predictions. schema_errors counts predictions with non-CMAS parts, which are set aside (schema_extra_items) "
        "while the rest is scored",
        "values are compared lower-cased with whitespace collapsed; canonical tuples by exact match, non-canonical "
        "ones through the matcher with one-to-one greedy pairing",
    ]


def _report(task: str, turns: list[Turn], predictions: Mapping, matcher: Matcher) -> dict:
    values: set[str] = set()
    for t in turns:
        values |= values_to_compare(t.gold.non_canonical, t.pred.non_canonical)
    matcher.prepare(values)
    matcher.prefetch(pair for t in turns for pair in candidate_pairs(t.gold.non_canonical, t.pred.non_canonical))

    canonical, non_canonical = Counts(), Counts()
    joint = 0
    for t in turns:
        ctp = len(t.gold.canonical & t.pred.canonical)
        ntp = count_matches(t.gold.non_canonical, t.pred.non_canonical, matcher)
        if (ctp == len(t.gold.canonical) == len(t.pred.canonical)
                and ntp == len(t.gold.non_canonical) == len(t.pred.non_canonical)):
            joint += 1
        if not t.skipped:
            canonical.add(ctp, len(t.gold.canonical), len(t.pred.canonical))
            non_canonical.add(ntp, len(t.gold.non_canonical), len(t.pred.non_canonical))
    overall = Counts(canonical.tp + non_canonical.tp, canonical.fp + non_canonical.fp, canonical.fn + non_canonical.fn)
    n, n_skipped = len(turns), sum(t.skipped for t in turns)
    scored_keys = {(t.example.dialog_id, t.example.uttr_id) for t in turns}
    return {
        "task": task,
        "turns": n,
        "scored_turns": n - n_skipped,
        "skipped_turns": n_skipped,
        "overall": overall.prf(),
        "canonical": canonical.prf(),
        "non_canonical": non_canonical.prf(),
        "joint_accuracy": round(joint / n, DIGITS) if n else None,
        "format_errors": sum(t.parsed.status == "format" for t in turns),
        "missing_predictions": sum(t.missing for t in turns),
        "schema_errors": sum(t.parsed.status == "schema" for t in turns),
        "schema_extra_items": sum(t.parsed.extra for t in turns),
        "unscored_predictions": sum(1 for k in predictions if k not in scored_keys),
        "counts": {name: vars(c) for name, c in
                   (("overall", overall), ("canonical", canonical), ("non_canonical", non_canonical))},
        "matcher": matcher.describe(),
        "notes": _notes(task, n, n_skipped),
    }


def score_nlu_lenient(examples: Sequence[Example], predictions: Mapping[tuple[str, int], Any],
              matcher: Matcher | None = None) -> dict:
    turns = _turns("nlu", examples, predictions, nlu_tuples, nlu_skipped)
    return _report("nlu", turns, predictions, matcher or ExactMatcher())


def lookahead(turns: list[Turn], matcher: Matcher) -> list[float]:
    """Per predicted doctor turn, how many turns ahead in its dialogue the first gold turn with an equal tuple set lies
    (0: its own turn; inf: none)."""
    by_dialogue: dict[str, list[Turn]] = {}
    for t in turns:
        by_dialogue.setdefault(t.example.dialog_id, []).append(t)
    matcher.prefetch(
        pair
        for d in by_dialogue.values()
        for i, t in enumerate(d)
        for g in d[i:]
        if g.gold.canonical == t.pred.canonical and len(g.gold.non_canonical) == len(t.pred.non_canonical)
        for pair in candidate_pairs(g.gold.non_canonical, t.pred.non_canonical)
    )
    out = []
    for dialogue in by_dialogue.values():
        dialogue.sort(key=lambda t: t.example.uttr_id)
        for i, t in enumerate(dialogue):
            out.append(next((j - i for j in range(i, len(dialogue)) if sets_equal(dialogue[j].gold, t.pred, matcher)),
                            math.inf))
    return out


def precision_at_k(turns: list[Turn], matcher: Matcher, ks: Sequence[float] = PRECISION_AT) -> dict[str, float | None]:
    """Predicted doctor turn i scores 1 when its tuple set equals the gold set of one of turns i..i+K-1 of its
    dialogue."""
    ahead = lookahead(turns, matcher)
    return {
        ("inf" if k == math.inf else str(int(k))): round(sum(d < k for d in ahead) / len(ahead), DIGITS)
        if ahead
        else None
        for k in ks
    }


def score_pol_lenient(examples: Sequence[Example], predictions: Mapping[tuple[str, int], Any],
              matcher: Matcher | None = None) -> dict:
    matcher = matcher or ExactMatcher()
    turns = _turns("pol", examples, predictions, pol_tuples, pol_skipped)
    report = _report("pol", turns, predictions, matcher)
    report["precision_at_k"] = precision_at_k(turns, matcher)
    report["matcher"] = matcher.describe()  # after P@K: the llm matcher's call counts include its comparisons
    report["notes"].append(
        f"precision_at_k is over all {len(turns)} doctor turns but each dialogue's first utterance: predicted turn i "
        "scores 1 when its whole tuple set equals the gold set of one of doctor turns i..i+K-1 of its dialogue "
        "(canonical tuples exactly, non-canonical ones through the matcher)"
    )
    return report
