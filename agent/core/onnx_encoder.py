"""A sentence-transformers model (BERT-style, mean pooling, unit length) run by ONNX Runtime on the CPU.

Why: the clinical NLU's second stage and the red-flag screen embed about ten clauses a turn with all-MiniLM-L6-v2,
and that was most of a turn's time. ONNX Runtime runs the same network about 1.4x faster on one core than torch's
eager mode (7 texts of 18 tokens: 40 -> 28 ms), and it runs a whole batch in one call that releases the interpreter
lock, where torch's eager forward takes it back for every operator: interviews served by threads of one process
(the console) no longer queue for the lock while one of them embeds.

The graph is exported once per model (torch's TorchScript-based exporter, from the model's own weights), with mean
pooling and normalisation inside it, kept under the cache directory, and checked against the torch model on texts
of other batch sizes and lengths before it is used: a row further than :data:`MAX_DIFFERENCE` from torch's, or any
failure to export or load, leaves the caller on torch (``None`` from :func:`load`), with the reason logged.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agent.core.paths import cache_root

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

log = logging.getLogger(__name__)

MAX_DIFFERENCE = 1e-4  # per embedding component; seen: 1.6e-7 (float rounding)
# texts of other shapes than the export's: one short text alone, and a batch with padding and a long text
_CHECK_TEXTS = (["chest pain"],
                ["I get short of breath on the stairs", "no",
                 "it started three days ago, a tight pain in the middle of my chest that goes into my left arm and "
                 "my jaw, and I was sweating and felt sick with it, and it has not gone away since then at all"])


class OnnxSentenceEncoder:
    """``encode(texts)`` -> unit-length float32 rows, as the sentence-transformers model gives them."""

    def __init__(self, session: Any, tokenizer: Any, max_length: int):
        self.session = session
        self.tokenizer = tokenizer
        self.max_length = max_length

    def encode(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                             return_tensors="np")
        feed = {"input_ids": enc["input_ids"].astype(np.int64),
                "attention_mask": enc["attention_mask"].astype(np.int64)}
        return np.asarray(self.session.run(None, feed)[0], dtype=np.float32)


def supported(model: SentenceTransformer) -> str | None:
    """Why the model cannot run this way, or None: a transformer, then mean pooling, then normalisation."""
    names = [type(m).__name__ for m in model]
    if names[:2] != ["Transformer", "Pooling"] or names[2:] not in ([], ["Normalize"]):
        return f"modules {names}"
    pooling = model[1]
    mode = getattr(pooling, "pooling_mode", None)  # sentence-transformers 6; 5 had get_pooling_mode_str()
    if mode is None and callable(getter := getattr(pooling, "get_pooling_mode_str", None)):
        mode = getter()
    if mode != "mean":
        return f"pooling {mode or 'unknown'}"
    if "Normalize" not in names:
        return "no normalisation"
    return None


def load(model: SentenceTransformer, model_path: Path, threads: int) -> OnnxSentenceEncoder | None:
    """The ONNX Runtime twin of ``model`` (exported on first use and kept), or None (logged) where it cannot be
    used: the caller then stays on torch."""
    try:
        import onnxruntime as ort
    except ImportError:
        log.info("onnxruntime is not installed: the sentence encoder runs on torch")
        return None
    if (why := supported(model)) is not None:
        log.info("sentence encoder %s stays on torch (%s)", model_path, why)
        return None
    path = _graph_path(model_path)
    try:
        if not path.exists():
            _export(model, path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        twin = OnnxSentenceEncoder(session, model.tokenizer, int(model.max_seq_length or 512))
        worst = max(float(np.abs(twin.encode(t) - _torch_rows(model, t)).max()) for t in _CHECK_TEXTS)
    except Exception as exc:  # noqa: BLE001 - any failure leaves the encoder on torch, which is always right
        log.warning("sentence encoder %s stays on torch: ONNX export or load failed: %s", model_path, exc)
        return None
    if worst > MAX_DIFFERENCE:
        log.warning("sentence encoder %s stays on torch: the ONNX graph differs by %.2g", model_path, worst)
        return None
    return twin


def _torch_rows(model: SentenceTransformer, texts: list[str]) -> np.ndarray:
    rows = model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    return np.asarray(rows, dtype=np.float32)


def _graph_path(model_path: Path) -> Path:
    """One graph per model directory and its weights (path, size and time of every file)."""
    h = hashlib.sha256(str(model_path.resolve()).encode())
    for f in sorted(p for p in model_path.rglob("*") if p.is_file()):
        st = f.stat()
        h.update(f"{f.relative_to(model_path)}|{st.st_size}|{st.st_mtime_ns}".encode())
    return cache_root() / "encoders" / f"{h.hexdigest()[:24]}.onnx"


def _export(model: SentenceTransformer, path: Path) -> None:
    import warnings

    import torch

    class Pooled(torch.nn.Module):
        """The transformer, mean pooling over the real tokens, unit length: the whole sentence-transformers
        pipeline in one graph."""

        def __init__(self, network: torch.nn.Module):
            super().__init__()
            self.network = network

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            hidden = self.network(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=-1)

    network = model[0].auto_model
    assert isinstance(network, torch.nn.Module), type(network)
    network.eval()
    example = model.tokenizer(["a short one", "and a somewhat longer example sentence"], padding=True,
                              return_tensors="pt")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    axes = {0: "batch", 1: "tokens"}
    with warnings.catch_warnings(), torch.inference_mode():
        # the tracer's notes on the attention mask's Python-side checks: the graph is checked on other shapes
        warnings.simplefilter("ignore")
        torch.onnx.export(Pooled(network).eval(), (example["input_ids"], example["attention_mask"]), str(tmp),
                          input_names=["input_ids", "attention_mask"], output_names=["embedding"],
                          dynamic_axes={"input_ids": axes, "attention_mask": axes}, opset_version=17, dynamo=False)
    tmp.replace(path)
