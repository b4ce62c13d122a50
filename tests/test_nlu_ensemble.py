"""The ensemble's merge rules (policies/nlu/ensemble.py) with a scripted model NLU standing in for the LLM (a fake at
the backend boundary, named as such); the clinical NLU is the real one."""

from __future__ import annotations

from agent.core.protocol import ModuleOutput, TurnContext
from policies.nlu.ensemble import EnsembleNLU


class ScriptedModelNLU:
    """Fake LLM NLU: answers every turn with the frames it was given."""

    def __init__(self, frames):
        self.frames = frames

    def understand(self, ctx):
        return ModuleOutput(value=self.frames, raw="<scripted>", meta={"latency_s": 0.5})


def ctx(text: str) -> TurnContext:
    return TurnContext(turns=[("doctor", "What brings you in?"), ("patient", text)], past_actions=[
        [{"action": "nod_prompt_salutations"}]])


def test_clinical_base_grounded_additions_and_clinical_status_wins():
    text = "No fever, but I've had a cough for two weeks and I feel wheezy at night."
    model = ScriptedModelNLU([{"intent": "inform", "slots": {
        "positive_symptom": [
            {"value": "fever"},  # status disagreement: the clinical NLU read "No fever"
            {"value": "coughing", "frequency": "at night", "onset": "last year"},  # onset clash; frequency new
            {"value": "wheezing", "aggravating_factor": ["night"]},
            {"value": "astronaut disease"},  # not in the vocabulary: set aside
        ],
        "positive_habit": [{"value": "smoking", "frequency": "a pack a day"}],  # never said: frequency set aside
    }}])
    out = EnsembleNLU(model).understand(ctx(text))
    slots = out.value[0]["slots"]
    assert {"value": "fever"} in slots["negative_symptom"]
    cough = next(it for it in slots["positive_symptom"] if it["value"] == "coughing")
    assert cough["onset"] == "two weeks ago"  # the clinical value stands
    assert cough["frequency"] == "at night"  # a grounded attribute the clinical NLU lacked is added
    assert out.meta["disagreements"] == [
        {"value": "fever", "clinical": "negative_symptom", "model": "positive_symptom"}
    ]
    assert "astronaut disease" not in str(out.value)
    assert any("unrecognized_value" in v for v in out.extra.values())
    assert slots["positive_habit"] == [{"value": "smoking"}]  # added, its ungrounded frequency set aside
    assert out.meta["added_from_model"] == ["positive_habit:smoking"]


def test_model_format_error_leaves_the_clinical_frames():
    out = EnsembleNLU(ScriptedModelNLU("not json at all")).understand(ctx("I have a cough."))
    assert out.value == [{"intent": "inform", "slots": {"positive_symptom": [{"value": "coughing"}]}}]


class StalledModelNLU(ScriptedModelNLU):
    """Fake LLM NLU whose server answers late (or fails): the overloaded-server case of `medhx load-bench`."""

    def __init__(self, frames, seconds: float = 0.0, error: Exception | None = None):
        super().__init__(frames)
        self.seconds, self.error = seconds, error

    def understand(self, ctx):
        import time

        time.sleep(self.seconds)
        if self.error:
            raise self.error
        return super().understand(ctx)


def test_a_late_or_failed_model_leaves_the_clinical_frames_within_its_timeout():
    import time

    from models.backends.base import BackendError

    late = StalledModelNLU([{"intent": "inform", "slots": {"positive_symptom": [{"value": "wheezing"}]}}], seconds=3)
    t0 = time.perf_counter()
    out = EnsembleNLU(late, model_timeout_s=0.5).understand(ctx("I have a cough."))
    assert time.perf_counter() - t0 < 2.5  # the clinical answer does not wait for the late model
    assert out.value == [{"intent": "inform", "slots": {"positive_symptom": [{"value": "coughing"}]}}]
    assert out.meta["model_unavailable"] == "no answer within 0.5 s"
    failed = StalledModelNLU([], error=BackendError("server unreachable"))
    out = EnsembleNLU(failed, model_timeout_s=5).understand(ctx("I have a cough."))
    assert out.value[0]["slots"]["positive_symptom"] == [{"value": "coughing"}]
    assert out.meta["model_unavailable"].startswith("BackendError")
