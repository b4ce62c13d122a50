"""The clinician's summary of an interview: the presentation, the red-flag screen, and ranked differential
considerations, each with the facts of the patient state that support it and those that argue against it.

It is for the clinician only. Nothing here is said to the patient or becomes a spoken doctor action (a CMAS
``diagnosis`` action would be said): the graph keeps the summary in the interview's own state
(``agent.app.graph_state.InterviewState.summary``), the history note and the console show it, and ``medhx simulate``
scores it there.

Everything comes from data already validated elsewhere: the presentation plans (``configs/presentations/*.yaml``,
:mod:`policies.presentations`) name the considerations and the evidence for and against each, and the red-flag rules
(``configs/red_flags.yaml``) the screen. The summary only reads the state against them, so every fact it cites is an
item of the state (slot type, status, value, the item's own locations), never a word the summary made up.

Ranking is deliberately simple and explainable to the clinician who reads it: a consideration scores one point per
fact for it (an item the plan lists under ``supports``, found in the state with that status) and loses one per fact
against it (an item listed under ``against`` found with that status, or a supporting symptom the patient gave the
opposite answer to: a denied typical feature argues against). A risk factor the patient does not have (no surgery, not
on the pill, no clot before) is no fact against: clinical scores (Wells, HEART) count the risk factors present, and a
deep vein thrombosis after a long flight had ranked last behind seven absent ones. Only considerations with at least
one fact for them are ranked; ties go to the one with more facts for it, then to the plan's own order (the plan lists
the likelier or the more dangerous first).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.core import cmas, cmas_wording
from agent.core.ontology import Vocabulary, default_vocabulary
from agent.core.safety import Rule, RuleSet, context_held, context_needs, default_rules, level_rank
from agent.core.sex_specific import SexSpecific, default_sex_specific
from policies.plan_choice import choose_plan
from policies.presentations import Consideration, Plan, PlanItem

FOR_THE_CLINICIAN = ("For the clinician only: considerations from the presentation plan, ranked by the facts heard "
                     "in this interview. They are prompts for your assessment, not a diagnosis, and were never said "
                     "to the patient.")
OPPOSITE = {"positive": "negative", "negative": "positive"}
RECORD_PRESENT = {"travel": "traveled", "occupation": "true", "residence": "living"}
"""The record status that makes a record slot item "positive" evidence (a plan may cite travel or an occupation)."""


# --------------------------------------------------------------------------- facts of the state


def fact_text(base: str, status: str, item: dict) -> str:
    """A state item in the clinician's words: ``chest pain (chest, left arm)``, ``no fever``, ``fever: not known``."""
    value = cmas_wording.note_name(item.get("value") or base.replace("_", " "))  # "alcohol use", not "abuse"
    where = [x for x in item.get("location") or [] if isinstance(x, str)]
    what = f"{value} ({', '.join(where)})" if where else value
    kind = {"medical_history": "history of ", "family_history": "family history of ", "medication": "takes ",
            "habit": "", "exposure": "exposed to "}.get(base, "")
    if status == "negative":
        return f"no {kind}{what}" if kind else f"no {what}"
    if status == "unknown":
        return f"{kind}{what}: not known"
    return f"{kind}{what}"


def _fact(base: str, status: str, item: dict) -> dict[str, Any]:
    out: dict[str, Any] = {"slot": base, "status": status, "value": item.get("value")}
    if item.get("location"):
        out["location"] = list(item["location"])
    out["text"] = fact_text(base, status, item)
    return out


def find_evidence(state: dict, e: PlanItem, vocab: Vocabulary) -> tuple[str, dict] | None:
    """``(status, item)`` of the state item a plan item names (an evidence entry or a screen question; any status),
    or None. Record slots (travel, occupation, residence) count as positive when the record says the thing is so."""
    if e.base == "basic_information":
        return None
    if e.base in RECORD_PRESENT:
        for _, item in cmas.slot_items(state, e.base):
            if isinstance(item.get("value"), str) and vocab.same(e.base, item["value"], e.value):
                return ("positive" if item.get("status") == RECORD_PRESENT[e.base] else "negative"), item
        return None
    for status, item in cmas.slot_items(state, e.base):
        if status in OPPOSITE and e.matches(item, vocab):
            return status, item
    return None


# --------------------------------------------------------------------------- considerations


@dataclass(frozen=True)
class Weighed:
    """One consideration read against the state."""

    consideration: Consideration
    plan: str
    order: int
    supports: tuple[dict, ...]
    against: tuple[dict, ...]

    @property
    def score(self) -> int:
        return len(self.supports) - len(self.against)

    def as_dict(self) -> dict[str, Any]:
        c = self.consideration
        return {"label": c.label, "disease": c.disease, "plan": self.plan, "score": self.score,
                "supports": list(self.supports), "against": list(self.against)}


def weigh(c: Consideration, plan: str, order: int, state: dict, vocab: Vocabulary) -> Weighed:
    """The facts of the state for and against one consideration (see the module docstring for the rule)."""
    pro: list[dict] = []
    con: list[dict] = []
    for side, listed in (("supports", c.supports), ("against", c.against)):
        for e in listed:
            found = find_evidence(state, e, vocab)
            if found is None:
                continue
            status, item = found
            fact = _fact(e.base, status, item)
            if status == e.status:
                (pro if side == "supports" else con).append(fact)
            elif side == "supports" and OPPOSITE.get(e.status) == status and e.base == "symptom":
                con.append(fact)  # a denied feature argues against; an absent risk factor does not (Wells, HEART)
    return Weighed(c, plan, order, tuple(_unique(pro)), tuple(_unique(con)))


def _unique(facts: Iterable[dict]) -> list[dict]:
    seen: set[str] = set()
    out = []
    for f in facts:
        if f["text"] not in seen:
            seen.add(f["text"])
            out.append(f)
    return out


def rank(plans: Sequence[Plan], state: dict, vocab: Vocabulary, sexes: SexSpecific | None = None) -> list[Weighed]:
    """The considerations of the plans with at least one fact for them, best first; a consideration several plans
    name counts once, at its best reading. A consideration only the other sex can have (ectopic pregnancy for a man)
    is no consideration at all, whatever facts the state holds for it."""
    sex = (sexes or default_sex_specific()).patient_sex(state)
    best: dict[str, Weighed] = {}
    listed = [(plan.id, c) for plan in plans for c in plan.considerations if c.sex is None or sex in (None, c.sex)]
    for order, (plan_id, c) in enumerate(listed):
        w = weigh(c, plan_id, order, state, vocab)
        key = c.label.casefold()
        if w.supports and (key not in best or (w.score, len(w.supports)) > (best[key].score,
                                                                             len(best[key].supports))):
            best[key] = w
    return sorted(best.values(), key=lambda w: (-w.score, -len(w.supports), w.order))


# --------------------------------------------------------------------------- the red-flag screen


def screen_result(plans: Sequence[Plan], state: dict, raised: Sequence[dict], vocab: Vocabulary,
                  rules: RuleSet | None = None, sexes: SexSpecific | None = None) -> list[dict]:
    """Each rule the plans screen, and every rule raised: ``positive`` (raised in the session), ``negative`` (every
    screen question of the rule answered no), ``incomplete`` (with the items still unanswered), or ``not
    applicable``: a rule with a context (pre-eclampsia needs a pregnancy) whose context the state does not hold. A
    headache plan screens pre-eclampsia through vision loss, and "no loss of vision" from a 67-year-old man is no
    negative pre-eclampsia screen: the clinician sees what the rule needs and whether it was denied or never said.
    A screen that asks items only one sex has (missed periods and vaginal bleeding screen an ectopic pregnancy) is not
    applicable to a patient of the other sex either: it needs that sex."""
    by_id: dict[str, Rule] = {r.id: r for r in (rules or default_rules()).rules}
    sexes = sexes or default_sex_specific()
    sex = sexes.patient_sex(state)
    out: dict[str, dict] = {}
    for f in raised:  # a rule raised again at a more severe level shows at that level
        rid = f.get("id")
        if isinstance(rid, str) and (rid not in out or level_rank(f.get("level")) < level_rank(out[rid]["level"])):
            out[rid] = {"rule": rid, "result": "positive", "level": f.get("level"), "message": f.get("message"),
                        "turn": f.get("turn")}
    for plan in plans:
        for screen in plan.red_flag_screen:
            if screen.rule in out:
                continue
            denied, open_items = [], []
            for ask in screen.ask:
                if sexes.past_childbearing(ask.base, ask.value, state):
                    continue  # not asked of a patient past the childbearing years
                found = find_evidence(state, ask, vocab)
                if found is not None and found[0] == "negative":
                    denied.append(_fact(ask.base, *found))
                else:
                    open_items.append(ask.value + (f" ({', '.join(ask.location)})" if ask.location else ""))
            entry: dict[str, Any] = {"rule": screen.rule, "result": "incomplete" if open_items else "negative",
                                     "facts": denied}
            rule = by_id.get(screen.rule)
            needs_sex = {sexes.of_item(a.base, a.value, a.location) for a in screen.ask} - {None}
            if not screen.applies(state.get("positive_symptom") or [], vocab):  # a face's weakness: no cauda equina
                entry = {"rule": screen.rule, "result": "not applicable", "needs": [screen.when_said()],
                         "facts": denied}
            elif sex is not None and len(needs_sex) == 1 and sex not in needs_sex:
                entry = {"rule": screen.rule, "result": "not applicable", "needs": [f"sex: {needs_sex.pop()}"],
                         "facts": denied}
            elif rule is not None and not context_held(rule, state, vocab):
                entry = {"rule": screen.rule, "result": "not applicable", "needs": context_needs(rule, state, vocab),
                         "facts": denied}
            elif open_items:
                entry["unanswered"] = open_items
            out[screen.rule] = entry
    order = {"positive": 0, "incomplete": 1, "negative": 2, "not applicable": 3}
    return sorted(out.values(), key=lambda r: (order[r["result"]],
                                               level_rank(r.get("level"))))


# --------------------------------------------------------------------------- the summary


def plans_of(plan_ids: Iterable[str], plans: Mapping[str, Plan]) -> list[Plan]:
    return [plans[p] for p in dict.fromkeys(plan_ids) if p in plans]


def clinician_summary(state: dict, plans: Mapping[str, Plan], used: Sequence[str] = (),
                      red_flags: Sequence[dict] = (), vocab: Vocabulary | None = None,
                      rules: RuleSet | None = None) -> dict[str, Any]:
    """The clinician's summary of a patient state (JSON-ready).

    ``used``: the plan ids the interview followed, in order (the questionnaire policy records each turn's plan); the
    first is the presentation. Without any (another policy, or plans off), the plan the state calls for
    (:func:`policies.plan_choice.choose_plan`) stands in, and ``presentation.inferred`` says so. ``red_flags``: the
    flags raised in the session (``InterviewState.red_flags``). ``rules``: the red-flag rules the screen is read
    against (the shipped ones by default)."""
    vocab = vocab or default_vocabulary()
    followed = plans_of(used, plans)
    inferred = False
    if not followed:
        chosen = choose_plan(state, plans, flags=[f["id"] for f in red_flags if isinstance(f.get("id"), str)],
                             vocab=vocab)
        followed, inferred = ([chosen] if chosen else []), chosen is not None
    presentation = ({"id": followed[0].id, "title": followed[0].title, "inferred": inferred} if followed else None)
    return {
        "for": "clinician",
        "notice": FOR_THE_CLINICIAN,
        "presentation": presentation,
        "plans": [p.id for p in followed],
        "red_flag_screen": screen_result(followed, state, red_flags, vocab, rules),
        "considerations": [w.as_dict() for w in rank(followed, state, vocab)],
    }
