"""Numbers said in words: "seventy-one", "forty four", "a hundred and two", "nineteen".

Patients say their age and counts in words as often as in digits ("I'm seventy-one"), and a transcript or a speech
recogniser writes them so. The NLU reads ages and counts with digit patterns, and grounding compares a value ("71")
with the patient's words; both read the turn through :func:`with_digits`, so "seventy-one" is 71 to each of them and
no second set of patterns is needed.
"""

from __future__ import annotations

import re

_UNITS = {w: i for i, w in enumerate(
    """zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen
    seventeen eighteen nineteen""".split())}
_TENS = {w: 10 * i for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split(), start=2)}

_UNIT = "|".join(sorted(_UNITS, key=len, reverse=True))
_TEN = "|".join(_TENS)
_SPOKEN = re.compile(
    rf"\b(?:(?P<hundred>(?:a|one)\s+hundred)(?:\s+(?:and\s+)?(?=(?:{_TEN}|{_UNIT})\b))?)?"
    rf"(?:(?P<tens>{_TEN})(?:[\s-]+(?P<unit_after>{_UNIT})\b)?|(?P<unit>{_UNIT}))?\b",
    re.I,
)
"""A number from zero to 199 in words; a hundred alone, tens alone, tens and a unit joined by a hyphen or a space."""


def _value(m: re.Match[str]) -> int | None:
    hundred = 100 if m.group("hundred") else 0
    if m.group("tens"):
        unit = _UNITS[m.group("unit_after").lower()] if m.group("unit_after") else 0
        if unit >= 10:  # "twenty twelve" is no number
            return None
        return hundred + _TENS[m.group("tens").lower()] + unit
    if m.group("unit"):
        return hundred + _UNITS[m.group("unit").lower()]
    return hundred or None


def spoken_number(text: str) -> int | None:
    """The number ``text`` is, when the whole of it is a number in words ("seventy-one": 71), else None."""
    m = _SPOKEN.fullmatch(text.strip())
    return _value(m) if m else None


def with_digits(text: str) -> str:
    """``text`` with every number said in words written in digits ("I'm seventy-one" -> "I'm 71"); "one" alone is
    left as it is, because it is a pronoun as often as a number ("the left one", "one of those")."""

    def digits(m: re.Match[str]) -> str:
        if not m.group(0) or m.group(0).lower() == "one":
            return m.group(0)
        value = _value(m)
        return m.group(0) if value is None else str(value)

    return _SPOKEN.sub(digits, text)
