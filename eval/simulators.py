"""Simulated patients for whole interviews (``medhx simulate``): one small protocol, three kinds, one oracle NLU.

A simulator answers one doctor turn at a time (:class:`PatientSimulator`: ``respond(DoctorTurn) -> PatientReply``).
Every reply carries the text a patient says *and* its gold NLU frame (what the text states, in CMAS), so the same
interview can be run end to end (the agent's NLU reads the text) or with the oracle NLU (:class:`OracleNLU` hands
the agent the gold frame), judging policy and NLU apart.

- ``agenda`` (:class:`AgendaSimulator`): a user simulator in the agenda tradition. It reads the doctor's CMAS
  actions (a dialogue-act-level patient, like agenda-based user simulators in task-oriented dialogue; the doctor's
  wording is not needed) and answers from its case card: a positive fact with its attributes, a denial for what the
  card marks negative, "not sure" for unknown, a denial for what the card does not hold (the card is the whole
  truth). Wording comes from a lay lexicon (``configs/simulate/lay_phrases.yaml``) through a seeded generator, with
  multi-fact answers (two questions, one reply), short answers ("No."), a volunteered related fact now and then
  (another attribute of the item just discussed) and a reply to "anything else?" that mentions what was never
  asked; so its text is not the template NLG read backwards.
- ``llm`` (:class:`LLMSimulator`): any configured backend (``models.backends.make_backend``) role-plays the card
  from a persona prompt that lists the card's facts in lay words, answering the doctor's *text*. The agenda planner
  supplies the gold frame and, when ``guided``, a note of what is true about the question. A judge pass reads each
  reply back (``clinical``: the clinical NLU; ``llm``: the backend asked for a JSON list) and flags facts the card
  does not support; a flagged reply is regenerated, then replaced by the agenda's answer (``on_invention: agenda``)
  or kept and reported (``keep``).
- a researcher's own class by dotted path (``kind: pkg.mod:Class``, called with ``card``, ``seed`` and ``options``).
"""

from __future__ import annotations

import copy
import importlib
import json
import random
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent import cmas
from agent.ontology import Vocabulary, default_vocabulary, load_ontology
from agent.paths import REPO_ROOT, ConfigPath, ModelRef, resolve_against, resolve_paths
from agent.protocol import ModuleOutput, TurnContext
from agent.safety import clean_patient_text
from eval.cases import OPEN_HEADS, CaseCard, Fact, frames_state, state_facts, supported
from policies.nlu.answers import asked_items

DEFAULT_LEXICON = REPO_ROOT / "configs" / "simulate" / "lay_phrases.yaml"
SILENCE = "..."  # what the runner sends for a simulator that said nothing: the agent hears silence, not a fact


# --------------------------------------------------------------------------- the protocol


@dataclass
class DoctorTurn:
    """What the patient hears: the doctor's text, and the CMAS actions behind it (the agenda simulator's input)."""

    text: str
    actions: list[dict] = field(default_factory=list)
    index: int = 0


@dataclass
class PatientReply:
    """What the patient says and its gold NLU frames (strict CMAS, prefix form); ``meta`` says how it was made."""

    text: str
    frames: list[dict]
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class PatientSimulator(Protocol):
    def respond(self, doctor: DoctorTurn) -> PatientReply:
        """The patient's answer to one doctor turn (the first call answers the greeting)."""
        ...


# --------------------------------------------------------------------------- the lay lexicon


class ValuePhrases(BaseModel):
    model_config = ConfigDict(extra="forbid")
    noun: list[str] = Field(min_length=1)
    affirm: list[str] = []  # whole clauses where a noun phrase reads badly ("I smoke")
    deny: list[str] = []
    unsure: list[str] = []


class Answers(BaseModel):
    model_config = ConfigDict(extra="forbid")
    affirm: list[str]
    deny: list[str]
    unsure: list[str]
    short_deny: list[str]
    ack: list[str]
    farewell: list[str]
    nothing_else: list[str]
    something_else: list[str]
    volunteer: list[str]
    same_polarity: list[str]
    change_polarity: list[str]
    not_understood: list[str]
    not_there: list[str]
    no_record: list[str]
    nothing_more: list[str]


class Opening(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: list[str]
    lead: list[str]


class LayLexicon(BaseModel):
    """``configs/simulate/lay_phrases.yaml``, typed: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")
    answers: Answers
    opening: Opening
    statuses: dict[str, dict[str, list[str]]]
    attributes: dict[str, list[str]]
    progression: dict[str, list[str]]
    initiation: dict[str, list[str]]
    impact: dict[str, list[str]]
    severity_words: dict[str, list[str]]
    locations: dict[str, list[str]]
    characteristics: dict[str, list[str]]
    factors: dict[str, list[str]]
    categories: dict[str, dict[str, list[str]]]
    records: dict[str, dict[str, list[str]]]
    values: dict[str, dict[str, list[str] | ValuePhrases]]

    def phrases(self, base: str, value: str) -> ValuePhrases:
        """The lay phrases of a value: its entry, else the ontology's display name, else the value itself."""
        entry = self.values.get(base, {}).get(value) or self.values.get(base, {}).get(value.casefold())
        if isinstance(entry, ValuePhrases):
            return entry
        if entry:
            return ValuePhrases(noun=entry)
        code = default_vocabulary().code(base, value) if base == "symptom" else None
        sym = load_ontology().symptoms.get(code or "")
        return ValuePhrases(noun=[(sym.display_name if sym else value).lower()])


@lru_cache(maxsize=4)
def load_lexicon(path: str | Path = DEFAULT_LEXICON) -> LayLexicon:
    raw = yaml.safe_load(Path(path).read_text())
    try:
        lex = LayLexicon.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ValueError(f"{path}: {'.'.join(str(x) for x in err['loc'])}: {err['msg']}") from None
    for base in lex.statuses:
        if base not in cmas.SLOTS:
            raise ValueError(f"{path}: statuses: unknown slot type {base!r}")
    return lex


# --------------------------------------------------------------------------- the agenda simulator


@dataclass
class Clause:
    """One thing said: its words, the CMAS slots it states (prefix form) and how it answers (affirm / deny /
    unsure / inform / volunteer)."""

    text: str
    slots: dict[str, list[dict]] = field(default_factory=dict)
    polarity: str = "inform"


def merge_slots(fragments: list[dict[str, list[dict]]]) -> dict[str, list[dict]]:
    """Slot fragments as one frame's slots: one item per (slot, value), one record per record slot."""
    out: dict[str, list[dict]] = {}
    for frag in fragments:
        for name, items in frag.items():
            base = cmas.split_slot_name(name)[1]
            target = out.setdefault(name, [])
            for item in items:
                if base in cmas.RECORD_SLOTS:
                    if not target:
                        target.append({})
                    target[0].update(item)
                    continue
                same = next((t for t in target if t.get("value") == item.get("value")), None)
                if same is None:
                    target.append(copy.deepcopy(item))
                    continue
                for k, v in item.items():
                    if isinstance(v, list):
                        same[k] = list(dict.fromkeys([*(same.get(k) or []), *v]))
                    else:
                        same[k] = v
    return {k: v for k, v in out.items() if v}


def _cap(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


def _uncap(text: str) -> str:
    """Lower-case a clause's first letter when it follows a lead word ("But my ..."); "I" stays."""
    return text if re.match(r"^(I\b|I'|COVID|TB|COPD)", text) else text[:1].lower() + text[1:]


def _article(value: str) -> str:
    v = value.strip()
    if re.match(r"^(a|an|the|my|our)\b", v, re.I):
        return v
    return ("an " if v[:1].lower() in "aeiou" else "a ") + v


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


_POLARITY = {"positive": "affirm", "avail": "affirm", "negative": "deny", "unavail": "deny", "unknown": "unsure"}


class AgendaSimulator:
    """The agenda-based patient of one case card (see the module docstring). Deterministic for a (card, seed)."""

    def __init__(self, card: CaseCard, lexicon: LayLexicon | None = None, seed: int = 0, volunteer_p: float = 0.3,
                 short_answer_p: float = 0.3, vocab: Vocabulary | None = None):
        self.card = card
        self.lex = lexicon or load_lexicon()
        self.rng = random.Random(f"{card.id}:{seed}")
        self.volunteer_p = volunteer_p
        self.short_answer_p = short_answer_p
        self.vocab = vocab or default_vocabulary()
        self.said: set[Fact] = set()
        self.saying: set[tuple[str, Any]] = set()  # (slot type, value) already in the reply being built
        self.turns = 0

    # -- the protocol

    def respond(self, doctor: DoctorTurn) -> PatientReply:
        self.turns += 1
        actions = doctor.actions or []
        kinds = {a.get("action") for a in actions}
        if self.turns == 1:
            return self._reply(self.opening(), "opening")
        clauses: list[Clause] = []
        n_questions = 0
        self.saying = set()
        for base, value, checks in asked_items(actions):
            n_questions += 1
            new = self.answer(base, value, checks)
            self.saying |= {(cmas.split_slot_name(n)[1], it.get("value")) for c in new for n, its in c.slots.items()
                            for it in its}
            clauses += new
        if clauses:
            return self._reply(clauses, "answer", short_ok=n_questions > 0)
        if "chit-chat" in kinds:
            return self._reply(self.anything_else(), "wrap_up")
        if "nod_prompt_salutations" in kinds:
            return self._plain(self.lex.answers.farewell, "farewell", "nod_prompt_salutations")
        if kinds & {"diagnosis", "other", "inquire"}:
            return self._plain(self.lex.answers.ack, "ack", "nod_prompt_salutations")
        return self._plain(self.lex.answers.not_understood, "not_understood", "chit-chat")

    # -- replies

    def _choose(self, options: list[str]) -> str:
        return self.rng.choice(options) if options else ""

    def _plain(self, options: list[str], kind: str, intent: str) -> PatientReply:
        return PatientReply(self._choose(options), [{"intent": intent}], {"simulator": "agenda", "kind": kind})

    def _reply(self, clauses: list[Clause], kind: str, short_ok: bool = False) -> PatientReply:
        slots = merge_slots([c.slots for c in clauses])
        bare = "nod_prompt_salutations" if kind == "wrap_up" else "inform"  # "No, that's all." states nothing
        frames = cmas.parse_nlu([{"intent": "inform", "slots": slots}] if slots else [{"intent": bare}])
        self.said |= set(state_facts(frames_state(frames)))
        meta: dict[str, Any] = {"simulator": "agenda", "kind": kind}
        if volunteered := [c.text for c in clauses if c.polarity == "volunteer"]:
            meta["volunteered"] = volunteered
        pure_denial = all(c.polarity == "deny" and all(n.startswith(("negative_", "unavail_")) or n == "travel"
                                                       for n in c.slots) for c in clauses)
        if short_ok and clauses and pure_denial and self.rng.random() < self.short_answer_p:
            meta["short_answer"] = True
            return PatientReply(self._choose(self.lex.answers.short_deny), frames, meta)
        return PatientReply(self._assemble(clauses), frames, meta)

    def _assemble(self, clauses: list[Clause]) -> str:
        sentences: list[str] = []
        prev: str | None = None
        for i, c in enumerate(clauses):
            text = c.text
            if c.polarity == "volunteer":
                text = f"{self._choose(self.lex.answers.volunteer)} {_uncap(text)}"
            elif i == 0 and c.polarity in ("affirm", "deny") and self.rng.random() < 0.7:
                text = f"{self._choose(getattr(self.lex.answers, c.polarity))}, {_uncap(text)}"
            elif i > 0 and {prev, c.polarity} == {"affirm", "deny"}:
                text = f"{self._choose(self.lex.answers.change_polarity)} {_uncap(text)}"
            elif i > 0 and c.polarity == prev and c.polarity in ("affirm", "deny") and self.rng.random() < 0.5:
                text = f"{self._choose(self.lex.answers.same_polarity)} {_uncap(text)}"
            sentences.append(_cap(text) + ("" if text.rstrip().endswith((".", "?", "!")) else "."))
            if c.polarity in ("affirm", "deny", "unsure"):
                prev = c.polarity
        return " ".join(sentences)

    # -- the opening and "anything else?"

    def opening(self) -> list[Clause]:
        clauses = []
        for value in self.card.chief_complaint:
            found = self.card.find("symptom", value, self.vocab)
            if found:
                clauses.append(self.status_clause("symptom", "positive", found[1], with_location=True))
        if clauses and self.rng.random() < 0.6:
            first = self.card.find("symptom", self.card.chief_complaint[0], self.vocab)
            if first and first[1].get("onset"):
                clauses.append(self.attribute_clause("symptom", "positive", first[1], "onset"))
        lead = self._choose(self.lex.opening.lead)
        greeting = self._choose(self.lex.opening.greeting)
        if clauses:
            clauses[0] = Clause(f"{greeting} {_cap(lead + ' ' + clauses[0].text) if lead else _cap(clauses[0].text)}",
                                clauses[0].slots, "inform")
        else:
            clauses = [Clause(f"{greeting} I haven't been feeling well")]
        return clauses

    def anything_else(self) -> list[Clause]:
        """Mention up to two positive items never said (symptoms first), or say there is nothing else."""
        said_heads = self._said_heads()
        order = ["symptom", "medical_history", "medication", "habit", "exposure", "family_history"]
        unsaid = [(base, status, item) for base in order for status, item in self.card.items(base)
                  if status in ("positive", "avail") and (base, item.get("value")) not in said_heads]
        if not unsaid:
            return [Clause(self._choose(self.lex.answers.nothing_else))]
        out = [Clause(self._choose(self.lex.answers.something_else))]
        for base, status, item in unsaid[:2]:
            out.append(self.status_clause(base, status, item, with_location=True))
        return out

    # -- answering one asked item

    def answer(self, base: str, value: str, checks: list[dict]) -> list[Clause]:
        if base in cmas.RECORD_SLOTS:
            return self.record_clauses(base, value, checks)
        found = self.card.find(base, value, self.vocab)
        if found is None and value.casefold() in OPEN_HEADS:
            return self.open_answer(base)
        items = [found] if found else self.category_members(base, value)
        if not items:
            return [self.absent_clause(base, value, checks)]
        out: list[Clause] = []
        for status, item in items:
            out += self.item_clauses(base, status or "positive", item, checks)
        return out

    def category_members(self, base: str, value: str) -> list[tuple[str | None, dict]]:
        """The card's items a broad question covers ("any heart disease in the family?": the father's heart
        attack), those not said yet first."""
        members = self.lex.categories.get(base, {}).get(value.casefold()) or []
        found = [(s, it) for s, it in self.card.items(base)
                 if any(self.vocab.same(base, it.get("value", ""), m) for m in members)]
        said_heads = self._said_heads()
        return [x for x in found if (base, x[1].get("value")) not in said_heads] or found[:1]

    def _said_heads(self) -> set[tuple[str, Any]]:
        return {(f.base, f.head) for f in self.said if f.attribute is None} | self.saying

    def open_answer(self, base: str) -> list[Clause]:
        """"Any other conditions / medicines?": the positive items of that slot type never said, or "no"."""
        said_heads = self._said_heads()
        unsaid = [(s, it) for s, it in self.card.items(base)
                  if s in ("positive", "avail") and (base, it.get("value")) not in said_heads]
        if not unsaid:
            return [Clause(self._choose(self.lex.answers.nothing_more), {}, "deny")]
        out = []
        for status, item in unsaid[:3]:
            out.append(self.status_clause(base, status or "positive", item))
            out += self.maybe_volunteer(base, status or "positive", item)
        return out

    def item_clauses(self, base: str, status: str, item: dict, checks: list[dict]) -> list[Clause]:
        types = [c.get("type") for c in checks if c.get("type") not in ("value", "status")]
        located = next((c for c in checks if c.get("type") in cmas.VALUE_SENSITIVE_CHECKS and c.get("values")), None)
        if located is not None and base == "symptom":
            return self.located_clauses(status, item, list(located["values"]))
        if not types or status != "positive" and status != "avail":
            return [self.status_clause(base, status, item), *self.maybe_volunteer(base, status, item)]
        out: list[Clause] = []
        for t in dict.fromkeys(types):
            names = cmas.CHECK_ATTRIBUTES.get(t, (t,)) if base == "symptom" else (t,)
            present = [a for a in names if item.get(a)]
            if not present and not (out and out[-1].polarity == "unsure"):  # one "not sure" for two unknowns
                out.append(Clause(self._choose(self.lex.answers.unsure), {}, "unsure"))
            out += [self.attribute_clause(base, status, item, a) for a in present]
        return out + self.maybe_volunteer(base, status, item, exclude={a for c in out for v in c.slots.values()
                                                                         for it in v for a in it})

    def located_clauses(self, status: str, item: dict, asked: list[str]) -> list[Clause]:
        """"Any pain in your abdomen?": yes with the locations, or "not there" with where it really is."""
        locs = item.get("location") or []
        slot = f"{status}_symptom"
        if status != "positive":
            where = locs or asked
            noun = f"{self._choose(self.lex.phrases('symptom', item['value']).noun)} in {self.lay_location(where)}"
            frag = {slot: [{"value": item["value"], "location": where}]}
            return [Clause(self.status_text("symptom", status, item, noun), frag, _POLARITY.get(status, "deny"))]
        if not locs or set(locs) & set(asked):
            return [self.status_clause("symptom", status, item, with_location=True)]
        elsewhere = self.status_clause("symptom", status, item, with_location=True)  # "... swelling in my knee"
        text = f"{self._choose(self.lex.answers.not_there)}, but {_uncap(elsewhere.text)}"  # "No, " comes first
        return [Clause(text, elsewhere.slots, "deny")]

    def absent_clause(self, base: str, value: str, checks: list[dict]) -> Clause:
        """The card does not hold it: the patient does not have it."""
        status = "unavail" if base == "medical_test" else "negative"
        item: dict[str, Any] = {"value": value}
        located = next((c for c in checks if c.get("type") in cmas.VALUE_SENSITIVE_CHECKS and c.get("values")), None)
        noun = None
        if located is not None and base == "symptom":
            item["location"] = list(located["values"])
            noun = f"{self._choose(self.lex.phrases(base, value).noun)} in {self.lay_location(item['location'])}"
        return Clause(self.status_text(base, status, item, noun), {f"{status}_{base}": [item]}, "deny")

    def maybe_volunteer(self, base: str, status: str, item: dict, exclude: set[str] | None = None) -> list[Clause]:
        """Now and then, one more attribute of the item just discussed, never said before."""
        if status not in ("positive", "avail") or self.rng.random() >= self.volunteer_p:
            return []
        head = item.get("value")
        said = {f.attribute for f in self.said if f.base == base and f.head == head and f.attribute}
        spare = [a for a in item if a not in ("value", "relation") and a not in said and a not in (exclude or ())]
        if not spare:
            return []
        clause = self.attribute_clause(base, status, item, self.rng.choice(spare))
        return [Clause(clause.text, clause.slots, "volunteer")]

    # -- words

    def lay_location(self, locs: list[str]) -> str:
        return _join([self._choose(self.lex.locations.get(loc, [loc])) for loc in locs])

    def status_text(self, base: str, status: str, item: dict, noun: str | None = None) -> str:
        phrases = self.lex.phrases(base, item.get("value", ""))
        own = {"positive": phrases.affirm, "avail": phrases.affirm, "negative": phrases.deny,
               "unavail": phrases.deny, "unknown": phrases.unsure}.get(status) or []
        if own and noun is None:
            return self._choose(own)
        templates = self.lex.statuses.get(base, {}).get(status) or ["{x}"]
        rel = item.get("relation") or "relative"
        return self._choose(templates).format(x=noun or self._choose(phrases.noun), rel=rel)

    def status_clause(self, base: str, status: str, item: dict, with_location: bool = False) -> Clause:
        """The item's head ("I've had a cough"), with its locations when asked for ("pain in my knee")."""
        name = f"{status}_{base}"
        head: dict[str, Any] = {"value": item["value"]}
        noun = None
        if with_location and base == "symptom" and item.get("location") and status == "positive":
            noun = f"{self._choose(self.lex.phrases(base, item['value']).noun)} in {self.lay_location(item['location'])}"
            head["location"] = list(item["location"])
        if base == "family_history" and item.get("relation"):
            head["relation"] = item["relation"]
        return Clause(self.status_text(base, status, item, noun), {name: [head]}, _POLARITY.get(status, "inform"))

    def attribute_clause(self, base: str, status: str, item: dict, attr: str) -> Clause:
        """One attribute of the item in lay words; a list attribute is said whole (the tracker replaces lists)."""
        raw = item[attr]
        values = raw if isinstance(raw, list) else [raw]
        lex = self.lex
        v = str(values[0])
        key = attr
        if base == "symptom":
            if attr == "progression":
                text = self._choose(lex.progression.get(v, [f"it's {v}"]))
            elif attr == "initiation":
                text = self._choose(lex.attributes["initiation"]).format(v=self._choose(lex.initiation.get(v, [v])))
            elif attr == "severity":
                if re.fullmatch(r"\d+(?:\.\d+)?", v.strip()):
                    text = self._choose(lex.attributes["severity"]).format(v=v)
                else:
                    text = self._choose(lex.attributes["severity_words"]).format(v=self._choose(lex.severity_words.get(v, [v])))
            elif attr == "location":
                text = self._choose(lex.attributes["location"]).format(v=self.lay_location(values))
            elif attr == "positive_characteristics":
                text = " and ".join(self._choose(lex.characteristics.get(c, [f"it's {c}"])) for c in values)
            elif attr.endswith("_factor"):
                noun = _join([self._choose(lex.factors.get(f, [f])) for f in values])
                text = self._choose(lex.attributes[attr]).format(v=noun)
            elif attr in lex.attributes:
                text = self._choose(lex.attributes[attr]).format(v=_join([str(x) for x in values]))
            else:
                text = f"{attr.replace('_', ' ')}: {v}"
        else:
            key = {("medical_history", "starting"): "history_starting", ("medical_history", "frequency"): "history_frequency",
                   ("habit", "frequency"): "habit_frequency", ("medication", "frequency"): "medication_frequency",
                   ("medical_test", "when"): "test_when"}.get((base, attr), attr)
            if attr == "impact":
                text = self._choose(lex.impact.get(v.casefold(), [f"it helps: {v}"]))
            elif attr == "respone_to":
                target = next((b for b in ("medical_history", "symptom") if v in lex.values.get(b, {})), "medical_history")
                text = self._choose(lex.attributes["respone_to"]).format(v=self._choose(lex.phrases(target, v).noun))
            elif key in lex.attributes:
                text = self._choose(lex.attributes[key]).format(v=v)
            else:
                text = f"{attr.replace('_', ' ')}: {v}"
        frag = {f"{status}_{base}": [{"value": item["value"], attr: list(values) if isinstance(raw, list) else raw}]}
        return Clause(text, frag, "inform")

    # -- records: travel, occupation, residence, basic information

    def record_clauses(self, base: str, value: str, checks: list[dict]) -> list[Clause]:
        record = next((it for _, it in self.card.items(base)), None)
        words = self.lex.records.get(base, {})
        if base == "travel":
            if record is None or record.get("status") == "not_traveled":
                frag = {"travel": [{"status": "not_traveled"}]}
                return [Clause(self._choose(words["not_traveled"]), frag, "deny")]
            dest = record.get("destination") or record.get("value")
            text = self._choose(words["traveled"]).format(destination=dest) if dest else self._choose(words["traveled_unnamed"])
            said = {k: record[k] for k in ("status", "destination", "value") if k in record}
            out = [Clause(text, {"travel": [said]}, "affirm")]
            if when := record.get("date") or record.get("when"):
                key = "date" if record.get("date") else "when"
                out.append(Clause(self._choose(words["date"]).format(v=when), {"travel": [{key: when}]}))
            return out
        if record is None:
            return [Clause(self._choose(self.lex.answers.no_record), {}, "unsure")]
        if base == "basic_information":
            asked = [c.get("type") for c in checks if c.get("type") in cmas.BASIC_KEYS]
            keys = asked or ([value] if value in cmas.BASIC_KEYS else [k for k in ("age", "sex", "gender") if k in record])
            out = [Clause(self._choose(words[k]).format(v=record[k]), {base: [{k: record[k]}]}) for k in keys if k in record]
            return out or [Clause(self._choose(self.lex.answers.unsure), {}, "unsure")]
        status = record.get("status")
        out = []
        if base == "occupation":
            if status == "false":
                out.append(Clause(self._choose(words["false"]), {base: [{"status": "false"}]}, "deny"))
                if record.get("value"):
                    out.append(Clause(self._choose(words["former"]).format(a_value=_article(record["value"])),
                                      {base: [{"value": record["value"]}]}))
            elif record.get("value"):
                frag = {"value": record["value"], **({"status": status} if status else {})}
                out.append(Clause(self._choose(words["true"]).format(a_value=_article(record["value"])), {base: [frag]}))
            asked = {c.get("type") for c in checks}
            for key in ("hazards", "exposure", "when"):
                if record.get(key) and (key in asked or self.rng.random() < self.volunteer_p):
                    tmpl = words["hazards"] if key in ("hazards", "exposure") else words["when"]
                    out.append(Clause(self._choose(tmpl).format(v=record[key]), {base: [{key: record[key]}]}))
            return out or [Clause(self._choose(self.lex.answers.unsure), {}, "unsure")]
        # residence
        if status == "not_living":
            return [Clause(self._choose(words["not_living"]), {base: [{"status": "not_living"}]}, "deny")]
        if record.get("value"):
            frag = {"value": record["value"], **({"status": status} if status else {})}
            out.append(Clause(self._choose(words["living"]).format(a_value=_article(record["value"])), {base: [frag]}))
        size = record.get("household_size")
        if size and (self.rng.random() < max(self.volunteer_p, 0.5) or not out):
            alone = size.strip().casefold() in ("1", "one")
            text = self._choose(words["alone"]) if alone else self._choose(words["household_size"]).format(v=size)
            out.append(Clause(text, {base: [{"household_size": size}]}))
        return out or [Clause(self._choose(self.lex.answers.unsure), {}, "unsure")]


# --------------------------------------------------------------------------- oracle NLU


class OracleChannel:
    """Gold frames a simulator hands the oracle NLU, keyed by the (cleaned) patient text they belong to."""

    def __init__(self) -> None:
        self._frames: dict[str, list[dict]] = {}
        self._lock = threading.Lock()

    def put(self, text: str, frames: list[dict]) -> None:
        with self._lock:
            self._frames[clean_patient_text(text)] = copy.deepcopy(frames)

    def take(self, text: str) -> list[dict] | None:
        with self._lock:
            return self._frames.pop(clean_patient_text(text), None)


_CHANNELS: dict[str, OracleChannel] = {}
_CHANNELS_LOCK = threading.Lock()


def open_channel(name: str) -> OracleChannel:
    """The channel an :class:`OracleNLU` built with ``channel: name`` reads (process-wide: the simulate runner and
    the agent it drives share one process). One runner slot, one channel: no two sessions share one."""
    with _CHANNELS_LOCK:
        return _CHANNELS.setdefault(name, OracleChannel())


def close_channel(name: str) -> None:
    with _CHANNELS_LOCK:
        _CHANNELS.pop(name, None)


class OracleNLU:
    """The NLU of the oracle mode, plugged in by dotted path (``nlu: {kind: "eval.simulators:OracleNLU", channel:
    NAME}``): the gold frame the simulator attached to the utterance, through the agent's usual grounding gate.
    An utterance with no frame (the runner sent silence) is a format error with no frames, never a guess."""

    def __init__(self, channel: str):
        self.channel = channel

    def understand(self, ctx: TurnContext) -> ModuleOutput:
        text = ctx.turns[-1][1] if ctx.turns else ""
        frames = open_channel(self.channel).take(text)
        if frames is None:
            return ModuleOutput(value=[], format_error="no oracle frame for this utterance", meta={"nlu": "oracle"})
        return ModuleOutput(value=frames, meta={"nlu": "oracle"})


# --------------------------------------------------------------------------- the LLM simulator


class LLMClient:
    """One backend, its tokenizer's chat template and sampling settings; calls are serialised for in-process
    backends (one model in memory) and concurrent for a server."""

    def __init__(self, backend: Any, tokenizer: Any, adapter: str | None, max_tokens: int, temperature: float):
        self.backend, self.tokenizer, self.adapter = backend, tokenizer, adapter
        self.max_tokens, self.temperature = max_tokens, temperature
        self._lock = threading.Lock() if getattr(backend, "name", "") != "vllm-server" else None

    def complete(self, messages: list[dict], json_schema: dict | None = None, max_tokens: int | None = None) -> str:
        from models.backends import GenerationRequest
        from models.prompts import render_prompt

        req = GenerationRequest(prompt=render_prompt(messages, self.tokenizer), adapter=self.adapter,
                                json_schema=json_schema, max_tokens=max_tokens or self.max_tokens,
                                temperature=0.0 if json_schema else self.temperature)
        if self._lock is None:
            return self.backend.generate([req])[0].text
        with self._lock:
            return self.backend.generate([req])[0].text

    def close(self) -> None:
        self.backend.close()


def card_sentences(card: CaseCard, lexicon: LayLexicon) -> list[str]:
    """Every fact of the card as a first-person lay sentence (the persona prompt's "about you")."""
    speaker = AgendaSimulator(card, lexicon, seed=0, volunteer_p=0.0)
    out = []
    for base in cmas.SLOTS:
        if base in cmas.RECORD_SLOTS:
            if next(card.items(base), None) is not None:
                clauses = speaker.record_clauses(base, "other", [{"type": k} for k in ("hazards", "exposure", "when")])
                out += [_cap(c.text) + "." for c in clauses]
            continue
        for status, item in card.items(base):
            parts = [speaker.status_clause(base, status or "positive", item, with_location=True).text]
            if status in ("positive", "avail"):
                parts += [speaker.attribute_clause(base, status, item, a).text
                          for a in item if a not in ("value", "relation", "location")]
            out.append(". ".join(_cap(p) for p in parts) + ".")
    return out


PERSONA_PROMPT = (
    "You are role-playing a patient talking to a doctor who is taking your medical history. {persona}\n"
    "Everything true about you is listed below. Answer only from it: if the doctor asks about something not listed, "
    "you do not have it; if a detail is not listed, say you are not sure. Never invent symptoms, conditions, "
    "medicines, tests or other details. Answer as the patient, in everyday words, in one to three short sentences, "
    "with no name or label in front.\n\nAbout you:\n{facts}"
)
GUIDE = "\n\n(What is true about this question, from the list above: {plan})"
REMINDER = "Answer again, using only the facts listed about you."
JUDGE_PROMPT = (
    "Facts about a patient:\n{facts}\n\nThe patient said: \"{reply}\"\n\nList every medical fact the patient "
    "stated that the facts above do not say (an invented symptom, condition, medicine, test or detail). "
    'Answer with JSON: {{"invented": [..]}}; an empty list when everything stated is in the facts.'
)
JUDGE_SCHEMA = {"type": "object", "properties": {"invented": {"type": "array", "maxItems": 5,
                                                              "items": {"type": "string", "maxLength": 80}}},
                "required": ["invented"], "additionalProperties": False}


def tidy_reply(text: str) -> str:
    """A model's reply as a patient's utterance: the first paragraph, no speaker label, no quotes."""
    text = text.strip().split("\n\n")[0].strip()
    text = re.sub(r"^(patient|me|answer)\s*:\s*", "", text, flags=re.I).strip().strip('"').strip()
    return text.split("\n")[0].strip()


class Judge(Protocol):
    def invented(self, text: str, doctor: DoctorTurn, card: CaseCard) -> tuple[list[str], str | None]:
        """Facts of ``text`` the card does not support, and an error when the judge could not tell."""
        ...


class ClinicalJudge:
    """Reads the reply with the clinical NLU (given the doctor's question) and flags every stated item (slot type,
    status, value) the card does not support (:func:`eval.cases.supported`)."""

    def __init__(self, vocab: Vocabulary | None = None):
        from policies.nlu.clinical import ClinicalNLU

        self.nlu = ClinicalNLU()
        self.vocab = vocab or default_vocabulary()
        self._lock = threading.Lock()

    def invented(self, text: str, doctor: DoctorTurn, card: CaseCard) -> tuple[list[str], str | None]:
        with self._lock:
            frames = self.nlu.frames(text, doctor.actions, {}, doctor.text)
        facts = state_facts(frames_state(frames))
        return [f.label() for f in facts if f.attribute is None and not supported(f, card.state, self.vocab)], None


class LLMJudge:
    """Asks the backend for the invented facts as JSON (schema-constrained where the backend supports it)."""

    def __init__(self, client: LLMClient, lexicon: LayLexicon):
        self.client, self.lexicon = client, lexicon

    def invented(self, text: str, doctor: DoctorTurn, card: CaseCard) -> tuple[list[str], str | None]:
        facts = "\n".join(f"- {s}" for s in card_sentences(card, self.lexicon))
        messages = [{"role": "user", "content": JUDGE_PROMPT.format(facts=facts, reply=text)}]
        raw = self.client.complete(messages, json_schema=JUDGE_SCHEMA, max_tokens=160)
        try:
            found = json.loads(raw)["invented"]
            return [str(x) for x in found if str(x).strip()], None
        except (ValueError, KeyError, TypeError):
            return [], f"judge answer is not the JSON asked for: {raw[:120]!r}"


class LLMSimulator:
    """A backend role-playing the card (see the module docstring); the agenda planner gives the gold frames."""

    def __init__(self, card: CaseCard, client: LLMClient, lexicon: LayLexicon | None = None, seed: int = 0,
                 guided: bool = True, judge: Judge | None = None, on_invention: str = "agenda", retries: int = 1,
                 persona: str | None = None, volunteer_p: float = 0.3, short_answer_p: float = 0.3):
        self.card, self.client = card, client
        self.lexicon = lexicon or load_lexicon()
        self.planner = AgendaSimulator(card, self.lexicon, seed, volunteer_p, short_answer_p)
        self.guided, self.judge, self.on_invention, self.retries = guided, judge, on_invention, retries
        facts = "\n".join(f"- {s}" for s in card_sentences(card, self.lexicon))
        self.system = PERSONA_PROMPT.format(persona=persona or card.persona, facts=facts)
        self.history: list[dict] = []

    def respond(self, doctor: DoctorTurn) -> PatientReply:
        plan = self.planner.respond(doctor)
        ask = doctor.text + (GUIDE.format(plan=plan.text) if self.guided else "")
        messages = [{"role": "system", "content": self.system}, *self.history, {"role": "user", "content": ask}]
        attempts: list[dict] = []
        text, flagged = "", []
        for _ in range(1 + self.retries):
            text = tidy_reply(self.client.complete(messages))
            flagged, error = self.judge.invented(text, doctor, self.card) if self.judge and text else ([], None)
            attempts.append({"text": text, **({"invented": flagged} if flagged else {}),
                             **({"judge_error": error} if error else {})})
            if text and not flagged:
                break
            messages = [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": REMINDER}]
        meta: dict[str, Any] = {"simulator": "llm", "kind": plan.meta.get("kind"), "attempts": attempts,
                                "plan": plan.text}
        if flagged:
            meta["invented"] = flagged
        if (not text or flagged) and self.on_invention == "agenda":
            meta["fallback"] = "agenda (empty reply)" if not text else "agenda (the judge flagged invented facts)"
            text = plan.text
        self.history += [{"role": "user", "content": doctor.text}, {"role": "assistant", "content": text}]
        return PatientReply(text, plan.frames, meta)


# --------------------------------------------------------------------------- settings and the factory


class AgendaSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["agenda"] = "agenda"
    lexicon: ConfigPath | None = None  # default configs/simulate/lay_phrases.yaml
    volunteer_p: float = Field(default=0.3, ge=0, le=1, description="chance of volunteering one more attribute")
    short_answer_p: float = Field(default=0.3, ge=0, le=1, description="chance of a bare 'No.' to all-denied questions")


class LLMSimulatorSettings(AgendaSettings):
    kind: Literal["llm"] = "llm"  # type: ignore[assignment]
    backend: dict[str, Any] = Field(description="a backend spec, as under an agent config's backends")
    tokenizer: ModelRef | None = None  # default: the backend's model (or the embedded SmolLM2)
    adapter: str | None = None
    max_tokens: int = Field(default=80, ge=1)
    temperature: float = Field(default=0.7, ge=0)
    guided: bool = True
    judge: Literal["clinical", "llm", "none"] = "clinical"
    on_invention: Literal["agenda", "keep"] = "agenda"
    retries: int = Field(default=1, ge=0)


class CustomSimulatorSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str = Field(pattern=r"^[\w.]+:\w+$")
    options: dict[str, Any] = {}


SimulatorSettings = AgendaSettings | LLMSimulatorSettings | CustomSimulatorSettings


def parse_simulator_settings(raw: Any, base: Path) -> SimulatorSettings:
    """A ``simulator:`` section by its ``kind``, paths resolved against ``base`` (the config file's directory)."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ValueError("simulator: expected a mapping with a 'kind'")
    kind = raw.get("kind", "agenda")
    model: type[BaseModel] = {"agenda": AgendaSettings, "llm": LLMSimulatorSettings}.get(kind, CustomSimulatorSettings)
    data = resolve_paths(model, raw, base)
    if model is LLMSimulatorSettings and isinstance(data.get("backend"), dict):
        spec = dict(data["backend"])
        if isinstance(spec.get("launch"), str):
            spec["launch"] = resolve_against(spec["launch"], base)
        for key in ("model", "tokenizer"):
            if isinstance(spec.get(key), str):
                spec[key] = resolve_against(spec[key], base, exists_only=True)
        data["backend"] = spec
    try:
        return model.model_validate(data)  # type: ignore[return-value]
    except ValidationError as exc:
        problems = "; ".join(f"simulator.{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"{problems} (kinds: agenda, llm, or a dotted path 'pkg.mod:Class')") from None


class SimulatorFactory:
    """Builds one simulator per interview; holds what interviews share (lexicon, LLM client, judge)."""

    def __init__(self, settings: SimulatorSettings):
        self.settings = settings
        self.client: LLMClient | None = None
        self.judge: Judge | None = None
        self._custom: Callable[..., PatientSimulator] | None = None
        if isinstance(settings, CustomSimulatorSettings):
            module, _, attr = settings.kind.partition(":")
            try:
                self._custom = getattr(importlib.import_module(module), attr)
            except (ImportError, AttributeError) as exc:
                raise ValueError(f"simulator kind {settings.kind!r}: cannot import {attr!r} from {module!r}: {exc}") from None
            return
        self.lexicon = load_lexicon(settings.lexicon or DEFAULT_LEXICON)
        if isinstance(settings, LLMSimulatorSettings):
            from models.backends import make_backend
            from models.modules import resolve_tokenizer

            backend = make_backend(settings.backend)
            try:
                tokenizer = resolve_tokenizer(settings.tokenizer or settings.backend.get("tokenizer")
                                              or settings.backend.get("model") or "smollm2", backend)
            except Exception:
                backend.close()
                raise
            self.client = LLMClient(backend, tokenizer, settings.adapter, settings.max_tokens, settings.temperature)
            if settings.judge == "clinical":
                self.judge = ClinicalJudge()
            elif settings.judge == "llm":
                self.judge = LLMJudge(self.client, self.lexicon)

    def new(self, card: CaseCard, seed: int) -> PatientSimulator:
        s = self.settings
        if isinstance(s, CustomSimulatorSettings):
            assert self._custom is not None
            sim = self._custom(card=card, seed=seed, **s.options)
            if not isinstance(sim, PatientSimulator):
                raise TypeError(f"simulator kind {s.kind!r} built a {type(sim).__name__} with no respond(doctor)")
            return sim
        if isinstance(s, LLMSimulatorSettings):
            assert self.client is not None
            return LLMSimulator(card, self.client, self.lexicon, seed, s.guided, self.judge, s.on_invention, s.retries,
                                volunteer_p=s.volunteer_p, short_answer_p=s.short_answer_p)
        return AgendaSimulator(card, self.lexicon, seed, s.volunteer_p, s.short_answer_p)

    def describe(self) -> dict:
        return self.settings.model_dump(mode="json")

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
