"""How long a string may be where it enters an interview: the one home of the bounds.

Why bounds everywhere and not only in constrained decoding: a schema bounds a model's strings only when the backend
applies it (a backend without structured outputs, a client's review edit, a clinician's state patch, a model NLG
all write free text), and a string that passes one gate unbounded reaches the patient state, the doctor's plan, the
NLG prompt and every checkpoint of the session. So:

- every CMAS string (a slot value, an attribute, a check type or value) is at most :data:`MAX_VALUE_CHARS`
  (:mod:`agent.core.cmas` puts it in the pydantic types: strict parsing refuses more, lenient parsing sets the value
  aside with :func:`set_aside`);
- an utterance (the patient's words, a doctor turn, a clinician's edit) is at most :data:`MAX_UTTERANCE_CHARS`;
- what a turn records about its modules (raw model text, what was set aside) is at most :data:`MAX_RECORD_CHARS` per
  string (:func:`bound_record`).

An over-long value is refused and recorded by its length and first characters, never passed on and never stored
whole: recording 100 KB of model output in each checkpoint would be the same problem one step later.
"""

from __future__ import annotations

from typing import Any

MAX_VALUE_CHARS = 200
"""A CMAS value names a thing or a short attribute ("coughing", "two weeks ago"; the longest in MediTOD's shared
dialogues is 47 characters). Constrained decoding bounds model strings tighter (``schema_max_length``, 80 by
default); this bound is the gate every value passes whatever wrote it."""

MAX_UTTERANCE_CHARS = 2000
"""One utterance: the patient's words as they may enter a prompt, a doctor turn, a clinician's edit (the longest
doctor turn in the shared dialogues is 889 characters)."""

MAX_RECORD_CHARS = 4000
"""One string in a turn's record of its modules (raw model output, a value set aside, an error message)."""

PREVIEW_CHARS = 80
"""How much of a refused string the record keeps: enough to recognise it, too little to carry it on."""


def too_long(value: object, limit: int = MAX_VALUE_CHARS) -> bool:
    """True when ``value`` is a string longer than ``limit`` characters."""
    return isinstance(value, str) and len(value) > limit


def set_aside(value: str, limit: int = MAX_VALUE_CHARS) -> dict[str, Any]:
    """The record of an over-long string that was refused: its length, the bound and its first characters."""
    return {"too_long": len(value), "limit": limit, "start": value[:PREVIEW_CHARS]}


def any_too_long(value: object, limit: int = MAX_VALUE_CHARS) -> bool:
    """True when ``value`` is, or is a list holding, a string longer than ``limit``."""
    if isinstance(value, list):
        return any(too_long(v, limit) for v in value)
    return too_long(value, limit)


def bound_record(obj: Any, limit: int = MAX_RECORD_CHARS) -> Any:
    """``obj`` (JSON-like) with every string and key longer than ``limit`` replaced by a short record of it: what a
    session may store about a turn's modules whatever they produced."""
    if isinstance(obj, str):
        return set_aside(obj, limit) if len(obj) > limit else obj
    if isinstance(obj, dict):
        return {_bound_key(k, limit): bound_record(v, limit) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [bound_record(v, limit) for v in obj]
    return obj


def _bound_key(key: Any, limit: int) -> Any:
    if isinstance(key, str) and len(key) > limit:
        return f"{key[:PREVIEW_CHARS]}... ({len(key)} characters)"
    return key
