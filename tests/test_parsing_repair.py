"""Output handling: strict parse, the one repair pass, lenient parse, counted format errors."""

from __future__ import annotations

import pytest

from models.parsing import ParseStats, close_truncated, extract_block, parse_output

GOLD_NLU = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "coughing", "onset": "two months ago"}]}}]
GOLD_POL = [{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"}]}]}]


def test_strict_valid_needs_no_repair():
    r = parse_output("nlu", '[{"intent": "inform", "slots": {"positive_symptom": '
                            '[{"value": "coughing", "onset": "two months ago"}]}}]')
    assert (r.value, r.valid, r.repaired, r.format_error, r.fixes) == (GOLD_NLU, True, False, None, [])


def test_fenced_json_with_prose_is_extracted():
    text = ('Sure! Here is the output:\n```json\n[{"action": "inquire", "symptom": [{"value": "coughing", '
            '"checks": [{"type": "onset"}]}]}]\n```\nLet me know.')
    r = parse_output("pol", text)
    assert r.value == GOLD_POL
    assert r.repaired and not r.valid
    assert r.fixes == ["extracted_block"]


def test_trailing_commas_removed():
    text = '[{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"},],},],},]'
    r = parse_output("pol", text)
    assert r.value == GOLD_POL
    assert "trailing_comma" in r.fixes


def test_single_quotes_become_json_strings_and_keep_apostrophes_and_double_quotes():
    text = ("""[{'intent': 'inform', 'slots': {'positive_symptom': [{'value': 'coughing', """
            """'onset': 'patient\\'s "two months"'}]}}]""")
    r = parse_output("nlu", text)
    assert r.value == [{"intent": "inform", "slots": {"positive_symptom": [
        {"value": "coughing", "onset": "patient's \"two months\""}]}}]
    assert "single_quotes" in r.fixes


def test_truncated_output_drops_the_half_written_value_and_closes_brackets():
    text = ('[{"intent": "inform", "slots": {"positive_symptom": [{"value": "coughing", "onset": "two months ago"}, '
            '{"value": "dysp')
    r = parse_output("nlu", text)
    # the second item was cut mid-string: it is dropped, not kept as "dysp"
    assert r.value == GOLD_NLU
    assert r.repaired and "closed_truncation" in r.fixes


def test_truncated_after_a_key_cuts_back_to_the_last_complete_pair():
    assert close_truncated('{"value": "coughing", "onset": ') == {"value": "coughing"}
    assert close_truncated('[{"a": [1, 2], "b": [3, 4') == [{"a": [1, 2], "b": [3]}]
    with pytest.raises(ValueError):
        close_truncated('[{"val')


def test_lone_object_is_wrapped_in_a_list():
    r = parse_output("pol", '{"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"}]}]}')
    assert r.value == GOLD_POL and r.fixes == ["wrapped_object"]


def test_status_as_attribute_converted_to_prefix_form():
    text = (
        '[{"intent": "inform", "slots": {"symptom": [{"value": "coughing", "status": "positive", '
        '"onset": "two months ago"}, {"value": "fever", "status": "negative"}], "travel": [{"status": "traveled"}]}}]'
    )
    expected = [{"intent": "inform", "slots": {
        "travel": [{"status": "traveled"}],
        "positive_symptom": [{"value": "coughing", "onset": "two months ago"}],
        "negative_symptom": [{"value": "fever"}]}}]
    repaired = parse_output("nlu", text)
    assert repaired.value == expected and repaired.repaired and repaired.fixes == ["status_attribute"]
    # when the prompt asked for attribute form (icl), the conversion is the normal path: valid, not repaired
    asked = parse_output("nlu", text, status_attribute=True)
    assert asked.value == expected and asked.valid and not asked.repaired


def test_unknown_attribute_kept_in_extra_by_lenient_parse():
    text = '[{"intent": "inform", "slots": {"positive_symptom": [{"value": "coughing", "colour": "green"}]}}]'
    r = parse_output("nlu", text)
    assert r.lenient and r.format_error is None
    assert r.value == [{"intent": "inform", "slots": {"positive_symptom": [{"value": "coughing"}]}}]
    assert r.extra == {"0.slots.positive_symptom.0.colour": "green"}


@pytest.mark.parametrize("text", ["I am not sure what the patient said.", "", '[{"intent": "complain"}]'])
def test_garbage_is_a_counted_format_error(text):
    stats = ParseStats()
    r = stats.add(parse_output("nlu", text))
    assert r.format_error and r.value == []
    assert stats.format_errors == 1 and stats.total == 1


def test_stats_report_valid_rate_before_and_after_repair():
    stats = ParseStats()
    stats.add(parse_output("pol", '[{"action": "inquire"}]'))  # valid
    stats.add(parse_output("pol", '```\n[{"action": "other"},]\n```'))  # repaired
    stats.add(parse_output("pol", '[{"action": "inquire", "smell": [{"value": "x"}]}]'))  # lenient
    stats.add(parse_output("pol", "no idea"))  # format error
    d = stats.to_dict()
    assert (d["total"], d["schema_valid_before_repair"], d["schema_valid_after_repair"]) == (4, 1, 2)
    assert (d["lenient"], d["format_errors"]) == (1, 1)
    assert (d["valid_rate_before_repair"], d["valid_rate_after_repair"]) == (0.25, 0.5)
    assert d["fixes"] == {"extracted_block": 1, "trailing_comma": 1}
    assert "1/4 before repair (25.0%), 2/4 after (50.0%)" in stats.summary()


def test_nlg_text_is_stripped_and_empty_is_an_error():
    assert parse_output("nlg", "  Any fever?\n").value == "Any fever?"
    assert parse_output("nlg", "   ").format_error == "empty utterance"


def test_extract_block_stops_at_the_matching_bracket():
    assert extract_block('prefix [{"a": "]"}] suffix [1]') == '[{"a": "]"}]'
    assert extract_block("no json here") is None
    # a bracketed prose header is skipped for the bracket that opens JSON
    assert extract_block('[output]\n[{"action": "other"}]') == '[{"action": "other"}]'
    assert extract_block("[dialogue history]\ndoctor: hi") == "[dialogue history]"
