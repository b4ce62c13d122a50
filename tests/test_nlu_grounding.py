"""Valid is not true: a model's invented or offensive value never reaches the patient state; what is set aside
is recorded in the turn. Through the real graph (the NLU is a scripted model output: a fake standing in for the
LLM at the backend boundary, named as such) and the real gate."""

from __future__ import annotations

from graph_fixtures import REPO

from agent.app.sessions import SessionStore
from agent.core.grounding import grounded_in
from agent.core.ontology import default_vocabulary
from agent.core.protocol import ModuleOutput
from agent.core.safety import admit_frames
from policies import registry
from policies.agent_config import load_config

INVENTED = [{"intent": "inform", "slots": {
    "positive_symptom": [
        {"value": "coughing", "onset": "two weeks ago", "color": "purple with green dots"},
        {"value": "the patient reports a very long sentence as a symptom"},
        {"value": "idiot"},  # stands in for an offensive word: never a symptom
        {"value": "haemoptysis"},  # a spelling variant the vocabulary resolves: kept
    ],
    "occupation": [{"value": "astronaut", "status": "true"}],
}}]


class ScriptedModelNLU:
    """Fake of the LLM NLU (the backend boundary): returns fixed, schema-valid but invented frames."""

    def understand(self, ctx):
        return ModuleOutput(value=INVENTED, raw="<scripted>")


def test_gate_sets_aside_invented_values_and_keeps_grounded_ones():
    said = "I've had this cough for two weeks and I cough up blood."
    admitted = admit_frames(INVENTED, default_vocabulary(), said)
    state_items = admitted.frames[0]["slots"]
    assert state_items["positive_symptom"] == [{"value": "coughing", "onset": "two weeks ago"},
                                               {"value": "haemoptysis"}]
    assert "occupation" not in state_items  # "astronaut" was never said
    reasons = {k: v for k, v in admitted.rejected.items()}
    assert reasons["0.slots.positive_symptom.1"] == {"unrecognized_value": INVENTED[0]["slots"]["positive_symptom"][1]}
    assert reasons["0.slots.positive_symptom.2"]["unrecognized_value"]["value"] == "idiot"
    assert reasons["0.slots.positive_symptom.0"]["ungrounded"] == {"color": "purple with green dots"}
    assert grounded_in("yellowish", "it is yellow") and not grounded_in("astronaut", "I work in a bank")
    # a number said in words grounds its digits, and only its own
    assert grounded_in("71", "I'm seventy-one") and not grounded_in("71", "I'm seventy")


def test_invented_values_never_reach_the_state_through_the_graph(tmp_path, monkeypatch):
    cfg = load_config(REPO / "configs" / "default.yaml")
    cfg["session"]["dir"] = str(tmp_path)
    # the registry's model kind builds the scripted model here: no backend is built
    monkeypatch.setitem(registry._KINDS["nlu"], "model", lambda builder, section: ScriptedModelNLU())
    cfg["nlu"] = {"kind": "model", "backend": "scripted", "grounding": True}
    with SessionStore(cfg) as store:
        session = store.start()
        session.send("I've had this cough for two weeks and I cough up blood.")
        st = session.state()
    values = {it["value"] for items in st.patient_state.values() for it in items if "value" in it}
    assert values == {"coughing", "haemoptysis"}
    assert "idiot" not in str(st.patient_state) and "astronaut" not in str(st.patient_state)
    recorded = st.turns[-2].meta["extra"]
    assert any("unrecognized_value" in v for v in recorded.values())
    assert [f["id"] for f in st.red_flags] == ["hemoptysis"]  # the variant spelling still raises the flag
