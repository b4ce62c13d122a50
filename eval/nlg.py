"""NLG scores as MediTOD reports them: corpus BLEU-2/4 (x100), ROUGE-1/L and BERTScore F1 (fractions).

Texts are lower-cased with every punctuation character split off into its own token
before BLEU and ROUGE (the official script's preprocessing). BLEU is computed here
(Papineni et al. corpus BLEU, uniform weights, no smoothing: any empty n-gram order
gives 0, like NLTK's ``corpus_bleu``); ROUGE is the ``rouge-score`` package's F-measure
averaged over turns; BERTScore is greedy cosine matching of contextual token
embeddings (last layer, no idf, no baseline rescaling) from a local encoder.
"""

from __future__ import annotations

import math
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.data import Example

DIGITS = 4


def tokenize(text: str) -> list[str]:
    text = text.strip().lower()
    for p in string.punctuation:
        text = text.replace(p, f" {p} ")
    return text.split()


def _ngrams(tokens: list[str], n: int) -> Counter:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def corpus_bleu(hypotheses: Sequence[list[str]], references: Sequence[list[str]], max_n: int = 4) -> float:
    """Corpus BLEU in [0, 1] with one reference per hypothesis."""
    matches, totals = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for hyp, ref in zip(hypotheses, references, strict=True):
        hyp_len += len(hyp)
        ref_len += len(ref)
        for n in range(1, max_n + 1):
            h, r = _ngrams(hyp, n), _ngrams(ref, n)
            matches[n - 1] += sum(min(c, r[g]) for g, c in h.items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    if hyp_len == 0 or 0 in matches:
        return 0.0
    log_precision = sum(math.log(m / t) for m, t in zip(matches, totals, strict=True)) / max_n
    brevity = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return brevity * math.exp(log_precision)


def rouge(hypotheses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rougeL"], use_stemmer=False)
    totals = {"rouge1": 0.0, "rougeL": 0.0}
    for hyp, ref in zip(hypotheses, references, strict=True):
        scores = scorer.score(ref, hyp)
        for name in totals:
            totals[name] += scores[name].fmeasure
    return {name: total / len(hypotheses) for name, total in totals.items()} if hypotheses else totals


def bertscore_f1(candidates: Sequence[str], references: Sequence[str], encoder: str | Path | None = None,
                 progress: bool = True) -> list[float]:
    """Per-pair BERTScore F1: each token's best cosine match on the other side, averaged (P over candidate tokens,
    R over reference tokens), F1 of the two; an empty side scores 0."""
    from tqdm import tqdm

    from eval.encoder import token_encoder

    enc = token_encoder(Path(encoder) if encoder is not None else None)
    texts = sorted(set(candidates) | set(references), key=len)  # each text once; similar lengths pad little
    embedded: dict[str, Any] = {}
    step = enc.batch_size
    for start in tqdm(range(0, len(texts), step), desc="bertscore", disable=not progress, unit="batch"):
        batch = texts[start : start + step]
        embedded.update(zip(batch, enc.encode(batch), strict=True))
    out = []
    for cand, ref in zip(candidates, references, strict=True):
        c, r = embedded[cand], embedded[ref]
        if len(c) == 0 or len(r) == 0:
            out.append(0.0)
            continue
        sim = r @ c.T
        recall = sim.max(dim=1).values.mean().item()
        precision = sim.max(dim=0).values.mean().item()
        out.append(2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0)
    return out


def score_nlg(examples: Sequence[Example], predictions: Mapping[tuple[str, int], Any],
              encoder: str | Path | None = None, progress: bool = True) -> dict:
    """``predictions`` maps ``(dialog_id, uttr_id)`` to the generated doctor text; missing / non-text ones are format
    errors and score as the empty string."""
    from eval.encoder import default_encoder_path, encoder_name

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
    bert = bertscore_f1(preds, golds, encoder, progress) if examples else []
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
        "format_errors": format_errors,
        "missing_predictions": missing,
        "unscored_predictions": sum(1 for k in predictions if k not in scored_keys),
        "notes": [
            "bleu2/bleu4: corpus BLEU x100 (own implementation: uniform weights, no smoothing, corpus brevity "
            "penalty) on lower-cased text with punctuation split off; rouge1/rougeL: rouge-score F-measure averaged "
            "over turns, same tokens; bertscore: mean BERTScore F1 (greedy cosine matching of last-layer token "
            "embeddings, special tokens dropped, no idf, no rescaling)",
            "format_errors counts missing or non-text predictions; they score as empty text",
        ],
    }
