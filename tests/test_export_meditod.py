"""Export: MediTOD JSON round-trip through the data layer (strict), malformed input, the history note and its
clinician's summary."""

from __future__ import annotations

import copy
import json

import pytest

from agent.app.export import (
    SUMMARY_TITLE,
    ExportError,
    Transcript,
    history_note,
    summary_markdown,
    to_meditod,
    write_meditod,
)
from agent.core import cmas
from agent.core.data import Utterance, load_dialogs_file, load_dialogues
from agent.core.safety import check_red_flags
from agent.core.tracker import update_state


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
    from agent.core.data import task_examples
    from eval.metrics.score import score

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
    """One conversion each way (agent.app.graph_state.Turn <-> agent.core.data.Utterance), lossless on the
    annotations."""
    from agent.app.graph_state import Turn

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


def test_the_note_names_a_misleading_vocabulary_value_as_a_clinician_would():
    """MediTOD files any drinking under "alcohol abuse": the note of two glasses a week says "alcohol use"."""
    state = {"positive_symptom": [{"value": "colored/excess sputum"}],
             "positive_habit": [{"value": "alcohol abuse", "frequency": "two glasses a week"}]}
    turns = [u("doctor", "What brings you in?", actions=[{"action": "nod_prompt_salutations"}]),
             u("patient", "I'm bringing up phlegm. I have two glasses of wine a week.", dialog_state=state,
               nlu=[{"intent": "inform", "slots": state}])]
    note = history_note(Transcript("s10", turns, []))
    assert "alcohol use" in note and "alcohol abuse" not in note, note
    assert "**sputum**" in note, note


# --------------------------------------------------------------------------- the clinician's summary

GI_LINES = ["I've been passing black tarry stools since yesterday", "No, none of those", "No",
            "About three times a day", "No", "Yes, some pain in my upper tummy", "No", "No", "No",
            "I take ibuprofen for my knees most days", "No", "I drink about six pints of beer a day"]
"""The answers, in the order the plan asks (the onset said, the red-flag screen first; the NSAIDs and alcohol among
the risk factors)."""


@pytest.fixture(scope="module")
def gi_session(tmp_path_factory):
    """A live interview on the shipped default agent (clinical NLU, questionnaire with presentation plans, template
    NLG) through the real graph: black stools, then answers to the GI-bleeding plan's questions."""
    from graph_fixtures import default_store

    with default_store(tmp_path_factory.mktemp("gi")) as store:
        s = store.start("gi")
        for line in GI_LINES:
            s.send(line)
        return s.state()


def section(note: str, title: str) -> list[str]:
    lines = note.splitlines()
    start = lines.index(f"## {title}") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("## ") or lines[i] == "---")
    return lines[start:end]


def state_fact_texts(state: dict) -> set[str]:
    """Every item of the state in the summary's clinician wording (``melena``, ``no hematemesis``, ``takes nsaids``)."""
    from policies.summary import fact_text

    return {fact_text(base, status, item) for base, spec in cmas.SLOTS.items() if spec.statuses
            for status, item in cmas.slot_items(state, base)}


def test_the_note_of_a_live_interview_has_the_clinicians_summary(gi_session):
    st = gi_session
    transcript = Transcript.from_session(st)
    assert transcript.summary == st.summary and st.summary["for"] == "clinician"
    note = history_note(transcript)
    headings = [line for line in note.splitlines() if line.startswith("## ")]
    assert headings[-1] == f"## {SUMMARY_TITLE}" and headings[0] == "## Red flags"  # the note's layout, then it
    body = section(note, SUMMARY_TITLE)
    assert "\n".join(body).strip() == summary_markdown(st.summary)
    assert body[0].startswith("_For the clinician only") and "never said" in body[0]
    assert "**Presentation:** GI bleeding" in body[2] and "inferred" not in body[2]  # the plan the interview followed
    # the red-flag screen: raised, and screened with every question answered no
    assert any(line.startswith("- **Positive** `gastrointestinal_bleeding` (EMERGENCY): ") for line in body)
    assert "- **Negative** `syncope`: no syncope" in body
    # the ranked considerations, each with its facts for and against: every one a fact of the final state
    numbered = [line for line in body if line[:1].isdigit()]
    assert [line.split("**")[1] for line in numbered] == [c["label"] for c in st.summary["considerations"]]
    assert len(numbered) >= 3 and numbered[0] == "1. **peptic ulcer bleeding**"
    facts = state_fact_texts(transcript.final_state())
    cited = []
    for line in body:
        for side in ("   - for: ", "   - against: "):
            if line.startswith(side) and line != side + "none heard":
                cited += line.removeprefix(side).split("; ")
    assert {"takes nsaids", "melena", "no hematemesis"} <= set(cited)
    assert set(cited) <= facts, set(cited) - facts
    assert "   - against: no hematemesis; melena" in body  # black stools argue against a Mallory-Weiss tear
    # for the clinician only: no doctor turn says any of it, and the MediTOD export does not carry it
    said = [t.text for t in st.doctor_turns()]
    for text in [SUMMARY_TITLE, body[0].strip("_"), *(c["label"] for c in st.summary["considerations"])]:
        assert not any(text.casefold() in s.casefold() for s in said), text
    assert "considerations" not in json.dumps(to_meditod(transcript))


def test_summary_markdown_says_inferred_and_what_the_screen_left():
    summary = {"for": "clinician", "notice": "For the clinician only.", "plans": ["back_pain"],
               "presentation": {"id": "back_pain", "title": "Back pain", "inferred": True},
               "red_flag_screen": [{"rule": "cauda_equina", "result": "incomplete",
                                    "unanswered": ["saddle anaesthesia"],
                                    "facts": [{"slot": "symptom", "status": "negative", "value": "urinary retention",
                                               "text": "no urinary retention"}]}],
               "considerations": []}
    md = summary_markdown(summary)
    assert "**Presentation:** Back pain (inferred from the history)" in md
    assert ("- **Incomplete** `cauda_equina`: not yet asked or answered: saddle anaesthesia (denied so far: no urinary "
            "retention)") in md
    assert "_None yet" in md
    assert SUMMARY_TITLE not in history_note(Transcript("s", []))  # a dataset dialogue has no summary


def test_the_presenting_complaint_says_where_it_is():
    """A note headed "pain" tells a clinician nothing: the complaint carries the places the state holds by the end,
    and a value the vocabulary spells misleadingly is named as a clinician would ("alcohol use", not "abuse")."""
    opening = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "pain"}]}}]
    placed = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "pain", "location": ["left", "flank"]}],
                                             "positive_habit": [{"value": "alcohol abuse"}]}}]
    t = Transcript("s", [u("doctor", "What brings you in?", actions=[{"action": "nod_prompt_salutations"}]),
                         u("patient", "I've got this awful pain.", nlu=opening),
                         u("doctor", "Where is it?", actions=[{"action": "inquire", "symptom": [
                             {"value": "pain", "checks": [{"type": "location"}]}]}]),
                         u("patient", "In my left side, round the back. I do like a drink.", nlu=placed)])
    lines = history_note(t).splitlines()
    assert lines[lines.index("## Presenting complaint") + 1] == "pain (left, flank)"
    assert "- **alcohol use**" in lines
