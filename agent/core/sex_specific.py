"""Items only one sex has, and the patient's sex as the state tells it.

Why it exists: the presentation plans list items that apply to one sex (missed periods and pregnancy for ectopic
pregnancy, pain in a testicle for torsion), and a clinician never asks a man whether he could be pregnant. The policy
skips an item of the other sex, asks the patient's sex before the first such item when nothing has told it yet, and
the clinician's summary marks a screen or a consideration of the other sex as not applicable. One table says which
items these are (``configs/sex_specific.yaml``), read here once for every reader.

"Sex" is the sex assigned at birth (``basic_information: sex``), never the stated gender: a trans man can be pregnant,
so only a stated sex, or an item only one sex's anatomy has that the patient has (a pain in the testicle, a
pregnancy), tells it.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from agent.core import cmas
from agent.core.ontology import Vocabulary, default_vocabulary, normalize, symptom_names, without_side
from agent.core.paths import REPO_ROOT, read_yaml_mapping

DEFAULT_PATH = REPO_ROOT / "configs" / "sex_specific.yaml"

Sex = Literal["female", "male"]
SEXES: tuple[Sex, ...] = ("female", "male")

_SAID = {"male": "male", "man": "male", "boy": "male", "m": "male",
         "female": "female", "woman": "female", "girl": "female", "f": "female", "lady": "female"}
"""A stated sex, as the NLU records it or a card or a clinician writes it."""


def _part(location: str) -> str:
    """A body part whatever its side and number: ``left testicle``, ``testicle(R)`` and ``testicles`` are one part."""
    return without_side(location).removesuffix("s")


class SexSpecificError(ValueError):
    """A sex-specific table that does not load; the message names the file and the failing key."""


class _Items(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    symptom: tuple[str, ...] = ()
    medical_history: tuple[str, ...] = ()
    medication: tuple[str, ...] = ()
    locations: tuple[str, ...] = ()


class _Childbearing(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    ages: tuple[int, int]
    symptom: tuple[str, ...] = ()
    medical_history: tuple[str, ...] = ()
    medication: tuple[str, ...] = ()


class _Table(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    female: _Items
    male: _Items
    childbearing: _Childbearing | None = None


class SexSpecific:
    """Which sex an item of the state, or a question about one, belongs to (None: either)."""

    def __init__(self, table: _Table, vocab: Vocabulary):
        self.vocab = vocab
        # each listed value as its identity keys, computed once: the policy asks about every candidate question, each
        # turn (what :meth:`Vocabulary.same` compares: the spelling, and the concept when the vocabulary knows one)
        self._keys = {sex: {base: frozenset(k for v in getattr(getattr(table, sex), base) for k in self._ids(base, v))
                            for base in ("symptom", "medical_history", "medication")}
                      for sex in SEXES}
        self._places = {sex: frozenset(_part(p) for p in getattr(table, sex).locations) for sex in SEXES}
        years = table.childbearing
        self._ages = years.ages if years is not None else None
        self._childbearing = {base: frozenset(k for v in (getattr(years, base) if years else ()) for k in
                                              self._ids(base, v)) for base in ("symptom", "medical_history",
                                                                               "medication")}

    def past_childbearing(self, base: str, value: str, state: dict[str, Any]) -> bool:
        """Whether ``value`` is an item of the childbearing years (pregnancy, missed periods, the pill) and the
        patient's stated age is outside them: a 71-year-old woman is not asked whether she could be pregnant. An age
        not yet told keeps the item."""
        age = cmas.patient_age(state)
        if self._ages is None or age is None or self._ages[0] <= age <= self._ages[1]:
            return False
        return bool(set(self._ids(base, value)) & self._childbearing.get(base, frozenset()))

    def of_item(self, base: str, value: str, locations: Iterable[str] = ()) -> Sex | None:
        """The sex ``value`` (of slot type ``base``, at ``locations``) is specific to: a listed value, a located pain
        named by its place (``pain`` at ``testicles`` is ``testicular pain``), or a symptom at a listed place."""
        locs = [loc for loc in locations if isinstance(loc, str)]
        names = symptom_names(value, {"location": locs}) if base == "symptom" else [value]
        ids = {k for n in names for k in self._ids(base, n)}
        for sex in SEXES:
            if ids & self._keys[sex].get(base, frozenset()):
                return sex
            if base == "symptom" and any(_part(loc) in self._places[sex] for loc in locs):
                return sex
        return None

    def _ids(self, base: str, value: str) -> tuple[str, ...]:
        """What identifies ``value``: its spelling and, when known, its concept (``Vocabulary.canonical``)."""
        concept = self.vocab.canonical(base, value)
        return (normalize(value),) if concept is None else (normalize(value), concept)

    def patient_sex(self, state: dict[str, Any]) -> Sex | None:
        """The patient's sex: the stated one (``basic_information.sex``), else the one sex the items the patient has
        belong to (a pain in the testicle: male; a pregnancy: female); None when nothing tells it, or the items
        disagree (an NLU misreading is no reason to stop asking)."""
        record = next((it for _, it in cmas.slot_items(state, "basic_information") if it), {})
        stated = _SAID.get(normalize(str(record.get("sex") or "")))
        if stated is not None:
            return stated  # type: ignore[return-value]
        told: set[Sex] = set()
        for base in ("symptom", "medical_history", "medication"):
            for status, item in cmas.slot_items(state, base):
                if status != "positive" or not isinstance(item.get("value"), str):
                    continue
                if (sex := self.of_item(base, item["value"], item.get("location") or [])) is not None:
                    told.add(sex)
        return next(iter(told)) if len(told) == 1 else None


def load_sex_specific(path: str | Path = DEFAULT_PATH, vocab: Vocabulary | None = None) -> SexSpecific:
    """The table at ``path``, checked: unknown keys and values the vocabulary does not know for their slot type are
    errors naming the file and the key (a misspelt value would silently ask a man about his periods again)."""
    vocab = vocab or default_vocabulary()
    raw = read_yaml_mapping(path, SexSpecificError, "a sex-specific table")
    try:
        table = _Table.model_validate(raw)
    except ValidationError as exc:
        raise SexSpecificError(f"{path}: {exc}") from None
    for sex in (*SEXES, "childbearing"):
        items = getattr(table, sex)
        for base in ("symptom", "medical_history", "medication") if items is not None else ():
            for value in getattr(items, base):
                if vocab.canonical(base, value) is None:
                    raise SexSpecificError(f"{path}: {sex}.{base}: {value!r} is not a {base} value of the vocabulary")
    return SexSpecific(table, vocab)


@lru_cache(maxsize=1)
def default_sex_specific() -> SexSpecific:
    """The shipped table over the shipped vocabulary, loaded once."""
    return load_sex_specific()
