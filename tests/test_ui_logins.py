"""Logins kept in the session store: a restart keeps clinicians signed in, a second console process on the same
store accepts the same cookie, signing out deletes the login everywhere, expiry is the server's, and the store
holds the token's hash only. On SQLite and on the real PostgreSQL server, with real servers (the console in this
process, restarted, and ``python -m ui`` as a second process).
"""

from __future__ import annotations

import json
import time

import httpx
import pytest
from ui_fixtures import console_process, console_settings, login_cookie, running_console, signed_in_as, store_section
from vllm_fixtures import free_port

from agent.app.logins import TABLE, token_hash
from ui.auth import COOKIE

STORES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=STORES)
def store(request, tmp_path):
    pg = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    return store_section(request.param, tmp_path, pg)


def login_rows(app) -> list[tuple]:
    return app.console.reader.checkpoints.execute(f"SELECT token_hash, username, expires_at FROM {TABLE}")


def start_and_read(url: str, token: str) -> tuple[str, dict]:
    """dr_a starts an interview with the cookie alone (Gradio's plain HTTP API), and reads it back."""
    with httpx.Client(base_url=url, cookies={COOKIE: token}, timeout=60) as http:
        def call(name: str, data: list) -> object:
            event = http.post(f"/gradio_api/call/{name}", json={"data": data})
            assert event.status_code == 200, event.text
            text = http.get(f"/gradio_api/call/{name}/{event.json()['event_id']}").text
            assert "event: complete" in text, text
            return json.loads(text.split("data: ", 1)[1].splitlines()[0])[0]

        sid = call("start_session", ["", None])["session_id"]
        return sid, call("session_state", [sid])


def test_a_restart_and_a_second_process_keep_the_clinician_signed_in(store, tmp_path):
    settings = console_settings(tmp_path, session=store)
    with running_console(settings) as (url, app):
        token = login_cookie(url, "dr_a")
        assert signed_in_as(url, token) == "dr_a"
        sid, _ = start_and_read(url, token)
        rows = [r for r in login_rows(app) if r[1] == "dr_a"]
        assert (token_hash(token), "dr_a") in [(r[0], r[1]) for r in rows]
        assert not any(token in str(v) for r in login_rows(app) for v in r)  # the token itself is not stored
        if store["store"] == "sqlite":
            db = app.console.reader.checkpoints.settings.path  # the database and its write-ahead log, as bytes
            raw = b"".join(p.read_bytes() for p in (db, db.with_name(db.name + "-wal")) if p.exists())
            assert token.encode() not in raw and token_hash(token).encode() in raw

    # a new app instance (new console, new store connection, new Gradio) on the same store: the same cookie works
    with running_console(settings) as (url, app):
        assert signed_in_as(url, token) == "dr_a"
        with httpx.Client(base_url=url, cookies={COOKIE: token}, timeout=60) as http:
            assert http.get("/config").status_code == 200
            assert http.get("/", headers={"accept": "text/html"}).status_code == 200  # the page, not the login
        assert start_and_read(url, token)[1]["owner"] == "dr_a"
        assert sid in [s.session_id for s in app.console.sessions("dr_a")]

        # a second console process on the same store, at the same time, accepts the same login
        other = settings.model_copy(update={"port": free_port(18400, 18500)})
        with console_process(other, tmp_path) as url2:
            assert signed_in_as(url2, token) == "dr_a"
            with httpx.Client(base_url=url2, cookies={COOKIE: token}, timeout=60) as http:
                assert http.get(f"/export/{sid}/medhx-{sid}-meditod.json").status_code == 200
                out = http.get("/logout")  # signing out in one process ...
                assert out.status_code == 303
            assert signed_in_as(url2, token) is None
            assert signed_in_as(url, token) is None  # ... signs out in every process: the row is gone
            assert token_hash(token) not in [r[0] for r in login_rows(app)]
            second = login_cookie(url2, "dr_a")  # a login made in the second process works in the first
            assert signed_in_as(url, second) == "dr_a"


def test_expiry_is_enforced_by_the_server(store, tmp_path):
    settings = console_settings(tmp_path, session=store, login_ttl_hours=2 / 3600)  # two seconds
    with running_console(settings) as (url, app):
        login = httpx.post(f"{url}/login", data={"username": "dr_b", "password": "battery staple b"})
        token = login.cookies[COOKIE]
        assert "max-age=2" in login.headers["set-cookie"].lower()
        assert signed_in_as(url, token) == "dr_b"
        time.sleep(2.5)
        assert signed_in_as(url, token) is None  # the cookie sent anyway (a client ignoring max-age): refused
        login_cookie(url, "dr_a")  # a new login clears expired rows of everyone
        assert token_hash(token) not in [r[0] for r in login_rows(app)]
        assert all(r[2] > time.time() for r in login_rows(app))


def test_forged_and_malformed_cookies_are_refused(store, tmp_path):
    with running_console(console_settings(tmp_path, session=store)) as (url, _):
        token = login_cookie(url, "dr_a")
        for forged in ("", token[:-1], token + "x", token_hash(token), "x" * 5000):
            assert signed_in_as(url, forged) is None, forged[:40]
