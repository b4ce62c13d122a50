"""medhx's whole-interview metrics for simulated interviews (``medhx simulate``). They are medhx's own definitions,
not a published benchmark's; peers (AgentClinic, MediQ, MAQuE) measure the same ideas (information gathered, turns
used) in their own terms.

Per interview, against the case card (facts and matching: :mod:`eval.runs.cases`):

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
- **diagnosis match**: when the card has a diagnosis, whether it is among the top 3 differential considerations of
  the clinician's summary (``policies.summary``, kept in ``InterviewState.summary``, never said to the patient), and
  at which rank (:func:`same_diagnosis` matches names).
- **red-flag screen on time**: for a card whose presentation has a plan, whether every screen question of the plan
  was asked (or answered unasked) with the first within 2 doctor turns after the complaint was known and the last
  within 5 (:func:`screen_timing`).
- **facts per turn**: the card facts found in the final state over the doctor turns used.
- **why each fact was missed**: ``never elicited`` (no simulator reply stated it: the policy never asked and the
  patient did not volunteer it), ``said, not understood`` (a reply stated it, the admitted NLU frames never held
  it), ``said, set aside by grounding`` (the NLU produced it, the grounding gate set it aside), ``understood, lost
  later`` (a turn's admitted frames held it, the final state does not).
- **what happened** (``events``): empty replies (the runner sent silence), replies longer than the agent keeps
  (``agent.core.safety.MAX_PATIENT_CHARS``, truncated), contradictions in the simulator's own frames (one concept
  stated with two polarities), NLU format errors, grounding set-asides, what the simulator reported (invented
  facts flagged by the judge, fallbacks), and errors.

Overall figures are micro-averaged: facts (and questions) summed over interviews, then divided.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from agent.app.graph_state import InterviewState
from agent.core.ontology import Vocabulary, find_item
from agent.core.safety import MAX_PATIENT_CHARS
from agent.core.sex_specific import default_sex_specific
from eval.runs.cases import CaseCard, Fact, covered, frames_state, state_facts, supported
from policies.presentations import Plan, default_plans
from policies.questions import Question, answered, questions_of
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


TOP_CONSIDERATIONS = 3
"""The card's diagnosis counts as reached when it is among this many of the summary's ranked considerations."""
_STOP = frozenset({"of", "the", "a", "an", "or", "and", "with", "possible", "acute", "disease", "syndrome"})


def _words(name: str) -> frozenset[str]:
    """A diagnosis name's content words, spelling aside (British/American, a trailing -ing or -s)."""
    text = re.sub(r"[^a-z0-9 ]+", " ", name.casefold().replace("ae", "e").replace("oe", "e"))
    return frozenset(re.sub(r"(?:ing|s)$", "", w) or w for w in text.split() if w not in _STOP)


def _names(label: str) -> list[str]:
    """A consideration's names: the label, the label without its bracket, each name in the bracket (``oesophageal
    varices (variceal bleeding)``), and each side of an ``or`` (``stroke or transient ischaemic attack``)."""
    inner = re.findall(r"\(([^)]*)\)", label)
    bare = re.sub(r"\s*\([^)]*\)", "", label).strip()
    names = [label, bare, *(x.strip() for part in inner for x in re.split(r",| or ", part))]
    names += [x.strip() for x in re.split(r" or |/", bare)]
    return [n for n in dict.fromkeys(names) if n]


def same_diagnosis(expected: str, label: str, vocab: Vocabulary) -> bool:
    """Whether a consideration names the card's diagnosis: the same disease of the vocabulary, or one of its names
    (:func:`_names`) whose content words all occur in the diagnosis's, or the reverse (``migraine`` for ``migraine
    with aura``; ``peptic ulcer bleeding`` for ``peptic ulcer bleed``). medhx's own matching, documented here."""
    if vocab.same("disease", expected, label):
        return True
    want = _words(expected)
    for name in _names(label):
        got = _words(name)
        if got and want and (got <= want or want <= got):
            return True
    return False


def diagnosis_result(card: CaseCard, st: InterviewState, vocab: Vocabulary) -> dict[str, Any] | None:
    """The card's diagnosis against the clinician's summary (``InterviewState.summary``): ``offered`` the ranked
    considerations, ``match`` whether the diagnosis is among the top :data:`TOP_CONSIDERATIONS`, ``rank`` its place
    (1-based; None when not offered). A spoken ``diagnosis`` action, which the questionnaire never plans, is reported
    apart (``spoken``)."""
    if not card.diagnosis:
        return None
    offered = [c["label"] for c in (st.summary or {}).get("considerations") or []]
    rank = next((i + 1 for i, label in enumerate(offered) if same_diagnosis(card.diagnosis, label, vocab)), None)
    spoken = [item["value"] for t in st.doctor_turns() for act in t.actions or [] if act.get("action") == "diagnosis"
              for item in act.get("disease") or [] if isinstance(item.get("value"), str)]
    return {"expected": card.diagnosis, "offered": offered, "rank": rank,
            "match": rank is not None and rank <= TOP_CONSIDERATIONS, "spoken": spoken}


SCREEN_FIRST_BY = 2
SCREEN_ALL_BY = 5
"""Issue 18's "on time": the first red-flag screen question within 2 doctor turns after the complaint is known, the
whole screen within 5."""


def _screen_done(state: dict, q: Question, turn: list[dict], vocab: Vocabulary) -> bool:
    """Whether a doctor turn (or the state before it) took care of one screen item. A located item whose value the
    patient has elsewhere ("pain in the arm" of a chest pain) is asked as that symptom's location ("where is the pain,
    does it spread?"), so a location question about the value counts."""
    if answered(state, q, vocab) or was_asked([turn], q, vocab):
        return True
    if q.check != "location":
        return False
    found = find_item(state, q.base, q.value, vocab)
    return found is not None and found[0] == "positive" and any(
        p.base == q.base and p.check == "location" and vocab.same(q.base, p.value, q.value) for p in questions_of(turn))


def screen_timing(card: CaseCard, st: InterviewState, vocab: Vocabulary,
                  plans: Mapping[str, Plan] | None = None) -> dict[str, Any] | None:
    """Whether the red-flag screen of the interview's presentation plan came on time (None: no plan, neither followed
    nor named by the card).

    The plan is the first one the policy followed (doctor turn ``meta.plan``), else the card's ``presentation``;
    ``card_plan`` says whether the two agree. The complaint is known at the first patient turn whose state holds a
    positive symptom that triggers the plan. Counting the doctor turns after it (1, 2, ...), a screen item is done at
    the first one that asks it, or that comes after a patient turn whose state already answers it (volunteered);
    ``first`` and ``last`` are the turns the first and the last item were done. ``on_time``: every item done,
    ``first`` <= 2 and ``last`` <= 5. Items only the other sex has (the patient's sex as the final state tells it)
    are left out (``other_sex_items``), and so are screens for other complaints than the final state's (``when``: the
    weakness plan's cauda equina screen of a face's weakness)."""
    plans = plans if plans is not None else default_plans()
    followed = list(dict.fromkeys(t.meta["plan"] for t in st.doctor_turns() if isinstance(t.meta.get("plan"), str)))
    plan = plans.get(followed[0] if followed else card.presentation or "")
    if plan is None:
        return None
    items: dict[Question, None] = {}
    positives = st.patient_state.get("positive_symptom") or []
    for screen in plan.red_flag_screen:
        if not screen.applies(positives, vocab):  # a screen for other complaints (``when``): not this patient's
            continue
        for a in screen.ask:
            items[Question(a.base, a.value, "location", a.location) if a.location else Question(a.base, a.value)] = None
    # an item only the other sex has, or one of the childbearing years past them, is no part of this patient's screen
    # (the policy leaves it out once the sex or the age is told, and the clinician's summary marks it not applicable)
    sexes = default_sex_specific()
    sex = sexes.patient_sex(st.patient_state)
    other = [q for q in items if (sex is not None and (only := sexes.of_item(
        q.base, q.value, q.values if q.check == "location" else ())) is not None and only != sex)
        or sexes.past_childbearing(q.base, q.value, st.patient_state)]
    for q in other:
        del items[q]
    known = next((t.index for t in st.patient_turns()
                  if any(plan.triggered_by(it, vocab) for it in (t.state or {}).get("positive_symptom") or [])), None)
    out: dict[str, Any] = {"plan": plan.id, "card_plan": card.presentation, "plans_followed": followed,
                           "items": len(items), "other_sex_items": len(other), "complaint_known_at": known}
    done: dict[Question, int] = {}
    state: dict = {}
    n = 0
    for t in st.turns:
        if t.speaker == "patient":
            state = t.state if t.state is not None else state
            continue
        if known is None or t.index <= known:
            continue
        n += 1
        for q in items:
            if q not in done and _screen_done(state, q, t.actions or [], vocab):
                done[q] = n
    first = min(done.values()) if done else None
    last = max(done.values()) if len(done) == len(items) else None
    on_time = len(done) == len(items) and (first or 0) <= SCREEN_FIRST_BY and (last or 0) <= SCREEN_ALL_BY
    return {**out, "first": first, "last": last, "done": len(done),
            "not_done": [q.label() for q in items if q not in done], "on_time": on_time}


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
                      error: str | None = None, capped: bool = False,
                      plans: Mapping[str, Plan] | None = None) -> dict[str, Any]:
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
        "red_flag_screen": screen_timing(card, st, vocab, plans),
        "facts_per_turn": (round(counts["overall"][0] / len(st.doctor_turns()), 3) if st.doctor_turns() else None),
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
    screens = [0, 0, 0]
    facts = [0, 0]
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
        if m.get("red_flag_screen") is not None:
            screens[0] += m["red_flag_screen"]["on_time"]
            screens[1] += 1
            screens[2] += m["red_flag_screen"]["plan"] == m["red_flag_screen"]["card_plan"]
        facts[0] += m["coverage"]["counts"]["overall"][0]
        facts[1] += m["turns"]["doctor"]
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
        "red_flags": {
            **dict(flags),
            "recall": round(flags["hit"] / flags["expected"], 4) if flags["expected"] else None,
        },
        "diagnosis": {"cases": diag[1], "matched": diag[0]},
        "red_flag_screen": {"cases": screens[1], "on_time": screens[0], "plan_is_card_presentation": screens[2]},
        "facts_per_turn": round(facts[0] / facts[1], 3) if facts[1] else None,
        "missed_by_reason": dict(reasons.most_common()),
        "ended_by": dict(ended),
        "events": {k: v for k, v in ev.items() if v},
    }
