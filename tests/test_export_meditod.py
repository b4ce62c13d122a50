"""Export: MediTOD JSON round-trip through the data layer (strict), malformed input, the history note."""

from __future__ import annotations

import copy
import json

import pytest

from agent.data import Utterance, load_dialogs_file, load_dialogues
from agent.export import ExportError, Transcript, history_note, to_meditod, write_meditod
from agent.safety import check_red_flags
from agent.tracker import update_state


@pytest.fixture(scope="module")
def gold():
    return {d.dialog_id: d for d in load_dialogues()}


def transcript_of(dialogue) -> Transcript:
    """A dataset dialogue as an export transcript: its utterances are already the turn type."""
    return Transcript(dialogue.dialog_id, copy.deepcopy(dialogue.utterances))


def u(speaker, text, **annotations) -> Utterance:
    return Utterance(speaker, 0, text, **annotations)


def test_round_trip_through_the_strict_loader_equals_gold(gold, tmp_path):
    path = write_meditod([transcript_of(d) for d in gold.values()], tmp_path / "export" / "dialogs.json")
    loaded = load_dialogs_file(path, strict=True)
    assert set(loaded) == {"115", "317"}
    for did, d in gold.items():
        got = loaded[did].utterances
        assert len(got) == len(d.utterances)
        for g, u in zip(got, d.utterances, strict=True):
            assert (g.speaker, g.uttr_id, g.text, g.keywords) == (u.speaker, u.uttr_id, u.text, u.keywords)
            assert g.actions == u.actions
            assert g.nlu == u.nlu
            assert g.dialog_state == u.dialog_state
    # session bookkeeping is not part of the format
    raw = json.loads(path.read_text())
    assert set(raw["317"]["utterances"][1]) == {"speaker", "uttr_id", "text", "keywords", "dialog_state", "nlu"}
    assert set(raw["317"]["utterances"][0]) == {"speaker", "uttr_id", "text", "keywords", "actions"}


@pytest.mark.parametrize("task", ["nlu", "pol"])
def test_exported_annotations_score_perfectly_against_gold(gold, tmp_path, task):
    from agent.data import task_examples
    from eval.score import score

    loaded = load_dialogs_file(write_meditod([transcript_of(d) for d in gold.values()], tmp_path / "dialogs.json"))
    predictions = {(ex.dialog_id, ex.uttr_id): ex.target for ex in task_examples(task, list(loaded.values()))}
    report = score(task, task_examples(task, list(gold.values())), predictions, progress=False)
    assert report["turns"] == 104 and report["missing_predictions"] == 0
    assert report["joint_accuracy"] == 1.0


def test_export_is_the_dataset_layout(gold):
    d = gold["317"]
    assert to_meditod(transcript_of(d)) == {"317": d.to_json()}


@pytest.mark.parametrize(
    ("turn", "match"),
    [
        (u("doctor", "Hi", nlu=[{"intent": "chit-chat"}]), "doctor turn carries actions"),
        (u("patient", "Hi", actions=[{"action": "other"}]), "patient turn carries nlu"),
        (u("nurse", "Hi"), "speaker must be"),
        (u("doctor", "Hi", actions=[{"action": "inquire", "symptom": [{"value": "fever",
                                                                     "checks": [{"type": "colour"}]}]}]),
         "0.symptom.0.checks.0.type"),
        (u("patient", "Hi", dialog_state={"positive_symptoms": []}), "positive_symptoms"),
        (u("patient", None), "text must be a string"),
    ],
)
def test_malformed_turns_are_refused_with_a_clear_error(turn, match):
    with pytest.raises(ExportError, match=match):
        Transcript("s1", [turn])


def test_a_live_turn_and_a_dataset_utterance_convert_both_ways(gold):
    """One conversion each way (agent.graph_state.Turn <-> agent.data.Utterance), lossless on the annotations."""
    from agent.graph_state import Turn

    for utt in gold["317"].utterances:
        back = Turn.from_utterance(utt, at="2025-01-01T00:00:00Z").to_utterance()
        assert back.to_json() | {"keywords": utt.keywords} == utt.to_json()


def test_duplicate_session_ids_are_refused(gold):
    t = transcript_of(gold["317"])
    with pytest.raises(ExportError, match="duplicate"):
        to_meditod([t, t])


def test_final_state_folds_nlu_when_turns_carry_no_state():
    nlu1 = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "coughing", "onset": "2 days ago"}]}}]
    nlu2 = [{"intent": "inform", "slots": {"negative_symptom": [{"value": "fever"}]}}]
    t = Transcript("s", [u("doctor", "Hello?", actions=[{"action": "nod_prompt_salutations"}]),
                         u("patient", "A cough.", nlu=nlu1),
                         u("doctor", "Fever?", actions=[{"action": "inquire", "symptom": [{"value": "fever"}]}]),
                         u("patient", "No.", nlu=nlu2)])
    assert t.final_state() == update_state(update_state({}, nlu1), nlu2) == {
        "positive_symptom": [{"value": "coughing", "onset": "2 days ago"}], "negative_symptom": [{"value": "fever"}]}


def test_history_note_of_a_gold_dialogue(gold):
    t = transcript_of(gold["317"])
    note = history_note(t)
    sections = [line for line in note.splitlines() if line.startswith("## ")]
    assert sections == ["## Red flags", "## Presenting complaint", "## History of presenting complaint",
                        "## Past medical history", "## Medications", "## Allergies and exposures", "## Family history",
                        "## Social history", "## Investigations",
                        "## Possible conditions raised during the interview (for clinician review, not a diagnosis)"]
    lines = note.splitlines()
    assert lines[lines.index("## Presenting complaint") + 1] == "coughing"
    assert ("- **coughing** — onset: four days ago; duration: all day; frequency: few times an hour; character: harsh; "
            "severity: 6/10; progression: gradually getting worse over time; not worse with environmental triggers "
            "cold weather, old carpets, physical exertion") in lines
    assert "- **cough syrup** — for coughing; helped: no" in lines
    assert "- **allergic rhinitis**" in lines  # allergies are filed under allergies, not PMH
    assert "- Denies: past experience; hospitalization; operative surgical procedures" in lines
    assert "- No family history of: heart diseases; lung diseases; malignant neoplasms" in lines
    assert "- Unsure: marijuana use (amount: once a week)" in lines
    assert "- Travel: no recent travel" in lines
    assert "- Occupation: sales" in lines
    assert any(line.startswith("- Pertinent negatives: hemoptysis; wheezing; chest pain;") for line in lines)
    assert "- covid-19 virus disease" in lines
    assert lines[lines.index("## Red flags") + 1] == "_None recorded._"
    assert "not a diagnosis" in lines[-1]


def test_history_note_lists_red_flags():
    state = {"positive_symptom": [{"value": "chest pain"}, {"value": "dyspnea"}]}
    turns = [u("doctor", "What brings you in?", actions=[{"action": "nod_prompt_salutations"}]),
             u("patient", "Chest pain and I can't breathe.", dialog_state=state,
               nlu=[{"intent": "inform", "slots": state}])]
    note = history_note(Transcript("s9", turns, check_red_flags(state)))
    assert "- **EMERGENCY** `chest_pain_with_dyspnea`:" in note
    assert "Evidence: chest pain (positive_symptom), dyspnea (positive_symptom)." in note
    assert "> Chest pain and I can't breathe." in note
