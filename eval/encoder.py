"""The local text encoder behind BERTScore and the embedding matcher (default: all-MiniLM-L6-v2, packaged offline)."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from agent.paths import default_encoder_path

DEFAULT_ENCODER_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def encoder_name(path: str | Path | None) -> str:
    if path is None or Path(path).resolve() == default_encoder_path().resolve():
        return DEFAULT_ENCODER_NAME
    return str(path)


def transformer_dir(path: str | Path) -> Path:
    """The Hugging Face model directory of a plain HF dir or of a sentence-transformers dir (its Transformer module)."""
    path = Path(path)
    if (path / "config.json").exists():
        return path
    modules = path / "modules.json"
    if modules.exists():
        for module in json.loads(modules.read_text()):
            if module.get("type", "").endswith("Transformer") and (path / module.get("path", "") / "config.json").exists():
                return path / module.get("path", "")
    raise FileNotFoundError(f"{path}: not a Hugging Face or sentence-transformers model directory (no config.json)")


def offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class TokenEncoder:
    """Contextual token embeddings (last layer, special tokens dropped, L2-normalised), as BERTScore uses them."""

    def __init__(self, path: str | Path | None = None, batch_size: int = 32):
        offline()
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.path = Path(path) if path is not None else default_encoder_path()
        model_dir = transformer_dir(self.path)
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        self.model = AutoModel.from_pretrained(model_dir, local_files_only=True).eval()
        self.batch_size = batch_size
        self._torch = torch

    def encode(self, texts: list[str]) -> list:
        torch = self._torch
        out = []
        for start in range(0, len(texts), self.batch_size):
            batch = self.tokenizer(
                texts[start : start + self.batch_size], padding=True, truncation=True,
                return_tensors="pt", return_special_tokens_mask=True,
            )
            special = batch.pop("special_tokens_mask").bool()
            with torch.no_grad():
                hidden = self.model(**batch).last_hidden_state
            keep = batch["attention_mask"].bool() & ~special
            for i in range(hidden.shape[0]):
                out.append(torch.nn.functional.normalize(hidden[i][keep[i]], dim=-1))
        return out


@lru_cache(maxsize=2)
def token_encoder(path: Path | None = None) -> TokenEncoder:
    """One loaded encoder per directory per process (tests and the harness score repeatedly)."""
    return TokenEncoder(path)
