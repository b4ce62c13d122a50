"""The model policy: a thin adapter over the POL LLM module (``models.modules.LLMPolicy``).

It adds what every consumer of a policy needs and the LLM module does not know: the
output re-checked as strict CMAS (a lenient parse can still leave nothing usable), and
the ``closing`` marker the graph reads (a farewell after the opening turn, or a diagnosis).
"""

from __future__ import annotations

from agent import cmas
from agent.protocol import ModuleOutput, Policy, TurnContext


def closing_reason(actions: list[dict], ctx: TurnContext) -> str | None:
    """``farewell``: a salutation after the opening turn; ``diagnosis``: the policy offered one."""
    kinds = {a.get("action") for a in actions}
    if "nod_prompt_salutations" in kinds and (ctx.past_actions or ctx.doctor_turns > 0):
        return "farewell"
    if "diagnosis" in kinds:
        return "diagnosis"
    return None


class ModelPolicy:
    def __init__(self, llm: Policy):
        self.llm = llm

    def next_actions(self, ctx: TurnContext) -> ModuleOutput:
        out = self.llm.next_actions(ctx)
        meta = {**out.meta, "policy": "model"}
        format_error = out.format_error
        value = out.value
        try:
            value = cmas.parse_actions(value)
        except cmas.CMASError as exc:
            meta["cmas_error"] = str(exc)
            format_error = format_error or f"not valid CMAS: {exc}"
        reason = None if format_error else closing_reason(value, ctx)
        meta["closing"] = reason is not None
        if reason:
            meta["closing_reason"] = reason
        return ModuleOutput(value=value, raw=out.raw, format_error=format_error, repaired=out.repaired,
                            extra=dict(out.extra), meta=meta)
