"""Fault injection for the crash tests, at the module boundary (test code: production has no hook).

:class:`Stall` is plugged into an agent config by dotted path (``kind: fault_modules:Stall``, see
``graph_fixtures.stalled_config``). It wraps the real module of its role and, at one patient turn, announces itself
on stderr and sleeps inside the module, so the test's SIGKILL lands inside that graph node deterministically.
"""

from __future__ import annotations

import sys
import time

from agent.protocol import ModuleOutput, TurnContext
from policies.registry import Builder

MARKER = "medhx-test: stalled in {role} at patient turn {turn}"


class Stall:
    def __init__(self, role: str, inner: dict, turn: int, seconds: float = 600, grounding: bool | None = None):
        # grounding: read by the registry for NLU sections (the wrapped NLU keeps the setting it had)
        self.role, self.turn, self.seconds = role, turn, seconds
        self.inner = Builder({role: inner}).build(role)
        self.updates = 0

    def _stall(self, patient_turn: int) -> None:
        if patient_turn == self.turn:
            print(MARKER.format(role=self.role, turn=patient_turn), file=sys.stderr, flush=True)
            time.sleep(self.seconds)

    @staticmethod
    def _patient_turns(ctx: TurnContext) -> int:
        return sum(1 for speaker, _ in ctx.turns if speaker == "patient")

    def understand(self, ctx: TurnContext) -> ModuleOutput:
        self._stall(self._patient_turns(ctx))
        return self.inner.understand(ctx)

    def update(self, state: dict, frames: list[dict]) -> dict:
        self.updates += 1  # one update per patient turn
        self._stall(self.updates)
        return self.inner.update(state, frames)

    def next_actions(self, ctx: TurnContext) -> ModuleOutput:
        self._stall(self._patient_turns(ctx))
        return self.inner.next_actions(ctx)

    def verbalize(self, actions: list[dict], ctx: TurnContext) -> ModuleOutput:
        self._stall(self._patient_turns(ctx))
        return self.inner.verbalize(actions, ctx)
