"""The module registry: every built-in kind of the four roles, a researcher's own module by dotted path, the state
tracker as a module, and clear errors. The LLM modules are fakes standing in for a served model (their backends
are exercised against real vLLM servers elsewhere)."""

from __future__ import annotations

import pytest

from agent.core.protocol import ModuleOutput, TurnContext
from agent.core.tracker import RuleTracker
from policies import registry
from policies.agent_config import load_config
from policies.hybrid import HybridPolicy
from policies.model import ModelPolicy
from policies.nlg_fallback import FallbackNLG
from policies.questionnaire import QuestionnairePolicy
from policies.template_nlg import TemplateNLG


class AskAbout:
    """A researcher's own policy, as the README shows it: asks about one symptom, then closes."""

    def __init__(self, symptom: str = "pain"):
        self.symptom = symptom

    def next_actions(self, ctx: TurnContext) -> ModuleOutput:
        if ctx.doctor_turns > 1:
            return ModuleOutput(value=[{"action": "diagnosis", "disease": [{"value": "undetermined"}]}])
        return ModuleOutput(value=[{"action": "inquire", "symptom": [{"value": self.symptom}]}])


class NotAPolicy:
    def __init__(self, **_):
        pass


class FakeLLMBuilder(registry.Builder):
    """The LLM of every model kind is a fixed fake (no backend is built)."""

    def llm(self, role: str):
        from test_policies_hybrid import FixedNLG, FixedPolicy

        return {"policy": FixedPolicy([{"action": "other"}]), "nlg": FixedNLG("Hi.")}[role]


def build(role: str, section: dict, builder=FakeLLMBuilder):
    return builder({role: section}).build(role)


def test_registry_builds_each_built_in_kind():
    assert set(registry.kinds("nlu")) == {"clinical", "model", "ensemble", "gold"}
    assert isinstance(build("policy", {"kind": "questionnaire"}), QuestionnairePolicy)
    assert isinstance(build("policy", {"kind": "model", "backend": "x"}), ModelPolicy)
    h = build("policy", {"kind": "hybrid", "backend": "x", "questionnaire": "configs/questionnaire.yaml"})
    assert isinstance(h, HybridPolicy) and isinstance(h.fallback, QuestionnairePolicy)
    assert isinstance(build("nlg", {"kind": "template"}), TemplateNLG)
    assert isinstance(build("nlg", {"kind": "model", "backend": "x"}), FallbackNLG)
    assert not isinstance(build("nlg", {"kind": "model", "backend": "x", "fallback": False}), FallbackNLG)


def test_the_state_tracker_is_a_module_with_its_list_semantics():
    default = registry.Builder({}).build("dst")  # no dst section: the rule tracker, MediTOD's replace semantics
    assert isinstance(default, RuleTracker) and default.list_merge == "replace"
    union = build("dst", {"kind": "rule", "list_merge": "union"})
    state = union.update(
        {"positive_symptom": [{"value": "pain", "location": ["chest"]}]},
        [{"intent": "inform", "slots": {"positive_symptom": [{"value": "pain", "location": ["arm"]}]}}],
    )
    assert state["positive_symptom"][0]["location"] == ["chest", "arm"]
    with pytest.raises(ValueError, match="list_merge"):
        build("dst", {"kind": "rule", "list_merge": "append"})


def test_a_researchers_module_plugs_in_by_dotted_path(tmp_path):
    policy = build("policy", {"kind": "test_registry:AskAbout", "symptom": "chest pain"})
    out = policy.next_actions(TurnContext(turns=[("doctor", "Hello."), ("patient", "Hi.")]))
    assert out.value == [{"action": "inquire", "symptom": [{"value": "chest pain"}]}]
    # ... and runs a real interview through the graph and a SQLite session
    from graph_fixtures import REPO

    from agent.app.sessions import SessionStore

    cfg = load_config(REPO / "configs" / "default.yaml")
    cfg["session"]["dir"] = str(tmp_path)
    cfg["policy"] = {"kind": "test_registry:AskAbout", "symptom": "chest pain"}
    with SessionStore(cfg) as store:
        session = store.start()
        said = session.send("I have had a pain in my chest since this morning.")
        assert "chest pain" in said.text.lower()


def test_registry_errors_are_clear():
    with pytest.raises(ValueError, match="policy kind 'rules' unknown"):
        build("policy", {"kind": "rules"})
    with pytest.raises(ValueError, match="cannot import 'Nope'"):
        build("policy", {"kind": "test_registry:Nope"})
    with pytest.raises(ValueError, match="rejected its settings"):
        build("policy", {"kind": "test_registry:AskAbout", "colour": "red"})
    with pytest.raises(TypeError, match="does not speak the Policy protocol"):
        build("policy", {"kind": "test_registry:NotAPolicy"})
    with pytest.raises(ValueError, match="backend 'x'"):
        build("policy", {"kind": "model", "backend": "x"}, builder=registry.Builder)
    with pytest.raises(FileNotFoundError):
        build("policy", {"kind": "questionnaire", "questionnaire": "configs/missing.yaml"})
    with pytest.raises(ValueError, match="section 'nlg' with a 'kind'"):
        registry.Builder({}).build("nlg")
