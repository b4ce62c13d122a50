"""The console's operations as a small typed API (``gr.api``: start_session, send, review, session_state, sessions,
export, delete_session, access_log, modules) for scripts (``gradio_client``) and tests; the page's own events are
private.

Each endpoint is checked against the logged-in clinician and runs the same code as the page: a turn is begun and
followed by :class:`ui.console.TurnProgress`, a review answered by :meth:`ui.console.Console.review`, and both end
in :class:`ui.console.TurnEnd`. Errors reach the caller as ``gr.Error`` in the page's words.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict

import gradio as gr

from agent.app.sessions import SessionError
from ui import render
from ui.console import Console, TurnEnd, TurnProgress, user_message
from ui.handlers import who
from ui.presets import Preset, Variant, adapter_choices, served_models, server_status


def fail(exc: Exception) -> gr.Error:
    return gr.Error(user_message(exc), print_exception=False)


def api_variant(console: Console, preset: str, review: bool | None, adapters: str = "") -> Variant:
    """The variant an API call names: ``preset`` (default: the console's), review on or off (default: the preset's)
    and ``adapters`` (JSON, role -> served LoRA adapter or null for the base model)."""
    name = preset or console.default_preset
    on = console.preset(name).review if review is None else review
    try:
        chosen = json.loads(adapters) if adapters else {}
    except json.JSONDecodeError as exc:
        raise ValueError(f"adapters is not valid JSON: {exc.msg}") from None
    if not isinstance(chosen, dict):
        raise ValueError('adapters is a JSON object: {"nlu": "ADAPTER" or null for the base model}')
    return Variant.of(name, chosen, on)


def send_reply(end: TurnEnd, progress: TurnProgress) -> dict:
    """What ``send`` returns about a finished turn."""
    st, waiting = end.state, end.waiting
    last = st.turns[-1]
    doctor = last.speaker == "doctor"
    return {"doctor": last.text if doctor and waiting != "review" else None,
            "waiting_for": waiting, "nodes": progress.nodes, "red_flags": st.red_flags,
            "latency": last.latency if doctor else {}, "problems": render.turn_problems(st) if doctor else "",
            "summary": st.summary}


def modules_info(p: Preset) -> dict:
    """What ``modules`` returns about a preset (the model server asked for what it serves)."""
    server = p.server()
    served = served_models(server.url) if server else None
    return {"preset": p.name, "summary": p.summary(), "llm_roles": sorted(p.llm_roles),
            "server": server.url if server else None, "status": server_status(p, served),
            "served": None if served is None or not served.up else {"base": served.base,
                                                                    "adapters": served.adapters},
            "choices": {r: adapter_choices(p, r, served) for r in p.llm_roles}}


def add_api(console: Console) -> None:
    """Typed endpoints for scripts (``gradio_client``), each checked against the logged-in clinician."""
    for fn in (*turn_endpoints(console), *record_endpoints(console)):
        gr.api(fn, api_name=fn.__name__)


def turn_endpoints(console: Console) -> list[Callable]:
    """start_session, send and review: the endpoints that run the interview."""

    def start_session(preset: str = "", review: bool | None = None, request: gr.Request = None) -> dict:
        """Start an interview; returns its id, the doctor's greeting and what it waits for."""
        try:
            user = who(request, console)
            sid = console.start(api_variant(console, preset, review), user)
            end = console.turn_end(sid, user)
            return {"session_id": sid, "doctor": end.state.turns[-1].text if end.state.turns else None,
                    "waiting_for": end.waiting}
        except Exception as exc:
            raise fail(exc) from None

    def send(session_id: str, text: str, preset: str = "", review: bool | None = None, adapters: str = "",
             request: gr.Request = None) -> dict:
        """One patient turn, run by ``preset`` (default: the console's) with ``adapters`` (JSON, role -> served
        LoRA adapter or null) and review on or off; returns the doctor's answer (None while it awaits review), the
        graph nodes that ran, red flags, timings and the clinician's summary (for the clinician: never said)."""
        user = who(request, console)
        try:
            run = console.begin_turn(api_variant(console, preset, review, adapters), session_id, user, text)
            progress = TurnProgress()
            for _ in progress.follow(run):
                pass
            if run.error is not None:
                raise run.error
            return send_reply(console.turn_end(session_id, user), progress)
        except Exception as exc:
            raise fail(exc) from None

    def review(session_id: str, decision: str, preset: str = "", review: bool | None = True,
               request: gr.Request = None) -> dict:
        """Answer the review of the planned doctor turn; ``decision`` is JSON (approve / edit / replace_actions /
        state_patch). Returns the doctor turn sent and the recorded decisions."""
        user = who(request, console)
        try:
            parsed = json.loads(decision)
            if not isinstance(parsed, dict):
                raise ValueError("a review decision is a JSON object")
            end = console.review(api_variant(console, preset, review), session_id, user, parsed)
            return {"doctor": end.state.doctor_turns()[-1].text, "waiting_for": end.waiting,
                    "review_edits": [e.model_dump(mode="json") for e in end.state.review_edits]}
        except json.JSONDecodeError as exc:
            raise fail(ValueError(f"decision is not valid JSON: {exc.msg}")) from None
        except Exception as exc:
            raise fail(exc) from None

    return [start_session, send, review]


def record_endpoints(console: Console) -> list[Callable]:
    """session_state, sessions, export, delete_session, access_log and modules: the endpoints that read or remove
    what is stored, and say what a preset runs."""

    def session_state(session_id: str, request: gr.Request = None) -> dict:
        """The whole stored session (turns, patient state, red flags, the clinician's summary, review decisions);
        recorded in its access log as opened."""
        try:
            return console.open(session_id, who(request, console)).state().model_dump(mode="json")
        except Exception as exc:
            raise fail(exc) from None

    def sessions(request: gr.Request = None) -> list[dict]:
        """The clinician's interviews, most recent first."""
        return [asdict(i) for i in console.sessions(who(request, console))]

    def export(session_id: str, fmt: str = "meditod", request: gr.Request = None) -> str:
        """The interview as MediTOD JSON (``meditod``), the markdown note (``note``), printable HTML (``html``) or
        its access log (``access``: JSON, for its owner only)."""
        try:
            return console.export(session_id, who(request, console), fmt)
        except Exception as exc:
            raise fail(exc) from None

    def delete_session(session_id: str, request: gr.Request = None) -> str:
        """Delete an interview and all its checkpoints."""
        try:
            console.delete(session_id, who(request, console))
        except (SessionError, ValueError) as exc:
            raise fail(exc) from None
        return session_id

    def access_log(session_id: str = "", request: gr.Request = None) -> list[dict]:
        """Who started, opened, ran, reviewed, exported or deleted the clinician's interviews (one with
        ``session_id``; deleted ones included), and every refused attempt; oldest first. Only the owner's."""
        return [asdict(e) for e in console.access_entries(who(request, console), session_id or None)]

    def modules(preset: str = "") -> dict:
        """What a preset runs and what can be switched: its LLM modules, the vLLM server's base model and adapters
        (``/v1/models``), the adapter choices per module, and the server status in words."""
        try:
            p = console.preset(preset or console.default_preset)
        except ValueError as exc:
            raise fail(exc) from None
        return modules_info(p)

    return [session_state, sessions, export, delete_session, access_log, modules]
