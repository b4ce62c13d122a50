"""The clinician console: a Gradio Blocks app over :class:`ui.console.Console`.

Split in three: the page's components and layout (:mod:`ui.layout`), what each event does (:mod:`ui.handlers`),
and here the wiring of the one to the other. The same operations are offered as a small API (:mod:`ui.api`) for
scripts and tests; the page's own events are private.
"""

from __future__ import annotations

import gradio as gr

from ui import handlers
from ui.api import add_api
from ui.console import Console
from ui.handlers import bind
from ui.layout import Page, build_page


def build_blocks(console: Console) -> gr.Blocks:
    # exports never pass through Gradio's cache: they are links to the console's own route (ui.exports)
    with gr.Blocks(title="medhx clinician console", fill_width=True) as demo:
        page = build_page(console)
        wire(demo, console, page)
        add_api(console)
    return demo


def wire(demo: gr.Blocks, console: Console, page: Page) -> None:
    """Each event of the page to its handler, with the components it reads and writes."""
    side, talk = page.side, page.talk
    private = {"api_visibility": "private"}
    views = page.view_outputs()
    demo.load(bind(handlers.on_load, console, page), [page.last_sid],
              [page.header, *views, page.variant, side.server, *side.adapters.values()], **private)
    side.new.click(bind(handlers.on_new, console, page), [page.variant], views, **private)
    side.sessions.input(bind(handlers.on_open, console, page), [side.sessions, page.variant], views, **private)
    side.refresh.click(bind(handlers.on_refresh, console, page), [page.sid], views, **private)
    side.delete.click(bind(handlers.on_delete, console, page), [side.sessions, page.sid], views, **private,
                      js="(target, sid) => [target && confirm('Delete interview ' + target + ' and its whole "
                         "history? This cannot be undone.') ? target : '', sid]")

    send_inputs = [talk.patient, page.sid, page.variant]
    send_outputs = [*views, talk.patient]
    talk.patient.submit(bind(handlers.on_send, console, page), send_inputs, send_outputs, **private)
    talk.send.click(bind(handlers.on_send, console, page), send_inputs, send_outputs, **private)
    review_inputs = [page.sid, page.variant, talk.actions, talk.utterance, talk.state_patch]
    for kind, button in talk.review.items():
        button.click(bind(handlers.on_review, console, page, kind), review_inputs, views, **private)

    module_outputs = page.module_outputs()
    side.preset.input(bind(handlers.on_preset, console, page), [side.preset, page.variant], module_outputs,
                      **private)
    adapter_inputs = [page.variant, side.review_on, *side.adapters.values()]
    for dropdown in (*side.adapters.values(), side.review_on):
        dropdown.input(bind(handlers.on_adapter, console, page), adapter_inputs, [page.variant, page.status],
                       **private)
    side.check.click(bind(handlers.on_check, console, page), [page.variant], module_outputs, **private)
    for fmt, button in side.export.items():
        button.click(bind(handlers.on_export, console, page, fmt), [page.sid], [side.files, page.status], **private)
