"""A knowledge-based clinical NLU: what the patient said, as CMAS frames, in milliseconds on a CPU.

Three sources of knowledge, each from the tool made for it:

1. **Concepts**: a spaCy ``PhraseMatcher`` over the lexicon (``policies.nlu.lexicon``: lay phrases and the
   questionnaire ontology's keywords, each tied to a value the shared vocabulary knows); the longest match
   wins, so "chest pain" is not also "pain".
2. **Context**: medspaCy's ConText decides each mention's status: negated ("no fever", "never smoked"),
   uncertain ("not sure", "maybe"), about a relative ("my brother had a heart attack": family history).
   Its clinical-note rules are extended with conversational cues (``agent.clinical_text``, shared with the
   red-flag phrase rules).
3. **The dialogue**: the doctor's last action says what was asked, so a short answer ("No.", "About a
   week.", "On the left.") becomes a frame about the asked items and their asked attributes.

Attribute values (onset, severity, factors...) come from ``policies.nlu.attributes``. Every frame is
strict CMAS (``agent.cmas.parse_nlu``) and every medical value is one the vocabulary knows.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from functools import cached_property

from agent import cmas
from agent.clinical_text import PhraseFinder
from agent.ontology import Vocabulary, default_vocabulary
from agent.protocol import ModuleOutput, TurnContext
from policies.nlu import attributes as attr
from policies.nlu.lexicon import CONDITION, Lexicon, default_lexicon

OPEN_VALUES = frozenset({"other", "none", "all", "general", "any", ""})
TEST_STATUS = {"negative": "unavail", "unknown": "unknown", "positive": "avail"}

# Cough characteristics people name -> the dataset's values.
_COUGH_KIND = {"dry": "dry cough", "wet": "wet cough", "productive": "wet cough", "phlegm": "wet cough",
               "sputum": "wet cough", "mucus": "wet cough", "barky": "barky", "barking": "barky", "harsh": "harsh",
               "hacking": "hacking"}


@dataclass
class Mention:
    base: str  # CMAS slot type (condition already resolved)
    value: str
    status: str  # positive / negative / unknown
    sent: int
    start: int
    relation: str | None = None
    sentence: str = ""  # the sentence as written
    char_start: int = 0  # the mention's place in it
    char_end: int = 0


@dataclass
class Frame:
    """The slots of one utterance while they are built: (prefix slot name, value) -> item."""

    items: dict[tuple[str, str], dict] = field(default_factory=dict)
    records: dict[str, dict] = field(default_factory=dict)

    def item(self, base: str, value: str, status: str) -> dict:
        spec = cmas.SLOTS[base]
        if spec.statuses and status not in spec.statuses:
            status = TEST_STATUS.get(status, status) if base == "medical_test" else "positive"
        name = f"{status}_{base}"
        for (n, v), it in list(self.items.items()):  # one status per value: the later, more specific word wins
            if v == value and n != name and n.endswith(f"_{base}"):
                self.items.pop((n, v))
                self.items[(name, value)] = it
                return it
        return self.items.setdefault((name, value), {"value": value})

    def record(self, base: str) -> dict:
        return self.records.setdefault(base, {})

    def slots(self) -> dict:
        out: dict[str, list] = {}
        for (name, _), item in self.items.items():
            out.setdefault(name, []).append(item)
        for base, rec in self.records.items():
            if rec:
                out[base] = [rec]
        return out


_COORDINATED = re.compile(r"^[\s,]*(?:and|or|&|/)?[\s,]*(?:a|an|the|some|my|any|also)?\s*$", re.I)
_BOUNDARY = re.compile(r"[,;:]|\b(?:and|but|or|while|whereas|plus|then|also|as well as)\b", re.I)


def segments(mentions: list[Mention]) -> dict[int, str]:
    """The part of its sentence that each mention's attributes are read from, by ``id(mention)``.

    A sentence that names several things says each one's details next to it: "a fever since yesterday and a cough
    for about a week" gives the fever "since yesterday" and the cough "about a week". The words between two
    mentions are split at the last clause boundary between them (a comma, "and", "but"...): what precedes it
    belongs to the first, the rest (pre-modifiers such as "green" in "green phlegm") to the second. Mentions joined
    by a bare conjunction ("a cough and fever for a week") are one group and share their words."""
    out: dict[int, str] = {}
    by_sent: dict[int, list[Mention]] = {}
    for m in mentions:
        by_sent.setdefault(m.sent, []).append(m)
    for ms in by_sent.values():
        ms = sorted(ms, key=lambda m: m.char_start)
        sentence = ms[0].sentence
        groups: list[list[Mention]] = [[ms[0]]]
        cuts = [0]
        for prev, nxt in zip(ms, ms[1:], strict=False):
            gap = sentence[prev.char_end:nxt.char_start]
            if nxt.char_start <= prev.char_end or _COORDINATED.match(gap):
                groups[-1].append(nxt)
                continue
            bounds = list(_BOUNDARY.finditer(gap))
            last = bounds[-1] if bounds else None
            cuts.append(prev.char_end + (last.start() if last else 0))
            groups.append([nxt])
        cuts.append(len(sentence))
        for i, group in enumerate(groups):
            part = sentence[cuts[i]:cuts[i + 1]]
            for m in group:
                out[id(m)] = attr.clean(part)
    return out


def _set(item: dict, key: str, value: object) -> None:
    if value in (None, "", []):
        return
    if isinstance(value, list):
        merged = list(item.get(key) or [])
        merged.extend(v for v in value if v not in merged)
        item[key] = merged
    else:
        item[key] = value


class ClinicalNLU:
    """The ``clinical`` NLU kind. ``understand`` reads ``ctx.turns[-1]`` (the patient), the doctor's last
    actions (``ctx.past_actions[-1]``) and the state (to keep the status of an item being elaborated)."""

    def __init__(self, lexicon: Lexicon | None = None, vocab: Vocabulary | None = None):
        self.lexicon = lexicon or default_lexicon()
        self.vocab = vocab or default_vocabulary()

    # ------------------------------------------------------------------ mentions

    @cached_property
    def finder(self) -> PhraseFinder:
        self._terms = {f"T{i}": (t.base, t.value) for i, t in enumerate(self.lexicon.terms)}
        return PhraseFinder((t.phrase, f"T{i}") for i, t in enumerate(self.lexicon.terms))

    def mentions(self, text: str) -> tuple[list[Mention], list[str]]:
        """Concept mentions with their status, and the utterance's sentences (cleaned, in order)."""
        found, sents = self.finder.find(text)
        out = []
        for f in found:
            base, value = self._terms[f.key]
            relation = self._relation(f.sentence.lower()) if f.family else None
            if base == CONDITION:
                base = "family_history" if relation else "medical_history"
            elif relation and base == "symptom":
                # a relative with the symptom: someone sick around the patient
                base, value = "exposure", "sick person"
            out.append(Mention(base, value, f.status, f.sent, f.start, relation, f.sentence, f.char_start, f.char_end))
        return out, [attr.clean(s) for s in sents]

    def _relation(self, sentence: str) -> str | None:
        for word in self.lexicon.relations:
            if re.search(rf"\b{re.escape(word)}\b", sentence):
                return word
        return None

    # ------------------------------------------------------------------ the dialogue

    def answer_polarity(self, text: str) -> str | None:
        """affirm / deny / unsure when the utterance opens with (or is) such an answer, else None."""
        t = attr.clean(text)
        t = re.sub(r"^(?:oh|well|so|okay|ok|hmm|and|i mean)\b[,\s]*", "", t)
        best: tuple[int, str] | None = None
        for kind in ("unsure", "deny", "affirm"):  # "not sure" before "not", "no" before "yes"
            for phrase in self.lexicon.answers[kind]:
                if re.match(rf"{re.escape(phrase)}(?![\w'])", t) and (best is None or len(phrase) > best[0]):
                    best = (len(phrase), kind)
        if best:
            return best[1]
        head = " ".join(t.split()[:6])
        for kind in ("unsure", "deny"):
            for phrase in self.lexicon.answers[kind]:
                if len(phrase.split()) > 1 and re.search(rf"\b{re.escape(phrase)}\b", head):
                    return kind
        return None

    @staticmethod
    def asked_items(actions: list[dict]) -> list[tuple[str, str, list[dict]]]:
        """(slot type, value, checks) of every item the doctor's last inquire actions asked about."""
        out = []
        for act in actions or []:
            if act.get("action") != "inquire":
                continue
            for base, items in act.items():
                if base == "action" or base not in cmas.SLOTS:
                    continue
                for it in items or []:
                    out.append((base, str(it.get("value", "")), list(it.get("checks") or [])))
        return out

    # ------------------------------------------------------------------ the module protocol

    def understand(self, ctx: TurnContext) -> ModuleOutput:
        t0 = time.perf_counter()
        text = ctx.turns[-1][1] if ctx.turns else ""
        doctor = ctx.turns[-2][1] if len(ctx.turns) > 1 and ctx.turns[-2][0] == "doctor" else ""
        last_actions = ctx.past_actions[-1] if ctx.past_actions and doctor else []
        frames = self.frames(text, last_actions, ctx.state, doctor)
        return ModuleOutput(value=frames, meta={"nlu": "clinical", "latency_s": round(time.perf_counter() - t0, 6)})

    def frames(self, text: str, last_actions: list[dict] | None = None, state: dict | None = None,
               doctor: str = "") -> list[dict]:
        """CMAS frames of one patient utterance, given the doctor's last actions and utterance and the state."""
        state = state or {}
        frame = Frame()
        mentions, sents = self.mentions(text) if text.strip() else ([], [])
        whole = attr.clean(text)
        asked = self.asked_items(last_actions or [])
        if doctor and re.search(r"\b(rate|scale|out of (?:10|ten)|1 to 10|one to ten|zero to ten|0 to 10)\b", doctor.lower()):
            asked = [(b, v, [*c, {"type": "severity"}]) if b == "symptom" else (b, v, c) for b, v, c in asked]
        self._resolve_pain(mentions, state)
        for m in mentions:
            item = frame.item(m.base, m.value, self._status(m, state))
            if m.base == "family_history" and m.relation:
                item["relation"] = m.relation
        self._attributes(frame, mentions, sents, whole, asked, state)
        self._records(frame, text, whole, asked)
        self._answer(frame, text, sents, mentions, asked, state, doctor)
        self._drop_known(frame, state, asked)
        slots = frame.slots()
        if slots:
            return cmas.parse_nlu([{"intent": "inform", "slots": slots}])
        return cmas.parse_nlu([{"intent": self._intent(whole)}])

    @staticmethod
    def _resolve_pain(mentions: list[Mention], state: dict) -> None:
        """"The pain" is the pain already being talked about: a specific pain named in the same utterance, else the
        latest one in the state ("I take ibuprofen for the pain" after chest pain is about the chest pain)."""
        specific = [m.value for m in mentions if m.base == "symptom" and m.value != "pain" and "pain" in m.value]
        known = [it["value"] for it in state.get("positive_symptom") or [] if "pain" in str(it.get("value", ""))
                 and it.get("value") != "pain"]
        target = specific[0] if specific else known[-1] if known else None
        if target is None:
            return
        for m in mentions:
            if m.base == "symptom" and m.value == "pain":
                m.value = target

    def _drop_known(self, frame: Frame, state: dict, asked: list) -> None:
        """What the state already holds is no news: a re-mention with nothing new is not an inform (MediTOD
        annotates "Yeah yeah." about a known habit as a nod). An answer to a question keeps what it said."""
        asked_values = {(b, v) for b, v, _ in asked}
        for (name, value), item in list(frame.items.items()):
            before = next((it for it in state.get(name) or [] if it.get("value") == value), None)
            if before is None:
                continue
            extra = {k: v for k, v in item.items() if k != "value"}
            new = {k: v for k, v in extra.items() if before.get(k) != v}
            base = cmas.split_slot_name(name)[1]
            if not extra or (not new and (base, value) not in asked_values):
                del frame.items[(name, value)]

    def _status(self, m: Mention, state: dict) -> str:
        if m.base == "medical_test":
            return TEST_STATUS[m.status]
        return m.status

    def _intent(self, whole: str) -> str:
        t = re.sub(r"[^\w\s']", " ", whole)
        t = f" {' '.join(t.split())} "
        for phrase in sorted(self.lexicon.acknowledgements, key=len, reverse=True):
            t = t.replace(f" {phrase} ", " ")
        if not t.strip():
            return "nod_prompt_salutations"
        return "chit-chat"

    # ------------------------------------------------------------------ attributes of what was said

    def _symptom_attributes(self, clause: str, value: str, asked_checks: set[str]) -> dict:
        out: dict = {}
        _set(out, "onset", attr.onset(clause, asked="onset" in asked_checks))
        _set(out, "duration", attr.duration(clause))
        _set(out, "frequency", attr.frequency(clause))
        _set(out, "severity", attr.severity(clause, asked="severity" in asked_checks))
        prog = attr.progression(clause)
        if prog and not (prog.endswith("worse over time") and re.search(r"\bworse (?:at|in|when|with|after|if|on)\b", clause)):
            _set(out, "progression", prog)
        for key, values in attr.factors(clause, self.lexicon.factors).items():
            _set(out, key, [v for v in values if not self.vocab.same("symptom", v, value)])
        if self.vocab.same("symptom", value, "colored/excess sputum"):
            _set(out, "color", attr.color(clause))
            _set(out, "volume", attr.volume(clause))
        if "pain" in value or value in ("swelling", "dermatologic problem", "paresthesia", "weak limbs") or \
                "location" in asked_checks:
            _set(out, "location", [x for x in attr.phrase_hits(clause, self.lexicon.locations)
                                   if x not in value])  # "chest pain" located in the chest says nothing new
        if value != "coughing" and ("characteristics" in asked_checks or "pain" in value):
            _set(out, "positive_characteristics", attr.phrase_hits(clause, self.lexicon.characteristics))
        if value == "coughing":
            kinds = [v for k, v in _COUGH_KIND.items() if re.search(rf"\b{k}\b", clause)]
            if kinds and ("characteristics" in asked_checks or re.search(r"\b(dry|wet|productive|barky|harsh)\b", clause)):
                _set(out, "positive_characteristics", list(dict.fromkeys(kinds)))
        return out

    def _attributes(self, frame: Frame, mentions: list[Mention], sents: list[str], whole: str,
                    asked: list[tuple[str, str, list[dict]]], state: dict) -> None:
        asked_checks = {c.get("type") for _, _, checks in asked for c in checks}
        by_sent: dict[int, list[Mention]] = {}
        for m in mentions:
            by_sent.setdefault(m.sent, []).append(m)
        part = segments(mentions)
        last_symptoms: list[Mention] = []
        for i, sentence in enumerate(sents):
            here = by_sent.get(i, [])
            symptoms = [m for m in here if m.base == "symptom" and m.status != "negative"]
            carried = not here and last_symptoms  # "It started a week ago." is about what was just named
            for m in symptoms or (last_symptoms if carried else []):
                item = frame.item("symptom", m.value, self._status(m, state))
                clause = sentence if carried else part.get(id(m), sentence)
                for k, v in self._symptom_attributes(clause, m.value, asked_checks).items():
                    _set(item, k, v)
            self._share_trailing_time(frame, symptoms, state)
            values = {m.value for m in symptoms}
            if "coughing" in values and any(self.vocab.same("symptom", v, "colored/excess sputum") for v in values):
                _set(frame.item("symptom", "coughing", "positive"), "positive_characteristics", ["wet cough"])
            if symptoms:
                last_symptoms = symptoms
            for m in here:
                clause = part.get(id(m), sentence)
                if m.base == "habit" and m.status == "positive":
                    item = frame.item("habit", m.value, "positive")
                    _set(item, "frequency", attr.frequency(clause))
                    if re.search(r"\b(since|for|started|ago)\b", clause) or "starting" in asked_checks:
                        _set(item, "starting", attr.onset(clause, asked="starting" in asked_checks))
                elif m.base == "medication" and m.status == "positive":
                    item = frame.item("medication", m.value, "positive")
                    _set(item, "frequency", attr.frequency(clause))
                    if re.search(r"\b(help|helps|helped|helping|work|worked|better|difference|relief)\b", clause):
                        _set(item, "impact", attr.impact(clause))
                    # what it is taken for is named after "for", usually outside the medication's own words
                    cond = [x for x in here if x.base in ("medical_history", "symptom") and x.status == "positive"]
                    if cond and re.search(r"\bfor\b", sentence):
                        _set(item, "respone_to", cond[0].value)
                elif m.base == "exposure":
                    item = frame.item("exposure", m.value, m.status)
                    _set(item, "where", attr.where(clause))

    def _share_trailing_time(self, frame: Frame, symptoms: list[Mention], state: dict) -> None:
        """"A cough that's been getting worse, and short of breath for the last few months": a time said once, after
        several symptoms, dates the earlier ones that have no time of their own. Only onset travels back, and only
        to symptoms named before it in the same sentence (a later symptom's "since yesterday" stays its own)."""
        ordered = sorted(symptoms, key=lambda m: m.char_start)
        items = [frame.item("symptom", m.value, self._status(m, state)) for m in ordered]
        for i, item in enumerate(items):
            if "onset" in item:
                for earlier in items[:i]:
                    earlier.setdefault("onset", item["onset"])
                break

    # ------------------------------------------------------------------ records

    def _records(self, frame: Frame, text: str, whole: str, asked: list) -> None:
        asked_bases = {b for b, _, _ in asked}
        a = attr.age(whole) or (attr.bare_age(whole) if "basic_information" in asked_bases else None)
        if a and ("basic_information" in asked_bases or "years old" in whole):
            frame.record("basic_information")["age"] = a
        if s := attr.sex(whole):
            frame.record("basic_information")["sex"] = s
        if (home := attr.dwelling(whole)) is not None:
            rec = frame.record("residence")
            rec.update({"value": home, "status": "living"})
        if (j := attr.job(whole, asked="occupation" in asked_bases)) is not None:
            frame.record("occupation").update({"value": j, "status": "true"})
        if attr.travel(whole):
            rec = frame.record("travel")
            negated = re.search(r"\b(no|not|haven't|didn't|never|nowhere)\b", whole)
            rec["status"] = "not_traveled" if negated else "traveled"
            if not negated and (dest := attr.destination(text)):
                rec["destination"] = dest

    # ------------------------------------------------------------------ short answers to the last question

    def _answer(self, frame: Frame, text: str, sents: list[str], mentions: list[Mention],
                asked: list[tuple[str, str, list[dict]]], state: dict, doctor: str) -> None:
        if not asked:
            return
        polarity = self.answer_polarity(text)
        said = {(m.base, m.value) for m in mentions}
        status = {"affirm": "positive", "deny": "negative", "unsure": "unknown"}.get(polarity or "")
        named = [(b, v) for b, v, _ in asked if any(sb == b and self.vocab.same(b, sv, v) for sb, sv in said)]
        # "What do you take it for?" - "It's for my asthma": what the answer names is the purpose, else the doctor's topic
        named_purpose = next((m.value for m in mentions if m.base in ("medical_history", "symptom")
                              and m.status == "positive"), None)
        topic = named_purpose or self._doctor_topic(doctor)
        doctor_factors = self._doctor_factors(doctor, polarity)
        for base, value, checks in asked:
            spec = cmas.SLOTS[base]
            if not spec.medical:
                self._answer_record(frame, base, checks, polarity)
                continue
            if value.casefold() in OPEN_VALUES:
                if value.casefold() == "all" and base == "symptom":
                    for it in state.get("positive_symptom") or []:
                        self._answer_checks(frame, base, it["value"], checks, sents, "positive", polarity, topic)
                elif base == "medication" and topic:
                    for (name, _), item in frame.items.items():
                        if name == "positive_medication" and "respone_to" not in item:
                            item["respone_to"] = topic
                continue
            if (base, value) in named:
                # the patient named it: the mention's status stands; the asked check values still apply
                for (name, v), item in frame.items.items():
                    if v == value and name.endswith(base):
                        self._check_values(item, checks, base)
                continue
            if named:
                continue  # "Yeah, I've had a fever" to "fever or chills?" says nothing about chills
            if polarity == "affirm" and any(m.base == "symptom" and m.status == "positive" for m in mentions):
                continue  # "Yes, I feel sick" to "any cough?" - the yes is about what they named
            known = self._state_status(state, base, value)
            busy = {m.sent for m in mentions if not (m.base == base and self.vocab.same(base, m.value, value))}
            extracted = self._answer_checks(frame, base, value, checks, sents, None, polarity, topic, busy=busy)
            attribute_question = any(c.get("type") not in ("value", "status") and not c.get("values") for c in checks)
            if known == "positive" and not checks and status == "negative" and not extracted:
                continue  # "is the pain radiating?" - "No": the patient still has the pain
            if known and base == "symptom" and doctor_factors and not extracted and \
                    any(c.get("type") == "ana_factors" for c in checks):
                item = frame.item(base, value, known)
                for k, v in doctor_factors.items():
                    _set(item, k, v)
                continue
            if known and attribute_question:
                # "does anything make it worse?" - "No": says nothing about having the symptom
                item_status = known if extracted else None
            else:
                item_status = status or ((known or "positive") if extracted else None)
            if item_status is None:
                continue
            if base == "medical_test":
                item_status = TEST_STATUS.get(item_status, item_status)
            self._answer_checks(frame, base, value, checks, sents, item_status, polarity, topic, busy=busy)

    def _doctor_factors(self, doctor: str, polarity: str | None) -> dict[str, list[str]]:
        """"Does lying down make it worse?" - "Yes": the factor is the doctor's, the answer the patient's."""
        if polarity not in ("affirm", "deny") or not doctor:
            return {}
        asked = attr.factors(attr.clean(doctor), self.lexicon.factors)
        out = {}
        for key, values in asked.items():
            key = key.removeprefix("not_")
            out[key if polarity == "affirm" else f"not_{key}"] = values
        return out

    def _doctor_topic(self, doctor: str) -> str | None:
        """The symptom or condition the doctor's utterance is about ("anything for this cough?"): what a
        medication the patient names is taken for."""
        if not doctor.strip():
            return None
        for m in self.mentions(doctor)[0]:
            if m.base in ("symptom", "medical_history"):
                return m.value
        return None

    @staticmethod
    def _state_status(state: dict, base: str, value: str) -> str | None:
        for status in cmas.SLOTS[base].statuses:
            if any(it.get("value") == value for it in state.get(f"{status}_{base}") or []):
                return status
        return None

    def _check_values(self, item: dict, checks: list[dict], base: str) -> None:
        """A yes/no answer to "any pain in your abdomen?" confirms or denies it *there*: the asked values."""
        spec = cmas.SLOTS[base]
        for c in checks:
            kind, values = c.get("type"), c.get("values") or []
            if not values:
                continue
            if kind in ("location",) and kind in spec.lists:
                _set(item, kind, list(values))
            elif kind in ("where", "duration") and kind in spec.scalar and item.get(kind) is None:
                item[kind] = values[0]

    def _answer_checks(self, frame: Frame, base: str, value: str, checks: list[dict], sents: list[str],
                       status: str | None, polarity: str | None, topic: str | None = None,
                       busy: set[int] | None = None) -> bool:
        """Attributes the answer gives for the asked checks, applied to the item when ``status`` is given; whether
        there are any."""
        found: dict = {}
        kinds = {c.get("type") for c in checks}
        whole = " ".join(sents)
        if base == "symptom":
            for i, clause in enumerate(sents):
                if i in (busy or set()):
                    continue  # "I smoke a pack a day" answers nothing about the asked cough
                for k, v in self._symptom_attributes(clause, value, kinds).items():
                    wanted = (k in kinds or k in ("onset", "severity", "progression", "duration", "frequency")
                              or k.endswith("factor")
                              or (k.endswith("characteristics") and "characteristics" in kinds))
                    if wanted:
                        _set(found, k, v)
            for c in checks:
                if c.get("type") == "characteristics" and c.get("values") and "positive_characteristics" not in found:
                    options = [o.strip() for v in c["values"] for o in re.split(r"\bor\b|,", v)]
                    said = [o for o in options if o and re.search(rf"\b{re.escape(o.split()[0])}\b", whole)]
                    if said:
                        found["positive_characteristics"] = [_COUGH_KIND.get(o.split()[0], o) if value == "coughing" else o
                                                             for o in said]
                if c.get("type") == "duration" and c.get("values") and polarity == "affirm":
                    found.setdefault("duration", c["values"][0])
        elif base in ("habit", "medical_history"):
            key = "starting"
            if kinds & {"starting", "onset", "when"} and (v := attr.onset(whole, asked=True)):
                found[key] = v
            if "frequency" in kinds and (v := attr.frequency(whole)):
                found["frequency"] = v
            if base == "habit" and (v := attr.frequency(whole)):
                found["frequency"] = v
        elif base == "medication":
            if "frequency" in kinds and (v := attr.frequency(whole)):
                found["frequency"] = v
            if kinds & {"impact", "respone_to"} and (v := attr.impact(whole)):
                found["impact"] = v
            if "respone_to" in kinds and topic:
                found["respone_to"] = topic
        elif base == "family_history" and "relation" in kinds and (r := self._relation(whole)):
            found["relation"] = r
        elif base == "exposure" and (w := attr.where(whole)):
            found["where"] = w
        if status is None:
            return bool(found)
        item = frame.item(base, value, status)
        for k, v in found.items():
            _set(item, k, v)
        self._check_values(item, checks, base)
        return bool(found)

    def _answer_record(self, frame: Frame, base: str, checks: list[dict], polarity: str | None) -> None:
        if base == "travel" and polarity in ("deny", "affirm") and "travel" not in frame.records:
            frame.record("travel")["status"] = "not_traveled" if polarity == "deny" else "traveled"
