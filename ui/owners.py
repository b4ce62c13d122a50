"""Gradio's own objects, each bound to the clinician who made it: the queue's session hashes and event ids.

Gradio keys a page's state and its event stream by a ``session_hash`` the browser makes up, and each queued event
by an ``event_id``; its routes (``/gradio_api/queue/data?session_hash=``, ``/gradio_api/call/{api}/{event_id}``,
``/gradio_api/cancel``, ``/gradio_api/heartbeat/{session_hash}``, ``/gradio_api/stream/...``, the component server)
answer anyone who names one, whoever is logged in. So a clinician who learnt another's session hash could read
the other's event stream: every turn's output, with the patient's words.

:class:`QueueOwners` (ASGI middleware, behind the login gate, so the clinician is known) closes that: the first
clinician to use a session hash owns it, and an event id belongs to whoever's request created it (read from the
``{"event_id": ...}`` answer of ``/queue/join`` and ``/call/...``). A request naming a session hash or an event id
that belongs to another clinician, or an event id nobody was given, is answered 404 before Gradio sees it.
The identifiers are found wherever a request can carry them (path parameters of whichever route matches, query,
JSON body), not per route, so a route a Gradio upgrade adds is covered too.

The console takes no files, so a request body must be JSON (``/gradio_api/upload``, the component server's and
the recorder's multipart forms are refused with 415): an upload would be an object with no owner check in
Gradio's file route. Every refusal is logged with who asked and what.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from starlette.datastructures import QueryParams
from starlette.responses import JSONResponse
from starlette.routing import Match, Mount

log = logging.getLogger(__name__)

USER_SCOPE_KEY = "medhx.user"
"""Where the login gate leaves the signed-in clinician in the ASGI scope (only the gate sets it)."""
OWNED = ("session_hash", "event_id")
MAX_BODY = 2 * 1024 * 1024  # a JSON request to the console is small; uploads are refused anyway
MAX_CAPTURE = 64 * 1024  # the answers read for event ids are tiny ({"event_id": ...})
KEEP_S = 24 * 3600.0  # how long an unused binding is kept (a page's Gradio state goes an hour after it closes)


def route_params(routes: list, scope: dict) -> dict[str, Any]:
    """The path parameters of the route that will answer ``scope``, through mounted apps (Starlette's own
    matching, so this is the router's reading of the path, not a second one)."""
    for route in routes:
        match, child = route.matches(scope)
        if match is not Match.FULL:
            continue
        params = dict(child.get("path_params", {}))
        inner = getattr(route.app, "routes", None) if isinstance(route, Mount) else None
        if inner is not None:
            params.update(route_params(inner, {**scope, **child}))
        return params
    return {}


class Bindings:
    """(kind, identifier) -> the clinician it belongs to; entries unused for :data:`KEEP_S` are dropped."""

    def __init__(self, keep_s: float = KEEP_S):
        self.keep_s = keep_s
        self._owner: dict[tuple[str, str], tuple[str, float]] = {}
        self._lock = threading.Lock()
        self._next_prune = time.monotonic() + keep_s

    def claim(self, kind: str, value: str, user: str) -> bool:
        """Bind ``value`` to ``user`` unless another clinician has it; True when ``user`` may use it."""
        now = time.monotonic()
        with self._lock:
            self._prune(now)
            owner = self._owner.get((kind, value))
            if owner is not None and owner[0] != user:
                return False
            self._owner[(kind, value)] = (user, now)
            return True

    def owned_by(self, kind: str, value: str, user: str) -> bool:
        """True when ``value`` was bound to ``user`` (an unknown value is nobody's)."""
        with self._lock:
            owner = self._owner.get((kind, value))
            if owner is None or owner[0] != user:
                return False
            self._owner[(kind, value)] = (user, time.monotonic())
            return True

    def _prune(self, now: float) -> None:
        if now < self._next_prune:
            return
        self._owner = {k: v for k, v in self._owner.items() if now - v[1] < self.keep_s}
        self._next_prune = now + self.keep_s / 24


class QueueOwners:
    """ASGI middleware: a Gradio session hash or event id is used only by the clinician it belongs to."""

    def __init__(self, app: Any, routes: Callable[[], list], bindings: Bindings | None = None):
        self.app = app
        self.routes = routes  # the outer app's routes, read per request (Gradio is mounted after this is added)
        self.bindings = bindings or Bindings()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        user = scope.get(USER_SCOPE_KEY)
        if scope["type"] != "http" or user is None:  # no login configured (loopback): one anonymous clinician
            await self.app(scope, receive, send)
            return
        named: list[tuple[str, str]] = []
        query = QueryParams(scope.get("query_string", b"").decode("latin-1"))
        path = route_params(self.routes(), scope)
        for kind in OWNED:
            named += [(kind, v) for v in query.getlist(kind)]
            if isinstance(path.get(kind), str):
                named.append((kind, path[kind]))
        body = b""
        if scope.get("method") in ("POST", "PUT", "PATCH", "DELETE"):
            body, problem = await read_body(receive)
            if problem is None and body:
                problem, found = json_identifiers(scope, body)
                named += found
            if problem is not None:
                await self.refuse(scope, receive, send, user, problem[1], problem[0])
                return
            receive = replay(body, receive)
        for kind, value in named:
            ok = (self.bindings.claim(kind, value, user) if kind == "session_hash"
                  else self.bindings.owned_by(kind, value, user))
            if not ok:
                await self.refuse(scope, receive, send, user, f"{kind} {value[:16]}… is not theirs", 404)
                return
        if scope.get("method") == "POST":
            send = self.capture_event_ids(send, user)
        await self.app(scope, receive, send)

    def capture_event_ids(self, send: Any, user: str) -> Any:
        """``send``, reading a small JSON answer for ``event_id`` and binding it to ``user`` before the client can
        use it (the answer's last chunk goes out after the binding)."""
        state: dict[str, Any] = {"json": False, "chunks": []}

        async def wrapped(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in message.get("headers", [])}
                state["json"] = headers.get("content-type", "").startswith("application/json")
            elif message["type"] == "http.response.body" and state["json"]:
                state["chunks"].append(message.get("body", b""))
                if not message.get("more_body", False):
                    self.bind_answer(b"".join(state["chunks"]), user)
                elif sum(len(c) for c in state["chunks"]) > MAX_CAPTURE:
                    state["json"] = False
                    state["chunks"] = []
            await send(message)

        return wrapped

    def bind_answer(self, raw: bytes, user: str) -> None:
        if len(raw) > MAX_CAPTURE:
            return
        try:
            answer = json.loads(raw)
        except ValueError:
            return
        if isinstance(answer, dict) and isinstance(answer.get("event_id"), str):
            event_id = answer["event_id"]
            self.bindings.claim("event_id", event_id, user)
            # /call/{api} without a session hash: Gradio uses the event id as the event's session hash
            self.bindings.claim("session_hash", event_id, user)

    async def refuse(self, scope: dict, receive: Any, send: Any, user: str, why: str, status: int) -> None:
        log.warning("refused %s %s for %s: %s", scope.get("method"), scope.get("path"), user, why)
        detail = {404: "not found", 413: "request too large", 415: "the console takes JSON only (no uploads)"}
        await JSONResponse({"detail": detail.get(status, "refused")}, status_code=status)(scope, receive, send)


async def read_body(receive: Any) -> tuple[bytes, tuple[int, str] | None]:
    """The whole request body (at most :data:`MAX_BODY`), or a (status, reason) refusal."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"", (400, "client went away")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return b"", (413, f"body over {MAX_BODY} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), None


def json_identifiers(scope: dict, body: bytes) -> tuple[tuple[int, str] | None, list[tuple[str, str]]]:
    """The session hashes and event ids a JSON body names (top level, where Gradio's bodies carry them); a body
    that is not JSON is refused (415), except a login form, which the gate lets through before this runs."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
    ctype = headers.get("content-type", "").split(";")[0].strip()
    if ctype != "application/json":
        return (415, f"a {ctype or 'untyped'} body"), []
    try:
        data = json.loads(body)
    except ValueError:
        return None, []  # Gradio answers malformed JSON itself (422)
    if not isinstance(data, dict):
        return None, []
    return None, [(k, data[k]) for k in OWNED if isinstance(data.get(k), str)]


def replay(body: bytes, receive: Any) -> Callable[[], Any]:
    """A ``receive`` that gives the already read body once, then hands over to the real one (which tells when the
    client goes away)."""
    sent = False

    async def replayed() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
