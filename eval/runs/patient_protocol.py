"""The patient simulator's protocol (:mod:`eval.runs.simulators`): one doctor turn in, one reply with its gold NLU
frames out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

SILENCE = "..."  # what the runner sends for a simulator that said nothing: the agent hears silence, not a fact


@dataclass
class DoctorTurn:
    """What the patient hears: the doctor's text, and the CMAS actions behind it (the agenda simulator's input)."""

    text: str
    actions: list[dict] = field(default_factory=list)
    index: int = 0


@dataclass
class PatientReply:
    """What the patient says and its gold NLU frames (strict CMAS, prefix form); ``meta`` says how it was made."""

    text: str
    frames: list[dict]
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class PatientSimulator(Protocol):
    def respond(self, doctor: DoctorTurn) -> PatientReply:
        """The patient's answer to one doctor turn (the first call answers the greeting)."""
        ...
