"""Fault injection for the crash tests, at the module boundary (test code: production has no hook).

:class:`Stall` is plugged into an agent config by dotted path (``kind: fault_modules:Stall``, see
``graph_fixtures.stalled_config``). It wraps the real module of its role and, at one patient turn, announces itself
on stderr and sleeps inside the module, so the test's SIGKILL lands inside that graph node deterministically. The same
stall, in process, is a server that never answers: the turn deadline must abandon it (``release()`` ends the sleep
so a test can watch the late answer being discarded). :class:`Fail` raises the error a dead model server gives
(``models.backends.base.BackendError``) at one patient turn.
"""

from __future__ import annotations

import sys
import threading

from agent.core.protocol import ModuleOutput, TurnContext
from models.backends.base import BackendError
from policies.registry import Builder

MARKER = "medhx-test: stalled in {role} at patient turn {turn}"


class Stall:
    def __init__(self, role: str, inner: dict, turn: int, seconds: float = 600, grounding: bool | None = None):
        # grounding: read by the registry for NLU sections (the wrapped NLU keeps the setting it had)
        self.role, self.turn, self.seconds = role, turn, seconds
        self.inner = Builder({role: inner}).build(role)
        self.updates = 0
        self._released = threading.Event()
        self.finished: list[int] = []  # patient turns whose stalled call has returned (late, if a deadline passed)

    def release(self) -> None:
        """End every stall now (and any later one at once)."""
        self._released.set()

    def _stall(self, patient_turn: int) -> bool:
        if patient_turn == self.turn:
            print(MARKER.format(role=self.role, turn=patient_turn), file=sys.stderr, flush=True)
            self._released.wait(self.seconds)
            return True
        return False

    def _after(self, stalled: bool, patient_turn: int, out):
        if stalled:
            self.finished.append(patient_turn)
        return out

    @staticmethod
    def _patient_turns(ctx: TurnContext) -> int:
        return sum(1 for speaker, _ in ctx.turns if speaker == "patient")

    def understand(self, ctx: TurnContext) -> ModuleOutput:
        n = self._patient_turns(ctx)
        return self._after(self._stall(n), n, self.inner.understand(ctx))

    def update(self, state: dict, frames: list[dict]) -> dict:
        self.updates += 1  # one update per patient turn
        n = self.updates
        return self._after(self._stall(n), n, self.inner.update(state, frames))

    def next_actions(self, ctx: TurnContext) -> ModuleOutput:
        n = self._patient_turns(ctx)
        return self._after(self._stall(n), n, self.inner.next_actions(ctx))

    def verbalize(self, actions: list[dict], ctx: TurnContext) -> ModuleOutput:
        n = self._patient_turns(ctx)
        return self._after(self._stall(n), n, self.inner.verbalize(actions, ctx))


class Fail(Stall):
    """At patient turn ``turn`` the module's backend is gone: :class:`BackendError`, as the vLLM client raises it."""

    def __init__(self, role: str, inner: dict, turn: int, grounding: bool | None = None):
        super().__init__(role, inner, turn, seconds=0, grounding=grounding)

    def _stall(self, patient_turn: int) -> bool:
        if patient_turn == self.turn:
            raise BackendError(f"fault_modules.Fail: the {self.role} server is unreachable (injected)")
        return False
