"""What produced a result: installed package versions and content hashes of files and directories (models,
adapters), written next to training cards and benchmark reports."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def package_versions(packages: Iterable[str]) -> dict[str, str]:
    """Installed version of each package; packages that are not installed are left out."""
    out: dict[str, str] = {}
    for pkg in packages:
        with contextlib.suppress(PackageNotFoundError):
            out[pkg] = version(pkg)
    return out


def tree_hash(path: str | Path) -> str | None:
    """sha256 (16 hex digits) over a file or a directory's files (relative names and contents); None when it does
    not exist."""
    path = Path(path)
    if not path.exists():
        return None
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode())
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]
