"""The shipped sentence encoder (all-MiniLM-L6-v2) as the red-flag screen and the NLU's second stage use it: on ONNX
Runtime it gives torch's rows (so every threshold chosen on torch holds), grouping texts by length changes no row,
and a model the ONNX path does not cover stays on torch."""

from __future__ import annotations

import numpy as np
import pytest

from agent.core import onnx_encoder
from agent.core.paths import default_encoder_path
from agent.core.semantic import Encoder

# patient words of other shapes: one word, a clause, a long run-on turn, a question's names
TEXTS = ["dizzy", "my ankles have swollen up", "no", "I haven't been able to keep anything down since Tuesday",
         "well it started when I was at work, I went to stand up and the room was spinning and I had to hold on to "
         "the desk and then I was sick in the toilets and my colleague drove me home and I have been in bed since",
         "shortness of breath", "the pain goes through to my back", "urinary frequency"]


@pytest.fixture(scope="module")
def encoders() -> tuple[Encoder, Encoder]:
    return Encoder(backend="onnx"), Encoder(backend="torch")


def test_onnx_rows_are_torch_rows(encoders: tuple[Encoder, Encoder]) -> None:
    fast, plain = encoders
    assert fast.runs_on == "onnx"  # onnxruntime is a dependency: a missing one is a failure here, not a skip
    assert plain.runs_on == "torch"
    a, b = fast.embed(TEXTS), plain.embed(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384)
    assert float(np.abs(a - b).max()) < 1e-5
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)


def test_grouping_by_length_changes_no_row(encoders: tuple[Encoder, Encoder]) -> None:
    """A turn's texts are encoded in groups of similar length (less padding): each row is the row of the text
    encoded alone, and rows come back in the order asked, repeats included."""
    for enc in encoders:
        together = enc.embed([*TEXTS, TEXTS[0]])
        alone = np.stack([Encoder(backend=enc.backend)._rows([t], batch_size=1)[0] for t in TEXTS])
        assert float(np.abs(together[:-1] - alone).max()) < 1e-5
        assert np.array_equal(together[-1], together[0])


def test_references_on_disk_match_the_live_rows(encoders: tuple[Encoder, Encoder]) -> None:
    fast, _ = encoders
    kept = fast.embed_references(TEXTS[:4])
    assert float(np.abs(kept - fast.embed(TEXTS[:4])).max()) < 1e-5


def test_a_model_it_does_not_cover_stays_on_torch() -> None:
    """CLS pooling is not what the exported graph computes: the check refuses it before any export."""
    from sentence_transformers import SentenceTransformer, models

    word = models.Transformer(str(default_encoder_path()))
    model = SentenceTransformer(modules=[word, models.Pooling(word.get_embedding_dimension(), "cls"),
                                         models.Normalize()], device="cpu")
    assert onnx_encoder.supported(model) == "pooling cls"
    assert onnx_encoder.load(model, default_encoder_path(), threads=1) is None


def test_an_unknown_backend_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="expected 'onnx' or 'torch'"):
        Encoder(backend="tensorrt")


def test_interviews_in_threads_embed_at_once(encoders: tuple[Encoder, Encoder]) -> None:
    """The console and the simulator run interviews in threads of one process, all on one encoder (and one
    tokenizer): embedding from many threads at once gives each the rows it gets alone (a tokenizer call with another
    padding setting had made concurrent encodes fail)."""
    from concurrent.futures import ThreadPoolExecutor

    for enc in encoders:
        batches = [[f"{t} ({i})" for t in TEXTS[i % 3:]] for i in range(48)]
        alone = [Encoder(backend=enc.backend)._rows(b, batch_size=64) for b in batches[:3]]
        with ThreadPoolExecutor(max_workers=8) as pool:
            got = list(pool.map(enc.embed, batches))
        assert all(g.shape == (len(b), 384) for g, b in zip(got, batches, strict=True))
        for g, a in zip(got[:3], alone, strict=True):
            assert float(np.abs(g - a).max()) < 1e-5
