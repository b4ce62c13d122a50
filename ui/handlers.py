"""The console's event handlers: plain functions of the console, the page (:class:`ui.layout.Page`) and the event's
inputs, each returning (or yielding, while modules build or a turn runs) a dict of component updates.

Every handler says what went wrong in the status line (:func:`ui.console.user_message`); the session is in the
store after every finished graph node, so an error never loses it. :func:`bind` gives a handler its console and page
for Gradio, and turns an error nobody expected into a status line too, never a traceback or a frozen page.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import gradio as gr

from ui import render
from ui.console import Console, TurnProgress, user_message
from ui.exports import download_name
from ui.layout import ROLES, Page, variant_of, variant_value
from ui.presets import BASE_MODEL, Variant, adapter_choices, served_models, server_status

log = logging.getLogger(__name__)

LOADING_HINT = {True: " An LLM preset may start a vLLM server first: a minute or more on CPU.", False: ""}
Updates = dict[Any, Any]
"""Component -> new value or ``gr.update``-style component, as Gradio takes them from a handler."""


def bind(handler: Callable, console: Console, page: Page, *given: Any) -> Callable:
    """``handler`` with its first arguments given (the console, the page and, for a button of a family, its own
    value), its unexpected errors said in the status line and logged.

    Gradio reads the bound function's parameters: their number is the event's inputs, and a ``gr.Request`` type
    hint asks for the request. So the bound function keeps the handler's name, annotations and ``__wrapped__``
    (whose module resolves the hints) and states its signature without the given arguments."""
    bound = (console, page, *given)
    if inspect.isgeneratorfunction(handler):
        def call(*args, **kwargs):
            try:
                yield from handler(*bound, *args, **kwargs)
            except Exception as exc:
                log.exception("console handler %s failed", handler.__name__)
                yield only_status(page, user_message(exc), "error")
    else:
        def call(*args, **kwargs):
            try:
                return handler(*bound, *args, **kwargs)
            except Exception as exc:
                log.exception("console handler %s failed", handler.__name__)
                return only_status(page, user_message(exc), "error")
    functools.update_wrapper(call, handler)
    params = list(inspect.signature(handler).parameters.values())
    call.__signature__ = inspect.Signature(params[len(bound):])
    return call


def who(request: gr.Request | None, console: Console) -> str:
    """The logged-in clinician (the login gate sets it); the anonymous owner when no login is configured."""
    name = getattr(request, "username", None) if request is not None else None
    return str(name) if name else console.settings.anonymous_user


# --------------------------------------------------------------------------- views


def only_status(page: Page, message: str, kind: str = "info") -> Updates:
    return {page.status: render.status_html(message, kind)}


def session_choices(console: Console, user: str) -> list[tuple[str, str]]:
    shared = console.settings.share_sessions
    return [(render.session_label(i) + (f" · {i.owner}" if shared and i.owner else ""), i.session_id)
            for i in console.sessions(user)]


def view(console: Console, page: Page, user: str, sid: str, message: str = "", kind: str = "info",
         running: dict | None = None) -> Updates:
    """Every panel from the stored session (``running``: the latencies of a turn in progress)."""
    talk, record = page.talk, page.record
    out: Updates = {page.sid: sid, page.last_sid: sid, page.status: render.status_html(message, kind)}
    out[page.side.sessions] = gr.Radio(choices=session_choices(console, user), value=sid or None)
    st = console.state(sid, user) if sid else None
    session = console.session(sid, user) if sid else None
    waiting = session.waiting_for() if session is not None else None
    pending = session.pending_review() if waiting == "review" and session is not None else None
    messages = render.chat_messages(st, pending_review=pending is not None)
    if running is not None:
        messages.append({"role": "assistant", "content": "…",
                         "metadata": {"title": "Doctor's turn: " + (render.node_progress(running) or "starting"),
                                      "status": "pending"}})
    out[talk.chat] = messages
    flags = st.red_flags if st else []
    out[page.banner] = gr.HTML(render.red_flag_banner(flags), visible=bool(flags))
    before = render.state_before_last_turn(st) if st else {}
    patient_state = st.patient_state if st else {}
    out[record.state_box] = render.state_panel(patient_state, render.changed_items(before, patient_state), before)
    out[record.summary] = render.clinician_summary(st)
    out[record.note] = render.history_note(st)
    mine = st is not None and st.owner == user
    out[record.access_log] = render.access_log(console.access_entries(user, sid) if mine else None,
                                               owner=mine or st is None)
    out[talk.timing] = render.latency_table(st.turns if st else [])
    out[talk.review_log] = render.review_log(st)
    if pending is not None:
        out[talk.action_title] = ("### Planned doctor action: awaiting your review\nApprove it, edit the text, "
                                  "replace the actions or correct the patient state; your name and the time are "
                                  "recorded with the decision.")
        out[talk.actions] = render.actions_json(pending.get("actions"))
        out[talk.utterance] = pending.get("text") or ""
        out[talk.state_patch] = "{}"
    elif st is not None and st.doctor_turns():
        last = st.doctor_turns()[-1]
        out[talk.action_title] = f"### Doctor action: last sent (turn {last.index})"
        out[talk.actions] = render.actions_json(last.actions)
        out[talk.utterance] = last.text
    else:
        out[talk.action_title] = "### Doctor action\n_No interview open._"
        out[talk.actions], out[talk.utterance] = "[]", ""
    out[talk.review_controls] = gr.Column(visible=pending is not None)
    out[talk.actions] = gr.Code(value=out[talk.actions], interactive=pending is not None)
    out[talk.utterance] = gr.Textbox(value=out[talk.utterance], interactive=pending is not None)
    return out


def safe_view(console: Console, page: Page, user: str, sid: str, message: str, kind: str = "info") -> Updates:
    """:func:`view`; when the session cannot be read (deleted, not the user's) the page without it, and the status
    saying why."""
    try:
        return view(console, page, user, sid, message, kind)
    except Exception as exc:
        log.warning("cannot show session %s: %s", sid, exc)
        return view(console, page, user, "", f"{message} {user_message(exc)}".strip(), "error")


def wait_for_modules(console: Console, page: Page, variant: Variant) -> Iterator[Updates]:
    """Status updates while the variant's modules are built (the caller yields them)."""
    llm = bool(console.preset(variant.preset).llm_roles)
    for waited in console.wait_ready(variant):
        yield only_status(page, f"Loading the agent ({variant.describe()})… {waited:.0f} s.{LOADING_HINT[llm]}",
                          "busy")


# --------------------------------------------------------------------------- sessions


def on_load(console: Console, page: Page, last: str, request: gr.Request) -> Iterator[Updates]:
    user = who(request, console)
    logout = ' <a href="logout">Sign out</a>' if getattr(request, "username", None) else ""
    modules = modules_panel(console, page, console.default_variant(), "")
    modules.pop(page.status)
    yield {page.header: f'<div id="mhx-header"><h1>medhx clinician console</h1><span class="who">Signed in as '
                        f'<b>{render.esc(user)}</b>{logout}</span></div>',
           **modules, **safe_view(console, page, user, "", "Loading…", "busy")}
    try:
        yield from wait_for_modules(console, page, console.default_variant())
    except Exception as exc:
        yield only_status(page, f"The default agent could not be loaded: {user_message(exc)}", "error")
        return
    if last:
        try:
            console.open(last, user)
        except Exception:
            last = ""
    yield safe_view(console, page, user, last, f"Ready. Resumed interview {last}." if last else
                    "Ready. Start a new interview or pick one from the list.", "ok")


def on_new(console: Console, page: Page, variant_v: dict, request: gr.Request) -> Iterator[Updates]:
    user = who(request, console)
    variant = variant_of(variant_v, console)
    try:
        yield from wait_for_modules(console, page, variant)
        yield only_status(page, "Starting a new interview…", "busy")
        sid = console.start(variant, user)
    except Exception as exc:
        log.warning("new interview failed: %s", exc)
        yield only_status(page, user_message(exc), "error")
        return
    yield safe_view(console, page, user, sid, f"New interview {sid} started ({variant.describe()}).", "ok")


def on_open(console: Console, page: Page, sid: str, variant_v: dict, request: gr.Request) -> Iterator[Updates]:
    user = who(request, console)
    if not sid:
        yield safe_view(console, page, user, "", "")
        return
    try:
        if console.open(sid, user).waiting_for() == "running":
            variant = variant_of(variant_v, console)
            yield only_status(page, f"Interview {sid} stopped mid-turn; finishing that turn first…", "busy")
            yield from wait_for_modules(console, page, variant)
            console.settle(variant, sid, user)
    except Exception as exc:
        yield safe_view(console, page, user, sid, user_message(exc), "error")
        return
    yield safe_view(console, page, user, sid, f"Resumed interview {sid}.", "ok")


def on_refresh(console: Console, page: Page, sid: str, request: gr.Request) -> Updates:
    return safe_view(console, page, who(request, console), sid, "List refreshed.")


def on_delete(console: Console, page: Page, target: str, sid: str, request: gr.Request) -> Updates:
    user = who(request, console)
    if not target:
        return only_status(page, "Select an interview in the list to delete it.")
    try:
        console.delete(target, user)
    except Exception as exc:
        return safe_view(console, page, user, sid, user_message(exc), "error")
    return safe_view(console, page, user, "" if target == sid else sid, f"Deleted interview {target}.", "ok")


def on_export(console: Console, page: Page, fmt: str, sid: str, request: gr.Request) -> Updates:
    """Write the export to the private data directory and show its link (the console's own route serves it)."""
    user = who(request, console)
    try:
        console.export_file(sid, user, fmt)
    except Exception as exc:
        return only_status(page, user_message(exc), "error")
    return {page.side.files: gr.HTML(render.export_link(sid, fmt), visible=True),
            page.status: render.status_html(f"Exported {download_name(sid, fmt)}.", "ok")}


# --------------------------------------------------------------------------- a turn and its review


def on_send(console: Console, page: Page, text: str, sid: str, variant_v: dict,
            request: gr.Request) -> Iterator[Updates]:
    """One patient turn, the page redrawn as each graph node finishes; the typed text is given back when the turn
    failed before the session stored it, so nothing the clinician typed is lost."""
    user = who(request, console)
    text = (text or "").strip()
    if not sid:
        yield only_status(page, "No interview is open: press \"New interview\" or pick one from the list.", "error")
        return
    if not text:
        yield only_status(page, "Type the patient's answer first.", "error")
        return
    variant = variant_of(variant_v, console)
    try:
        yield from wait_for_modules(console, page, variant)
        run = console.begin_turn(variant, sid, user, text)
    except Exception as exc:
        yield {**safe_view(console, page, user, sid, user_message(exc), "error"), page.talk.patient: text}
        return
    progress = TurnProgress()
    yield {**view(console, page, user, sid, "Running the turn…", "busy", running=progress.latency),
           page.talk.patient: ""}
    for step in progress.follow(run):
        if step == "tick":
            yield only_status(page, f"Running the turn: {progress.running}… {progress.seconds():.0f} s "
                                    f"({variant.describe()}).", "busy")
        else:
            yield view(console, page, user, sid, "Running the turn…", "busy", running=progress.latency)
    if run.error is not None:
        stored = any(t.key == run.key for t in console.state(sid, user).patient_turns())
        yield {**safe_view(console, page, user, sid, user_message(run.error), "error"),
               **({} if stored else {page.talk.patient: text})}
        return
    end = console.turn_end(sid, user)
    turn = len(end.state.turns)
    message = {"review": f"The planned doctor turn {turn} awaits your review",
               None: "The interview has ended"}.get(end.waiting, f"Doctor turn {turn - 1} sent")
    message = f"{message} ({progress.seconds():.1f} s)."
    problems = render.turn_problems(end.state) if end.waiting != "review" else ""
    yield safe_view(console, page, user, sid, f"{message} Check this turn: {problems}." if problems else message,
                    "warn" if problems else "ok")


def on_review(console: Console, page: Page, kind: str, sid: str, variant_v: dict, actions_text: str, text: str,
              patch_text: str, request: gr.Request) -> Updates:
    """The clinician's decision on the planned doctor turn: ``kind`` is the button's (see :func:`review_decision`)."""
    user = who(request, console)
    try:
        decision = review_decision(kind, actions_text, text, patch_text)
        variant = variant_of(variant_v, console)
        for _ in console.wait_ready(variant):
            pass
        end = console.review(variant, sid, user, decision)
    except Exception as exc:
        return only_status(page, user_message(exc), "error")
    edits = end.state.review_edits
    turn = edits[-1].turn if edits else "?"
    return safe_view(console, page, user, sid, f"Review of doctor turn {turn} recorded ({kind.replace('_', ' ')} by "
                                               f"{user}).", "ok")


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


# --------------------------------------------------------------------------- modules


def modules_panel(console: Console, page: Page, variant: Variant, message: str) -> Updates:
    """The module selectors for ``variant`` (adapter choices from the model server), its modules built meanwhile."""
    side = page.side
    preset = console.preset(variant.preset)
    server = preset.server()
    served = served_models(server.url) if server else None
    out: Updates = {page.variant: variant_value(variant), side.server: server_status(preset, served),
                    page.status: render.status_html(message, "ok")}
    for role in ROLES:
        if role in preset.llm_roles:
            choices = adapter_choices(preset, role, served)
            value = preset.configured_adapter(role) or BASE_MODEL
            out[side.adapters[role]] = gr.Dropdown(choices=choices, value=value, visible=True)
        else:
            out[side.adapters[role]] = gr.Dropdown(choices=[BASE_MODEL], value=BASE_MODEL, visible=False)
    console.prepare(variant)
    return out


def on_preset(console: Console, page: Page, name: str, variant_v: dict) -> Updates:
    current = variant_of(variant_v, console)
    variant = Variant.of(name, review=current.review)
    return modules_panel(console, page, variant, f"Preset {name} selected: it runs from the next turn; the open "
                                                 "interview is kept.")


def on_adapter(console: Console, page: Page, variant_v: dict, review: bool, *chosen: str) -> Updates:
    current = variant_of(variant_v, console)
    preset = console.preset(current.preset)
    picked = {r: (None if a == BASE_MODEL else a) for r, a in zip(ROLES, chosen, strict=True)
              if r in preset.llm_roles and a is not None}
    # a choice equal to the preset's own is no change (the same modules, not a second build of them)
    adapters = {r: a for r, a in picked.items() if a != preset.configured_adapter(r)}
    variant = Variant.of(current.preset, adapters, bool(review))
    console.prepare(variant)  # build in the background; the next turn waits for it with progress
    return {page.variant: variant_value(variant),
            page.status: render.status_html(f"Modules for the next turn: {variant.describe()}. The open interview "
                                            "is kept.", "ok")}


def on_check(console: Console, page: Page, variant_v: dict) -> Updates:
    variant = variant_of(variant_v, console)
    return modules_panel(console, page, variant, f"Checked the model server for preset {variant.preset}.")
