"""medhx's whole-interview metrics for simulated interviews (``medhx simulate``). They are medhx's own definitions,
not a published benchmark's; peers (AgentClinic, MediQ, MAQuE) measure the same ideas (information gathered, turns
used) in their own terms.

Per interview, against the case card (facts and matching: :mod:`eval.cases`):

- **history coverage**: the share of the card's facts found in the agent's final patient state. A medical item is
  one head fact (slot type, status, value) plus one fact per attribute value (list attributes: one per element); a
  record slot (travel, occupation, residence, basic information) one fact per key. Reported canonical and
  non-canonical apart (MediTOD's split), and by polarity: positive facts (positive / available / a record of what
  is), pertinent negatives (negative / unavailable / not travelled ...), unknowns. A fact counts once it is in the
  final state under the same status; one lost later (a list replaced, a status flipped) does not count.
- **state precision**: the share of the final state's facts the card supports: the card holds them, or they deny a
  concept the card does not hold at all (the simulated patient denies what its card lacks, so that denial is true).
- **turns until close**: doctor turns in the session (greeting and closing included), and what ended it: the
  policy (``policy``), the agent's turn budget (``turn budget``), the runner's cap, or an error.
- **questions repeated**: inquire questions (slot type, value, check; ``policies.questions``) asked in an earlier
  doctor turn of the same interview.
- **questions already answered**: inquire questions the patient state already answered when they were asked
  (``policies.questions.answered``, the questionnaire policy's own test).
- **red flags**: the rule ids raised in the session vs the card's expected ones: hit, missed, unexpected, and the
  patient turn each was raised at.
- **diagnosis match**: when the card has a diagnosis, whether a ``diagnosis`` action offered the same disease
  (vocabulary match).
- **why each fact was missed**: ``never elicited`` (no simulator reply stated it: the policy never asked and the
  patient did not volunteer it), ``said, not understood`` (a reply stated it, the admitted NLU frames never held
  it), ``said, set aside by grounding`` (the NLU produced it, the grounding gate set it aside), ``understood, lost
  later`` (a turn's admitted frames held it, the final state does not).
- **what happened** (``events``): empty replies (the runner sent silence), replies longer than the agent keeps
  (``agent.safety.MAX_PATIENT_CHARS``, truncated), contradictions in the simulator's own frames (one concept
  stated with two polarities), NLU format errors, grounding set-asides, what the simulator reported (invented
  facts flagged by the judge, fallbacks), and errors.

Overall figures are micro-averaged: facts (and questions) summed over interviews, then divided.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from agent.graph_state import InterviewState
from agent.ontology import Vocabulary
from agent.safety import MAX_PATIENT_CHARS
from eval.cases import CaseCard, Fact, covered, frames_state, state_facts, supported
from policies.questions import answered, questions_of
from policies.questions import asked as was_asked

GROUPS = ("canonical", "non_canonical", "positive", "negative", "unknown", "overall")
NEVER_ELICITED = "never elicited"
NOT_UNDERSTOOD = "said, not understood"
SET_ASIDE = "said, set aside by grounding"
LOST_LATER = "understood, lost later"


def _groups(f: Fact) -> list[str]:
    return ["canonical" if f.canonical else "non_canonical", f.polarity, "overall"]


def coverage_counts(card: CaseCard, state: dict, vocab: Vocabulary) -> tuple[dict[str, list[int]], list[Fact]]:
    """``{group: [covered, total]}`` and the card facts not covered."""
    counts = {g: [0, 0] for g in GROUPS}
    missed = []
    for fact in card.facts():
        hit = covered(fact, state, vocab)
        for g in _groups(fact):
            counts[g][0] += hit
            counts[g][1] += 1
        if not hit:
            missed.append(fact)
    return counts, missed


def rates(counts: dict[str, list[int]]) -> dict[str, Any]:
    """``{group: covered / total or None, "counts": {group: [covered, total]}}``."""
    out: dict[str, Any] = {g: (round(c / n, 4) if n else None) for g, (c, n) in counts.items()}
    out["counts"] = {g: list(v) for g, v in counts.items()}
    return out


def precision(card: CaseCard, state: dict, vocab: Vocabulary) -> dict[str, Any]:
    facts = state_facts(state)
    unsupported = [f.label() for f in facts if not supported(f, card.state, vocab)]
    n = len(facts)
    return {"value": round((n - len(unsupported)) / n, 4) if n else None, "supported": n - len(unsupported),
            "total": n, "unsupported": unsupported}


def question_counts(st: InterviewState, vocab: Vocabulary) -> dict[str, Any]:
    asked_n, repeated, already = 0, [], []
    past: list[list[dict]] = []
    state: dict = {}
    for t in st.turns:
        if t.speaker == "patient":
            state = t.state if t.state is not None else state
            continue
        for q in questions_of(t.actions or []):
            asked_n += 1
            if was_asked(past, q, vocab):
                repeated.append(f"turn {t.index}: {q.label()}")
            if answered(state, q, vocab):
                already.append(f"turn {t.index}: {q.label()}")
        past.append(t.actions or [])
    return {"asked": asked_n, "repeated": len(repeated), "already_answered": len(already),
            "repeated_list": repeated, "already_answered_list": already}


def red_flag_result(card: CaseCard, st: InterviewState) -> dict[str, Any]:
    raised: dict[str, int | None] = {}
    for f in st.red_flags:
        raised.setdefault(f["id"], f.get("turn"))
    expected = list(card.red_flags)
    return {"expected": expected, "raised": sorted(raised), "hit": sorted(set(expected) & set(raised)),
            "missed": sorted(set(expected) - set(raised)), "unexpected": sorted(set(raised) - set(expected)),
            "raised_at_turn": raised}


def diagnosis_result(card: CaseCard, st: InterviewState, vocab: Vocabulary) -> dict[str, Any] | None:
    if not card.diagnosis:
        return None
    offered = [item["value"] for t in st.doctor_turns() for act in t.actions or [] if act.get("action") == "diagnosis"
               for item in act.get("disease") or [] if isinstance(item.get("value"), str)]
    match = any(vocab.same("disease", o, card.diagnosis) for o in offered)
    return {"expected": card.diagnosis, "offered": offered, "match": match}


def _mentions(extra: Any, fact: Fact) -> bool:
    text = json.dumps(extra, default=str).casefold()
    return bool(extra) and (fact.head or fact.value or "").casefold() in text


def miss_reason(fact: Fact, st: InterviewState, replies: list[dict], vocab: Vocabulary) -> str:
    said = [r for r in replies if covered(fact, frames_state(r.get("frames") or []), vocab)]
    if not said:
        return NEVER_ELICITED
    patient = {t.index: t for t in st.patient_turns()}
    if any(covered(fact, frames_state(t.nlu or []), vocab) for t in patient.values()):
        return LOST_LATER
    if any(_mentions(patient[r["turn"]].meta.get("extra"), fact) for r in said if r["turn"] in patient):
        return SET_ASIDE
    return NOT_UNDERSTOOD


def _contradictions(replies: list[dict], vocab: Vocabulary) -> list[str]:
    seen: dict[tuple[str, str], dict[str, list[int]]] = {}
    for r in replies:
        for f in state_facts(frames_state(r.get("frames") or [])):
            if f.attribute is not None or f.head is None or f.polarity == "unknown":
                continue
            key = (f.base, vocab.code(f.base, f.head) or f.head.casefold())
            seen.setdefault(key, {}).setdefault(f.polarity, []).append(r["turn"])
    return [f"{base} {concept}: " + ", ".join(f"{p} at turns {turns}" for p, turns in sorted(pols.items()))
            for (base, concept), pols in seen.items() if len(pols) > 1]


def events(st: InterviewState, replies: list[dict], vocab: Vocabulary) -> dict[str, Any]:
    sim: Counter = Counter()
    for r in replies:
        meta = r.get("meta") or {}
        sim["invented"] += bool(meta.get("invented"))
        sim["fallbacks"] += bool(meta.get("fallback"))
        sim["invalid_frames"] += bool(meta.get("invalid_frames"))
    patient = st.patient_turns()
    return {
        "empty_replies": [r["turn"] for r in replies if (r.get("meta") or {}).get("empty")],
        "long_replies": [{"turn": r["turn"], "chars": len(r["text"]), "kept": MAX_PATIENT_CHARS}
                         for r in replies if len(r.get("text") or "") > MAX_PATIENT_CHARS],
        "contradictions": _contradictions(replies, vocab),
        "nlu_format_errors": sum(1 for t in patient if t.meta.get("format_error")),
        "grounding_set_asides": sum(1 for t in patient if t.meta.get("extra")),
        "simulator": {k: v for k, v in sim.items() if v},
    }


def ended_by(st: InterviewState, error: str | None, capped: bool) -> str:
    if error:
        return "error"
    if capped:
        return "runner cap"
    return {"closed": "policy", "budget_reached": "turn budget"}.get(st.status, "still open")


def interview_metrics(card: CaseCard, st: InterviewState, replies: list[dict], vocab: Vocabulary,
                      error: str | None = None, capped: bool = False) -> dict[str, Any]:
    """Every metric of one simulated interview (see the module docstring). ``replies``: the runner's record of
    each patient turn: ``turn`` (its index in the session), ``text``, ``frames`` (gold), ``meta``."""
    counts, missed = coverage_counts(card, st.patient_state, vocab)
    return {
        "coverage": rates(counts),
        "precision": precision(card, st.patient_state, vocab),
        "turns": {"doctor": len(st.doctor_turns()), "patient": len(st.patient_turns()),
                  "ended_by": ended_by(st, error, capped)},
        "questions": question_counts(st, vocab),
        "red_flags": red_flag_result(card, st),
        "diagnosis": diagnosis_result(card, st, vocab),
        "missed": [{"fact": f.label(), "canonical": f.canonical, "polarity": f.polarity,
                    "reason": miss_reason(f, st, replies, vocab)} for f in missed],
        "events": events(st, replies, vocab),
        **({"error": error} if error else {}),
    }


# --------------------------------------------------------------------------- over interviews


def aggregate(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Micro-averaged figures over interviews (the ``metrics`` of each result)."""
    counts = {g: [0, 0] for g in GROUPS}
    prec = [0, 0]
    q: Counter = Counter()
    flags: Counter = Counter()
    diag = [0, 0]
    reasons: Counter = Counter()
    ended: Counter = Counter()
    ev: Counter = Counter()
    turns = []
    for m in results:
        for g in GROUPS:
            c, n = m["coverage"]["counts"][g]
            counts[g][0] += c
            counts[g][1] += n
        prec[0] += m["precision"]["supported"]
        prec[1] += m["precision"]["total"]
        for k in ("asked", "repeated", "already_answered"):
            q[k] += m["questions"][k]
        rf = m["red_flags"]
        flags.update(expected=len(rf["expected"]), hit=len(rf["hit"]), missed=len(rf["missed"]),
                     unexpected=len(rf["unexpected"]))
        if m["diagnosis"] is not None:
            diag[0] += m["diagnosis"]["match"]
            diag[1] += 1
        reasons.update(x["reason"] for x in m["missed"])
        ended[m["turns"]["ended_by"]] += 1
        turns.append(m["turns"]["doctor"])
        e = m["events"]
        ev.update(empty_replies=len(e["empty_replies"]), long_replies=len(e["long_replies"]),
                  contradictions=len(e["contradictions"]), nlu_format_errors=e["nlu_format_errors"],
                  grounding_set_asides=e["grounding_set_asides"], errors=int("error" in m), **e["simulator"])
    return {
        "interviews": len(results),
        "coverage": rates(counts),
        "precision": round(prec[0] / prec[1], 4) if prec[1] else None,
        "turns_until_close": round(sum(turns) / len(turns), 2) if turns else None,
        "questions": dict(q),
        "red_flags": {**dict(flags), "recall": round(flags["hit"] / flags["expected"], 4) if flags["expected"] else None},
        "diagnosis": {"cases": diag[1], "matched": diag[0]},
        "missed_by_reason": dict(reasons.most_common()),
        "ended_by": dict(ended),
        "events": {k: v for k, v in ev.items() if v},
    }
