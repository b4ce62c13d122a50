"""The local text encoder behind BERTScore and the embedding matcher (default: all-MiniLM-L6-v2, packaged offline)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agent.core.paths import default_encoder_path

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
            if (
                module.get("type", "").endswith("Transformer")
                and (path / module.get("path", "") / "config.json").exists()
            ):
                return path / module.get("path", "")
    raise FileNotFoundError(f"{path}: not a Hugging Face or sentence-transformers model directory (no config.json)")


def offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
