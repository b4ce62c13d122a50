"""The hybrid policy: the model's actions when they are usable, the questionnaire's otherwise.

Usable means: parsed without a format error, valid CMAS, not empty, and every question
in it is new: nothing the patient state already answers, nothing asked before (judged by
``policies.questions``, exactly as the questionnaire judges its own questions). The
reason for each fallback is recorded in ``meta["fallback"]``.
"""

from __future__ import annotations

from agent.core import cmas
from agent.core.protocol import ModuleOutput, Policy, TurnContext
from policies.questionnaire import QuestionnairePolicy
from policies.questions import answered, asked, questions_of


class HybridPolicy:
    def __init__(self, model: Policy, fallback: QuestionnairePolicy):
        self.model = model
        self.fallback = fallback

    def rejection(self, out: ModuleOutput, ctx: TurnContext) -> str | None:
        """Why the model's output cannot be used, or ``None``."""
        if out.meta.get("cmas_error"):
            return f"invalid_cmas: {out.meta['cmas_error']}"
        if out.format_error:
            return f"format_error: {out.format_error}"
        try:
            actions = cmas.parse_actions(out.value)
        except cmas.CMASError as exc:
            return f"invalid_cmas: {exc}"
        if not actions:
            return "empty: no actions"
        vocab = self.fallback.vocab
        for q in questions_of(actions):
            if answered(ctx.state, q, vocab):
                return f"already_answered: {q.label()}"
            if asked(ctx.past_actions, q, vocab):
                return f"already_asked: {q.label()}"
        return None

    def next_actions(self, ctx: TurnContext) -> ModuleOutput:
        out = self.model.next_actions(ctx)
        reason = self.rejection(out, ctx)
        if reason is None:
            actions = cmas.parse_actions(out.value)
            meta = {**out.meta, "policy": "hybrid", "source": "model"}
            return ModuleOutput(value=actions, raw=out.raw, repaired=out.repaired, extra=dict(out.extra), meta=meta)
        fb = self.fallback.next_actions(ctx)
        meta = {**fb.meta, "policy": "hybrid", "source": "questionnaire", "fallback": reason,
                "model_value": out.value, "model_meta": out.meta}
        return ModuleOutput(value=fb.value, raw=out.raw, extra=dict(out.extra), meta=meta)
