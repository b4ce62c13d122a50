import json

import pytest

from agent.core import cmas, cmas_lenient
from agent.core.data import DEFAULT_DATA_DIR

DIALOGS = json.loads((DEFAULT_DATA_DIR / "dialogs.json").read_text())
UTTERANCES = [u for d in DIALOGS.values() for u in d["utterances"]]


@pytest.mark.parametrize("utt", UTTERANCES, ids=lambda u: f"{u['speaker']}-{u['uttr_id']}")
def test_every_shared_utterance_parses_strictly_and_round_trips(utt):
    if "nlu" in utt:
        assert json.loads(json.dumps(cmas.parse_nlu(utt["nlu"]))) == utt["nlu"]
        assert cmas.parse_state(utt["dialog_state"]) == utt["dialog_state"]
    if "actions" in utt:
        assert cmas.parse_actions(utt["actions"]) == utt["actions"]


@pytest.mark.parametrize("utt", [u for u in UTTERANCES if "nlu" in u], ids=lambda u: str(u["uttr_id"]))
def test_status_forms_convert_losslessly(utt):
    for frame in utt["nlu"]:
        slots = frame.get("slots", {})
        attr = cmas.to_status_attribute(slots)
        assert all(not n.startswith(("positive_", "negative_", "unknown_", "avail_", "unavail_")) for n in attr)
        assert cmas.from_status_attribute(attr) == slots
    assert cmas.from_status_attribute(cmas.to_status_attribute(utt["dialog_state"])) == utt["dialog_state"]


def test_status_attribute_form_example():
    slots = {"negative_symptom": [{"value": "fever"}], "unavail_medical_test": [{"value": "chest x-ray"}]}
    assert cmas.to_status_attribute(slots) == {
        "symptom": [{"value": "fever", "status": "negative"}],
        "medical_test": [{"value": "chest x-ray", "status": "unavail"}],
    }


def test_strict_rejects_unknown_attribute_with_path():
    bad = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "coughing", "colour": "red"}]}}]
    with pytest.raises(cmas.CMASError) as exc:
        cmas.parse_nlu(bad)
    assert exc.value.path == "0.slots.positive_symptom.0.colour"


def test_strict_rejects_unknown_slot_and_bad_status():
    with pytest.raises(cmas.CMASError, match="0.slots.maybe_symptom"):
        cmas.parse_nlu([{"intent": "inform", "slots": {"maybe_symptom": [{"value": "x"}]}}])
    with pytest.raises(cmas.CMASError, match="status"):
        cmas.parse_state({"travel": [{"status": "went"}]})


def test_strict_rejects_unknown_check_type():
    with pytest.raises(cmas.CMASError, match="0.symptom.0.checks.0.type"):
        cmas.parse_actions([{"action": "inquire", "symptom": [{"value": "x", "checks": [{"type": "mood"}]}]}])


def test_lenient_keeps_known_part_and_counts_extras():
    raw = [
        {
            "intent": "inform",
            "slots": {"positive_symptom": [{"value": "fever", "colour": "red"}], "weather": [{"value": "rain"}]},
        },
        {"intent": "shout"},
    ]
    res = cmas_lenient.parse_nlu_lenient(raw)
    assert res.value == [{"intent": "inform", "slots": {"positive_symptom": [{"value": "fever"}]}}]
    assert res.extra == {
        "0.slots.positive_symptom.0.colour": "red",
        "0.slots.weather": [{"value": "rain"}],
        "1": {"intent": "shout"},
    }
    assert res.n_extra == 3


def test_lenient_actions():
    raw = [
        {
            "action": "inquire",
            "symptom": [{"value": "fever", "checks": [{"type": "onset"}, {"type": "mood"}]}],
            "pets": [],
        }
    ]
    res = cmas_lenient.parse_actions_lenient(raw)
    assert res.value == [{"action": "inquire", "symptom": [{"value": "fever", "checks": [{"type": "onset"}]}]}]
    assert set(res.extra) == {"0.symptom.0.checks.1", "0.pets"}


def test_json_schemas_bound_and_without_null():
    for schema in (cmas.nlu_json_schema(), cmas.action_json_schema()):
        text = json.dumps(schema)
        assert '"null"' not in text
        assert '"maxItems"' in text and '"maxLength"' in text


def test_slot_table_matches_paper_lists():
    sym = cmas.SLOTS["symptom"]
    for attr in (
        "onset",
        "initiation",
        "duration",
        "severity",
        "progression",
        "frequency",
        "volume",
        "color",
        "itching",
        "lesion_size",
        "lesions_peel_off",
        "rash_swollen",
        "not_alleviating_aggravating_factor",
        "unknown_factor",
    ):
        assert attr in sym.attributes
    assert "respone_to" in cmas.SLOTS["medication"].attributes
    assert cmas.SLOTS["medical_test"].statuses == ("avail", "unavail", "unknown")
    assert cmas.split_slot_name("unavail_medical_test") == ("unavail", "medical_test")
    assert cmas.split_slot_name("residence") == (None, "residence")


def test_actions_are_validated_once_per_turn_and_again_when_changed():
    from agent.core import cmas as c

    raw = [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"}]}]}]
    once = c.parse_actions(raw)
    assert once == raw and c.parse_actions(once) is once  # the policy, graph, review and NLG reuse the check
    assert cmas_lenient.parse_actions_lenient(once).value is once
    once[0]["symptom"][0]["checks"][0]["type"] = "flavour"  # changed after validation: validated again
    with pytest.raises(c.CMASError):
        c.parse_actions(once)
    frames = c.parse_nlu([{"intent": "inform", "slots": {"positive_symptom": [{"value": "fever"}]}}])
    assert c.parse_nlu(frames) is frames and c.parse_actions(c.parse_actions(raw)) == raw
