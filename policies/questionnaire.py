"""A deterministic history-taking policy built from the MediTOD questionnaire ontology.

Every turn it recomputes, from the patient state alone, the ordered list of questions
a history still needs (``configs/questionnaire.yaml``), drops those the state answers
or that were asked before, and asks the first one or two, about one topic. A symptom
found positive during the review of systems therefore gets its own history of
presenting complaint next, as a clinician would do.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from agent import cmas
from agent.ontology import Vocabulary, default_vocabulary
from agent.paths import REPO_ROOT
from agent.protocol import ModuleOutput, TurnContext
from policies.questions import Question, answered, asked, to_actions

DEFAULT_CONFIG = REPO_ROOT / "configs" / "questionnaire.yaml"

STAGES = (
    "greeting", "hpi", "associated_symptoms", "review_of_systems",
    # then the configured sections, in order, then:
    "wrap_up", "close",
)
GREETING = [{"action": "nod_prompt_salutations"}]
WRAP_UP = [{"action": "chit-chat"}]
FAREWELL = [{"action": "nod_prompt_salutations"}]
NOT_A_SYMPTOM = cmas.OPEN_VALUES


class QuestionnaireConfigError(ValueError):
    pass


@dataclass
class Section:
    stage: str
    ask: list[Question]
    followup: dict[str, tuple[str, ...]] = field(default_factory=dict)


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


def load_questionnaire_config(path: str | Path = DEFAULT_CONFIG, vocab: Vocabulary | None = None) -> QuestionnaireConfig:
    vocab = vocab or default_vocabulary()
    raw = yaml.safe_load(Path(path).read_text())
    known = {"questions_per_turn", "hpi", "systems", "related_systems", "default_review", "sections", "wrap_up"}
    if not isinstance(raw, dict):
        raise _fail(str(path), "expected a mapping")
    if unknown := set(raw) - known:
        raise _fail(str(path), f"unknown keys {sorted(unknown)}")
    hpi = raw.get("hpi") or {}
    if unknown := set(hpi) - {"checks", "secondary_checks", "location_for", "extra_checks", "skip_checks",
                                "check_values"}:
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
        if not isinstance(sec, dict) or set(sec) - {"ask", "followup"}:
            raise _fail(f"sections.{stage}", "expected a mapping with 'ask' and optional 'followup'")
        ask = [_slot_question(e, vocab, f"sections.{stage}.ask.{i}") for i, e in enumerate(sec.get("ask") or [])]
        followup = {}
        for base, checks in (sec.get("followup") or {}).items():
            if base not in cmas.SLOTS:
                raise _fail(f"sections.{stage}.followup", f"unknown slot type {base!r}")
            followup[base] = _checks(base, checks, f"sections.{stage}.followup.{base}")
        sections.append(Section(stage, ask, followup))

    return QuestionnaireConfig(
        questions_per_turn=n,
        hpi_checks=_checks("symptom", hpi.get("checks") or [], "hpi.checks"),
        secondary_checks=_checks("symptom", hpi.get("secondary_checks", hpi.get("checks")) or [], "hpi.secondary_checks"),
        location_for=tuple(_value("symptom", v, vocab, "hpi.location_for") for v in hpi.get("location_for") or []),
        extra_checks={
            _value("symptom", k, vocab, "hpi.extra_checks"): _checks("symptom", v, f"hpi.extra_checks.{k}")
            for k, v in (hpi.get("extra_checks") or {}).items()
        },
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
    )


# --------------------------------------------------------------------------- the policy


@dataclass(frozen=True)
class Candidate:
    stage: str
    question: Question

    @property
    def topic(self) -> tuple:
        """Questions of one turn share a topic: one symptom's attributes, or one slot type's screening."""
        q = self.question
        screening = q.check is None or (q.check == "location" and q.values)  # "any pain in your abdomen?"
        return (self.stage, q.base, None if screening else q.value)


class QuestionnairePolicy:
    """Deterministic policy: :meth:`next_actions` depends only on ``ctx.state`` and ``ctx.past_actions``."""

    def __init__(self, config: QuestionnaireConfig | None = None, vocab: Vocabulary | None = None):
        self.vocab = vocab or default_vocabulary()
        self.config = config or load_questionnaire_config(vocab=self.vocab)

    # -- helpers over the state

    def _positive_symptoms(self, state: dict) -> list[dict]:
        return [it for it in state.get("positive_symptom") or [] if str(it.get("value", "")).casefold() not in NOT_A_SYMPTOM]

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
        return [Question("symptom", value, c, values.get(c, ())) for c in dict.fromkeys(checks) if c not in skip]

    def candidates(self, ctx: TurnContext) -> Iterator[Candidate]:
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
        for sec in cfg.sections:
            for q in sec.ask:
                yield Candidate(sec.stage, q)
            for base, checks in sec.followup.items():
                for item in state.get(f"positive_{base}") or []:
                    value = item.get("value")
                    if isinstance(value, str) and value.casefold() not in cmas.OPEN_VALUES:
                        for c in checks:
                            yield Candidate(sec.stage, Question(base, value, c))

    def open_questions(self, ctx: TurnContext) -> Iterator[Candidate]:
        """Candidates neither answered by the state nor asked before."""
        seen: set[Question] = set()
        for cand in self.candidates(ctx):
            q = cand.question
            if q in seen or answered(ctx.state, q, self.vocab) or asked(ctx.past_actions, q, self.vocab):
                continue
            seen.add(q)
            yield cand

    # -- the protocol

    @staticmethod
    def closed(ctx: TurnContext) -> bool:
        """A salutation after the opening turn is the farewell: the interview is over."""
        return any(a.get("action") == "nod_prompt_salutations" for turn in ctx.past_actions[1:] for a in turn)

    def next_actions(self, ctx: TurnContext) -> ModuleOutput:
        if not ctx.past_actions and ctx.doctor_turns == 0:
            return self._out(GREETING, "greeting")
        if self.closed(ctx):
            return self._out(FAREWELL, "close")
        picked: list[Candidate] = []
        for cand in self.open_questions(ctx):
            same_item = any(p.question.base == cand.question.base and p.question.value == cand.question.value for p in picked)
            if picked and (cand.topic != picked[0].topic or (cand.topic[2] is None and same_item)):
                break
            picked.append(cand)
            if len(picked) == self.config.questions_per_turn:
                break
        if picked:
            questions = [c.question for c in picked]
            return self._out(to_actions(questions), picked[0].stage, questions)
        if self.config.wrap_up and not any(a.get("action") == "chit-chat" for turn in ctx.past_actions for a in turn):
            return self._out(WRAP_UP, "wrap_up")
        return self._out(FAREWELL, "close")

    @staticmethod
    def _out(actions: list[dict], stage: str, questions: list[Question] | None = None) -> ModuleOutput:
        meta = {"policy": "questionnaire", "stage": stage}
        if questions:
            meta["questions"] = [q.label() for q in questions]
        return ModuleOutput(value=cmas.parse_actions(actions), meta=meta)
