"""The one protocol every dialogue module of the live agent speaks.

NLU, policy and NLG each take a :class:`TurnContext` (what the agent knows at this
turn) and return plain CMAS JSON (``agent.core.cmas``), so a model module and a
non-model one (questionnaire policy, template NLG) are interchangeable by config.
The state tracker (DST) folds each turn's NLU frames into the patient state.
Part of the foundation: modules (``policies/``, ``models/``) implement these, the
application (graph, sessions, UI) calls them; ``policies.registry`` builds them by kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass
class TurnContext:
    """``turns``: the whole dialogue so far as (speaker, text), oldest first; the last
    one is the patient's latest utterance when a patient has spoken.
    ``state``: the patient state, CMAS prefix form. ``past_actions``: the doctor's
    actions so far, one list per doctor turn."""

    turns: list[tuple[str, str]] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    past_actions: list[list[dict[str, Any]]] = field(default_factory=list)

    @property
    def doctor_turns(self) -> int:
        return sum(1 for s, _ in self.turns if s == "doctor")


@dataclass
class ModuleOutput:
    """What a module produced: ``value`` (CMAS JSON, or text for NLG) plus how.

    ``raw``: the model's text (empty for non-model modules); ``format_error``: the
    output could not be parsed even after repair (``value`` is then the safe fallback);
    ``repaired``: parsing needed the repair pass; ``extra``: what lenient parsing set
    aside, by path; ``meta``: latency, token counts, backend, fallback reasons."""

    value: Any
    raw: str = ""
    format_error: str | None = None
    repaired: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class NLU(Protocol):
    def understand(self, ctx: TurnContext) -> ModuleOutput:
        """NLU frames for the patient's latest utterance (``ctx.turns[-1]``)."""
        ...


@runtime_checkable
class Policy(Protocol):
    def next_actions(self, ctx: TurnContext) -> ModuleOutput:
        """The doctor's next actions (a list of CMAS actions)."""
        ...


@runtime_checkable
class NLG(Protocol):
    def verbalize(self, actions: list[dict[str, Any]], ctx: TurnContext) -> ModuleOutput:
        """The doctor's utterance (``value`` is a string) for ``actions``."""
        ...


@runtime_checkable
class DST(Protocol):
    def update(self, state: dict[str, Any], frames: list[dict[str, Any]]) -> dict[str, Any]:
        """The patient state after the turn's NLU ``frames`` (CMAS prefix form); ``state`` is left unchanged."""
        ...
