"""The agenda simulator's lay lexicon (``configs/simulate/lay_phrases.yaml``), typed, and its loader."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.core import cmas
from agent.core.ontology import default_vocabulary, load_ontology
from agent.core.paths import REPO_ROOT, problem

DEFAULT_LEXICON = REPO_ROOT / "configs" / "simulate" / "lay_phrases.yaml"


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
        raise ValueError(f"{path}: {problem(exc.errors()[0])}") from None
    for base in lex.statuses:
        if base not in cmas.SLOTS:
            raise ValueError(f"{path}: statuses: unknown slot type {base!r}")
    return lex
