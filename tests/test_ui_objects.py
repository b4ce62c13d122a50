"""Two clinicians, every route of the console: nothing of one clinician's interview reaches the other.

dr_a runs an interview whose patient line holds a marker nobody else typed, exports it, and leaves Gradio objects
behind (a session hash whose event stream still holds the interview, an event id of a finished API call). dr_b,
signed in, then tries every route the app has, enumerated from ``app.routes`` (mounted Gradio included, so a route
a Gradio upgrade adds is tried too), with dr_a's objects wherever a request can name one (path parameters, query,
JSON body); every named API endpoint from ``/gradio_api/info`` and every event of the page from ``/config`` (the
private ones too, by ``fn_index``) with dr_a's session id in every input. Not one answer may hold the marker; a
request naming dr_a's object is 403/404 (or, through the Gradio API, an error saying "not found"). Positive
controls show the objects were real: dr_a does read the same event stream and call result.

Then: dr_a's interview is intact, its access log shows dr_b's refused attempts and holds no patient text, the
export files are 0600 in 0700 directories, Gradio's file route serves them to nobody (not even dr_a), and Gradio's
temporary directory holds no trace of the interview. On SQLite and on the real PostgreSQL server.
"""

from __future__ import annotations

import json
import os
import stat
import time
import uuid
from pathlib import Path

import httpx
import pytest
from gradio import utils as gradio_utils
from gradio_client import Client
from ui_fixtures import (
    PASSWORDS,
    SCRIPT,
    console_settings,
    fill,
    login_cookie,
    path_params,
    routes,
    running_console,
    store_section,
)

from agent.core.data import load_dialogs_file
from ui.auth import COOKIE, OPEN_PATHS
from ui.exports import EXPORT_SUFFIX, download_name

MARKER = "Zarkoffian"
SECRET_LINE = f"My neighbour Mr {MARKER} says I have coughed like a seal since Easter"
OBJECT_PARAMS = {"session_hash", "event_id", "session_id", "name", "path_or_url", "path"}
"""Path parameters that name an object: a route taking one must refuse dr_b dr_a's. (``proxy={url_path}`` takes
a URL for Gradio to fetch, never a file or an object of the console: it is tried like every route, and answers 400
for a path.)"""
READ = httpx.Timeout(20, read=4)


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def two_clinicians(request, tmp_path_factory):
    """The console on the store under test, with dr_a's interview, exports and Gradio objects in it."""
    tmp = tmp_path_factory.mktemp(f"objects-{request.param}")
    pg = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    settings = console_settings(tmp, session=store_section(request.param, tmp, pg))
    with running_console(settings) as (url, app):
        a = Client(url, auth=("dr_a", PASSWORDS["dr_a"]), verbose=False)
        sid = a.predict(api_name="/start_session")["session_id"]
        a.predict(sid, SCRIPT[0], api_name="/send")
        a.predict(sid, SECRET_LINE, api_name="/send")
        a_http = httpx.Client(base_url=url, cookies={COOKIE: login_cookie(url, "dr_a")}, timeout=READ)
        for fmt in EXPORT_SUFFIX:  # every export file written, through the console's own route
            r = a_http.get(f"/export/{sid}/{download_name(sid, fmt)}")
            assert r.status_code == 200, (fmt, r.status_code, r.text)
            assert MARKER in r.text if fmt == "meditod" else MARKER not in r.text, fmt  # the notes hold no quotes
        # a Gradio session hash whose event stream holds the interview, never read: the prize for a thief
        a_hash = f"a-{uuid.uuid4().hex}"
        fn = {d["api_name"]: d["id"] for d in a_http.get("/config").json()["dependencies"] if d.get("api_name")}
        joined = a_http.post("/gradio_api/queue/join", json={"data": [sid], "fn_index": fn["session_state"],
                                                              "session_hash": a_hash})
        assert joined.status_code == 200, joined.text
        # a finished API call whose result (the interview) waits for its event id
        called = a_http.post("/gradio_api/call/session_state", json={"data": [sid]})
        assert called.status_code == 200, called.text
        objects = {"session_id": sid, "session_hash": a_hash, "event_id": called.json()["event_id"],
                   "join_event_id": joined.json()["event_id"], "name": download_name(sid, "meditod"),
                   "export_path": str(app.console.files.path(sid, "meditod")), "store": request.param}
        time.sleep(1.0)  # both events have run: their results wait in dr_a's streams
        yield url, app, a_http, objects
        a_http.close()


def b_client(url: str) -> httpx.Client:
    return httpx.Client(base_url=url, cookies={COOKIE: login_cookie(url, "dr_b")}, timeout=READ)


NO_ANSWER = 599


def probe(http: httpx.Client, method: str, path: str, retry: bool = True, **kwargs: object) -> tuple[int, str]:
    """One request; its status and body (what came within a few seconds: an event stream is cut there).
    A route that crashes on the input (Gradio's ``/call/v2`` does on a v1 body) is :data:`NO_ANSWER`: it gave
    nothing away. (Once more on a new connection first: the crash may have been the previous request's, on the
    connection this one reused.)"""
    body = b""
    try:
        with http.stream(method, path, **kwargs) as r:
            try:
                for chunk in r.iter_bytes():
                    body += chunk
                    if len(body) > 500_000:
                        break
            except httpx.ReadTimeout:
                pass
            return r.status_code, body.decode("utf-8", "replace")
    except (httpx.RemoteProtocolError, httpx.ReadError):
        return probe(http, method, path, retry=False, **kwargs) if retry else (NO_ANSWER, "")


def stream_until(http: httpx.Client, path: str, done: set[str], params: dict | None = None) -> list[dict]:
    """Read a Gradio event stream until every event id in ``done`` completed (or it goes quiet)."""
    messages: list[dict] = []
    with http.stream("GET", path, params=params) as r:
        assert r.status_code == 200, r.read()
        try:
            for line in r.iter_lines():
                if not line.startswith("data:"):
                    continue
                msg = json.loads(line[5:])
                messages.append(msg if isinstance(msg, dict) else {"data": msg})
                if isinstance(msg, dict) and msg.get("msg") == "process_completed":
                    done.discard(msg.get("event_id"))
                if not done or (isinstance(msg, dict) and msg.get("msg") == "close_stream"):
                    break
        except httpx.ReadTimeout:
            pass
    return messages


# --------------------------------------------------------------------------- every route


def test_every_route_refuses_the_other_clinicians_objects(two_clinicians):
    url, app, _, obj = two_clinicians
    found = routes(app.app)
    assert not [m for m, _ in found if m == "WEBSOCKET"], "a websocket route needs its own check"
    values = {"session_hash": obj["session_hash"], "event_id": obj["event_id"], "session_id": obj["session_id"],
              "name": obj["name"], "path_or_url": obj["export_path"], "path": obj["export_path"],
              "url_path": obj["export_path"], "api_name": "session_state", "component_id": "0", "run": "0"}
    body = {"data": [obj["session_id"]], "fn_index": 0}
    tried: dict[str, list[int]] = {}
    object_routes = 0
    with b_client(url) as b:
        for method, path in found:
            if path in OPEN_PATHS:
                continue
            target = fill(path, values)
            attempts = [("plain", {}), ("query session_hash", {"params": {"session_hash": obj["session_hash"]}}),
                        ("query event_id", {"params": {"event_id": obj["event_id"]}})]
            if method != "GET":
                attempts += [("body", {"json": body}),
                             ("body session_hash", {"json": {**body, "session_hash": obj["session_hash"]}}),
                             ("body event_id", {"json": {**body, "event_id": obj["event_id"]}})]
            names_object = bool(OBJECT_PARAMS & set(path_params(path)))
            object_routes += names_object
            for how, kwargs in attempts:
                status, text = probe(b, method, target, **kwargs)
                tried.setdefault(f"{method} {path}", []).append(status)
                assert MARKER not in text, f"{method} {path} ({how}) gave dr_b dr_a's interview: {status} {text[:300]}"
                if how != "plain" and how != "body":  # dr_a's session hash or event id named
                    assert status == 404, f"{method} {path} ({how}) answered {status}, not 404: {text[:200]}"
                elif names_object:
                    assert status in (403, 404), f"{method} {path} ({how}) answered {status}: {text[:200]}"
    assert len(tried) > 60 and object_routes >= 10, (len(tried), object_routes)
    for route in ("GET /export/{session_id}/{name}", "GET /gradio_api/queue/data", "POST /gradio_api/cancel",
                  "GET /gradio_api/heartbeat/{session_hash}", "GET /gradio_api/call/{api_name}/{event_id}",
                  "GET /gradio_api/file={path_or_url:path}", "POST /gradio_api/component_server"):
        assert route in tried, f"{route} was not enumerated"


def test_every_api_endpoint_and_page_event_refuses_the_other_clinicians_interview(two_clinicians):
    url, app, a_http, obj = two_clinicians
    sid = obj["session_id"]
    info = a_http.get("/gradio_api/info").json()["named_endpoints"]
    names = sorted(n.lstrip("/") for n in info)
    assert {"start_session", "send", "review", "session_state", "sessions", "export", "delete_session",
            "access_log", "modules"} <= set(names)
    with b_client(url) as b:
        for name in names:  # every named endpoint, dr_a's session id in each string parameter without a default
            params = info[f"/{name}"]["parameters"]
            given = {"session_id": sid, "decision": json.dumps({"approve": True}), "text": "hello"}
            data = [given.get(p["parameter_name"], sid) if p["parameter_name"] in given
                    or not p.get("parameter_has_default") else p.get("parameter_default") for p in params]
            runs = [data]
            if name == "export":
                runs = [[sid, fmt] for fmt in EXPORT_SUFFIX]
            for run in runs:
                called = b.post(f"/gradio_api/call/{name}", json={"data": run})
                assert called.status_code == 200, called.text
                status, text = probe(b, "GET", f"/gradio_api/call/{name}/{called.json()['event_id']}")
                assert status == 200 and MARKER not in text, (name, run, text[:300])
                if any(p["parameter_name"] == "session_id" for p in params) and name != "access_log":
                    assert "event: error" in text and "not found" in text, (name, run, text[:300])
                elif name in ("sessions", "access_log"):  # dr_b's own list: dr_a's interview is not in it
                    assert "event: complete" in text and sid not in text, (name, text)
        # every event of the page, private ones included, by fn_index, dr_a's session id in every input
        config = b.get("/config").json()
        kinds = {c["id"]: c["type"] for c in config["components"]}
        b_hash = f"b-{uuid.uuid4().hex}"
        pending: set[str] = set()
        for dep in config["dependencies"]:
            data = [False if kinds.get(i) == "checkbox" else sid for i in dep["inputs"]]
            targets = dep.get("targets") or [[None]]
            joined = b.post("/gradio_api/queue/join", json={"data": data, "fn_index": dep["id"],
                                                            "trigger_id": targets[0][0], "session_hash": b_hash})
            assert joined.status_code == 200, (dep["id"], joined.text)
            pending.add(joined.json()["event_id"])
        assert len(pending) == len(config["dependencies"]) > 15
        messages = stream_until(b, "/gradio_api/queue/data", pending, {"session_hash": b_hash})
        assert not pending, f"events never completed: {pending}"
        assert MARKER not in json.dumps(messages)
    # dr_a's interview is whole: nothing dr_b sent or deleted reached it
    st = Client(url, auth=("dr_a", PASSWORDS["dr_a"]), verbose=False).predict(sid, api_name="/session_state")
    assert [t["text"] for t in st["turns"] if t["speaker"] == "patient"] == [SCRIPT[0], SECRET_LINE]


def test_the_objects_were_real_and_the_owner_still_reads_them(two_clinicians):
    """Positive controls, after dr_b's attempts: dr_a reads the event stream and the call result dr_b was refused,
    and they do hold the interview."""
    url, _, a_http, obj = two_clinicians
    messages = stream_until(a_http, "/gradio_api/queue/data", {obj["join_event_id"]},
                            {"session_hash": obj["session_hash"]})
    assert MARKER in json.dumps(messages)
    status, text = probe(a_http, "GET", f"/gradio_api/call/session_state/{obj['event_id']}")
    assert status == 200 and MARKER in text


# --------------------------------------------------------------------------- the access log, the files


def test_access_log_shows_the_refused_attempts_and_no_patient_text(two_clinicians):
    url, app, a_http, obj = two_clinicians
    sid = obj["session_id"]
    with b_client(url) as b:  # one more attempt of each kind through the plain routes, whatever ran before
        assert b.get(f"/export/{sid}/{obj['name']}").status_code == 404
    a = Client(url, auth=("dr_a", PASSWORDS["dr_a"]), verbose=False)
    log = a.predict(sid, api_name="/access_log")
    done = [(e["actor"], e["action"], e["detail"]) for e in log if e["outcome"] == "done"]
    assert done[:3] == [("dr_a", "started", ""), ("dr_a", "turn", "1"), ("dr_a", "turn", "3")]
    assert {("dr_a", "downloaded", fmt) for fmt in EXPORT_SUFFIX} <= set(done)
    refused = {(e["actor"], e["action"]) for e in log if e["outcome"] == "refused"}
    assert {("dr_b", "opened"), ("dr_b", "exported"), ("dr_b", "downloaded"), ("dr_b", "turn"), ("dr_b", "reviewed"),
            ("dr_b", "deleted")} <= refused
    assert all(e["owner"] == "dr_a" and e["session_id"] == sid for e in log)
    # the log holds no patient text: every field is a name, a time or a token from a fixed vocabulary
    text = a.predict(sid, "access", api_name="/export")
    assert json.loads(text)["entries"] == log or len(json.loads(text)["entries"]) >= len(log)
    for line in (*SCRIPT, SECRET_LINE):
        assert line not in text and MARKER not in text
    assert all(len(e["detail"]) <= 40 and " " not in e["detail"] for e in log)
    # dr_b sees none of it, whichever way they ask
    with b_client(url) as b:
        called = b.post("/gradio_api/call/access_log", json={"data": [""]}).json()["event_id"]
        status, answer = probe(b, "GET", f"/gradio_api/call/access_log/{called}")
        assert status == 200 and sid not in answer


def test_exports_are_private_files_served_only_by_the_owner_checked_route(two_clinicians):
    url, app, a_http, obj = two_clinicians
    sid = obj["session_id"]
    root = app.console.files.root
    path = Path(obj["export_path"])
    assert path.is_relative_to(root) and not path.is_relative_to(gradio_utils.get_upload_folder())
    for d in (root, path.parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    files = [p for p in path.parent.iterdir()]
    assert sorted(p.name for p in files) == sorted(EXPORT_SUFFIX.values())
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files)
    if obj["store"] == "sqlite":
        assert root.parent == app.console.reader.checkpoints.settings.path.parent  # beside the store, 0700 too
    # the file the route serves is the export: it loads with the data layer
    r = a_http.get(f"/export/{sid}/{obj['name']}")
    assert r.headers["content-disposition"].startswith("attachment") and r.headers["cache-control"] == "no-store"
    loaded = path.parent / "check.json"
    loaded.write_bytes(r.content)
    assert MARKER in load_dialogs_file(loaded)[sid].utterances[3].text
    loaded.unlink()
    # Gradio's own file route serves neither the exports nor the store, not even to their owner
    for target in (str(path), str(root), str(app.console.reader.checkpoints.settings.path or root)):
        assert a_http.get(f"/gradio_api/file={target}").status_code == 403
    # the console takes no uploads (an upload would be a file with no owner)
    up = a_http.post("/gradio_api/upload", files={"files": ("x.txt", b"hello", "text/plain")})
    assert up.status_code == 415
    # a name that is not one of the interview's exports, or a path trick, is not found
    for name in ("sessions.sqlite", f"medhx-{sid}-x.json", "..%2Fsessions.sqlite", download_name("other", "note")):
        assert a_http.get(f"/export/{sid}/{name}").status_code == 404, name


def test_gradio_temp_dir_never_receives_the_interview(two_clinicians):
    """Everything under Gradio's upload and cache folders, read: the interview is in none of it."""
    for folder in {Path(gradio_utils.get_upload_folder()), gradio_utils.get_cache_folder().resolve()}:
        if not folder.exists():
            continue
        for dirpath, _, filenames in os.walk(folder):
            for f in filenames:
                p = Path(dirpath) / f
                if p.stat().st_size < 20_000_000:
                    assert MARKER.encode() not in p.read_bytes(), p


def test_shared_interviews_are_read_by_others_and_logged_for_the_owner(tmp_path):
    """``ui.share_sessions: true``: dr_b may open and download dr_a's interview (the sharing setting is the check),
    every such access is in dr_a's log under dr_b's name, and the log itself stays dr_a's alone."""
    settings = console_settings(tmp_path, share_sessions=True)
    with running_console(settings) as (url, _):
        a = Client(url, auth=("dr_a", PASSWORDS["dr_a"]), verbose=False)
        sid = a.predict(api_name="/start_session")["session_id"]
        a.predict(sid, SECRET_LINE, api_name="/send")
        with b_client(url) as b:
            assert MARKER in b.get(f"/export/{sid}/{download_name(sid, 'meditod')}").text
            assert b.get(f"/export/{sid}/{download_name(sid, 'access')}").status_code == 404  # the owner's only
        b_api = Client(url, auth=("dr_b", PASSWORDS["dr_b"]), verbose=False)
        assert b_api.predict(sid, api_name="/session_state")["owner"] == "dr_a"
        assert b_api.predict(sid, api_name="/access_log") == []
        log = [(e["actor"], e["action"], e["outcome"], e["detail"]) for e in a.predict(sid, api_name="/access_log")]
        assert ("dr_b", "downloaded", "done", "meditod") in log and ("dr_b", "opened", "done", "") in log
        assert ("dr_b", "downloaded", "refused", "access") in log  # the interview is shared, its log is not


def test_exports_without_login_on_loopback(tmp_path):
    """No credentials (allowed on loopback only): one anonymous clinician, whose exports the same route serves."""
    settings = console_settings(tmp_path, users={})
    with running_console(settings) as (url, app):
        c = Client(url, verbose=False)
        sid = c.predict(api_name="/start_session")["session_id"]
        c.predict(sid, SECRET_LINE, api_name="/send")
        r = httpx.get(f"{url}/export/{sid}/{download_name(sid, 'meditod')}", timeout=30)
        assert r.status_code == 200 and MARKER in r.text
        assert stat.S_IMODE(app.console.files.path(sid, "meditod").stat().st_mode) == 0o600
        log = c.predict(sid, api_name="/access_log")
        assert [(e["actor"], e["action"]) for e in log][-1] == ("local", "downloaded")
