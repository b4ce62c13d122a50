"""The live interview as one LangGraph state machine.

One compiled graph runs a whole interview, turn by turn::

    START -> policy -> nlg -> review -> speak -> patient -> nlu -> track -> safety -> policy -> ...
                                          \\-> END (the policy closed the interview, or the turn budget is spent)

``patient`` waits for the next patient utterance with ``interrupt()``; the caller
resumes it with ``Command(resume={"text": ..., "key": ..., "at": ...})`` (see
``agent.sessions``). ``review`` is a second interrupt, taken only when clinician
review is on. Every node's writes are checkpointed, so a killed process resumes a
pending turn exactly where it stopped.

Patient text is data: it reaches the patient state only as CMAS-valid NLU frames
(``agent.safety.admit_frames`` keeps the valid part; the rest is recorded, never applied).

Channels hold plain JSON values (the pydantic models below are dumped on write and
validated on read), never pickled classes, so stored sessions survive code changes.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent import cmas, safety
from agent.config import check_agent_config
from agent.paths import resolve_path
from agent.protocol import DST, NLG, NLU, ModuleOutput, Policy, TurnContext
from policies.model import closing_reason
from policies.registry import build_modules, make_template_nlg

log = logging.getLogger(__name__)

DEFAULT_MAX_TURNS = 40

BUDGET_CLOSING = (
    "Thank you, we have reached the end of the time for this history. "
    "A clinician will go through it with you and decide on the next steps."
)
SLEEP_HOOK_ENV = "MEDHX_DEBUG_SLEEP_IN_NODE"
"""Fault injection for the crash tests: ``node:patient_turn:seconds`` sleeps inside that node
(after announcing it on stderr), so a SIGKILL lands there deterministically."""


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


class ReviewEdit(BaseModel):
    """One clinician decision on a planned doctor turn, as recorded in the session."""

    turn: int
    kind: Literal["approve", "edit", "replace_actions", "state_patch"]
    by: str
    at: str
    before: Any = None
    after: Any = None


class Pending(BaseModel):
    """The turn being built; cleared by ``speak``. Held in the state so a resumed process
    continues from the last finished node instead of recomputing the whole turn."""

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
    model_config = ConfigDict(extra="forbid")

    session_id: str = ""
    created_at: str = ""
    turns: list[Turn] = Field(default_factory=list)
    patient_state: dict = Field(default_factory=dict)
    red_flags: list[dict] = Field(default_factory=list)
    review_edits: list[ReviewEdit] = Field(default_factory=list)
    pending: Pending = Field(default_factory=Pending)
    status: Status = "active"

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
    edit: str | None = None
    replace_actions: list[dict] | None = None
    state_patch: dict[str, list[dict]] | None = None
    by: str = "clinician"
    at: str = ""


def parse_review_decision(obj: Any, state: dict | None = None) -> ReviewDecision:
    """Validate a review decision fully (CMAS included) before it reaches the graph; a clear
    ``ValueError`` otherwise, so an invalid decision never leaves a session half-edited."""
    try:
        decision = ReviewDecision.model_validate(obj)
    except ValidationError as exc:
        raise ValueError(f"invalid review decision: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None
    if not any(
        (decision.approve, decision.edit is not None, decision.replace_actions is not None, decision.state_patch is not None)
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


# --------------------------------------------------------------------------- the agent (modules + settings)


@dataclass
class Agent:
    """The four modules and the interview settings a graph runs with."""

    nlu: NLU
    dst: DST
    policy: Policy
    nlg: NLG
    red_flag_rules: Any = None
    max_turns: int = DEFAULT_MAX_TURNS
    review: bool = False
    guard_nlg: NLG | None = None
    nlu_vocabulary: Any = None  # set: ungrounded NLU values are set aside (config nlu.grounding, agent.grounding)
    nlu_ground_words: bool = False  # free-text values must also occur in the patient's words
    closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        for close in self.closers:
            close()
        self.closers.clear()


def is_closing(actions: list[dict], out: ModuleOutput) -> bool:
    """The policy closes the interview with a diagnosis action or by marking a farewell."""
    return bool(out.meta.get("closing")) or any(a.get("action") == "diagnosis" for a in actions)


# --------------------------------------------------------------------------- safety glue


def _check_red_flags(agent: Agent, state: dict) -> list[dict]:
    return [asdict(f) for f in safety.check_red_flags(state, agent.red_flag_rules)]


# --------------------------------------------------------------------------- graph


class _Nodes:
    """The graph's nodes. ``agent`` is resolved lazily so a graph that only reads sessions
    (``medhx sessions list``) never loads a model."""

    def __init__(self, agent: Agent | Callable[[], Agent]):
        self._agent = agent

    @property
    def agent(self) -> Agent:
        if not isinstance(self._agent, Agent):
            self._agent = self._agent()
        return self._agent

    # -- helpers

    @staticmethod
    def _pending(s: InterviewState, **changes: Any) -> dict:
        return s.pending.model_copy(update=changes).model_dump(mode="json")

    def timed(self, name: str, fn: Callable[[InterviewState], dict]) -> Callable[[InterviewState], dict]:
        def node(s: InterviewState) -> dict:
            _sleep_hook(name, len(s.patient_turns()))
            t0 = time.perf_counter()
            update = fn(s)
            dt = round(time.perf_counter() - t0, 6)
            pending = update.get("pending") or s.pending.model_dump(mode="json")
            pending["latency"] = {**pending.get("latency", {}), name: dt}
            update["pending"] = pending
            _emit({"event": "latency", "node": name, "seconds": dt, "turn": len(s.turns)})
            return update

        node.__name__ = name
        return node

    # -- nodes

    def patient(self, s: InterviewState) -> dict:
        from langgraph.types import interrupt

        last = s.turns[-1].text if s.turns else ""
        raw = interrupt({"kind": "patient", "turn": len(s.turns), "doctor": last})
        _sleep_hook("patient", len(s.patient_turns()) + 1)
        msg = PatientInput.model_validate(raw)
        text = safety.clean_patient_text(msg.text)
        meta = {"injection_markers": markers} if (markers := safety.injection_markers(text)) else {}
        turn = Turn(index=len(s.turns), speaker="patient", text=text, at=msg.at, key=msg.key, meta=meta)
        return {"turns": _dump([*s.turns, turn]), "pending": Pending().model_dump(mode="json")}

    def nlu(self, s: InterviewState) -> dict:
        out = self.agent.nlu.understand(s.context())
        said = s.turns[-1].text if s.turns and s.turns[-1].speaker == "patient" else None
        utterance = said if self.agent.nlu_ground_words else None
        admitted = safety.admit_frames(out.value, self.agent.nlu_vocabulary, utterance)
        meta = {"raw": out.raw, "format_error": out.format_error, "repaired": out.repaired,
                "extra": {**out.extra, **admitted.rejected}, **_plain(out.meta)}
        if admitted.rejected:
            log.warning("NLU output outside CMAS set aside at turn %d: %s", len(s.turns) - 1, list(admitted.rejected))
        return {"pending": self._pending(s, nlu=admitted.frames, nlu_meta=meta)}

    def track(self, s: InterviewState) -> dict:
        frames = s.pending.nlu or []
        new_state = cmas.parse_state(self.agent.dst.update(s.patient_state, frames))
        turns = list(s.turns)
        meta = {k: v for k, v in s.pending.nlu_meta.items() if v not in (None, {}, "", False)}
        turns[-1] = turns[-1].model_copy(update={"nlu": frames, "state": new_state, "meta": {**turns[-1].meta, **meta}})
        return {"turns": _dump(turns), "patient_state": new_state}

    def red_flag_check(self, s: InterviewState) -> dict:
        said = s.turns[-1].text if s.turns and s.turns[-1].speaker == "patient" else ""
        raised = self._new_flags(s, s.patient_state, len(s.turns) - 1, said)
        if not raised:
            return {}
        return {"red_flags": [*s.red_flags, *raised], "pending": self._pending(s, escalation=_escalation(raised))}

    def _new_flags(self, s: InterviewState, state: dict, turn: int, said: str = "") -> list[dict]:
        """Rules that fire now, on the state or on the patient's words, and had not fired before in this session
        (each is raised once)."""
        if self.agent.red_flag_rules is None:
            return []
        seen = {f["id"] for f in s.red_flags}
        fired = _check_red_flags(self.agent, state)
        fired += [asdict(f) for f in safety.check_text_flags(said, self.agent.red_flag_rules)]
        out: dict[str, dict] = {}
        for f in fired:
            if f["id"] not in seen and f["id"] not in out:
                out[f["id"]] = {**f, "turn": turn}
        return list(out.values())

    def policy(self, s: InterviewState) -> dict:
        agent = self.agent
        if len(s.doctor_turns()) + 1 >= agent.max_turns:
            actions = [{"action": "nod_prompt_salutations"}]
            return {"pending": self._pending(s, actions=actions, close_reason="turn budget",
                                             policy_meta={"budget": agent.max_turns})}
        out = agent.policy.next_actions(s.context())
        kept = cmas.parse_actions_lenient(out.value)
        meta = {"raw": out.raw, "format_error": out.format_error, "repaired": out.repaired,
                "extra": {**out.extra, **kept.extra}, **_plain(out.meta)}
        reason = "policy closed the interview" if is_closing(kept.value, out) else None
        return {"pending": self._pending(s, actions=kept.value, policy_meta=meta, close_reason=reason)}

    def nlg(self, s: InterviewState) -> dict:
        p = s.pending
        if p.close_reason == "turn budget":
            text, meta = BUDGET_CLOSING, {"template": "budget"}
        else:
            out = self.agent.nlg.verbalize(p.actions or [], s.context())
            text = str(out.value).strip() if isinstance(out.value, str) else ""
            meta = {"raw": out.raw, "format_error": out.format_error, **_plain(out.meta)}
            if (not text or safety.claims_clinician(text)) and self.agent.guard_nlg is not None:
                meta["guard"] = "empty utterance" if not text else "presented the agent as a clinician"
                text = str(self.agent.guard_nlg.verbalize(p.actions or [], s.context()).value).strip()
        return {"pending": self._pending(s, text=text, nlg_meta=meta)}

    def review(self, s: InterviewState) -> dict:
        if not self.agent.review:
            return {}
        from langgraph.types import interrupt

        p = s.pending
        turn = len(s.turns)
        raw = interrupt({
            "kind": "review", "turn": turn, "actions": p.actions, "text": _full_text(p),
            "patient_state": s.patient_state, "red_flags": [f for f in s.red_flags if f.get("turn") == turn - 1],
        })
        decision = parse_review_decision(raw, s.patient_state)
        edits: list[ReviewEdit] = []
        update: dict[str, Any] = {}
        actions, text, escalation, close_reason = p.actions, p.text, p.escalation, p.close_reason
        rec = {"turn": turn, "by": decision.by, "at": decision.at or utc_now()}
        if decision.state_patch is not None:
            patched = apply_state_patch(s.patient_state, decision.state_patch)
            edits.append(ReviewEdit(kind="state_patch", before=s.patient_state, after=patched, **rec))
            update["patient_state"] = patched
            raised = self._new_flags(s, patched, turn - 1)
            if raised:
                update["red_flags"] = [*s.red_flags, *raised]
                escalation = " ".join(x for x in (p.escalation, _escalation(raised)) if x)
        if decision.replace_actions is not None:
            edits.append(ReviewEdit(kind="replace_actions", before=actions, after=decision.replace_actions, **rec))
            actions = decision.replace_actions
            if close_reason != "turn budget":
                reason = closing_reason(actions, s.context())
                close_reason = f"clinician closed the interview ({reason})" if reason else None
            if decision.edit is None:
                ctx = s.context()
                if "patient_state" in update:
                    ctx.state = update["patient_state"]
                text = str(self.agent.nlg.verbalize(actions, ctx).value).strip()
        if decision.edit is not None:
            edits.append(ReviewEdit(kind="edit", before=text, after=decision.edit.strip(), **rec))
            text = decision.edit.strip()
        if not edits:
            edits.append(ReviewEdit(kind="approve", **rec))
        update["review_edits"] = _dump([*s.review_edits, *edits])
        update["pending"] = self._pending(s, actions=actions, text=text, escalation=escalation,
                                            close_reason=close_reason, reviewed=True)
        return update

    def speak(self, s: InterviewState) -> dict:
        p = s.pending
        meta: dict[str, Any] = {k: v for k, v in p.policy_meta.items() if v not in (None, {}, "", False)}
        if p.nlg_meta.get("format_error"):
            meta["nlg_format_error"] = p.nlg_meta["format_error"]
        if p.escalation:
            meta["escalation"] = p.escalation
        if p.close_reason:
            meta["closing"] = p.close_reason
        if p.reviewed:
            meta["reviewed"] = True
        turn = Turn(index=len(s.turns), speaker="doctor", text=_full_text(p), at=utc_now(),
                    actions=p.actions or [], latency=p.latency, meta=meta)
        status: Status = "active"
        if p.close_reason == "turn budget":
            status = "budget_reached"
        elif p.close_reason:
            status = "closed"
        _emit({"event": "doctor", "turn": turn.index, "text": turn.text})
        return {"turns": _dump([*s.turns, turn]), "pending": Pending().model_dump(mode="json"), "status": status}


def _escalation(flags: list[dict]) -> str | None:
    return " ".join(f["message"] for f in flags if f.get("message")) or None


def _full_text(p: Pending) -> str:
    return f"{p.escalation} {p.text or ''}".strip() if p.escalation else (p.text or "")


def _plain(meta: dict) -> dict:
    """Module meta as JSON-safe values (it is checkpointed)."""
    return json.loads(json.dumps(meta, default=str))


def _emit(event: dict) -> None:
    """Custom stream events (``stream_mode="custom"``): per-node latency and finished doctor turns."""
    from langgraph.config import get_stream_writer

    try:
        get_stream_writer()(event)
    except RuntimeError:  # called outside a graph run
        pass


def _sleep_hook(node: str, patient_turn: int) -> None:
    spec = os.environ.get(SLEEP_HOOK_ENV)
    if not spec:
        return
    name, turn, seconds = spec.split(":")
    if name == node and int(turn) == patient_turn:
        print(f"medhx: sleeping in node {node} at patient turn {patient_turn}", file=sys.stderr, flush=True)
        time.sleep(float(seconds))


def _after_speak(s: InterviewState) -> str:
    return "patient" if s.status == "active" else "__end__"  # langgraph.graph.END


def build_graph(agent: Agent | Callable[[], Agent], checkpointer: Any = None):
    """Compile the interview graph. ``agent`` may be a zero-argument factory, called on the
    first node that needs a module."""
    from langgraph.graph import START, StateGraph

    nodes = _Nodes(agent)
    g = StateGraph(InterviewState)
    g.add_node("patient", nodes.patient)
    timed = {"nlu": nodes.nlu, "track": nodes.track, "safety": nodes.red_flag_check, "policy": nodes.policy,
             "nlg": nodes.nlg, "review": nodes.review}
    for name, fn in timed.items():
        g.add_node(name, nodes.timed(name, fn))
    g.add_node("speak", nodes.speak)
    g.add_edge(START, "policy")
    g.add_edge("patient", "nlu")
    g.add_edge("nlu", "track")
    g.add_edge("track", "safety")
    g.add_edge("safety", "policy")
    g.add_edge("policy", "nlg")
    g.add_edge("nlg", "review")
    g.add_edge("review", "speak")
    g.add_conditional_edges("speak", _after_speak, ["patient", "__end__"])
    return g.compile(checkpointer=checkpointer)


# --------------------------------------------------------------------------- config -> agent


def load_config(path: str | Path) -> dict:
    import yaml

    p = resolve_path(path)
    config = yaml.safe_load(p.read_text())
    if not isinstance(config, dict):
        raise ValueError(f"{p}: a config is a YAML mapping")
    return config


def build_agent(config: dict) -> Agent:
    """The agent of a config: its four modules from the registry (``policies.registry``: nlu, dst, policy, nlg by
    ``kind``, built-in or a dotted path), the interview settings (``session``) and the red-flag rules (``safety``)."""
    checked = check_agent_config(config)  # unknown keys and bad values fail here, before anything is built
    session = checked.session
    max_turns = session.max_turns
    modules = build_modules(config)
    agent = Agent(nlu=modules.nlu, dst=modules.dst, policy=modules.policy, nlg=modules.nlg, max_turns=max_turns,
                  review=session.review, guard_nlg=make_template_nlg({}),
                  nlu_vocabulary=modules.nlu_vocabulary, nlu_ground_words=modules.nlu_ground_words,
                  closers=modules.closers)
    try:
        # red flags are on unless a config turns them off explicitly (safety.red_flags: null)
        rules_path = checked.safety.red_flags
        if rules_path:
            agent.red_flag_rules = safety.load_rules(resolve_path(rules_path))
    except Exception:
        agent.close()
        raise
    return agent
