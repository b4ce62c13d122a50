"""Who may use the console: credentials, login sessions, and the gate in front of every route.

Credentials come from the console config (``ui.users`` or ``ui.users_file``: username -> scrypt hash, so no
password is stored in a file) and from ``$MEDHX_USER`` / ``$MEDHX_PASSWORD`` (hashed in memory at start).
``python -m ui.auth`` prints the hash of a password to paste into a config.

Gradio's own ``auth=`` leaves routes open (the page shell, static files, ``/gradio_api/user``, ``/token``,
``/app_id``, ``/reset``, ``/cancel``, the heartbeat, ...), so the console does not rely on it: the Blocks are mounted
in the console's own FastAPI app behind :class:`RequireLogin`, an ASGI middleware that answers every request without
a valid login cookie with 401 (or a redirect to ``/login`` for a page), before Gradio sees it. The only open routes
are the login form and logout. Gradio learns who is logged in through its ``auth_dependency`` hook
(:meth:`LoginSessions.user_of`), so handlers read the clinician from ``gr.Request.username``; behind the gate,
:class:`ui.owners.QueueOwners` keeps each clinician to their own Gradio session hashes and event ids.

Logins live in the session store (:mod:`agent.app.logins`: the token's SHA-256, never the token; an expiry the
server checks; signing out deletes the row), so a restart keeps clinicians signed in and several console processes
on one store accept the same cookie.
"""

from __future__ import annotations

import asyncio
import base64
import getpass
import hashlib
import hmac
import html
import os
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool
from starlette.requests import HTTPConnection

from agent.app.logins import LoginStore
from ui.owners import USER_SCOPE_KEY, QueueOwners
from ui.settings import UISettings

USER_ENV = "MEDHX_USER"
PASSWORD_ENV = "MEDHX_PASSWORD"
COOKIE = "medhx_console"
OPEN_PATHS = frozenset({"/login", "/logout"})

# scrypt at n=2^14, r=8, p=1: about 50 ms and 16 MiB a check, the usual interactive-login setting.
SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_LEN = 2**14, 8, 1, 32
FAILED_LOGIN_DELAY_S = 0.5


# --------------------------------------------------------------------------- password hashes


def hash_password(password: str, salt: bytes | None = None) -> str:
    """``scrypt$N$r$p$salt$hash`` (base64): what ``ui.users`` and ``ui.users_file`` store."""
    if not password:
        raise ValueError("an empty password cannot be hashed")
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=SCRYPT_LEN)
    b64 = base64.b64encode
    return f"scrypt${SCRYPT_N}${SCRYPT_R}${SCRYPT_P}${b64(salt).decode()}${b64(digest).decode()}"


def _parse_hash(stored: str) -> tuple[int, int, int, bytes, bytes]:
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != "scrypt":
        raise ValueError("not a password hash (expected scrypt$N$r$p$salt$hash; make one with `python -m ui.auth`)")
    try:
        n, r, p = (int(x) for x in parts[1:4])
        return n, r, p, base64.b64decode(parts[4], validate=True), base64.b64decode(parts[5], validate=True)
    except ValueError as exc:
        raise ValueError(f"malformed password hash: {exc}") from None


def verify_password(password: str, stored: str) -> bool:
    n, r, p, salt, digest = _parse_hash(stored)
    got = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=len(digest), maxmem=2**26)
    return hmac.compare_digest(got, digest)


# --------------------------------------------------------------------------- credentials


class Credentials:
    """Username -> scrypt hash. Empty means no login is configured (allowed on a loopback address only)."""

    def __init__(self, hashes: Mapping[str, str]):
        for user, stored in hashes.items():
            if not user or not isinstance(stored, str):
                raise ValueError(f"user {user!r}: expected a username and a password hash")
            try:
                _parse_hash(stored)
            except ValueError as exc:
                raise ValueError(f"user {user!r}: {exc}") from None
        self._hashes = dict(hashes)
        self._dummy = hash_password(secrets.token_hex(8))  # unknown users cost the same time as known ones

    @classmethod
    def from_settings(cls, settings: UISettings, environ: Mapping[str, str] | None = None) -> Credentials:
        env = os.environ if environ is None else environ
        hashes = dict(settings.users)
        if settings.users_file:
            raw = yaml.safe_load(Path(settings.users_file).read_text()) or {}
            if not isinstance(raw, dict):
                raise ValueError(f"{settings.users_file}: expected a mapping username -> password hash")
            hashes.update({str(k): v for k, v in raw.items()})
        user, password = env.get(USER_ENV), env.get(PASSWORD_ENV)
        if bool(user) != bool(password):
            raise ValueError(f"set both ${USER_ENV} and ${PASSWORD_ENV}, or neither")
        if user and password:
            hashes[user] = hash_password(password)
        return cls(hashes)

    def __bool__(self) -> bool:
        return bool(self._hashes)

    @property
    def users(self) -> list[str]:
        return sorted(self._hashes)

    def check(self, username: str, password: str) -> bool:
        stored = self._hashes.get(username)
        ok = verify_password(password, stored or self._dummy)
        return ok and stored is not None


def check_can_start(settings: UISettings, credentials: Credentials) -> None:
    """Refuse an open console anywhere but on loopback: it holds health data."""
    if not credentials and not settings.is_loopback():
        raise ValueError(
            f"refusing to serve the console on {settings.host} without credentials: set ui.users (hashes from "
            "`python -m ui.auth`), ui.users_file, or MEDHX_USER and MEDHX_PASSWORD; or bind to 127.0.0.1")


# --------------------------------------------------------------------------- login sessions


class LoginSessions:
    """The console's logins, kept in the session store (:class:`agent.app.logins.LoginStore`: the token's hash,
    the clinician, the expiry), so a restart keeps clinicians signed in and a second console process on the same
    store accepts the same cookie; this is the gate's and Gradio's view of it."""

    def __init__(self, store: LoginStore):
        self.store = store

    @property
    def ttl_s(self) -> float:
        return self.store.ttl_s

    def issue(self, username: str) -> str:
        return self.store.issue(username)

    def user_for(self, token: str | None) -> str | None:
        return self.store.user_for(token)

    def revoke(self, token: str | None) -> None:
        self.store.revoke(token)

    def user_of(self, request: Any) -> str | None:
        """Gradio's ``auth_dependency``: the logged-in clinician of a request (the gate already looked it up and
        left it in the request's scope; only the gate can put it there), or None."""
        user = request.scope.get(USER_SCOPE_KEY)
        return user if user is not None else self.user_for(request.cookies.get(COOKIE))


# --------------------------------------------------------------------------- the gate


def _cookie(scope: dict) -> str | None:
    return HTTPConnection(scope).cookies.get(COOKIE)


class RequireLogin:
    """ASGI middleware: a request without a valid login cookie never reaches the app behind it; a request with one
    carries its clinician in the scope (:data:`ui.owners.USER_SCOPE_KEY`) for the checks behind the gate."""

    def __init__(self, app: Any, sessions: LoginSessions):
        self.app = app
        self.sessions = sessions

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        scope.pop(USER_SCOPE_KEY, None)  # only this gate says who is signed in
        if scope["type"] not in ("http", "websocket") or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        token = _cookie(scope)
        user = await run_in_threadpool(self.sessions.user_for, token) if token else None
        if user is not None:
            scope[USER_SCOPE_KEY] = user
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4401})
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if scope.get("method") == "GET" and "text/html" in headers.get("accept", ""):
            response: Any = RedirectResponse(scope.get("root_path", "") + "/login", status_code=303)
        else:
            response = JSONResponse({"detail": "login required"}, status_code=401)
        await response(scope, receive, send)


LOGIN_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>medhx clinician console: sign in</title><link rel="icon" href="data:,">
<style>
 body {{ margin: 0; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: #f3f5f8;
        color: #1d2939; display: flex; min-height: 100vh; align-items: center; justify-content: center; }}
 main {{ background: #fff; border: 1px solid #d0d5dd; border-radius: 10px; padding: 2rem 2.25rem; width: 22rem;
        box-shadow: 0 1px 3px rgba(16, 24, 40, .08); }}
 h1 {{ font-size: 1.25rem; margin: 0 0 .25rem; }} p.sub {{ margin: 0 0 1.5rem; color: #475467; font-size: .9rem; }}
 label {{ display: block; font-size: .85rem; font-weight: 600; margin: .9rem 0 .3rem; }}
 input {{ width: 100%; box-sizing: border-box; padding: .55rem .65rem; border: 1px solid #98a2b3; border-radius: 6px;
         font-size: 1rem; }}
 button {{ margin-top: 1.4rem; width: 100%; padding: .6rem; border: 0; border-radius: 6px; background: #1d4ed8;
          color: #fff; font-size: 1rem; font-weight: 600; cursor: pointer; }}
 .error {{ background: #fef3f2; border: 1px solid #fda29b; color: #b42318; padding: .5rem .7rem; border-radius: 6px;
          font-size: .9rem; }}
 footer {{ margin-top: 1.5rem; font-size: .75rem; color: #667085; }}
</style></head>
<body><main>
<h1>medhx clinician console</h1><p class="sub">Sign in to review and run history-taking interviews.</p>
{error}
<form method="post" action="login">
 <label for="username">Username</label><input id="username" name="username" autocomplete="username" required autofocus>
 <label for="password">Password</label>
 <input id="password" name="password" type="password" autocomplete="current-password" required>
 <button type="submit">Sign in</button>
</form>
<footer>A research and demonstration tool: it is not a clinician and does not diagnose.</footer>
</main></body></html>"""


def login_page(error: str | None = None) -> str:
    return LOGIN_PAGE.format(error=f'<p class="error" role="alert">{html.escape(error)}</p>' if error else "")


def install_login(app: Any, credentials: Credentials, sessions: LoginSessions, settings: UISettings) -> None:
    """``/login`` (the form, and the POST that checks it: form fields ``username`` and ``password``, as
    ``gradio_client.Client(auth=...)`` sends them), ``/logout``, and the :class:`RequireLogin` gate."""
    def wants_html(request: Request) -> bool:
        return "text/html" in request.headers.get("accept", "")

    @app.get("/login", include_in_schema=False)
    def login_form() -> HTMLResponse:
        return HTMLResponse(login_page())

    @app.post("/login", include_in_schema=False)
    async def login(request: Request) -> Any:
        form = await request.form()
        username, password = str(form.get("username") or ""), str(form.get("password") or "")
        ok = bool(username and password) and await run_in_threadpool(credentials.check, username, password)
        if not ok:
            await asyncio.sleep(FAILED_LOGIN_DELAY_S)
            if wants_html(request):
                return HTMLResponse(login_page("Unknown username or wrong password."), status_code=401)
            return JSONResponse({"success": False, "detail": "invalid credentials"}, status_code=401)
        token = await run_in_threadpool(sessions.issue, username)
        response: Any = RedirectResponse("./", status_code=303) if wants_html(request) \
            else JSONResponse({"success": True})
        response.set_cookie(COOKIE, token, max_age=int(sessions.ttl_s), httponly=True, samesite="strict",
                            secure=settings.cookie_secure, path="/")
        return response

    @app.get("/logout", include_in_schema=False)
    def logout(request: Request) -> RedirectResponse:
        sessions.revoke(request.cookies.get(COOKIE))  # the row is deleted: every process refuses the cookie now
        response = RedirectResponse("login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    app.add_middleware(QueueOwners, routes=lambda: app.routes)  # behind the gate: it reads the gate's clinician
    app.add_middleware(RequireLogin, sessions=sessions)


# --------------------------------------------------------------------------- python -m ui.auth


def main(argv: list[str] | None = None) -> int:
    """Print the hash of a password (asked twice on a terminal, else read from stdin) for ``ui.users``."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] in ("-h", "--help"):
        print("usage: python -m ui.auth [USERNAME]   prints 'USERNAME: HASH' for ui.users in configs/ui.yaml")
        return 0
    user = args[0] if args else "clinician"
    if sys.stdin.isatty():
        password = getpass.getpass(f"password for {user}: ")
        if getpass.getpass("again: ") != password:
            print("the two passwords differ", file=sys.stderr)
            return 2
    else:
        password = sys.stdin.readline().rstrip("\n")
    try:
        print(f"{user}: {hash_password(password)}")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
