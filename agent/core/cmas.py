"""CMAS: MediTOD's Comprehensive Medical Attribute Schema.

The one home of the schema. Slots, their attributes, how status is encoded, the
patient NLU frame, the doctor action and the patient state are all defined here
(MediTOD paper, Table 17 and the attribute lists of the Appendix F prompts, as
the released dataset spells them: note ``respone_to``).

Two encodings of status exist and convert losslessly:
- *prefix form* (the dataset): ``{"positive_symptom": [{"value": "coughing"}]}``
- *attribute form* (the paper's prompts): ``{"symptom": [{"value": "coughing", "status": "positive"}]}``
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, StringConstraints, TypeAdapter, ValidationError, create_model

from agent.core.bounds import MAX_VALUE_CHARS

# --------------------------------------------------------------------------- intents

PATIENT_INTENTS: tuple[str, ...] = ("inform", "chit-chat", "nod_prompt_salutations")
DOCTOR_ACTIONS: tuple[str, ...] = ("inquire", "diagnosis", "chit-chat", "nod_prompt_salutations", "other")

# --------------------------------------------------------------------------- slots


@dataclass(frozen=True)
class SlotSpec:
    """One CMAS slot type.

    ``statuses``: the status prefixes the dataset puts on the slot name; empty when
    status is an ordinary attribute (``status_values``) or absent.
    ``scalar``/``lists``: attributes holding one string / a list of strings.
    ``canonical``: attributes whose values are canonicalised in MediTOD (exact match
    is the right comparison), besides the head ``value`` of a medical slot.
    """

    name: str
    statuses: tuple[str, ...] = ()
    scalar: tuple[str, ...] = ()
    lists: tuple[str, ...] = ()
    canonical: tuple[str, ...] = ()
    status_values: tuple[str, ...] = ()
    medical: bool = True
    check_groups: tuple[str, ...] = field(default=())

    @property
    def attributes(self) -> tuple[str, ...]:
        return self.scalar + self.lists

    @property
    def check_types(self) -> tuple[str, ...]:
        """Check types a doctor action may carry for this slot.

        Doctors ask about attribute groups, not the status-split attributes, so the
        dataset writes ``characteristics`` and ``ana_factors`` (alleviating and
        aggravating factors) as check types.
        """
        names = [a for a in self.attributes if a != "status"]
        return tuple(dict.fromkeys(("value", "status", *names, *self.check_groups)))


PNU = ("positive", "negative", "unknown")

SYMPTOM = SlotSpec(
    "symptom",
    statuses=PNU,
    scalar=(
        "value", "onset", "initiation", "duration", "severity", "progression", "frequency",
        "volume", "color", "itching", "lesion_size", "lesions_peel_off", "rash_swollen",
    ),
    lists=(
        "location",
        "positive_characteristics", "negative_characteristics", "unknown_characteristics",
        "alleviating_factor", "aggravating_factor", "not_alleviating_factor", "not_aggravating_factor",
        "not_alleviating_aggravating_factor", "unknown_factor",
    ),
    canonical=("location", "progression", "severity", "lesion_size", "rash_swollen", "itching", "lesions_peel_off"),
    check_groups=("characteristics", "ana_factors"),
)

SLOTS: dict[str, SlotSpec] = {
    s.name: s
    for s in (
        SYMPTOM,
        SlotSpec("medical_history", statuses=PNU, scalar=("value", "starting", "frequency")),
        SlotSpec("family_history", statuses=PNU, scalar=("value", "relation")),
        SlotSpec("habit", statuses=PNU, scalar=("value", "starting", "frequency")),
        SlotSpec("exposure", statuses=PNU, scalar=("value", "where", "when")),
        SlotSpec(
            "medication", statuses=PNU,
            scalar=("value", "start", "impact", "respone_to", "frequency"),
            canonical=("respone_to", "impact"),
        ),
        SlotSpec("medical_test", statuses=("avail", "unavail", "unknown"), scalar=("value", "when")),
        SlotSpec("disease", statuses=PNU, scalar=("value",)),
        SlotSpec(
            "travel", scalar=("status", "destination", "date", "value", "when", "frequency"),
            status_values=("traveled", "not_traveled"), medical=False, canonical=("status",),
        ),
        SlotSpec(
            "occupation", scalar=("status", "value", "exposure", "when", "hazards"),
            status_values=("true", "false"), medical=False, canonical=("status",),
        ),
        SlotSpec(
            "residence", scalar=("status", "value", "household_size", "when"),
            status_values=("living", "not_living"), medical=False, canonical=("status",),
        ),
        SlotSpec(
            "basic_information", scalar=("name", "age", "gender", "sex"), medical=False,
            canonical=("name", "age", "gender", "sex"),  # MediTOD scores every basic_information key exactly
        ),
    )
}

RECORD_SLOTS: tuple[str, ...] = ("travel", "occupation", "residence", "basic_information")
"""Slots whose items are records (no head value that identifies them)."""


def split_slot_name(name: str) -> tuple[str | None, str]:
    """``negative_symptom`` -> ``("negative", "symptom")``; ``travel`` -> ``(None, "travel")``."""
    if name in SLOTS:
        return None, name
    for base, spec in SLOTS.items():
        for status in spec.statuses:
            if name == f"{status}_{base}":
                return status, base
    raise KeyError(name)


def slot_names() -> list[str]:
    """All slot keys of the prefix form, in schema order."""
    names: list[str] = []
    for base, spec in SLOTS.items():
        names.extend(f"{s}_{base}" for s in spec.statuses) if spec.statuses else names.append(base)
    return names


# --------------------------------------------------------------------------- errors


class CMASError(ValueError):
    """A CMAS object that does not fit the schema; ``path`` names where (``slots.positive_symptom.0.colour``)."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


def _error_from(exc: ValidationError, root: str = "") -> CMASError:
    err = exc.errors()[0]
    path = ".".join(str(p) for p in (root, *err["loc"]) if p != "")
    return CMASError(path, err["msg"])


def slot_items(state: dict[str, Any], base: str) -> list[tuple[str | None, dict[str, Any]]]:
    """``(status, item)`` of every item of slot type ``base`` in a patient state (status None for records)."""
    spec = SLOTS[base]
    if not spec.statuses:
        return [(None, it) for it in state.get(base) or []]
    return [(s, it) for s in spec.statuses for it in state.get(f"{s}_{base}") or []]


def patient_age(state: dict[str, Any] | None) -> int | None:
    """The patient's age in whole years as the state records it (``basic_information``), if it reads as one."""
    for record in (state or {}).get("basic_information") or []:
        match = re.match(r"\s*(\d{1,3})\b", str(record.get("age", "")))
        if match:
            return int(match.group(1))
    return None


# --------------------------------------------------------------------------- pydantic types

_STRICT = ConfigDict(extra="forbid", strict=True)
Value = Annotated[str, StringConstraints(max_length=MAX_VALUE_CHARS)]
"""Every CMAS string is bounded (:mod:`agent.core.bounds`): whatever wrote it, a longer one is not CMAS."""
NonEmpty = Annotated[str, StringConstraints(min_length=1, max_length=MAX_VALUE_CHARS, pattern=r"\S")]
"""A head value: something must be named (an empty value names nothing and would be said as nothing)."""


def _item_model(spec: SlotSpec, with_status: bool) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for a in spec.scalar:
        if a == "status" and spec.status_values:
            fields[a] = (Literal[spec.status_values] | None, None)
        elif a == "value" and spec.medical:
            fields[a] = (NonEmpty, ...)  # a medical item is identified by its head value
        else:
            fields[a] = (Value | None, None)
    for a in spec.lists:
        fields[a] = (list[Value] | None, None)
    if with_status and spec.statuses:
        fields["status"] = (Literal[spec.statuses], ...)
    suffix = "StatusAttr" if with_status else ""
    model_name = "".join(p.title() for p in spec.name.split("_")) + suffix + "Item"
    return create_model(model_name, __config__=_STRICT, **fields)


ITEM_MODELS: dict[str, type[BaseModel]] = {n: _item_model(s, False) for n, s in SLOTS.items()}
ITEM_MODELS_STATUS_ATTR: dict[str, type[BaseModel]] = {n: _item_model(s, True) for n, s in SLOTS.items()}

Slots: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "Slots",
    __config__=_STRICT,
    **{name: (list[ITEM_MODELS[split_slot_name(name)[1]]] | None, None) for name in slot_names()},  # type: ignore[misc]
)
"""Slots of an NLU frame or a patient state, prefix form."""

SlotsStatusAttr: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "SlotsStatusAttr",
    __config__=_STRICT,
    **{name: (list[ITEM_MODELS_STATUS_ATTR[name]] | None, None) for name in SLOTS},  # type: ignore[valid-type]
)


class NLUFrame(BaseModel):
    model_config = _STRICT
    intent: Literal[PATIENT_INTENTS]  # type: ignore[valid-type]
    slots: Slots | None = None  # type: ignore[valid-type]


class NLUFrameStatusAttr(BaseModel):
    """An NLU frame in the status-as-attribute form of the paper's prompts."""

    model_config = _STRICT
    intent: Literal[PATIENT_INTENTS]  # type: ignore[valid-type]
    slots: SlotsStatusAttr | None = None  # type: ignore[valid-type]


class Check(BaseModel):
    model_config = _STRICT
    type: Value
    values: list[Value] | None = None


class ActionSlot(BaseModel):
    model_config = _STRICT
    value: NonEmpty  # "possible conditions include ." is no plan
    checks: list[Check] | None = None


Action: type[BaseModel] = create_model(  # type: ignore[call-overload]
    "Action",
    __config__=_STRICT,
    action=(Literal[DOCTOR_ACTIONS], ...),
    **{name: (list[ActionSlot] | None, None) for name in SLOTS},
)
"""One doctor action: ``{"action": "inquire", "symptom": [{"value": .., "checks": [..]}]}``."""

_NLU = TypeAdapter(list[NLUFrame])
_NLU_STATUS_ATTR = TypeAdapter(list[NLUFrameStatusAttr])
_ACTIONS: TypeAdapter[list[BaseModel]] = TypeAdapter(list[Action])  # type: ignore[valid-type]


def _check_action_checks(actions: list[dict[str, Any]], root: str) -> None:
    for i, act in enumerate(actions):
        for slot, items in act.items():
            if slot == "action" or items is None:
                continue
            allowed = SLOTS[slot].check_types
            for j, item in enumerate(items):
                for k, chk in enumerate(item.get("checks") or []):
                    if chk.get("type") not in allowed:
                        path = ".".join(x for x in (root, str(i), slot, str(j), "checks", str(k), "type") if x)
                        raise CMASError(path, f"unknown check type {chk.get('type')!r} for slot {slot!r}")


# --------------------------------------------------------------------------- parsing


class Validated(list[Any]):
    """A list of frames or actions that passed strict validation, with a fingerprint of its content.

    A turn's actions pass through the policy, the graph, the review and the NLG; each may ask for strict CMAS.
    Validation runs once: parsing a :class:`Validated` whose content is unchanged returns it as it is (a changed
    one is validated again). It is a plain ``list`` to everything else (JSON, equality, checkpoints)."""

    kind: str = ""
    fingerprint: str = ""

    @classmethod
    def of(cls, items: list[dict[str, Any]], kind: str) -> Validated:
        out = cls(items)
        out.kind, out.fingerprint = kind, _fingerprint(items)
        return out

    def unchanged(self, kind: str) -> bool:
        return self.kind == kind and self.fingerprint == _fingerprint(self)


def _fingerprint(items: Any) -> str:
    return json.dumps(items, sort_keys=True, default=str)


def parse_nlu(obj: Any) -> list[dict[str, Any]]:
    """Strictly validate patient NLU frames (prefix form); returns them unchanged, as plain JSON."""
    if isinstance(obj, Validated) and obj.unchanged("nlu"):
        return obj
    try:
        frames = _NLU.validate_python(obj)
    except ValidationError as exc:
        raise _error_from(exc) from None
    return Validated.of([f.model_dump(exclude_unset=True, mode="json") for f in frames], "nlu")


def parse_state(obj: Any) -> dict[str, Any]:
    """Strictly validate a patient state (the dataset's ``dialog_state``: slots in prefix form)."""
    try:
        state = Slots.model_validate(obj)
    except ValidationError as exc:
        raise _error_from(exc) from None
    return state.model_dump(exclude_unset=True, mode="json")


def parse_actions(obj: Any) -> list[dict[str, Any]]:
    """Strictly validate doctor actions, check types included (once: see :class:`Validated`)."""
    if isinstance(obj, Validated) and obj.unchanged("actions"):
        return obj
    try:
        actions = _ACTIONS.validate_python(obj)
    except ValidationError as exc:
        raise _error_from(exc) from None
    out = [a.model_dump(exclude_unset=True, mode="json") for a in actions]
    _check_action_checks(out, "")
    return Validated.of(out, "actions")


# --------------------------------------------------------------------------- status forms


def to_status_attribute(slots: dict[str, Any]) -> dict[str, Any]:
    """Prefix form -> attribute form (``positive_symptom`` items get ``status: positive``)."""
    out: dict[str, list[Any]] = {}
    for name, items in slots.items():
        status, base = split_slot_name(name)
        for item in items:
            out.setdefault(base, []).append({**item, "status": status} if status else dict(item))
    return out


def from_status_attribute(slots: dict[str, Any]) -> dict[str, Any]:
    """Attribute form -> prefix form; the exact inverse of :func:`to_status_attribute`."""
    out: dict[str, list[Any]] = {}
    for base, items in slots.items():
        spec = SLOTS[base]
        for item in items:
            item = dict(item)
            if spec.statuses:
                status = item.pop("status", None)
                if status not in spec.statuses:
                    raise CMASError(base, f"status must be one of {spec.statuses}, got {status!r}")
                out.setdefault(f"{status}_{base}", []).append(item)
            else:
                out.setdefault(base, []).append(item)
    return out


# --------------------------------------------------------------------------- JSON Schema


def _bound(schema: Any, max_items: int | None, max_length: int | None) -> Any:
    """Bound arrays and strings so constrained decoding always terminates."""
    if isinstance(schema, dict):
        schema = {k: _bound(v, max_items, max_length) for k, v in schema.items()}
        if schema.get("type") == "array" and max_items:
            schema.setdefault("maxItems", max_items)
        if schema.get("type") == "string" and max_length and "enum" not in schema and "const" not in schema:
            schema["maxLength"] = min(max_length, schema.get("maxLength", max_length))  # the tighter bound
        schema.pop("default", None)
        schema.pop("title", None)
    elif isinstance(schema, list):
        schema = [_bound(v, max_items, max_length) for v in schema]
    return schema


def _drop_nulls(schema: Any) -> Any:
    """Optional fields appear as ``anyOf: [T, null]``; the model must omit them, never write null."""
    if isinstance(schema, dict):
        if "anyOf" in schema:
            options = [o for o in schema["anyOf"] if o.get("type") != "null"]
            if len(options) == 1:
                rest = {k: v for k, v in schema.items() if k != "anyOf"}
                return _drop_nulls({**rest, **options[0]})
        return {k: _drop_nulls(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_drop_nulls(v) for v in schema]
    return schema


def nlu_json_schema(
    max_items: int | None = 8, max_length: int | None = 80, status_attribute: bool = False
) -> dict[str, Any]:
    """JSON Schema of an NLU output (a list of frames), for constrained decoding; prefix or attribute form."""
    adapter = _NLU_STATUS_ATTR if status_attribute else _NLU
    schema: dict[str, Any] = _bound(_drop_nulls(adapter.json_schema()), max_items, max_length)
    return schema


def _slot_check_types(schema: dict[str, Any]) -> dict[str, Any]:
    """Per slot, a check ``type`` must be one of that slot's check types (as parse_actions demands)."""
    defs = schema["$defs"]
    for slot, spec in SLOTS.items():
        check = {**defs["Check"], "properties": {**defs["Check"]["properties"],
                                                 "type": {"type": "string", "enum": list(spec.check_types)}}}
        item = {**defs["ActionSlot"], "properties": {**defs["ActionSlot"]["properties"]}}
        item["properties"]["checks"] = {**item["properties"]["checks"], "items": check}
        defs[f"ActionSlot_{slot}"] = item
        defs["Action"]["properties"][slot] = {**defs["Action"]["properties"][slot],
                                              "items": {"$ref": f"#/$defs/ActionSlot_{slot}"}}
    del defs["ActionSlot"], defs["Check"]
    return schema


def action_json_schema(max_items: int | None = 8, max_length: int | None = 80) -> dict[str, Any]:
    """JSON Schema of a POL output (a list of doctor actions), for constrained decoding."""
    schema: dict[str, Any] = _bound(_slot_check_types(_drop_nulls(_ACTIONS.json_schema())), max_items, max_length)
    return schema


def dumps(obj: Any) -> str:
    """Compact JSON used in prompts and training targets.

    No whitespace at all: constrained decoding forbids free whitespace (vLLM's
    ``disable_any_whitespace``), so targets must be written the way decoding must write them.
    """
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def closing_reason(actions: list[dict[str, Any]], after_opening: bool) -> str | None:
    """Whether a doctor turn's actions end the interview, and why: ``farewell`` (a salutation after the opening
    turn) or ``diagnosis`` (a diagnosis offered). The one place that decides it; the graph asks it of every planned
    or clinician-edited turn."""
    kinds = {a.get("action") for a in actions}
    if "nod_prompt_salutations" in kinds and after_opening:
        return "farewell"
    if "diagnosis" in kinds:
        return "diagnosis"
    return None


# --------------------------------------------------------------------------- CMAS groups
# Attribute groups that questions and answers share.

OPEN_VALUES = frozenset({"other", "none", "all", "general", "any", ""})
"""Head values that name no concept but a group or nothing ("any other symptoms?", "none"): the one set the NLU,
the grounding gate, the policy, the case cards and the NLG fact score share."""


# Check types that stand for a group of state attributes.
CHECK_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "characteristics": ("positive_characteristics", "negative_characteristics", "unknown_characteristics"),
    "ana_factors": (
        "alleviating_factor", "aggravating_factor", "not_alleviating_factor", "not_aggravating_factor",
        "not_alleviating_aggravating_factor", "unknown_factor",
    ),
}


# Record slots: which record attributes answer a check.
RECORD_CHECK_ATTRIBUTES: dict[str, dict[str, tuple[str, ...]]] = {
    "travel": {"value": ("destination", "value"), "when": ("when", "date"), "date": ("date", "when")},
    "occupation": {"exposure": ("exposure", "hazards"), "hazards": ("hazards", "exposure")},
}


BASIC_KEYS = ("name", "age", "gender", "sex")


VALUE_SENSITIVE_CHECKS = frozenset({"location", "where"})
