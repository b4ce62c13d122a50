"""Model text -> CMAS: strict parse, one repair pass, lenient parse, else a counted format error.

Order for NLU / POL outputs:
1. strict: the text is JSON and fits CMAS (``agent.core.cmas.parse_nlu`` / ``parse_actions``);
2. repair (once): extract the JSON block from prose or code fences, turn single-quoted
   strings into JSON strings, drop trailing commas, cut a truncated tail back to the last
   complete value and close the brackets, wrap a lone object in a list, merge a key written
   twice in one object (strict parsing refuses it: JSON would silently keep only the last), and
   convert status-as-attribute slots into prefix form; then strict again;
3. lenient: keep what fits, set the rest aside in ``extra`` (by path);
4. otherwise a format error, with the reason. Nothing is dropped without a trace.

:class:`ParseStats` counts each outcome so every run reports the schema-valid rate
before and after repair.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from agent.core import cmas, cmas_lenient

JSON_TASKS = ("nlu", "pol")
MAX_DEPTH = 32  # CMAS nests 6 deep; deeper output is not CMAS, and ~250 levels break the checkpoint serialiser
MAX_CUTS = 64  # truncation repair tries the last this many cut points: bounded work on a 100 KB output


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def valid_unicode(text: str) -> str:
    """``text`` with lone UTF-16 surrogates (no character, and not encodable as UTF-8, so a session store cannot
    write them) replaced by U+FFFD; a well-formed surrogate pair becomes its character."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


class JSONError(ValueError):
    """Text that does not load as JSON: bad syntax, a duplicated key (strict), nesting deeper than
    :data:`MAX_DEPTH`, or a number Python will not convert."""


def _depth(obj: Any) -> int:
    """Nesting depth of lists and dicts, walked without recursion."""
    deepest, stack = 0, [(obj, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, level)
            stack.extend((v, level + 1) for v in (value.values() if isinstance(value, dict) else value))
    return deepest


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for k, v in pairs:
        if k in out:
            raise JSONError(f"key {k!r} written twice in one object")
        out[k] = v
    return out


def _merge_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    """A key written twice: lists are concatenated, objects merged, otherwise the last value wins."""
    out: dict = {}
    for k, v in pairs:
        old = out.get(k)
        if k in out and isinstance(old, list) and isinstance(v, list):
            out[k] = old + v
        elif k in out and isinstance(old, dict) and isinstance(v, dict):
            out[k] = _merge_duplicates([*old.items(), *v.items()])
        else:
            out[k] = v
    return out


def loads(text: str, merge_duplicates: bool = False) -> Any:
    """``json.loads`` that fails only with :class:`JSONError` (never RecursionError, never a bare ValueError) and
    refuses what JSON accepts but CMAS output must not have: duplicated keys (unless merged) and deep nesting."""
    try:
        obj = json.loads(text, object_pairs_hook=_merge_duplicates if merge_duplicates else _reject_duplicates)
    except JSONError:
        raise
    except json.JSONDecodeError as exc:
        raise JSONError(f"{exc.msg} at char {exc.pos}") from None
    except RecursionError:
        raise JSONError("nested too deeply to parse") from None
    except ValueError as exc:  # an integer longer than Python converts
        raise JSONError(str(exc)) from None
    if _depth(obj) > MAX_DEPTH:
        raise JSONError(f"nested deeper than {MAX_DEPTH} levels")
    if _SURROGATE_ESCAPE.search(text):  # "\ud800" escapes load as lone surrogates: make them U+FFFD
        obj = json.loads(valid_unicode(json.dumps(obj, ensure_ascii=False)))
    return obj


@dataclass
class ParseResult:
    """``value``: CMAS JSON (or the utterance for NLG); ``[]`` / ``""`` when ``format_error`` is set.

    ``valid``: strictly schema-valid without repair; ``repaired``: the repair pass was needed;
    ``lenient``: only part of the output fits (the rest is in ``extra``); ``fixes``: which repairs applied.
    """

    value: Any
    valid: bool = False
    repaired: bool = False
    lenient: bool = False
    format_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    fixes: list[str] = field(default_factory=list)

    @property
    def schema_valid(self) -> bool:
        """Strictly valid, with or without repair."""
        return self.format_error is None and not self.lenient


# --------------------------------------------------------------------------- repair helpers

_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)(?:```|$)", re.DOTALL)
_JSON_START = re.compile(r"[\[{]\s*[\[{\"'\]}]")  # a bracket that opens JSON, not prose like "[dialogue history]"
_CLOSER = {"[": "]", "{": "}"}


def extract_block(text: str) -> str | None:
    """The JSON-looking part of ``text``: inside a code fence if there is one, from the first bracket on."""
    m = _FENCE.search(text)
    if m and re.search(r"[\[{]", m.group(1)):
        text = m.group(1)
    m = _JSON_START.search(text)
    if m:
        text = text[m.start():]
    else:
        starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
        if not starts:
            return None
        text = text[min(starts):]
    end = _balanced_end(text)
    return text[:end] if end is not None else text


def _outside_strings(text: str, quotes: str = '"') -> Iterator[tuple[int, str]]:
    """``(index, char)`` of every character that is not inside a string literal (escapes honoured)."""
    quote, escaped = None, False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch in quotes:
            quote = ch
        else:
            yield i, ch


def _balanced_end(text: str) -> int | None:
    """Index just past the bracket closing ``text[0]``, or None when the text ends first (truncation)."""
    depth = 0
    for i, ch in _outside_strings(text, "\"'"):
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def normalise_quotes_and_commas(text: str) -> tuple[str, list[str]]:
    """Single-quoted strings -> JSON strings; trailing commas before ``]``/``}`` removed."""
    out: list[str] = []
    fixes: set[str] = set()
    quote, escaped = None, False
    for ch in text:
        if quote == '"':
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quote = None
        elif quote == "'":
            if escaped:
                out.append("'" if ch == "'" else "\\" + ch)
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == "'":
                out.append('"')
                quote = None
            elif ch == '"':
                out.append('\\"')
            else:
                out.append(ch)
        elif ch == '"':
            quote = '"'
            out.append(ch)
        elif ch == "'":
            quote = "'"
            fixes.add("single_quotes")
            out.append('"')
        elif ch in "]}":
            j = len(out) - 1
            while j >= 0 and out[j].isspace():
                j -= 1
            if j >= 0 and out[j] == ",":
                del out[j]
                fixes.add("trailing_comma")
            out.append(ch)
        else:
            out.append(ch)
    return "".join(out), sorted(fixes)


def close_truncated(text: str) -> Any:
    """Parse a JSON prefix cut off mid-way: cut back to the last complete value, close the brackets.

    Candidate cut points are just after a closing bracket or just before a comma (outside
    strings); the longest candidate that parses wins, so a half-written value is dropped
    rather than kept truncated. Only the last :data:`MAX_CUTS` are tried: a truncation needs the
    last one or two, and trying every cut of a long output with an early error is quadratic.
    Raises ``ValueError`` when no prefix parses.
    """
    # the open brackets as a linked list (innermost, rest): each cut keeps a snapshot in O(1), however deep
    opened: tuple | None = None
    cuts: deque[tuple[int, tuple | None]] = deque(maxlen=MAX_CUTS)
    for i, ch in _outside_strings(text):
        if ch in "[{":
            opened = (ch, opened)
        elif ch in "]}":
            if opened:
                opened = opened[1]
            cuts.append((i + 1, opened))
        elif ch == ",":
            cuts.append((i, opened))
    for end, still_open in reversed(cuts):
        closing = []
        while still_open:
            closing.append(_CLOSER[still_open[0]])
            still_open = still_open[1]
        try:
            return loads(text[:end] + "".join(closing), merge_duplicates=True)
        except JSONError:
            continue
    raise ValueError("no complete JSON value before the truncation")


def to_prefix_form(frames: list[Any]) -> tuple[list[Any], bool]:
    """Slots written as ``{"symptom": [{"value": .., "status": "positive"}]}`` -> prefix form.

    Only base slot names that carry a status prefix in CMAS are converted, and only when
    every item states a valid status; anything else is left for the lenient parse to report.
    """
    changed = False
    out = []
    for frame in frames:
        slots = frame.get("slots") if isinstance(frame, dict) else None
        if not isinstance(slots, dict):
            out.append(frame)
            continue
        attr_form = {k: v for k, v in slots.items() if k in cmas.SLOTS and cmas.SLOTS[k].statuses}
        if not attr_form:
            out.append(frame)
            continue
        try:
            converted = cmas.from_status_attribute(attr_form)
        except (ValueError, TypeError, AttributeError):  # items that are not status-attribute objects
            out.append(frame)
            continue
        merged = {k: v for k, v in slots.items() if k not in attr_form}
        for name, items in converted.items():
            merged.setdefault(name, []).extend(items)
        out.append({**frame, "slots": merged})
        changed = True
    return out, changed


def _as_list(obj: Any, task: str) -> tuple[Any, bool]:
    key = "intent" if task == "nlu" else "action"
    if isinstance(obj, dict) and key in obj:
        return [obj], True
    return obj, False


def repair(text: str, task: str) -> tuple[Any, list[str]]:
    """The one repair pass: returns ``(json_object, fixes)``; raises ``ValueError`` if no JSON can be recovered."""
    fixes: list[str] = []
    block = extract_block(text)
    if block is None:
        raise ValueError("no JSON object or list in the output")
    if block.strip() != text.strip():
        fixes.append("extracted_block")
    block, more = normalise_quotes_and_commas(block)
    fixes += more
    try:
        obj = loads(block)
    except JSONError:
        try:
            obj = loads(block, merge_duplicates=True)
            fixes.append("merged_duplicate_keys")
        except JSONError:
            obj = close_truncated(block)
            fixes.append("closed_truncation")
    obj, wrapped = _as_list(obj, task)
    if wrapped:
        fixes.append("wrapped_object")
    if task == "nlu" and isinstance(obj, list):
        obj, converted = to_prefix_form(obj)
        if converted:
            fixes.append("status_attribute")
    return obj, fixes


# --------------------------------------------------------------------------- parsing


def _strict(task: str, obj: Any) -> list[dict]:
    return cmas.parse_nlu(obj) if task == "nlu" else cmas.parse_actions(obj)


def parse_output(task: str, text: str, status_attribute: bool = False) -> ParseResult:
    """Parse one model output. ``status_attribute``: the prompt asked for attribute-form NLU
    slots (the in-context format), so converting them is the expected path, not a repair."""
    text = valid_unicode(text)
    if task == "nlg":
        utterance = text.strip()
        if not utterance:
            return ParseResult("", format_error="empty utterance")
        return ParseResult(utterance, valid=True)
    if task not in JSON_TASKS:
        raise ValueError(f"unknown task {task!r}")

    first_error: str
    try:
        obj = loads(text)
        if status_attribute and task == "nlu" and isinstance(obj, list):
            obj, _ = to_prefix_form(obj)
        return ParseResult(_strict(task, obj), valid=True)
    except JSONError as exc:
        first_error = f"not JSON: {exc}"
    except cmas.CMASError as exc:
        first_error = f"schema: {exc}"

    try:
        obj, fixes = repair(text, task)
    except ValueError as exc:
        return ParseResult([], format_error=f"{first_error}; repair failed: {exc}")
    try:
        return ParseResult(_strict(task, obj), repaired=True, fixes=fixes)
    except cmas.CMASError as exc:
        strict_error = f"schema after repair: {exc}"

    lenient = cmas_lenient.parse_nlu_lenient(obj) if task == "nlu" else cmas_lenient.parse_actions_lenient(obj)
    if lenient.value:
        return ParseResult(lenient.value, repaired=bool(fixes), lenient=True, extra=lenient.extra, fixes=fixes)
    return ParseResult([], repaired=bool(fixes), format_error=f"{first_error}; {strict_error}; nothing fits CMAS",
                       extra=lenient.extra, fixes=fixes)


@dataclass
class ParseStats:
    """Counts over a run: schema-valid before repair, after repair, lenient, format errors, and which fixes."""

    total: int = 0
    valid: int = 0
    repaired: int = 0
    lenient: int = 0
    format_errors: int = 0
    fixes: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # the first few messages, for the report

    def add(self, result: ParseResult) -> ParseResult:
        self.total += 1
        if result.format_error:
            self.format_errors += 1
            if len(self.errors) < 10:
                self.errors.append(result.format_error)
        elif result.lenient:
            self.lenient += 1
        elif result.repaired:
            self.repaired += 1
        elif result.valid:
            self.valid += 1
        for f in result.fixes:
            self.fixes[f] = self.fixes.get(f, 0) + 1
        return result

    @property
    def valid_rate_before_repair(self) -> float:
        return self.valid / self.total if self.total else 0.0

    @property
    def valid_rate_after_repair(self) -> float:
        return (self.valid + self.repaired) / self.total if self.total else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "schema_valid_before_repair": self.valid,
            "schema_valid_after_repair": self.valid + self.repaired,
            "lenient": self.lenient,
            "format_errors": self.format_errors,
            "valid_rate_before_repair": round(self.valid_rate_before_repair, 4),
            "valid_rate_after_repair": round(self.valid_rate_after_repair, 4),
            "fixes": dict(sorted(self.fixes.items())),
            "first_errors": list(self.errors),
        }

    def summary(self) -> str:
        return (
            f"schema-valid {self.valid}/{self.total} before repair ({self.valid_rate_before_repair:.1%}), "
            f"{self.valid + self.repaired}/{self.total} after ({self.valid_rate_after_repair:.1%}); "
            f"lenient {self.lenient}, format errors {self.format_errors}"
        )
