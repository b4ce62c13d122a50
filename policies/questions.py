"""Questions as keys: what a doctor action asks, whether the patient state already answers it,
and whether it was asked before. Shared by the questionnaire and the hybrid policy, so both
judge "already answered" and "already asked" the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agent.core import cmas
from agent.core.ontology import Vocabulary, find_item, is_a_kind_of
from policies.presentations import same_place

"""Head values that name no concept but an open question: "any other conditions?", "your age?", "your symptoms"."""

"""Checks whose values make a different question: pain in the abdomen vs in the joints, exposure at home vs at work."""


@dataclass(frozen=True)
class Question:
    """One thing a doctor asks: about ``value`` of slot type ``base``; ``check`` is the attribute asked
    (``None``: whether the patient has it); ``values`` narrows the check (``location`` in the abdomen)."""

    base: str
    value: str
    check: str | None = None
    values: tuple[str, ...] = ()

    @property
    def screening(self) -> bool:
        """Whether it asks if the patient has the item (at a place, for a located one: "any pain in your abdomen?"),
        rather than an attribute of an item they have."""
        return self.check is None or (self.check == "location" and bool(self.values))

    def label(self) -> str:
        parts = [self.base, self.value] + ([self.check] if self.check else []) + list(self.values)
        return "/".join(parts)


def questions_of(actions: Iterable[dict]) -> list[Question]:
    """The questions of the ``inquire`` actions of one turn, in order."""
    out = []
    for act in actions:
        if act.get("action") != "inquire":
            continue
        for base, items in act.items():
            if base == "action" or not items:
                continue
            for item in items:
                checks = item.get("checks") or []
                if not checks:
                    out.append(Question(base, item["value"]))
                for chk in checks:
                    if chk["type"] == "status":  # "do you drink alcohol, and if so how much?": whether, then how much
                        out.append(Question(base, item["value"]))
                    else:
                        out.append(Question(base, item["value"], chk["type"], tuple(chk.get("values") or ())))
    return out


def to_actions(questions: list[Question]) -> list[dict]:
    """Questions -> CMAS inquire actions: one action per slot type (in first-seen order), one item per
    value carrying its checks. An item asked both whether the patient has it and an attribute ("do you drink alcohol,
    and if so how much?") carries a ``status`` check before the others, MediTOD's "status check": an item with checks
    alone asks only the attributes of something the patient has."""
    by_base: dict[str, dict[str, dict]] = {}
    for q in questions:
        items = by_base.setdefault(q.base, {})
        item = items.setdefault(q.value, {"value": q.value})
        if q.check is not None:
            chk: dict = {"type": q.check}
            if q.values:
                chk["values"] = list(q.values)
            item.setdefault("checks", []).append(chk)
    screened = {(q.base, q.value) for q in questions if q.check is None}
    for base, items in by_base.items():
        for value, item in items.items():
            if (base, value) in screened and item.get("checks"):
                item["checks"].insert(0, {"type": "status"})
    return [{"action": "inquire", base: list(items.values())} for base, items in by_base.items()]


# --------------------------------------------------------------------------- answered by the state


def _has(item: dict, base: str, check: str) -> bool:
    names = cmas.CHECK_ATTRIBUTES.get(check) if base == "symptom" else None
    names = names or cmas.RECORD_CHECK_ATTRIBUTES.get(base, {}).get(check) or (check,)
    return any(item.get(n) not in (None, "", []) for n in names)


ANSWERED_BY = {("symptom", "amenorrhea"): ("medical_history", "pregnancy"), ("symptom", "chills"): ("symptom", "rigor")}
"""Items another positive item answers: a woman who says she is pregnant has missed her periods, and one who has
been shivering uncontrollably (rigors) has had chills; asking her "any missed periods?" or "any chills?" tells a
clinician the interview did not listen (a walkthrough's patient: "Well I told you about the shivering")."""


def answered(state: dict, q: Question, vocab: Vocabulary) -> bool:
    """Whether the state already answers ``q``, under any status.

    A symptom the patient denies answers every attribute question about it (there is
    nothing to characterise); a location check with values is answered only when the
    item already covers those locations ("pain in the abdomen" does not answer "pain in the joints").
    """
    items = cmas.slot_items(state, q.base)
    value = q.value.casefold()
    if q.base == "basic_information":
        record = items[0][1] if items else {}
        keys = (
            [q.check] if q.check in cmas.BASIC_KEYS else [value] if value in cmas.BASIC_KEYS else list(cmas.BASIC_KEYS)
        )
        return any(record.get(k) for k in keys)
    if q.base in cmas.RECORD_SLOTS:
        record = next((it for _, it in items if it), None)
        if record is None:
            return False
        if q.check in (None, "status") or (q.check == "value" and value in cmas.OPEN_VALUES):
            return True
        return _has(record, q.base, q.check)
    if q.base == "symptom" and value == "pain" and q.check == "location" and q.values and any(
            "pain" in str(it.get("value", "")) and isinstance(it.get("location"), list)
            and all(any(isinstance(h, str) and same_place(h, [v]) for h in it["location"]) for v in q.values)
            for _, it in items):
        return True  # "any pain in your arm?" is answered by a chest pain that goes down the left arm
    if q.base == "symptom" and value == "all":
        positives = [it for s, it in items if s == "positive"]
        return bool(positives) and (q.check is None or all(_has(it, q.base, q.check) for it in positives))
    if value in cmas.OPEN_VALUES:
        # "any other conditions / medications?": answered once the patient has told of one, never by denials of the
        # specific items asked before it (a patient who takes no NSAIDs may still take three other medicines)
        return any(s in ("positive", "avail") and (q.check in (None, "value", "status") or _has(it, q.base, q.check))
                   for s, it in items)
    found = find_item(state, q.base, q.value, vocab)
    if found is None and (kind := next((it for s, it in items if s == "positive"
                                        and is_a_kind_of(str(it.get("value", "")), q.value)), None)) is not None:
        # "any cancer?" is answered by the prostate cancer told already (a rule reads kinds alike: ontology._KINDS_OF)
        return q.check in (None, "value", "status") or _has(kind, q.base, q.check)
    if found is None:
        by = next((b for (base, value), b in ANSWERED_BY.items()
                   if base == q.base and vocab.same(base, q.value, value)), None)
        return by is not None and q.check in (None, "value", "status") and (
            (f := find_item(state, *by, vocab)) is not None and f[0] == "positive")
    status, item = found
    if q.check in cmas.VALUE_SENSITIVE_CHECKS and q.values:
        have = item.get(q.check) or []
        have = [have] if isinstance(have, str) else have
        if q.check == "location":  # "any pain in your testicles?" is answered by a pain in the left testicle
            return all(any(isinstance(h, str) and same_place(h, [v]) for h in have) for v in q.values)
        return set(q.values) <= set(have)
    if q.check in (None, "value", "status"):
        return True
    if status in ("negative", "unavail"):
        return True
    return _has(item, q.base, q.check)


# --------------------------------------------------------------------------- asked before


def asked(past_actions: Iterable[list[dict]], q: Question, vocab: Vocabulary) -> bool:
    """Whether ``q`` was asked in an earlier doctor turn. A check asked about ``all`` symptoms
    counts as asked for each symptom; check values only tell questions apart for location/where. What the opening turn
    asked with the greeting (the age and sex, ``greeting_asks``) does not count: a patient may answer it with the
    complaint alone, and is then asked again where the interview needs it."""
    for turn in past_actions:
        if any(a.get("action") == "nod_prompt_salutations" for a in turn):
            continue
        for p in questions_of(turn):
            if p.base != q.base or p.check != q.check:
                continue
            if q.check in cmas.VALUE_SENSITIVE_CHECKS and set(p.values) != set(q.values):
                continue
            if vocab.same(q.base, p.value, q.value) or (
                q.base == "symptom" and p.value.casefold() == "all" and p.check
            ):
                return True
    return False
