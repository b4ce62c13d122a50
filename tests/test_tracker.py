import json
import subprocess
import sys

from agent.core.data import load_dialogues
from agent.core.tracker import replay, update_state


def test_status_change_moves_item_and_keeps_attributes():
    state = {"positive_symptom": [{"value": "fever", "onset": "two days ago"}]}
    new = update_state(state, [{"intent": "inform", "slots": {"negative_symptom": [{"value": "fever"}]}}])
    assert new == {"negative_symptom": [{"value": "fever", "onset": "two days ago"}]}
    assert state == {"positive_symptom": [{"value": "fever", "onset": "two days ago"}]}  # input untouched


def test_scalar_overwrites_and_lists_replace_or_union():
    state = {"positive_symptom": [{"value": "pain", "onset": "a week ago", "location": ["chest", "back"]}]}
    frame = [
        {
            "intent": "inform",
            "slots": {"positive_symptom": [{"value": "pain", "onset": "two weeks ago", "location": ["back"]}]},
        }
    ]
    assert update_state(state, frame) == {
        "positive_symptom": [{"value": "pain", "onset": "two weeks ago", "location": ["back"]}]
    }
    assert update_state(state, frame, "union")["positive_symptom"][0]["location"] == ["chest", "back"]


def test_record_slots_update_single_record():
    state = {"residence": [{"value": "house", "status": "living"}]}
    new = update_state(
        state,
        [{"intent": "inform", "slots": {"residence": [{"household_size": "3"}], "basic_information": [{"age": "60"}]}}],
    )
    assert new == {
        "residence": [{"value": "house", "status": "living", "household_size": "3"}],
        "basic_information": [{"age": "60"}],
    }


def test_chit_chat_leaves_state():
    state = {"negative_habit": [{"value": "smoking"}]}
    assert update_state(state, [{"intent": "chit-chat"}]) == state


def test_replay_gold_meets_acceptance():
    result = replay(load_dialogues())
    assert result["turns"] == 104
    assert result["exact_match"] >= 0.97
    union = replay(load_dialogues(), "union")
    assert all(m["reason"] for m in union["mismatches"])  # every mismatch explained


def test_track_cli():
    out = subprocess.run(
        [sys.executable, "-m", "agent.cli", "track", "--split", "all"], capture_output=True, text=True, check=True
    )
    res = json.loads(out.stdout)
    assert res["turns"] == 104 and res["exact_match"] == 1.0 and res["mismatches"] == []


def test_the_same_symptom_at_other_places_is_a_complaint_of_its_own():
    """A pain placed apart from every pain already placed keeps its own onset and character beside the first; a
    detail said of one place goes to that place's item; an unplaced detail to the first, as before."""
    state = update_state({}, [{"intent": "inform", "slots": {"positive_symptom": [
        {"value": "pain", "location": ["right side"], "onset": "four hours ago",
         "positive_characteristics": ["colicky"]}]}}])
    state = update_state(state, [{"intent": "inform", "slots": {"positive_symptom": [
        {"value": "pain", "location": ["back", "left side"], "onset": "a week ago"}]}}])
    assert [(it["location"], it["onset"]) for it in state["positive_symptom"]] == [
        (["right side"], "four hours ago"), (["back", "left side"], "a week ago")]
    state = update_state(state, [{"intent": "inform", "slots": {"positive_symptom": [
        {"value": "pain", "location": ["left side"], "severity": "4"}]}}])
    assert [it.get("severity") for it in state["positive_symptom"]] == [None, "4"]
    state = update_state(state, [{"intent": "inform", "slots": {"positive_symptom": [{"value": "pain",
                                                                                     "severity": "8"}]}}])
    assert [it.get("severity") for it in state["positive_symptom"]] == ["8", "4"]
    # a new place said without a time is where the pain goes ("it goes down my arm"): the same complaint
    goes = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "pain", "location": ["arm"]}]}}]
    spread = update_state({"positive_symptom": [{"value": "pain", "location": ["chest"], "onset": "an hour ago"}]},
                          goes)
    assert len(spread["positive_symptom"]) == 1
    # the two flanks: a part in common, the sides apart
    state = update_state({}, [{"intent": "inform", "slots": {"positive_symptom": [
        {"value": "pain", "location": ["right side", "back"], "onset": "four hours ago"}]}}])
    state = update_state(state, [{"intent": "inform", "slots": {"positive_symptom": [
        {"value": "pain", "location": ["back", "left side"], "onset": "a week ago"}]}}])
    assert [it["onset"] for it in state["positive_symptom"]] == ["four hours ago", "a week ago"]
