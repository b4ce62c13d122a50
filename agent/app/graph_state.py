"""The interview's durable state: turns, the pending turn, and what callers resume the graph with.

Channels hold plain JSON values (these pydantic models are dumped on write and validated on read), never pickled
classes, so stored sessions survive code changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.core import cmas
from agent.core.bounds import MAX_UTTERANCE_CHARS, MAX_VALUE_CHARS
from agent.core.data import Utterance
from agent.core.protocol import TurnContext


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


# --------------------------------------------------------------------------- state


class Turn(BaseModel):
    """One utterance. Patient turns carry ``nlu`` and ``state`` (the patient state after the
    turn); doctor turns carry ``actions`` and ``latency`` (seconds per node for producing it)."""

    index: int
    speaker: Literal["doctor", "patient"]
    text: str
    at: str
    key: str | None = None
    nlu: list[dict] | None = None
    state: dict | None = None
    actions: list[dict] | None = None
    latency: dict[str, float] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(default_factory=dict)

    # The one conversion each way between a live turn and a dataset utterance (``agent.core.data``): exports, simulators
    # and replays go through these, so a live session and a MediTOD dialogue mean the same thing by "turn".

    def to_utterance(self) -> Utterance:
        """This turn as a MediTOD utterance: its annotations, without session bookkeeping (time, key, latency)."""
        return Utterance(self.speaker, self.index, self.text, nlu=self.nlu, dialog_state=self.state,
                         actions=self.actions)

    @classmethod
    def from_utterance(cls, u: Utterance, at: str = "") -> Turn:
        return cls(index=u.uttr_id, speaker=u.speaker, text=u.text, at=at, nlu=u.nlu, state=u.dialog_state,
                   actions=u.actions)


class ReviewEdit(BaseModel):
    """One clinician decision on a planned doctor turn, as recorded in the session."""

    turn: int
    kind: Literal["approve", "edit", "replace_actions", "state_patch"]
    by: str
    at: str
    before: Any = None
    after: Any = None


class Pending(BaseModel):
    """The turn being built; cleared by ``speak``. Held in the state so the turn's nodes hand it on, and so a turn
    stopped for clinician review (checkpointed there) resumes with its plan; a turn killed mid-way runs again from
    its stored utterance (:mod:`agent.app.sessions`)."""

    nlu: list[dict] | None = None
    nlu_meta: dict[str, Any] = Field(default_factory=dict)
    actions: list[dict] | None = None
    policy_meta: dict[str, Any] = Field(default_factory=dict)
    text: str | None = None
    nlg_meta: dict[str, Any] = Field(default_factory=dict)
    escalation: str | None = None
    close_reason: str | None = None
    reviewed: bool = False
    latency: dict[str, float] = Field(default_factory=dict)


Status = Literal["active", "closed", "budget_reached"]


class InterviewState(BaseModel):
    """The interview. In a checkpoint ``turns`` holds only the turns not yet on record in the transcript table
    (:mod:`agent.app.transcript`); a node, and a reader of :meth:`agent.app.sessions.Session.state`, sees them all."""

    model_config = ConfigDict(extra="forbid")

    session_id: str = ""
    created_at: str = ""
    owner: str | None = None  # who started the session (the console shows each clinician their own)
    turns: list[Turn] = Field(default_factory=list)
    patient_state: dict = Field(default_factory=dict)
    red_flags: list[dict] = Field(default_factory=list)
    review_edits: list[ReviewEdit] = Field(default_factory=list)
    pending: Pending = Field(default_factory=Pending)
    status: Status = "active"
    summary: dict | None = None  # the clinician's summary (policies.summary), renewed each doctor turn; never spoken

    def doctor_turns(self) -> list[Turn]:
        return [t for t in self.turns if t.speaker == "doctor"]

    def patient_turns(self) -> list[Turn]:
        return [t for t in self.turns if t.speaker == "patient"]

    def context(self) -> TurnContext:
        return TurnContext(
            turns=[(t.speaker, t.text) for t in self.turns],
            state=self.patient_state,
            past_actions=[t.actions or [] for t in self.turns if t.speaker == "doctor"],
        )


@dataclass(frozen=True)
class OnRecord:
    """A graph run's context (LangGraph ``context_schema``): the session's turns already in the transcript table when
    the run starts. None or empty: the state's own ``turns`` are the whole interview (a graph run without a store)."""

    turns: list[Turn]


def with_record(record: list[Turn], tail: list[Turn]) -> list[Turn]:
    """The whole interview: the turns on record, then the state's turns past them (a turn both hold is the same
    turn: a tail is only ever written to the record, never changed after)."""
    return [*record, *(t for t in tail if t.index >= len(record))]


def _dump(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_dump(v) for v in value]
    return value


# --------------------------------------------------------------------------- resume payloads


class PatientInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    key: str | None = None
    at: str


class ReviewDecision(BaseModel):
    """How a clinician answers the review interrupt. ``approve`` sends the plan as is;
    ``edit`` replaces the utterance; ``replace_actions`` replaces the plan (re-verbalised
    unless ``edit`` is also given); ``state_patch`` replaces whole slots of the patient state
    (an empty list removes a slot)."""

    model_config = ConfigDict(extra="forbid")
    approve: bool | None = None
    edit: str | None = Field(default=None, max_length=MAX_UTTERANCE_CHARS)  # an utterance, bounded as any other
    replace_actions: list[dict] | None = None
    state_patch: dict[str, list[dict]] | None = None
    by: str = Field(default="clinician", max_length=MAX_VALUE_CHARS)
    at: str = ""


def parse_review_decision(obj: Any, state: dict | None = None) -> ReviewDecision:
    """Validate a review decision fully (CMAS included) before it reaches the graph; a clear
    ``ValueError`` otherwise, so an invalid decision never leaves a session half-edited."""
    try:
        decision = ReviewDecision.model_validate(obj)
    except ValidationError as exc:
        raise ValueError(f"invalid review decision: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None
    if not any(
        (
            decision.approve,
            decision.edit is not None,
            decision.replace_actions is not None,
            decision.state_patch is not None,
        )
    ):
        raise ValueError("a review decision needs one of approve / edit / replace_actions / state_patch")
    if decision.edit is not None and not decision.edit.strip():
        raise ValueError("review edit: the new utterance is empty")
    if decision.replace_actions is not None:
        decision.replace_actions = cmas.parse_actions(decision.replace_actions)
        if not decision.replace_actions:
            raise ValueError("review replace_actions: empty action list")
    if decision.state_patch is not None:
        patched = apply_state_patch(state or {}, decision.state_patch)
        cmas.parse_state(patched)
    return decision


def apply_state_patch(state: dict, patch: dict[str, list[dict]]) -> dict:
    out = {k: v for k, v in state.items() if k not in patch}
    out.update({k: v for k, v in patch.items() if v})
    return cmas.parse_state(out)


