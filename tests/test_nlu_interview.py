"""The issue's scripted interview, in a patient's own words, through the real compiled graph and a real SQLite
session store on configs/default.yaml (clinical NLU): the state holds what was said, the red flag fires, and
nothing the patient told is asked again."""

from __future__ import annotations

import yaml
from graph_fixtures import REPO, assert_cmas_valid

from agent.ontology import default_vocabulary
from agent.sessions import SessionStore
from policies.questions import Question, answered

SCRIPT = [
    "I've had a bad cough for two weeks and I get short of breath when I climb the stairs.",
    "I cough up yellow phlegm, and once there was blood in it.",
    "No fever. It's worse at night.",
    "I smoke a pack a day.",
    "It's getting worse.",
]


def run_script(tmp_path, config: str = "configs/default.yaml", lines=SCRIPT):
    cfg = yaml.safe_load((REPO / config).read_text())
    cfg["session"]["dir"] = str(tmp_path)
    with SessionStore(cfg) as store:
        session = store.start()
        for line in lines:
            session.send(line)
        return session.state()


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
