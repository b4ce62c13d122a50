"""What the console shows, as HTML / markdown strings: the patient-state panel, the red-flag banner, the
conversation, the clinician's summary, the history note (screen and printable), timings, review records and the
session list.

Pure functions of the session state (no Gradio), so they are tested and reused without a browser. Every string
that came from the patient or a model is escaped. Status is shown by colour *and* by its word, so it reads in
greyscale, on a printout and to a screen reader.
"""

from __future__ import annotations

import html
import json
from datetime import datetime

from markdown_it import MarkdownIt

from agent.app.access_log import AccessEntry
from agent.app.export import export_session, summary_markdown
from agent.app.graph import TURN_NODES
from agent.app.graph_state import InterviewState, Turn
from agent.app.sessions import SessionInfo
from agent.core import cmas
from agent.core.safety import level_rank
from ui.exports import download_name, export_href

GROUP_LABELS = {
    "symptom": "Symptoms", "medical_history": "Past medical history", "family_history": "Family history",
    "habit": "Habits", "exposure": "Exposures", "medication": "Medications", "medical_test": "Tests",
    "disease": "Conditions discussed", "travel": "Travel", "occupation": "Occupation", "residence": "Residence",
    "basic_information": "Basic information",
}
STATUS_WORDS = {"avail": "available", "unavail": "unavailable", "not_traveled": "not traveled",
                "not_living": "not living", "true": "working", "false": "not working"}
STATUS_CLASS = {0: "pos", 1: "neg", 2: "unk"}
RECORD_STATUS_CLASS = {"traveled": "pos", "not_traveled": "neg", "true": "pos", "false": "neg", "living": "pos",
                       "not_living": "neg"}
WAITING_WORDS = {"patient": "waiting for the patient", "review": "awaiting review", "running": "turn interrupted",
                 None: "ended"}

CSS = """
.mhx-panel { font-size: 0.92rem; color: #1d2939; }
.mhx-empty { color: #667085; font-style: italic; }
.mhx-group { margin: 0 0 0.8rem; }
.mhx-group h4 { margin: 0 0 0.3rem; font-size: 0.8rem; letter-spacing: .04em; text-transform: uppercase;
  color: #475467; border-bottom: 1px solid #eaecf0; padding-bottom: 0.15rem; }
.mhx-group ul { list-style: none; margin: 0; padding: 0; }
.mhx-item { padding: 0.3rem 0.45rem; margin: 0.2rem 0; border-radius: 6px; border: 1px solid #eaecf0;
  background: #ffffff; }
.mhx-item.changed { background: #fffaeb; border-color: #fec84b; }
.mhx-value { font-weight: 600; color: #101828; }
.mhx-badge { display: inline-block; min-width: 4.6em; text-align: center; font-size: 0.72rem; font-weight: 700;
  border-radius: 999px; padding: 0.05rem 0.45rem; margin-right: 0.35rem; border: 1px solid transparent; }
.mhx-badge.pos { background: #fee4e2; color: #912018; border-color: #fda29b; }
.mhx-badge.neg { background: #dcfae6; color: #085d3a; border-color: #75e0a7; }
.mhx-badge.unk { background: #f2f4f7; color: #344054; border-color: #d0d5dd; }
.mhx-badge.rec { background: #eff8ff; color: #175cd3; border-color: #b2ddff; }
.mhx-tag { font-size: 0.7rem; font-weight: 700; color: #93370d; background: #fef0c7; border-radius: 4px;
  padding: 0 0.3rem; margin-left: 0.35rem; }
.mhx-attrs { margin: 0.15rem 0 0 0.2rem; display: grid; grid-template-columns: max-content 1fr; gap: 0 0.6rem;
  font-size: 0.82rem; color: #344054; }
.mhx-attrs dt { color: #667085; } .mhx-attrs dd { margin: 0; }
.mhx-banner { border-radius: 8px; padding: 0.6rem 0.8rem; margin: 0 0 0.4rem; border: 2px solid; }
.mhx-banner.emergency { background: #fef3f2; border-color: #d92d20; color: #7a271a; }
.mhx-banner.urgent { background: #fffaeb; border-color: #dc6803; color: #7a2e0e; }
.mhx-banner.possible { background: #f5f8ff; border-color: #6172f3; color: #2d3282; border-style: dashed; }
.mhx-banner .lvl { font-weight: 800; letter-spacing: .05em; margin-right: 0.4rem; }
.mhx-banner .rule { font-family: ui-monospace, monospace; font-size: 0.8rem; }
.mhx-banner .ev { font-size: 0.85rem; margin-top: 0.2rem; }
.mhx-status { font-size: 0.88rem; padding: 0.35rem 0.6rem; border-radius: 6px; background: #f2f4f7;
  color: #344054; border: 1px solid #d0d5dd; }
.mhx-status.error { background: #fef3f2; color: #912018; border-color: #fda29b; }
.mhx-status.busy { background: #eff8ff; color: #175cd3; border-color: #b2ddff; }
.mhx-status.ok { background: #ecfdf3; color: #085d3a; border-color: #75e0a7; }
.mhx-status.warn { background: #fffaeb; color: #93370d; border-color: #fec84b; }
"""

PRINT_CSS = """
body { font-family: Georgia, "Times New Roman", serif; max-width: 46rem; margin: 2rem auto; color: #111;
  line-height: 1.45; }
h1 { font-size: 1.4rem; border-bottom: 2px solid #111; padding-bottom: .3rem; }
h2 { font-size: 1.05rem; margin-top: 1.3rem; text-transform: uppercase; letter-spacing: .04em; }
blockquote { border-left: 3px solid #999; margin-left: 0; padding-left: .8rem; color: #333; }
.meta { font-size: .85rem; color: #444; }
.noprint { margin: 1rem 0; }
@media print { .noprint { display: none; } body { margin: 0; } }
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


# --------------------------------------------------------------------------- patient state


def _item_key(name: str, index: int, item: dict) -> tuple[str, str]:
    return (name, str(item.get("value", index)) if name not in cmas.RECORD_SLOTS else str(index))


def changed_items(before: dict, after: dict) -> set[tuple[str, str]]:
    """The (slot, value) items of ``after`` that are new or different from ``before``."""
    old = {_item_key(n, i, it): it for n, items in (before or {}).items() for i, it in enumerate(items or [])}
    return {k for n, items in (after or {}).items() for i, it in enumerate(items or [])
            if old.get(k := _item_key(n, i, it)) != it}


def state_before_last_turn(st: InterviewState) -> dict:
    """The patient state before the latest patient turn (what "changed this turn" compares against)."""
    states = [t.state for t in st.patient_turns() if t.state is not None]
    return states[-2] if len(states) >= 2 else {}


def _attrs(item: dict, skip: tuple[str, ...] = ("value", "status")) -> str:
    rows = [(k, ", ".join(v) if isinstance(v, list) else v) for k, v in item.items() if k not in skip and v]
    if not rows:
        return ""
    return '<dl class="mhx-attrs">' + "".join(
        f"<dt>{esc(k.replace('_', ' '))}</dt><dd>{esc(v)}</dd>" for k, v in rows) + "</dl>"


def _row(badge_class: str, badge: str, value: str, attrs: str, changed: bool, is_new: bool) -> str:
    tag = f'<span class="mhx-tag">{"new" if is_new else "updated"} this turn</span>' if changed else ""
    return (f'<li class="mhx-item{" changed" if changed else ""}"><span class="mhx-badge {badge_class}">{esc(badge)}'
            f'</span><span class="mhx-value">{esc(value)}</span>{tag}{attrs}</li>')


def state_panel(state: dict, changed: set[tuple[str, str]] | None = None, before: dict | None = None) -> str:
    """The patient state grouped by CMAS slot type; each value with its status (colour and word) and attributes,
    the values that changed this turn highlighted and tagged."""
    changed = changed or set()
    old_keys = {_item_key(n, i, it) for n, items in (before or {}).items() for i, it in enumerate(items or [])}
    groups = []
    for base, spec in cmas.SLOTS.items():
        rows = []
        if spec.statuses:
            for idx, status in enumerate(spec.statuses):
                name = f"{status}_{base}"
                for i, item in enumerate(state.get(name) or []):
                    key = _item_key(name, i, item)
                    rows.append(_row(STATUS_CLASS[idx], STATUS_WORDS.get(status, status), str(item.get("value", "?")),
                                     _attrs(item), key in changed, key not in old_keys))
        else:
            for i, item in enumerate(state.get(base) or []):
                key = _item_key(base, i, item)
                status = str(item.get("status") or "")
                value = item.get("value") or item.get("destination") or ""
                label = STATUS_WORDS.get(status, status) or "recorded"
                rows.append(_row(RECORD_STATUS_CLASS.get(status, "rec"), label, str(value or GROUP_LABELS[base]),
                                 _attrs(item, ("value", "status") if value else ("status",)), key in changed,
                                 key not in old_keys))
        if rows:
            groups.append(f'<section class="mhx-group" data-slot="{base}"><h4>{GROUP_LABELS[base]}</h4>'
                          f'<ul>{"".join(rows)}</ul></section>')
    body = "".join(groups) or '<p class="mhx-empty">Nothing recorded yet.</p>'
    return f'<div class="mhx-panel" id="mhx-state-panel">{body}</div>'


# --------------------------------------------------------------------------- red flags


def _evidence(flag: dict) -> str:
    parts = []
    for e in flag.get("evidence") or []:
        if isinstance(e, dict):
            slot = str(e.get("slot", "")).replace("_", " ")
            text = f"{e.get('value', '?')}" + (f" ({slot})" if slot else "")
            if e.get("severity"):
                text += f", severity {e['severity']}"
            parts.append(text)
        else:
            parts.append(str(e))
    return "; ".join(parts)


def red_flag_banner(flags: list[dict]) -> str:
    """One banner per fired rule, most severe first: the level (word and colour), the message, rule and evidence."""
    if not flags:
        return ""
    rows = []
    for f in sorted(flags, key=lambda f: level_rank(str(f.get("level")))):
        level = str(f.get("level") or "urgent")
        turn = f" · patient turn {f['turn']}" if f.get("turn") is not None else ""
        ev = _evidence(f)
        rows.append(
            f'<div class="mhx-banner {esc(level)}" role="alert"><span class="lvl">RED FLAG · {esc(level.upper())}'
            f'</span>{esc(f.get("message", ""))}<div class="ev">Rule <span class="rule">{esc(f.get("id", "?"))}</span>'
            f'{esc(turn)}{" · evidence: " + esc(ev) if ev else ""}</div></div>')
    return f'<div id="mhx-red-flags">{"".join(rows)}</div>'


# --------------------------------------------------------------------------- conversation and timings


def chat_messages(st: InterviewState | None, pending_review: bool = False) -> list[dict]:
    """The conversation in Gradio's messages format: the doctor is the assistant, the patient the user."""
    if st is None:
        return []
    out = [{"role": "assistant" if t.speaker == "doctor" else "user", "content": t.text} for t in st.turns]
    if pending_review:
        out.append({"role": "assistant", "content": "(planned doctor turn awaiting clinician review)",
                    "metadata": {"title": "Awaiting review", "status": "pending"}})
    return out


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def node_progress(latency: dict[str, float], running: str | None = None) -> str:
    """``nlu 2 ms ✓ · track 1 ms ✓ · policy …``: the turn so far."""
    parts = [f"{n} {_ms(s)} ✓" for n, s in latency.items()]
    if running:
        parts.append(f"{running} …")
    return " · ".join(parts)


def latency_table(turns: list[Turn], limit: int = 12) -> str:
    """Per-node latency of the latest doctor turns (markdown), newest first."""
    rows = [t for t in turns if t.speaker == "doctor" and t.latency][-limit:]
    if not rows:
        return "_No timed turns yet._"
    nodes = [n for n in TURN_NODES if any(n in t.latency for t in rows)]  # the timed ones, in graph order
    nodes += sorted({n for t in rows for n in t.latency} - set(nodes))
    head = "| turn | " + " | ".join(nodes) + " | total |\n|---|" + "---|" * (len(nodes) + 1)
    lines = [f"| {t.index} | " + " | ".join(_ms(t.latency[n]) if n in t.latency else "" for n in nodes)
             + f" | **{_ms(sum(t.latency.values()))}** |" for t in reversed(rows)]
    return "\n".join([head, *lines])


def review_log(st: InterviewState | None) -> str:
    """Every clinician decision on a planned doctor turn: who, when, what (markdown)."""
    if st is None or not st.review_edits:
        return "_No review decisions recorded._"
    lines = ["| turn | decision | by | at |", "|---|---|---|---|"]
    for e in st.review_edits:
        lines.append(f"| {e.turn} | {e.kind.replace('_', ' ')} | {esc(e.by)} | {esc(_when(e.at))} |")
    return "\n".join(lines)


ACCESS_WORDS = {"started": "started", "opened": "opened", "turn": "patient turn", "reviewed": "reviewed",
                "exported": "exported", "downloaded": "downloaded", "deleted": "deleted"}


def access_log(entries: list[AccessEntry] | None, owner: bool = True) -> str:
    """Who did what with the interview, and when (markdown; for its owner only): the access log, newest first,
    refused attempts in bold."""
    if not owner:
        return "_Only the interview's owner sees its access log._"
    if not entries:
        return "_Nothing recorded yet._"
    lines = ["| at | who | what | |", "|---|---|---|---|"]
    for e in reversed(entries):
        what = ACCESS_WORDS.get(e.action, e.action) + (f" ({e.detail})" if e.detail else "")
        outcome = "**refused**" if e.outcome == "refused" else "done"
        lines.append(f"| {esc(_when(e.at, seconds=True))} | {esc(e.actor)} | {esc(what)} | {outcome} |")
    return "\n".join(lines)


def export_link(session_id: str, fmt: str) -> str:
    """The link to an export file, served by the console's own owner-checked route (:mod:`ui.exports`)."""
    name = download_name(session_id, fmt)
    return (f'<div id="mhx-export-links"><a href="{esc(export_href(session_id, fmt))}" download="{esc(name)}">'
            f"{esc(name)}</a></div>")


def actions_json(actions: list[dict] | None) -> str:
    return json.dumps(actions or [], indent=2, ensure_ascii=False)


# --------------------------------------------------------------------------- sessions


def _when(at: str | None, seconds: bool = False) -> str:
    if not at:
        return ""
    try:
        return datetime.fromisoformat(at).strftime("%Y-%m-%d %H:%M:%S UTC" if seconds else "%Y-%m-%d %H:%M UTC")
    except ValueError:
        return at


def session_label(info: SessionInfo) -> str:
    flags = f" · {info.red_flags} red flag{'s' if info.red_flags != 1 else ''}" if info.red_flags else ""
    state = WAITING_WORDS.get(info.waiting_for, info.waiting_for) if info.status == "active" else info.status
    return f"{info.session_id} · {state} · {info.turns} turns{flags} · {_when(info.updated_at)}"


def turn_problems(st: InterviewState | None) -> str:
    """What went wrong in the latest doctor turn although it was sent: modules that fell back (a model server down
    or past the turn deadline) and utterances the guard replaced. Empty when nothing did."""
    doctor = st.doctor_turns() if st is not None else []
    if not doctor:
        return ""
    meta = doctor[-1].meta
    parts = [f"{role} fell back ({reason})" for role, reason in (meta.get("fallback") or {}).items()]
    if meta.get("nlg_guard"):
        parts.append(f"the utterance was replaced ({meta['nlg_guard'].get('reason')})")
    return "; ".join(parts)


def status_html(text: str, kind: str = "info") -> str:
    return f'<div class="mhx-status {esc(kind)}" role="status">{esc(text)}</div>' if text else ""


# --------------------------------------------------------------------------- clinician's summary and history note


def clinician_summary(st: InterviewState | None) -> str:
    """The clinician's summary of the interview (``InterviewState.summary``, renewed at every doctor turn) as markdown:
    the same text as the history note's section (:func:`agent.app.export.summary_markdown`). For the clinician's panel
    only; it is never part of what the patient is told."""
    if st is None:
        return "_Open an interview to see the clinician's summary._"
    return summary_markdown(st.summary)



def history_note(st: InterviewState | None) -> str:
    if st is None:
        return "_Open an interview to see its history note._"
    return export_session(st, "note")


def printable_note(st: InterviewState) -> str:
    """The history note as a self-contained HTML page, laid out for printing (or the browser's save as PDF)."""
    body = MarkdownIt("commonmark", {"html": False}).render(history_note(st))
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>History note {esc(st.session_id)}</title><style>{PRINT_CSS}</style></head><body>"
            '<p class="noprint"><button onclick="window.print()">Print or save as PDF</button></p>'
            f'<p class="meta">Session {esc(st.session_id)} · started {esc(_when(st.created_at))} · '
            f"clinician {esc(st.owner or 'n/a')} · status {esc(st.status)}</p>{body}</body></html>")
