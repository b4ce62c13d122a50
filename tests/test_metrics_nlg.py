"""NLG metrics: BLEU by hand (and against NLTK's corpus_bleu), ROUGE, BERTScore with the real MiniLM encoder."""

import math

import pytest

from agent.data import Example
from eval.nlg import bertscore_f1, corpus_bleu, rouge, score_nlg, tokenize


def test_tokenize_lowercases_and_splits_punctuation():
    assert tokenize("  Hello, World! It's 5pm.") == ["hello", ",", "world", "!", "it", "'", "s", "5pm", "."]


def test_bleu_by_hand():
    hyp, ref = tokenize("the cat sat on the mat"), tokenize("the cat is on the mat")
    # unigrams 5/6, bigrams 3/5, trigrams 1/4, 4-grams 0/3; equal lengths, no brevity penalty
    assert corpus_bleu([hyp], [ref], 2) == pytest.approx(math.sqrt(5 / 6 * 3 / 5))
    assert corpus_bleu([hyp], [ref], 4) == 0.0
    # short hypothesis: p1 = p2 = 1, brevity penalty exp(1 - 3/2)
    assert corpus_bleu([["the", "cat"]], [["the", "cat", "sat"]], 2) == pytest.approx(math.exp(-0.5))


def test_bleu_agrees_with_nltk_corpus_bleu():
    from nltk.translate.bleu_score import corpus_bleu as nltk_bleu

    pairs = [("could you tell me when the cough started ?", "ok , could you tell me when the cough started ?"),
             ("do you smoke at all ?", "do you smoke cigarettes at all ?"),
             ("any fevers or chills recently ?", "have you had any fevers or chills ?")]
    hyps = [tokenize(h) for h, _ in pairs]
    refs = [tokenize(r) for _, r in pairs]
    for n, weights in ((2, (0.5, 0.5)), (4, (0.25,) * 4)):
        assert corpus_bleu(hyps, refs, n) == pytest.approx(nltk_bleu([[r] for r in refs], hyps, weights=weights))


def test_rouge_by_hand():
    r = rouge(["the cat sat"], ["the cat"])
    assert r["rouge1"] == pytest.approx(0.8)  # P 2/3, R 1
    assert r["rougeL"] == pytest.approx(0.8)  # LCS 2


@pytest.mark.slow
def test_bertscore_and_score_nlg_with_real_minilm():
    f = bertscore_f1(["Do you smoke?", "Do you smoke?", ""], ["Do you smoke?", "Have you been smoking?", "Hi."],
                     progress=False)
    assert f[0] == pytest.approx(1.0, abs=1e-5)
    assert 0.3 < f[1] < 0.99
    assert f[2] == 0.0
    assert bertscore_f1(["Have you been smoking?"], ["Do you smoke?"], progress=False)[0] == pytest.approx(f[1], abs=1e-5)

    examples = [Example("nlg", "d", 2, [], [], "Do you smoke?"), Example("nlg", "d", 4, [], [], "Any fever?")]
    r = score_nlg(examples, {("d", 2): "do you smoke ?", ("d", 4): None}, progress=False)
    assert r["format_errors"] == 1 and r["missing_predictions"] == 0
    assert r["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert r["rouge1"] == pytest.approx(0.5)  # 1.0 and 0.0 (empty prediction)
    assert r["bleu2"] == pytest.approx(100 * math.exp(1 - 7 / 4), abs=0.01)  # all 4 tokens right, refs 4 + 3 tokens
    assert r["bertscore"] == pytest.approx((1.0 + 0.0) / 2, abs=1e-4)
