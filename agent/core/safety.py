"""Safety: red-flag rules over the patient state, the standing disclaimer, and patient-text hygiene.

Red flags are data (``configs/red_flags.yaml``): which CMAS values, in which slot and status,
all-of / any-of, and the escalation message. Values match through the vocabulary
(``agent.core.ontology``), so a rule written with the ontology's ``fainting`` fires on the
dataset's ``syncope``.

Patient text is data, never instructions: the only way it changes the patient state is
through NLU frames that are valid CMAS (:func:`admit_frames`); whatever else a model
produced is set aside and reported, never merged.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from agent.core import cmas, cmas_lenient
from agent.core.bounds import MAX_UTTERANCE_CHARS
from agent.core.clinical_text import (
    AT_AN_AGE,
    NEGATION_WORD,
    YOUNG,
    ClauseReader,
    PhraseFinder,
    as_the_patient,
    days_since_dated,
    default_clause_reader,
    near_misses,
    says_it_works,
)
from agent.core.cmas import patient_age
from agent.core.grounding import ground_frames
from agent.core.lay_terms import gloss, plain_english
from agent.core.numbers import with_digits
from agent.core.ontology import (
    Vocabulary,
    body_part_words,
    default_vocabulary,
    is_a_kind_of,
    part_members,
    symptom_names,
)
from agent.core.paths import REPO_ROOT
from agent.core.semantic import Encoder, default_encoder
from agent.core.speech_repair import repaired
from agent.core.tracker import update_state

DEFAULT_RULES = REPO_ROOT / "configs" / "red_flags.yaml"
ORDINARY = "~ordinary"
"""The phrase finder's key of ``ordinary_phrases``: the phrase-level twin of ``ordinary``. A rule phrase matches
inflected ("fainted" finds "faint"), so an everyday phrase with the same word ("I feel faint") would raise the rule;
listed here, the longer everyday phrase takes the span and raises nothing."""
IDIOM = "~idiom"
"""The phrase finder's key of ``idioms``: figures of speech in a rule's words ("could have killed him", "died
laughing"), which raise nothing by phrase and are left out of the clause read by meaning (an ordinary phrase such as
"feel faint" stays in it: near-fainting is part of what anaphylaxis is told by)."""
NEAR_MISS = "~near:"
PATTERN = "~pattern:"  # a rule's pattern matched (the finder's key is this and the rule id)
"""The phrase finder's key prefix of a near miss of a rule's phrases ("nearly passed out"), for rules with
``near_miss_ignored``: the longer near-miss phrase takes the span, and its sentence raises that rule by meaning
neither."""

DISCLAIMER = (
    "This history was taken by an automated assistant. It is not a diagnosis or medical advice and does not "
    "replace assessment by a qualified clinician. If you feel very unwell or your symptoms get worse, call your "
    "local emergency number."
)

LEVELS = ("emergency", "urgent", "possible")
"""Flag levels, most severe first: the one home (banner, note and sort order read it). A rule is written
``emergency`` or ``urgent``; a flag raised on uncertain evidence (a hedged or merely similar clause) is shown as
``possible``: the clinician sees it with its evidence, and the patient gets the rule's message all the same."""
RULE_LEVELS = LEVELS[:2]


def level_rank(level: object) -> int:
    """A level's place in :data:`LEVELS` (0: emergency); anything else sorts after every level. The one ordering the
    graph (a flag raised again when more severe), the summary and the policy (most severe first) use."""
    return LEVELS.index(level) if level in LEVELS else len(LEVELS)


class RuleError(ValueError):
    pass


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class Condition:
    slot: str
    values: tuple[str, ...]
    status: tuple[str, ...] = ("positive",)
    location: tuple[str, ...] = ()  # places, matched as whole words (:func:`located`)
    min_severity: float | None = None
    max_onset_days: float | None = None  # began at most this many days ago (:func:`onset_days`): a sudden loss
    min_onset_days: float | None = None  # began at least this many days ago: an ulcer that has not healed in 3 weeks
    level: str | None = None  # an ``any_of`` condition that raises the rule above its level when it holds
    characteristics: tuple[str, ...] = ()  # the item is said to feel so (``positive_characteristics``): a crushing pain
    unless: tuple[str, ...] = ()  # symptoms that, held, explain the item away: a tight chest with a wheeze is asthma's
    onset_unsaid_counts: bool = False  # with max_onset_days: an item whose onset is not yet told counts (recall first)
    with_any: tuple[str, ...] = ()  # symptoms one of which must be held too: retention with back pain
    initiation: tuple[str, ...] = ()  # how the item came on ("abruptly"): new floaters said to come suddenly
    unless_taking: tuple[str, ...] = ()  # medicines that, taken, explain the item: bruising on a blood thinner
    not_mild: bool = False  # a sign that is sudden and severe (torsion): an item said to be mild or easing is not it


@dataclass(frozen=True)
class Context:
    """What must be known before a rule's words alone raise it: a headache is a red flag in pregnancy (pre-eclampsia)
    and not otherwise. Met when a clause of the same turn says it (``phrases`` whole-word, or ``descriptions`` by the
    sentence encoder at the firing similarity), not denied and not about a relative, or when the state holds the
    rule's ``all_of`` (said in an earlier turn: "I'm 30 weeks pregnant", then "I keep seeing flashing lights")."""

    phrases: tuple[str, ...] = ()
    descriptions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Rule:
    id: str
    message: str
    level: str = "urgent"
    all_of: tuple[Condition, ...] = ()
    any_of: tuple[Condition, ...] = ()
    none_of: tuple[Condition, ...] = ()  # any of these in the state: the rule does not fire (another rule covers it)
    phrases: tuple[str, ...] = ()  # lay phrasings that raise the flag from the patient's own words
    descriptions: tuple[str, ...] = ()  # what a patient with this flag says: the semantic matcher's references
    source: str = ""  # the guideline the red-flag set comes from
    hedge_keeps_level: bool = False  # a hedge is how patients say it (self-harm, suicide): never "possible"
    near_miss_ignored: bool = False  # "I nearly fainted" is no faint: a near miss of its phrases raises nothing
    context: Context | None = None  # the words raise the rule only where this is known (:class:`Context`)
    recall_first: bool = False  # a risk to life the patient may only hint at: raised as "possible" on less similarity
    patterns: tuple[re.Pattern[str], ...] = ()  # word combinations no phrase list spells (a harm verb and a person)
    min_age: int | None = None  # a patient known to be younger does not have it (giant cell arteritis: 50 and over)
    reads_the_past: bool = False  # symptoms begun long ago count too (:data:`PAST_EPISODE_DAYS`): self-harm, cancer
    explained_by: tuple[re.Pattern[str], ...] = ()  # words that explain the sign away: raised from words, "possible"
    said_with: tuple[re.Pattern[str], ...] = ()  # a match by meaning counts only where its sentence says one of these


@dataclass(frozen=True)
class Screen:
    """Cosine similarity (all-MiniLM-L6-v2) of a patient clause to a rule description at which the rule fires at
    its level (``fire``) or is raised as ``possible``."""

    fire: float = 0.74
    possible: float = 0.68
    margin: float = 0.05  # how much nearer to the rule than to any ordinary complaint a clause must be to fire
    rival: float = 1.0  # how far below the clause's nearest rule another rule may be and still be raised by it
    # ``recall_first`` rules (suicide, self-harm, harm to others): patients hint at these in words the small encoder
    # places far from every description ("I think about driving into a wall and not waking up" is 0.56 from "I wish
    # I could go to sleep and not wake up"). Such a clause raises the rule as "possible" from this similarity when it
    # is also this much nearer to the rule than to every ordinary complaint: the contrast, not the similarity alone,
    # tells a hint from a topic word ("I live with my family" is 0.6 from "my family would be better off without me",
    # and nearer still to "I live with my family").
    recall_first_possible: float = 1.0
    recall_first_margin: float = 1.0


@dataclass
class RedFlag:
    """A fired rule; ``evidence``: the state items that made it fire
    (``{"slot": "positive_symptom", "value": ...}``)."""

    id: str
    message: str
    level: str
    evidence: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RuleSet:
    rules: list[Rule]
    vocab: Vocabulary
    finder: PhraseFinder | None = None  # the rules' phrases, with ConText status
    screen: Screen = field(default_factory=Screen)
    clauses: ClauseReader = field(default_factory=default_clause_reader)
    encoder: Encoder | None = None  # None: the shared default encoder, loaded on first use
    ordinary: tuple[str, ...] = ()  # ordinary complaints without a red flag: what a clause is contrasted with
    ordinary_history: tuple[str, ...] = ()  # social and drug history: what the recall-first low path also contrasts
    context_finder: PhraseFinder | None = None  # the rules' context phrases, keyed by rule id, with ConText status

    @cached_property
    def ordinary_embeddings(self) -> np.ndarray:
        return (self.encoder or default_encoder()).embed_references(list(self.ordinary))

    @cached_property
    def ordinary_history_embeddings(self) -> np.ndarray:
        return (self.encoder or default_encoder()).embed_references(list(self.ordinary_history))

    @cached_property
    def context_embeddings(self) -> dict[str, np.ndarray]:
        """Unit embeddings of each context rule's context descriptions, by rule id."""
        encoder = self.encoder or default_encoder()
        return {r.id: encoder.embed_references(list(r.context.descriptions))
                for r in self.rules if r.context is not None and r.context.descriptions}

    @cached_property
    def denying_references(self) -> np.ndarray:
        """Per description row of :attr:`references`: whether it says something is not so ("go to sleep and not wake
        up"). A clause that denies something is matched on the recall-first low path by such a description only."""
        texts = [d for _, d, _ in self.references[0]]
        denies = {c.text.lower(): c.denies for d in dict.fromkeys(texts) for c in self.clauses.clauses(d)}
        return np.array([denies.get(d.lower(), False) and not _PAINLESS_TAIL.search(d) for d in texts], dtype=bool)

    @cached_property
    def references(self) -> tuple[list[tuple[int, str, bool]], np.ndarray]:
        """Every rule description as (rule index, text, negated) and their unit embeddings, one row each."""
        rows = [(i, d) for i, r in enumerate(self.rules) for d in r.descriptions]
        negated = {
            c.text.lower(): c.negated for d in dict.fromkeys(t for _, t in rows) for c in self.clauses.clauses(d)
        }
        refs = [(i, d, negated.get(d.lower(), False)) for i, d in rows]
        return refs, (self.encoder or default_encoder()).embed_references([d for _, d in rows])


_PAINLESS_TAIL = re.compile(r"\bbut\s+(?:no\s+pain|it\s+(?:doesn't|does not|didn't|did not)\s+hurt)\W*$", re.I)
"""A description that denies only the pain after what it affirms ("blood in my urine but no pain", painless
haematuria): an affirming description, whose denial qualifies the sign. As a denying one it met a reply that denies
the sign itself ("No blood, but my wee looks cloudy") by all its words, and raised the cancer warning."""


def _condition(raw: object, where: str, vocab: Vocabulary, rule_level: str | None = None) -> Condition:
    """One condition; ``rule_level``: the rule's level where the condition is an ``any_of`` one (the only place a
    condition may carry a ``level``, above the rule's)."""
    if not isinstance(raw, dict):
        raise RuleError(f"{where}: expected a mapping")
    if unknown := set(raw) - {"slot", "values", "status", "location", "min_severity", "max_onset_days", "level",
                              "characteristics", "unless", "onset_unsaid_counts", "with_any", "initiation",
                              "min_onset_days", "unless_taking", "not_mild"}:
        raise RuleError(f"{where}: unknown keys {sorted(unknown)}")
    slot = raw.get("slot")
    if slot not in cmas.SLOTS:
        raise RuleError(f"{where}: unknown slot type {slot!r}")
    spec = cmas.SLOTS[slot]
    values = raw.get("values")
    if not isinstance(values, list) or not values or not all(isinstance(v, str) for v in values):
        raise RuleError(f"{where}: 'values' must be a non-empty list of strings")
    for v in values:
        if not vocab.known(slot, v):
            raise RuleError(f"{where}: {v!r} is neither an ontology code nor a configs/vocabulary.yaml term of {slot}")
    status = raw.get("status", ["positive"])
    status = [status] if isinstance(status, str) else status
    for s in status:
        if s not in spec.statuses:
            raise RuleError(f"{where}: status {s!r} is not one of {spec.statuses}")
    sev = raw.get("min_severity")
    if sev is not None and not isinstance(sev, int | float):
        raise RuleError(f"{where}: min_severity must be a number")
    days = raw.get("max_onset_days")
    if days is not None and (not isinstance(days, int | float) or days < 0):
        raise RuleError(f"{where}: max_onset_days must be a number of days, 0 or more")
    at_least = raw.get("min_onset_days")
    if at_least is not None and (not isinstance(at_least, int | float) or at_least < 0):
        raise RuleError(f"{where}: min_onset_days must be a number of days, 0 or more")
    location = raw.get("location") or []
    if not isinstance(location, list) or not all(isinstance(x, str) and x.strip() for x in location):
        raise RuleError(f"{where}: 'location' must be a list of place names")
    level = raw.get("level")
    if level is not None:
        if rule_level is None:
            raise RuleError(f"{where}: 'level' belongs to an any_of condition (the level the rule rises to with it)")
        if level not in RULE_LEVELS or RULE_LEVELS.index(level) >= RULE_LEVELS.index(rule_level):
            raise RuleError(f"{where}: level {level!r} must be a level above the rule's ({rule_level!r})")
    characteristics = raw.get("characteristics") or []
    if not isinstance(characteristics, list) or not all(isinstance(x, str) and x.strip() for x in characteristics):
        raise RuleError(f"{where}: 'characteristics' must be a list of how the item feels (the NLU's values)")
    unless = _known_values(raw, "unless", where, "symptom values", lambda v: vocab.known("symptom", v),
                           "is neither an ontology code nor a configs/vocabulary.yaml symptom")
    with_any = _known_values(raw, "with_any", where, "symptom values",
                             lambda v: vocab.known("symptom", v) or v in _SITED_NAMES,
                             "is neither a symptom value nor a sited pain name")
    unsaid = raw.get("onset_unsaid_counts", False)
    if not isinstance(unsaid, bool) or (unsaid and days is None):
        raise RuleError(f"{where}: onset_unsaid_counts is true or false, and goes with max_onset_days")
    initiation = raw.get("initiation") or []
    if not isinstance(initiation, list) or not set(initiation) <= {"abruptly", "gradually"}:
        raise RuleError(f"{where}: 'initiation' must be a list of 'abruptly' and 'gradually' (how an item came on)")
    unless_taking = _known_values(raw, "unless_taking", where, "medication values",
                                  lambda v: vocab.known("medication", v), "is not a known medication value")
    not_mild = raw.get("not_mild", False)
    if not isinstance(not_mild, bool):
        raise RuleError(f"{where}: not_mild is true or false")
    return Condition(slot, tuple(values), tuple(status), tuple(location), sev, days, at_least, level,
                     tuple(characteristics), tuple(unless), unsaid, tuple(with_any), tuple(initiation),
                     tuple(unless_taking), not_mild)


def _known_values(raw: dict[str, Any], key: str, where: str, what: str, known: Callable[[str], bool],
                  unknown: str) -> list[str]:
    """A condition's list of values under ``key`` (``unless``, ``with_any``, ``unless_taking``), each one the vocabulary
    knows: a misspelt value would otherwise never match and silently weaken the rule."""
    values = raw.get(key) or []
    if not isinstance(values, list) or not all(isinstance(x, str) for x in values):
        raise RuleError(f"{where}: '{key}' must be a list of {what}")
    for v in values:
        if not known(v):
            raise RuleError(f"{where}: {key}: {v!r} {unknown}")
    return values


_SITED_NAMES = frozenset({"back pain", "leg pain", "arm pain", "neck pain"})
"""Names of a pain at a place (``pain`` located there, :func:`agent.core.ontology.symptom_names`) a condition may ask
for in ``with_any``."""


def load_rules(path: str | Path = DEFAULT_RULES, vocab: Vocabulary | None = None) -> RuleSet:
    vocab = vocab or default_vocabulary()
    raw = yaml.safe_load(Path(path).read_text())
    if not isinstance(raw, dict) or not isinstance(raw.get("rules"), list):
        raise RuleError(f"{path}: expected a mapping with a 'rules' list")
    allowed = {"rules", "screen", "ordinary", "ordinary_history", "ordinary_phrases", "idioms"}
    if unknown := set(raw) - allowed:
        raise RuleError(f"{path}: unknown keys {sorted(unknown)}; allowed: {sorted(allowed)}")
    rules, seen = [], set()
    for i, r in enumerate(raw["rules"]):
        where = f"{path}: rules.{i}"
        if not isinstance(r, dict):
            raise RuleError(f"{where}: expected a mapping")
        if unknown := set(r) - _RULE_KEYS:
            raise RuleError(f"{where}: unknown keys {sorted(unknown)}")
        rid, message = r.get("id"), r.get("message")
        if not isinstance(rid, str) or not rid or rid in seen:
            raise RuleError(f"{where}: 'id' must be a unique non-empty string")
        if not isinstance(message, str) or not message.strip():
            raise RuleError(f"{where}: 'message' is required")
        level = r.get("level", "urgent")
        if level not in RULE_LEVELS:
            raise RuleError(f"{where}: level {level!r} is not one of {RULE_LEVELS}")
        all_of = tuple(_condition(c, f"{where}.all_of.{j}", vocab) for j, c in enumerate(r.get("all_of") or []))
        any_of = tuple(_condition(c, f"{where}.any_of.{j}", vocab, level) for j, c in enumerate(r.get("any_of") or []))
        if not all_of and not any_of:
            raise RuleError(f"{where}: a rule needs 'all_of' or 'any_of'")
        none_of = tuple(_condition(c, f"{where}.none_of.{j}", vocab) for j, c in enumerate(r.get("none_of") or []))
        phrases = _texts(r.get("phrases"), f"{where}: 'phrases'")
        descriptions = _texts(r.get("descriptions"), f"{where}: 'descriptions'")
        source = r.get("source", "")
        if not isinstance(source, str):
            raise RuleError(f"{where}: 'source' must be a string (the guideline the rule comes from)")
        keeps = r.get("hedge_keeps_level", False)
        if not isinstance(keeps, bool):
            raise RuleError(f"{where}: 'hedge_keeps_level' must be true or false")
        near = r.get("near_miss_ignored", False)
        if not isinstance(near, bool):
            raise RuleError(f"{where}: 'near_miss_ignored' must be true or false")
        recall_first = r.get("recall_first", False)
        if not isinstance(recall_first, bool):
            raise RuleError(f"{where}: 'recall_first' must be true or false")
        past = r.get("reads_the_past", False)
        if not isinstance(past, bool):
            raise RuleError(f"{where}: 'reads_the_past' must be true or false")
        patterns = _patterns(r.get("patterns"), f"{where}: 'patterns'")
        min_age = r.get("min_age")
        if min_age is not None and (isinstance(min_age, bool) or not isinstance(min_age, int) or min_age < 1):
            raise RuleError(f"{where}: 'min_age' must be a whole number of years")
        explained_by = _patterns(r.get("explained_by"), f"{where}: 'explained_by'")
        said_with = _patterns(r.get("said_with"), f"{where}: 'said_with'")
        context = _context(r.get("context"), where)
        if context is not None and not all_of:
            raise RuleError(f"{where}: a 'context' needs 'all_of' (the state that holds it once said)")
        seen.add(rid)
        rules.append(
            Rule(
                rid,
                message.strip(),
                level,
                all_of,
                any_of,
                none_of,
                tuple(" ".join(p.lower().split()) for p in phrases),
                tuple(" ".join(d.split()) for d in descriptions),
                source=source.strip(),
                hedge_keeps_level=keeps,
                context=context,
                near_miss_ignored=near,
                recall_first=recall_first,
                patterns=patterns,
                min_age=min_age,
                reads_the_past=past,
                explained_by=explained_by,
                said_with=said_with,
            )
        )
    plain = [" ".join(p.lower().split()) for p in _texts(raw.get("ordinary_phrases"), f"{path}: 'ordinary_phrases'")]
    figures = [" ".join(p.lower().split()) for p in _texts(raw.get("idioms"), f"{path}: 'idioms'")]
    near = [(p, NEAR_MISS + r.id) for r in rules if r.near_miss_ignored for p in near_misses(r.phrases)]
    finder = PhraseFinder([*((p, r.id) for r in rules for p in r.phrases), *((p, ORDINARY) for p in plain),
                           *((p, IDIOM) for p in figures), *near],
                          spans=_pattern_spans(rules), parts=body_part_words(vocab.ontology.locations),
                          members=part_members())
    context_finder = PhraseFinder((p, r.id) for r in rules if r.context is not None for p in r.context.phrases)
    ordinary = tuple(" ".join(t.split()) for t in _texts(raw.get("ordinary"), f"{path}: 'ordinary'"))
    history = tuple(" ".join(t.split()) for t in _texts(raw.get("ordinary_history"), f"{path}: 'ordinary_history'"))
    return RuleSet(rules, vocab, finder, _screen(raw.get("screen"), path), ordinary=ordinary,
                   ordinary_history=history, context_finder=context_finder)


_RULE_KEYS = {"id", "message", "level", "all_of", "any_of", "none_of", "phrases", "descriptions", "source",
              "hedge_keeps_level", "context", "near_miss_ignored", "recall_first", "patterns", "min_age",
              "reads_the_past", "explained_by", "said_with"}


def _patterns(raw: object, where: str) -> tuple[re.Pattern[str], ...]:
    """A rule's ``patterns``: regular expressions (case-insensitive) for word combinations a phrase list cannot spell.
    The span a pattern's group ``c`` covers (else the whole match) is what ConText reads: the words before it (a
    negation, a relative) govern it as they would a phrase."""
    out = []
    for i, text in enumerate(_texts(raw, where)):
        try:
            out.append(re.compile(text, re.I))
        except re.error as e:
            raise RuleError(f"{where}.{i}: not a regular expression ({e})") from e
    return tuple(out)


def _pattern_spans(rules: list[Rule]) -> Callable[[str], list[tuple[int, int, str]]]:
    """The PhraseFinder ``spans`` of the rules' patterns: ``(start, end, rule id)``."""
    def spans(text: str) -> list[tuple[int, int, str]]:
        out = []
        for rule in rules:
            for pattern in rule.patterns:
                for m in pattern.finditer(text):
                    group = "c" if "c" in pattern.groupindex else 0
                    out.append((m.start(group), m.end(group), PATTERN + rule.id))
        return out
    return spans


def _context(raw: object, where: str) -> Context | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {"phrases", "descriptions"} or not raw:
        raise RuleError(f"{where}: 'context' must be a mapping with 'phrases' and/or 'descriptions'")
    phrases = _texts(raw.get("phrases"), f"{where}: 'context.phrases'")
    descriptions = _texts(raw.get("descriptions"), f"{where}: 'context.descriptions'")
    return Context(tuple(" ".join(p.lower().split()) for p in phrases),
                   tuple(" ".join(d.split()) for d in descriptions))


def _texts(raw: object, where: str) -> list[str]:
    raw = raw or []
    if not isinstance(raw, list) or not all(isinstance(p, str) and p.strip() for p in raw):
        raise RuleError(f"{where} must be a list of non-empty strings")
    return raw


def _screen(raw: object, path: str | Path) -> Screen:
    if raw is None:
        return Screen()
    keys = {"fire", "possible", "margin", "rival", "recall_first_possible", "recall_first_margin"}
    if not isinstance(raw, dict) or set(raw) - keys:
        raise RuleError(f"{path}: screen: expected a mapping with keys among {sorted(keys)} (cosine similarities)")
    screen = Screen(**{k: float(v) for k, v in raw.items()})
    if not 0 < screen.possible <= screen.fire <= 1 or not 0 < screen.recall_first_possible <= 1:
        raise RuleError(f"{path}: screen: need 0 < possible <= fire <= 1 and 0 < recall_first_possible <= 1, "
                        f"got {screen}")
    return screen


_NUMBER = re.compile(r"\d+(?:\.\d+)?")


_SPAN_DAYS = {"minute": 0.0, "hour": 0.0, "day": 1.0, "night": 1.0, "week": 7.0, "fortnight": 14.0, "month": 30.0,
              "year": 365.0}
_AMOUNT: dict[str, float] = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
                             "seven": 7, "eight": 8, "nine": 9, "ten": 10, "couple of": 2, "a couple of": 2, "few": 3,
                             "a few": 3, "several": 4, "half an": 0.5, "half a": 0.5}
_AGO = re.compile(r"(?P<n>\d+(?:\.\d+)?|couple of|a couple of|a few|few|several|half an|half a|an|a|one|two|three|"
                  r"four|five|six|"
                  r"seven|eight|nine|ten)\s+(?P<u>minute|hour|day|night|week|fortnight|month|year)s?\s+ago\b")
_SPAN_SO_FAR = re.compile(r"^(?:about |around |nearly |almost |over |just over |the (?:last|past) )?"
                          r"(?P<n>\d+(?:\.\d+)?|couple of|a couple of|a few|few|several|an|a|one|two|three|four|"
                          r"five|six|seven|eight|nine|ten)\s+(?P<u>day|week|fortnight|month|year)s?\b")
_LONG_AGO = re.compile(rf"\b(?:(?:(?:many|several|some) years|years|decades|ages) ago|"
                       rf"for (?:(?:many|some|a few|a good few|"
                       rf"several) )?(?:years|decades)|donkey'?s years|as {YOUNG}|when (?:i|he|she) was|"
                       rf"in (?:my|his|her) (?:childhood|teens)|{AT_AN_AGE})\b")
"""A time long past said without a number ("years ago", "ages ago", "for years") or as a time of life ("as a child",
"when I was six", the NLU's onset in the patient's words): counted as two years."""
_TODAY = re.compile(r"\b(?:today|this morning|this afternoon|this evening|tonight|earlier|\d{1,2}(?:[:.]\d{2})?\s*"
                    r"(?:am|pm|o'clock))\b")
_YESTERDAY = re.compile(r"\b(?:yesterday|last night|overnight)\b")
_WEEKDAY = re.compile(r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|the weekend)\b")


def onset_days(item: dict[str, Any]) -> float | None:
    """How many days ago an item began, read from its ``onset`` (a history item's ``starting``, an exposure's
    ``when``) as the NLU writes it ("two days ago", "yesterday morning", "since this morning", "sunday": within the
    week); None when it says no time."""
    text = str(item.get("onset") or item.get("starting") or item.get("when") or "").lower()
    if not text:
        return None
    text = with_digits(text)  # "fifteen years ago" is 15 years
    # a history item's bare span ("starting": "34 weeks" of a pregnancy, "10 years" of an asthma) is how long it has
    # gone on: it began that long ago
    m = _AGO.search(text) or (_SPAN_SO_FAR.match(text) if "onset" not in item else None)
    if m:
        n = m.group("n")
        amount = float(n) if n[0].isdigit() else float(_AMOUNT.get(n, 1))
        return amount * _SPAN_DAYS[m.group("u")]
    if _LONG_AGO.search(text):
        return 2 * _SPAN_DAYS["year"]
    if _TODAY.search(text):
        return 0.0
    if _YESTERDAY.search(text):
        return 1.0
    if _WEEKDAY.search(text):
        return 7.0
    return days_since_dated(text)


MILD_AT_MOST = 3.0
"""A score out of ten at or below which a complaint is mild."""


def mild_or_easing(item: dict[str, Any]) -> bool:
    """Whether an item is said to be mild (the NLU's ``mild``, or a score of at most :data:`MILD_AT_MOST`) or to be
    getting better: NICE CKS names testicular torsion by its "sudden onset of severe pain", which a testicle that
    "aches a bit after a long ride" or a pain "getting better today" is not."""
    sev = str(item.get("severity") or "").lower()
    score = _severity(item)
    return (sev == "mild" or (score is not None and score <= MILD_AT_MOST)
            or "getting better" in str(item.get("progression") or "").lower())


_WORST_WORDS = re.compile(r"\b(?:excruciating|unbearable|agonising|agonizing|agony|intolerable|worst|blinding|"
                          r"horrendous|ten out of ten)\b")
"""A severity said in words at the top of the scale ("an excruciating headache", "unbearable"): 10 out of 10, as the
patients who say it score it when asked; lesser words ("bad", "severe") are left to a number."""


def _severity(item: dict[str, Any]) -> float | None:
    said = str(item.get("severity") or "").lower()
    m = _NUMBER.search(said)
    if m:
        return float(m.group())
    return 10.0 if _WORST_WORDS.search(said) else None


_SIDE_SUFFIX = re.compile(r"\s*\((l|r)\)$")
_FILLER = re.compile(r"\b(?:the|my|his|her|their|your|a)\b")
_POSITIONS = frozenset(
    "back front top bottom side base tip middle centre center inside outside underside edge "
    "part area region structure upper lower".split()
)
"""Words that say where on a place, not which place: in ``back of the head`` only the head is a place."""


def _place_text(location: str) -> str:
    """A location as words: case-folded, ``knee(L)`` as ``left knee``, hyphens as spaces, no articles."""
    text = " ".join(location.casefold().replace("-", " ").split())
    if m := _SIDE_SUFFIX.search(text):
        text = f"{'left' if m.group(1) == 'l' else 'right'} {text[: m.start()]}"
    return " ".join(_FILLER.sub(" ", text).split())


def _places(location: str) -> list[str]:
    """The places a location names: in ``<part> of <place>`` each part except a bare position (``back``, ``side``,
    ``structure``), so ``back of the head`` is the head, ``structure of calf of leg`` the calf and the leg and
    ``left side of the body`` the left side and the body."""
    parts = _place_text(location).split(" of ")
    return [p for p in parts[:-1] if p and not set(p.split()) <= _POSITIONS] + [parts[-1]]


def located(wanted: Iterable[str], locations: Iterable[str]) -> bool:
    """Whether a location is at one of the ``wanted`` places: a place name matches a location that names it as whole
    words (``arm``: the ``left arm``, not the ``armpit`` nor the ``forearm``; ``side``: not ``inside``), one way only
    (a rule's ``left leg`` is not any ``leg``), and never through a position (``back`` of the head)."""
    wants = [w for w in (_place_text(x) for x in wanted) if w]
    for loc in locations:
        if not isinstance(loc, str):
            continue
        whole, places = _place_text(loc), _places(loc)
        for want in wants:
            pattern = re.compile(rf"(?<!\w){re.escape(want)}(?!\w)")
            if want == whole or any(pattern.search(p) for p in places):
                return True
    return False


def _located(cond: Condition, item: dict[str, Any]) -> bool:
    return not cond.location or located(cond.location, item.get("location") or [])


PAST_EPISODE_DAYS = 365.0
"""A symptom the patient says began longer ago than this ("I fainted once, about ten years ago") is their past history,
not the episode a red flag is about: it raises no rule but those that read the past (``reads_the_past``: self-harm,
suicide, a cancer's warning signs). A symptom without an onset counts (recall first)."""


def _matches(
    state: dict[str, Any], cond: Condition, vocab: Vocabulary, statuses: tuple[str, ...] | None = None,
    past: bool = True,
) -> list[dict[str, Any]]:
    """The state's items that meet ``cond``, as evidence; ``past``: symptoms begun long ago count too
    (:data:`PAST_EPISODE_DAYS`)."""
    spec = cmas.SLOTS[cond.slot]
    names = [f"{s}_{cond.slot}" for s in (statuses or cond.status)] if spec.statuses else [cond.slot]
    evidence: list[dict[str, Any]] = []
    if cond.unless and any(vocab.same("symptom", str(it.get("value", "")), v)
                           for it in state.get("positive_symptom") or [] for v in cond.unless):
        return evidence
    if cond.unless_taking and any(vocab.same("medication", str(it.get("value", "")), v)
                                  for it in state.get("positive_medication") or [] for v in cond.unless_taking):
        return evidence
    if cond.with_any and not any(vocab.same("symptom", n, v) for it in state.get("positive_symptom") or []
                                 for n in symptom_names(str(it.get("value", "")), it) for v in cond.with_any):
        return evidence
    for name in names:
        for item in state.get(name) or []:
            value = item.get("value")
            if not isinstance(value, str):
                continue
            if not any(vocab.same(cond.slot, n, v) or is_a_kind_of(n, v)
                       for n in symptom_names(value, item) for v in cond.values):
                continue
            if not _located(cond, item):
                continue
            if cond.characteristics and not set(cond.characteristics) & set(item.get("positive_characteristics") or []):
                continue
            if cond.min_severity is not None and ((sev := _severity(item)) is None or sev < cond.min_severity):
                continue
            if cond.initiation and item.get("initiation") not in cond.initiation:
                continue
            if cond.not_mild and mild_or_easing(item):
                continue
            days = onset_days(item)
            if cond.max_onset_days is not None and (
                    days > cond.max_onset_days if days is not None else not cond.onset_unsaid_counts):
                continue
            if cond.min_onset_days is not None and (days is None or days < cond.min_onset_days):
                continue  # a persisting sign (NICE NG12's "for more than 3 weeks"): an onset not yet told is none
            if not past and cond.slot == "symptom" and days is not None and days > PAST_EPISODE_DAYS:
                continue
            evidence.append(
                {
                    "slot": name,
                    "value": value,
                    **({"severity": item["severity"]} if "severity" in item else {}),
                    **({"location": item["location"]} if item.get("location") else {}),
                }
            )
    return evidence


def _rule_evidence(
    rule: Rule, state: dict[str, Any], vocab: Vocabulary, uncertain: bool
) -> tuple[list[dict[str, Any]], str] | None:
    """The evidence for ``rule`` in ``state`` and the level it reaches (None: it does not fire): the rule's level,
    or the most severe ``level`` of the ``any_of`` conditions that hold. ``uncertain``: items the patient was unsure
    about (status unknown) count as well as positive ones. An item that meets two conditions is cited once."""

    def found(cond: Condition) -> list[dict[str, Any]]:
        statuses = (*cond.status, "unknown") if uncertain and cond.status == ("positive",) else None
        return _matches(state, cond, vocab, statuses, past=rule.reads_the_past)

    if any(_matches(state, cond, vocab, None) for cond in rule.none_of):
        return None  # what another rule covers ("beyond the chest" once there is chest pain: the ACS rule)
    evidence: list[dict[str, Any]] = []
    level = rule.level
    for cond in rule.all_of:
        got = found(cond)
        if not got:
            return None
        evidence.extend(got)
    if rule.any_of:
        held = [(cond, got) for cond in rule.any_of if (got := found(cond))]
        if not held:
            return None
        evidence.extend(e for _, got in held for e in got)
        level = min((c.level or rule.level for c, _ in held), key=LEVELS.index)
    unique = [e for i, e in enumerate(evidence) if e not in evidence[:i]]
    return unique, level


def too_young(rule: Rule, state: dict[str, Any] | None) -> bool:
    """Whether the patient is known to be younger than the rule's ``min_age``. An age not yet told keeps the rule
    (recall first: a new headache with jaw pain in a patient of unknown age is raised, and the age is asked)."""
    age = patient_age(state)
    return rule.min_age is not None and age is not None and age < rule.min_age


def check_red_flags(state: dict[str, Any], rules: RuleSet | None = None) -> list[RedFlag]:
    """The rules the state satisfies, in rule order, each with its evidence, at the rule's level or the level an
    ``any_of`` condition that holds raises it to (suspected DKA). A rule satisfied only with items the patient was
    unsure about ("not sure if I passed out") is raised as ``possible`` (at its own level when a hedge keeps the
    level: self-harm, suicide)."""
    rules = rules or default_rules()
    flags = []
    for rule in rules.rules:
        if too_young(rule, state):
            continue
        if (found := _rule_evidence(rule, state, rules.vocab, uncertain=False)) is not None:
            evidence, level = found
            flags.append(RedFlag(rule.id, rule.message, level, evidence))
        elif (found := _rule_evidence(rule, state, rules.vocab, uncertain=True)) is not None:
            evidence, level = found
            flags.append(RedFlag(rule.id, rule.message, level if rule.hedge_keeps_level else "possible", evidence))
    return flags


def _level(rule: Rule, uncertain: bool, firm: bool = True) -> str:
    """The rule's level for firm evidence; "possible" for a merely similar clause, and for a hedged one unless the
    rule keeps its level through hedges (self-harm, suicide)."""
    if not firm:
        return "possible"
    return rule.level if rule.hedge_keeps_level or not uncertain else "possible"


_AGAIN = re.compile(r"\b(?:again|another one|once more)\b", re.I)


_ENDED_YEARS_AGO = re.compile(
    r"(?:\bnot|n't|n’t|\bnever)\b[^.!?;]{0,30}?\b(?:in|for)\s+(?:well\s+)?(?:over\s+|more than\s+|about\s+|nearly\s+|"
    r"almost\s+|the (?:last|past)\s+)?(?:\w+\s+)?(?:years|decades)\b|\bnot since\b[^.!?;]{0,40}?\b(?:years?|school|"
    r"teen\w*|uni|university|college|i was (?:a|at|in|young\w*))\b|\bclean for\s+(?:\w+\s+)?years\b", re.I)
"""A past episode said to have ended years ago ("I haven't done it in over ten years", "not since school")."""


_NOT_SINCE = re.compile(
    r"\b(?:never\s+(?:happened|had\s+(?:it|one|another)|came\s+back|come\s+back|returned|recurred)(?:\s+again|\s+since)?|"
    r"not\s+(?:happened\s+|had\s+(?:it|one|any|another)\s+|been\s+back\s+)?since|"
    r"(?:hasn't|hasn’t|haven't|haven’t|has\s+not|have\s+not)\s+(?:happened|had\s+(?:it|one|any|another)|come\s+back|"
    r"returned|recurred)\s+(?:again|since)|nothing\s+since|no\s+(?:problems?|trouble|bother|issues?)\s+since|"
    r"(?:fine|well|right\s+as\s+rain|ok|okay|good|grand|clear|all\s+clear|no\s+bother)\s+(?:ever\s+)?since|"
    r"fully\s+recovered|(?:completely|totally|fully)\s+(?:better|gone|resolved|healed|cleared(?:\s+up)?|recovered))\b",
    re.I)
"""Words that tell a past episode is over and has not come back ("never happened again", "nothing since", "right as
rain ever since", "fully recovered")."""
OVER_AND_DONE_DAYS = 30.0
"""How long ago a past episode said to be over must be for the screen to take it as history: "crushing chest pain
this morning, gone now, fine since" is still today's (NICE CG95: chest pain within 12 hours is an emergency)."""


def over_and_done(text: str) -> bool:
    """Whether a turn tells an episode that is over, has not come back and was at least :data:`OVER_AND_DONE_DAYS`
    ago ("Back in March I passed out once giving blood, it's never happened again"; "a lump in 2018, a cyst, they
    drained it, nothing since"): the patient's history, which the NLU records, not a red flag now. The risks to
    life a patient may only hint at (``hedge_keeps_level``) keep their own reading of the past."""
    low = text.lower()
    ended = list(_NOT_SINCE.finditer(low))
    if not ended or happened_again_lately(low):
        return False
    rest = low[ended[-1].end():]
    then = re.search(r"[.;!?]|\bbut\b", rest)  # the next clause ("fully recovered now" is still the history's)
    if then is not None and _NOW.search(rest[then.end():]):
        return False  # "breast cancer five years ago, all clear since. Now my back has hurt for six weeks": a present
        # complaint told after the history (which a rule may read as its risk, a past cancer)
    days = onset_days({"onset": low})
    return days is not None and days >= OVER_AND_DONE_DAYS


_LIFELONG = re.compile(r"\b(?:always|all my life|my whole life|all (?:his|her) life|for (?:many )?(?:years|decades)|"
                       r"as long as i can remember|since (?:i was )?(?:a )?(?:child|kid|birth|baby|teenager)|"
                       r"every (?:winter|summer|spring|autumn|year))\b")
"""How the patient has always been: no acute change (:func:`_semantic_flags`)."""
_NOW = re.compile(r"\b(?:now|these days|lately|recently|this (?:week|month|time|morning|afternoon|evening)|today|"
                  r"tonight|yesterday|since (?:last|this|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
                  r"for (?:the )?(?:last|past) |for (?:a |\w+ )?(?:few |couple of )?(?:days|weeks))\b")
"""A present time after a history told over and done: what follows is now, not the past episode."""


def told_over_and_done(flags: list[RedFlag], said: str, before: dict[str, Any] | None,
                       rules: RuleSet | None = None) -> list[RedFlag]:
    """The state's flags without those a turn told as :func:`over_and_done` history: a flag whose every state item is
    new in this turn (not in ``before``, the state before it) goes; one that rests on anything told before stays
    ("chest pain since this morning", then "I fainted once back in March, never again": the chest pain's flag
    stays). Self-harm and suicide (``hedge_keeps_level``) keep theirs."""
    if not over_and_done(said):
        return flags
    rules = rules or default_rules()
    keeps = {r.id for r in rules.rules if r.hedge_keeps_level}
    known = {(slot, str(it.get("value"))) for slot, items in (before or {}).items() if isinstance(items, list)
             for it in items if isinstance(it, dict)}
    return [f for f in flags if f.id in keeps or not f.evidence
            or any((e.get("slot"), str(e.get("value"))) in known for e in f.evidence)]


def happened_again_lately(sentence: str) -> bool:
    """Whether a sentence tells a past event came back lately ("I fainted two years ago and again this morning"): its
    past-time cue does not make the event history, and the onset the NLU keeps (when it first began,
    :data:`PAST_EPISODE_DAYS`) does not hide it."""
    low = sentence.lower()
    return bool(_AGAIN.search(low) and (_TODAY.search(low) or _YESTERDAY.search(low)))


def _phrase_flags(text: str, rules: RuleSet) -> tuple[dict[str, RedFlag], dict[str, list[str]]]:
    """The flags the rules' phrases raise, and the near misses of rule phrases said (rule id -> the sentences that
    say them: "I thought I was going to pass out so I sat down on the floor"), which raise nothing, by phrase or by
    meaning: the rest of such a sentence tells the near miss ("... so I sat down"), not the event. The idioms said
    are there too (:data:`IDIOM` -> their words), which the meaning is read without."""
    out: dict[str, RedFlag] = {}
    near: dict[str, list[str]] = {}
    if rules.finder is None:
        return out, near
    by_id = {r.id: r for r in rules.rules}
    for f in rules.finder.find(text)[0]:
        if f.key == ORDINARY:
            continue  # an ordinary phrase that looks like a rule's ("feel faint" is no faint): its span is taken
        if f.key == IDIOM:  # a figure of speech in a rule's words ("I could have killed him"): its span is taken,
            near.setdefault(IDIOM, []).append(f.text.lower())  # and by meaning the clause is read without it
            continue
        if f.key.startswith(NEAR_MISS):
            near.setdefault(f.key.removeprefix(NEAR_MISS), []).append(f.sentence.lower())
            continue
        rule = by_id[f.key.removeprefix(PATTERN)]
        historical = f.historical and not happened_again_lately(f.sentence)
        if f.status == "negative" or f.family or (historical and not rule.hedge_keeps_level):
            continue
        # a past episode (only self-harm's and suicide's rules read one) is history to ask about, "possible": a hedge
        # keeps their level, the past does not ("I used to self-harm at school, not in ten years")
        level = "possible" if historical else _level(rule, uncertain=f.status == "unknown")
        flag = out.setdefault(rule.id, RedFlag(rule.id, rule.message, level, []))
        if LEVELS.index(level) < LEVELS.index(flag.level):
            flag.level = level
        match = "pattern" if f.key.startswith(PATTERN) else "phrase"
        flag.evidence.append({"text": f.text, "sentence": f.sentence, "match": match})
    return out, near



_INABILITY = re.compile(r"\b(?:cannot|can't|can’t|can not|couldn't|couldn’t|unable|won't|won’t|"
                        r"(?:not|never|n't|n’t)\s+(?:been\s+|be\s+)?able)\b|n't\s+(?:been\s+|be\s+)?able\b", re.I)
"""A negation that says a sign (an inability: "I cannot pass urine"), not a denial: a description negated only so
meets a clause that says an inability too, never one that denies ("No problems with my bladder")."""


def _says_only_inability(text: str) -> bool:
    """Whether every negation in ``text`` is an inability ("I cannot pass urine at all and my bladder hurts")."""
    return bool(_INABILITY.search(text)) and not NEGATION_WORD.search(_INABILITY.sub(" ", text))

LOW_PATH_MIN_WORDS = 3  # content words a clause needs before the recall-first low path reads it


def _without(text: str, spans: list[str]) -> str:
    """``text`` without the words of ``spans`` (case-insensitive), or as it is when that leaves nothing."""
    out = text
    for span in spans:
        out = re.sub(re.escape(span), " ", out, flags=re.I)
    return out if out.strip(" ,.!?;") else text


def _semantic_flags(text: str, rules: RuleSet, near: dict[str, list[str]] | None = None) -> dict[str, RedFlag]:
    """Each clause of ``text`` against every rule description by cosine similarity. A negated, family or past clause
    fires nothing (a past one only "possible" for self-harm and suicide), except through a description that is
    itself negated ("I don't want to be here any more"); a clause of a sentence that says a near miss of a rule's
    phrase (``near``: rule id -> the sentences, "I nearly keeled over in the shower") raises that rule neither."""
    refs, ref_emb = rules.references
    if not refs:
        return {}
    clauses = [c for c in rules.clauses.clauses(text) if not c.family
               and not says_it_works(c.text)]
    if not clauses:
        return {}
    # a clause that denies part of what it says is compared by what it affirms: "My arm's not weak, it just aches with
    # the pain" is no "my arm suddenly went weak" (0.76 as said); a wholly denied clause keeps its words (it meets
    # only the descriptions that deny too)
    partly = [i for i, c in enumerate(clauses) if c.denies and not c.negated and c.affirmed]
    encoder = rules.encoder or default_encoder()
    idioms = (near or {}).get(IDIOM, [])  # "I could've killed him": compared without the idiom's words
    emb = encoder.embed([gloss(_without(c.text, idioms)) for c in clauses])
    sims = emb @ ref_emb.T
    ordinary = emb @ rules.ordinary_embeddings.T if rules.ordinary else np.zeros((len(clauses), 1), dtype=np.float32)
    # how near each clause is to the nearest ordinary complaint, per description: by the same words as the description
    nearest_ordinary = np.repeat(ordinary.max(axis=1)[:, None], len(refs), axis=1)
    if partly:  # ... except with a description that denies too ("... and not waking up": "... and not wake up")
        said = encoder.embed([gloss(clauses[i].affirmed) for i in partly])
        sims[partly] = np.where(rules.denying_references[None, :], sims[partly], said @ ref_emb.T)
        if rules.ordinary:  # and it is contrasted by what it affirms too: "I've got a sore throat but I can open
            # my mouth fine" is an ordinary sore throat, not the trismus its denied words are near
            affirmed_ordinary = (said @ rules.ordinary_embeddings.T).max(axis=1)[:, None]
            nearest_ordinary[partly] = np.where(rules.denying_references[None, :], nearest_ordinary[partly],
                                                affirmed_ordinary)
    negated = np.array([c.negated for c in clauses])[:, None]
    # a clause denied by a verdict ("I'm getting air in fine") says all is well: no negated description meets it
    says_not = np.array([bool(NEGATION_WORD.search(c.text)) for c in clauses])[:, None]
    # ... and a description negated only by an inability meets only a clause that says an inability too
    says_inability = np.array([bool(_INABILITY.search(c.text)) for c in clauses])[:, None]
    ref_inability = np.array([neg and _says_only_inability(d) for _, d, neg in refs])[None, :]
    past = np.array([c.historical for c in clauses])[:, None]
    # a clause that says how the patient has always been ("I'm always tired and cold", "I've had bad knees all my
    # life") tells no acute change: by meaning it raises only the rules that read the past (0.69 from sepsis's "cold
    # and shivery and exhausted" had raised it as "possible"); a present change said with it keeps it ("always
    # tired, but this week I can't get out of bed")
    lasting = np.array([bool(_LIFELONG.search(c.text.lower())) and not _NOW.search(c.text.lower())
                        for c in clauses])[:, None]
    reads_past = np.array([rules.rules[i].reads_the_past or rules.rules[i].hedge_keeps_level
                           for i, _, _ in refs])[None, :]
    ref_negated = np.array([neg for _, _, neg in refs])[None, :]
    keeps = np.array([rules.rules[i].hedge_keeps_level for i, _, _ in refs])[None, :]
    # a rule with a context (a pregnancy) is not contrasted with the ordinary complaints: in its context the ordinary
    # complaint is the sign (a headache at 34 weeks); without it the rule raises nothing (:func:`_context_met`)
    in_context = np.array([rules.rules[i].context is not None for i, _, _ in refs])[None, :]
    screen = rules.screen
    contrast = sims - nearest_ordinary  # how much nearer to the description than to any ordinary one
    recall_first = np.array([rules.rules[i].recall_first for i, _, _ in refs])[None, :]
    # The low path reads only what can carry a hint: a clause that denies nothing, unless the description denies
    # too ("I've no thoughts of harming myself, if that's what you're wondering" is near self-harm by its denied
    # words; "... and not waking up" is near "go to sleep and not wake up"), and that says more than a topic
    # (a short clause's embedding is its one or two topic words: "I'm on the combined pill" is 0.64 from "taking
    # all my pills at once").
    denies = np.array([c.denies for c in clauses])[:, None]
    hints = (~denies | rules.denying_references[None, :]) & np.array(
        [c.words >= LOW_PATH_MIN_WORDS for c in clauses])[:, None]
    if rules.ordinary_history:  # the low path is also contrasted with the social and drug history
        history = (emb @ rules.ordinary_history_embeddings.T).max(axis=1)[:, None]
        low_contrast = np.minimum(contrast, sims - history)
    else:
        low_contrast = contrast
    usable = (
        (~negated | (ref_negated & says_not & (~ref_inability | says_inability)))
        & (~past | keeps)  # context: no denial, no past (but self-harm's)
        & (~lasting | reads_past)
        & (((in_context | (contrast >= screen.margin)) & (sims >= screen.possible))  # nearer than the ordinary
           | (recall_first & hints & (low_contrast >= screen.recall_first_margin)
              & (sims >= screen.recall_first_possible)))
    )
    # a clause raises the rules it is nearest to, not every rule that shares half its words: "my calf has been swollen
    # since the flight" is a DVT's (0.92), not the pulmonary embolism of "my calf is swollen and I am breathless"
    # (0.75). Rules with a context are neither rivals nor suppressed: their context is read after this.
    rivals = np.where(usable & ~in_context, sims, -1.0).max(axis=1)[:, None]
    usable &= in_context | (sims >= rivals - screen.rival)
    best: dict[int, tuple[float, int, int]] = {}  # rule index -> (similarity, clause, description row)
    for ci, ri in zip(*np.nonzero(usable), strict=True):
        rule_i, sim = refs[ri][0], float(sims[ci, ri])
        said = clauses[ci].text.lower()
        if near and any(said in sent or sent in said for sent in near.get(rules.rules[rule_i].id, ())):
            continue
        if sim > best.get(rule_i, (0.0, 0, 0))[0]:
            best[rule_i] = (sim, int(ci), int(ri))
    out = {}
    for rule_i, (sim, ci, ri) in best.items():
        rule, clause = rules.rules[rule_i], clauses[ci]
        level = _level(rule, clause.uncertain or clause.historical, firm=sim >= screen.fire)
        out[rule.id] = RedFlag(
            rule.id,
            rule.message,
            level,
            [{"text": clause.text, "matched": refs[ri][1], "similarity": round(sim, 3), "match": "semantic"}],
        )
    return out


def context_held(rule: Rule, state: dict[str, Any] | None, vocab: Vocabulary) -> bool:
    """Whether the state holds what a context rule needs (its ``all_of``: a pregnancy). A rule without a context needs
    nothing. The clinician's summary reads this too: a context rule's screen means nothing outside its context."""
    if rule.context is None:
        return True
    if not state:
        return False
    return all(_matches(state, cond, vocab) for cond in rule.all_of)


def context_needs(rule: Rule, state: dict[str, Any], vocab: Vocabulary) -> list[str]:
    """What a context rule needs (its ``all_of``), each with what the state says of it: ``pregnancy: denied`` or
    ``pregnancy: not reported`` (the clinician's summary says it of a screen outside its context)."""
    return [f"{' or '.join(cond.values)}: {'denied' if _matches(state, cond, vocab, ('negative',)) else 'not reported'}"
            for cond in rule.all_of]


def _context_met(rule: Rule, text: str, state: dict[str, Any] | None, rules: RuleSet) -> bool:
    """Whether what ``rule.context`` needs is known: the state holds the rule's ``all_of``, or a clause of ``text``
    that is neither denied nor about a relative says it (a context phrase as whole words, or a context description
    at the firing similarity)."""
    if context_held(rule, state, rules.vocab):
        return True
    if rules.context_finder is not None and any(
            f.key == rule.id and f.status != "negative" and not f.family for f in rules.context_finder.find(text)[0]):
        return True
    clauses = [c for c in rules.clauses.clauses(text) if not c.negated and not c.family]
    if not clauses or rule.id not in rules.context_embeddings:
        return False
    sims = (rules.encoder or default_encoder()).embed([gloss(c.text) for c in clauses])
    return bool((sims @ rules.context_embeddings[rule.id].T >= rules.screen.fire).any())


def _denied(state: dict[str, Any], cond: Condition, vocab: Vocabulary) -> bool:
    """Whether the state denies ``cond``: a negative item meets it, or denies its value everywhere ("no pain" said of
    no place denies a pain in the belly; "no pain in my knee" does not)."""
    if _matches(state, cond, vocab, ("negative",)):
        return True
    if not cond.location:
        return False
    anywhere = replace(cond, location=())
    return any(not e.get("location") for e in _matches(state, anywhere, vocab, ("negative",)))


def denied_before(rule: Rule, flag: RedFlag, state: dict[str, Any] | None, vocab: Vocabulary) -> bool:
    """Whether a flag the words raised only by meaning names what the patient has already denied: every ``any_of``
    condition of its rule is denied in the state or not held, and one is denied ("my eyes aren't red", then "the
    sight in my right eye went misty", 0.73 from a painful red eye's description), or an ``all_of`` condition, which
    the rule cannot do without, is denied and not held ("my period's late, the test was negative and I've got no
    pain": an ectopic pregnancy needs the pain). Such a ``possible`` flag is set aside and a firmer one lowered to
    ``possible`` (:func:`check_text_flags`); a phrase's, or a rule with neither, never."""
    if not state or not (rule.any_of or rule.all_of):
        return False
    if any(e.get("match") != "semantic" for e in flag.evidence):
        return False
    if any(_denied(state, c, vocab) and not _matches(state, c, vocab) for c in rule.all_of):
        return True
    if not rule.any_of:
        return False
    denied = [_denied(state, c, vocab) for c in rule.any_of]
    held = [bool(_matches(state, c, vocab)) for c in rule.any_of]
    return any(denied) and not any(held)


def eased(rule: Rule, state: dict[str, Any] | None, vocab: Vocabulary) -> bool:
    """Whether the state holds the sign of a rule that wants it severe (``not_mild``) only as mild or easing: "my
    testicle aches a bit after a long ride" is near a torsion's words, and the state says how bad it is."""
    strict = [c for c in rule.any_of if c.not_mild]
    if not strict or not state:
        return False
    held = any(_matches(state, c, vocab) for c in strict)
    return not held and any(_matches(state, replace(c, not_mild=False), vocab) for c in strict)


def _said_with(rule: Rule, flag: RedFlag, text: str) -> bool:
    """Whether a sentence of ``text`` that holds a clause of ``flag``'s evidence says one of the rule's ``said_with``
    words (a head injury's blow: "hit", "banged", "fell"), so that a match by meaning is about what the rule is."""
    sentences = re.split(r"(?<=[.!?])\s+", text)
    clauses = [str(e.get("text") or "") for e in flag.evidence]
    return any(any(p.search(_SIMILE.sub(" ", s)) for p in rule.said_with)
               for s in sentences if any(c and c in s for c in clauses))


_SIMILE = re.compile(r"\b(?:like|as if|as though)\s+(?:someone|somebody|something|i'd|i had|i've|i'd been|being|i was|"
                     r"i've been|a|an|it|he|she|they)\b[^.!?,;]*", re.I)
"""A simile's clause ("like someone smacked me with a bat"): its blow is a figure of the pain, not a blow."""


def explained(rule: Rule, flag: RedFlag) -> bool:
    """Whether every sentence that raised ``flag`` from words also says what explains the sign away (the rule's
    ``explained_by``: "my shoulder is so stiff I can't lift my arm" is the pain's, not a stroke's weakness). Recall
    first: a firm such flag is kept, as "possible", for the clinician to judge (a merely similar one is dropped); the
    state's own evidence is never lowered."""
    said = [str(e.get("sentence") or e.get("text") or "") for e in flag.evidence]
    return bool(rule.explained_by) and bool(said) and all(any(p.search(s) for p in rule.explained_by) for s in said)


def check_text_flags(text: str, rules: RuleSet | None = None, opening: bool = False,
                     state: dict[str, Any] | None = None) -> list[RedFlag]:
    """The rules the patient's own words raise, so a red flag never depends on the NLU alone: the rules' lay phrases
    (whole words) and the semantic screen (each clause against the rules' descriptions), both reading ConText
    ("no blood in my sputum" and "my father coughed up blood" do not fire). Recall before precision: a hedged or
    merely similar statement is raised as ``possible``. One flag per rule, at the most severe level either gives.

    ``opening``: the turn is the interview's opening statement, where a guardian may be speaking for the patient
    ("My son had a fit this morning"): that report is read as the patient's own (``clinical_text.as_the_patient``)
    and each flag's evidence names who spoke."""
    rules = rules or default_rules()
    if not text.strip():
        return []
    text = repaired(plain_english(text))  # "she cannae lift her arm": the readers know "can't"; a slip corrected
    relative = None
    if opening:
        text, relative = as_the_patient(text)
    found, near = _phrase_flags(text, rules)
    by_id = {r.id: r for r in rules.rules}
    for rid, flag in _semantic_flags(text, rules, near).items():
        if by_id[rid].said_with and not _said_with(by_id[rid], flag, text):
            continue  # "this headache exploded at the back of my head" is near a head injury's words, with no blow
        if rid not in found:
            found[rid] = flag
            continue
        have = found[rid]
        if LEVELS.index(flag.level) < LEVELS.index(have.level):
            have.level = flag.level
        have.evidence.extend(flag.evidence)
    for rule in rules.rules:  # a rule that needs a context (a pregnancy) raises nothing from words without it, and
        if rule.context is None:  # with it, a sign the state already holds raises it ("I'm 30 weeks" after a headache)
            continue
        held = ([] if rule.id in found or not state
                else [e for c in rule.any_of for e in _matches(state, c, rules.vocab)])
        if rule.id not in found and not held:
            continue  # nothing to raise: the context is not read (most turns)
        if not _context_met(rule, text, state, rules):
            found.pop(rule.id, None)
        elif rule.id not in found:
            found[rule.id] = RedFlag(rule.id, rule.message, rule.level, [*held, {"text": text, "match": "context"}])
    for rule in rules.rules:
        if rule.id not in found:
            continue
        if too_young(rule, state):
            del found[rule.id]
            continue
        # recall first: a firm match denied before or explained away by its own words is kept, lowered to
        # "possible"; a weak one, or one both denied and explained, goes
        against = (denied_before(rule, found[rule.id], state, rules.vocab),
                   explained(rule, found[rule.id]) or eased(rule, state, rules.vocab))
        if all(against) or (any(against) and found[rule.id].level == "possible"):
            del found[rule.id]
        elif any(against):
            found[rule.id].level = "possible"
    for rule in rules.rules:  # a past self-harm the patient says ended years ago is their history (recorded as
        # such), not a risk now: "I used to cut when I was at school, I haven't in ten years" raises nothing
        if (rule.id in found and rule.hedge_keeps_level and found[rule.id].level == "possible"
                and _ENDED_YEARS_AGO.search(text) and not happened_again_lately(text)):
            del found[rule.id]
    if over_and_done(text):  # "a crushing chest pain back in 2015, stents, right as rain ever since": history
        for rule in rules.rules:
            if rule.id in found and not rule.hedge_keeps_level:
                del found[rule.id]
    if relative:
        for flag in found.values():
            for e in flag.evidence:
                whom = f"the patient as '{relative}'" if relative in ("he", "she") else f"their {relative}"
                e["told_by"] = f"a guardian, speaking of {whom} (read as the patient's own words)"
    return [found[r.id] for r in rules.rules if r.id in found]


@lru_cache(maxsize=1)
def default_rules() -> RuleSet:
    return shared_rules(DEFAULT_RULES)


def shared_rules(path: str | Path) -> RuleSet:
    """The rules of ``path``, loaded once per process while the file stays as it is: every agent a process builds
    (each session store builds one) reads the same rules, and building their phrase finders and embeddings again
    cost a resumed session about a second of its first turn. A changed file is loaded anew."""
    resolved = Path(path).resolve()
    st = resolved.stat()
    return _rules_of(str(resolved), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=8)
def _rules_of(path: str, mtime_ns: int, size: int) -> RuleSet:
    return load_rules(path)


HARM_TO_OTHERS = "harm_to_others"  # the rule id of thoughts of harming others (the one disclosure not self-directed)


@lru_cache(maxsize=3)
def disclosures(self_directed: bool | None = None) -> frozenset[str]:
    """The symptom values of the rules a hedge never lowers (suicide, self-harm, harm to others: ``hedge_keeps_level``).
    The NLU records a hedged or unsure disclosure of them as had: a hint is how patients say it, and NICE NG225 asks
    that every one be taken as a disclosure and assessed. ``self_directed``: only the patient's own (True) or only the
    harm to others (False)."""
    return frozenset(v for r in default_rules().rules if r.hedge_keeps_level
                     and (self_directed is None or (r.id != HARM_TO_OTHERS) == self_directed)
                     for c in (*r.all_of, *r.any_of) if c.slot == "symptom" for v in c.values)


def disclosed(flags: Iterable[dict[str, Any]], rules: RuleSet) -> list[str]:
    """The symptom values that flags of the disclosure rules (``hedge_keeps_level``: suicide, self-harm, harm to
    others) raised firmly from the patient's own words name: the patient said them, so the interview holds them as
    had and goes on to assess them (NICE NG225), instead of asking whether the patient has what they just told. A
    flag raised as ``possible`` (a hint on the low path) names nothing."""
    by_id = {r.id: r for r in rules.rules}
    out: list[str] = []
    for f in flags:
        rule = by_id.get(str(f.get("id")))
        if (rule is None or not rule.hedge_keeps_level or f.get("level") == "possible"
                or not any(e.get("match") in ("phrase", "pattern", "semantic") for e in f.get("evidence") or [])):
            continue
        value = next((v for c in (*rule.all_of, *rule.any_of) if c.slot == "symptom" for v in c.values), None)
        if value is not None and value not in out:
            out.append(value)
    return out


def disclosure_words(text: str, rules: RuleSet) -> list[str]:
    """The words of ``text`` that a disclosure rule's phrases or patterns found (suicide, self-harm, harm to others:
    ``hedge_keeps_level``) and raised: not denied, nor a relative's. A reader of ordinary complaints leaves them to the
    screen: "it would be easier if I never woke up" is the wish to be dead, not the sleep trouble it is near by
    meaning."""
    flags, _ = _phrase_flags(text, rules)
    by_id = {r.id: r for r in rules.rules}
    return list(dict.fromkeys(str(e["text"]) for f in flags.values() if by_id[f.id].hedge_keeps_level
                              for e in f.evidence if e.get("match") in ("phrase", "pattern") and e.get("text")))


def told_acts(text: str, rules: RuleSet) -> dict[str, list[str]]:
    """Disclosure symptom value -> the patient's own words, in ``text``, of what they did or plan, found by the
    disclosure rules' patterns (pills put aside, goodbye letters: C-SSRS preparatory behaviour). They answer the risk
    assessment's question about plans and preparations (asked as the item's characteristics), so it is not put to a
    patient who has just told it, even when the rule's flag was raised before. Phrases and patterns only: no encoder."""
    flags, _ = _phrase_flags(text, rules)
    by_id = {r.id: r for r in rules.rules}
    out: dict[str, list[str]] = {}
    for f in flags.values():
        rule = by_id[f.id]
        value = next((v for c in (*rule.all_of, *rule.any_of) if c.slot == "symptom" for v in c.values), None)
        words = [str(e["text"]) for e in f.evidence if e.get("match") == "pattern" and e.get("text")]
        if rule.hedge_keeps_level and value is not None and words:
            out.setdefault(value, [])
            out[value] += [w for w in dict.fromkeys(words) if w not in out[value]]
    return out


# --------------------------------------------------------------------------- patient text is data

MAX_PATIENT_CHARS = MAX_UTTERANCE_CHARS  # the patient's words, cut here: what a prompt may hold of one turn
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")
_INJECTION = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bignore (all |any )?(your |the |previous |prior |above )*(instructions|rules|prompt)",
        r"\bdisregard (all |any )?(your |the |previous |prior |above )*(instructions|rules|prompt)",
        r"\b(system|developer) (prompt|message)\b",
        r"\byou are now\b",
        r"\bact as\b",
        r"\bpretend (to be|you are)\b",
        r"<\|?(im_start|im_end|system|assistant|user)\|?>",
        r"\bnew instructions\b",
    )
]


def clean_patient_text(text: str, max_chars: int = MAX_PATIENT_CHARS) -> str:
    """Patient text as it may enter a prompt: NFC, no control or bidi-override characters, bounded length.
    A lone UTF-16 surrogate (``"\\ud800"``: not a character, and no session store can encode it) becomes U+FFFD; a
    well-formed pair becomes its character. Nothing else changes: the words are the patient's and stay so."""
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    text = _CONTROL.sub("", unicodedata.normalize("NFC", text)).strip()
    return text[:max_chars]


def injection_markers(text: str) -> list[str]:
    """The instruction-like phrases found in patient text (for the session record; never used to act)."""
    found = [m for p in _INJECTION if (m := p.search(text))]
    return [m.group(0) for m in sorted(found, key=lambda m: m.start())]


@dataclass
class Admitted:
    """NLU output after the CMAS gate: ``frames`` are strict CMAS; ``rejected`` is what was set aside, by path."""

    frames: list[dict[str, Any]]
    rejected: dict[str, Any]


def admit_frames(raw: object, vocab: Vocabulary | None = None, utterance: str | None = None) -> Admitted:
    """The only door from NLU output to the patient state: schema-valid CMAS frames pass, anything else
    (unknown slots, attributes, intents, free text, instructions) is set aside and reported.

    With ``vocab``, the frames must also be grounded (``agent.core.grounding``): a medical head value the vocabulary
    does not know is set aside, and with ``utterance`` so is a free-text value the patient did not say.
    """
    lenient = cmas_lenient.parse_nlu_lenient(raw)
    frames, rejected = cmas.parse_nlu(lenient.value), dict(lenient.extra)
    if vocab is not None:
        frames = cmas.parse_nlu(ground_frames(frames, utterance, vocab, rejected))
    return Admitted(frames, rejected)


def apply_patient_turn(
    state: dict[str, Any], raw_nlu: object, vocab: Vocabulary | None = None
) -> tuple[dict[str, Any], Admitted]:
    """The new patient state after one patient turn, changed only through admitted frames."""
    admitted = admit_frames(raw_nlu, vocab)
    return cmas.parse_state(update_state(state, admitted.frames)), admitted


# --------------------------------------------------------------------------- the agent is not a clinician

_CLINICIAN_CLAIMS = re.compile(
    r"\b(i am|i'm|i’m|as) (a |an |your )?(doctor|physician|clinician|nurse|gp|medical doctor|specialist)\b"
    r"|\bmy diagnosis is\b|\bi (can )?diagnose you\b|\byou (definitely|certainly) have\b",
    re.IGNORECASE,
)


def claims_clinician(text: str) -> bool:
    """True when agent text presents the agent as a clinician or states a diagnosis as fact."""
    return bool(_CLINICIAN_CLAIMS.search(text))
