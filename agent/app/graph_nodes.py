"""The interview graph's nodes and the bundle of modules and settings they run with (:class:`Agent`).

Patient text is data: it reaches the patient state only as CMAS-valid NLU frames
(``agent.core.safety.admit_frames`` keeps the valid part; the rest is recorded, never applied).

A turn never stalls: each module call (NLU, policy, NLG) runs in a worker thread with what is left of the turn's
deadline (``session.turn_deadline_s``). On expiry or a backend failure the turn falls back for that module alone:
the NLU is marked unavailable (no frames, the patient state unchanged), the questionnaire policy plans, the template
NLG speaks. The doctor turn records ``fallback: {module: reason}``; the abandoned call's late answer is discarded.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from concurrent.futures import wait as wait_for
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from agent.app.graph_state import (
    InterviewState,
    PatientInput,
    Pending,
    ReviewEdit,
    Status,
    Turn,
    _dump,
    apply_state_patch,
    parse_review_decision,
    utc_now,
)
from agent.core import cmas, cmas_lenient, safety
from agent.core.bounds import MAX_UTTERANCE_CHARS, bound_record, too_long
from agent.core.clinical_text import is_opening, spoken_for
from agent.core.protocol import NLG, ModuleOutput, Policy
from models.backends.base import BackendError
from models.parsing import valid_unicode
from policies.addressing import about_the_patient
from policies.presentations import Plan, default_plans
from policies.questionnaire import QuestionnairePolicy
from policies.registry import Modules, make_questionnaire, make_template_nlg
from policies.summary import clinician_summary

log = logging.getLogger(__name__)

DEFAULT_MAX_TURNS = 40
DEFAULT_TURN_DEADLINE_S = 60.0

FALLBACK_NOTICE = "The model did not answer in time or failed; a simpler module answered this turn."
"""What a client shows beside a doctor turn whose meta has ``fallback`` (module -> reason)."""

MODULE_FAILURES = (BackendError, ConnectionError, TimeoutError)
"""A module call failing with one of these falls back for the turn; any other exception is a bug and propagates."""

T = TypeVar("T")

BUDGET_CLOSING = (
    "Thank you, we have reached the end of the time for this history. "
    "A clinician will go through it with you and decide on the next steps."
)



# --------------------------------------------------------------------------- the agent (modules + settings)


@dataclass
class Agent(Modules):
    """The four modules (with their grounding settings, :class:`policies.registry.Modules`) and the interview
    settings a graph runs with."""

    red_flag_rules: Any = None
    max_turns: int = DEFAULT_MAX_TURNS
    review: bool = False
    guard_nlg: NLG | None = None  # the template NLG: replaces an unsafe utterance, and speaks when the NLG fails
    turn_deadline_s: float = DEFAULT_TURN_DEADLINE_S
    fallback_policy: Policy | None = None  # plans when the policy fails; built on first need
    plans: Mapping[str, Plan] | None = None  # what the clinician's summary reads; None: the policy's own or shipped

    def summary_plans(self) -> Mapping[str, Plan]:
        """The presentation plans the clinician's summary reads: the questionnaire policy's own when it follows plans
        (the summary then names the plans it followed), else the shipped ones (the summary infers the presentation
        from the state)."""
        if self.plans is None:
            own = self.policy.config.plans if isinstance(self.policy, QuestionnairePolicy) else None
            self.plans = own or default_plans()
        return self.plans

    def policy_fallback(self) -> Policy:
        if self.fallback_policy is None:
            self.fallback_policy = make_questionnaire({})
        return self.fallback_policy

    def nlg_fallback(self) -> NLG:
        if self.guard_nlg is None:
            self.guard_nlg = make_template_nlg({})
        return self.guard_nlg


# --------------------------------------------------------------------------- deadline


class DeadlineExceeded(TimeoutError):
    """A module call did not answer within the time left to its turn."""


def call_within(fn: Callable[[], T], seconds: float, name: str = "module") -> T:
    """``fn()`` run in a daemon worker thread, waited for at most ``seconds``.

    Python cannot stop a thread, so a call that overruns is abandoned: :class:`DeadlineExceeded` is raised at once
    and whatever the worker returns later is dropped with its future, never seen by the graph. The worker is a
    daemon so a call stuck for good never keeps the process alive. An exception ``fn`` raises in time is re-raised.
    """
    if seconds <= 0:
        raise DeadlineExceeded(f"no time left for the {name}")
    future: Future = Future()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            future.set_result(context.run(fn))
        except BaseException as exc:  # handed to the waiting node, which decides
            future.set_exception(exc)

    started = time.perf_counter()
    threading.Thread(target=work, name=f"medhx-{name}", daemon=True).start()
    done, _ = wait_for([future], timeout=seconds)
    if not done:
        future.add_done_callback(lambda _: log.info(
            "%s answered %.1f s after its deadline; the answer was discarded", name, time.perf_counter() - started))
        raise DeadlineExceeded(f"no answer within {seconds:.1f} s")
    return future.result()


# --------------------------------------------------------------------------- safety glue


def _check_red_flags(agent: Agent, state: dict, said: str = "", before: dict | None = None) -> list[dict]:
    """The state's flags, less those the turn ``said`` told as history over and done (``before``: the state before
    the turn, :func:`agent.core.safety.told_over_and_done`)."""
    flags = safety.check_red_flags(state, agent.red_flag_rules)
    if said:
        flags = safety.told_over_and_done(flags, said, before, agent.red_flag_rules)
    return [asdict(f) for f in flags]


# --------------------------------------------------------------------------- graph


class Nodes:
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
            _ = self.agent  # built on first use; the build is not the turn's time (nor its deadline's)
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

    def _remaining(self, s: InterviewState) -> float:
        """Seconds left of this turn's deadline: the deadline less the time its finished nodes took (their latencies,
        in the state, checkpointed with it at a review, so the turn keeps its clock; a clinician's review is not the
        turn's time)."""
        spent = sum(v for k, v in s.pending.latency.items() if k != "review")
        return self.agent.turn_deadline_s - spent

    def _attempt(self, role: str, call: Callable[[], ModuleOutput], s: InterviewState,
                 seconds: float | None = None) -> tuple[ModuleOutput | None, str | None]:
        """``(output, None)``, or ``(None, reason)`` when the module ran out of time or its backend failed."""
        seconds = self._remaining(s) if seconds is None else seconds
        try:
            return call_within(call, seconds, role), None
        except DeadlineExceeded as exc:
            reason = f"deadline: {exc} (turn deadline {self.agent.turn_deadline_s:g} s)"
        except MODULE_FAILURES as exc:
            reason = f"{type(exc).__name__}: {_one_line(str(exc))}"
        log.warning("%s fell back at turn %d: %s", role, len(s.turns), reason)
        return None, reason

    # -- nodes

    def patient(self, s: InterviewState) -> dict:
        from langgraph.types import interrupt

        last = s.turns[-1].text if s.turns else ""
        raw = interrupt({"kind": "patient", "turn": len(s.turns), "doctor": last})
        msg = PatientInput.model_validate(raw)
        text = safety.clean_patient_text(msg.text)
        meta = {"injection_markers": markers} if (markers := safety.injection_markers(text)) else {}
        turn = Turn(index=len(s.turns), speaker="patient", text=text, at=msg.at, key=msg.key, meta=meta)
        return {"turns": _dump([*s.turns, turn]), "pending": Pending().model_dump(mode="json")}

    def nlu(self, s: InterviewState) -> dict:
        nlu, ctx = self.agent.nlu, s.context()
        out, reason = self._attempt("nlu", lambda: nlu.understand(ctx), s)
        if out is None:  # unavailable for this turn: no frames, so the patient state stays as it was
            return {"pending": self._pending(s, nlu=[], nlu_meta={"nlu_unavailable": reason})}
        said = s.turns[-1].text if s.turns and s.turns[-1].speaker == "patient" else None
        utterance = said if self.agent.nlu_ground_words else None
        admitted = safety.admit_frames(out.value, self.agent.nlu_vocabulary, utterance)
        meta = _plain({"raw": out.raw, "format_error": out.format_error, "repaired": out.repaired,
                       "extra": {**out.extra, **admitted.rejected}, **out.meta})
        if admitted.rejected:
            log.warning("NLU output outside CMAS set aside at turn %d: %s", len(s.turns) - 1, list(admitted.rejected))
        return {"pending": self._pending(s, nlu=admitted.frames, nlu_meta=meta)}

    def track(self, s: InterviewState) -> dict:
        frames = s.pending.nlu or []
        if s.pending.nlu_meta.get("nlu_unavailable"):
            new_state = cmas.parse_state(s.patient_state)
        else:
            new_state = cmas.parse_state(self.agent.dst.update(s.patient_state, frames))
        turns = list(s.turns)
        meta = {k: v for k, v in s.pending.nlu_meta.items() if v not in (None, {}, "", False)}
        turns[-1] = turns[-1].model_copy(update={"nlu": frames, "state": new_state, "meta": {**turns[-1].meta, **meta}})
        return {"turns": _dump(turns), "patient_state": new_state}

    def red_flag_check(self, s: InterviewState) -> dict:
        said = s.turns[-1].text if s.turns and s.turns[-1].speaker == "patient" else ""
        raised = self._new_flags(s, s.patient_state, len(s.turns) - 1, said)
        update: dict = {}
        if raised:
            update = {"red_flags": [*s.red_flags, *raised],
                      "pending": self._pending(s, escalation=_escalation(raised, s.red_flags,
                                                                                 self.agent.red_flag_rules))}
        if self.agent.red_flag_rules is not None and said:
            update |= self._record_disclosures(s, safety.disclosed(raised, self.agent.red_flag_rules),
                                               safety.told_acts(said, self.agent.red_flag_rules))
        return update

    def _record_disclosures(self, s: InterviewState, values: list[str], acts: dict[str, list[str]] | None = None
                            ) -> dict:
        """The patient state (and the turn's) with each disclosed symptom the NLU did not record as had (the NLU leaves
        suicidal thoughts said in a sentence to the red-flag screen, which read them): positive, the flag's words the
        ground. ``acts``: what the patient told they did or plan, in their words (``safety.told_acts``), recorded as
        the item's characteristics (the risk assessment's plans and preparations)."""
        vocab = self.agent.nlu_vocabulary
        have = {str(it.get("value")) for st, it in cmas.slot_items(s.patient_state, "symptom") if st == "positive"}
        new = [v for v in values
               if not any(v == h or (vocab is not None and vocab.same("symptom", v, h)) for h in have)]
        acts = acts or {}
        if not new and not acts:
            return {}
        items = {v: {"value": v} for v in new}
        for v, words in acts.items():
            items.setdefault(v, {"value": v})["positive_characteristics"] = list(words)
        frames = [{"intent": "inform", "slots": {"positive_symptom": list(items.values())}}]
        state = cmas.parse_state(self.agent.dst.update(s.patient_state, frames))
        turns = list(s.turns)
        told = {"disclosed": new} if new else {}
        told |= {"told_acts": acts} if acts else {}
        turns[-1] = turns[-1].model_copy(update={"state": state, "meta": {**turns[-1].meta, **told}})
        return {"patient_state": state, "turns": _dump(turns)}

    def _new_flags(self, s: InterviewState, state: dict, turn: int, said: str = "") -> list[dict]:
        """Rules that fire now, on the state or on the patient's words, and had not fired before in this session at
        this level or a more severe one: each is raised once, and again when it becomes more severe (a hyperglycaemia
        raised as urgent from thirst is raised again as an emergency when vomiting makes it a suspected DKA)."""
        if self.agent.red_flag_rules is None:
            return []
        rank = safety.level_rank
        best: dict[str, int] = {}  # each rule's most severe level so far (raised before, or fired now)
        for f in s.red_flags:
            best[f["id"]] = min(best.get(f["id"], rank(None)), rank(f.get("level")))
        before = next((t.state for t in reversed(s.turns[:turn]) if t.state), {})  # the state before this turn
        fired = _check_red_flags(self.agent, state, said, before)
        earlier = [t.text for t in s.turns[:turn] if t.speaker == "patient"]
        fired += [asdict(f) for f in safety.check_text_flags(said, self.agent.red_flag_rules, state=state,
                                                             opening=bool(said) and is_opening(earlier))]
        out: dict[str, dict] = {}
        for f in fired:
            kept = out.get(f["id"])
            if kept is not None and rank(f.get("level")) == rank(kept.get("level")):
                # the state and the words raised it alike: the clinician sees both (who told it, which words)
                kept["evidence"] = [*kept.get("evidence", []),
                                    *(e for e in f.get("evidence", []) if e not in kept.get("evidence", []))]
            elif rank(f.get("level")) < best.get(f["id"], rank(None) + 1):
                best[f["id"]] = rank(f.get("level"))
                out[f["id"]] = {**f, "evidence": list(f.get("evidence", [])), "turn": turn}
        return list(out.values())

    def policy(self, s: InterviewState) -> dict:
        agent = self.agent
        if len(s.doctor_turns()) + 1 >= agent.max_turns:
            actions = [{"action": "nod_prompt_salutations"}]
            return {"pending": self._pending(s, actions=actions, close_reason="turn budget",
                                             policy_meta={"budget": agent.max_turns})}
        policy, ctx = agent.policy, s.context()
        out, reason = self._attempt("policy", lambda: policy.next_actions(ctx), s)
        if out is None:
            out = agent.policy_fallback().next_actions(ctx)
        kept = cmas_lenient.parse_actions_lenient(out.value)
        meta = _plain({"raw": out.raw, "format_error": out.format_error, "repaired": out.repaired,
                       "extra": {**out.extra, **kept.extra}, **out.meta})
        if reason:  # (a hybrid policy's own fallback, to its questionnaire, is already in its meta the same way)
            meta["fallback"] = reason
        closing = cmas.closing_reason(kept.value, after_opening=bool(s.doctor_turns()))
        close_reason = "policy closed the interview" if closing else None
        return {"pending": self._pending(s, actions=kept.value, policy_meta=meta, close_reason=close_reason)}

    def nlg(self, s: InterviewState) -> dict:
        p = s.pending
        if p.close_reason == "turn budget":
            text, meta = BUDGET_CLOSING, {"template": "budget"}
        else:
            nlg, actions, ctx = self.agent.nlg, p.actions or [], s.context()
            out, reason = self._attempt("nlg", lambda: nlg.verbalize(actions, ctx), s)
            if out is None:
                out = self.agent.nlg_fallback().verbalize(actions, ctx)
            text = str(out.value).strip() if isinstance(out.value, str) else ""
            meta = _plain({"raw": out.raw, "format_error": out.format_error, **out.meta})
            if reason:  # (a model NLG's own fallback, to the template, is already in its meta the same way)
                meta["fallback"] = reason
            text = self._guarded(text, p.actions or [], s.context(), meta)
        return {"pending": self._pending(s, text=text, nlg_meta=meta)}

    def _guarded(self, text: str, actions: list, ctx: Any, meta: dict) -> str:
        """The NLG's utterance, or the template's in its place when it is empty, presents the agent as a clinician,
        or is longer than an utterance may be (then always: an over-long text is never passed on); ``meta`` records
        why and what was rejected (an over-long text by its length and first characters). Put to the person who is
        there: a guardian who speaks for the patient is asked about the patient in the third person."""
        long = too_long(text, MAX_UTTERANCE_CHARS)
        why = ("empty utterance" if not text else f"longer than {MAX_UTTERANCE_CHARS} characters" if long
               else "presented the agent as a clinician" if safety.claims_clinician(text) else None)
        if why is not None and (self.agent.guard_nlg is not None or long):
            meta["guard"] = why
            meta["rejected_text"] = bound_record(text, MAX_UTTERANCE_CHARS)
            text = str(self.agent.nlg_fallback().verbalize(actions, ctx).value).strip()
        if relative := spoken_for(ctx.turns):
            meta["spoken_to"] = f"a guardian, about their {relative}"
            text = about_the_patient(text, relative)
        return text

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
        nlg_meta = p.nlg_meta
        rec = {"turn": turn, "by": decision.by, "at": decision.at or utc_now()}
        if decision.state_patch is not None:
            patched = apply_state_patch(s.patient_state, decision.state_patch)
            edits.append(ReviewEdit(kind="state_patch", before=s.patient_state, after=patched, **rec))
            update["patient_state"] = patched
            raised = self._new_flags(s, patched, turn - 1)
            if raised:
                update["red_flags"] = [*s.red_flags, *raised]
                told = _escalation(raised, s.red_flags, self.agent.red_flag_rules)
                escalation = " ".join(x for x in (p.escalation, told) if x)
        if decision.replace_actions is not None:
            edits.append(ReviewEdit(kind="replace_actions", before=actions, after=decision.replace_actions, **rec))
            actions = decision.replace_actions
            if close_reason != "turn budget":
                reason = cmas.closing_reason(actions, after_opening=bool(s.doctor_turns()))
                close_reason = f"clinician closed the interview ({reason})" if reason else None
            if decision.edit is None:
                ctx = s.context()
                if "patient_state" in update:
                    ctx.state = update["patient_state"]
                nlg, planned = self.agent.nlg, actions
                # the clinician's plan is a new utterance: the NLG gets a whole deadline for it
                out, reason = self._attempt("nlg", lambda: nlg.verbalize(planned, ctx), s, self.agent.turn_deadline_s)
                if out is None:
                    out = self.agent.nlg_fallback().verbalize(planned, ctx)
                    nlg_meta = {**p.nlg_meta, "fallback": reason}
                guard: dict[str, Any] = {}
                text = self._guarded(str(out.value).strip(), planned, ctx, guard)
                nlg_meta = {**nlg_meta, **guard}
        if decision.edit is not None:
            edits.append(ReviewEdit(kind="edit", before=text, after=decision.edit.strip(), **rec))
            text = decision.edit.strip()
        if not edits:
            edits.append(ReviewEdit(kind="approve", **rec))
        update["review_edits"] = _dump([*s.review_edits, *edits])
        update["pending"] = self._pending(s, actions=actions, text=text, escalation=escalation,
                                            close_reason=close_reason, reviewed=True, nlg_meta=nlg_meta)
        return update

    def speak(self, s: InterviewState) -> dict:
        p = s.pending
        meta: dict[str, Any] = {k: v for k, v in p.policy_meta.items()
                                if k != "fallback" and v not in (None, {}, "", False)}
        fallback = {role: reason for role, reason in (("nlu", p.nlu_meta.get("nlu_unavailable")),
                                                      ("policy", p.policy_meta.get("fallback")),
                                                      ("nlg", p.nlg_meta.get("fallback"))) if reason}
        if fallback:  # a simpler module answered this turn (the graph's fallback or a module's own): which and why
            meta["fallback"] = fallback
        if p.nlg_meta.get("format_error"):
            meta["nlg_format_error"] = p.nlg_meta["format_error"]
        if p.nlg_meta.get("guard"):  # the NLG's utterance was replaced: say why and keep what it was
            meta["nlg_guard"] = {"reason": p.nlg_meta["guard"], "rejected_text": p.nlg_meta.get("rejected_text")}
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
        turns = [*s.turns, turn]
        used = [t.meta["plan"] for t in turns if t.speaker == "doctor" and isinstance(t.meta.get("plan"), str)]
        summary = clinician_summary(s.patient_state, self.agent.summary_plans(), used, s.red_flags,
                                    rules=self.agent.red_flag_rules)
        return {"turns": _dump(turns), "pending": Pending().model_dump(mode="json"), "status": status,
                "summary": summary}


def _escalation(flags: list[dict], said: Iterable[dict] = (), rules: Any = None) -> str | None:
    """What the patient is told of newly raised ``flags``. A flag raised before as "possible" (``said``: the session's
    flags so far) that firmer words now raise at its level told its message then (the patient gets a possible flag's
    message all the same): it is not said twice; the clinician sees the new level with its evidence. A rise in
    severity (an urgent hyperglycaemia that vomiting makes an emergency) is told again.

    Once the patient is told to call the emergency number (``rules``: the rule set, whose levels say which message
    advises what, a "possible" flag's too), a message that advises an appointment in the next days is not said: the
    two together contradict each other (a throat swelling shut told "call now" and "book in the next few days"); the
    clinician still sees every flag."""
    said = list(said)
    told = {(f.get("id"), f.get("message")) for f in said if f.get("level") == "possible"}
    advised = {r.id: r.level for r in getattr(rules, "rules", ())}

    def urgency(f: dict) -> int:
        return min(safety.level_rank(f.get("level")), safety.level_rank(advised.get(f.get("id"), f.get("level"))))

    call_now = any(urgency(f) == 0 for f in [*said, *flags])
    return " ".join(dict.fromkeys(f["message"] for f in flags
                                  if f.get("message") and (f.get("id"), f["message"]) not in told
                                  and (urgency(f) == 0 or not call_now))) or None


def _full_text(p: Pending) -> str:
    return f"{p.escalation} {p.text or ''}".strip() if p.escalation else (p.text or "")


def _one_line(text: str, limit: int = 200) -> str:
    """An error message as one bounded line for the session record (it may quote a server's answer)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plain(meta: dict) -> dict:
    """Module output and meta as JSON-safe values (they are checkpointed): other types as text, and a model's lone
    surrogates (no character; the store cannot encode them) as U+FFFD."""
    return bound_record(json.loads(valid_unicode(json.dumps(meta, default=str, ensure_ascii=False))))


def _emit(event: dict) -> None:
    """Custom stream events (``stream_mode="custom"``): per-node latency and finished doctor turns."""
    from langgraph.config import get_stream_writer

    with contextlib.suppress(RuntimeError):  # RuntimeError: called outside a graph run
        get_stream_writer()(event)


def after_speak(s: InterviewState) -> str:
    return "patient" if s.status == "active" else "__end__"  # langgraph.graph.END


