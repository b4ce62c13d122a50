"""Export an interview: MediTOD-format JSON (loads back with ``agent.data.load_dialogs_file``, strict)
and a clinician-readable history note (markdown).

The input is a plain :class:`Transcript` (turns + red flags), so any session store can export:
build one with :meth:`Transcript.from_dicts` from turn dicts ``{speaker, text, nlu?, state?, actions?}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent import cmas
from agent.data import Dialogue, Utterance
from agent.graph_state import InterviewState
from agent.safety import DISCLAIMER, RedFlag
from agent.tracker import update_state

TURN_KEYS = {"speaker", "text", "nlu", "state", "dialog_state", "actions", "keywords"}
SESSION_KEYS = {"index", "uttr_id", "at", "key", "latency", "meta"}
"""Session bookkeeping a turn dict may carry; it is not part of the MediTOD format and is not exported."""


class ExportError(ValueError):
    pass


@dataclass
class TranscriptTurn:
    speaker: str
    text: str
    nlu: list[dict] | None = None
    state: dict | None = None
    actions: list[dict] | None = None
    keywords: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, raw: dict, where: str = "turn") -> TranscriptTurn:
        if not isinstance(raw, dict):
            raise ExportError(f"{where}: expected a mapping, got {type(raw).__name__}")
        if unknown := set(raw) - TURN_KEYS - SESSION_KEYS:
            raise ExportError(f"{where}: unknown keys {sorted(unknown)}")
        speaker, text = raw.get("speaker"), raw.get("text")
        if speaker not in ("doctor", "patient"):
            raise ExportError(f"{where}: speaker must be 'doctor' or 'patient', got {speaker!r}")
        if not isinstance(text, str):
            raise ExportError(f"{where}: text must be a string")
        state = raw.get("state", raw.get("dialog_state"))
        turn = cls(speaker, text, raw.get("nlu"), state, raw.get("actions"), list(raw.get("keywords") or []))
        turn.validate(where)
        return turn

    def validate(self, where: str = "turn") -> None:
        """Strict CMAS, and each annotation on the speaker it belongs to."""
        try:
            if self.speaker == "doctor":
                if self.nlu is not None or self.state is not None:
                    raise ExportError(f"{where}: a doctor turn carries actions, not nlu/state")
                if self.actions is not None:
                    self.actions = cmas.parse_actions(self.actions)
            else:
                if self.actions is not None:
                    raise ExportError(f"{where}: a patient turn carries nlu/state, not actions")
                if self.nlu is not None:
                    self.nlu = cmas.parse_nlu(self.nlu)
                if self.state is not None:
                    self.state = cmas.parse_state(self.state)
        except cmas.CMASError as exc:
            raise ExportError(f"{where}: {exc}") from None


@dataclass
class Transcript:
    session_id: str
    turns: list[TranscriptTurn]
    red_flags: list[RedFlag] = field(default_factory=list)

    @classmethod
    def from_dicts(cls, session_id: str, turns: list[dict], red_flags: list[dict | RedFlag] | None = None) -> Transcript:
        parsed = [TranscriptTurn.from_dict(t, f"turn {i}") for i, t in enumerate(turns)]
        flags = [f if isinstance(f, RedFlag) else _red_flag(f, i) for i, f in enumerate(red_flags or [])]
        return cls(str(session_id), parsed, flags)

    def final_state(self) -> dict:
        """The last recorded patient state; turns with NLU but no state are folded in with the tracker."""
        state: dict = {}
        for t in self.turns:
            if t.speaker != "patient":
                continue
            if t.state is not None:
                state = t.state
            elif t.nlu is not None:
                state = update_state(state, t.nlu)
        return state


def _red_flag(raw: dict, i: int) -> RedFlag:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not isinstance(raw.get("message"), str):
        raise ExportError(f"red flag {i}: expected a mapping with 'id' and 'message'")
    return RedFlag(raw["id"], raw["message"], str(raw.get("level", "urgent")), list(raw.get("evidence") or []))


# --------------------------------------------------------------------------- MediTOD JSON


def to_dialogue(transcript: Transcript) -> Dialogue:
    utts = [
        Utterance(t.speaker, i, t.text, list(t.keywords), nlu=t.nlu, dialog_state=t.state, actions=t.actions)  # type: ignore[arg-type]
        for i, t in enumerate(transcript.turns)
    ]
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

"""Symptom attributes in note order, each with the label that precedes its value."""
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
    return f"**{item.get('value', '?')}**" + (f" — {detail}" if detail else "")


def _inline(item: dict, labels: tuple[tuple[str, str], ...]) -> str:
    detail = _details(item, labels)
    return str(item.get("value", "?")) + (f" ({detail})" if detail else "")


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


def _record(state: dict, name: str) -> dict:
    items = state.get(name) or []
    return items[0] if items else {}


def history_note(transcript: Transcript, diagnoses: bool = True) -> str:
    """A clinician-readable history note (markdown) from the transcript's final patient state."""
    state = transcript.final_state()
    out = [f"# History note — session {transcript.session_id}", "",
           "_Taken by an automated history-taking assistant, for review by a clinician._", ""]

    out += ["## Red flags"]
    if transcript.red_flags:
        for f in transcript.red_flags:
            ev = ", ".join(f"{e.get('value')} ({e.get('slot')})" for e in f.evidence)
            out.append(f"- **{f.level.upper()}** `{f.id}`: {f.message}" + (f" Evidence: {ev}." if ev else ""))
    else:
        out.append(NONE_RECORDED)

    complaint, words = _presenting(transcript, state)
    out += ["", "## Presenting complaint", ", ".join(complaint) if complaint else NONE_RECORDED]
    if words:
        out.append(f"> {words}")

    out += ["", "## History of presenting complaint"]
    hpi = [f"- {_entry(it, cmas.SYMPTOM_ATTRS)}" for it in state.get("positive_symptom", [])]
    out += hpi or [NONE_RECORDED]
    negatives = [_inline(it, cmas.SYMPTOM_ATTRS) for it in state.get("negative_symptom", [])]
    if negatives:
        out.append(f"- Pertinent negatives: {'; '.join(negatives)}")
    unsure = [_inline(it, cmas.SYMPTOM_ATTRS) for it in state.get("unknown_symptom", [])]
    if unsure:
        out.append(f"- Unsure: {'; '.join(unsure)}")

    mh_labels = (("starting", "since"), ("frequency", "frequency:"))
    out += ["", "## Past medical history"]
    out += _status_lines(state, "medical_history", mh_labels, keep=lambda v: not _is_allergy(v)) or [NONE_RECORDED]

    med_labels = (("respone_to", "for"), ("impact", "helped:"), ("frequency", "frequency:"), ("start", "since"))
    out += ["", "## Medications"]
    out += _status_lines(state, "medication", med_labels, negative="Not taking", unknown="Unsure about") or [NONE_RECORDED]

    out += ["", "## Allergies and exposures"]
    allergy = _status_lines(state, "medical_history", mh_labels, keep=_is_allergy, negative="No allergy")
    exposure = _status_lines(state, "exposure", (("where", "where:"), ("when", "when:")), negative="No exposure to")
    out += (allergy + exposure) or [NONE_RECORDED]

    out += ["", "## Family history"]
    out += _status_lines(state, "family_history", (("relation", "relation:"),), negative="No family history of") \
        or [NONE_RECORDED]

    out += ["", "## Social history"]
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
            extra = "; ".join(f"{k}: {trv[k]}" for k in ("destination", "value", "when", "date", "frequency") if trv.get(k))
            social.append("- Travel: recent travel" + (f" — {extra}" if extra else ""))
    out += social or [NONE_RECORDED]

    tests = _status_lines(state, "medical_test", (("when", "when:"),), negative="Results not available",
                          unknown="Unsure about")
    if tests:
        out += ["", "## Investigations", *tests]
    basic = _record(state, "basic_information")
    if basic:
        out += ["", "## Basic information", "- " + "; ".join(f"{k}: {v}" for k, v in basic.items())]

    if diagnoses:
        discussed = [it["value"] for t in transcript.turns if t.speaker == "doctor"
                     for a in t.actions or [] if a.get("action") == "diagnosis"
                     for it in a.get("disease") or []]
        if discussed:
            out += ["", "## Possible conditions raised during the interview (for clinician review, not a diagnosis)",
                    *[f"- {d}" for d in dict.fromkeys(discussed)]]

    out += ["", "---", f"_{DISCLAIMER}_", ""]
    return "\n".join(out)


# --------------------------------------------------------------------------- live sessions


def transcript_of(st: InterviewState) -> Any:
    """The session as an ``agent.export.Transcript`` (turns with their CMAS annotations, red flags)."""
    turns = [t.model_dump(mode="json", exclude_none=True) for t in st.turns]
    return Transcript.from_dicts(st.session_id, turns, st.red_flags)


def export_session(st: InterviewState, fmt: str = "meditod") -> str:
    """MediTOD-format JSON (``{session_id: {"utterances": [...]}}``, loadable by
    ``agent.data.load_dialogs_file``) or the clinician-readable history note (markdown)."""
    transcript = transcript_of(st)
    if fmt == "meditod":
        return json.dumps(to_meditod(transcript), indent=1, ensure_ascii=False) + "\n"
    if fmt == "note":
        return history_note(transcript)
    raise ValueError(f"unknown export format {fmt!r}; use meditod or note")
