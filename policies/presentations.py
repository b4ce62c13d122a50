"""Presentation plans: what the history of one presenting complaint asks, as data.

A clinician does not take a history of chest pain the way they take one of a sore throat: the complaint decides which
of its attributes to characterise (SOCRATES), which red flags to screen first, which associated symptoms tell its
likely causes apart (and which pertinent negatives to record), and which history, medication, family and social items
are its risk factors. ``configs/presentations/<id>.yaml`` writes this down per common complaint, naming its sources
(NICE CKS, NICE guidelines, OSCE history-taking guides); this module loads the files into strict, typed models and
chooses the plan a patient state calls for.

Loading is strict because a plan is only worth following if every item of it means something to the rest of the agent:
every value is one the shared vocabulary knows for its slot type (what the NLU emits, the state holds and the red-flag
rules read), every check a check type of its slot, every location one the ontology, the NLU lexicon or the rules name;
every red-flag rule id exists and each screen question asks an item that rule reads; associated symptoms come in
groups of at most :data:`MAX_GROUP` of one body system, each with at most its one decisive attribute; a differential
consideration cites only items the plan asks about, so the clinician's summary can fill it from the state. An error
names the file and the failing key (``configs/presentations/cough.yaml: associated.0.ask.1.symptom: ...``).

Which plan a patient state calls for is :mod:`policies.plan_choice`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Literal

import pydantic
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from agent.core import cmas
from agent.core.ontology import Vocabulary, default_vocabulary, normalize, symptom_names, without_side
from agent.core.paths import REPO_ROOT, read_yaml_mapping
from agent.core.safety import Condition, Rule, RuleSet, default_rules
from policies.nlu.lexicon import default_lexicon

DEFAULT_DIR = REPO_ROOT / "configs" / "presentations"

MAX_GROUP = 3
"""Associated symptoms are asked at most three at a time, all of one body system: more in one question is a list the
patient cannot answer item by item, and mixing systems hides which one a "yes" belongs to."""

MAX_SCREEN = 10
"""At most this many distinct red-flag screen questions per plan: the whole screen must fit in the first few doctor
turns after the complaint is known (two questions a turn over five turns), so a plan lists the decisive ones only."""

SYSTEMS = ("respiratory", "cardiovascular", "constitutional", "ent", "gastrointestinal", "genitourinary",
           "neurological", "musculoskeletal", "skin", "eye", "endocrine", "haematological", "psychiatric")
"""Body systems an associated-symptom group belongs to: those of ``configs/questionnaire.yaml`` and the few more a
complaint-led history asks about (eye, endocrine, haematological, psychiatric)."""

ITEM_SLOTS = ("symptom", "medical_history", "family_history", "medication", "habit", "exposure", "travel",
              "occupation", "residence", "basic_information")
"""Slot types a plan may name an item of (the CMAS slots a history asks about; tests and diagnoses are not asked)."""

NonEmpty = cmas.NonEmpty
SymptomCheck = Literal[cmas.SLOTS["symptom"].check_types]  # type: ignore[valid-type]


class PlanError(ValueError):
    """A presentation plan that does not load; the message names the file and the failing key."""


# --------------------------------------------------------------------------- what a plan is checked against


@dataclass(frozen=True)
class PlanContext:
    """What a plan's values are checked against: the vocabulary, the red-flag rules and the known body locations."""

    vocab: Vocabulary
    rules: dict[str, Rule]
    locations: frozenset[str]


place = without_side
"""A body location without its side, as a plan reads it (:func:`agent.core.ontology.without_side`)."""


@lru_cache(maxsize=4096)
def regions(location: str) -> frozenset[str]:
    """The places a state location is in, at every grain the plans use: the place itself, and for each lay or
    anatomical phrase of the NLU lexicon in it (longest first; a phrase inside a longer one found is not read again),
    that phrase and its region (``right lower abdomen`` and ``around the belly button`` are in the ``abdomen``, ``left
    arm`` is an ``arm`` and an ``upper extremity``, ``lower back`` is in the ``back``). In ``<part> of <place>`` only
    the place counts: the back of the head is in the head, not in the back; a region the lexicon names so is in its
    place too (the ``calf`` is the ``structure of calf of leg``, in the ``leg``)."""
    here = place(location)
    out = {here}
    free = here.rsplit(" of ", 1)[-1]
    for phrase, region in sorted(default_lexicon().locations.items(), key=lambda kv: -len(kv[0])):
        p = place(phrase)
        pattern = rf"(?<![a-z#]){re.escape(p)}(?![a-z#])"
        if re.search(pattern, free):
            out |= {p, place(region)}
            free = re.sub(pattern, lambda m: "#" * len(m.group()), free)
    # a region named as a part of a place is in that place: the calf ("structure of calf of leg") is in the leg
    out |= {place(r.rsplit(" of ", 1)[-1]) for r in out if " of " in r and r != here}
    # a region whose name holds a place is in it: "low down" is the "lower abdomen", in the "abdomen"
    words = default_lexicon().locations
    out |= {place(words[w]) for r in list(out) if r != here and " " in r for w in r.split() if w in words}
    if here in _LAY_FLANK:  # "a pain in my right side" is the flank the template NLG asks about as "your side"
        out.add("flank")
    return frozenset(out)


_LAY_FLANK = frozenset({"side", "right side", "left side", "loin", "right loin", "left loin"})
"""A side of the body said of where it is, and the loin: the flank, in lay words (a walkthrough's patient with a
right loin ache was asked "any pain in your side?")."""


def _named(wanted: str) -> frozenset[str]:
    """What a plan's place stands for: itself, and the region the lexicon gives that exact phrase (``arm``: an
    ``upper extremity``)."""
    p = place(wanted)
    region = default_lexicon().locations.get(p)
    return frozenset({p, place(region)} if region else {p})


def same_place(location: str, wanted: Iterable[str]) -> bool:
    """Whether a state item's location is at one of a plan's places: the plan names a place or region the location
    is in (:func:`regions`). One way only: ``lower back`` is in the ``back``, but ``back of head`` is not in the
    ``lower back``."""
    here = regions(location)
    return any(here & _named(w) for w in wanted)


def make_context(vocab: Vocabulary | None = None, rules: RuleSet | None = None) -> PlanContext:
    """The context plans are validated in: known locations are the ontology's, the NLU lexicon's (values and lay
    phrases) and those the red-flag rules read."""
    vocab = vocab or default_vocabulary()
    ruleset = rules or default_rules()
    lexicon = default_lexicon()
    places = {place(x) for x in vocab.ontology.locations}
    places |= {place(x) for pair in lexicon.locations.items() for x in pair}
    places |= {place(x) for r in ruleset.rules for c in (*r.all_of, *r.any_of) for x in c.location}
    return PlanContext(vocab, {r.id: r for r in ruleset.rules}, frozenset(places))


@lru_cache(maxsize=1)
def _default_context() -> PlanContext:
    return make_context()


def _ctx(info: ValidationInfo) -> PlanContext:
    ctx = info.context
    return ctx if isinstance(ctx, PlanContext) else _default_context()


def _known(base: str, value: str, vocab: Vocabulary) -> bool:
    if base == "basic_information":
        return value in cmas.BASIC_KEYS  # "basic_information: age" asks the age
    return normalize(value) in cmas.OPEN_VALUES or vocab.known(base, value)


def _check_value(base: str, value: str, info: ValidationInfo) -> str:
    if not _known(base, value, _ctx(info).vocab):
        raise ValueError(f"{value!r} is not a {base} value of the vocabulary (an ontology code or a term of "
                         f"configs/vocabulary.yaml / configs/vocabulary/*.yaml)")
    return value


def _check_places(value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
    for loc in value:
        if place(loc) not in _ctx(info).locations:
            raise ValueError(f"{loc!r} is not a body location of the ontology, the NLU lexicon or the red-flag rules")
    return value


def _key(base: str, value: str, location: Iterable[str], vocab: Vocabulary) -> tuple[str, str, frozenset[str]]:
    """What an item names, spelling aside: its slot type, concept and places."""
    return base, vocab.code(base, value) or normalize(value), frozenset(place(x) for x in location)


# --------------------------------------------------------------------------- items


class PlanItem(BaseModel):
    """One item of the patient state a plan names: exactly one ``<slot type>: <value>``, optionally narrowed to body
    locations (symptoms only): ``{symptom: pain, location: [lower back]}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    symptom: NonEmpty | None = None
    medical_history: NonEmpty | None = None
    family_history: NonEmpty | None = None
    medication: NonEmpty | None = None
    habit: NonEmpty | None = None
    exposure: NonEmpty | None = None
    travel: NonEmpty | None = None
    occupation: NonEmpty | None = None
    residence: NonEmpty | None = None
    basic_information: NonEmpty | None = None
    location: tuple[NonEmpty, ...] = ()

    @field_validator(*ITEM_SLOTS)
    @classmethod
    def _value_known(cls, value: str | None, info: ValidationInfo) -> str | None:
        return value if value is None else _check_value(str(info.field_name), value, info)

    @field_validator("location")
    @classmethod
    def _places_known(cls, value: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        return _check_places(value, info)

    @model_validator(mode="after")
    def _one_slot(self) -> PlanItem:
        named = [b for b in ITEM_SLOTS if getattr(self, b) is not None]
        if len(named) != 1:
            raise ValueError(f"name exactly one slot type ({', '.join(ITEM_SLOTS)}), got {named or 'none'}")
        if self.location and named[0] != "symptom":
            raise ValueError("location: only a symptom has a location")
        return self

    @property
    def base(self) -> str:
        return next(b for b in ITEM_SLOTS if getattr(self, b) is not None)

    @property
    def value(self) -> str:
        return str(getattr(self, self.base))

    def key(self, vocab: Vocabulary) -> tuple[str, str, frozenset[str]]:
        return _key(self.base, self.value, self.location, vocab)

    def matches(self, item: dict, vocab: Vocabulary) -> bool:
        """Whether a state item of this slot type is this item: the same concept (for a symptom its value, or for a
        located pain the pain of its place), and when this item names places, at one of them. The one test triggers
        (which complaint selects a plan) and the clinician's summary (which facts bear on a consideration) share."""
        value = item.get("value")
        if not isinstance(value, str):
            return False
        if self.base != "symptom":
            return vocab.same(self.base, value, self.value)
        if not any(vocab.same("symptom", name, self.value) for name in symptom_names(value, item)):
            return False
        if not self.location:
            return True
        return any(same_place(x, self.location) for x in item.get("location") or [] if isinstance(x, str))


class Ask(PlanItem):
    """A question: whether the patient has the item, or (``check``) its one decisive attribute."""

    check: NonEmpty | None = None

    @model_validator(mode="after")
    def _check_type(self) -> Ask:
        if self.check is not None and self.check not in cmas.SLOTS[self.base].check_types:
            raise ValueError(f"check: {self.check!r} is not a check type of {self.base} "
                             f"({', '.join(cmas.SLOTS[self.base].check_types)})")
        return self


def _a_symptom(item: PlanItem, what: str) -> None:
    if item.base != "symptom":
        raise ValueError(f"{what} is a symptom, got {item.base}")


class SymptomAsk(Ask):
    """An associated symptom or pertinent negative: a symptom, asked with at most its one decisive attribute."""

    @model_validator(mode="after")
    def _symptom(self) -> SymptomAsk:
        _a_symptom(self, "an associated item")
        return self


class RiskFactor(Ask):
    """A history, medication, family or social item that makes a cause of the complaint likelier."""

    @model_validator(mode="after")
    def _not_a_symptom(self) -> RiskFactor:
        if self.base == "symptom":
            raise ValueError("a risk factor is history, medication, family, habit, exposure or social, not a symptom "
                             "(symptoms go in 'associated')")
        return self


class Evidence(PlanItem):
    """A fact of the state that bears on a consideration: the item under ``status`` (default positive). ``{symptom:
    fever, status: negative}`` under ``supports`` means the absence of fever supports it; a positive item under
    ``against`` argues against it."""

    status: Literal[cmas.PNU] = "positive"  # type: ignore[valid-type]


class Trigger(PlanItem):
    """A chief complaint that selects the plan: a symptom value, narrowed to places when the value alone does not say
    where (``{symptom: pain, location: [lower back]}``). A located pain also triggers by the name of its place
    (``pain`` in the ``chest`` is ``chest pain``, as the red-flag screen reads it)."""

    @model_validator(mode="after")
    def _symptom(self) -> Trigger:
        _a_symptom(self, "a trigger")
        return self



# --------------------------------------------------------------------------- plan sections


class ScreenItem(BaseModel):
    """The questions that screen one red-flag rule: each asks an item the rule reads. ``when``: the complaints the
    screen is for, where the plan covers more than one kind (the cauda equina screen of a weakness is for the legs'
    or the back's, not a face's): asked only when the state holds one of them positive; absent, always."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rule: NonEmpty
    ask: tuple[Ask, ...] = Field(min_length=1)
    when: tuple[Trigger, ...] = ()

    def applies(self, positives: Sequence[dict], vocab: Vocabulary) -> bool:
        """Whether this screen is for the complaints in ``positives`` (the state's positive symptoms)."""
        return not self.when or any(w.matches(it, vocab) for w in self.when for it in positives)

    def when_said(self) -> str:
        """``when`` as the clinician's summary shows what a screen needs: "weakness (leg, foot) or pain (back)"."""
        return " or ".join(w.value + (f" ({', '.join(w.location)})" if w.location else "") for w in self.when)

    @field_validator("rule")
    @classmethod
    def _rule_exists(cls, value: str, info: ValidationInfo) -> str:
        if value not in _ctx(info).rules:
            raise ValueError(f"{value!r} is not a rule id of the red-flag screen (configs/red_flags.yaml)")
        return value

    @model_validator(mode="after")
    def _rule_reads(self, info: ValidationInfo) -> ScreenItem:
        ctx = _ctx(info)
        for i, q in enumerate(self.ask):
            where = q.check == "location"
            if not reads(ctx.rules[self.rule], q.base, q.value, q.location, ctx.vocab, asks_where=where):
                raise ValueError(f"ask.{i}: {q.base} {q.value!r}{_at(q)} is not an item rule {self.rule!r} reads")
        return self


def _at(q: PlanItem) -> str:
    return f" at {list(q.location)}" if q.location else ""


def _cond_reads(cond: Condition, base: str, value: str, location: Sequence[str], vocab: Vocabulary,
                asks_where: bool = False) -> bool:
    """Whether a rule condition reads an item: the same slot and concept (a located pain by its place's name too) and,
    when the condition needs a place, one of its places (or, ``asks_where``, a question that asks where)."""
    if cond.slot != base:
        return False
    names = symptom_names(value, {"location": list(location)}) if base == "symptom" else [value]
    if not any(vocab.same(base, n, v) for n in names for v in cond.values):
        return False
    if not cond.location or asks_where:
        return True
    wanted = [w.lower() for w in cond.location]
    return any(w in place(loc) or place(loc) in w for loc in location for w in wanted)  # the screen's own test


def reads(rule: Rule, base: str, value: str, location: Sequence[str], vocab: Vocabulary,
          asks_where: bool = False) -> bool:
    """Whether any condition of ``rule`` reads the item: asking about it can bear on the flag."""
    return any(_cond_reads(c, base, value, location, vocab, asks_where) for c in (*rule.all_of, *rule.any_of))


def fires_alone(rule: Rule, base: str, value: str, location: Sequence[str], vocab: Vocabulary) -> bool:
    """Whether a "yes" to this one item raises ``rule`` by itself (``syncope``; ``pain`` in the testicles): every
    ``all_of`` condition and one ``any_of`` condition read it (a severity threshold is not met by a bare yes)."""
    def met(c: Condition) -> bool:
        return c.min_severity is None and "positive" in c.status and _cond_reads(c, base, value, location, vocab)

    return all(met(c) for c in rule.all_of) and (not rule.any_of or any(met(c) for c in rule.any_of))


class Group(BaseModel):
    """Associated symptoms asked together: at most :data:`MAX_GROUP`, all of one body system."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system: Literal[SYSTEMS]  # type: ignore[valid-type]
    ask: tuple[SymptomAsk, ...] = Field(min_length=1, max_length=MAX_GROUP)


class Consideration(BaseModel):
    """A differential consideration for the clinician's summary (never said to the patient): a ``disease`` value of
    the vocabulary where one exists (what a case card's diagnosis is matched against), else a plain clinical ``name``;
    the facts of the state that support it and those that argue against it. ``sex``: the sex whose anatomy the
    condition needs (:mod:`agent.core.sex_specific`); the summary leaves it out for a patient of the other sex."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    disease: NonEmpty | None = None
    name: NonEmpty | None = None
    supports: tuple[Evidence, ...] = Field(min_length=1)
    against: tuple[Evidence, ...] = ()
    sex: Literal["female", "male"] | None = None  # a condition only one sex has (ectopic pregnancy, testicular torsion)

    @model_validator(mode="after")
    def _named_once(self, info: ValidationInfo) -> Consideration:
        vocab = _ctx(info).vocab
        if (self.disease is None) == (self.name is None):
            raise ValueError("name the consideration once: 'disease' (a disease value of the vocabulary) or 'name'")
        if self.disease is not None and not vocab.known("disease", self.disease):
            raise ValueError(f"disease: {self.disease!r} is not a disease value of the vocabulary; use 'name'")
        if self.name is not None and vocab.known("disease", self.name):
            raise ValueError(f"name: {self.name!r} is a disease value of the vocabulary; write it as 'disease'")
        return self

    @property
    def label(self) -> str:
        return str(self.disease or self.name)


# --------------------------------------------------------------------------- the plan


class Plan(BaseModel):
    """One presenting complaint's history. ``triggers``: the chief complaints that select it; ``priority``: which plan
    wins when a complaint triggers several; ``characterise``: per main symptom, the attributes to ask in order
    (SOCRATES); ``red_flag_screen``: per red-flag rule, the questions that screen it; ``associated``: discriminating
    associated symptoms and pertinent negatives, in groups; ``risk_factors``: history, medication, family and social
    items; ``considerations``: the differential, for the clinician's summary only."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    title: NonEmpty
    sources: tuple[NonEmpty, ...] = Field(min_length=1)
    priority: int = 0
    triggers: tuple[Trigger, ...] = Field(min_length=1)
    characterise: dict[NonEmpty, tuple[SymptomCheck, ...]] = Field(min_length=1)
    red_flag_screen: tuple[ScreenItem, ...] = ()
    associated: tuple[Group, ...] = ()
    risk_factors: tuple[RiskFactor, ...] = ()
    considerations: tuple[Consideration, ...] = ()
    _covers: frozenset[str] = PrivateAttr(default=frozenset())
    _about: frozenset[str] = PrivateAttr(default=frozenset())

    @field_validator("characterise")
    @classmethod
    def _characterised_symptoms(cls, value: dict[str, tuple[str, ...]], info: ValidationInfo) -> dict:
        for symptom, checks in value.items():
            if not _known("symptom", symptom, _ctx(info).vocab):
                raise ValueError(f"{symptom!r} is not a symptom value of the vocabulary")
            if not checks or len(set(checks)) != len(checks):
                raise ValueError(f"{symptom}: list its checks once each, at least one")
        return value

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Plan:
        vocab = _ctx(info).vocab
        self._triggers_characterised(vocab)
        self._asked_once(vocab)
        self._evidence_asked(vocab)
        self._read_by_rules(_ctx(info))
        return self

    def _read_by_rules(self, ctx: PlanContext) -> None:
        """What the red-flag rules make of the plan (see :attr:`covers` and :attr:`about`)."""
        asked = self.questions()
        self._covers = self.screened_rules | {r.id for r in ctx.rules.values()
                                              if any(fires_alone(r, b, v, loc, ctx.vocab) for b, v, loc in asked)}
        self._about = frozenset(r.id for r in ctx.rules.values()
                                if any(reads(r, "symptom", t.value, t.location, ctx.vocab) for t in self.triggers))

    def _triggers_characterised(self, vocab: Vocabulary) -> None:
        for i, t in enumerate(self.triggers):
            if not any(vocab.same("symptom", t.value, s) for s in self.characterise):
                raise ValueError(f"triggers.{i}: {t.value!r} has no 'characterise' entry (how to characterise the "
                                 f"complaint that selects the plan)")

    def _asked_once(self, vocab: Vocabulary) -> None:
        ids = [s.rule for s in self.red_flag_screen]
        if len(set(ids)) != len(ids):
            raise ValueError(f"red_flag_screen: a rule is listed twice ({ids})")
        screen = {q.key(vocab) for s in self.red_flag_screen for q in s.ask}
        if len(screen) > MAX_SCREEN:
            raise ValueError(f"red_flag_screen: {len(screen)} distinct questions, at most {MAX_SCREEN}")
        seen: set[tuple] = set()
        for g, group in enumerate(self.associated):
            for i, q in enumerate(group.ask):
                if q.key(vocab) in screen or q.key(vocab) in seen:
                    raise ValueError(f"associated.{g}.ask.{i}: {q.value!r}{_at(q)} is asked elsewhere in the plan")
                seen.add(q.key(vocab))
        if len({q.key(vocab) for q in self.risk_factors}) != len(self.risk_factors):
            raise ValueError("risk_factors: an item is listed twice")

    def _evidence_asked(self, vocab: Vocabulary) -> None:
        asked = {_key(b, v, (), vocab)[:2] for b, v, _ in self.questions()}
        asked |= {_key("symptom", s, (), vocab)[:2] for s in self.characterise}
        for i, c in enumerate(self.considerations):
            for side in ("supports", "against"):
                for j, e in enumerate(getattr(c, side)):
                    if e.key(vocab)[:2] not in asked:
                        raise ValueError(f"considerations.{i}.{side}.{j}: {e.base} {e.value!r} is not asked by the "
                                         f"plan (triggers, characterise, red_flag_screen, associated or risk_factors)")

    # -- reading a plan

    def questions(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """``(slot type, value, locations)`` of every item the plan asks about, in plan order: the triggers, the
        red-flag screen, the associated symptoms, the risk factors."""
        asked: list[PlanItem] = [*(q for s in self.red_flag_screen for q in s.ask),
                              *(q for g in self.associated for q in g.ask), *self.risk_factors]
        return [("symptom", t.value, t.location) for t in self.triggers] + [(q.base, q.value, q.location)
                                                                              for q in asked]

    @property
    def screened_rules(self) -> frozenset[str]:
        """The red-flag rule ids this plan screens."""
        return frozenset(s.rule for s in self.red_flag_screen)

    @property
    def covers(self) -> frozenset[str]:
        """The red-flag rules this plan expects to meet: those it screens, and those a "yes" to one of its own questions
        raises by itself (``syncope`` when it asks about fainting). Such a flag does not move the interview to another
        plan: the plan asked for it."""
        return self._covers

    @property
    def about(self) -> frozenset[str]:
        """The red-flag rules that read this plan's complaint (``syncope`` is about the syncope plan): where a raised
        flag the current plan does not cover moves the interview."""
        return self._about

    def triggered_by(self, item: dict, vocab: Vocabulary) -> bool:
        return any(t.matches(item, vocab) for t in self.triggers)


# --------------------------------------------------------------------------- loading


def load_plan(path: str | Path, vocab: Vocabulary | None = None, rules: RuleSet | None = None,
              context: PlanContext | None = None) -> Plan:
    """One plan file; a :class:`PlanError` naming the file and the failing key otherwise. The plan's ``id`` is the
    file's name, so a plan is found where its id says."""
    p = Path(path)
    raw = read_yaml_mapping(p, PlanError, "a presentation plan")
    try:
        plan = Plan.model_validate(raw, context=context or make_context(vocab, rules))
    except pydantic.ValidationError as exc:
        raise PlanError(f"{p}: {_where(exc)}") from None
    if plan.id != p.stem:
        raise PlanError(f"{p}: id: {plan.id!r} is not the file's name {p.stem!r}")
    return plan


def _where(exc: pydantic.ValidationError) -> str:
    err = exc.errors()[0]  # a plan-wide check names its own key in the message
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{'.'.join(str(x) for x in err['loc'])}: {msg}" if err["loc"] else msg


def load_plans(directory: str | Path = DEFAULT_DIR, vocab: Vocabulary | None = None,
               rules: RuleSet | None = None) -> dict[str, Plan]:
    """Every ``*.yaml`` plan of ``directory`` by id (in id order). Ids are unique, and two plans of the same priority
    may not share a trigger: which of them a complaint selects would depend on file order."""
    d = Path(directory)
    files = sorted(d.glob("*.yaml"))
    if not files:
        raise PlanError(f"{d}: no *.yaml presentation plans")
    context = make_context(vocab, rules)
    plans: dict[str, Plan] = {}
    for f in files:
        plan = load_plan(f, context=context)
        if plan.id in plans:
            raise PlanError(f"{f}: id: {plan.id!r} appears twice")
        plans[plan.id] = plan
    _unambiguous(plans, context.vocab, d)
    return plans


def _unambiguous(plans: Mapping[str, Plan], vocab: Vocabulary, where: Path) -> None:
    ordered = list(plans.values())
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if a.priority != b.priority:
                continue
            for t in a.triggers:
                probe = {"value": t.value, "location": list(t.location)}
                if b.triggered_by(probe, vocab):
                    raise PlanError(f"{where}: plans {a.id!r} and {b.id!r} have the same priority and both trigger on "
                                    f"{t.value!r}{f' at {list(t.location)}' if t.location else ''}")


@lru_cache(maxsize=1)
def default_plans() -> dict[str, Plan]:
    return load_plans()
