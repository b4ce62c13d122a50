"""The agenda-based patient (``simulator: {kind: agenda}``, see :mod:`eval.runs.simulators`): it reads the doctor's CMAS
actions and answers from its case card in lay words, through a generator seeded per (card, seed)."""

from __future__ import annotations

import copy
import random
import re
from dataclasses import dataclass, field
from typing import Any

from agent.core import cmas
from agent.core.ontology import Vocabulary, default_vocabulary
from eval.runs.cases import OPEN_HEADS, CaseCard, Fact, frames_state, state_facts
from eval.runs.lay_lexicon import LayLexicon, load_lexicon
from eval.runs.patient_protocol import DoctorTurn, PatientReply
from policies.nlu.answers import asked_items


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
        if self.turns == 1:  # what the greeting asked (the age and sex), then the complaint
            told = [c for base, value, checks in asked_items(actions) for c in self.answer(base, value, checks)]
            return self._reply([*told, *self.opening()], "opening")
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
        # "Do you drink alcohol? If you do, how much?": the yes first, then the amount
        out: list[Clause] = [self.status_clause(base, status, item)] if any(
            c.get("type") == "status" for c in checks) else []
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
            noun = (
                f"{self._choose(self.lex.phrases(base, item['value']).noun)} in {self.lay_location(item['location'])}"
            )
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
                    text = self._choose(lex.attributes["severity_words"]).format(
                        v=self._choose(lex.severity_words.get(v, [v]))
                    )
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
            key = {
                ("medical_history", "starting"): "history_starting",
                ("medical_history", "frequency"): "history_frequency",
                ("habit", "frequency"): "habit_frequency",
                ("medication", "frequency"): "medication_frequency",
                ("medical_test", "when"): "test_when",
            }.get((base, attr), attr)
            if attr == "impact":
                text = self._choose(lex.impact.get(v.casefold(), [f"it helps: {v}"]))
            elif attr == "respone_to":
                target = next(
                    (b for b in ("medical_history", "symptom") if v in lex.values.get(b, {})), "medical_history"
                )
                text = self._choose(lex.attributes["respone_to"]).format(v=self._choose(lex.phrases(target, v).noun))
            elif key in lex.attributes:
                text = self._choose(lex.attributes[key]).format(v=v)
            else:
                text = f"{attr.replace('_', ' ')}: {v}"
        frag = {f"{status}_{base}": [{"value": item["value"], attr: list(values) if isinstance(raw, list) else raw}]}
        return Clause(text, frag, "inform")

    # -- records: travel, occupation, residence, basic information

    def _not_working(self, record: dict, words: dict[str, list[str]]) -> Clause:
        """A patient not working says how, when the card tells it ("I'm retired", "I retired eight years ago", "I was
        working until last year"): nobody who retired says only "I'm not working at the moment"."""
        when = str(record.get("when") or "").strip()
        frag: dict = {"status": "false"}
        low = when.casefold()
        if low == "retired" and words.get("retired"):
            text = self._choose(words["retired"])
        elif low.startswith("retired") and words.get("stopped"):
            text = self._choose(words["stopped"]).format(v=when)
        elif low.startswith("until") and words.get("until"):
            text = self._choose(words["until"]).format(v=when)
        else:
            return Clause(self._choose(words["false"]), {"occupation": [frag]}, "deny")
        return Clause(text, {"occupation": [{**frag, "when": when}]}, "deny")

    def record_clauses(self, base: str, value: str, checks: list[dict]) -> list[Clause]:
        record = next((it for _, it in self.card.items(base)), None)
        words = self.lex.records.get(base, {})
        if base == "travel":
            if record is None or record.get("status") == "not_traveled":
                frag = {"travel": [{"status": "not_traveled"}]}
                return [Clause(self._choose(words["not_traveled"]), frag, "deny")]
            dest = record.get("destination") or record.get("value")
            text = (
                self._choose(words["traveled"]).format(destination=dest)
                if dest
                else self._choose(words["traveled_unnamed"])
            )
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
            keys = asked or (
                [value] if value in cmas.BASIC_KEYS else [k for k in ("age", "sex", "gender") if k in record]
            )
            out = [
                Clause(self._choose(words[k]).format(v=record[k]), {base: [{k: record[k]}]})
                for k in keys
                if k in record
            ]
            return out or [Clause(self._choose(self.lex.answers.unsure), {}, "unsure")]
        status = record.get("status")
        out = []
        if base == "occupation":
            if status == "false":
                out.append(self._not_working(record, words))
                if record.get("value"):
                    out.append(Clause(self._choose(words["former"]).format(a_value=_article(record["value"])),
                                      {base: [{"value": record["value"]}]}))
            elif record.get("value"):
                frag = {"value": record["value"], **({"status": status} if status else {})}
                out.append(
                    Clause(self._choose(words["true"]).format(a_value=_article(record["value"])), {base: [frag]})
                )
            asked = {c.get("type") for c in checks}
            for key in ("hazards", "exposure", "when"):
                said = key == "when" and status == "false"  # told with the not working (_not_working)
                if record.get(key) and not said and (key in asked or self.rng.random() < self.volunteer_p):
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
