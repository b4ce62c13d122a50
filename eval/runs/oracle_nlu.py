"""The oracle mode's NLU (``nlu: {kind: "eval.runs.simulators:OracleNLU", channel: NAME}``) and the channels through
which a simulator hands it the gold frames of its replies."""

from __future__ import annotations

import copy
import threading

from agent.core.protocol import ModuleOutput, TurnContext
from agent.core.safety import clean_patient_text


class OracleChannel:
    """Gold frames a simulator hands the oracle NLU, keyed by the (cleaned) patient text they belong to."""

    def __init__(self) -> None:
        self._frames: dict[str, list[dict]] = {}
        self._lock = threading.Lock()

    def put(self, text: str, frames: list[dict]) -> None:
        with self._lock:
            self._frames[clean_patient_text(text)] = copy.deepcopy(frames)

    def take(self, text: str) -> list[dict] | None:
        with self._lock:
            return self._frames.pop(clean_patient_text(text), None)


_CHANNELS: dict[str, OracleChannel] = {}
_CHANNELS_LOCK = threading.Lock()


def open_channel(name: str) -> OracleChannel:
    """The channel an :class:`OracleNLU` built with ``channel: name`` reads (process-wide: the simulate runner and
    the agent it drives share one process). One runner slot, one channel: no two sessions share one."""
    with _CHANNELS_LOCK:
        return _CHANNELS.setdefault(name, OracleChannel())


def close_channel(name: str) -> None:
    with _CHANNELS_LOCK:
        _CHANNELS.pop(name, None)


class OracleNLU:
    """The NLU of the oracle mode, plugged in by dotted path (``nlu: {kind: "eval.runs.simulators:OracleNLU", channel:
    NAME}``): the gold frame the simulator attached to the utterance, through the agent's usual grounding gate.
    An utterance with no frame (the runner sent silence) is a format error with no frames, never a guess."""

    def __init__(self, channel: str):
        self.channel = channel

    def understand(self, ctx: TurnContext) -> ModuleOutput:
        text = ctx.turns[-1][1] if ctx.turns else ""
        frames = open_channel(self.channel).take(text)
        if frames is None:
            return ModuleOutput(value=[], format_error="no oracle frame for this utterance", meta={"nlu": "oracle"})
        return ModuleOutput(value=frames, meta={"nlu": "oracle"})
