"""The doctor-utterance reader: one doctor turn -> CMAS actions, with no model.

Why it lives in the policies layer, next to the clinical NLU: it is the clinical NLU's mirror image. The clinical NLU
reads the patient's side; this reads the doctor's side, with the same lexicon (``configs/nlu_lexicon.yaml`` through
:mod:`policies.nlu.lexicon`), the same spaCy + medspaCy (ConText) phrase matching
(:class:`agent.core.clinical_text.PhraseFinder`) and the same attribute readers (:mod:`policies.nlu.attributes`).
Its users sit above it: the fact-level NLG score (:mod:`eval.metrics.nlg_facts`) reads each generated utterance
back into facts, and ``medhx nlu-check`` (:mod:`eval.runs.nlu_check`) reads the doctor's turns to find closed
questions. It imports nothing from ``eval``.

Besides the clinical NLU's lexicon it reads the template NLG's wording inverted (``configs/nlg_lexicon.yaml``) and
question cues for check types (``configs/nlg_facts.yaml``: "when did it start" -> ``onset``); see
:class:`FactReader` for what it reads and what it leaves out on purpose.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

import yaml
from spacy.lang.en.stop_words import STOP_WORDS

from agent.core import cmas
from agent.core.clinical_text import Found, PhraseFinder
from agent.core.ontology import Vocabulary, default_vocabulary
from agent.core.paths import REPO_ROOT
from policies.nlu import attributes as attr
from policies.nlu.lexicon import CONDITION, Lexicon, default_lexicon
from policies.nlu.mentions import blood_site

DEFAULT_CUES = REPO_ROOT / "configs" / "nlg_facts.yaml"
NLG_LEXICON = REPO_ROOT / "configs" / "nlg_lexicon.yaml"

NOT_CONDITIONS = frozenset({"past experience", "similar symptoms"})
"""Medical / family history values that name no condition: questions about past episodes, not diagnoses."""
_SECOND_PERSON = [(re.compile(p), r) for p, r in (
    (r"\bmy\b", "your"), (r"\bi'm\b", "you're"), (r"\bi am\b", "you are"), (r"\bi've\b", "you've"),
    (r"\bi\b", "you"), (r"\bme\b", "you"), (r"\bmyself\b", "yourself"), (r"\bmine\b", "yours"))]
_COORDINATION = re.compile(r"^[\s,]*(?:(?:or|and|and/or|nor)[\s,]+)*(?:(?:any|the|a|an|your|some)\s+)?$", re.I)
_CACHE_SIZE = 100_000
_HOW_LONG = re.compile(r"\bhow long\b", re.I)  # "how long does it last, or is it constant?": an open question
_ELLIPSIS = re.compile(r"^\s*,?\s*(?:or|and)\s+(?:or\s+|and\s+)?([a-z'-]+)(?:\s+([a-z'-]+))?", re.I)


@dataclass
class Mention:
    """A concept named in the utterance: slot type (or ``condition``), value, char span, sentence."""

    base: str
    value: str
    start: int
    end: int
    sent: int
    text: str
    family: bool = False
    echo: bool = False
    open: bool = False
    unless_named: bool = False
    needs_check: bool = False
    checks: dict[str, list[str]] = field(default_factory=dict)
    intent: str = "inquire"

    def add_check(self, ctype: str, values: Iterable[str] = ()) -> None:
        have = self.checks.setdefault(ctype, [])
        have.extend(v for v in values if v and v not in have)


@dataclass(frozen=True)
class _CheckCue:
    kind: str
    types: dict[str, str]
    patterns: tuple[re.Pattern, ...]


@dataclass(frozen=True)
class _OpenCue:
    slot: str
    value: str
    checks: tuple[str, ...]
    unless_named: bool
    needs_check: bool
    patterns: tuple[re.Pattern, ...]


def _compile(patterns: Iterable[str]) -> tuple[re.Pattern, ...]:
    return tuple(re.compile(p, re.I) for p in patterns)


def _second_person(phrase: str) -> str:
    for pat, rep in _SECOND_PERSON:
        phrase = pat.sub(rep, phrase)
    return phrase


def _nlg_phrases(path: Path) -> list[tuple[str, str, str]]:
    """(phrase, slot type, value) from the template NLG's wording: each value's term (parentheses split off:
    "sputum (phlegm)" gives "sputum" and "phlegm") and its whole special questions (without the question mark)."""
    raw = yaml.safe_load(path.read_text()) or {}
    out = []
    for base, table in (raw.get("terms") or {}).items():
        for value, term in (table or {}).items():
            term = str(term).lower()
            inner = re.findall(r"\(([^)]*)\)", term)
            for p in [re.sub(r"\([^)]*\)", " ", term), *inner]:
                p = " ".join(re.sub(r"^(?:a|an|the)\s+", "", p.strip()).split())
                if any(w not in STOP_WORDS for w in re.findall(r"[a-z]+", p)):  # "yourself" alone names nothing
                    out.append((p, base, str(value)))
    for base, table in (raw.get("questions") or {}).items():
        for value, question in (table or {}).items():
            p = " ".join(re.sub(r"[?.!,]", " ", str(question).lower()).split())
            if p:
                out.append((p, base, str(value)))
    for value, (_, obj) in (raw.get("exposure_phrases") or {}).items():
        out.append((str(obj).lower(), "exposure", str(value)))
    return out


class FactReader:
    """Doctor utterance -> CMAS actions, by lexicon phrases and question cues; no model, about a millisecond a turn
    after a one-off pipeline load (a few seconds, on first use).

    What it reads, sentence by sentence (spaCy's sentencizer, as the clinical NLU splits):

    1. concepts: lexicon phrases (longest match wins); a condition is family history in a sentence with a family
       cue, a diagnosis (slot ``disease``) in a sentence with a diagnosis cue, else medical history; an elliptic
       coordination names a second concept ("changes in your vision or hearing");
    2. open questions: "any other medical conditions?", "are you on any medications?" -> the open value;
    3. checks: each question cue attaches its check to the nearest concept of the sentence that can take it and
       the concepts coordinated with it, else to an earlier concept of the utterance, else to the topic of the
       ``context`` turns (the patient's last turn, then the doctor's before it), else it is dropped;
       value-bearing checks (location words by a located symptom, "at work" by an exposure, "constant",
       "dry or wet") carry the words said as values.

    What it leaves out, on purpose: concepts in safety-netting advice ("if you get a fever, come back"), concepts
    the doctor only recalls ("you mentioned asthma, but ...") unless a check is about them, a leading echo of the
    patient's answer ("Six, OK."), and the symptom in "have you had a cough like this before?" (a question about
    past episodes: medical history ``past experience``, as MediTOD annotates it).
    """

    def __init__(self, cues: str | Path = DEFAULT_CUES, lexicon: Lexicon | None = None,
                 vocab: Vocabulary | None = None, nlg_lexicon: str | Path = NLG_LEXICON):
        self.cues_path = Path(cues)
        self.nlg_lexicon_path = Path(nlg_lexicon)
        self.lexicon = lexicon or default_lexicon()
        self.vocab = vocab or default_vocabulary()
        raw = yaml.safe_load(self.cues_path.read_text()) or {}
        self.extra_phrases: dict[str, dict[str, list[str]]] = raw.get("phrases") or {}
        self.located = frozenset(raw.get("located_symptoms") or [])
        self.family_cues = _compile(raw.get("family_cues") or [])
        self.follow_up_cues = _compile(raw.get("follow_up_cues") or [])
        self.diagnosis_cues = _compile(raw.get("diagnosis_cues") or [])
        self.ignore_cues = _compile(raw.get("ignore_sentences") or [])
        self.echo_cues = _compile(raw.get("echo_cues") or [])
        self.leading_echoes = _compile(raw.get("leading_echoes") or [])
        self.salutations = _compile(raw.get("salutations") or [])
        self.characteristic_words = tuple(w.lower() for w in raw.get("characteristic_words") or [])
        self.open_cues = [
            _OpenCue(o["slot"], o["value"], tuple(o.get("checks") or ()), bool(o.get("unless_named")),
                     bool(o.get("needs_check")), _compile(o["patterns"]))
            for o in raw.get("open_values") or []
        ]
        self.check_cues = [_CheckCue(kind, dict(c["types"]), _compile(c["patterns"]))
                           for kind, c in (raw.get("checks") or {}).items()]
        self._cache: dict[tuple[str, tuple], list[dict]] = {}
        for cue in self.check_cues:
            for base, ctype in cue.types.items():
                if ctype not in cmas.SLOTS[base].check_types:
                    raise ValueError(f"{self.cues_path}: checks.{cue.kind}: {ctype!r} is not a check type of {base}")
        for cue in self.open_cues:
            bases = ("medical_history", "family_history") if cue.slot == CONDITION else (cue.slot,)
            for base in bases:
                bad = [c for c in cue.checks if c not in cmas.SLOTS[base].check_types]
                if bad:
                    raise ValueError(f"{self.cues_path}: open_values {cue.value!r}: {bad} not check types of {base}")

    def describe(self) -> dict:
        return {"name": "clinical-question-reader", "cues": str(self.cues_path.relative_to(REPO_ROOT))
                if self.cues_path.is_relative_to(REPO_ROOT) else str(self.cues_path),
                "phrases": len(self._terms), "open_value_cues": len(self.open_cues),
                "check_kinds": [c.kind for c in self.check_cues]}

    # ------------------------------------------------------------------ phrases

    @cached_property
    def _terms(self) -> list[tuple[str, str, str]]:
        """(phrase, base, value): lexicon (and its second-person forms), template NLG wording, doctor phrases; the
        first source to list a phrase owns it. Medical / family history values are registered as conditions."""
        def base_of(base: str) -> str:
            return CONDITION if base in ("medical_history", "family_history") else base

        out: dict[str, tuple[str, str]] = {}
        for t in self.lexicon.terms:
            out.setdefault(t.phrase, (t.base, t.value))
        for t in self.lexicon.terms:
            out.setdefault(_second_person(t.phrase), (t.base, t.value))
        for phrase, base, value in _nlg_phrases(self.nlg_lexicon_path):
            if base in cmas.SLOTS and base not in cmas.RECORD_SLOTS:
                out.setdefault(phrase, (base_of(base), value))
        for base, table in self.extra_phrases.items():
            for value, phrases in (table or {}).items():
                for p in phrases:
                    out.setdefault(" ".join(str(p).lower().split()), (base_of(base), str(value)))
        return [(p, b, v) for p, (b, v) in out.items() if p]

    @cached_property
    def finder(self) -> PhraseFinder:
        """One spaCy + medspaCy pipeline per reader, built on first use (``default_reader`` shares one reader)."""
        return PhraseFinder((p, str(i)) for i, (p, _, _) in enumerate(self._terms))

    @cached_property
    def by_phrase(self) -> dict[str, tuple[str, str]]:
        """Phrase -> (base, value) as the reader reads it (the NLG fact score's validation picks replacement phrases
        that read back as their own value)."""
        return {p: (b, v) for p, b, v in self._terms}

    # ------------------------------------------------------------------ reading

    def read(self, text: str, context: Sequence[tuple[str, str]] | None = None) -> list[dict]:
        """CMAS actions of one doctor utterance. ``context``: earlier (speaker, text) turns, oldest first; only
        the last two are read, to resolve checks that name no concept ("when did that start?")."""
        if not isinstance(text, str) or not text.strip():
            return []
        key = (text, tuple(tuple(t) for t in (context or [])[-2:]))
        if key not in self._cache:
            if len(self._cache) >= _CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = self._read(text, list(context or [])[-2:])
        return [json.loads(json.dumps(a)) for a in self._cache[key]]

    def _strip_echo(self, text: str) -> str:
        for pat in self.leading_echoes:
            m = pat.match(text)
            if m:
                return " " * m.end() + text[m.end():]  # blank it out: offsets stay those of the text
        return text

    def mentions(self, text: str) -> tuple[list[Mention], list[tuple[int, int, str]]]:
        """Concept mentions with char spans, and the sentences as (start, end, text), before any sentence-level
        resolution (the NLG fact score's validation replaces a mention's span to make a wrong utterance)."""
        found, sents = self.finder.find(text)
        spans: list[tuple[int, int, str]] = []
        cursor = 0
        for s in sents:
            i = text.find(s, cursor)
            i = cursor if i < 0 else i
            spans.append((i, i + len(s), s))
            cursor = i + len(s)
        out: list[Mention] = []
        cursor = 0
        for f in found:
            out.append(self._mention(f, text, cursor))
            cursor = out[-1].end
        # elliptic coordination: "changes in your vision or hearing" also names "changes in your hearing"
        taken = [(m.start, m.end) for m in out]
        for m in list(out):
            words = m.text.lower().split()
            if len(words) < 2:
                continue
            e = _ELLIPSIS.match(text[m.end:])
            if not e:
                continue
            for n in (2, 1):
                tail = [w for w in e.groups()[:n] if w]
                if len(tail) < n:
                    continue
                phrase = " ".join(words[:-1] + [w.lower() for w in tail])
                start = m.end + e.start(1)
                end = m.end + (e.end(2) if n == 2 else e.end(1))
                if phrase in self.by_phrase and not any(s < end and start < t for s, t in taken):
                    base, value = self.by_phrase[phrase]
                    out.append(Mention(base, value, start, end, m.sent, text[start:end], family=m.family))
                    taken.append((start, end))
                    break
        out.sort(key=lambda m: m.start)
        return out, spans

    def _mention(self, f: Found, text: str, cursor: int) -> Mention:
        _, base, value = self._terms[int(f.key)]
        start = text.find(f.text, cursor)
        if start < 0:
            start = text.lower().find(f.text.lower(), cursor)
        start = max(start, 0)
        if base == "symptom" and value == "hemoptysis":  # "throwing up any blood?": blood from where it says
            value = blood_site(f.text, f.sentence, (f.char_start + f.char_end) // 2, text, {}) or value
        return Mention(base, value, start, start + len(f.text), f.sent, f.text, family=f.family)

    def _read(self, text: str, context: list[tuple[str, str]]) -> list[dict]:
        text = self._strip_echo(text)
        mentions, sents = self.mentions(text)
        kept: list[Mention] = []
        family_before = self._asked_family(context)
        for si, (s0, _, sentence) in enumerate(sents):
            if any(p.search(sentence) for p in self.ignore_cues):
                continue
            here = [m for m in mentions if m.sent == si]
            family = any(p.search(sentence) for p in self.family_cues) or any(m.family for m in here) or (
                family_before and any(p.search(sentence.strip()) for p in self.follow_up_cues))
            diagnosis = any(p.search(sentence) for p in self.diagnosis_cues)
            echo_spans = [(s0 + e.start(), s0 + e.end()) for p in self.echo_cues for e in p.finditer(sentence)]
            for m in here:
                m.echo = any(a <= m.start < b for a, b in echo_spans)
            here += self._open_mentions(sentence, s0, si)
            here = self._resolve(here, family, diagnosis)
            self._value_checks(here, sentence, s0)
            self._cue_checks(here, sentence, s0, kept, context)
            kept.extend(here)
        return self._actions(kept, text)

    def _asked_family(self, context: list[tuple[str, str]]) -> bool:
        """Whether the doctor's last turn in the context asked about family history."""
        doctor = [t for s, t in context if s == "doctor" and isinstance(t, str)]
        return bool(doctor) and any("family_history" in act for act in self.read(doctor[-1]))

    def _open_mentions(self, sentence: str, s0: int, si: int) -> list[Mention]:
        out = []
        for cue in self.open_cues:
            for pat in cue.patterns:
                m = pat.search(sentence)
                if m:
                    mention = Mention(cue.slot, cue.value, s0 + m.start(), s0 + m.end(), si, m.group(0), open=True,
                                      unless_named=cue.unless_named, needs_check=cue.needs_check)
                    for c in cue.checks:
                        mention.add_check(c)
                    out.append(mention)
                    break
        return out

    def _resolve(self, here: list[Mention], family: bool, diagnosis: bool) -> list[Mention]:
        """Conditions to family history / diagnosis / medical history; past-episode questions; open values that a
        named concept of the same slot makes redundant. A diagnosis cue counts only in a sentence that names a
        condition ("there might be blood in it" asks about a symptom)."""
        diagnosis = diagnosis and any(m.base in (CONDITION, "disease") and not m.open and not m.echo
                                      and m.value not in NOT_CONDITIONS for m in here)
        for m in here:
            if m.base == "disease" and not diagnosis:
                m.base = CONDITION
            if m.base == CONDITION:
                if diagnosis and not m.open and m.value not in NOT_CONDITIONS:
                    m.base, m.intent = "disease", "diagnosis"
                    if m.value not in self._disease_values:
                        m.value = " ".join(m.text.lower().split())  # a diagnosis is free text: as said
                else:
                    m.base = "family_history" if family else "medical_history"
            elif m.base == "disease":
                m.intent = "diagnosis"
            if m.base == "medical_history" and m.value == "past experience" and family:
                m.base, m.value = "family_history", "similar symptoms"
        if any(m.value in ("past experience", "similar symptoms") for m in here):
            # "have you had a cough like this before?": a question about past episodes, not about the cough now
            here = [m for m in here if m.base != "symptom" or m.open]
        if diagnosis:
            # the reasons given for a diagnosis ("related to your smoking") are not asked about
            here = [m for m in here if m.base in ("disease", "medical_test") or m.open]
        named = {m.base for m in here if not m.open and not m.echo}
        here = [m for m in here if not (m.unless_named and m.base in named)]
        # one mention per (slot, value) in a sentence; an open value with the same slot as another open one stays
        seen: dict[tuple[str, str], Mention] = {}
        out = []
        for m in here:
            key = (m.base, m.value)
            if key in seen:
                for c, v in m.checks.items():
                    seen[key].add_check(c, v)
                seen[key].echo = seen[key].echo and m.echo
                continue
            seen[key] = m
            out.append(m)
        return sorted(out, key=lambda m: m.start)

    @cached_property
    def _disease_values(self) -> frozenset[str]:
        return frozenset(str(v) for v in (self.extra_phrases.get("disease") or {}))

    def _value_checks(self, here: list[Mention], sentence: str, s0: int) -> None:
        """Checks whose words are their values: location words by a located symptom, where words by an exposure,
        duration words, characteristic options."""
        low = sentence.lower()
        located = [m for m in here if m.base == "symptom" and m.value in self.located]
        if located:
            masked = list(low)
            ids = {id(m) for m in located}
            for m in here:
                if id(m) not in ids and m.base == "symptom":
                    for i in range(max(m.start - s0, 0), min(m.end - s0, len(masked))):
                        masked[i] = " "
            places = attr.phrase_hits("".join(masked), self.lexicon.locations)
            if places:
                for m in located:
                    m.add_check("location", places)
        where = attr.where(attr.clean(sentence))
        if where:
            for m in here:
                if m.base == "exposure":
                    m.add_check("where", [where])

    def _targets(self, here: list[Mention], base_types: dict[str, str], a: int, b: int, text_of) -> list[Mention]:
        """The nearest mention that can take the check, and those coordinated with it."""
        able = [m for m in here if m.base in base_types]
        if not able:
            return []
        def dist(m: Mention) -> int:
            return 0 if m.start < b and a < m.end else (a - m.end if m.end <= a else m.start - b)
        nearest = min(able, key=dist)
        group = [nearest]
        ordered = sorted(able, key=lambda m: m.start)
        i = ordered.index(nearest)
        for step in (-1, 1):
            j = i
            while 0 <= j + step < len(ordered):
                left, right = (ordered[j + step], ordered[j]) if step < 0 else (ordered[j], ordered[j + step])
                if not _COORDINATION.match(text_of(left.end, right.start)):
                    break
                group.append(ordered[j + step])
                j += step
        return group

    def _cue_checks(self, here: list[Mention], sentence: str, s0: int, earlier: list[Mention],
                    context: list[tuple[str, str]]) -> None:
        def text_of(a: int, b: int) -> str:
            return sentence[max(a - s0, 0):max(b - s0, 0)]

        # an asked option names its attribute: "would you describe the cough as constant?" asks the duration
        duration_value = None if _HOW_LONG.search(sentence) else attr.duration(attr.clean(sentence))
        for cue in self.check_cues:
            hits = [m for p in cue.patterns for m in p.finditer(sentence)]
            if not hits or (cue.kind == "characteristics" and duration_value):
                continue
            hit = min(hits, key=lambda h: h.start())
            a, b = s0 + hit.start(), s0 + hit.end()
            targets = self._targets(here, cue.types, a, b, text_of)
            if not targets:
                before = [m for m in earlier if m.base in cue.types]
                if before:
                    targets = [before[-1]]
            if not targets and context:
                for base, value in self._topic(context, cue.types):
                    m = Mention(base, value, a, b, here[0].sent if here else -1, "", echo=False)
                    here.append(m)
                    targets.append(m)
            for m in targets:
                ctype = cue.types[m.base]
                m.add_check(ctype, [duration_value] if cue.kind == "duration" and duration_value else [])
                m.echo = False
        # characteristic options said by a symptom: "is it a dry cough", "barky or harsh"
        symptoms = [m for m in here if m.base == "symptom"]
        if symptoms and self.characteristic_words:
            low = sentence.lower()
            spans = [(m.start - s0, m.end - s0) for m in here]
            words = [(w.start(), w.group(0)) for w in re.finditer(
                r"\b(?:" + "|".join(map(re.escape, self.characteristic_words)) + r")\b", low)
                if not any(a <= w.start() < b for a, b in spans)]
            if words:
                a, b = s0 + words[0][0], s0 + words[-1][0] + len(words[-1][1])
                target = self._targets(symptoms, {"symptom": "characteristics"}, a, b, text_of)[0]
                said = []
                for pos, w in words:
                    follow = low[pos + len(w):].lstrip()
                    head = target.text.lower()
                    said.append(f"{w} {head}" if head and follow.startswith(head) and len(words) == 1 else w)
                target.add_check("characteristics", [" or ".join(dict.fromkeys(said))])
                target.echo = False

    def _topic(self, context: list[tuple[str, str]], base_types: dict[str, str]) -> list[tuple[str, str]]:
        """What the dialogue is about, for a check that names nothing: the concepts of the patient's last turn
        (not denied), else of the doctor's turn before it, that can take the check."""
        for speaker, text in reversed(context):
            if not isinstance(text, str) or not text.strip():
                continue
            if speaker == "patient":
                found, _ = self.finder.find(text)
                items = []
                for f in found:
                    _, base, value = self._terms[int(f.key)]
                    if f.status == "negative":
                        continue
                    base = ("family_history" if f.family else "medical_history") if base == CONDITION else base
                    items.append((base, value))
            else:
                items = [(b, it["value"]) for act in self.read(text) for b, its in act.items() if b != "action"
                         for it in its]
            able = [(b, v) for b, v in dict.fromkeys(items) if b in base_types and v not in cmas.OPEN_VALUES]
            if able:
                return able
        return []

    def _actions(self, mentions: list[Mention], text: str) -> list[dict]:
        by_intent: dict[str, dict[str, dict[str, dict]]] = {}
        for m in mentions:
            if m.echo or m.base not in cmas.SLOTS or (m.needs_check and not m.checks):
                continue
            items = by_intent.setdefault(m.intent, {}).setdefault(m.base, {})
            item = items.setdefault(m.value, {"value": m.value})
            allowed = cmas.SLOTS[m.base].check_types
            for ctype, values in m.checks.items():
                if ctype not in allowed:
                    continue
                checks = item.setdefault("checks", [])
                chk = next((c for c in checks if c["type"] == ctype), None)
                if chk is None:
                    chk = {"type": ctype}
                    checks.append(chk)
                if values:
                    have = chk.setdefault("values", [])
                    have.extend(v for v in values if v not in have)
        actions = [{"action": intent, **{b: list(items.values()) for b, items in slots.items()}}
                   for intent, slots in by_intent.items()]
        if actions:
            return cmas.parse_actions(actions)
        if any(p.search(text) for p in self.salutations):
            return [{"action": "nod_prompt_salutations"}]
        return [{"action": "chit-chat"}]


@lru_cache(maxsize=1)
def default_reader() -> FactReader:
    """The shared reader: its spaCy pipeline loads once per process."""
    return FactReader()
