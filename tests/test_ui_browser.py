"""The clinician console in a real browser: Debian's Chromium driven by Playwright (no browser download).

One clinician's whole visit: sign in, run three turns (the state panel, the clinician's summary and the note
update, the red-flag banner appears after "coughing up blood"), export (files served by the console's own route to
the clinician who owns the interview: another signed-in clinician gets 404, and the owner's access log shows the
attempt), turn review on and send an edited doctor turn, reload the page and find the interview resumed, open it
from the sidebar, sign out. And a restart: the console stops and a new one starts on the same store and port; the
open page reloads signed in, on the same cookie.
Screenshots go to the test's tmp directory; ``MEDHX_UPDATE_SCREENSHOT=1`` also writes docs/console.png.

Browser and helpers: ``tests/browser_fixtures.py`` (Debian's Chromium through Playwright; under CI a missing browser
fails).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from urllib.parse import urljoin

import pytest
from browser_fixtures import send, status_says
from graph_fixtures import REPO
from ui_fixtures import PASSWORDS, RED_FLAG_LINE, SCRIPT, console_settings, running_console

from agent.core.data import load_dialogs_file

pytestmark = pytest.mark.browser


def gradio_copies(needle: bytes) -> list[Path]:
    """Files under Gradio's temporary (upload) directory that hold ``needle``."""
    from gradio.utils import get_upload_folder

    root = Path(get_upload_folder())
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()] if root.exists() else []


def sign_in(page, url: str, user: str) -> None:
    if not page.url.endswith("/login"):
        page.goto(url)
    page.fill("#username", user)
    page.fill("#password", PASSWORDS[user])
    page.click("button[type=submit]")
    status_says(page, "Ready.")
    assert f"Signed in as {user}" in page.locator("#mhx-header").inner_text()


def test_clinician_visit(browser, tmp_path):
    playwright, chromium = browser
    shots = tmp_path / "screenshots"
    shots.mkdir()
    errors: list[str] = []
    failed: list[tuple[int, str]] = []  # every HTTP error the page met
    with running_console(console_settings(tmp_path)) as (url, _):
        context = chromium.new_context(viewport={"width": 1600, "height": 1100}, accept_downloads=True)
        page = context.new_page()
        page.on("response", lambda r: failed.append((r.status, r.url)) if r.status >= 400 else None)
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "Failed to load" not in m.text
                else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            sid = visit(playwright, page, url, tmp_path, shots)
        finally:
            context.close()  # before the server stops: no stream left open
    assert not errors, errors
    assert failed == [(401, f"{url}/login")], failed  # only the wrong password
    assert not gradio_copies(sid.encode()), "an export went through Gradio's temporary directory"
    if os.environ.get("MEDHX_UPDATE_SCREENSHOT"):
        (REPO / "docs").mkdir(exist_ok=True)
        shutil.copy(shots / "console.png", REPO / "docs" / "console.png")
    assert all(Path(shots / name).stat().st_size > 10_000 for name in ("login.png", "console.png", "review.png"))


def visit(playwright, page, url: str, tmp_path: Path, shots: Path) -> str:
    """One clinician's visit, step by step (each step waits for the status line to say it is done); the id of the
    interview it ran."""
    # sign in: the console itself is never served before login
    page.goto(url)
    assert page.url.endswith("/login")
    page.screenshot(path=shots / "login.png")
    page.fill("#username", "dr_a")
    page.fill("#password", "not the password")
    page.click("button[type=submit]")
    page.get_by_text("Unknown username or wrong password").wait_for()
    sign_in(page, url, "dr_a")

    # three turns: the state panel and the note follow, the banner appears at the red-flag answer
    page.locator("#mhx-new").click()
    status_says(page, "started")
    sid = page.locator("#mhx-sessions input:checked").get_attribute("value")
    assert sid and page.locator("#mhx-note-box").get_by_text(f"session {sid}").is_visible()
    send(page, SCRIPT[0], "Doctor turn 2 sent")
    panel = page.locator("#mhx-state-panel")
    cough = panel.locator(".mhx-item", has_text="coughing")
    assert "positive" in cough.locator(".mhx-badge").inner_text()
    assert "new this turn" in cough.inner_text() and "two weeks" in cough.inner_text()
    assert "coughing" in page.locator("#mhx-note-box").inner_text()
    assert not page.locator("#mhx-red-flags").is_visible()

    send(page, RED_FLAG_LINE, "Doctor turn 4 sent")
    banner = page.locator("#mhx-red-flags")
    banner.wait_for()
    assert "RED FLAG · URGENT" in banner.inner_text() and "hemoptysis" in banner.inner_text()
    assert "new this turn" not in cough.inner_text()  # changed last turn, not this one
    assert "new this turn" in panel.locator(".mhx-item", has_text="hemoptysis").inner_text()

    send(page, SCRIPT[2], "Doctor turn 6 sent")
    smoking = panel.locator(".mhx-group[data-slot=habit] .mhx-item", has_text="smoking")
    assert "a pack a day" in smoking.inner_text() and "new this turn" in smoking.inner_text()
    assert "Social history" in page.locator("#mhx-note-box").inner_text()
    summary = page.locator("#mhx-summary-box")  # the clinician's panel: ranked considerations, never in the chat
    top = summary.locator("ol > li").first.inner_text()
    assert top.startswith("pulmonary neoplasm") and "for: hemoptysis; smoking" in top
    assert page.locator("#mhx-chat").get_by_text("pulmonary neoplasm").count() == 0
    page.locator("#mhx-timing").click()  # per-node latency, on demand
    page.locator("#mhx-timing").get_by_text("nlu").first.wait_for()
    page.screenshot(path=shots / "console.png", full_page=True)

    # export: the files parse, and are served by the console's own route to the owner only
    page.locator("#mhx-export-json").click()
    status_says(page, "meditod.json")
    href = urljoin(page.url, page.locator("#mhx-files a[download$='-meditod.json']").get_attribute("href"))
    assert "/gradio_api/" not in href  # never Gradio's file route
    with page.expect_download() as download:  # a click downloads it, as a clinician would
        page.locator("#mhx-files a").click()
    exported = tmp_path / "export.json"
    download.value.save_as(exported)
    dialog = load_dialogs_file(exported)[sid]
    assert [u.text for u in dialog.utterances if u.speaker == "patient"] == SCRIPT
    anonymous = playwright.request.new_context()
    assert anonymous.get(href).status == 401
    anonymous.dispose()
    other = page.context.browser.new_context()  # another clinician, signed in in their own browser
    other_page = other.new_page()
    sign_in(other_page, url, "dr_b")
    assert other_page.request.get(href).status == 404
    other.close()
    page.locator("#mhx-export-html").click()
    status_says(page, "note.html")
    html_href = page.locator("#mhx-files a[download$='-note.html']").get_attribute("href")
    assert "Presenting complaint" in page.request.get(urljoin(page.url, html_href)).text()
    page.locator("#mhx-refresh").click()  # the owner's access log: the downloads, and dr_b's refused attempt
    status_says(page, "List refreshed")
    page.locator("#mhx-access-log").click()
    access = page.locator("#mhx-access-log")
    access.get_by_text("downloaded (meditod)").wait_for()
    assert "refused" in access.inner_text() and "dr_b" in access.inner_text()
    assert not any(line in access.inner_text() for line in SCRIPT)

    # review on: the planned turn waits; the clinician edits it and sends it
    page.locator("#mhx-modules").click()
    page.locator("#mhx-review-toggle input").check()
    status_says(page, "review on")
    send(page, "I get short of breath when I climb stairs", "turn 8 awaits your review")
    assert page.locator("#mhx-approve").is_visible()
    assert json.loads(page.locator("#mhx-actions .cm-content").inner_text())  # the planned CMAS actions
    edited = "How many flights of stairs can you climb before you need to stop?"
    page.locator("#mhx-utterance textarea").fill(edited)
    page.locator("#mhx-edit").click()
    status_says(page, "Review of doctor turn 8 recorded (edit by dr_a)")
    assert page.locator("#mhx-chat").get_by_text(edited).is_visible()
    assert not page.locator("#mhx-approve").is_visible()
    page.locator("#mhx-review-log").click()
    page.locator("#mhx-review-log").get_by_text("dr_a").wait_for()  # who decided, and when
    page.screenshot(path=shots / "review.png", full_page=True)

    # reload: the interview is resumed; another one started; the first reopened from the sidebar
    page.reload()
    status_says(page, f"Resumed interview {sid}")
    assert page.locator("#mhx-chat").get_by_text(edited).is_visible()
    assert page.locator("#mhx-red-flags").is_visible()
    page.locator("#mhx-new").click()
    status_says(page, "started")
    other = page.locator("#mhx-sessions input:checked").get_attribute("value")
    assert other != sid and not page.locator("#mhx-chat").get_by_text(edited).is_visible()
    page.locator("#mhx-sessions label", has_text=sid).click()
    status_says(page, f"Resumed interview {sid}")
    assert page.locator("#mhx-chat").get_by_text(edited).is_visible()

    # delete the other interview from the sidebar (the browser asks first)
    page.locator("#mhx-sessions label", has_text=other).click()
    status_says(page, f"Resumed interview {other}")
    page.once("dialog", lambda d: d.accept())
    page.locator("#mhx-delete").click()
    status_says(page, f"Deleted interview {other}")
    assert page.locator("#mhx-sessions label", has_text=other).count() == 0
    assert page.locator("#mhx-sessions label", has_text=sid).count() == 1

    page.get_by_text("Sign out").click()
    page.wait_for_url("**/login")
    return sid


def test_signed_in_after_a_restart(browser, tmp_path):
    """The console stops and a new one (new process state, same store, same port) starts: the open page reloads
    signed in, on the cookie it had, and opens its interview; signing out then ends that login."""
    _, chromium = browser
    settings = console_settings(tmp_path)
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    try:
        with running_console(settings) as (url, _):
            sign_in(page, url, "dr_a")
            page.locator("#mhx-new").click()
            status_says(page, "started")
            sid = page.locator("#mhx-sessions input:checked").get_attribute("value")
            cookie = next(c for c in context.cookies() if c["name"] == "medhx_console")
            page.goto("about:blank")  # no stream left open while the server stops
        with running_console(settings) as (url, _):
            page.goto(url)
            status_says(page, "Ready.")
            assert not page.url.endswith("/login")
            assert "Signed in as dr_a" in page.locator("#mhx-header").inner_text()
            # the tab's memory of its last interview is Gradio's BrowserState, whose key is per app instance: the
            # interview is picked from the list again
            page.locator("#mhx-sessions label", has_text=sid).click()
            status_says(page, f"Resumed interview {sid}")
            assert next(c for c in context.cookies() if c["name"] == "medhx_console")["value"] == cookie["value"]
            page.get_by_text("Sign out").click()
            page.wait_for_url("**/login")
            page.goto(url)
            assert page.url.endswith("/login")
            page.goto("about:blank")
    finally:
        context.close()
