"""Exemplar retrieval for the in-context format: nearest training examples by their last exchange.

A faiss ``IndexFlatIP`` over L2-normalised sentence-transformers embeddings (inner
product = cosine). Embeddings are computed once and cached on disk under a key made of
the data hash, the task, the history window and the encoder, so a second build with the
same inputs encodes nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from agent.core.data import Dialogue, Example, data_hash, task_examples
from agent.core.paths import cache_root, default_encoder_path

log = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    return cache_root() / "retrieval"


def exchange_text(example: Example) -> str:
    """What is embedded: the example's last exchange (doctor and patient turn)."""
    return "\n".join(f"{speaker}: {text}" for speaker, text in example.last_exchange)


def _encoder_id(encoder_path: str) -> str:
    """The encoder's resolved path plus its config, so a different model at the same path gets a new key."""
    p = Path(encoder_path)
    cfg = p / "config.json"
    extra = cfg.read_text() if cfg.is_file() else ""
    return f"{p.resolve() if p.exists() else encoder_path}\n{extra}"


def cache_key(dialogues: list[Dialogue], task: str, history: int | None, encoder_path: str) -> str:
    h = hashlib.sha256(f"{data_hash(dialogues)}|{task}|{history}|{_encoder_id(encoder_path)}".encode())
    return h.hexdigest()[:20]


def load_encoder(encoder_path: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    if not Path(encoder_path).exists():
        raise FileNotFoundError(f"encoder {encoder_path!r} is not a local sentence-transformers directory")
    return SentenceTransformer(encoder_path, device="cpu")


def encode(encoder: Any, texts: list[str], batch_size: int = 32, progress: bool = False) -> np.ndarray:
    emb = encoder.encode(
        texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=progress
    )
    return np.asarray(emb, dtype=np.float32)


class ExemplarIndex:
    """Top-k nearest training examples of one task; the query's own dialogue is never returned."""

    def __init__(self, examples: list[Example], embeddings: np.ndarray, encoder_path: str, encoded_at_build: int):
        import faiss

        if len(examples) != embeddings.shape[0]:
            raise ValueError(f"{len(examples)} examples but {embeddings.shape[0]} embeddings")
        self.examples = examples
        self.encoder_path = encoder_path
        self.encoded_at_build = encoded_at_build  # 0 when the embeddings came from the cache
        self.index = faiss.IndexFlatIP(embeddings.shape[1])
        self.index.add(np.ascontiguousarray(embeddings, dtype=np.float32))
        self._per_dialogue = Counter(e.dialog_id for e in examples)
        self._encoder: Any = None

    @classmethod
    def build(
        cls,
        dialogues: list[Dialogue],
        task: str,
        history: int | None = 4,
        encoder_path: str | None = None,
        cache_dir: str | Path | None = None,
        batch_size: int = 32,
    ) -> ExemplarIndex:
        encoder_path = encoder_path or str(default_encoder_path())
        examples = task_examples(task, dialogues, history)  # type: ignore[arg-type]
        if not examples:
            raise ValueError(f"no {task} examples in the given dialogues to retrieve from")
        ids = [[e.dialog_id, e.uttr_id] for e in examples]
        cache = Path(cache_dir) if cache_dir else default_cache_dir()
        key = cache_key(dialogues, task, history, encoder_path)
        emb_file, ids_file = cache / f"{key}.npy", cache / f"{key}.ids.json"
        if emb_file.is_file() and ids_file.is_file() and json.loads(ids_file.read_text()) == ids:
            log.info("retrieval cache hit %s", emb_file)
            return cls(examples, np.load(emb_file), encoder_path, encoded_at_build=0)
        encoder = load_encoder(encoder_path)
        embeddings = encode(encoder, [exchange_text(e) for e in examples], batch_size=batch_size, progress=True)
        cache.mkdir(parents=True, exist_ok=True)
        tmp = cache / f"{key}.tmp.npy"
        np.save(tmp, embeddings)
        tmp.replace(emb_file)
        ids_file.write_text(json.dumps(ids))
        index = cls(examples, embeddings, encoder_path, encoded_at_build=len(examples))
        index._encoder = encoder
        return index

    def search(self, example: Example, k: int = 5) -> list[tuple[Example, float]]:
        """``(exemplar, cosine)`` pairs, most similar first, none from ``example``'s dialogue."""
        if k <= 0:
            return []
        if self._encoder is None:
            self._encoder = load_encoder(self.encoder_path)
        query = encode(self._encoder, [exchange_text(example)])
        n = min(self.index.ntotal, k + self._per_dialogue.get(example.dialog_id, 0))
        scores, idx = self.index.search(query, n)
        out = []
        for score, i in zip(scores[0], idx[0], strict=True):
            if i < 0 or self.examples[i].dialog_id == example.dialog_id:
                continue
            out.append((self.examples[i], float(score)))
            if len(out) == k:
                break
        return out

    def top_k(self, example: Example, k: int = 5) -> list[Example]:
        return [e for e, _ in self.search(example, k)]
