"""Driving a policy through a whole interview without the graph: the policy, the real tracker and (optionally) the
template NLG, with a scripted patient that answers the questions of each doctor turn. Shared by the questionnaire
and presentation-plan tests."""

from __future__ import annotations

from collections.abc import Callable

from agent.core import cmas
from agent.core.protocol import TurnContext
from agent.core.tracker import update_state
from policies.questions import answered, questions_of


def ctx_of(state: dict, past: list[list[dict]]) -> TurnContext:
    turns = []
    for _ in past:
        turns += [("doctor", "..."), ("patient", "...")]
    return TurnContext(turns=turns, state=state, past_actions=past)


def run_interview(policy, answer: Callable[[list], dict], first_state: dict | None = None, nlg=None,
                  max_turns: int = 80) -> tuple[dict, list, list, list]:
    """(final state, doctor actions per turn, stage per turn, doctor texts per turn when ``nlg`` is given). The first
    patient turn tells ``first_state``; every later one is ``answer(questions of the doctor's turn)``."""
    state: dict = {}
    past: list[list[dict]] = []
    stages: list[str] = []
    texts: list[str] = []
    for turn in range(max_turns):
        ctx = ctx_of(state, past)
        out = policy.next_actions(ctx)
        assert cmas.parse_actions(out.value) == out.value
        if nlg is not None:
            texts.append(nlg.verbalize(out.value, ctx).value)
        stages.append(out.meta["stage"])
        past = past + [out.value]
        if cmas.closing_reason(out.value, after_opening=turn > 0):
            return state, past, stages, texts
        if turn == 0:  # the complaint, and what the greeting asked with it that it does not tell (greeting_asks)
            opening = update_state({}, cmas.parse_nlu([{"intent": "inform", "slots": first_state}])) if first_state \
                else {}
            qs = [q for q in questions_of(out.value) if not answered(opening, q, policy.vocab)]
            told = answer(qs) if qs else {}
            slots = {k: [*(first_state or {}).get(k, []), *told.get(k, [])] for k in {*(first_state or {}), *told}}
        else:
            slots = answer(questions_of(out.value))
        frames = cmas.parse_nlu([{"intent": "inform", "slots": slots}] if slots else [{"intent": "chit-chat"}])
        state = update_state(state, frames)
    raise AssertionError(f"no closing within {max_turns} turns; stages {stages}")
