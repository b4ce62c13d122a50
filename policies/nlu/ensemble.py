"""The ``ensemble`` NLU kind: an LLM's grounded frames merged into the clinical NLU's.

Rules (in this order; the README states them too):
1. Both NLUs read the turn. The LLM's output passes the CMAS gate and grounding (``agent.core.safety.admit_frames``
   with the utterance): unknown medical values and free text the patient did not say are set aside, recorded
   in ``extra``, never merged.
2. The clinical frame is the base: its items, statuses and attributes stand.
3. An LLM item whose value the clinical NLU did not find (by vocabulary concept, any status) is added.
4. For an item both found, LLM attributes the clinical item lacks are added; a value both give stays the
   clinical one. A status disagreement keeps the clinical status (ConText reads negation from the words) and
   is recorded in ``meta["disagreements"]``.
5. Intent: ``inform`` when any slot results; else the clinical intent.
6. The LLM gets ``model_timeout_s`` (default 20 s, under the turn deadline): when it does not answer in time or its
   server fails, the clinical frames stand alone and ``meta["model_unavailable"]`` says why, so an overloaded model
   server costs the turn the LLM's additions, not the patient's words (the late answer is discarded).
"""

from __future__ import annotations

import threading

from agent.core import cmas
from agent.core.ontology import Vocabulary, default_vocabulary
from agent.core.protocol import NLU, ModuleOutput, TurnContext
from agent.core.safety import admit_frames
from models.backends.base import BackendError
from policies.nlu.clinical import ClinicalNLU

MODEL_FAILURES = (BackendError, ConnectionError, TimeoutError)


def _items(frames: list[dict]) -> dict[tuple[str, str], tuple[str, dict]]:
    out: dict[tuple[str, str], tuple[str, dict]] = {}
    for f in frames:
        for name, items in (f.get("slots") or {}).items():
            status, base = cmas.split_slot_name(name)
            for it in items:
                key = (base, str(it.get("value", ""))) if cmas.SLOTS[base].medical else (base, "")
                out.setdefault(key, (name, it))
    return out


class EnsembleNLU:
    def __init__(self, model: NLU, clinical: ClinicalNLU | None = None, vocab: Vocabulary | None = None,
                 model_timeout_s: float | None = 20.0):
        self.model = model
        self.clinical = clinical or ClinicalNLU()
        self.vocab = vocab or default_vocabulary()
        self.model_timeout_s = model_timeout_s

    def _start_model(self, ctx: TurnContext) -> tuple[dict, threading.Thread]:
        """Start the LLM's reading in a worker thread (the clinical NLU reads meanwhile); ``_wait`` collects it."""
        box: dict = {}

        def run() -> None:
            try:
                box["out"] = self.model.understand(ctx)
            except MODEL_FAILURES as exc:
                box["error"] = f"{type(exc).__name__}: {exc}"

        worker = threading.Thread(target=run, name="ensemble-model", daemon=True)
        worker.start()
        return box, worker

    def _wait(self, box: dict, worker: threading.Thread) -> tuple[ModuleOutput | None, str | None]:
        worker.join(self.model_timeout_s)
        if worker.is_alive():
            return None, f"no answer within {self.model_timeout_s:g} s"
        if "error" in box:
            return None, box["error"]
        return box["out"], None

    def _find(self, have: dict, base: str, value: str):
        for (b, v), entry in have.items():
            if b == base and (v == value or (value and self.vocab.same(base, v, value))):
                return entry
        return None

    def understand(self, ctx: TurnContext) -> ModuleOutput:
        box, worker = self._start_model(ctx)
        rule = self.clinical.understand(ctx)
        model, unavailable = self._wait(box, worker)
        if model is None:
            meta = {**rule.meta, "nlu": "ensemble", "model_unavailable": unavailable}
            return ModuleOutput(value=rule.value, meta=meta)
        utterance = ctx.turns[-1][1] if ctx.turns else ""
        admitted = admit_frames(model.value, self.vocab, utterance)
        merged: dict[str, list[dict]] = {}
        for f in rule.value:
            for name, items in (f.get("slots") or {}).items():
                merged.setdefault(name, []).extend(dict(it) for it in items)
        have = _items([{"intent": "inform", "slots": merged}])
        added, enriched, disagreements = [], [], []
        for (base, value), (name, item) in _items(admitted.frames).items():
            found = self._find(have, base, value)
            if found is None:
                merged.setdefault(name, []).append(dict(item))
                added.append(f"{name}:{value}")
                continue
            rule_name, rule_item = found
            if rule_name != name:
                disagreements.append({"value": value, "clinical": rule_name, "model": name})
            new = {k: v for k, v in item.items() if k not in rule_item}
            if new:
                rule_item.update(new)
                enriched.append(f"{rule_name}:{value}:{','.join(sorted(new))}")
        frames = cmas.parse_nlu([{"intent": "inform", "slots": merged}]) if merged else rule.value
        meta = {
            "nlu": "ensemble",
            "model_raw": model.raw,
            "model_format_error": model.format_error,
            "added_from_model": added,
            "enriched_from_model": enriched,
            "disagreements": disagreements,
            "latency_s": round(float(rule.meta.get("latency_s") or 0) + float(model.meta.get("latency_s") or 0), 6),
            **{
                f"model_{k}": v for k, v in model.meta.items() if k in ("prompt_tokens", "completion_tokens", "adapter")
            },
        }
        return ModuleOutput(
            value=frames,
            raw=model.raw,
            format_error=None,
            repaired=model.repaired,
            extra={**model.extra, **admitted.rejected},
            meta=meta,
        )
