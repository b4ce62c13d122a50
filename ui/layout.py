"""The console's page: its components, laid out, and the values its states hold. No behaviour: the handlers
(:mod:`ui.handlers`) fill the components and :mod:`ui.app` wires the events.

Layout (a clinician's cockpit): the session sidebar, module selectors and exports on the left; the conversation,
the patient's input and the planned doctor action with its review controls in the middle; the live patient-state
panel, the clinician's summary (presentation, red-flag screen, ranked considerations with the facts for and against
each: for the clinician, never said to the patient) and the history note on the right; the red-flag banner across
the top the moment a rule fires.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import gradio as gr

from ui import render
from ui.console import Console
from ui.presets import BASE_MODEL, Variant, server_status

ROLES = ("nlu", "policy", "nlg")
ROLE_LABELS = {"nlu": "NLU", "policy": "Policy", "nlg": "NLG"}

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


# --------------------------------------------------------------------------- what the variant state holds


def variant_value(variant: Variant) -> dict:
    """A variant as the page's variant state holds it (a plain mapping: Gradio keeps it per browser tab)."""
    return {"preset": variant.preset, "adapters": dict(variant.adapters), "review": variant.review}


def variant_of(value: dict | None, console: Console) -> Variant:
    """The variant the page's variant state holds (the console's default before any choice)."""
    if not value:
        return console.default_variant()
    adapters = {r: (None if a == BASE_MODEL else a) for r, a in (value.get("adapters") or {}).items()}
    return Variant.of(value["preset"], adapters, bool(value.get("review")))


# --------------------------------------------------------------------------- the components


@dataclass(frozen=True)
class Sidebar:
    """The left column: the interviews, the module selectors and the exports."""

    new: gr.Button
    sessions: gr.Radio
    refresh: gr.Button
    delete: gr.Button
    preset: gr.Dropdown
    review_on: gr.Checkbox
    server: gr.Markdown
    adapters: dict[str, gr.Dropdown]  # role -> adapter choice, shown for the preset's LLM roles
    check: gr.Button
    export: dict[str, gr.Button]  # export format -> button
    files: gr.HTML  # the link to the last export, served by the console's owner-checked route (ui.exports)


@dataclass(frozen=True)
class Conversation:
    """The middle column: the interview, the patient's input, the turn timing and the doctor action under review."""

    chat: gr.Chatbot
    patient: gr.Textbox
    send: gr.Button
    timing: gr.Markdown
    action_title: gr.Markdown
    actions: gr.Code
    utterance: gr.Textbox
    review_controls: gr.Column  # shown only while a planned doctor turn awaits review
    state_patch: gr.Code
    review: dict[str, gr.Button]  # review decision kind -> button
    review_log: gr.Markdown


@dataclass(frozen=True)
class Record:
    """The right column: what the interview has recorded."""

    state_box: gr.HTML
    summary: gr.Markdown
    note: gr.Markdown
    access_log: gr.Markdown  # who opened, exported, reviewed, deleted the interview (its owner only)


@dataclass(frozen=True)
class Page:
    """Every component a handler reads or writes, by where it is on the page."""

    sid: gr.State  # the open interview's id ("" for none)
    variant: gr.State  # the modules of the next turn (:func:`variant_value`)
    last_sid: gr.BrowserState  # the interview to reopen when the page loads again
    header: gr.HTML
    banner: gr.HTML
    status: gr.HTML
    side: Sidebar
    talk: Conversation
    record: Record

    def view_outputs(self) -> list:
        """The components :func:`ui.handlers.view` draws from the stored session."""
        return [self.sid, self.last_sid, self.side.sessions, self.talk.chat, self.banner, self.record.state_box,
                self.record.summary, self.record.note, self.talk.timing, self.talk.action_title, self.talk.actions,
                self.talk.utterance, self.talk.state_patch, self.talk.review_log, self.status,
                self.talk.review_controls, self.record.access_log]

    def module_outputs(self) -> list:
        """The components :func:`ui.handlers.modules_panel` writes."""
        return [self.variant, self.side.server, self.status, *self.side.adapters.values()]


def last_session_key(console: Console) -> str:
    """The key the page's "interview to reopen" is kept under in the browser: the same in every console process on
    one store (Gradio's default is random per process, so a page reloaded onto another process, behind a proxy after
    its own stopped, or after a restart, reopened nothing). It is not a secret and need not be: the value is an
    interview id the clinician sees anyway, and reopening it checks on the server that it is theirs."""
    return hashlib.sha256(f"medhx last session: {console.reader.describe()}".encode()).hexdigest()[:32]


def build_page(console: Console) -> Page:
    """The console's components, laid out (inside the caller's ``gr.Blocks``)."""
    sid = gr.State("")
    variant = gr.State(variant_value(console.default_variant()))
    last_sid = gr.BrowserState("", storage_key="medhx_last_session", secret=last_session_key(console))

    header = gr.HTML('<div id="mhx-header"><h1>medhx clinician console</h1></div>')
    gr.HTML('<p id="mhx-disclaimer">Research and demonstration tool: it takes a history for a clinician to '
            "review. It is not a clinician and does not diagnose.</p>")
    banner = gr.HTML("", elem_id="mhx-banner", visible=False)
    status = gr.HTML(render.status_html("Starting…", "busy"), elem_id="mhx-status")

    with gr.Row(equal_height=False):
        with gr.Column(scale=2, min_width=260):
            side = build_sidebar(console)
        with gr.Column(scale=5, min_width=420):
            talk = build_conversation()
        with gr.Column(scale=4, min_width=320):
            record = build_record()
    return Page(sid=sid, variant=variant, last_sid=last_sid, header=header, banner=banner, status=status, side=side,
                talk=talk, record=record)


def build_sidebar(console: Console) -> Sidebar:
    default = console.default_variant()
    preset_choices = [(f"{p.name}: {p.summary()}", p.name) for p in console.presets.values()]
    new = gr.Button("New interview", variant="primary", elem_id="mhx-new")
    sessions = gr.Radio(label="Interviews (newest first)", choices=[], elem_id="mhx-sessions")
    with gr.Row():
        refresh = gr.Button("Refresh list", size="sm", elem_id="mhx-refresh")
        delete = gr.Button("Delete selected…", size="sm", elem_id="mhx-delete")
    with gr.Accordion("Modules (apply from the next turn)", open=False, elem_id="mhx-modules"):
        preset = gr.Dropdown(preset_choices, value=default.preset, label="Agent preset", elem_id="mhx-preset")
        review_on = gr.Checkbox(value=default.review, label="Clinician review before each doctor turn",
                                elem_id="mhx-review-toggle")
        server = gr.Markdown(server_status(console.presets[default.preset], None))
        adapters = {role: gr.Dropdown([BASE_MODEL], value=BASE_MODEL, label=f"{ROLE_LABELS[role]} adapter",
                                      visible=False, elem_id=f"mhx-adapter-{role}") for role in ROLES}
        check = gr.Button("Check the model server", size="sm")
    with gr.Accordion("Export", open=True, elem_id="mhx-export"):
        with gr.Row():
            export = {"meditod": gr.Button("MediTOD JSON", size="sm", elem_id="mhx-export-json"),
                      "note": gr.Button("Note (.md)", size="sm", elem_id="mhx-export-md"),
                      "html": gr.Button("Printable note", size="sm", elem_id="mhx-export-html"),
                      "access": gr.Button("Access log", size="sm", elem_id="mhx-export-access")}
        # a plain link to the console's own route: Gradio's File would copy the export into its shared temp dir
        files = gr.HTML("", elem_id="mhx-files", visible=False)
    return Sidebar(new=new, sessions=sessions, refresh=refresh, delete=delete, preset=preset, review_on=review_on,
                   server=server, adapters=adapters, check=check, export=export, files=files)


def build_conversation() -> Conversation:
    chat = gr.Chatbot(label="Interview (doctor: left, patient: right)", height=460, elem_id="mhx-chat",
                      buttons=["copy"], group_consecutive_messages=False,
                      placeholder="Start a new interview, or pick one from the list on the left.")
    with gr.Row(equal_height=True):
        patient = gr.Textbox(label="Patient's answer", placeholder="Type what the patient says, then Enter",
                             scale=6, elem_id="mhx-patient", max_lines=4)
        send = gr.Button("Send", variant="primary", scale=1, min_width=90, elem_id="mhx-send")
    with gr.Accordion("Turn timing (per graph node)", open=False, elem_id="mhx-timing"):
        timing = gr.Markdown(render.latency_table([]))
    with gr.Group(elem_id="mhx-review"):
        action_title = gr.Markdown("### Doctor action\n_No interview open._", elem_id="mhx-action-title")
        actions = gr.Code("[]", language="json", label="Actions (CMAS JSON)", interactive=False,
                          elem_id="mhx-actions", max_lines=12)
        utterance = gr.Textbox(label="Utterance", lines=2, interactive=False, elem_id="mhx-utterance")
        with gr.Column(visible=False) as review_controls:
            state_patch = gr.Code("{}", language="json", interactive=True, elem_id="mhx-state-patch",
                                  label="State correction (slot -> full item list; [] removes a slot)", max_lines=10)
            with gr.Row():
                review = {"approve": gr.Button("Approve and send", variant="primary", elem_id="mhx-approve"),
                          "edit": gr.Button("Send edited text", elem_id="mhx-edit"),
                          "replace_actions": gr.Button("Replace actions", elem_id="mhx-replace"),
                          "state_patch": gr.Button("Correct state, send as planned", elem_id="mhx-patch")}
        with gr.Accordion("Review decisions (who, when)", open=False, elem_id="mhx-review-log"):
            review_log = gr.Markdown(render.review_log(None))
    return Conversation(chat=chat, patient=patient, send=send, timing=timing, action_title=action_title,
                        actions=actions, utterance=utterance, review_controls=review_controls,
                        state_patch=state_patch, review=review, review_log=review_log)


def build_record() -> Record:
    gr.Markdown("### Patient state")
    state_box = gr.HTML(render.state_panel({}), elem_id="mhx-state-box")
    with gr.Accordion("Clinician's summary (not shared with the patient)", open=True, elem_id="mhx-summary"):
        summary = gr.Markdown(render.clinician_summary(None), elem_id="mhx-summary-box")
    note = gr.Markdown(render.history_note(None), elem_id="mhx-note-box")
    with gr.Accordion("Access log (who opened, exported, reviewed; owner only)", open=False,
                      elem_id="mhx-access-log"):
        access_log = gr.Markdown(render.access_log(None))
    return Record(state_box=state_box, summary=summary, note=note, access_log=access_log)
