"""Debian's Chromium driven by Playwright (no browser download), for the console's browser tests.

Installed by ``bash .ci/install.sh --test`` (apt ``chromium``, pip ``playwright``). Under CI a missing browser fails.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator

import pytest

CHROMIUM = os.environ.get("MEDHX_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 30_000


def require(missing: list[str]) -> None:
    """Skip (fail under CI) when something the test needs is not installed."""
    if missing:
        message = f"{', '.join(missing)} not installed: bash .ci/install.sh --test installs it"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def chromium() -> Iterator[tuple]:
    """``(playwright, browser)`` while the generator runs: the ``browser`` fixture of tests/conftest.py."""
    require([what for what, ok in (("playwright (pip)", importlib.util.find_spec("playwright") is not None),
                                   (CHROMIUM, shutil.which(CHROMIUM) is not None)) if not ok])
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield p, b
        finally:
            b.close()


def status_says(page, text: str, timeout_ms: int = TIMEOUT_MS) -> None:
    """Wait until the status line says ``text``; fail with what it says instead if it turns to an error."""
    status = page.locator("#mhx-status")
    try:
        status.get_by_text(text).wait_for(timeout=timeout_ms)
    except Exception:
        pytest.fail(f"status never said {text!r}; it says {status.inner_text()!r}")


def send(page, text: str, expect: str) -> None:
    page.locator("#mhx-patient textarea").fill(text)
    page.locator("#mhx-send").click()
    status_says(page, expect)
