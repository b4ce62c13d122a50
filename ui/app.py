"""The clinician console: a Gradio Blocks app over :class:`ui.console.Console`.

Layout (a clinician's cockpit): the session sidebar, module selectors and exports on the left; the conversation,
the patient's input and the planned doctor action with its review controls in the middle; the live patient-state
panel, the clinician's summary (presentation, red-flag screen, ranked considerations with the facts for and against
each: for the clinician, never said to the patient) and the history note on the right; the red-flag banner across
the top the moment a rule fires.

Every handler catches what can go wrong and says it in words in the status line (:func:`ui.console.user_message`);
the session is in the store after every finished graph node, so an error never loses it. The same operations are
offered as a small API (``gr.api``: start_session, send, review, session_state, sessions, export, delete_session)
for scripts and tests; the page's own events are private.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import time
from dataclasses import asdict
from typing import Any

import gradio as gr

from agent.sessions import SessionError
from ui import render
from ui.console import Console, user_message
from ui.presets import BASE_MODEL, Variant, adapter_choices, served_models, server_status

log = logging.getLogger(__name__)

ROLES = ("nlu", "policy", "nlg")
NEXT_NODE = {"patient": "nlu", "nlu": "track", "track": "safety", "safety": "policy", "policy": "nlg", "nlg": "review",
             "review": "speak"}  # the graph's order (agent/graph.py), to say which node a long turn is in
LOADING_HINT = {True: " An LLM preset may start a vLLM server first: a minute or more on CPU.", False: ""}

APP_CSS = render.CSS + """
#mhx-header { display: flex; align-items: baseline; justify-content: space-between; padding: 0.2rem 0.2rem 0; }
#mhx-header h1 { font-size: 1.3rem; margin: 0; color: #101828; }
#mhx-header .who { font-size: 0.88rem; color: #475467; }
#mhx-header .who a { margin-left: 0.6rem; }
#mhx-disclaimer { font-size: 0.78rem; color: #667085; margin: 0 0.2rem; }
#mhx-state-box, #mhx-note-box { max-height: 34rem; overflow-y: auto; }
#mhx-summary-box { max-height: 28rem; overflow-y: auto; font-size: 0.9rem; }
#mhx-note-box h1 { font-size: 1.05rem; } #mhx-note-box h2 { font-size: 0.92rem; margin: 0.7rem 0 0.2rem; }
"""


def who(request: gr.Request | None, console: Console) -> str:
    """The logged-in clinician (the login gate sets it); the anonymous owner when no login is configured."""
    name = getattr(request, "username", None) if request is not None else None
    return str(name) if name else console.settings.anonymous_user


def variant_of(value: dict | None, console: Console) -> Variant:
    if not value:
        return console.default_variant()
    adapters = {r: (None if a == BASE_MODEL else a) for r, a in (value.get("adapters") or {}).items()}
    return Variant.of(value["preset"], adapters, bool(value.get("review")))


def variant_value(variant: Variant) -> dict:
    return {"preset": variant.preset, "adapters": dict(variant.adapters), "review": variant.review}


def build_blocks(console: Console) -> gr.Blocks:
    presets = console.presets
    default = console.default_variant()
    preset_choices = [(f"{p.name}: {p.summary()}", p.name) for p in presets.values()]

    # exported files are health data: Gradio's copies are deleted within the hour (checked every 30 minutes)
    with gr.Blocks(title="medhx clinician console", fill_width=True, delete_cache=(1800, 3600)) as demo:
        sid_state = gr.State("")
        variant_state = gr.State(variant_value(default))
        last_sid = gr.BrowserState("", storage_key="medhx_last_session")

        header = gr.HTML('<div id="mhx-header"><h1>medhx clinician console</h1></div>')
        gr.HTML('<p id="mhx-disclaimer">Research and demonstration tool: it takes a history for a clinician to '
                "review. It is not a clinician and does not diagnose.</p>")
        banner = gr.HTML("", elem_id="mhx-banner", visible=False)
        status = gr.HTML(render.status_html("Starting…", "busy"), elem_id="mhx-status")

        with gr.Row(equal_height=False):
            # ---------------------------------------------------------------- left: sessions, modules, export
            with gr.Column(scale=2, min_width=260):
                new_btn = gr.Button("New interview", variant="primary", elem_id="mhx-new")
                sessions = gr.Radio(label="Interviews (newest first)", choices=[], elem_id="mhx-sessions")
                with gr.Row():
                    refresh_btn = gr.Button("Refresh list", size="sm", elem_id="mhx-refresh")
                    delete_btn = gr.Button("Delete selected…", size="sm", elem_id="mhx-delete")
                with gr.Accordion("Modules (apply from the next turn)", open=False, elem_id="mhx-modules"):
                    preset_dd = gr.Dropdown(preset_choices, value=default.preset, label="Agent preset",
                                            elem_id="mhx-preset")
                    review_cb = gr.Checkbox(value=default.review, label="Clinician review before each doctor turn",
                                            elem_id="mhx-review-toggle")
                    server_md = gr.Markdown(server_status(presets[default.preset], None))
                    adapter_dd = {role: gr.Dropdown([BASE_MODEL], value=BASE_MODEL, label=f"{render_role(role)} adapter",
                                                    visible=False, elem_id=f"mhx-adapter-{role}") for role in ROLES}
                    check_btn = gr.Button("Check the model server", size="sm")
                with gr.Accordion("Export", open=True, elem_id="mhx-export"):
                    with gr.Row():
                        export_json = gr.Button("MediTOD JSON", size="sm", elem_id="mhx-export-json")
                        export_md = gr.Button("Note (.md)", size="sm", elem_id="mhx-export-md")
                        export_html = gr.Button("Printable note", size="sm", elem_id="mhx-export-html")
                    files = gr.File(label="Exported files", file_count="multiple", interactive=False,
                                    elem_id="mhx-files", visible=False)

            # ---------------------------------------------------------------- middle: conversation and review
            with gr.Column(scale=5, min_width=420):
                chat = gr.Chatbot(label="Interview (doctor: left, patient: right)", height=460, elem_id="mhx-chat",
                                  buttons=["copy"], group_consecutive_messages=False,
                                  placeholder="Start a new interview, or pick one from the list on the left.")
                with gr.Row(equal_height=True):
                    patient = gr.Textbox(label="Patient's answer", placeholder="Type what the patient says, then Enter",
                                         scale=6, elem_id="mhx-patient", max_lines=4)
                    send_btn = gr.Button("Send", variant="primary", scale=1, min_width=90, elem_id="mhx-send")
                with gr.Accordion("Turn timing (per graph node)", open=False, elem_id="mhx-timing"):
                    timing = gr.Markdown(render.latency_table([]))
                with gr.Group(elem_id="mhx-review"):
                    action_title = gr.Markdown("### Doctor action\n_No interview open._", elem_id="mhx-action-title")
                    actions = gr.Code("[]", language="json", label="Actions (CMAS JSON)", interactive=False,
                                      elem_id="mhx-actions", max_lines=12)
                    utterance = gr.Textbox(label="Utterance", lines=2, interactive=False, elem_id="mhx-utterance")
                    with gr.Column(visible=False) as review_controls:
                        state_patch = gr.Code("{}", language="json", interactive=True, elem_id="mhx-state-patch",
                                              label="State correction (slot -> full item list; [] removes a slot)",
                                              max_lines=10)
                        with gr.Row():
                            approve_btn = gr.Button("Approve and send", variant="primary", elem_id="mhx-approve")
                            edit_btn = gr.Button("Send edited text", elem_id="mhx-edit")
                            replace_btn = gr.Button("Replace actions", elem_id="mhx-replace")
                            patch_btn = gr.Button("Correct state, send as planned", elem_id="mhx-patch")
                    with gr.Accordion("Review decisions (who, when)", open=False, elem_id="mhx-review-log"):
                        review_md = gr.Markdown(render.review_log(None))

            # ---------------------------------------------------------------- right: state and note
            with gr.Column(scale=4, min_width=320):
                gr.Markdown("### Patient state")
                state_box = gr.HTML(render.state_panel({}), elem_id="mhx-state-box")
                with gr.Accordion("Clinician's summary (not shared with the patient)", open=True,
                                  elem_id="mhx-summary"):
                    summary_md = gr.Markdown(render.clinician_summary(None), elem_id="mhx-summary-box")
                note = gr.Markdown(render.history_note(None), elem_id="mhx-note-box")

        review_buttons = (approve_btn, edit_btn, replace_btn, patch_btn)
        view_outputs = [sid_state, last_sid, sessions, chat, banner, state_box, summary_md, note, timing, action_title,
                        actions, utterance, state_patch, review_md, status, review_controls]

        # ------------------------------------------------------------------------------------------ views

        def session_choices(user: str) -> list[tuple[str, str]]:
            shared = console.settings.share_sessions
            return [(render.session_label(i) + (f" · {i.owner}" if shared and i.owner else ""), i.session_id)
                    for i in console.sessions(user)]

        def view(user: str, sid: str, message: str = "", kind: str = "info", running: dict | None = None) -> dict:
            """Every panel from the stored session (``running``: the latencies of a turn in progress)."""
            out: dict[Any, Any] = {sid_state: sid, last_sid: sid, status: render.status_html(message, kind)}
            out[sessions] = gr.Radio(choices=session_choices(user), value=sid or None)
            st = console.state(sid, user) if sid else None
            session = console.session(sid, user) if sid else None
            waiting = session.waiting_for() if session is not None else None
            pending = session.pending_review() if waiting == "review" and session is not None else None
            messages = render.chat_messages(st, pending_review=pending is not None)
            if running is not None:
                messages.append({"role": "assistant", "content": "…",
                                 "metadata": {"title": "Doctor's turn: " + (render.node_progress(running) or "starting"),
                                              "status": "pending"}})
            out[chat] = messages
            flags = st.red_flags if st else []
            out[banner] = gr.HTML(render.red_flag_banner(flags), visible=bool(flags))
            before = render.state_before_last_turn(st) if st else {}
            patient_state = st.patient_state if st else {}
            out[state_box] = render.state_panel(patient_state, render.changed_items(before, patient_state), before)
            out[summary_md] = render.clinician_summary(st)
            out[note] = render.history_note(st)
            out[timing] = render.latency_table(st.turns if st else [])
            out[review_md] = render.review_log(st)
            if pending is not None:
                out[action_title] = ("### Planned doctor action: awaiting your review\nApprove it, edit the text, "
                                     "replace the actions or correct the patient state; your name and the time are "
                                     "recorded with the decision.")
                out[actions] = render.actions_json(pending.get("actions"))
                out[utterance] = pending.get("text") or ""
                out[state_patch] = "{}"
            elif st is not None and st.doctor_turns():
                last = st.doctor_turns()[-1]
                out[action_title] = f"### Doctor action: last sent (turn {last.index})"
                out[actions] = render.actions_json(last.actions)
                out[utterance] = last.text
            else:
                out[action_title] = "### Doctor action\n_No interview open._"
                out[actions], out[utterance] = "[]", ""
            out[review_controls] = gr.Column(visible=pending is not None)
            out[actions] = gr.Code(value=out[actions], interactive=pending is not None)
            out[utterance] = gr.Textbox(value=out[utterance], interactive=pending is not None)
            return out

        def only_status(message: str, kind: str = "info") -> dict:
            return {status: render.status_html(message, kind)}

        def safe_view(user: str, sid: str, message: str, kind: str = "info") -> dict:
            """:func:`view`; when the session cannot be read (deleted, not the user's) the page without it, and the
            status saying why."""
            try:
                return view(user, sid, message, kind)
            except Exception as exc:
                log.warning("cannot show session %s: %s", sid, exc)
                return view(user, "", f"{message} {user_message(exc)}".strip(), "error")

        def guarded(fn):
            """A handler whose unexpected errors are said in the status line (and logged), never a traceback or a
            frozen page."""
            if inspect.isgeneratorfunction(fn):
                @functools.wraps(fn)
                def stream(*args, **kwargs):
                    try:
                        yield from fn(*args, **kwargs)
                    except Exception as exc:
                        log.exception("console handler %s failed", fn.__name__)
                        yield only_status(user_message(exc), "error")

                return stream

            @functools.wraps(fn)
            def call(*args, **kwargs):
                try:
                    return fn(*args, **kwargs)
                except Exception as exc:
                    log.exception("console handler %s failed", fn.__name__)
                    return only_status(user_message(exc), "error")

            return call

        def wait_for_modules(variant: Variant):
            """Status updates while the variant's modules are built (the caller yields them)."""
            llm = bool(console.preset(variant.preset).llm_roles)
            for waited in console.wait_ready(variant):
                yield only_status(f"Loading the agent ({variant.describe()})… {waited:.0f} s.{LOADING_HINT[llm]}",
                                  "busy")

        # ------------------------------------------------------------------------------------------ handlers

        def on_load(last: str, request: gr.Request):
            user = who(request, console)
            logout = ' <a href="logout">Sign out</a>' if getattr(request, "username", None) else ""
            modules = modules_panel(console.default_variant(), "")
            modules.pop(status)
            yield {header: f'<div id="mhx-header"><h1>medhx clinician console</h1><span class="who">Signed in as '
                           f'<b>{render.esc(user)}</b>{logout}</span></div>',
                   **modules, **safe_view(user, "", "Loading…", "busy")}
            try:
                yield from wait_for_modules(console.default_variant())
            except Exception as exc:
                yield only_status(f"The default agent could not be loaded: {user_message(exc)}", "error")
                return
            if last:
                try:
                    console.session(last, user)
                except Exception:
                    last = ""
            yield safe_view(user, last, f"Ready. Resumed interview {last}." if last else
                            "Ready. Start a new interview or pick one from the list.", "ok")

        def on_new(variant_v: dict, request: gr.Request):
            user = who(request, console)
            variant = variant_of(variant_v, console)
            try:
                yield from wait_for_modules(variant)
                yield only_status("Starting a new interview…", "busy")
                sid = console.start(variant, user)
            except Exception as exc:
                log.warning("new interview failed: %s", exc)
                yield only_status(user_message(exc), "error")
                return
            yield safe_view(user, sid, f"New interview {sid} started ({variant.describe()}).", "ok")

        def on_open(sid: str, variant_v: dict, request: gr.Request):
            user = who(request, console)
            if not sid:
                yield safe_view(user, "", "")
                return
            try:
                if console.session(sid, user).waiting_for() == "running":
                    variant = variant_of(variant_v, console)
                    yield only_status(f"Interview {sid} stopped mid-turn; finishing that turn first…", "busy")
                    yield from wait_for_modules(variant)
                    console.settle(variant, sid, user)
            except Exception as exc:
                yield safe_view(user, sid, user_message(exc), "error")
                return
            yield safe_view(user, sid, f"Resumed interview {sid}.", "ok")

        def on_refresh(sid: str, request: gr.Request):
            return safe_view(who(request, console), sid, "List refreshed.")

        def on_delete(target: str, sid: str, request: gr.Request):
            user = who(request, console)
            if not target:
                return only_status("Select an interview in the list to delete it.")
            try:
                console.delete(target, user)
            except Exception as exc:
                return safe_view(user, sid, user_message(exc), "error")
            return safe_view(user, "" if target == sid else sid, f"Deleted interview {target}.", "ok")

        def on_send(text: str, sid: str, variant_v: dict, request: gr.Request):
            user = who(request, console)
            text = (text or "").strip()
            if not sid:
                yield only_status("No interview is open: press \"New interview\" or pick one from the list.", "error")
                return
            if not text:
                yield only_status("Type the patient's answer first.", "error")
                return
            variant = variant_of(variant_v, console)
            try:
                yield from wait_for_modules(variant)
                run = console.begin_turn(variant, sid, user, text)
            except Exception as exc:
                yield {**safe_view(user, sid, user_message(exc), "error"), patient: text}
                return
            latency: dict[str, float] = {}
            t0 = time.monotonic()
            running = "nlu"
            yield {**view(user, sid, "Running the turn…", "busy", running=latency), patient: ""}
            for event in run.follow():
                if event is None:
                    yield only_status(f"Running the turn: {running}… {time.monotonic() - t0:.0f} s "
                                      f"({variant.describe()}).", "busy")
                    continue
                if event.get("type") == "update":
                    running = NEXT_NODE.get(event.get("node"), running)
                if event.get("type") == "custom" and event.get("event") == "latency":
                    latency[event["node"]] = float(event["seconds"])
                    yield view(user, sid, "Running the turn…", "busy", running=latency)
            if run.error is not None:
                stored = any(t.key == run.key for t in console.state(sid, user).patient_turns())
                yield {**safe_view(user, sid, user_message(run.error), "error"), **({} if stored else {patient: text})}
                return
            waiting = console.session(sid, user).waiting_for()
            st = console.state(sid, user)
            turn = len(st.turns)
            message = {"review": f"The planned doctor turn {turn} awaits your review",
                       None: "The interview has ended"}.get(waiting, f"Doctor turn {turn - 1} sent")
            message = f"{message} ({time.monotonic() - t0:.1f} s)."
            problems = render.turn_problems(st) if waiting != "review" else ""
            yield safe_view(user, sid, f"{message} Check this turn: {problems}." if problems else message,
                            "warn" if problems else "ok")

        def review_handler(kind: str):
            def handler(sid: str, variant_v: dict, actions_text: str, text: str, patch_text: str,
                        request: gr.Request):
                user = who(request, console)
                try:
                    decision = review_decision(kind, actions_text, text, patch_text)
                    variant = variant_of(variant_v, console)
                    for _ in console.wait_ready(variant):
                        pass
                    console.review(variant, sid, user, decision)
                except Exception as exc:
                    return only_status(user_message(exc), "error")
                edits = console.state(sid, user).review_edits
                turn = edits[-1].turn if edits else "?"
                return safe_view(user, sid, f"Review of doctor turn {turn} recorded ({kind.replace('_', ' ')} by "
                                            f"{user}).", "ok")

            return handler

        def on_preset(name: str, variant_v: dict):
            current = variant_of(variant_v, console)
            variant = Variant.of(name, review=current.review)
            return modules_panel(variant, f"Preset {name} selected: it runs from the next turn; the open "
                                          "interview is kept.")

        def on_adapter(variant_v: dict, review: bool, *chosen: str):
            current = variant_of(variant_v, console)
            preset = console.preset(current.preset)
            picked = {r: (None if a == BASE_MODEL else a) for r, a in zip(ROLES, chosen, strict=True)
                      if r in preset.llm_roles and a is not None}
            # a choice equal to the preset's own is no change (the same modules, not a second build of them)
            adapters = {r: a for r, a in picked.items() if a != preset.configured_adapter(r)}
            variant = Variant.of(current.preset, adapters, bool(review))
            console.prepare(variant)  # build in the background; the next turn waits for it with progress
            out = {variant_state: variant_value(variant),
                   status: render.status_html(f"Modules for the next turn: {variant.describe()}. The open interview "
                                              "is kept.", "ok")}
            return out

        def modules_panel(variant: Variant, message: str) -> dict:
            preset = console.preset(variant.preset)
            server = preset.server()
            served = served_models(server.url) if server else None
            out: dict[Any, Any] = {variant_state: variant_value(variant), server_md: server_status(preset, served),
                                   status: render.status_html(message, "ok")}
            for role in ROLES:
                if role in preset.llm_roles:
                    choices = adapter_choices(preset, role, served)
                    value = preset.configured_adapter(role) or BASE_MODEL
                    out[adapter_dd[role]] = gr.Dropdown(choices=choices, value=value, visible=True)
                else:
                    out[adapter_dd[role]] = gr.Dropdown(choices=[BASE_MODEL], value=BASE_MODEL, visible=False)
            console.prepare(variant)
            return out

        def on_check(variant_v: dict):
            variant = variant_of(variant_v, console)
            return modules_panel(variant, f"Checked the model server for preset {variant.preset}.")

        def export_handler(fmt: str):
            def handler(sid: str, request: gr.Request):
                user = who(request, console)
                try:
                    path = console.export_file(sid, user, fmt)
                except Exception as exc:
                    return {status: render.status_html(user_message(exc), "error")}
                return {files: gr.File(value=[str(path)], visible=True),
                        status: render.status_html(f"Exported {path.name}.", "ok")}

            return handler

        # ------------------------------------------------------------------------------------------ wiring

        private = {"api_visibility": "private"}
        demo.load(guarded(on_load), [last_sid], [header, *view_outputs, variant_state, server_md, *adapter_dd.values()],
                  **private)
        new_btn.click(guarded(on_new), [variant_state], view_outputs, **private)
        sessions.input(guarded(on_open), [sessions, variant_state], view_outputs, **private)
        refresh_btn.click(guarded(on_refresh), [sid_state], view_outputs, **private)
        delete_btn.click(guarded(on_delete), [sessions, sid_state], view_outputs, **private,
                         js="(target, sid) => [target && confirm('Delete interview ' + target + ' and its whole "
                            "history? This cannot be undone.') ? target : '', sid]")
        send_inputs = [patient, sid_state, variant_state]
        send_outputs = [*view_outputs, patient]
        patient.submit(guarded(on_send), send_inputs, send_outputs, **private)
        send_btn.click(guarded(on_send), send_inputs, send_outputs, **private)
        review_inputs = [sid_state, variant_state, actions, utterance, state_patch]
        for button, kind in zip(review_buttons, ("approve", "edit", "replace_actions", "state_patch"), strict=True):
            button.click(guarded(review_handler(kind)), review_inputs, view_outputs, **private)
        module_outputs = [variant_state, server_md, status, *adapter_dd.values()]
        preset_dd.input(guarded(on_preset), [preset_dd, variant_state], module_outputs, **private)
        for dd in adapter_dd.values():
            dd.input(guarded(on_adapter), [variant_state, review_cb, *adapter_dd.values()], [variant_state, status], **private)
        review_cb.input(guarded(on_adapter), [variant_state, review_cb, *adapter_dd.values()], [variant_state, status],
                        **private)
        check_btn.click(guarded(on_check), [variant_state], module_outputs, **private)
        for button, fmt in ((export_json, "meditod"), (export_md, "note"), (export_html, "html")):
            button.click(guarded(export_handler(fmt)), [sid_state], [files, status], **private)

        add_api(console)
    return demo


def render_role(role: str) -> str:
    return {"nlu": "NLU", "policy": "Policy", "nlg": "NLG"}[role]


def review_decision(kind: str, actions_text: str, text: str, patch_text: str) -> dict:
    """The review decision a button means, from the panel's fields; invalid JSON is a clear ValueError."""
    if kind == "approve":
        return {"approve": True}
    if kind == "edit":
        if not (text or "").strip():
            raise ValueError("the edited utterance is empty")
        return {"edit": text.strip()}
    field, raw = ("actions", actions_text) if kind == "replace_actions" else ("state correction", patch_text)
    try:
        value = json.loads(raw or "")
    except json.JSONDecodeError as exc:
        raise ValueError(f"the {field} is not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})") from None
    return {kind: value}


# --------------------------------------------------------------------------- the API


def add_api(console: Console) -> None:
    """Typed endpoints for scripts (``gradio_client``), each checked against the logged-in clinician."""

    def variant(preset: str, review: bool | None, adapters: str = "") -> Variant:
        name = preset or console.default_preset
        on = console.preset(name).review if review is None else review
        try:
            chosen = json.loads(adapters) if adapters else {}
        except json.JSONDecodeError as exc:
            raise ValueError(f"adapters is not valid JSON: {exc.msg}") from None
        if not isinstance(chosen, dict):
            raise ValueError('adapters is a JSON object: {"nlu": "ADAPTER" or null for the base model}')
        return Variant.of(name, chosen, on)

    def fail(exc: Exception) -> gr.Error:
        return gr.Error(user_message(exc), print_exception=False)

    def start_session(preset: str = "", review: bool | None = None, request: gr.Request = None) -> dict:
        """Start an interview; returns its id, the doctor's greeting and what it waits for."""
        try:
            v = variant(preset, review)
            sid = console.start(v, who(request, console))
            st = console.state(sid, who(request, console))
            return {"session_id": sid, "doctor": st.turns[-1].text if st.turns else None,
                    "waiting_for": console.session(sid, who(request, console)).waiting_for()}
        except Exception as exc:
            raise fail(exc) from None

    def send(session_id: str, text: str, preset: str = "", review: bool | None = None, adapters: str = "",
             request: gr.Request = None) -> dict:
        """One patient turn, run by ``preset`` (default: the console's) with ``adapters`` (JSON, role -> served
        LoRA adapter or null) and review on or off; returns the doctor's answer (None while it awaits review), the
        graph nodes that ran, red flags, timings and the clinician's summary (for the clinician: never said)."""
        user = who(request, console)
        try:
            run = console.begin_turn(variant(preset, review, adapters), session_id, user, text)
            nodes = [e["node"] for e in run.follow() if e and e.get("type") == "update"]
            if run.error is not None:
                raise run.error
            st = console.state(session_id, user)
            waiting = console.session(session_id, user).waiting_for()
            last = st.turns[-1]
            doctor = last.speaker == "doctor"
            return {"doctor": last.text if doctor and waiting != "review" else None,
                    "waiting_for": waiting, "nodes": nodes, "red_flags": st.red_flags,
                    "latency": last.latency if doctor else {}, "problems": render.turn_problems(st) if doctor else "",
                    "summary": st.summary}
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
            console.review(variant(preset, review), session_id, user, parsed)
            st = console.state(session_id, user)
            return {"doctor": st.doctor_turns()[-1].text,
                    "waiting_for": console.session(session_id, user).waiting_for(),
                    "review_edits": [e.model_dump(mode="json") for e in st.review_edits]}
        except json.JSONDecodeError as exc:
            raise fail(ValueError(f"decision is not valid JSON: {exc.msg}")) from None
        except Exception as exc:
            raise fail(exc) from None

    def session_state(session_id: str, request: gr.Request = None) -> dict:
        """The whole stored session (turns, patient state, red flags, the clinician's summary, review decisions)."""
        try:
            return console.state(session_id, who(request, console)).model_dump(mode="json")
        except Exception as exc:
            raise fail(exc) from None

    def sessions(request: gr.Request = None) -> list[dict]:
        """The clinician's interviews, most recent first."""
        return [asdict(i) for i in console.sessions(who(request, console))]

    def export(session_id: str, fmt: str = "meditod", request: gr.Request = None) -> str:
        """The interview as MediTOD JSON (``meditod``), the markdown note (``note``) or printable HTML (``html``)."""
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

    def modules(preset: str = "") -> dict:
        """What a preset runs and what can be switched: its LLM modules, the vLLM server's base model and adapters
        (``/v1/models``), the adapter choices per module, and the server status in words."""
        try:
            p = console.preset(preset or console.default_preset)
        except ValueError as exc:
            raise fail(exc) from None
        server = p.server()
        served = served_models(server.url) if server else None
        return {"preset": p.name, "summary": p.summary(), "llm_roles": sorted(p.llm_roles),
                "server": server.url if server else None, "status": server_status(p, served),
                "served": None if served is None or not served.up else {"base": served.base,
                                                                        "adapters": served.adapters},
                "choices": {r: adapter_choices(p, r, served) for r in p.llm_roles}}

    for fn in (start_session, send, review, session_state, sessions, export, delete_session, modules):
        gr.api(fn, api_name=fn.__name__)
