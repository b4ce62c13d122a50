"""Export an interview: MediTOD-format JSON (loads back with ``agent.core.data.load_dialogs_file``, strict)
and a clinician-readable history note (markdown).

The input is a :class:`Transcript`: dataset utterances (:class:`agent.core.data.Utterance`), red flags and, for a live
session, the clinician's summary (:mod:`policies.summary`). A live session becomes one with
:meth:`Transcript.from_session`; a dataset dialogue is already utterances (and has no summary).

:func:`summary_markdown` is the one rendering of the clinician's summary: the note's section and the console's panel
(``ui/render.py``) both use it. It is never part of a doctor turn: the summary is never said to the patient.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.app.graph_state import InterviewState
from agent.core import cmas, cmas_wording
from agent.core.data import Dialogue, Utterance
from agent.core.safety import DISCLAIMER, RedFlag
from agent.core.tracker import update_state


class ExportError(ValueError):
    pass


@dataclass
class Transcript:
    """A whole interview to export: its turns as dataset utterances (:class:`agent.core.data.Utterance`, the one turn
    type of dialogues on disk), the red flags raised and the clinician's summary (``InterviewState.summary``; None
    for a dataset dialogue). A live session becomes one with :meth:`from_session`, through the one conversion
    :meth:`agent.app.graph_state.Turn.to_utterance`. The summary goes into the note only, never into MediTOD JSON."""

    session_id: str
    turns: list[Utterance]
    red_flags: list[RedFlag] = field(default_factory=list)
    summary: dict | None = None

    def __post_init__(self) -> None:
        for i, u in enumerate(self.turns):
            _check(u, f"turn {i}")

    @classmethod
    def from_session(cls, st: InterviewState) -> Transcript:
        flags = [_red_flag(f, i) for i, f in enumerate(st.red_flags)]
        return cls(st.session_id, [t.to_utterance() for t in st.turns], flags, st.summary)

    def final_state(self) -> dict:
        """The last recorded patient state; turns with NLU but no state are folded in with the tracker."""
        state: dict = {}
        for t in self.turns:
            if t.speaker != "patient":
                continue
            if t.dialog_state is not None:
                state = t.dialog_state
            elif t.nlu is not None:
                state = update_state(state, t.nlu)
        return state


def _check(u: Utterance, where: str) -> None:
    """Strict CMAS, and each annotation on the speaker it belongs to (export never writes what cannot load back)."""
    if u.speaker not in ("doctor", "patient"):
        raise ExportError(f"{where}: speaker must be 'doctor' or 'patient', got {u.speaker!r}")
    if not isinstance(u.text, str):
        raise ExportError(f"{where}: text must be a string")
    try:
        if u.speaker == "doctor":
            if u.nlu is not None or u.dialog_state is not None:
                raise ExportError(f"{where}: a doctor turn carries actions, not nlu/state")
            if u.actions is not None:
                u.actions = cmas.parse_actions(u.actions)
        else:
            if u.actions is not None:
                raise ExportError(f"{where}: a patient turn carries nlu/state, not actions")
            if u.nlu is not None:
                u.nlu = cmas.parse_nlu(u.nlu)
            if u.dialog_state is not None:
                u.dialog_state = cmas.parse_state(u.dialog_state)
    except cmas.CMASError as exc:
        raise ExportError(f"{where}: {exc}") from None


def _red_flag(raw: dict, i: int) -> RedFlag:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not isinstance(raw.get("message"), str):
        raise ExportError(f"red flag {i}: expected a mapping with 'id' and 'message'")
    return RedFlag(raw["id"], raw["message"], str(raw.get("level", "urgent")), list(raw.get("evidence") or []))


# --------------------------------------------------------------------------- MediTOD JSON


def to_dialogue(transcript: Transcript) -> Dialogue:
    utts = [Utterance(t.speaker, i, t.text, list(t.keywords), nlu=t.nlu, dialog_state=t.dialog_state, actions=t.actions)
            for i, t in enumerate(transcript.turns)]
    return Dialogue(transcript.session_id, utts)


def to_meditod(transcripts: Transcript | list[Transcript]) -> dict:
    """``{dialog_id: {"utterances": [...]}}``: the layout of the dataset's ``dialogs.json``."""
    items = [transcripts] if isinstance(transcripts, Transcript) else transcripts
    out: dict[str, Any] = {}
    for t in items:
        if t.session_id in out:
            raise ExportError(f"duplicate dialogue id {t.session_id!r}")
        out[t.session_id] = to_dialogue(t).to_json()
    return out


def write_meditod(transcripts: Transcript | list[Transcript], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(to_meditod(transcripts), indent=1, ensure_ascii=False))
    return path


# --------------------------------------------------------------------------- history note

NONE_RECORDED = "_None recorded._"


def _fmt(value: Any) -> str:
    return ", ".join(value) if isinstance(value, list) else str(value)


def _details(item: dict, labels: tuple[tuple[str, str], ...]) -> str:
    parts = []
    for attr, label in labels:
        if item.get(attr) not in (None, "", []):
            v = _fmt(item[attr])
            parts.append(f"{label} {v}/10" if attr == "severity" and v.isdigit() else f"{label} {v}")
    return "; ".join(parts)


def _entry(item: dict, labels: tuple[tuple[str, str], ...]) -> str:
    detail = _details(item, labels)
    return f"**{cmas_wording.note_name(item.get('value', '?'))}**" + (f" — {detail}" if detail else "")


def _inline(item: dict, labels: tuple[tuple[str, str], ...]) -> str:
    detail = _details(item, labels)
    return cmas_wording.note_name(item.get("value", "?")) + (f" ({detail})" if detail else "")


def _values(state: dict, name: str, keep=lambda v: True) -> list[dict]:
    return [it for it in state.get(name) or [] if keep(str(it.get("value", "")))]


def _status_lines(state: dict, base: str, labels: tuple[tuple[str, str], ...], keep=lambda v: True,
                  negative: str = "Denies", unknown: str = "Unsure") -> list[str]:
    spec = cmas.SLOTS[base]
    pos_name = f"{spec.statuses[0]}_{base}"
    lines = [f"- {_entry(it, labels)}" for it in _values(state, pos_name, keep)]
    for status, label in zip(spec.statuses[1:], (negative, unknown), strict=True):
        items = _values(state, f"{status}_{base}", keep)
        if items:
            lines.append(f"- {label}: " + "; ".join(_inline(it, labels) for it in items))
    return lines


def _is_allergy(value: str) -> bool:
    return "allerg" in value.casefold()


def _presenting(transcript: Transcript, state: dict) -> tuple[list[str], str | None]:
    for t in transcript.turns:
        if t.speaker == "patient" and t.nlu:
            values = [it["value"] for f in t.nlu for it in (f.get("slots") or {}).get("positive_symptom", [])]
            if values:
                return list(dict.fromkeys(values)), t.text
    return [it["value"] for it in state.get("positive_symptom", [])[:1]], None


def _complaint_name(value: str, state: dict) -> str:
    """A presenting complaint as a clinician heads a note with it: the symptom with where it is, as the state has it
    by the end ("pain (right side, abdomen)", not "pain")."""
    item = next((it for it in state.get("positive_symptom") or [] if it.get("value") == value), {})
    where = [x for x in item.get("location") or [] if isinstance(x, str)]
    name = cmas_wording.note_name(value)
    return f"{name} ({', '.join(where)})" if where else name


def _record(state: dict, name: str) -> dict:
    items = state.get(name) or []
    return items[0] if items else {}


def history_note(transcript: Transcript, diagnoses: bool = True) -> str:
    """A clinician-readable history note (markdown) from the transcript's final patient state."""
    state = transcript.final_state()
    out = [f"# History note — session {transcript.session_id}", "",
           "_Taken by an automated history-taking assistant, for review by a clinician._", ""]
    out += _red_flag_section(transcript.red_flags)
    out += _complaint_sections(transcript, state)
    out += _history_sections(state)
    out += ["", "## Social history", *(_social_lines(state) or [NONE_RECORDED])]
    out += _record_sections(state)
    if diagnoses:
        out += _conditions_section(transcript)
    if transcript.summary is not None:
        out += ["", f"## {SUMMARY_TITLE}", summary_markdown(transcript.summary)]
    out += ["", "---", f"_{DISCLAIMER}_", ""]
    return "\n".join(out)


def _red_flag_section(flags: list[RedFlag]) -> list[str]:
    if not flags:
        return ["## Red flags", NONE_RECORDED]
    out = ["## Red flags"]
    for f in flags:
        ev = ", ".join(f"{e.get('value')} ({e.get('slot')})" for e in f.evidence)
        out.append(f"- **{f.level.upper()}** `{f.id}`: {f.message}" + (f" Evidence: {ev}." if ev else ""))
    return out


def _complaint_sections(transcript: Transcript, state: dict) -> list[str]:
    """The presenting complaint (in the patient's first words that named a symptom) and its history: every positive
    symptom with its attributes, then the pertinent negatives and the symptoms the patient was unsure of."""
    complaint, words = _presenting(transcript, state)
    out = ["", "## Presenting complaint", ", ".join(_complaint_name(v, state) for v in complaint) if complaint
           else NONE_RECORDED]
    if words:
        out.append(f"> {words}")
    out += ["", "## History of presenting complaint"]
    hpi = [f"- {_entry(it, cmas_wording.SYMPTOM_ATTRS)}" for it in state.get("positive_symptom", [])]
    out += hpi or [NONE_RECORDED]
    negatives = [_inline(it, cmas_wording.SYMPTOM_ATTRS) for it in state.get("negative_symptom", [])]
    if negatives:
        out.append(f"- Pertinent negatives: {'; '.join(negatives)}")
    unsure = [_inline(it, cmas_wording.SYMPTOM_ATTRS) for it in state.get("unknown_symptom", [])]
    if unsure:
        out.append(f"- Unsure: {'; '.join(unsure)}")
    return out


def _history_sections(state: dict) -> list[str]:
    """Past medical history, medications, allergies and exposures, family history (each "None recorded" when empty).
    Allergies are medical history in CMAS; the note files them under their own heading, not as past history."""
    mh_labels = (("starting", "since"), ("frequency", "frequency:"))
    out = ["", "## Past medical history"]
    out += _status_lines(state, "medical_history", mh_labels, keep=lambda v: not _is_allergy(v)) or [NONE_RECORDED]

    med_labels = (("respone_to", "for"), ("impact", "helped:"), ("frequency", "frequency:"), ("start", "since"))
    out += ["", "## Medications"]
    out += _status_lines(state, "medication", med_labels, negative="Not taking", unknown="Unsure about") or [
        NONE_RECORDED
    ]

    out += ["", "## Allergies and exposures"]
    allergy = _status_lines(state, "medical_history", mh_labels, keep=_is_allergy, negative="No allergy")
    exposure = _status_lines(state, "exposure", (("where", "where:"), ("when", "when:")), negative="No exposure to")
    out += (allergy + exposure) or [NONE_RECORDED]

    out += ["", "## Family history"]
    out += _status_lines(state, "family_history", (("relation", "relation:"),), negative="No family history of") \
        or [NONE_RECORDED]
    return out


def _social_lines(state: dict) -> list[str]:
    """Habits, then the one occupation, residence and travel record (each a line when recorded)."""
    social = _status_lines(state, "habit", (("frequency", "amount:"), ("starting", "since")))
    occ = _record(state, "occupation")
    if occ:
        status = {"true": "", "false": " (not working)"}.get(str(occ.get("status")), "")
        extra = "; ".join(f"{k}: {occ[k]}" for k in ("exposure", "hazards", "when") if occ.get(k))
        social.append(f"- Occupation: {occ.get('value', 'not stated')}{status}" + (f" — {extra}" if extra else ""))
    res = _record(state, "residence")
    if res:
        extra = "; ".join(f"{k.replace('_', ' ')}: {res[k]}" for k in ("household_size", "when") if res.get(k))
        social.append(f"- Residence: {res.get('value', 'not stated')}" + (f" — {extra}" if extra else ""))
    trv = _record(state, "travel")
    if trv:
        if trv.get("status") == "not_traveled":
            social.append("- Travel: no recent travel")
        else:
            extra = "; ".join(
                f"{k}: {trv[k]}" for k in ("destination", "value", "when", "date", "frequency") if trv.get(k)
            )
            social.append("- Travel: recent travel" + (f" — {extra}" if extra else ""))
    return social


def _record_sections(state: dict) -> list[str]:
    """Investigations and basic information: sections only when something was recorded."""
    out = []
    tests = _status_lines(state, "medical_test", (("when", "when:"),), negative="Results not available",
                          unknown="Unsure about")
    if tests:
        out += ["", "## Investigations", *tests]
    basic = _record(state, "basic_information")
    if basic:
        out += ["", "## Basic information", "- " + "; ".join(f"{k}: {v}" for k, v in basic.items())]
    return out


def _conditions_section(transcript: Transcript) -> list[str]:
    """The conditions the doctor's diagnosis actions named, once each in the order first named (none: no section)."""
    discussed = [it["value"] for t in transcript.turns if t.speaker == "doctor"
                 for a in t.actions or [] if a.get("action") == "diagnosis"
                 for it in a.get("disease") or []]
    if not discussed:
        return []
    return ["", "## Possible conditions raised during the interview (for clinician review, not a diagnosis)",
            *[f"- {d}" for d in dict.fromkeys(discussed)]]


# --------------------------------------------------------------------------- the clinician's summary

SUMMARY_TITLE = "Clinician's summary (not shared with the patient)"
SCREEN_WORDS = {"positive": "Positive", "negative": "Negative", "incomplete": "Incomplete",
                "not applicable": "Not applicable"}


def _facts(facts: list[dict] | None) -> str:
    return "; ".join(str(f.get("text") or f.get("value") or "?") for f in facts or [])


def _screen_line(r: dict) -> str:
    result = str(r.get("result", "?"))
    head = f"- **{SCREEN_WORDS.get(result, result)}** `{r.get('rule', '?')}`"
    if result == "positive":
        level = f" ({str(r['level']).upper()})" if r.get("level") else ""
        turn = f" (patient turn {r['turn']})" if r.get("turn") is not None else ""
        return f"{head}{level}: {r.get('message') or 'raised in this interview'}{turn}"
    denied = _facts(r.get("facts"))
    if result == "not applicable":
        return f"{head}: only with {', '.join(str(x) for x in r.get('needs') or []) or '?'}"
    if result == "negative":
        return f"{head}: {denied or 'every screening question answered no'}"
    left = ", ".join(str(x) for x in r.get("unanswered") or [])
    return f"{head}: not yet asked or answered: {left or '?'}" + (f" (denied so far: {denied})" if denied else "")


def summary_markdown(summary: dict | None) -> str:
    """The clinician's summary (``InterviewState.summary``, :func:`policies.summary.clinician_summary`) as markdown,
    without a heading of its own: the notice, the presentation, the red-flag screen (positive with level and message,
    negative with the denials, incomplete with what is left) and the ranked considerations, each with the facts of
    the state for and against it. The history note's section and the console's panel both show this text."""
    if not summary:
        return "_No summary yet: it is made at each doctor turn._"
    out = [f"_{summary.get('notice') or 'For the clinician only.'}_", ""]
    pres = summary.get("presentation")
    if pres:
        how = " (inferred from the history)" if pres.get("inferred") else ""
        out.append(f"**Presentation:** {pres.get('title') or pres.get('id')}{how}")
    else:
        out.append("**Presentation:** not yet clear from the history")

    out += ["", "**Red-flag screen**", ""]
    screen = summary.get("red_flag_screen") or []
    out += [_screen_line(r) for r in screen] or [NONE_RECORDED]

    out += ["", "**Differential considerations (ranked by the facts heard)**", ""]
    considerations = summary.get("considerations") or []
    for i, c in enumerate(considerations, 1):
        out += [f"{i}. **{c.get('label', '?')}**",
                f"   - for: {_facts(c.get('supports')) or 'none heard'}",
                f"   - against: {_facts(c.get('against')) or 'none heard'}"]
    if not considerations:
        out.append("_None yet: no fact heard supports a consideration of the plan._")
    return "\n".join(out)


# --------------------------------------------------------------------------- live sessions


def export_session(st: InterviewState, fmt: str = "meditod") -> str:
    """MediTOD-format JSON (``{session_id: {"utterances": [...]}}``, loadable by
    ``agent.core.data.load_dialogs_file``) or the clinician-readable history note (markdown)."""
    transcript = Transcript.from_session(st)
    if fmt == "meditod":
        return json.dumps(to_meditod(transcript), indent=1, ensure_ascii=False) + "\n"
    if fmt == "note":
        return history_note(transcript)
    raise ValueError(f"unknown export format {fmt!r}; use meditod or note")
