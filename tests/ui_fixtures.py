"""Helpers for the console tests: console settings on a temporary store, and the real app served on loopback.

The console runs in the test process (uvicorn in a thread) with the embedded default agent (clinical NLU,
questionnaire policy, template NLG: no model server), so these tests are quick and need nothing but the package.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import yaml
from graph_fixtures import REPO, medhx_env
from starlette.routing import Mount, WebSocketRoute
from vllm_fixtures import free_port

from ui.auth import COOKIE, Credentials, hash_password
from ui.server import BackgroundServer, ConsoleApp, create_app
from ui.settings import UISettings

PASSWORDS = {"dr_a": "correct horse a", "dr_b": "battery staple b"}
HASHES = {user: hash_password(pw) for user, pw in PASSWORDS.items()}
DEFAULT_AGENT = REPO / "configs" / "default.yaml"
RED_FLAG_LINE = "I have been coughing up blood"
SCRIPT = ["I have had a cough for two weeks, worse at night", RED_FLAG_LINE, "I smoke a pack a day"]


def write_preset(path: Path, **changes: object) -> Path:
    """The default agent config with ``changes`` (top-level sections replaced), written to ``path``; its relative
    paths made absolute so the copy works from anywhere."""
    from policies.agent_config import load_config

    cfg = load_config(DEFAULT_AGENT)
    cfg.update(changes)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def console_settings(tmp_path: Path, presets: list[Path] | None = None, **changes: object) -> UISettings:
    values: dict = {"host": "127.0.0.1", "port": free_port(18300, 18400), "agent_config": str(DEFAULT_AGENT),
                    "presets": [str(p) for p in presets] if presets is not None else [str(DEFAULT_AGENT)],
                    "session": {"store": "sqlite", "dir": str(tmp_path / "store")}, "users": HASHES}
    values.update(changes)
    return UISettings.model_validate(values)


@contextlib.contextmanager
def running_console(settings: UISettings, environ: dict | None = None) -> Iterator[tuple[str, ConsoleApp]]:
    """The console app served at ``http://127.0.0.1:PORT`` until the block ends."""
    console_app = create_app(settings, Credentials.from_settings(settings, environ={} if environ is None else environ))
    try:
        with BackgroundServer(console_app.app, settings.host, settings.port) as url:
            yield url, console_app
    finally:
        console_app.console.close()


def store_section(kind: str, tmp_path: Path, postgres_url: str | None = None) -> dict:
    """The console's ``ui.session`` for a test on SQLite (in ``tmp_path``) or on the real PostgreSQL server."""
    if kind == "sqlite":
        return {"store": "sqlite", "dir": str(tmp_path / "store")}
    return {"store": "postgres", "postgres_url": postgres_url}


def routes(app, prefix: str = "") -> list[tuple[str, str]]:
    """Every (method, path) the app answers, mounted apps included (HEAD left out: GET answers it)."""
    out = []
    for r in app.routes:
        if isinstance(r, Mount):
            inner = getattr(r.app, "routes", None)
            out += routes(r.app, prefix + r.path) if inner is not None else [("GET", prefix + r.path + "/x")]
        elif isinstance(r, WebSocketRoute):
            out.append(("WEBSOCKET", prefix + r.path))
        else:
            out += [(m, prefix + r.path) for m in sorted(r.methods or {"GET"}) if m != "HEAD"]
    return out


def path_params(path: str) -> list[str]:
    """The parameter names of a route path (``/x/{session_hash}/{path:path}`` -> session_hash, path)."""
    return re.findall(r"\{(\w+)(?::\w+)?\}", path)


def fill(path: str, values: dict[str, str], default: str = "x") -> str:
    """``path`` with each parameter replaced by its value in ``values`` (``default`` for the others)."""
    return re.sub(r"\{(\w+)(?::\w+)?\}", lambda m: values.get(m.group(1), default), path) or "/"


def login_cookie(url: str, user: str) -> str:
    """Sign in through the login form; the login cookie's token."""
    r = httpx.post(f"{url}/login", data={"username": user, "password": PASSWORDS[user]}, timeout=30)
    assert r.status_code == 200, r.text
    return r.cookies[COOKIE]


def signed_in_as(url: str, token: str) -> str | None:
    """Who the console says a login cookie signs in (None: the gate refused it)."""
    r = httpx.get(f"{url}/gradio_api/user", cookies={COOKIE: token}, timeout=30)
    if r.status_code == 401:
        return None
    assert r.status_code == 200, (r.status_code, r.text)
    return r.json()


@contextlib.contextmanager
def console_process(settings: UISettings, tmp_path: Path) -> Iterator[str]:
    """The console as its own process (``python -m ui``), from a console config written with ``settings``: another
    console on the same store, as a second replica would be."""
    config = tmp_path / f"ui-{settings.port}.yaml"
    config.write_text(yaml.safe_dump({"ui": settings.model_dump(mode="json")}, sort_keys=False))
    log = open(tmp_path / f"ui-{settings.port}.log", "w")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen([sys.executable, "-m", "ui", "--ui-config", str(config)], cwd=REPO, env=medhx_env(),
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://{settings.host}:{settings.port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, (tmp_path / f"ui-{settings.port}.log").read_text()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/login", timeout=5).status_code == 200:
                    break
            assert time.monotonic() < deadline, "the console process did not start"
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
