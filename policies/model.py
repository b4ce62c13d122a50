"""The model policy: a thin adapter over the POL LLM module (``models.modules.LLMPolicy``).

It adds what every consumer of a policy needs and the LLM module does not know: the
output re-checked as strict CMAS (a lenient parse can still leave nothing usable). Whether the
actions close the interview is decided in one place, ``agent.core.cmas.closing_reason``.
"""

from __future__ import annotations

from agent.core import cmas
from agent.core.protocol import ModuleOutput, Policy, TurnContext


class ModelPolicy:
    def __init__(self, model: Policy):
        self.model = model  # named as in every module that wraps a model module (hybrid, fallback NLG, ensemble)

    def next_actions(self, ctx: TurnContext) -> ModuleOutput:
        out = self.model.next_actions(ctx)
        meta = {**out.meta, "policy": "model"}
        format_error = out.format_error
        value = out.value
        try:
            value = cmas.parse_actions(value)
        except cmas.CMASError as exc:
            meta["cmas_error"] = str(exc)
            format_error = format_error or f"not valid CMAS: {exc}"
        return ModuleOutput(value=value, raw=out.raw, format_error=format_error, repaired=out.repaired,
                            extra=dict(out.extra), meta=meta)
