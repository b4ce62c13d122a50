"""Unrolling NLU frames and POL actions into MediTOD's scoring tuples (hand-written expectations)."""

from eval.metrics.tuples import nlu_tuples, normalize_value, pol_tuples

COUGH_FRAME = {
    "intent": "inform",
    "slots": {
        "positive_symptom": [
            {"value": "coughing", "onset": "two months ago", "location": ["chest"],
             "positive_characteristics": ["wet cough", "productive"]}
        ]
    },
}


def test_nlu_medical_slot_keeps_status_prefix_and_splits_canonical():
    t = nlu_tuples([COUGH_FRAME])
    assert t.canonical == {
        ("inform", "positive_symptom", "coughing"),
        ("inform", "positive_symptom", "coughing", "location", "chest"),
    }
    assert t.non_canonical == {
        ("inform", "positive_symptom", "coughing", "onset", "two months ago"),
        ("inform", "positive_symptom", "coughing", "positive_characteristics", "wet cough"),
        ("inform", "positive_symptom", "coughing", "positive_characteristics", "productive"),
    }


def test_nlu_bare_intents_records_and_medication():
    frames = [
        {"intent": "chit-chat"},
        {"intent": "inform", "slots": {
            "occupation": [{"value": "desk job", "status": "true"}],
            "travel": [{"status": "not_traveled"}],
            "basic_information": [{"age": "60"}],
            "positive_medication": [{"value": "cough syrup", "respone_to": "coughing", "impact": "no", "start": "x"}],
        }},
    ]
    t = nlu_tuples(frames)
    assert t.canonical == {
        ("chit-chat",),
        ("inform", "occupation", "status", "true"),
        ("inform", "travel", "status", "not_traveled"),
        ("inform", "basic_information", "age", "60"),
        ("inform", "positive_medication", "cough syrup"),
        ("inform", "positive_medication", "cough syrup", "respone_to", "coughing"),
        ("inform", "positive_medication", "cough syrup", "impact", "no"),
    }
    assert t.non_canonical == {
        ("inform", "occupation", "value", "desk job"),
        ("inform", "positive_medication", "cough syrup", "start", "x"),
    }


def test_values_are_compared_lowercased_with_whitespace_collapsed():
    assert normalize_value("  Two   Months\tago ") == "two months ago"
    shouty = {"intent": "inform", "slots": {"positive_symptom": [
        {"value": "Coughing", "onset": "Two  months ago", "location": ["CHEST"],
         "positive_characteristics": ["wet cough", " productive"]}]}}
    assert nlu_tuples([shouty]) == nlu_tuples([COUGH_FRAME])


def test_pol_medical_checks_and_disease():
    actions = [
        {"action": "inquire", "symptom": [
            {"value": "coughing", "checks": [{"type": "characteristics", "values": ["dry or wet"]},
                                             {"type": "location", "values": ["chest"]}]}]},
        {"action": "inquire", "symptom": [{"value": "colored/excess sputum"}]},
        {"action": "diagnosis", "disease": [{"value": "covid-19 virus disease"}]},
    ]
    t = pol_tuples(actions)
    assert t.canonical == {
        ("inquire", "symptom", "coughing"),
        ("inquire", "symptom", "coughing", "characteristics"),
        ("inquire", "symptom", "coughing", "location"),
        ("inquire", "symptom", "coughing", "location", "chest"),
        ("inquire", "symptom", "colored/excess sputum"),
        ("diagnosis", "disease", "covid-19 virus disease"),
    }
    assert t.non_canonical == {("inquire", "symptom", "coughing", "characteristics", "dry or wet")}


def test_pol_record_slots_and_bare_actions():
    actions = [
        {"action": "inquire", "residence": [{"value": "other", "checks": [{"type": "value"}]}]},
        {"action": "inquire", "travel": [{"value": "other", "checks": [{"type": "status", "values": ["traveled"]},
                                                                       {"type": "destination", "values": ["india"]}]}]},
        {"action": "inquire", "basic_information": [{"value": "none"}]},
        {"action": "chit-chat"},
    ]
    t = pol_tuples(actions)
    assert t.canonical == {
        ("inquire", "residence", "value"),
        ("inquire", "travel", "status"),
        ("inquire", "travel", "status", "traveled"),
        ("inquire", "travel", "destination"),
        ("chit-chat",),
    }
    assert t.non_canonical == {
        ("inquire", "residence", "other"),
        ("inquire", "travel", "other"),
        ("inquire", "travel", "destination", "india"),
        ("inquire", "basic_information", "none"),
    }
