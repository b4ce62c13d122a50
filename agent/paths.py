"""Where medhx finds its own files: configs name paths relative to the repository root."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


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
