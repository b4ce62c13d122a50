"""A deterministic history-taking policy built from the MediTOD questionnaire ontology.

Every turn it recomputes, from the patient state alone, the ordered list of questions
a history still needs (``configs/questionnaire.yaml``), drops those the state answers
or that were asked before, and asks the first one or two, about one topic. A symptom
found positive during the review of systems therefore gets its own history of
presenting complaint next, as a clinician would do.

With ``plans:`` configured (issue 18), a chief complaint that selects a presentation plan
(``policies.plan_choice.choose_plan``) orders the interview instead of the review of systems:
the complaint's first checks (to its onset), the plan's red-flag screen, the rest of the
characterisation, the associated groups, the risk factors, then the configured sections.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from agent.core import cmas
from agent.core.ontology import Vocabulary, default_vocabulary
from agent.core.paths import REPO_ROOT
from agent.core.protocol import ModuleOutput, TurnContext
from agent.core.sex_specific import SexSpecific, default_sex_specific
from policies.questions import Question, answered, asked, questions_of, to_actions

if TYPE_CHECKING:
    from policies.presentations import Ask, Plan

DEFAULT_CONFIG = REPO_ROOT / "configs" / "questionnaire.yaml"

STAGES = (
    "greeting", "hpi", "red_flag_screen", "associated_symptoms", "review_of_systems", "risk_factors", "general_history",
    # then the configured sections, in order, then:
    "wrap_up", "close",
)
PLAN_GROUP = 3
"""With a presentation plan, a red-flag rule's screen, an associated group or one slot type's risk factors is asked
up to this many items a turn ("any fainting, chest pain or palpitations?"): policies.presentations.MAX_GROUP."""
GREETING = [{"action": "nod_prompt_salutations"}]
WRAP_UP = [{"action": "chit-chat"}]
FAREWELL = [{"action": "nod_prompt_salutations"}]
NOT_A_SYMPTOM = cmas.OPEN_VALUES
SEX = Question("basic_information", "sex")
AGE = Question("basic_information", "age")
"""Asked before the first item only one sex has, when nothing has told the patient's sex yet (with the age, which the
general history asks with it anyway): the answer decides whether "any missed periods?" is asked at all."""
PAST_EPISODES = Question("medical_history", "past experience")
"""Asked with the main complaint's last questions ("... and have you had anything like this before?"): previous
episodes belong to the history of the presenting complaint in every history-taking guide, and a recurrence changes
the differential (a first migraine against the fifth)."""
GROUPED_FOLLOWUPS = ("medication",)
"""Slot types whose section follow-ups are asked of up to :data:`PLAN_GROUP` items a turn: what each medicine is for
and whether it helped is one question of them all ("What do you take the metformin and the statin for, and have they
helped?"), where a turn a medicine spent three turns on one topic."""
DRUG_ALLERGY = Question("medical_history", "drug allergy")
"""Asked with the medicines where their question has room ("Are you taking metformin or any other medicines, and have
you ever had an allergic reaction to a medicine?"), else with the past conditions: history-taking guides take it with
either, and asked after a plan's long list of conditions it was a turn of its own in a quarter of the simulated
interviews."""
SOCIAL = ("occupation", "residence", "travel")
"""Record slots a clinician asks about as one topic, the social history ("what do you do for work, who is at home,
any travel lately?"): a plan's travel risk factor and the general work and home questions share a turn."""


def open_tail(cand: Candidate, picked: list[Candidate]) -> bool:
    """Whether ``cand`` is a tag question that ends a turn's questions without counting against its limit: a
    conditional follow-up ("If you drink, how often, and how much?") after the question whether the patient has the
    item; the open "any other ...?" of a history group that names items of its slot type (said as the end of their
    question, "... or any other medicines?", :data:`policies.template_nlg.OPEN_TAILS`), or :data:`PAST_EPISODES`
    after the complaint's last questions ("... and have you had anything like this before?"), which a turn of its own
    spent on a yes or no."""
    q = cand.question
    if cand.conditional:  # "... If you drink, how much?" goes with "do you drink?", never without it
        return any(p.question == Question(q.base, q.value) for p in picked)
    if q == PAST_EPISODES and cand.group is not None and cand.group.startswith("complaint:"):
        return any(p.group == cand.group for p in picked)
    return (cand.group is not None and q.check is None and q.value.casefold() in cmas.OPEN_VALUES
            and any(p.question.base == q.base and p.question.value.casefold() not in cmas.OPEN_VALUES
                    and p.question.check is None for p in picked))


def history_topic(base: str, value: str = "", allergy: str = "medical_history") -> str:
    """The topic a history item is asked under with a plan: its slot type, the social history for :data:`SOCIAL`;
    ``allergy``, the topic :data:`DRUG_ALLERGY` joins this turn (the medical or the drug history)."""
    if base == DRUG_ALLERGY.base and value.casefold() == DRUG_ALLERGY.value:
        return allergy
    return "social" if base in SOCIAL else base


class QuestionnaireConfigError(ValueError):
    pass


@dataclass
class Section:
    stage: str
    ask: list[Question]
    followup: dict[str, tuple[str, ...]] = field(default_factory=dict)
    followup_skip: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    """(slot type, value) -> follow-ups not asked of that item: how long someone has drunk coffee or alcohol tells a
    clinician little (quantity and frequency are the AUDIT-C questions), how long they smoked gives the pack-years."""
    followup_with_ask: bool = False
    """Whether the follow-ups are asked with the question whether the patient has the item, as "if you do, ...":
    "Do you smoke or drink alcohol? If you drink, how often, and how much?" is how history-taking guides ask the
    social history, and the amount asked a turn later after a yes spent a turn of its own in half the simulated
    interviews."""

    def followups(self, base: str, value: str, vocab: Vocabulary) -> tuple[str, ...]:
        """The follow-up checks asked of a positive ``value`` of slot type ``base``."""
        skip = next((c for (b, v), c in self.followup_skip.items() if b == base and vocab.same(base, v, value)), ())
        return tuple(c for c in self.followup.get(base, ()) if c not in skip)


@dataclass
class QuestionnaireConfig:
    questions_per_turn: int
    hpi_checks: tuple[str, ...]
    secondary_checks: tuple[str, ...]
    location_for: tuple[str, ...]
    extra_checks: dict[str, tuple[str, ...]]
    skip_checks: dict[str, tuple[str, ...]]
    check_values: dict[str, dict[str, tuple[str, ...]]]
    systems: dict[str, list[Question]]
    related_systems: dict[str, tuple[str, ...]]
    default_review: tuple[str, ...]
    sections: list[Section]
    wrap_up: bool = True
    two_a_turn: tuple[str, ...] = ()  # symptoms whose attributes are asked at most two a turn
    scored: tuple[str, ...] | None = None  # symptoms asked for a 1-10 score (severity); None: every symptom
    episodic: tuple[str, ...] | None = None  # symptoms asked how long each episode lasts (duration); None: every one
    after_plan: list[list[Question]] | None = None  # with a plan: the general history asked, in groups; None: sections
    greeting_asks: tuple[Question, ...] = ()  # asked with the greeting, before the complaint (the age and sex)
    after_plan_fillers: tuple[Question, ...] = ()  # with a plan: history items asked where a topic's question has room
    plans: dict[str, Plan] | None = None  # presentation plans by id; None: the review of systems only
    plans_dir: Path | None = None


# --------------------------------------------------------------------------- loading


def _fail(where: str, msg: str) -> QuestionnaireConfigError:
    return QuestionnaireConfigError(f"questionnaire config: {where}: {msg}")


def _value(base: str, value: object, vocab: Vocabulary, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(where, f"expected a {base} value, got {value!r}")
    if base == "basic_information" and value in cmas.BASIC_KEYS:  # "basic_information: age" asks the age
        return value
    if value.casefold() not in cmas.OPEN_VALUES and not vocab.known(base, value):
        raise _fail(where, f"{value!r} is neither an ontology code nor a configs/vocabulary.yaml term of {base}")
    return value


def _checks(base: str, checks: object, where: str) -> tuple[str, ...]:
    if not isinstance(checks, list):
        raise _fail(where, f"expected a list of check types, got {checks!r}")
    for c in checks:
        if c not in cmas.SLOTS[base].check_types:
            raise _fail(where, f"{c!r} is not a check type of {base}")
    return tuple(checks)


def _symptom_entry(entry: object, vocab: Vocabulary, where: str) -> Question:
    if isinstance(entry, str):
        return Question("symptom", _value("symptom", entry, vocab, where))
    if isinstance(entry, dict) and set(entry) <= {"value", "location"} and "value" in entry:
        locs = entry.get("location") or []
        if not isinstance(locs, list) or not all(isinstance(x, str) for x in locs):
            raise _fail(where, "location must be a list of strings")
        value = _value("symptom", entry["value"], vocab, where)
        return Question("symptom", value, "location", tuple(locs)) if locs else Question("symptom", value)
    raise _fail(where, f"expected a symptom value or {{value, location}}, got {entry!r}")


def _slot_question(entry: object, vocab: Vocabulary, where: str) -> Question:
    if not (isinstance(entry, dict) and len(entry) == 1):
        raise _fail(where, f"expected {{slot type: value}}, got {entry!r}")
    base, value = next(iter(entry.items()))
    if base not in cmas.SLOTS:
        raise _fail(where, f"unknown slot type {base!r}")
    return Question(base, _value(base, value, vocab, where))


def _check_values(raw: object, where: str) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, dict):
        raise _fail(where, "expected {check type: [values]}")
    _checks("symptom", list(raw), where)
    out = {}
    for check, values in raw.items():
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise _fail(f"{where}.{check}", "expected a list of strings")
        out[check] = tuple(values)
    return out


def load_questionnaire_config(
    path: str | Path = DEFAULT_CONFIG, vocab: Vocabulary | None = None
) -> QuestionnaireConfig:
    vocab = vocab or default_vocabulary()
    raw = yaml.safe_load(Path(path).read_text())
    known = {"questions_per_turn", "hpi", "systems", "related_systems", "default_review", "sections", "wrap_up",
             "plans", "after_plan", "after_plan_fillers", "greeting_asks"}
    if not isinstance(raw, dict):
        raise _fail(str(path), "expected a mapping")
    if unknown := set(raw) - known:
        raise _fail(str(path), f"unknown keys {sorted(unknown)}")
    hpi = raw.get("hpi") or {}
    if unknown := set(hpi) - {"checks", "secondary_checks", "location_for", "extra_checks", "skip_checks",
                                "two_a_turn", "check_values", "scored", "episodic"}:
        raise _fail("hpi", f"unknown keys {sorted(unknown)}")
    n = raw.get("questions_per_turn", 2)
    if not isinstance(n, int) or n < 1:
        raise _fail("questions_per_turn", "must be a positive integer")

    systems = {
        name: [_symptom_entry(e, vocab, f"systems.{name}.{i}") for i, e in enumerate(entries or [])]
        for name, entries in (raw.get("systems") or {}).items()
    }
    related = {}
    for name, others in (raw.get("related_systems") or {}).items():
        for s in [name, *others]:
            if s not in systems:
                raise _fail(f"related_systems.{name}", f"unknown system {s!r}")
        related[name] = tuple(others)
    default_review = tuple(raw.get("default_review") or ())
    for s in default_review:
        if s not in systems:
            raise _fail("default_review", f"unknown system {s!r}")

    sections = []
    for stage, sec in (raw.get("sections") or {}).items():
        if stage in STAGES:
            raise _fail(f"sections.{stage}", "a section may not reuse a built-in stage name")
        if not isinstance(sec, dict) or set(sec) - {"ask", "followup", "followup_skip", "followup_with_ask"}:
            raise _fail(f"sections.{stage}", "expected a mapping with 'ask' and optional 'followup', 'followup_skip', "
                                             "'followup_with_ask'")
        with_ask = sec.get("followup_with_ask", False)
        if not isinstance(with_ask, bool):
            raise _fail(f"sections.{stage}.followup_with_ask", f"expected true or false, got {with_ask!r}")
        ask = [_slot_question(e, vocab, f"sections.{stage}.ask.{i}") for i, e in enumerate(sec.get("ask") or [])]
        followup = {}
        for base, checks in (sec.get("followup") or {}).items():
            if base not in cmas.SLOTS:
                raise _fail(f"sections.{stage}.followup", f"unknown slot type {base!r}")
            followup[base] = _checks(base, checks, f"sections.{stage}.followup.{base}")
        skips = {}
        for entry, checks in (sec.get("followup_skip") or {}).items():
            where = f"sections.{stage}.followup_skip.{entry}"
            base, _, value = str(entry).partition(": ")
            if base not in followup:
                raise _fail(where, f"expected '<slot type>: <value>' of a slot type the section follows up: {entry!r}")
            skips[(base, _value(base, value, vocab, where))] = _checks(base, checks, where)
        sections.append(Section(stage, ask, followup, skips, with_ask))

    return QuestionnaireConfig(
        after_plan=_after_plan(raw.get("after_plan"), sections),
        greeting_asks=tuple(_slot_question(e, vocab, f"greeting_asks.{i}")
                            for i, e in enumerate(raw.get("greeting_asks") or [])),
        after_plan_fillers=tuple(_slot_question(e, vocab, f"after_plan_fillers.{i}")
                                 for i, e in enumerate(raw.get("after_plan_fillers") or [])),
        questions_per_turn=n,
        hpi_checks=_checks("symptom", hpi.get("checks") or [], "hpi.checks"),
        secondary_checks=_checks(
            "symptom", hpi.get("secondary_checks", hpi.get("checks")) or [], "hpi.secondary_checks"
        ),
        location_for=tuple(_value("symptom", v, vocab, "hpi.location_for") for v in hpi.get("location_for") or []),
        extra_checks={
            _value("symptom", k, vocab, "hpi.extra_checks"): _checks("symptom", v, f"hpi.extra_checks.{k}")
            for k, v in (hpi.get("extra_checks") or {}).items()
        },
        two_a_turn=tuple(_value("symptom", v, vocab, "hpi.two_a_turn") for v in hpi.get("two_a_turn") or ()),
        scored=_symptom_list(hpi, "scored", vocab),
        episodic=_symptom_list(hpi, "episodic", vocab),
        skip_checks={
            _value("symptom", k, vocab, "hpi.skip_checks"): _checks("symptom", v, f"hpi.skip_checks.{k}")
            for k, v in (hpi.get("skip_checks") or {}).items()
        },
        check_values={
            _value("symptom", k, vocab, "hpi.check_values"): _check_values(v, f"hpi.check_values.{k}")
            for k, v in (hpi.get("check_values") or {}).items()
        },
        systems=systems,
        related_systems=related,
        default_review=default_review,
        sections=sections,
        wrap_up=bool(raw.get("wrap_up", True)),
        **_plans(raw.get("plans"), Path(path), vocab),
    )


def _symptom_list(hpi: dict, key: str, vocab: Vocabulary) -> tuple[str, ...] | None:
    """``hpi.<key>``: a list of symptom values; absent: None (the check is asked of every symptom)."""
    if key not in hpi:
        return None
    raw = hpi[key]
    if not isinstance(raw, list):
        raise _fail(f"hpi.{key}", f"expected a list of symptom values, got {raw!r}")
    return tuple(_value("symptom", v, vocab, f"hpi.{key}.{i}") for i, v in enumerate(raw))


def _after_plan(raw: object, sections: list[Section]) -> list[list[Question]] | None:
    """``after_plan``: groups of section questions, each asked in one turn (at most :data:`PLAN_GROUP`), that follow a
    presentation plan instead of every section. Each must be a question of a section (``sections.*.ask``), so its
    follow-ups stay the section's."""
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(g, list) and 1 <= len(g) <= PLAN_GROUP for g in raw):
        raise _fail("after_plan", f"expected a list of groups, each a list of 1 to {PLAN_GROUP} section questions")
    asked = {q for sec in sections for q in sec.ask}
    out = []
    for i, group in enumerate(raw):
        qs = []
        for j, entry in enumerate(group):
            where = f"after_plan.{i}.{j}"
            if not (isinstance(entry, dict) and len(entry) == 1):
                raise _fail(where, f"expected {{slot type: value}}, got {entry!r}")
            named = next(iter(entry.items()))
            q = next((x for x in asked if (x.base, x.value) == named), None)
            if q is None:
                raise _fail(where, f"{entry!r} is not a question of any section (sections.*.ask)")
            qs.append(q)
        out.append(qs)
    return out


def _plans(raw: object, config_path: Path, vocab: Vocabulary) -> dict:
    """``plans: <directory>``: the presentation plans that order the interview (``policies/presentations.py``); null
    or absent: the review of systems alone. A relative directory is looked up next to the config file, then under the
    repository root, then under ``configs/`` (where the shipped config names it, so a copy of it elsewhere still
    finds the shipped plans)."""
    if raw is None:
        return {}
    if not isinstance(raw, str) or not raw:
        raise _fail("plans", f"expected a directory of presentation plans or null, got {raw!r}")
    from policies.presentations import PlanError, load_plans

    d = Path(raw).expanduser()
    if not d.is_absolute():
        d = next((b / d for b in (config_path.parent, REPO_ROOT, REPO_ROOT / "configs") if (b / d).is_dir()), d)
    if not d.is_dir():
        raise _fail("plans", f"{raw!r} is not a directory (relative to {config_path.parent}, {REPO_ROOT} or "
                             f"{REPO_ROOT / 'configs'})")
    try:
        plans = load_plans(d, vocab=vocab)
    except PlanError as exc:
        raise _fail("plans", str(exc)) from None
    return {"plans": plans, "plans_dir": d.resolve()}


# --------------------------------------------------------------------------- the policy


@dataclass(frozen=True)
class Candidate:
    stage: str
    question: Question
    group: str | None = None  # a plan's red-flag rule, associated group or risk-factor slot: asked together
    conditional: bool = False  # an attribute asked with the question whether the patient has it ("if you do, ...")
    filler: bool = False  # asked only in the room a question of its group leaves, never a turn of its own

    @property
    def topic(self) -> tuple:
        """Questions of one turn share a topic: one symptom's attributes, one slot type's screening, or one group of
        a presentation plan (a red-flag rule's screen, an associated group). A conditional follow-up shares the topic
        of the screening question it goes with."""
        q = self.question
        if self.group is not None:
            return (self.stage, self.group)
        return (self.stage, q.base, None if q.screening or self.conditional else q.value)


class QuestionnairePolicy:
    """Deterministic policy: :meth:`next_actions` depends only on ``ctx.state`` and ``ctx.past_actions``."""

    def __init__(self, config: QuestionnaireConfig | None = None, vocab: Vocabulary | None = None,
                 sexes: SexSpecific | None = None):
        self.vocab = vocab or default_vocabulary()
        self.config = config or load_questionnaire_config(vocab=self.vocab)
        self.sexes = sexes or default_sex_specific()

    # -- helpers over the state

    def _positive_symptoms(self, state: dict) -> list[dict]:
        return [
            it for it in state.get("positive_symptom") or [] if str(it.get("value", "")).casefold() not in NOT_A_SYMPTOM
        ]

    def _lookup(self, mapping: dict, value: str):
        for k, v in mapping.items():
            if self.vocab.same("symptom", k, value):
                return v
        return None

    def _in_system(self, entry: Question, item: dict) -> bool:
        if not self.vocab.same("symptom", entry.value, item["value"]):
            return False
        return not entry.values or bool(set(entry.values) & set(item.get("location") or []))

    def systems_of(self, item: dict) -> list[str]:
        return [name for name, entries in self.config.systems.items() if any(self._in_system(e, item) for e in entries)]

    # -- candidate questions, in interview order

    def fits(self, value: str, check: str) -> bool:
        """Whether attribute ``check`` is one a clinician asks of symptom ``value``: a 1-10 score only of a ``scored``
        symptom (numeric rating scales are for pain and breathlessness; "rate your weight gain" is not a question),
        how long each episode lasts only of an ``episodic`` one (a constant ache has no episodes). Plans and the
        configured checks both pass through it, so the rule has one home."""
        allowed = {"severity": self.config.scored, "duration": self.config.episodic}.get(check)
        return allowed is None or any(self.vocab.same("symptom", v, value) for v in allowed)

    def hpi_questions(self, item: dict, secondary: bool = False) -> list[Question]:
        """The attribute questions about one positive symptom, in clinical order; a symptom found by
        screening (``secondary``) gets the shorter ``secondary_checks`` list."""
        value, cfg = item["value"], self.config
        extra = self._lookup(cfg.extra_checks, value) or ()
        skip = set(self._lookup(cfg.skip_checks, value) or ())
        values = self._lookup(cfg.check_values, value) or {}
        order = cfg.secondary_checks if secondary else cfg.hpi_checks
        checks: list[str] = []
        for c in order:
            if c == "location" and not any(self.vocab.same("symptom", v, value) for v in cfg.location_for):
                continue
            checks.append(c)
            if c == "characteristics":
                checks.extend(extra)
        if "characteristics" not in order and not secondary:
            checks.extend(extra)
        return [Question("symptom", value, c, values.get(c, ())) for c in dict.fromkeys(checks)
                if c not in skip and self.fits(value, c)]

    def candidates(self, ctx: TurnContext, plan: Plan | None = None) -> Iterator[Candidate]:
        """Every question the interview may still ask, in order; ``plan``: the presentation plan of the turn
        (:meth:`plan_for`), None for the review of systems."""
        opening = self.opening_plan(ctx) if plan is not None else None
        if plan is not None:
            yield from self.plan_candidates(ctx, plan, opening)
        else:
            yield from self.review_candidates(ctx)
        yield from self.section_candidates(ctx, plan, opening)

    def review_candidates(self, ctx: TurnContext) -> Iterator[Candidate]:
        """Today's interview without a plan: each positive symptom's history, its system's symptoms, the review of
        the related systems."""
        state, cfg = ctx.state, self.config
        positives = self._positive_symptoms(state)
        for item in positives:
            secondary = asked(ctx.past_actions, Question("symptom", item["value"]), self.vocab)
            for q in self.hpi_questions(item, secondary):
                yield Candidate("hpi", q)
        own = [s for item in positives for s in self.systems_of(item)]
        for system in dict.fromkeys(own):
            for q in cfg.systems[system]:
                yield Candidate("associated_symptoms", q)
        review = [r for s in own for r in cfg.related_systems.get(s, ())] or list(cfg.default_review)
        for system in dict.fromkeys(review):
            for q in cfg.systems[system]:
                yield Candidate("review_of_systems", q)

    def section_candidates(self, ctx: TurnContext, plan: Plan | None = None,
                           opening: Plan | None = None) -> Iterator[Candidate]:
        """The configured sections, in order, with their follow-ups about what the patient has. After a presentation
        plan (and ``after_plan`` configured) only the ``after_plan`` groups are asked, a group a turn: the plan's risk
        factors asked what matters to the complaint, and the turns a general review would take are the clinician's.
        ``opening``: the plan of the opening complaint (:meth:`opening_plan`), whose decisive checks count too."""
        state, cfg = ctx.state, self.config
        short = plan is not None and cfg.after_plan is not None
        if short:
            for i, group in enumerate(cfg.after_plan or []):
                for q in group:
                    yield Candidate("general_history", q, f"after:{i}")
        # an item the plan gave its decisive check ("how much do you drink?") has had the attribute that matters to
        # this complaint: the section's routine follow-ups of it ("how long have you been drinking?") are not asked
        plans = [p for p in (plan, opening) if p is not None]
        decided = [(a.base, a.value) for p in plans for a in p.risk_factors if a.check is not None]
        for sec in cfg.sections:
            for q in () if short else sec.ask:
                yield Candidate(sec.stage, q)
            for base in sec.followup:
                for item in state.get(f"positive_{base}") or []:
                    value = item.get("value")
                    if not isinstance(value, str) or value.casefold() in cmas.OPEN_VALUES:
                        continue
                    if not any(b == base and self.vocab.same(base, v, value) for b, v in decided):
                        group = f"followup:{base}" if base in GROUPED_FOLLOWUPS else None
                        for c in sec.followups(base, value, self.vocab):
                            yield Candidate(sec.stage, Question(base, value, c), group)

    # -- a presentation plan's interview

    def chief_complaint(self, ctx: TurnContext) -> list[str]:
        """The positive symptoms the patient named without being screened for them (the opening complaint, or a new
        main problem): those no earlier doctor question asked about by name."""
        screened = [q for turn in ctx.past_actions for q in questions_of(turn)
                    if q.base == "symptom" and q.screening]
        out = []
        for item in self._positive_symptoms(ctx.state):
            places = set(item.get("location") or [])
            # "does the pain reach your back?" did not elicit a pain the patient has somewhere else (or nowhere said)
            elicited = [q for q in screened if q.check is None or (places and places <= set(q.values))]
            if not any(self.vocab.same("symptom", q.value, item["value"]) for q in elicited):
                out.append(item["value"])
        return list(dict.fromkeys(out))

    def plan_for(self, ctx: TurnContext) -> Plan | None:
        """The presentation plan the state calls for (``policies.plan_choice.choose_plan``), None without plans."""
        if not self.config.plans:
            return None
        from agent.core.safety import check_red_flags, level_rank
        from policies.plan_choice import choose_plan

        flags = sorted(check_red_flags(ctx.state), key=lambda f: level_rank(f.level))
        return choose_plan(ctx.state, self.config.plans, chief_complaint=self.chief_complaint(ctx),
                           flags=[f.id for f in flags], vocab=self.vocab)

    def _plan_checks(self, plan: Plan, item: dict) -> tuple[str, ...] | None:
        from agent.core.ontology import symptom_names

        names = symptom_names(item["value"], item)
        for symptom, checks in plan.characterise.items():
            if any(self.vocab.same("symptom", symptom, n) for n in names[:1]):
                return checks
        for symptom, checks in plan.characterise.items():
            if any(self.vocab.same("symptom", symptom, n) for n in names):
                return checks
        return None

    def _characterise(self, plan: Plan, item: dict, secondary: bool = False) -> list[Question]:
        """The attribute questions about ``item`` under ``plan``: the plan's checks of it, else the configured ones;
        ``secondary`` (a problem that is not the presentation) keeps of the plan's only ``hpi.secondary_checks``,
        where, how bad and which way it goes, in the plan's order."""
        checks = self._plan_checks(plan, item)
        if checks is None:
            return self.hpi_questions(item, secondary)
        if secondary:
            checks = tuple(c for c in checks if c in self.config.secondary_checks) or checks
        values = self._lookup(self.config.check_values, item["value"]) or {}
        return [Question("symptom", item["value"], c, values.get(c, ())) for c in checks if self.fits(item["value"], c)]

    def _ask(self, state: dict, a: Ask) -> Question | None:
        """The screening question of a plan item: whether the patient has it, for a located item whether they have it
        there ("any pain in your arm?"; of a patient whose chest pain it is, whether the pain reaches there). A "no"
        denies that place only (``agent.core.tracker`` keeps it beside the positive item), so it is safe to ask."""
        if a.location:
            return Question(a.base, a.value, "location", tuple(a.location))
        return Question(a.base, a.value)

    def _decisive(self, state: dict, a: Ask) -> Question | None:
        """The one attribute a plan asks of an item the patient has (``check``), None when it names none."""
        from agent.core.ontology import find_item

        if a.check is None:
            return None
        found = find_item(state, a.base, a.value, self.vocab)
        if found is None or found[0] != "positive":
            return None
        if a.base in cmas.RECORD_SLOTS or a.base == "basic_information":
            return None
        return Question(a.base, a.value, a.check)

    def plan_candidates(self, ctx: TurnContext, plan: Plan, opening: Plan | None = None) -> Iterator[Candidate]:
        """A complaint-led history: the main complaint's first checks (up to its onset), the red-flag screen, the
        rest of the characterisation, the associated groups (with each positive's decisive check), the risk factors.
        The configured sections follow (what the plan asked is not asked again).

        A plan taken up later (the patient named another problem, or a red flag moved the interview: ``plan`` is not
        the plan of the opening complaint) asks its complaint part, the screen of the new problem and its
        characterisation, and then the opening plan's associated groups and risk factors go on: the new problem's
        safety comes first, but the presentation, and the review that tells its causes apart, stay the patient's
        first one (a tension headache mentioned at "anything else?" does not start a second full history).
        ``opening``: :meth:`opening_plan`, computed once a turn by :meth:`candidates`."""
        later = opening is not None and opening.id != plan.id
        yield from self.complaint_part(ctx, plan, later=later)
        if later:
            yield from self.complaint_part(ctx, opening)
            yield from self.review_part(ctx, opening)
        else:
            yield from self.review_part(ctx, plan)

    def opening_plan(self, ctx: TurnContext) -> Plan | None:
        """The plan of the complaint the patient opened with (their first positive symptom named unprompted)."""
        from policies.plan_choice import choose_plan

        complaint = self.chief_complaint(ctx)
        if not complaint or not self.config.plans:
            return None
        return choose_plan(ctx.state, self.config.plans, chief_complaint=complaint[:1], vocab=self.vocab)

    def complaint_part(self, ctx: TurnContext, plan: Plan, later: bool = False) -> Iterator[Candidate]:
        """The complaint's first checks (to its onset), the plan's red-flag screen (a slot type's items together, then
        each positive's decisive check), the rest of the complaint's characterisation. Other problems the patient
        named unprompted get the short history; a symptom the patient has only because a question named it gets its
        decisive check (in the associated groups), never a second full characterisation. ``later``: the plan is not the
        opening complaint's (a new problem named, or a red flag): its complaint gets the short history too, since the
        presentation stays the patient's first one (:meth:`plan_candidates`)."""
        state = ctx.state
        positives = self._positive_symptoms(state)
        complaint = self.chief_complaint(ctx)
        mains = [it for it in positives if plan.triggered_by(it, self.vocab)]
        named = [it for it in mains if it["value"] in complaint]  # the plan's complaints, said unprompted
        others = [it for it in positives if it["value"] in complaint and it not in mains]  # named, not the plan's
        first = (named or mains or others)[:1]
        main_qs = self._characterise(plan, first[0], secondary=later) if first else []
        n = self.config.questions_per_turn
        at = next((i for i, q in enumerate(main_qs) if q.check == "onset"), None)
        head = main_qs[:n] if at is None or at < n else [*main_qs[:n - 1], main_qs[at]]  # one turn, onset in it
        if at is not None and answered(state, main_qs[at], self.vocab):
            head = []  # the patient said when it started: the red-flag screen comes first, its turns all in time
        rest = f"complaint:{first[0]['value']}" if first else None  # its last questions and "had this before?"
        for q in head:
            yield Candidate("hpi", q, rest)
        if head:  # "... and have you had anything like this before?" ends the first turn, never a turn of its own
            yield Candidate("hpi", PAST_EPISODES, rest)
        screens = [s for s in plan.red_flag_screen if s.applies(positives, self.vocab)]
        screen_qs = [q for s in screens for a in s.ask if (q := self._ask(state, a)) is not None]
        for base in dict.fromkeys(q.base for q in screen_qs):  # one slot type's warning signs, up to three a turn
            for q in screen_qs:
                if q.base == base:
                    yield Candidate("red_flag_screen", q, f"screen:{base}")
        for screen in screens:
            for a in screen.ask:
                if (q := self._decisive(state, a)) is not None:
                    yield Candidate("red_flag_screen", q)
        for q in main_qs:
            if q not in head:
                yield Candidate("hpi", q, rest)
        if first:
            yield Candidate("hpi", PAST_EPISODES, rest)
        for item in named:
            if item is not first[0]:
                for q in self._characterise(plan, item, secondary=later):
                    yield Candidate("hpi", q)
        for item in others:  # other problems the patient named themselves get the short history
            if item is not first[0]:
                for q in self._characterise(plan, item, secondary=True):
                    yield Candidate("hpi", q)

    def review_part(self, ctx: TurnContext, plan: Plan) -> Iterator[Candidate]:
        """The plan's associated groups (a system's groups together, up to three items a turn, then each positive's
        decisive check) and its risk factors (one history topic's items together, the general questions of that topic
        joining them)."""
        state = ctx.state
        systems = dict.fromkeys(g.system for g in plan.associated)
        for system in systems:  # a system's groups pack together, up to three items a turn, then their one checks
            asks = [a for g in plan.associated if g.system == system for a in g.ask]
            qs = [q for a in asks if (q := self._ask(state, a)) is not None]
            yield from (Candidate("associated_symptoms", q, f"group:{system}") for q in qs)
            for q in self._room_fillers(ctx, system, qs):
                yield Candidate("associated_symptoms", q, f"group:{system}", filler=True)
            for a in asks:
                if (q := self._decisive(state, a)) is not None:
                    yield Candidate("associated_symptoms", q)
        general = [q for g in self.config.after_plan or [] for q in g]
        allergy = self._allergy_topic(ctx, plan, general)
        for topic in dict.fromkeys(history_topic(a.base, a.value, allergy) for a in plan.risk_factors):
            risks = [a for a in plan.risk_factors if history_topic(a.base, a.value, allergy) == topic]
            for a in risks:  # one topic's items together
                if (q := self._ask(state, a)) is not None:
                    yield Candidate("risk_factors", q, f"risk:{topic}")
            joined = [q for q in general if history_topic(q.base, q.value, allergy) == topic]
            # the general questions of that topic join it ("... or any other medicines?", "how old are you? and your
            # sex?", "... travelled?"), and a filler takes the room its last question leaves
            mine = [q for a in risks if (q := self._ask(state, a)) is not None]
            for q in [*joined, *self._risk_fillers(ctx, topic, allergy, [*mine, *joined])]:
                yield Candidate("risk_factors", q, f"risk:{topic}")
            for a in risks:
                if a.check is not None and (found := self._decisive_record(state, a)) is not None:
                    yield Candidate("risk_factors", found)

    def still_open(self, ctx: TurnContext, q: Question) -> bool:
        """Whether ``q`` is neither answered by the state nor asked before."""
        return not answered(ctx.state, q, self.vocab) and not asked(ctx.past_actions, q, self.vocab)

    def _room_fillers(self, ctx: TurnContext, system: str, qs: list[Question]) -> list[Question]:
        """The system's screening symptoms (``systems`` of the config) that fill the room the last question of a plan's
        group for ``system`` leaves ("any palpitations?" becomes "any palpitations, chest pain or fainting?"): the
        turn is spent anyway, and a pertinent negative of the same system costs the patient a word. Nothing when the
        group has no open question left, so a filler never takes a turn of its own."""
        is_open = partial(self.still_open, ctx)
        room = -sum(1 for q in dict.fromkeys(qs) if is_open(q)) % PLAN_GROUP
        if not room or not any(is_open(q) for q in qs):
            return []
        named = {q.value for q in qs}
        fillers = [q for q in self.config.systems.get(system, ())
                   if not any(self.vocab.same(q.base, q.value, v) for v in named) and is_open(q)]
        return fillers[:room]

    def _risk_fillers(self, ctx: TurnContext, topic: str, allergy: str, qs: list[Question]) -> list[Question]:
        """``after_plan_fillers`` of ``topic`` that fill the room the topic's last question leaves ("Do you smoke or
        drink alcohol?" becomes "... or use recreational drugs?"); nothing when the topic has no open item left."""
        is_open = partial(self.still_open, ctx)
        items = [q for q in dict.fromkeys(qs) if q.value.casefold() not in cmas.OPEN_VALUES and is_open(q)]
        room = -len(items) % PLAN_GROUP
        if not items or not room:
            return []
        fillers = [q for q in self.config.after_plan_fillers if history_topic(q.base, q.value, allergy) == topic
                   and is_open(q) and not any(q.base == x.base and self.vocab.same(q.base, q.value, x.value)
                                              for x in qs)]
        return fillers[:room]

    def _allergy_topic(self, ctx: TurnContext, plan: Plan, general: list[Question]) -> str:
        """The history topic :data:`DRUG_ALLERGY` is asked with: the medicines where their last question has room
        for it (the drug history), else the past conditions (with room there, or a question of its own)."""
        def room(topic: str) -> bool:
            qs = [q for a in plan.risk_factors if history_topic(a.base, a.value) == topic
                  if (q := self._ask(ctx.state, a)) is not None]
            qs += [q for q in general if history_topic(q.base) == topic]
            named = {q for q in qs if q != DRUG_ALLERGY and q.value.casefold() not in cmas.OPEN_VALUES
                     and not answered(ctx.state, q, self.vocab) and not asked(ctx.past_actions, q, self.vocab)}
            return len(named) % PLAN_GROUP != 0

        if any(a.base == "medication" for a in plan.risk_factors) and room("medication"):
            return "medication"
        return "medical_history"

    def _decisive_record(self, state: dict, a: Ask) -> Question | None:
        from agent.core.ontology import find_item

        if a.base == "basic_information":
            return None
        found = find_item(state, a.base, a.value, self.vocab)
        if found is None or found[0] in ("negative", "unavail"):
            return None
        return Question(a.base, a.value, a.check)

    def open_questions(self, ctx: TurnContext, plan: Plan | None = None) -> Iterator[Candidate]:
        """Candidates neither answered by the state nor asked before, nor about an item only the other sex has
        (:mod:`agent.core.sex_specific`). Before the first item only one sex has, while nothing has told the
        patient's sex, the sex (and the age, asked with it) comes first, as its own question. In the red-flag screen
        the sex alone, as one of the screen's questions, before a question about periods or pregnancy (a man asked
        whether he could be pregnant loses the clinician's trust, and the items it spares him keep the screen within
        its five turns); before a question about the testicles the screen asks it of unknown relevance, since the
        extra turn would push a long screen (urinary symptoms) past five turns."""
        seen: set[Question] = set()
        sex = self.sexes.patient_sex(ctx.state)

        def is_open(q: Question) -> bool:
            return q not in seen and self.still_open(ctx, q)

        for cand in self.candidates(ctx, plan):
            q = cand.question
            if not is_open(q) or (q == SEX and sex is not None):  # a pain in the testicle told it: not asked
                continue
            only = self.sexes.of_item(q.base, q.value, q.values if q.check == "location" else ())
            if only is not None and sex is not None and only != sex:
                continue
            if self.sexes.past_childbearing(q.base, q.value, ctx.state):  # no "could you be pregnant?" at 71
                continue
            in_screen = cand.stage == "red_flag_screen"
            if only is not None and sex is None and is_open(SEX) and (not in_screen or only == "female"):
                # in the red-flag screen the sex alone, as a screen question, before its first question about periods
                # or pregnancy: a man is not asked whether he could be pregnant, and the items it spares him pay for
                # the turn (before a testicle question the turn would push a long screen past its five turns)
                for first in (SEX,) if in_screen else (SEX, AGE):
                    if is_open(first):
                        seen.add(first)
                        yield Candidate(cand.stage if in_screen else "risk_factors", first)
            seen.add(q)
            yield cand
            if q.check is None and (sec := self._conditional_section(q.base)) is not None:
                for c in sec.followups(q.base, q.value, self.vocab):
                    if is_open(follow := Question(q.base, q.value, c)):
                        seen.add(follow)
                        yield Candidate(cand.stage, follow, cand.group, conditional=True)

    def _conditional_section(self, base: str) -> Section | None:
        """The section whose follow-ups of ``base`` are asked with the question whether the patient has the item."""
        return next((s for s in self.config.sections if s.followup_with_ask and base in s.followup), None)

    def checks_a_turn(self, value: str) -> int:
        """How many attribute questions about symptom ``value`` one turn asks: ``questions_per_turn``, at most two for
        a symptom in ``hpi.two_a_turn`` (a risk assessment leaves room for each answer)."""
        n = self.config.questions_per_turn
        return min(n, 2) if any(self.vocab.same("symptom", v, value) for v in self.config.two_a_turn) else n

    # -- the protocol

    @staticmethod
    def closed(ctx: TurnContext) -> bool:
        """A salutation after the opening turn is the farewell: the interview is over."""
        return any(a.get("action") == "nod_prompt_salutations" for turn in ctx.past_actions[1:] for a in turn)

    def next_actions(self, ctx: TurnContext) -> ModuleOutput:
        if not ctx.past_actions and ctx.doctor_turns == 0:
            asks = list(self.config.greeting_asks)
            return self._out(GREETING + (to_actions(asks) if asks else []), "greeting", asks or None)
        if self.closed(ctx):
            return self._out(FAREWELL, "close")
        plan = self.plan_for(ctx)
        picked: list[Candidate] = []
        n = self.config.questions_per_turn
        for cand in self.open_questions(ctx, plan):
            if cand.conditional and not open_tail(cand, picked):
                continue  # its question whether did not make this turn: asked later, as a follow-up, if at all
            if cand.filler and not any(not p.filler and p.group == cand.group for p in picked):
                continue  # a filler takes the room a question of its group leaves, never a turn of its own
            same_item = any(
                p.question.base == cand.question.base and p.question.value == cand.question.value for p in picked
            )
            if picked and (cand.topic != picked[0].topic or (cand.question.screening and same_item)):
                break
            head = (picked or [cand])[0]
            limit = (PLAN_GROUP if n > 1 else 1) if head.group is not None else n
            if head.question.base == "symptom" and head.question.check is not None:
                limit = min(limit, self.checks_a_turn(head.question.value))
            if head.group is not None and head.group.startswith("followup:"):  # items, each with its checks
                if cand.question.value not in {p.question.value for p in picked} and len(
                        {p.question.value for p in picked}) >= limit:
                    break
            elif len([p for p in picked if not open_tail(p, picked)]) >= limit and not open_tail(cand, picked):
                break
            picked.append(cand)
        if picked:
            questions = [c.question for c in picked]
            return self._out(to_actions(questions), picked[0].stage, questions, plan)
        if self.config.wrap_up and not any(a.get("action") == "chit-chat" for turn in ctx.past_actions for a in turn):
            return self._out(WRAP_UP, "wrap_up", plan=plan)
        return self._out(FAREWELL, "close", plan=plan)

    @staticmethod
    def _out(actions: list[dict], stage: str, questions: list[Question] | None = None,
             plan: Plan | None = None) -> ModuleOutput:
        """The turn's actions, with what the clinician's summary and the logs read: the stage, the questions and the
        presentation plan followed (``plan``: its id)."""
        meta = {"policy": "questionnaire", "stage": stage}
        if plan is not None:
            meta["plan"] = plan.id
        if questions:
            meta["questions"] = [q.label() for q in questions]
        return ModuleOutput(value=cmas.parse_actions(actions), meta=meta)
