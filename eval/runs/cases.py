"""Case cards: what a simulated patient knows, in CMAS terms, and the facts a history is scored on.

A **case card** is the gold final patient state of an interview (the MediTOD ``dialog_state`` layout: prefix-form
CMAS slots, ``positive_symptom`` ...), plus the chief complaint the patient opens with, the expected red flags and,
where known, the working diagnosis. Two sources, one model (:class:`CaseCard`):

- a hand-written YAML card (``data/cases/*.yaml``, format in ``data/cases/README.md``);
- a MediTOD dialogue (:func:`card_from_dialogue`): its last annotated ``dialog_state``, the positive symptoms of
  its first informative patient turn as the chief complaint, the disease of its ``diagnosis`` action.

Every card is checked as the live agent would check an NLU frame: strict CMAS (:func:`agent.core.cmas.parse_state`) and
grounded (:func:`agent.core.grounding.ground_item`: every medical head value resolves in ``configs/vocabulary.yaml``,
progressions and severities are valid options), so whatever the card says can enter the agent's state.

**Facts** (:class:`Fact`) are what coverage counts: a medical item gives one fact for its head (slot type, status,
value) and one per attribute value (a list attribute gives one fact per element); a record slot (travel,
occupation, residence, basic information) gives one fact per key. Canonical vs non-canonical is MediTOD's split
(``agent.core.cmas.SlotSpec.canonical``: heads and canonical attributes vs free text). Matching a fact against a state:
heads by concept (:meth:`agent.core.ontology.Vocabulary.same`, so ``shortness of breath`` is ``dyspnea``) under the same
status; canonical attribute values exactly (case and spacing folded); free-text values when the content words of
the wanted value occur in the found value (:func:`agent.core.grounding.grounded_in`: "two weeks ago" is found in "for
two weeks now"). Support (:func:`supported`, for precision) accepts the match either way round.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agent.core import cmas
from agent.core.data import Dialogue, load_dialogues
from agent.core.grounding import ground_item, grounded_in
from agent.core.ontology import Vocabulary, default_vocabulary, find_item
from agent.core.paths import REPO_ROOT, problem, read_yaml_mapping
from agent.core.safety import RuleSet, check_red_flags, default_rules

DEFAULT_CASES_DIR = REPO_ROOT / "data" / "cases"
DOMAINS = ("respiratory", "cardiac", "musculoskeletal", "gastro", "mental health", "neurological", "genitourinary",
           "endocrine", "skin", "ent", "infection", "haematology", "other")
PRESENTATIONS = ("cough", "breathlessness", "chest_pain", "palpitations", "syncope_dizziness", "headache",
                 "weakness_numbness", "abdominal_pain", "gi_bleeding", "vomiting_diarrhoea", "back_pain", "joint_pain",
                 "urinary", "fever", "sore_throat", "rash", "low_mood_anxiety", "fatigue_weight_loss", "red_eye",
                 "scrotal_pain", "leg_pain_swelling", "ear_hearing")
"""The presenting-complaint classes a card's interview should follow (``CaseCard.presentation``)."""
NEGATIVE_STATUSES = frozenset({"negative", "unavail", "not_traveled", "false", "not_living"})
OPEN_HEADS = cmas.OPEN_VALUES


class CaseError(ValueError):
    """A card that is not valid CMAS, not grounded, or inconsistent; the message names the file and the path."""


# --------------------------------------------------------------------------- the card


class CaseCard(BaseModel):
    """One simulated patient. ``state`` is the gold final patient state (prefix-form CMAS)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    title: str
    domain: Literal[DOMAINS] = "other"  # type: ignore[valid-type]
    presentation: Literal[PRESENTATIONS] | None = None  # type: ignore[valid-type]  # the chief complaint's class
    source: str = "hand-written"
    chief_complaint: list[str] = Field(min_length=1, description="positive symptom values the patient opens with")
    diagnosis: str | None = None
    red_flags: list[str] = Field(default_factory=list, description="red-flag rule ids a clinician expects")
    persona: str = ""  # how the patient comes across (the LLM simulator's role), never a fact source
    notes: str = ""  # clinical review note
    state: dict[str, Any]

    @field_validator("state")
    @classmethod
    def _cmas_state(cls, value: dict) -> dict:
        try:
            return cmas.parse_state(value)
        except cmas.CMASError as exc:
            raise ValueError(f"state.{exc}") from None

    @model_validator(mode="after")
    def _grounded(self) -> CaseCard:
        vocab = default_vocabulary()
        for name, items in self.state.items():
            base = cmas.split_slot_name(name)[1]
            for i, item in enumerate(items):
                bad = ground_item(base, item, None, vocab)
                if bad:
                    raise ValueError(f"state.{name}.{i}: not accepted by the agent's grounding: {bad}")
        positives = [it["value"] for it in self.state.get("positive_symptom") or []]
        for value in self.chief_complaint:
            if not any(vocab.same("symptom", value, p) for p in positives):
                raise ValueError(f"chief_complaint {value!r} is not a positive_symptom of the card")
        return self

    def items(self, base: str) -> Iterator[tuple[str | None, dict]]:
        """``(status, item)`` of every item of slot type ``base`` (status None for record slots)."""
        yield from cmas.slot_items(self.state, base)

    def find(self, base: str, value: str, vocab: Vocabulary | None = None) -> tuple[str | None, dict] | None:
        """The card's item naming the same concept as ``value`` (any status), or None."""
        return find_item(self.state, base, value, vocab or default_vocabulary())

    def facts(self) -> list[Fact]:
        return state_facts(self.state)


# --------------------------------------------------------------------------- loading


def load_card(path: str | Path, rules: RuleSet | None = None) -> CaseCard:
    """One YAML card; a :class:`CaseError` naming the file and the failing key otherwise."""
    p = Path(path)
    raw = read_yaml_mapping(p, CaseError, "a case card")
    try:
        card = CaseCard.model_validate(raw)
    except ValidationError as exc:
        raise CaseError(f"{p}: {problem(exc.errors()[0])}") from None
    check_red_flag_ids(card, rules, str(p))
    return card


def check_red_flag_ids(card: CaseCard, rules: RuleSet | None, where: str) -> None:
    known = {r.id for r in (rules or default_rules()).rules}
    unknown = [f for f in card.red_flags if f not in known]
    if unknown:
        raise CaseError(f"{where}: red_flags {unknown} are not rule ids of the red-flag rules ({sorted(known)})")


def load_cards(paths: Iterable[str | Path], rules: RuleSet | None = None) -> list[CaseCard]:
    """Cards from files and directories (every ``*.yaml`` inside, sorted); ids must be unique."""
    cards: list[CaseCard] = []
    for path in paths:
        p = Path(path)
        if p.is_dir():
            files = sorted(p.glob("*.yaml"))
            if not files:
                raise CaseError(f"{p}: no *.yaml case cards")
        elif p.exists():
            files = [p]
        else:
            raise CaseError(f"{p}: no such case card or directory")
        cards.extend(load_card(f, rules) for f in files)
    seen: set[str] = set()
    for card in cards:
        if card.id in seen:
            raise CaseError(f"case id {card.id!r} appears twice")
        seen.add(card.id)
    return cards


# --------------------------------------------------------------------------- cards from MediTOD dialogues


def card_from_dialogue(dialogue: Dialogue, domain: str = "other", rules: RuleSet | None = None) -> CaseCard:
    """The card of one annotated MediTOD dialogue: the last ``dialog_state`` is the gold final state; the positive
    symptoms the patient first informs about are the chief complaint; the first ``diagnosis`` action's disease is
    the diagnosis; the expected red flags are the rules the gold state satisfies."""
    states = [u.dialog_state for u in dialogue.utterances if u.speaker == "patient" and u.dialog_state]
    if not states:
        raise CaseError(f"dialogue {dialogue.dialog_id}: no annotated dialog_state")
    state = states[-1]
    positives = [it["value"] for it in state.get("positive_symptom") or []]
    complaint: list[str] = []
    for u in dialogue.utterances:
        if u.speaker != "patient":
            continue
        for frame in u.nlu or []:
            complaint += [it["value"] for it in (frame.get("slots") or {}).get("positive_symptom") or []
                          if it.get("value") in positives and it["value"] not in complaint]
        if complaint:
            break
    diagnosis = next((item["value"] for u in dialogue.utterances if u.speaker == "doctor"
                      for act in u.actions or [] if act.get("action") == "diagnosis"
                      for item in act.get("disease") or []), None)
    basic = (state.get("basic_information") or [{}])[0]
    who = " ".join(x for x in (f"{basic['age']}-year-old" if basic.get("age") else "",
                               basic.get("sex") or basic.get("gender") or "", "patient") if x)
    flags = [f.id for f in check_red_flags(state, rules or default_rules())]
    try:
        return CaseCard(id=f"meditod-{dialogue.dialog_id}", title=f"MediTOD dialogue {dialogue.dialog_id}",
                        domain=domain, source=f"meditod:{dialogue.dialog_id}",
                        chief_complaint=complaint or positives[:1], diagnosis=diagnosis, red_flags=flags,
                        persona=f"A {who} from the MediTOD dialogue {dialogue.dialog_id}.", state=state)
    except ValidationError as exc:
        raise CaseError(f"dialogue {dialogue.dialog_id}: {problem(exc.errors()[0])}") from None


def cards_from_meditod(data_dir: str | Path, split: str = "all", ids: list[str] | None = None,
                       domain: str = "respiratory", rules: RuleSet | None = None) -> list[CaseCard]:
    dialogues = load_dialogues(data_dir, split)
    if ids:
        missing = sorted(set(ids) - {d.dialog_id for d in dialogues})
        if missing:
            raise CaseError(f"{data_dir}: dialogues {missing} are not in split {split!r}")
        dialogues = [d for d in dialogues if d.dialog_id in ids]
    return [card_from_dialogue(d, domain, rules) for d in dialogues]


# --------------------------------------------------------------------------- facts


Polarity = Literal["positive", "negative", "unknown"]


@dataclass(frozen=True)
class Fact:
    """One countable piece of a history. ``slot`` is the prefix-form slot (``negative_symptom``, ``travel``);
    ``head`` the medical item's value (None for records); ``attribute``/``value`` the attribute and one of its
    values (both None for the head fact itself)."""

    slot: str
    base: str
    status: str | None
    head: str | None
    attribute: str | None
    value: str | None
    canonical: bool
    polarity: Polarity

    def label(self) -> str:
        parts = [self.slot] + ([self.head] if self.head is not None else [])
        if self.attribute is not None:
            parts.append(f"{self.attribute}={self.value}")
        return " ".join(parts)


def _polarity(status: str | None) -> Polarity:
    if status is None:
        return "positive"
    if status in NEGATIVE_STATUSES:
        return "negative"
    return "unknown" if status == "unknown" else "positive"


def _values(v: Any) -> list:
    return v if isinstance(v, list) else [v]


def state_facts(state: dict) -> list[Fact]:
    """The facts of a patient state (or of a frame's slots), each once, in state order."""
    out: dict[Fact, None] = {}
    for name, items in state.items():
        status, base = cmas.split_slot_name(name)
        spec = cmas.SLOTS[base]
        for item in items or []:
            if spec.medical:
                head = item.get("value")
                pol = _polarity(status)
                if isinstance(head, str):
                    out[Fact(name, base, status, head, None, None, True, pol)] = None
                for attr, vals in item.items():
                    if attr == "value":
                        continue
                    for v in _values(vals):
                        if isinstance(v, str) and v.strip():
                            out[Fact(name, base, status, head, attr, v, attr in spec.canonical, pol)] = None
            else:
                pol = _polarity(item.get("status"))
                for key, vals in item.items():
                    for v in _values(vals):
                        if isinstance(v, str) and v.strip():
                            out[Fact(name, base, None, None, key, v, key in spec.canonical, pol)] = None
    return list(out)


def frames_state(frames: list[dict]) -> dict:
    """The slots of NLU frames gathered into one state-shaped mapping (no merging: every item kept)."""
    out: dict[str, list] = {}
    for frame in frames or []:
        for name, items in (frame.get("slots") or {}).items():
            out.setdefault(name, []).extend(items or [])
    return out


def _norm(v: str) -> str:
    return " ".join(v.casefold().split())


def _number(v: str) -> str | None:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(?:/\s*10|out of (?:10|ten))?\s*", v.casefold())
    return m.group(1) if m else None


def same_value(
    wanted: str, found: str, canonical: bool, attribute: str | None = None, either_way: bool = False
) -> bool:
    """Whether ``found`` says ``wanted``: exactly for canonical values (a severity ``6`` is ``6/10``), by content
    words for free text (the words of ``wanted`` occur in ``found``; ``either_way``: or those of ``found`` in
    ``wanted``, so "for two weeks now" is supported by "two weeks ago")."""
    if _norm(wanted) == _norm(found):
        return True
    if attribute == "severity" and _number(wanted) is not None:
        return _number(wanted) == _number(found)
    if canonical:
        return False
    return grounded_in(wanted, found) or (either_way and grounded_in(found, wanted))


def _medical_items(state: dict, slot: str, base: str, head: str, vocab: Vocabulary) -> list[dict]:
    return [
        it for it in state.get(slot) or [] if isinstance(it.get("value"), str) and vocab.same(base, it["value"], head)
    ]


def covered(fact: Fact, state: dict, vocab: Vocabulary) -> bool:
    """Whether ``state`` holds ``fact``: same slot and status, same concept, and (for an attribute fact) the
    attribute with a matching value."""
    if fact.head is None:  # record slot
        return any(any(isinstance(v, str) and same_value(fact.value or "", v, fact.canonical, fact.attribute)
                       for v in _values(item.get(fact.attribute or ""))) for item in state.get(fact.slot) or [])
    items = _medical_items(state, fact.slot, fact.base, fact.head, vocab)
    if fact.attribute is None:
        return bool(items)
    return any(isinstance(v, str) and same_value(fact.value or "", v, fact.canonical, fact.attribute)
               for item in items for v in _values(item.get(fact.attribute)))


def supported(fact: Fact, card_state: dict, vocab: Vocabulary) -> bool:
    """Whether a fact of the agent's state follows from the card: the card holds it (its value's content words in
    the card's value for free text), or it denies something the card does not have at all: the simulated patient
    denies what the card does not hold, so a recorded denial of an absent concept is true of the patient."""
    if fact.head is None:
        items = card_state.get(fact.slot) or []
        if any(any(isinstance(v, str) and same_value(fact.value or "", v, fact.canonical, fact.attribute, True)
                   for v in _values(item.get(fact.attribute or ""))) for item in items):
            return True
        return not items and fact.polarity == "negative"  # a denied trip / job the card does not have
    items = _medical_items(card_state, fact.slot, fact.base, fact.head, vocab)
    if items:
        if fact.attribute is None:
            return True
        return any(isinstance(v, str) and same_value(fact.value or "", v, fact.canonical, fact.attribute, True)
                   for item in items for v in _values(item.get(fact.attribute)))
    if fact.polarity != "negative":
        return False
    if fact.head.casefold() in OPEN_HEADS:
        return True
    return find_item(card_state, fact.base, fact.head, vocab) is None
