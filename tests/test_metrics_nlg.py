"""NLG metrics: the official BLEU (NLTK, checked by hand and against sacrebleu), ROUGE, bert-score on the real
MiniLM."""

import math

import pytest

from agent.core.data import Example
from eval.metrics.nlg import bertscore_f1, corpus_bleu, preprocess_text, rouge, score_nlg, tokenize


def test_tokenize_lowercases_and_splits_punctuation():
    assert tokenize("  Hello, World! It's 5pm.") == ["hello", ",", "world", "!", "it", "'", "s", "5pm", "."]


def test_bleu_by_hand():
    hyp, ref = tokenize("the cat sat on the mat"), tokenize("the cat is on the mat")
    # unigrams 5/6, bigrams 3/5, trigrams 1/4, 4-grams 0/3; equal lengths, no brevity penalty
    assert corpus_bleu([hyp], [ref], 2) == pytest.approx(math.sqrt(5 / 6 * 3 / 5))
    assert corpus_bleu([hyp], [ref], 4) == pytest.approx(0.0, abs=1e-70)  # NLTK: a zero count becomes a tiny float
    # short hypothesis: p1 = p2 = 1, brevity penalty exp(1 - 3/2)
    assert corpus_bleu([["the", "cat"]], [["the", "cat", "sat"]], 2) == pytest.approx(math.exp(-0.5))


def test_bleu_agrees_with_sacrebleu():
    from sacrebleu.metrics import BLEU

    pairs = [("Could you tell me when the cough started?", "OK, could you tell me when the cough started?"),
             ("Do you smoke at all?", "Do you smoke cigarettes at all?"),
             ("Any fevers or chills recently?", "Have you had any fevers or chills?")]
    hyps = [tokenize(h) for h, _ in pairs]
    refs = [tokenize(r) for _, r in pairs]
    for n in (2, 4):
        sacre = BLEU(max_ngram_order=n, tokenize="none", smooth_method="none", force=True).corpus_score(
            [" ".join(h) for h in hyps], [[" ".join(r) for r in refs]])
        assert 100 * corpus_bleu(hyps, refs, n) == pytest.approx(sacre.score, abs=1e-6)


def test_preprocess_text_is_the_official_tokenisation():
    assert preprocess_text("\tWhen did it START?(roughly)  ") == "when did it start ? ( roughly )"


def test_rouge_by_hand():
    r = rouge(["the cat sat"], ["the cat"])
    assert r["rouge1"] == pytest.approx(0.8)  # P 2/3, R 1
    assert r["rougeL"] == pytest.approx(0.8)  # LCS 2


@pytest.mark.slow
def test_bertscore_and_score_nlg_with_real_minilm():
    f = bertscore_f1(["Do you smoke?", "Do you smoke?", ""], ["Do you smoke?", "Have you been smoking?", "Hi."])
    assert f[0] == pytest.approx(1.0, abs=1e-5)
    assert 0.3 < f[1] < 0.99
    assert f[2] == 0.0
    assert bertscore_f1(["Have you been smoking?"], ["Do you smoke?"])[0] == pytest.approx(f[1], abs=1e-5)

    examples = [Example("nlg", "d", 2, [], [], "Do you smoke?"), Example("nlg", "d", 4, [], [], "Any fever?")]
    r = score_nlg(examples, {("d", 2): "do you smoke ?", ("d", 4): None}, progress=False)
    assert r["format_errors"] == 1 and r["missing_predictions"] == 0
    assert r["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert r["bertscore_model"]["layer"] == 6 and r["bertscore_model"]["library"].startswith("bert-score ")
    assert r["rouge1"] == pytest.approx(0.5)  # 1.0 and 0.0 (empty prediction)
    # all 4 tokens right, refs 4 + 3 tokens; NLTK (so the official score, unlike sacrebleu) counts the empty
    # hypothesis as one n-gram of each order in the precision denominators: p1 = 4/5, p2 = 3/4
    assert r["bleu2"] == pytest.approx(100 * math.sqrt(4 / 5 * 3 / 4) * math.exp(1 - 7 / 4), abs=0.01)
    assert r["bertscore"] == pytest.approx((1.0 + 0.0) / 2, abs=1e-4)
