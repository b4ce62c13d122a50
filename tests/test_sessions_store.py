"""Session API on a real SQLite store: lifecycle, idempotent sends, clinician review, export round trip, CLI.

The agent is the no-model one (gold NLU from the shared MediTOD annotations, questionnaire
policy, template NLG), so every expectation below is exact and each test takes seconds.
"""

from __future__ import annotations

import json

import pytest
from graph_fixtures import assert_cmas_valid, gold_config, patient_lines, run_medhx, transcript, write_config

from agent.app.export import export_session
from agent.app.graph import build_agent
from agent.app.sessions import SessionError, SessionNotFound, SessionStore
from agent.core.data import load_dialogs_file, load_dialogues, task_examples
from eval.metrics.score import gold_predictions, score

LINES = patient_lines("115", 6)


@pytest.fixture
def store(tmp_path):
    with SessionStore(gold_config(tmp_path / "store")) as s:
        yield s


def test_start_send_resume_list_delete(tmp_path, store):
    s = store.start("abc")
    greeting = s.state().turns[0]
    assert greeting.speaker == "doctor" and greeting.actions[0] == {"action": "nod_prompt_salutations"}
    assert "assistant" in greeting.text  # the agent introduces itself as an assistant, not a clinician
    assert s.waiting_for() == "patient"

    d1 = s.send(LINES[0])
    st = s.state()
    assert [t.speaker for t in st.turns] == ["doctor", "patient", "doctor"]
    assert st.turns[2] == d1
    # gold NLU of utterance 1 of dialogue 115 is cough + dyspnea, onset "few months ago"
    assert [i["value"] for i in st.patient_state["positive_symptom"]] == ["coughing", "dyspnea"]
    assert set(d1.latency) == {"nlu", "track", "safety", "policy", "nlg", "review"}
    assert_cmas_valid(st)

    with pytest.raises(SessionError):
        store.start("abc")
    with pytest.raises(SessionNotFound):
        store.resume("nope")

    # a second store on the same file (another process, another replica) sees the same session
    with SessionStore(gold_config(tmp_path / "store")) as other:
        again = other.resume("abc")
        assert transcript(again.state()) == transcript(st)
        d2 = again.send(LINES[1])
        assert d2.index == 4
        infos = other.list_sessions()
        assert [(i.session_id, i.turns, i.waiting_for, i.status) for i in infos] == [("abc", 5, "patient", "active")]

    store.delete("abc")
    assert store.list_sessions() == []
    with pytest.raises(SessionNotFound):
        store.delete("abc")


def test_send_with_same_key_is_answered_once(store):
    s = store.start()
    first = s.send(LINES[0], key="p1")
    n = len(s.state().turns)
    assert s.send(LINES[0], key="p1") == first  # a retry: same doctor turn, nothing added
    assert len(s.state().turns) == n
    with pytest.raises(ValueError, match="already used"):
        s.send("something else", key="p1")
    second = s.send(LINES[1], key="p2")
    assert second.index == first.index + 2


def test_empty_utterance_is_rejected(store):
    s = store.start()
    with pytest.raises(ValueError, match="empty"):
        s.send("   ")
    assert len(s.state().turns) == 1


def test_turn_budget_closes_the_interview(tmp_path):
    with SessionStore(gold_config(tmp_path / "b", max_turns=3)) as store:
        s = store.start()
        s.send(LINES[0])
        last = s.send(LINES[1])
        st = s.state()
        assert len(st.doctor_turns()) == 3
        assert st.status == "budget_reached" and last.meta["closing"] == "turn budget"
        assert "clinician" in last.text
        assert s.waiting_for() is None
        with pytest.raises(SessionError, match="ended"):
            s.send(LINES[2])


def test_interview_runs_to_the_policys_close(store):
    s = store.start()
    for line in patient_lines("115"):
        if s.waiting_for() is None:
            break
        s.send(line)
    st = s.state()
    assert st.status == "closed"
    assert st.turns[-1].meta["closing"] == "policy closed the interview"
    assert_cmas_valid(st)


# --------------------------------------------------------------------------- clinician review


def test_review_approve_edit_replace_and_state_patch_are_recorded(tmp_path):
    with SessionStore(gold_config(tmp_path / "r", review=True)) as store:
        s = store.start()
        planned = s.pending_review()
        assert planned["kind"] == "review" and planned["actions"][0] == {"action": "nod_prompt_salutations"}
        assert s.state().turns == []  # nothing is sent before review
        greeting = s.review({"approve": True}, by="dr_a")
        assert greeting.text == planned["text"] and greeting.meta["reviewed"] is True

        assert s.send(LINES[0]) is None  # the answer waits for review
        planned = s.pending_review()
        new_actions = [{"action": "inquire", "symptom": [{"value": "dyspnea", "checks": [{"type": "severity"}]}]}]
        patch = {"positive_symptom": [{"value": "coughing", "onset": "two months ago"}, {"value": "dyspnea"}]}
        sent = s.review({"replace_actions": new_actions, "state_patch": patch}, by="dr_b")
        assert sent.actions == new_actions
        assert sent.text != planned["text"] and "breath" in sent.text.lower()  # re-verbalised by the template NLG
        assert s.state().patient_state == patch

        s.send(LINES[1])
        sent = s.review({"edit": "  How bad is the breathlessness?  "}, by="dr_c")
        assert sent.text == "How bad is the breathlessness?"

        edits = s.state().review_edits
        assert [(e.turn, e.kind, e.by) for e in edits] == [
            (0, "approve", "dr_a"),
            (2, "state_patch", "dr_b"),
            (2, "replace_actions", "dr_b"),
            (4, "edit", "dr_c"),
        ]
        assert all(e.at for e in edits)
        assert edits[1].after == patch and edits[2].after == new_actions


def test_invalid_review_decision_changes_nothing(tmp_path):
    with SessionStore(gold_config(tmp_path / "r", review=True)) as store:
        s = store.start()
        before = s.state()
        with pytest.raises(ValueError, match="colour"):
            s.review({"state_patch": {"positive_symptom": [{"value": "coughing", "colour": "red"}]}})
        with pytest.raises(ValueError, match="unknown check type"):
            s.review(
                {"replace_actions": [{"action": "inquire", "symptom": [{"value": "x", "checks": [{"type": "zz"}]}]}]}
            )
        with pytest.raises(ValueError, match="needs one of"):
            s.review({})
        with pytest.raises(SessionError, match="awaits clinician review"):
            s.send(LINES[0])
        assert s.state() == before and s.pending_review() is not None


# --------------------------------------------------------------------------- export


def test_export_round_trip_scores_one(tmp_path, store):
    s = store.start("exp1")
    for line in LINES:
        s.send(line)
    st = s.state()
    data = tmp_path / "exported"
    data.mkdir()
    (data / "dialogs.json").write_text(export_session(st, "meditod"))

    d = load_dialogs_file(data / "dialogs.json")["exp1"]  # strict CMAS parse
    assert [(u.speaker, u.text) for u in d.utterances] == transcript(st)
    assert [u.nlu for u in d.utterances if u.speaker == "patient"] == [t.nlu for t in st.patient_turns()]
    assert [u.dialog_state for u in d.utterances if u.speaker == "patient"] == [t.state for t in st.patient_turns()]
    assert [u.actions for u in d.utterances if u.speaker == "doctor"] == [t.actions for t in st.doctor_turns()]

    dialogues = load_dialogues(data, "all")
    for task in ("nlu", "pol"):
        examples = task_examples(task, dialogues)
        assert len(examples) == len(LINES)  # 6 patient turns (NLU); 7 doctor turns, the first unscored (POL)
        report = score(task, examples, gold_predictions(examples))
        assert report["overall"]["f1"] == 1.0, (task, report)
        assert report["joint_accuracy"] == 1.0, (task, report)

    note = export_session(st, "note")
    assert note.startswith("# History note — session exp1") and "**coughing**" in note


# --------------------------------------------------------------------------- CLI


def test_sessions_cli_list_show_export_delete(tmp_path):
    cfg = gold_config(tmp_path / "cli")
    with SessionStore(cfg) as store:
        store.start("s1").send(LINES[0])
    path = write_config(tmp_path / "agent.yaml", cfg)

    r = run_medhx("sessions", "--config", str(path), "list")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["session_id"], x["turns"], x["waiting_for"]) for x in rows] == [("s1", 3, "patient")]

    r = run_medhx("sessions", "--config", str(path), "show", "s1")
    assert r.returncode == 0 and f"[1] patient: {LINES[0]}" in r.stdout

    r = run_medhx("sessions", "--config", str(path), "export", "s1", "--out", str(tmp_path / "s1.json"))
    assert r.returncode == 0, r.stderr
    assert list(load_dialogs_file(tmp_path / "s1.json")) == ["s1"]
    r = run_medhx("sessions", "--config", str(path), "export", "s1", "--format", "note")
    assert "## History of presenting complaint" in r.stdout

    r = run_medhx("sessions", "--config", str(path), "delete", "s1")
    assert r.returncode == 0
    r = run_medhx("sessions", "--config", str(path), "show", "s1")
    assert r.returncode == 1 and "no session 's1'" in r.stderr


def test_agent_config_is_checked(tmp_path):
    with pytest.raises(ValueError, match="nlu kind 'magic'"):
        build_agent({**gold_config(tmp_path), "nlu": {"kind": "magic"}})
    with pytest.raises(ValueError, match="max_turns"):
        build_agent(gold_config(tmp_path, max_turns=1))
