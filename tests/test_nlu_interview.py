"""The issue's scripted interview, in a patient's own words, through the real compiled graph and a real SQLite
session store on configs/default.yaml (clinical NLU): the state holds what was said, the red flag fires, and
nothing the patient told is asked again."""

from __future__ import annotations

import pytest
from graph_fixtures import REPO, assert_cmas_valid

from agent.app.sessions import SessionStore
from agent.core import cmas
from agent.core.ontology import default_vocabulary
from policies.agent_config import load_config
from policies.questions import Question, answered

SCRIPT = [
    "I've had a bad cough for two weeks and I get short of breath when I climb the stairs.",
    "I cough up yellow phlegm, and once there was blood in it.",
    "No fever. It's worse at night.",
    "I smoke a pack a day.",
    "It's getting worse.",
]


def run_script(tmp_path, config: str = "configs/default.yaml", lines=SCRIPT):
    cfg = load_config(REPO / config)
    cfg["session"]["dir"] = str(tmp_path)
    if cfg["policy"]["kind"] == "questionnaire":
        # the script answers the review-of-systems order (cough first, its factors when asked): presentation plans off
        cfg["policy"]["questionnaire"] = str(review_of_systems_config(tmp_path))
    with SessionStore(cfg) as store:
        session = store.start()
        for line in lines:
            session.send(line)
        return session.state()


def review_of_systems_config(tmp_path):
    path = tmp_path / "questionnaire.yaml"
    text = (REPO / "configs" / "questionnaire.yaml").read_text()
    path.write_text(text.replace("\nplans: presentations", "\nplans: null"))
    return path


def item(state: dict, name: str, value: str) -> dict:
    found = [it for it in state.get(name) or [] if it["value"] == value]
    assert found, f"{name} {value!r} missing from {state}"
    return found[0]


def test_scripted_interview_fills_the_state_and_raises_the_red_flag(tmp_path):
    st = run_script(tmp_path)
    assert_cmas_valid(st)
    state = st.patient_state
    assert item(state, "positive_symptom", "coughing")["onset"] == "two weeks ago"
    assert "physical exertion" in item(state, "positive_symptom", "dyspnea")["aggravating_factor"]
    assert item(state, "positive_symptom", "colored/excess sputum")["color"] == "yellow"
    item(state, "positive_symptom", "hemoptysis")
    item(state, "negative_symptom", "fever")
    assert item(state, "positive_habit", "smoking")["frequency"] == "a pack a day"
    assert "night" in item(state, "positive_symptom", "coughing")["aggravating_factor"]
    assert [f["id"] for f in st.red_flags] == ["hemoptysis"]
    # the vocabulary's codes: the values resolve to the questionnaire ontology
    vocab = default_vocabulary()
    assert vocab.code("symptom", "coughing") == "cough" and vocab.code("symptom", "dyspnea") == "dyspnea"

    # nothing told is asked again: no later doctor question asks whether the patient has what they said
    told = [("symptom", v) for v in ("coughing", "dyspnea", "colored/excess sputum", "hemoptysis", "fever")]
    told.append(("habit", "smoking"))
    doctor = st.doctor_turns()
    for turn in doctor[1:]:
        for act in turn.actions:
            for base, items in act.items():
                if base == "action":
                    continue
                for it in items:
                    existence = not it.get("checks")
                    assert not (existence and any(vocab.same(base, it["value"], v) for b, v in told if b == base)), \
                        f"asked again: {turn.text}"
    # the questionnaire starts from the chief complaint: its first question is about the cough
    assert "cough" in doctor[1].text.lower()
    assert answered(st.patient_state, Question("symptom", "coughing", "onset"), vocab)


@pytest.mark.vllm
def test_scripted_interview_on_the_ensemble_through_a_real_vllm_server(tmp_path, vllm_server, tiny_model_dir):
    """configs/ensemble.yaml's layout against a real vLLM CPU server (tiny random model with the `nlu` LoRA):
    whatever the random model writes passes grounding before it can merge, so the state is the clinical one
    plus only grounded additions, and the red flag still fires."""
    cfg = load_config(REPO / "configs" / "ensemble.yaml")
    cfg["backends"]["local"] = {"kind": "vllm-server", "url": vllm_server, "tokenizer": str(tiny_model_dir)}
    cfg["nlu"].update({"adapter": "nlu", "max_tokens": 48})
    cfg["session"]["dir"] = str(tmp_path)
    with SessionStore(cfg) as store:
        session = store.start()
        for line in SCRIPT:
            session.send(line)
        st = session.state()
    assert_cmas_valid(st)
    vocab = default_vocabulary()
    for name, items in st.patient_state.items():
        base = cmas.split_slot_name(name)[1]
        for it in items:
            if cmas.SLOTS[base].medical:  # every medical value in the state resolves in the vocabulary
                assert vocab.known(base, it["value"]) or vocab.code(base, it["value"]) is not None, it
    item(st.patient_state, "positive_symptom", "hemoptysis")
    assert item(st.patient_state, "positive_habit", "smoking")["frequency"] == "a pack a day"
    assert [f["id"] for f in st.red_flags] == ["hemoptysis"]
    patient = [t for t in st.turns if t.speaker == "patient"]
    assert all(t.meta.get("nlu") == "ensemble" for t in patient)  # the model was asked every turn
