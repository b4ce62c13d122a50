"""Model NLG with the template NLG as its fallback.

The model's utterance is used unless it failed to parse, came back empty, or carries a
placeholder or JSON; then the template NLG verbalizes the same actions. The reason is recorded
in ``meta["fallback"]``. Whether an utterance presents the agent as a clinician is checked once,
for every NLG, by the graph's guard (``agent.app.graph_nodes``).
"""

from __future__ import annotations

from agent.core.protocol import NLG, ModuleOutput, TurnContext
from policies.template_nlg import TemplateNLG


class FallbackNLG:
    def __init__(self, model: NLG, template: TemplateNLG):
        self.model = model
        self.template = template

    @staticmethod
    def rejection(out: ModuleOutput) -> str | None:
        if out.format_error:
            return f"format_error: {out.format_error}"
        text = out.value if isinstance(out.value, str) else ""
        if not text.strip():
            return "empty: no text"
        if "{" in text or "}" in text:
            return "placeholder or JSON in the utterance"
        return None

    def verbalize(self, actions: list[dict], ctx: TurnContext) -> ModuleOutput:
        out = self.model.verbalize(actions, ctx)
        reason = self.rejection(out)
        if reason is None:
            return ModuleOutput(value=out.value.strip(), raw=out.raw, meta={**out.meta, "nlg": "model"})
        fb = self.template.verbalize(actions, ctx)
        return ModuleOutput(value=fb.value, raw=out.raw,
                            meta={**fb.meta, "fallback": reason, "model_value": out.value, "model_meta": out.meta})
