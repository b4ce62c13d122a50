"""Choosing a presentation plan from the patient state (the plans themselves: :mod:`policies.presentations`).

:func:`choose_plan` picks the chief complaint's plan, moves to a plan that screens a raised red-flag rule the current
one does not cover, and returns None when nothing matches (the caller falls back to the review of systems). Apart from
the plan files' schema because it is the policy's decision, not the data's: the schema says what a plan may contain,
this says when a clinician would follow it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from agent.core import cmas
from agent.core.ontology import Vocabulary, default_vocabulary, normalize
from policies.presentations import Plan


def _positives(state: dict) -> list[dict]:
    return [it for it in state.get("positive_symptom") or []
            if isinstance(it.get("value"), str) and normalize(it["value"]) not in cmas.OPEN_VALUES]


def complaint_items(state: dict, chief_complaint: Sequence[str] | None, vocab: Vocabulary,
                    plans: Sequence[Plan] = ()) -> list[dict]:
    """The chief complaint as state items (a value's item carries its location). Without one, the state's earliest
    positive symptom that some plan is triggered by stands for it: the tracker keeps items in the order the patient
    reported them, and later positives are answers to the plan's own questions, which must not move the plan."""
    positives = _positives(state)
    if chief_complaint is None:
        first = next((it for it in positives if any(p.triggered_by(it, vocab) for p in plans)), None)
        return [first] if first else []
    out = []
    for value in chief_complaint:
        item = next((it for it in positives if vocab.same("symptom", it["value"], value)), None)
        out.append(item or {"value": value})
    return out


def complaint_plan(items: Sequence[dict], plans: Sequence[Plan], vocab: Vocabulary) -> Plan | None:
    """The plan of a chief complaint: of the plans its symptoms trigger, the highest priority (a complaint that can
    hide an emergency outranks a common one: chest pain over cough); ties go to the symptom named first, then id."""
    ranked = [(-p.priority, pos, p.id) for pos, item in enumerate(items) for p in plans if p.triggered_by(item, vocab)]
    return next(p for p in plans if p.id == min(ranked)[2]) if ranked else None


def flag_plan(current: Plan | None, plans: Sequence[Plan], flags: Sequence[str], state: dict,
              vocab: Vocabulary, opening: dict | None = None) -> Plan | None:
    """The plan after red flags were raised: the current one while it covers every raised rule (:attr:`Plan.covers`);
    otherwise, for the first raised rule it does not cover, a plan that screens it, preferring one whose complaint the
    rule is about, then the plan of the ``opening`` complaint (the patient's first problem), then one the state's
    positive symptoms trigger, then one that screens more of the raised rules, then the higher priority. A raised flag
    keeps its plan when the complaint changes: the screen of an emergency comes before the history of a new problem,
    and the interview goes back to the presentation it was following (hives and a swollen tongue, then "I've felt
    light-headed" at "anything else?": the rash plan screens the anaphylaxis, not the breathlessness plan's PE
    screen because the breathlessness was one of its answers)."""
    missing = [f for f in flags if current is None or f not in current.covers]
    positives = _positives(state)
    for rule in missing:
        candidates = [p for p in plans if rule in p.screened_rules]
        if candidates:
            return min(candidates, key=lambda p: (rule not in p.about,
                                                  not (opening is not None and p.triggered_by(opening, vocab)),
                                                  not any(p.triggered_by(it, vocab) for it in positives),
                                                  -len(p.screened_rules & set(flags)), -p.priority, p.id))
    return current


def choose_plan(state: dict, plans: Mapping[str, Plan] | Iterable[Plan], chief_complaint: list[str] | None = None,
                flags: Sequence[str] = (), vocab: Vocabulary | None = None) -> Plan | None:
    """The presentation plan for a patient state, or None (the caller falls back to the review of systems).

    ``chief_complaint``: the positive symptom values of the patient's current main problem (a case card's
    ``chief_complaint``; the symptoms first reported). The caller passes the new problem when the patient names
    another main problem, which switches the plan; without it, the state's earliest positive symptom a plan knows
    stands for it. ``flags``: the red-flag rule ids raised so far, most important first; a raised rule the chosen
    plan does not cover moves the interview to a plan that screens it (:func:`flag_plan`)."""
    vocab = vocab or default_vocabulary()
    ordered = list(plans.values()) if isinstance(plans, Mapping) else list(plans)
    items = complaint_items(state, chief_complaint, vocab, ordered)
    return flag_plan(complaint_plan(items, ordered, vocab), ordered, list(flags), state, vocab,
                     opening=items[0] if items else None)
