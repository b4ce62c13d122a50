"""The clinician console through its API, as ``gradio_client`` scripts it, against the real app on loopback.

The app is the real one (login gate, Gradio queue, sessions in SQLite, the embedded default agent); only the
browser is left out (tests/test_ui_browser.py drives that).
"""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError, AuthenticationError
from graph_fixtures import REPO, medhx_cmd, medhx_env, stalled_config
from ui_fixtures import PASSWORDS, RED_FLAG_LINE, SCRIPT, console_settings, fill, routes, running_console, write_preset
from vllm_fixtures import free_port

from agent.core.data import load_dialogs_file, load_dialogues
from policies.agent_config import load_config
from ui.auth import COOKIE, OPEN_PATHS, Credentials, check_can_start, hash_password, verify_password
from ui.presets import Variant
from ui.settings import UISettings

STALL_S = 3.0


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    """The console with two presets: the default agent, and the same agent whose NLU stalls at patient turn 1
    (``fault_modules.Stall``) so a turn is reliably still running when a second tab sends."""
    tmp = tmp_path_factory.mktemp("console")
    stall = stalled_config(load_config(console_settings(tmp).agent_config), "nlu", 1)
    stall["nlu"]["seconds"] = STALL_S
    stall_preset = write_preset(tmp / "stall.yaml", nlu=stall["nlu"])
    gold_preset = write_preset(tmp / "gold.yaml", nlu={"kind": "gold"})  # the dataset's annotations (demos)
    settings = console_settings(tmp, presets=[stall_preset, gold_preset])
    with running_console(settings) as (url, app):
        app.console.prepare(Variant.of("stall"))  # built in the background while the first tests run
        yield url, app


def client(url: str, user: str = "dr_a") -> Client:
    return Client(url, auth=(user, PASSWORDS[user]), verbose=False)


# --------------------------------------------------------------------------- login


def test_every_route_requires_login(console):
    url, app = console
    found = routes(app.app)
    paths = {p for _, p in found}
    # the gate must cover Gradio's page, config, API, queue, upload and file routes: check they were enumerated
    for expected in ("/", "/config", "/gradio_api/info", "/gradio_api/queue/join", "/gradio_api/upload",
                     "/gradio_api/file={path_or_url:path}", "/gradio_api/call/{api_name}", "/gradio_api/user",
                     "/gradio_api/heartbeat/{session_hash}", "/theme.css"):
        assert expected in paths, f"{expected} not among the app's routes"
    assert not [m for m, _ in found if m == "WEBSOCKET"], "a websocket route needs its own check"
    checked = 0
    with httpx.Client(base_url=url, timeout=10) as http:
        for method, path in found:
            if path in OPEN_PATHS:
                continue
            r = http.request(method, fill(path, {}))
            assert r.status_code == 401, f"{method} {path} answered {r.status_code} without login"
            checked += 1
        page = http.get("/", headers={"accept": "text/html"})
        assert page.status_code == 303 and page.headers["location"].endswith("/login")
        assert http.get("/no/such/route").status_code == 401  # the gate is in front of routing itself
        login = http.post("/login", data={"username": "dr_a", "password": PASSWORDS["dr_a"]})
        assert login.status_code == 200 and COOKIE in login.cookies
        # the same client, logged in: the routes answer (so the 401s above were the gate, not broken routes)
        assert http.get("/config").status_code == 200
        assert http.get("/gradio_api/info").status_code == 200
        assert http.get("/gradio_api/user").json() == "dr_a"
        http.get("/logout")
        assert http.get("/config").status_code == 401
    assert checked > 40


def test_login_refuses_bad_credentials(console):
    url, _ = console
    with pytest.raises(AuthenticationError):
        Client(url, auth=("dr_a", "wrong password"), verbose=False)
    with pytest.raises(AuthenticationError):
        Client(url, verbose=False)  # no login at all: the client cannot even read the app's config
    r = httpx.post(f"{url}/login", data={"username": "nobody", "password": "x"}, headers={"accept": "text/html"})
    assert r.status_code == 401 and "Unknown username or wrong password" in r.text


def test_refuses_to_start_open_on_a_network_address():
    import subprocess

    env = {k: v for k, v in medhx_env().items() if k not in ("MEDHX_USER", "MEDHX_PASSWORD")}
    r = subprocess.run(medhx_cmd("chat", "--host", "0.0.0.0", "--port", "1"), capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 1 and "refusing to serve the console on 0.0.0.0 without credentials" in r.stderr
    check_can_start(UISettings(host="127.0.0.1"), Credentials({}))  # loopback may run without login
    check_can_start(UISettings(host="0.0.0.0"), Credentials({"dr_a": hash_password("x")}))


def test_credentials_are_hashed_at_rest(tmp_path):
    stored = hash_password("s3cret")
    assert stored.startswith("scrypt$") and "s3cret" not in stored and verify_password("s3cret", stored)
    assert not verify_password("S3cret", stored)
    with pytest.raises(ValueError, match="not a password hash"):
        Credentials({"dr_a": "plain-text-password"})
    users = tmp_path / "users.yaml"
    users.write_text(f"dr_c: '{hash_password('pw-c')}'\n")
    creds = Credentials.from_settings(UISettings(users_file=str(users)),
                                      environ={"MEDHX_USER": "dr_env", "MEDHX_PASSWORD": "pw-env"})
    assert creds.users == ["dr_c", "dr_env"]
    assert creds.check("dr_c", "pw-c") and creds.check("dr_env", "pw-env") and not creds.check("dr_env", "pw-c")
    with pytest.raises(ValueError, match="MEDHX_USER"):
        Credentials.from_settings(UISettings(), environ={"MEDHX_USER": "dr_env"})


# --------------------------------------------------------------------------- interviews


def test_three_turn_interview(console):
    url, _ = console
    c = client(url)
    started = c.predict(api_name="/start_session")
    sid = started["session_id"]
    assert started["waiting_for"] == "patient" and "assistant" in started["doctor"]
    answers = [c.predict(sid, line, api_name="/send") for line in SCRIPT]
    assert all(a["doctor"] and a["waiting_for"] == "patient" for a in answers)
    assert answers[0]["nodes"][:5] == ["patient", "nlu", "track", "safety", "policy"]
    assert set(answers[0]["latency"]) >= {"nlu", "track", "safety", "policy", "nlg"}
    assert answers[0]["red_flags"] == [] and [f["id"] for f in answers[1]["red_flags"]] == ["hemoptysis"]
    assert answers[1]["doctor"].startswith("Coughing up blood should be checked")  # the escalation is said first

    st = c.predict(sid, api_name="/session_state")
    assert st["owner"] == "dr_a"
    assert [(t["speaker"], t["text"]) for t in st["turns"] if t["speaker"] == "patient"] == \
        [("patient", line) for line in SCRIPT]
    assert [t["speaker"] for t in st["turns"]] == ["doctor", "patient"] * 3 + ["doctor"]
    symptoms = {i["value"] for i in st["patient_state"]["positive_symptom"]}
    assert {"coughing", "hemoptysis"} <= symptoms
    assert [i["value"] for i in st["patient_state"]["positive_habit"]] == ["smoking"]
    listed = {s["session_id"]: s for s in c.predict(api_name="/sessions")}
    assert listed[sid]["turns"] == 7 and listed[sid]["red_flags"] == 1 and listed[sid]["owner"] == "dr_a"


def test_the_clinicians_summary_is_shown_each_turn_and_never_said(console):
    """The summary the graph keeps (presentation, red-flag screen, ranked considerations with their facts) comes back
    with every answer and in the session state; the console's panel and the note's section are one text; no doctor
    turn says it."""
    from agent.app.export import SUMMARY_TITLE, summary_markdown
    from ui import render

    url, app = console
    c = client(url)
    sid = c.predict(api_name="/start_session")["session_id"]
    answers = [c.predict(sid, line, api_name="/send") for line in SCRIPT]
    assert all(a["summary"]["for"] == "clinician" for a in answers)  # renewed at every doctor turn
    summary = answers[-1]["summary"]
    assert summary["presentation"]["id"] == "cough" and not summary["presentation"]["inferred"]
    assert summary["red_flag_screen"][0] | {"message": None} == {"rule": "hemoptysis", "result": "positive",
                                                                  "level": "urgent", "message": None, "turn": 3}
    top = summary["considerations"][0]
    assert top["label"] == "pulmonary neoplasm" and [f["text"] for f in top["supports"]] == ["hemoptysis", "smoking"]
    assert not any(f["value"] == "smoking" for c_ in answers[0]["summary"]["considerations"] for f in c_["supports"])

    st = c.predict(sid, api_name="/session_state")
    assert st["summary"] == summary
    for c_ in summary["considerations"]:  # every fact cited is an item of the patient state
        for f in (*c_["supports"], *c_["against"]):
            assert any(it["value"] == f["value"] for it in st["patient_state"].get(f"{f['status']}_{f['slot']}", []))
    panel = render.clinician_summary(app.console.state(sid, "dr_a"))
    assert panel == summary_markdown(summary) and "1. **pulmonary neoplasm**" in panel
    assert "   - for: hemoptysis; smoking" in panel.splitlines()
    note = c.predict(sid, "note", api_name="/export")
    assert f"## {SUMMARY_TITLE}\n{panel}\n" in note
    said = [t["text"].casefold() for t in st["turns"] if t["speaker"] == "doctor"]
    for text in (SUMMARY_TITLE, summary["notice"], *(c_["label"] for c_ in summary["considerations"])):
        assert not any(text.casefold() in s for s in said), text


def test_review_approve_edit_and_an_invalid_edit(console):
    url, _ = console
    c = client(url)
    started = c.predict(review=True, api_name="/start_session")
    sid = started["session_id"]
    assert started["waiting_for"] == "review"  # the greeting itself waits for the clinician
    approved = c.predict(sid, json.dumps({"approve": True}), api_name="/review")
    assert approved["waiting_for"] == "patient" and "assistant" in approved["doctor"]

    sent = c.predict(sid, RED_FLAG_LINE, review=True, api_name="/send")
    assert sent["doctor"] is None and sent["waiting_for"] == "review"
    assert [f["id"] for f in sent["red_flags"]] == ["hemoptysis"]  # raised before the clinician sees the plan

    with pytest.raises(AppError, match="Not applied"):  # CMAS-invalid actions: refused in words, nothing changes
        c.predict(sid, json.dumps({"replace_actions": [{"action": "interrogate"}]}), api_name="/review")
    with pytest.raises(AppError, match="not valid JSON"):
        c.predict(sid, "{approve", api_name="/review")
    st = c.predict(sid, api_name="/session_state")
    assert len(st["turns"]) == 2 and [e["kind"] for e in st["review_edits"]] == ["approve"]

    edited = c.predict(sid, json.dumps({"edit": "How much blood have you coughed up?"}), api_name="/review")
    assert edited["doctor"].endswith(" How much blood have you coughed up?")  # after the red-flag escalation
    assert edited["waiting_for"] == "patient"
    edits = [(e["turn"], e["kind"], e["by"]) for e in edited["review_edits"]]
    assert edits == [(0, "approve", "dr_a"), (2, "edit", "dr_a")]
    assert all(e["at"] for e in edited["review_edits"])


def test_export_files_parse(console, tmp_path):
    url, _ = console
    c = client(url)
    sid = c.predict(api_name="/start_session")["session_id"]
    for line in SCRIPT[:2]:
        c.predict(sid, line, api_name="/send")
    path = tmp_path / "export.json"
    path.write_text(c.predict(sid, "meditod", api_name="/export"))
    dialogs = load_dialogs_file(path)  # strict: every NLU frame, state and action is CMAS-valid
    assert list(dialogs) == [sid]
    utts = dialogs[sid].utterances
    assert [u.text for u in utts if u.speaker == "patient"] == SCRIPT[:2]
    assert any(it["value"] == "hemoptysis" for it in utts[-2].dialog_state["positive_symptom"])
    note = c.predict(sid, "note", api_name="/export")
    assert note.startswith(f"# History note — session {sid}") and "`hemoptysis`" in note
    page = c.predict(sid, "html", api_name="/export")
    assert page.startswith("<!doctype html>") and "window.print()" in page and "Presenting complaint" in page
    with pytest.raises(AppError, match="unknown export format"):
        c.predict(sid, "pdf", api_name="/export")


def test_each_clinician_sees_only_their_sessions(console):
    url, _ = console
    a, b = client(url, "dr_a"), client(url, "dr_b")
    sid = a.predict(api_name="/start_session")["session_id"]
    assert sid not in {s["session_id"] for s in b.predict(api_name="/sessions")}
    with pytest.raises(AppError, match="not found"):
        b.predict(sid, api_name="/session_state")
    with pytest.raises(AppError, match="not found"):
        b.predict(sid, "hello", api_name="/send")
    with pytest.raises(AppError, match="not found"):
        b.predict(sid, api_name="/delete_session")
    assert a.predict(sid, api_name="/delete_session") == sid
    assert sid not in {s["session_id"] for s in a.predict(api_name="/sessions")}


def test_two_tabs_on_one_session_never_duplicate_a_turn(console):
    """Tab 1's turn is inside the NLU (stalled); tab 2 sends meanwhile and is told the session is busy."""
    url, _ = console
    tab1, tab2 = client(url), client(url)
    sid = tab1.predict(preset="stall", api_name="/start_session")["session_id"]
    result: dict = {}
    first = threading.Thread(target=lambda: result.update(tab1.predict(sid, SCRIPT[0], preset="stall",
                                                                       api_name="/send")))
    first.start()
    deadline = time.monotonic() + 30
    while len(tab2.predict(sid, api_name="/session_state")["turns"]) < 2:  # the patient turn is stored
        assert time.monotonic() < deadline, "the first tab's turn never started"
        time.sleep(0.1)
    with pytest.raises(AppError, match="Session busy"):
        tab2.predict(sid, "a second answer from another tab", preset="stall", api_name="/send")
    first.join(timeout=STALL_S + 30)
    assert result["doctor"]
    st = tab2.predict(sid, api_name="/session_state")
    assert [t["text"] for t in st["turns"] if t["speaker"] == "patient"] == [SCRIPT[0]]
    assert [t["speaker"] for t in st["turns"]] == ["doctor", "patient", "doctor"]
    again = tab2.predict(sid, SCRIPT[1], preset="stall", api_name="/send")  # free again: the next turn runs
    assert again["doctor"]


def test_switching_preset_keeps_the_session(console):
    url, _ = console
    c = client(url)
    sid = c.predict(api_name="/start_session")["session_id"]
    c.predict(sid, SCRIPT[0], api_name="/send")
    c.predict(sid, SCRIPT[1], review=True, api_name="/send")  # the next turn under review, same session
    assert c.predict(sid, api_name="/session_state")["turns"][-1]["speaker"] == "patient"
    c.predict(sid, json.dumps({"approve": True}), api_name="/review")
    st = c.predict(sid, api_name="/session_state")
    assert [t["speaker"] for t in st["turns"]] == ["doctor", "patient"] * 2 + ["doctor"]
    assert [(e["turn"], e["kind"]) for e in st["review_edits"]] == [(4, "approve")]
    info = c.predict(api_name="/modules")
    assert info["llm_roles"] == [] and "runs no language model" in info["status"]


def test_gold_nlu_preset_replays_a_dataset_dialogue(console):
    url, _ = console
    c = client(url)
    dialogue = {d.dialog_id: d for d in load_dialogues(REPO / "data" / "meditod", "all")}["115"]
    gold = [u for u in dialogue.utterances if u.speaker == "patient"][:2]
    sid = c.predict(preset="gold", api_name="/start_session")["session_id"]
    for u in gold:
        assert c.predict(sid, u.text, preset="gold", api_name="/send")["doctor"]
    st = c.predict(sid, api_name="/session_state")
    assert [t["nlu"] for t in st["turns"] if t["speaker"] == "patient"] == [u.nlu for u in gold]


def test_model_server_down_is_said_in_words(tmp_path):
    """An LLM preset whose server does not answer: the preset panel says so, the turn falls back at its deadline
    and the console names what fell back; the session keeps the turn."""
    backend = {"kind": "vllm-server", "url": f"http://127.0.0.1:{free_port(18400, 18500)}", "tokenizer": "smollm2"}
    session = {**load_config(console_settings(tmp_path).agent_config)["session"], "turn_deadline_s": 1.5}
    down = write_preset(tmp_path / "down.yaml", backends={"m": backend}, session=session,
                        nlu={"kind": "model", "backend": "m", "adapter": "nlu", "max_tokens": 16})
    with running_console(console_settings(tmp_path, presets=[down])) as (url, _):
        c = client(url)
        info = c.predict("down", api_name="/modules")
        assert "No vLLM server answers at" in info["status"] and info["served"] is None
        sid = c.predict(api_name="/start_session")["session_id"]
        answer = c.predict(sid, SCRIPT[0], preset="down", api_name="/send")
        assert answer["doctor"] and answer["problems"].startswith("nlu fell back (deadline")
        st = c.predict(sid, api_name="/session_state")
        assert [t["text"] for t in st["turns"] if t["speaker"] == "patient"] == [SCRIPT[0]]


@pytest.mark.vllm
def test_adapters_listed_from_the_vllm_server(tmp_path, vllm_server, tiny_model_dir):
    """An LLM preset on a real vLLM server: the console lists the served adapters and a turn runs on another one
    than the preset names, on the same session."""
    backend = {"kind": "vllm-server", "url": vllm_server, "tokenizer": str(tiny_model_dir)}
    llm = write_preset(tmp_path / "llm.yaml", backends={"m": backend},
                       nlu={"kind": "ensemble", "backend": "m", "adapter": "nlu", "max_tokens": 24,
                            "lexicon": str(load_config(console_settings(tmp_path).agent_config)["nlu"]["lexicon"])})
    with running_console(console_settings(tmp_path, presets=[llm])) as (url, _):
        c = client(url)
        info = c.predict("llm", api_name="/modules")
        assert info["llm_roles"] == ["nlu"] and info["server"] == vllm_server
        assert sorted(info["served"]["adapters"]) == ["nlg", "nlu", "pol"]
        assert info["choices"]["nlu"][0] == "(base model)" and "nlu" in info["choices"]["nlu"]
        assert "serves base model" in info["status"]
        sid = c.predict(api_name="/start_session")["session_id"]
        c.predict(sid, SCRIPT[0], api_name="/send")  # the default preset
        c.predict(sid, SCRIPT[1], preset="llm", adapters=json.dumps({"nlu": "pol"}), api_name="/send")
        st = c.predict(sid, api_name="/session_state")
        assert [t["speaker"] for t in st["turns"]] == ["doctor", "patient"] * 2 + ["doctor"]
        assert "model_adapter" not in st["turns"][1]["meta"]  # the clinical NLU alone
        assert st["turns"][3]["meta"]["model_adapter"] == "pol"  # the ensemble's LLM, on the adapter picked
