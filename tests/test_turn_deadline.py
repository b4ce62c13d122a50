"""A turn never stalls: a module that does not answer, or whose server is gone, falls back within the turn's deadline.

The real graph, in process, on the default config (clinical NLU, questionnaire policy, template NLG, SQLite) with
``session.turn_deadline_s`` at 2 s. Each module is wrapped by dotted path in the test-only fault modules
(``tests/fault_modules.py``): a :class:`fault_modules.Stall` that never answers (until released) and, around it,
a :class:`fault_modules.Fail` that raises ``BackendError`` as a dead vLLM server does, each at one patient turn:

    turn 1 policy stalls, 2 NLG stalls, 3 policy's server fails, 4 NLG's server fails,
    turn 5 NLU stalls, 6 NLU's server fails, 7 nothing fails.

The fallbacks (questionnaire policy, template NLG) are the default config's own modules, so on turns 1-4 the doctor
must say exactly what an interview without faults says; an unavailable NLU adds nothing to the patient state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from graph_fixtures import REPO, assert_cmas_valid, gold_config, patient_lines, stalled_config, transcript

from agent.app.graph_state import InterviewState, Turn
from agent.app.sessions import SessionStore
from agent.core import safety
from agent.core.protocol import TurnContext
from policies.agent_config import load_config

DEADLINE = 2.0
MARGIN = 1.5  # tracking, the red-flag check, checkpoints and the fallback module, on a busy 2-core machine

LINES = [
    "I've had a cough for about two weeks.",
    "It's worse at night.",
    "Yes, I bring up yellow phlegm.",
    "I get short of breath when I climb the stairs.",
    "I have had a fever too.",
    "My chest hurts when I cough.",
    "I smoke about a pack a day.",
]
STALLS = {"policy": 1, "nlg": 2, "nlu": 5}  # patient turn at which the module never answers
FAILS = {"policy": 3, "nlg": 4, "nlu": 6}  # patient turn at which its backend raises BackendError
NORMAL = 7


def _default_config(store_dir: Path) -> dict:
    cfg = load_config(REPO / "configs" / "default.yaml")
    cfg["session"] = {**cfg["session"], "dir": str(store_dir), "turn_deadline_s": DEADLINE}
    return cfg


def _faulty_config(store_dir: Path) -> dict:
    cfg = _default_config(store_dir)
    for role in ("nlu", "policy", "nlg"):
        stalled = stalled_config(cfg, role, STALLS[role])[role]  # kind: fault_modules:Stall around the real module
        failing = {**stalled, "kind": "fault_modules:Fail", "inner": stalled, "turn": FAILS[role]}
        cfg[role] = failing
    return cfg


def _warm(store: SessionStore) -> None:
    """The clinical NLU and the red-flag phrase finder load spaCy on first use (seconds): load them before the
    interview, so the 2 s deadline measures the faults alone."""
    agent = store.agent()
    nlu = agent.nlu
    while hasattr(nlu, "inner"):  # the real NLU inside the fault wrappers
        nlu = nlu.inner
    nlu.understand(TurnContext(turns=[("doctor", "What brings you in today?"), ("patient", "I have a cough.")]))
    safety.check_text_flags("I have a cough.", agent.red_flag_rules)


@dataclass
class Run:
    answers: list[Turn]
    seconds: list[float]
    before: list[dict]  # the patient state before each patient turn
    state: InterviewState  # right after the interview
    state_after_release: InterviewState  # after the abandoned calls returned their late answers
    late: dict[str, list[int]]
    resumed_answer: Turn | None  # one more turn in a new store on the plain default config


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> list[tuple[str, str]]:
    """The same script on the default config without faults."""
    with SessionStore(_default_config(tmp_path_factory.mktemp("reference"))) as store:
        s = store.start("reference")
        for line in LINES:
            s.send(line)
        return transcript(s.state())


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Run:
    store_dir = tmp_path_factory.mktemp("faulty")
    answers, seconds, before = [], [], []
    with SessionStore(_faulty_config(store_dir)) as store:
        _warm(store)
        agent = store.agent()
        stalls = {role: getattr(agent, role).inner for role in ("nlu", "policy", "nlg")}
        s = store.start("faulty")
        try:
            for line in LINES:
                before.append(s.state().patient_state)
                t0 = time.perf_counter()
                answers.append(s.send(line))
                seconds.append(time.perf_counter() - t0)
            state = s.state()
        finally:
            for stall in stalls.values():
                stall.release()
        deadline = time.monotonic() + 30
        while any(not stall.finished for stall in stalls.values()) and time.monotonic() < deadline:
            time.sleep(0.05)
        late = {role: list(stall.finished) for role, stall in stalls.items()}
        state_after_release = s.state()
    with SessionStore(_default_config(store_dir)) as store:  # the process is gone; a new one resumes the session
        resumed_answer = store.resume("faulty").send("I don't drink alcohol.")
    print("seconds per patient turn:", [round(x, 2) for x in seconds])  # pytest -s shows them
    return Run(answers, seconds, before, state, state_after_release, late, resumed_answer)


@pytest.mark.parametrize("role", ["nlu", "policy", "nlg"])
def test_a_stalled_module_falls_back_within_the_deadline(run, role):
    turn = STALLS[role]
    answer = run.answers[turn - 1]
    assert run.seconds[turn - 1] < DEADLINE + MARGIN, f"the turn took {run.seconds[turn - 1]:.2f} s"
    assert answer is not None and answer.text.strip()
    fallback = answer.meta["fallback"]
    assert fallback[role].startswith("deadline:"), fallback
    # a stalled module spends the turn's time: the modules after it have none left and their fallbacks answer too
    order = ["nlu", "policy", "nlg"]
    assert set(fallback) == set(order[order.index(role):])
    assert all(fallback[later] == f"deadline: no time left for the {later} (turn deadline {DEADLINE:g} s)"
               for later in order[order.index(role) + 1:])


@pytest.mark.parametrize("role", ["nlu", "policy", "nlg"])
def test_a_failed_backend_falls_back_at_once(run, role):
    turn = FAILS[role]
    answer = run.answers[turn - 1]
    assert run.seconds[turn - 1] < DEADLINE, f"the turn took {run.seconds[turn - 1]:.2f} s"
    assert answer.meta["fallback"] == {role: f"BackendError: fault_modules.Fail: the {role} server is unreachable "
                                              "(injected)"}


def test_policy_and_nlg_fallbacks_say_what_the_interview_without_faults_says(run, reference):
    got = transcript(run.state)
    last = max(STALLS["policy"], STALLS["nlg"], FAILS["policy"], FAILS["nlg"])
    assert got[: 2 * last + 1] == reference[: 2 * last + 1]


@pytest.mark.parametrize("turn", [STALLS["nlu"], FAILS["nlu"]])
def test_an_unavailable_nlu_leaves_the_state_unchanged_and_says_why(run, turn):
    patient = run.state.turns[2 * turn - 1]
    assert patient.speaker == "patient" and patient.text == LINES[turn - 1]
    assert patient.nlu == [] and patient.state == run.before[turn - 1]
    assert patient.meta["nlu_unavailable"] == run.answers[turn - 1].meta["fallback"]["nlu"]


def test_the_next_turn_works_normally(run):
    answer = run.answers[NORMAL - 1]
    assert "fallback" not in answer.meta and run.seconds[NORMAL - 1] < DEADLINE
    patient = run.state.turns[2 * NORMAL - 1]
    assert any("habit" in name for f in patient.nlu for name in f.get("slots", {})), patient.nlu
    assert patient.state != run.before[NORMAL - 1]
    assert_cmas_valid(run.state)


def test_late_answers_are_discarded(run):
    # each stalled call did return once released, and nothing it returned reached the session
    assert run.late == {role: [turn] for role, turn in STALLS.items()}
    assert run.state_after_release == run.state


def test_the_session_stays_resumable(run):
    assert run.resumed_answer is not None and "fallback" not in run.resumed_answer.meta


def test_a_clinicians_new_plan_is_spoken_by_the_template_when_the_nlg_fails(tmp_path):
    """Review: the clinician replaces the plan and the NLG, asked to say it, fails again (unwrapped, the review
    itself would crash): the template says it and the turn records why."""
    cfg = gold_config(tmp_path, review=True)
    cfg["nlg"] = {"kind": "fault_modules:Fail", "role": "nlg", "inner": {"kind": "template"}, "turn": 1}
    with SessionStore(cfg) as store:
        s = store.start("review")
        s.review({"approve": True})
        assert s.send(patient_lines("115", 1)[0]) is None  # waits for review
        new_actions = [{"action": "inquire", "symptom": [{"value": "dyspnea", "checks": [{"type": "severity"}]}]}]
        sent = s.review({"replace_actions": new_actions})
    assert sent.actions == new_actions and "breath" in sent.text.lower()
    assert sent.meta["fallback"] == {"nlg": "BackendError: fault_modules.Fail: the nlg server is unreachable "
                                            "(injected)"}
