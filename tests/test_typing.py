"""The code checks CI keeps: ``mypy --strict`` on the foundation (``agent/core``, configured in ``[tool.mypy]``)
and ``ruff check`` with the rules in ``[tool.ruff.lint]``. A missing tool fails (both are in the dev extra)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_the_foundation_passes_mypy_strict():
    result = _run("mypy", "--strict", "agent/core")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


def test_ruff_passes():
    result = _run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr
