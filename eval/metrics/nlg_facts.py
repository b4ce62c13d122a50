"""Fact-level NLG score: read each generated doctor utterance back into CMAS and compare its facts with the
planned action's facts (after imapScore, Wang et al.: score generated text by the medical facts it carries, not by
its words).

Why: BLEU / ROUGE / BERTScore reward wording. A doctor turn that asks "when did the cough start?" when the plan was
"when did the shortness of breath start?" shares almost every word with the right question and is still the wrong
question. Reading facts back out of the text and comparing them with the action the NLG was told to say scores
what matters: did the utterance ask about the planned item and the planned attribute.

Pieces:

- :class:`FactReader` reads one doctor utterance into CMAS actions with no model: concept phrases from the clinical
  NLU's lexicon (``configs/nlu_lexicon.yaml``, matched by :class:`agent.core.clinical_text.PhraseFinder`, the same
  spaCy + medspaCy machinery the clinical NLU uses), the template NLG's wording inverted (``configs/nlg_lexicon.yaml``)
  and question cues for check types (``configs/nlg_facts.yaml``: "when did it start" -> ``onset``).
- :func:`action_facts` unrolls actions into facts, canonical and non-canonical apart.
- :func:`score_nlg_facts` scores a prediction set (micro precision / recall / F1); :func:`turn_fact_f1` one turn.
- :func:`validate` checks on the shared dialogues that the score separates a turn's own action from another turn's
  and ranks a deliberately wrong utterance below the right one (``python3 -m eval.metrics.nlg_facts --validate``).

Facts of one turn (actions in prefix or attribute form alike):

- ``(family, value)``, ``(family, value, check type)``, ``(family, value, check type, check value)`` for medical
  slots; ``family`` is the slot type with any status prefix removed (``positive_symptom`` and the doctor's
  ``symptom`` are one family: an utterance asks about a symptom, it does not assert its status);
- record slots (travel, occupation, residence, basic_information): ``(family, value)``, ``(family, check type)``,
  ``(family, check type, check value)``: as in MediTOD's official POL unrolling, a record's checks are not keyed
  by its (free-text, often open) value.

Canonical (compared exactly): medical head values, put through the shared vocabulary (``coughing`` and ``cough``
are one code), check types, and the check values of the attributes MediTOD canonicalises (``SlotSpec.canonical``:
location, severity, progression, ...; ``status`` of records). Non-canonical (compared by the pluggable matcher of
:mod:`eval.metrics.matching`, exact by default): record values, ``disease`` values (diagnoses are free text: "chronic
bronchitis"), and the other check values (duration "constant", characteristics "dry or wet", where "at work").
Checks of type ``value`` / ``status`` on a medical item restate the item ("do you have X?") and add no fact.
The intent of an action is not a fact: an action without slots (chit-chat, salutations) has no facts.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import yaml

from agent.core import cmas
from agent.core.clinical_text import Found, PhraseFinder
from agent.core.data import DEFAULT_DATA_DIR, Example, load_dialogues, nlg_examples
from agent.core.ontology import Vocabulary, default_vocabulary
from agent.core.paths import REPO_ROOT
from eval.metrics.matching import ExactMatcher, Matcher, count_matches, values_to_compare
from eval.metrics.tuples import normalize_value
from policies.nlu import attributes as attr
from policies.nlu.lexicon import CONDITION, Lexicon, default_lexicon

DEFAULT_CUES = REPO_ROOT / "configs" / "nlg_facts.yaml"
NLG_LEXICON = REPO_ROOT / "configs" / "nlg_lexicon.yaml"

OPEN_VALUES = cmas.OPEN_VALUES
"""Head values that name no concept (an open question); never chosen as the target of a wrong utterance."""
_NOT_CONDITIONS = frozenset({"past experience", "similar symptoms"})
_SECOND_PERSON = [(re.compile(p), r) for p, r in (
    (r"\bmy\b", "your"), (r"\bi'm\b", "you're"), (r"\bi am\b", "you are"), (r"\bi've\b", "you've"),
    (r"\bi\b", "you"), (r"\bme\b", "you"), (r"\bmyself\b", "yourself"), (r"\bmine\b", "yours"))]
_CHECK_GROUP = {name: group for group, names in cmas.CHECK_ATTRIBUTES.items() for name in names}
_COORDINATION = re.compile(r"^[\s,]*(?:(?:or|and|and/or|nor)[\s,]+)*(?:(?:any|the|a|an|your|some)\s+)?$", re.I)
_CACHE_SIZE = 100_000
_HOW_LONG = re.compile(r"\bhow long\b", re.I)  # "how long does it last, or is it constant?": an open question
_ELLIPSIS = re.compile(r"^\s*,?\s*(?:or|and)\s+(?:or\s+|and\s+)?([a-z'-]+)(?:\s+([a-z'-]+))?", re.I)


# --------------------------------------------------------------------------- facts


def slot_family(slot: str) -> str | None:
    """``positive_symptom`` / ``symptom`` -> ``symptom``; ``None`` for a slot CMAS does not know."""
    try:
        return cmas.split_slot_name(slot)[1]
    except KeyError:
        return None


def check_type(family: str, ctype: Any) -> str | None:
    """A check type as a fact: state attribute names fold into the doctor's check groups
    (``aggravating_factor`` -> ``ana_factors``, ``positive_characteristics`` -> ``characteristics``)."""
    if not isinstance(ctype, str) or not ctype.strip():
        return None
    ctype = ctype.strip().lower()
    return _CHECK_GROUP.get(ctype, ctype) if family == "symptom" else ctype


def head_value(family: str, value: str, vocab: Vocabulary | None = None) -> str:
    """A medical head value as a fact: its vocabulary code when it has one (``coughing`` -> ``cough``), else the
    value lower-cased with whitespace folded."""
    value = normalize_value(value)
    if family in cmas.RECORD_SLOTS or family == "disease":
        return value
    code = (vocab or default_vocabulary()).code(family, value)
    return normalize_value(code) if code else value


def action_facts(actions: Any, vocab: Vocabulary | None = None) -> tuple[set, set]:
    """``(canonical, non_canonical)`` fact sets of one turn's actions (see the module docstring).

    Tolerant of what a model writes: a dict is one action, unknown slots and malformed items are skipped,
    slot names may carry a status prefix."""
    vocab = vocab or default_vocabulary()
    canonical: set = set()
    non_canonical: set = set()
    if isinstance(actions, dict):
        actions = [actions]
    if not isinstance(actions, list):
        return canonical, non_canonical
    for act in actions:
        if not isinstance(act, dict):
            continue
        for slot, items in act.items():
            family = slot_family(slot) if slot != "action" else None
            if family is None or not isinstance(items, list):
                continue
            spec = cmas.SLOTS[family]
            record = family in cmas.RECORD_SLOTS
            for item in items:
                if not isinstance(item, dict):
                    continue
                value = item.get("value")
                head = head_value(family, value, vocab) if isinstance(value, str) and value.strip() else None
                if head is not None:
                    (non_canonical if record or family == "disease" else canonical).add((family, head))
                checks = item.get("checks")
                for chk in checks if isinstance(checks, list) else []:
                    if not isinstance(chk, dict):
                        continue
                    ctype = check_type(family, chk.get("type"))
                    if ctype is None or (not record and ctype in ("value", "status")):
                        continue
                    if not record and head is None:
                        continue
                    where = (family, ctype) if record else (family, head, ctype)
                    canonical.add(where)
                    values = chk.get("values")
                    for v in values if isinstance(values, list) else []:
                        if isinstance(v, str) and v.strip():
                            (canonical if ctype in spec.canonical else non_canonical).add((*where, normalize_value(v)))
    return canonical, non_canonical


# --------------------------------------------------------------------------- the reader


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
                if p:
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
    def _by_phrase(self) -> dict[str, tuple[str, str]]:
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

    def _mentions(self, text: str) -> tuple[list[Mention], list[tuple[int, int, str]]]:
        """Concept mentions with char spans, and the sentences as (start, end, text)."""
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
                if phrase in self._by_phrase and not any(s < end and start < t for s, t in taken):
                    base, value = self._by_phrase[phrase]
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
        return Mention(base, value, start, start + len(f.text), f.sent, f.text, family=f.family)

    def _read(self, text: str, context: list[tuple[str, str]]) -> list[dict]:
        text = self._strip_echo(text)
        mentions, sents = self._mentions(text)
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
                                      and m.value not in _NOT_CONDITIONS for m in here)
        for m in here:
            if m.base == "disease" and not diagnosis:
                m.base = CONDITION
            if m.base == CONDITION:
                if diagnosis and not m.open and m.value not in _NOT_CONDITIONS:
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
            able = [(b, v) for b, v in dict.fromkeys(items) if b in base_types and v not in OPEN_VALUES]
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


# --------------------------------------------------------------------------- scoring


@dataclass
class FactCounts:
    """Matched, gold and predicted fact counts (canonical + non-canonical) of one or many turns."""

    tp: float = 0
    gold: int = 0
    pred: int = 0
    tp_canonical: float = 0
    gold_canonical: int = 0
    pred_canonical: int = 0

    def __iadd__(self, other: FactCounts) -> FactCounts:
        for k in ("tp", "gold", "pred", "tp_canonical", "gold_canonical", "pred_canonical"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        return self

    @staticmethod
    def _prf(tp: float, gold: int, pred: int) -> dict[str, float]:
        p = tp / pred if pred else 0.0
        r = tp / gold if gold else 0.0
        return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}

    @property
    def f1(self) -> float:
        """Per-turn F1 (= 2 tp / (gold + pred)); 1.0 when neither side has a fact (nothing planned, nothing said)."""
        return 2 * self.tp / (self.gold + self.pred) if self.gold + self.pred else 1.0

    def report(self) -> dict:
        return {
            **self._prf(self.tp, self.gold, self.pred),
            "canonical": self._prf(self.tp_canonical, self.gold_canonical, self.pred_canonical),
            "non_canonical": self._prf(self.tp - self.tp_canonical, self.gold - self.gold_canonical,
                                       self.pred - self.pred_canonical),
        }


def text_facts(text: Any, reader: FactReader | None = None,
               context: Sequence[tuple[str, str]] | None = None) -> tuple[set, set]:
    """Facts of a doctor utterance, as the reader reads it (a non-string is an empty utterance)."""
    reader = reader or default_reader()
    return action_facts(reader.read(text if isinstance(text, str) else "", context), reader.vocab)


def _count(gold: tuple[set, set], pred: tuple[set, set], matcher: Matcher) -> FactCounts:
    tp_c = len(gold[0] & pred[0])
    tp_n = count_matches(gold[1], pred[1], matcher)
    return FactCounts(tp_c + tp_n, len(gold[0]) + len(gold[1]), len(pred[0]) + len(pred[1]),
                      tp_c, len(gold[0]), len(pred[0]))


def turn_fact_counts(actions: Any, text: Any, matcher: Matcher | None = None, reader: FactReader | None = None,
                     context: Sequence[tuple[str, str]] | None = None) -> FactCounts:
    """Fact counts of one utterance against one turn's actions."""
    reader = reader or default_reader()
    return _count(action_facts(actions, reader.vocab), text_facts(text, reader, context), matcher or ExactMatcher())


def turn_fact_f1(actions: Any, text: Any, matcher: Matcher | None = None, reader: FactReader | None = None,
                 context: Sequence[tuple[str, str]] | None = None) -> float:
    """F1 of the facts read from ``text`` against the facts of ``actions`` (1.0 when both have none)."""
    return turn_fact_counts(actions, text, matcher, reader, context).f1


def example_context(ex: Example) -> list[tuple[str, str]]:
    """What the NLG saw before the turn: the last exchange (previous doctor turn, patient answer)."""
    return list(ex.history or []) + list(ex.last_exchange or [])


NOTES = (
    "facts: (slot family, value), (slot family, value, check type), (slot family, value, check type, check value) for "
    "medical slots (status prefixes removed), (family, value), (family, check type[, check value]) for record slots; "
    "an action's intent is not a fact",
    "canonical (exact): medical head values through configs/vocabulary.yaml, check types, check values of MediTOD's "
    "canonical attributes; non-canonical (matcher): record and disease values, other check values",
    "micro precision/recall/F1 over all turns: a turn whose gold actions have no facts (chit-chat, salutations) adds "
    "no gold facts but its predicted facts still count against precision",
    "each utterance is read with the example's last exchange as context (anaphora: 'when did that start?'); gold "
    "text read this way does not score 1.0: the reader is a lexicon and cue reader, not an oracle",
)


def score_nlg_facts(examples: Sequence[Example], predictions: Mapping[tuple[str, int], Any],
                    matcher: Matcher | None = None, reader: FactReader | None = None,
                    use_context: bool = True) -> dict:
    """Fact-level NLG score: micro P/R/F1 of the facts read from each predicted utterance against the facts of the
    turn's gold actions. ``predictions``: ``(dialog_id, uttr_id)`` -> generated text; missing or non-string
    predictions are empty utterances (counted in ``missing`` / ``format_errors``)."""
    reader = reader or default_reader()
    matcher = matcher or ExactMatcher()
    pairs = []
    missing = format_errors = without = 0
    for ex in examples:
        key = (ex.dialog_id, ex.uttr_id)
        if key not in predictions:
            missing += 1
        pred = predictions.get(key)
        if not isinstance(pred, str):
            format_errors += 1
            pred = ""
        gold = action_facts(ex.actions or [], reader.vocab)
        if not (gold[0] or gold[1]):
            without += 1
        pairs.append((gold, text_facts(pred, reader, example_context(ex) if use_context else None)))
    matcher.prepare(v for g, p in pairs for v in values_to_compare(g[1], p[1]))
    total = FactCounts()
    for gold, pred in pairs:
        total += _count(gold, pred, matcher)
    rep = total.report()
    return {
        "task": "nlg_facts",
        "turns": len(examples),
        **{k: round(rep[k], 4) for k in ("precision", "recall", "f1")},
        "canonical": {k: round(v, 4) for k, v in rep["canonical"].items()},
        "non_canonical": {k: round(v, 4) for k, v in rep["non_canonical"].items()},
        "gold_facts": total.gold,
        "predicted_facts": total.pred,
        "matched_facts": total.tp,
        "turns_without_facts": without,
        "missing": missing,
        "format_errors": format_errors,
        "context": use_context,
        "reader": reader.describe(),
        "matcher": matcher.describe(),
        "notes": list(NOTES),
    }


# --------------------------------------------------------------------------- validation


@lru_cache(maxsize=1)
def _lexicon_values() -> dict[str, list[str]]:
    """The values ``configs/nlu_lexicon.yaml`` lists by name (not the ontology keywords added to them)."""
    from policies.nlu.lexicon import DEFAULT_LEXICON

    raw = yaml.safe_load(Path(DEFAULT_LEXICON).read_text()) or {}
    return {"symptom": sorted((raw.get("values") or {}).get("symptom") or {}),
            CONDITION: sorted(raw.get("conditions") or {})}


def _candidates(reader: FactReader, base: str) -> list[tuple[str, str]]:
    """(value, phrase) replacements of a slot type: the lexicon's named values in sorted order (symptoms for a
    symptom, conditions for medical / family history), each with its first phrase."""
    lex = reader.lexicon
    b = "symptom" if base == "symptom" else CONDITION
    keys = [(b, v) for v in _lexicon_values()[b]]
    out = []
    for b, v in keys:
        phrases = lex.phrases(b, v)
        if v in OPEN_VALUES or v in _NOT_CONDITIONS or not phrases:
            continue
        if reader._by_phrase.get(phrases[0]) == (b, v):  # the phrase reads back as this value
            out.append((v, phrases[0]))
    return out


def _target(actions: list[dict]) -> tuple[str, str] | None:
    """The first symptom / condition item of the turn: (slot type, value)."""
    for act in actions:
        for base, items in act.items():
            if base not in ("symptom", "medical_history", "family_history"):
                continue
            for it in items:
                v = str(it.get("value", "")).casefold()
                if v not in OPEN_VALUES and v not in _NOT_CONDITIONS:
                    return base, it["value"]
    return None


def _replace_value(actions: list[dict], base: str, old: str, new: str) -> list[dict]:
    out = json.loads(json.dumps(actions))
    for act in out:
        for it in act.get(base) or []:
            if it.get("value") == old:
                it["value"] = new
    return out


def wrong_utterance(ex: Example, reader: FactReader, rotation: int = 0) -> dict | None:
    """A deliberately wrong utterance for a turn whose action has a symptom / condition value: the gold text with
    the mention of that value replaced by a phrase of another value of the same slot type; when the gold text does
    not name it literally, the template NLG rendering of the action against the rendering with the value replaced.
    ``None`` when the turn has no such value."""
    from policies.template_nlg import TemplateNLG

    target = _target(ex.actions or [])
    if target is None:
        return None
    base, value = target
    vocab = reader.vocab
    used = {(b, it.get("value")) for act in ex.actions for b, its in act.items() if b != "action" for it in its}
    candidates = _candidates(reader, base)
    fam = "symptom" if base == "symptom" else base
    replacement = None
    for k in range(len(candidates)):
        v, phrase = candidates[(rotation + k) % len(candidates)]
        if not any(b == base and vocab.same(fam, v, u) for b, u in used) and v not in OPEN_VALUES:
            replacement = (v, phrase)
            break
    if replacement is None:
        return None
    new_value, new_phrase = replacement
    text = ex.target
    mentions, _ = reader._mentions(text)
    for m in mentions:
        mb = base if m.base == CONDITION and base != "symptom" else m.base
        if mb == base and vocab.same(fam, m.value, value):
            wrong = text[:m.start] + new_phrase + text[m.end:]
            return {"how": "text", "right": text, "wrong": wrong, "value": value, "replacement": new_value}
    nlg = TemplateNLG()
    return {"how": "template", "right": nlg.render(ex.actions), "value": value, "replacement": new_value,
            "wrong": nlg.render(_replace_value(ex.actions, base, value, new_value))}


def validate(data_dir: str | Path = DEFAULT_DATA_DIR, split: str = "all", matcher: Matcher | None = None,
             reader: FactReader | None = None, details: bool = False, use_context: bool = True) -> dict:
    """Does the fact score measure what it claims? On the dialogues of ``data_dir``:

    - own vs other: every doctor turn whose gold actions have facts, its gold utterance scored against its own
      actions and against another turn's (the next turn with facts, in a rotation over all such turns, skipping
      turns with the very same facts); reported as the means and the share of turns where own > other;
    - wrong utterance: for turns whose action has a symptom / condition value, :func:`wrong_utterance`; reported as
      the share of turns where the right utterance scores above the wrong one, and the means;
    - ``mean_template_own``: the template NLG's rendering of each turn's actions against those actions (how well
      the reader reads the wording it inverts; no context).

    Every utterance is read with its own turn's context (``use_context``), whichever actions it is scored
    against."""
    reader = reader or default_reader()
    matcher = matcher or ExactMatcher()
    examples = nlg_examples(load_dialogues(data_dir, split))
    facts = [(ex, action_facts(ex.actions or [], reader.vocab)) for ex in examples]
    scored = [(ex, f) for ex, f in facts if f[0] or f[1]]
    n = len(scored)
    own_scores, other_scores, rows = [], [], []
    for i, (ex, f) in enumerate(scored):
        ctx = example_context(ex) if use_context else None
        other = next((scored[(i + k) % n] for k in range(1, n) if scored[(i + k) % n][1] != f), None)
        own = turn_fact_f1(ex.actions, ex.target, matcher, reader, ctx)
        oth = turn_fact_f1(other[0].actions, ex.target, matcher, reader, ctx) if other else 0.0
        own_scores.append(own)
        other_scores.append(oth)
        rows.append({"turn": f"{ex.dialog_id}/{ex.uttr_id}", "own": round(own, 4), "other": round(oth, 4),
                     "other_turn": f"{other[0].dialog_id}/{other[0].uttr_id}" if other else None})
    from policies.template_nlg import TemplateNLG

    nlg = TemplateNLG()
    template = [turn_fact_f1(ex.actions, nlg.render(ex.actions), matcher, reader) for ex, _ in scored]
    wrong_rows = []
    for i, (ex, _) in enumerate(scored):
        w = wrong_utterance(ex, reader, rotation=7 * i)
        if w is None:
            continue
        ctx = example_context(ex) if w["how"] == "text" and use_context else None
        right = turn_fact_f1(ex.actions, w["right"], matcher, reader, ctx)
        wrong = turn_fact_f1(ex.actions, w["wrong"], matcher, reader, ctx)
        wrong_rows.append({"turn": f"{ex.dialog_id}/{ex.uttr_id}", **w, "right_f1": round(right, 4),
                           "wrong_f1": round(wrong, 4)})

    def mean(xs: list[float]) -> float:
        return round(sum(xs) / len(xs), 4) if xs else 0.0

    report = {
        "data": str(data_dir), "split": split, "context": use_context, "turns": len(examples), "n": n,
        "mean_own": mean(own_scores), "mean_other": mean(other_scores),
        "share_own_gt_other": mean([float(a > b) for a, b in zip(own_scores, other_scores, strict=True)]),
        "share_own_eq_other": mean([float(a == b) for a, b in zip(own_scores, other_scores, strict=True)]),
        "mean_template_own": mean(template),
        "wrong_utterance": {
            "n": len(wrong_rows),
            "from_text": sum(r["how"] == "text" for r in wrong_rows),
            "from_template": sum(r["how"] == "template" for r in wrong_rows),
            "mean_right": mean([r["right_f1"] for r in wrong_rows]),
            "mean_wrong": mean([r["wrong_f1"] for r in wrong_rows]),
            "share_right_gt_wrong": mean([float(r["right_f1"] > r["wrong_f1"]) for r in wrong_rows]),
        },
        "reader": reader.describe(),
        "matcher": matcher.describe(),
    }
    if details:
        report["turn_scores"] = rows
        report["wrong_utterance"]["turns"] = wrong_rows
    return report


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m eval.metrics.nlg_facts", description=__doc__.split("\n\n")[0])
    p.add_argument("--validate", action="store_true", help="run the validation on --data and print it as JSON")
    p.add_argument("--data", default=str(DEFAULT_DATA_DIR), help="MediTOD-layout directory")
    p.add_argument("--split", default="all")
    p.add_argument("--pred", help="NLG predictions JSONL (dialog_id, uttr_id, prediction) to score")
    p.add_argument("--gold-as-pred", action="store_true", help="score the gold utterances themselves")
    p.add_argument("--match", default="exact", help="matcher for non-canonical values (exact|synonym|embedding|llm)")
    p.add_argument("--details", action="store_true", help="validation: add per-turn rows")
    p.add_argument("--no-context", action="store_true", help="read each utterance alone (no dialogue context)")
    args = p.parse_args(argv)
    from eval.metrics.matching import make_matcher

    matcher = make_matcher(args.match)
    if args.validate:
        print(json.dumps(validate(args.data, args.split, matcher, details=args.details,
                                  use_context=not args.no_context), indent=2))
        return 0
    examples = nlg_examples(load_dialogues(args.data, args.split))
    if args.gold_as_pred:
        predictions: dict[tuple[str, int], Any] = {(ex.dialog_id, ex.uttr_id): ex.target for ex in examples}
    elif args.pred:
        from eval.metrics.score import load_predictions

        predictions = {k: r.get("prediction") for k, r in load_predictions(args.pred).items()}
    else:
        p.error("give --validate, --pred FILE or --gold-as-pred")
    print(json.dumps(score_nlg_facts(examples, predictions, matcher, use_context=not args.no_context), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
