"""NLG scores as MediTOD's ``metrics/nlg_metrics.py`` computes them: corpus BLEU-2/4 (x100), ROUGE-1/L, BERTScore F1.

Texts go through the official ``preprocess_text`` (strip, tabs to spaces, lower-case, every punctuation character
split off into its own token) before BLEU and ROUGE. BLEU is NLTK's ``corpus_bleu`` (one reference per hypothesis,
weights (1/2, 1/2) and (1/4,)*4, no smoothing), exactly the official call; tests check it against ``sacrebleu``.
BERTScore is the ``bert-score`` library's F1 averaged over turns, on a local encoder (no hub at run time: the
official script's default, roberta-large layer 17, is not available offline) whose name and layer are reported.
ROUGE: the official script uses ``evaluate``'s bootstrap aggregate (a resampled median, different on every run);
here the exact mean of ``rouge-score``'s per-turn F-measure, which that bootstrap estimates.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.core.data import Example
from eval.metrics.encoder import default_encoder_path, encoder_name, offline, transformer_dir

DIGITS = 4
BLEU_WEIGHTS = {2: (0.5, 0.5), 4: (0.25, 0.25, 0.25, 0.25)}


def preprocess_text(text: str) -> str:
    """The official preprocessing of an utterance."""
    text = text.strip().replace("\t", " ").lower()
    for p in string.punctuation:
        text = text.replace(p, f" {p} ")
    return " ".join(text.split())


def tokenize(text: str) -> list[str]:
    return preprocess_text(text).split()


def corpus_bleu(hypotheses: Sequence[list[str]], references: Sequence[list[str]], max_n: int = 4) -> float:
    """Corpus BLEU in [0, 1], NLTK's implementation with the official weights (any empty n-gram order gives 0)."""
    import warnings

    from nltk.translate.bleu_score import corpus_bleu as nltk_corpus_bleu

    with warnings.catch_warnings():  # NLTK warns on zero n-gram counts; the official score is then 0 too
        warnings.simplefilter("ignore")
        return float(nltk_corpus_bleu([[r] for r in references], list(hypotheses), weights=BLEU_WEIGHTS[max_n]))


def rouge(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=False)
    totals = {"rouge1": 0.0, "rougeL": 0.0}
    for hyp, ref in zip(hypotheses, references, strict=True):
        scores = scorer.score(ref, hyp)
        for name in totals:
            totals[name] += scores[name].fmeasure
    return {name: total / len(hypotheses) for name, total in totals.items()} if hypotheses else totals


def bertscore_model(encoder: str | Path | None = None) -> tuple[str, int]:
    """The encoder directory ``bert-score`` loads and the layer it reads (the encoder's last)."""
    import json

    model_dir = transformer_dir(Path(encoder) if encoder is not None else default_encoder_path())
    config = json.loads((model_dir / "config.json").read_text())
    return str(model_dir), int(config["num_hidden_layers"])


def bertscore_f1(
    candidates: Sequence[str], references: Sequence[str], encoder: str | Path | None = None
) -> list[float]:
    """Per-pair BERTScore F1 from the ``bert-score`` library (no idf, no baseline rescaling); an empty candidate or
    reference scores 0, as the library sets it."""
    if not candidates:
        return []
    from bert_score import score as bert_score

    offline()
    model_dir, layer = bertscore_model(encoder)
    # verbose off: the library prints to stdout, where medhx score writes its JSON. bert-score scores an empty side 0
    # but encodes it through a tokenizer method transformers 5 removed, so the empty pairs are settled here, with the
    # library's value
    scored = [i for i, (c, r) in enumerate(zip(candidates, references, strict=True)) if c.strip() and r.strip()]
    out = [0.0] * len(candidates)
    if scored:
        _, _, f1 = bert_score([candidates[i] for i in scored], [references[i] for i in scored], model_type=model_dir,
                              num_layers=layer, idf=False, rescale_with_baseline=False, verbose=False,
                              device="cpu", batch_size=64)
        for i, f in zip(scored, f1.tolist(), strict=True):
            out[i] = float(f)
    return out


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def score_nlg(examples: Sequence[Example], predictions: Mapping[tuple[str, int], Any],
              encoder: str | Path | None = None, progress: bool = True) -> dict:
    """``predictions`` maps ``(dialog_id, uttr_id)`` to the generated doctor text; missing / non-text ones are format
    errors and score as the empty string."""
    golds, preds = [], []
    format_errors = missing = 0
    for ex in examples:
        pred = predictions.get((ex.dialog_id, ex.uttr_id))
        if (ex.dialog_id, ex.uttr_id) not in predictions:
            missing += 1
        if not isinstance(pred, str):
            format_errors += 1
            pred = ""
        golds.append(ex.target)
        preds.append(pred)
    hyp_tokens, ref_tokens = [tokenize(p) for p in preds], [tokenize(g) for g in golds]
    rouges = rouge([" ".join(t) for t in hyp_tokens], [" ".join(t) for t in ref_tokens])
    bert = bertscore_f1(preds, golds, encoder) if examples else []
    model_dir, layer = bertscore_model(encoder)
    scored_keys = {(ex.dialog_id, ex.uttr_id) for ex in examples}
    path = Path(encoder) if encoder is not None else default_encoder_path()
    return {
        "task": "nlg",
        "turns": len(examples),
        "bleu2": round(100 * corpus_bleu(hyp_tokens, ref_tokens, 2), DIGITS - 2),
        "bleu4": round(100 * corpus_bleu(hyp_tokens, ref_tokens, 4), DIGITS - 2),
        "rouge1": round(rouges["rouge1"], DIGITS),
        "rougeL": round(rouges["rougeL"], DIGITS),
        "bertscore": round(sum(bert) / len(bert), DIGITS) if bert else None,
        "encoder": encoder_name(path),
        "encoder_path": str(path),
        "bertscore_model": {"library": f"bert-score {_version('bert-score')}", "model": model_dir, "layer": layer,
                            "idf": False, "rescale_with_baseline": False},
        "format_errors": format_errors,
        "missing_predictions": missing,
        "unscored_predictions": sum(1 for k in predictions if k not in scored_keys),
        "notes": [
            "bleu2/bleu4: NLTK corpus BLEU x100 with the official weights, no smoothing, on the official "
            "preprocess_text tokens; rouge1/rougeL: exact mean of rouge-score's per-turn F-measure on the same text "
            "(the official script reports evaluate's bootstrap estimate of it); bertscore: bert-score F1 averaged "
            "over turns, on bertscore_model's encoder and layer (the paper used roberta-large layer 17, so compare "
            "bertscore with the paper's rows only as a trend)",
            "format_errors counts missing or non-text predictions; they score as empty text",
        ],
    }
