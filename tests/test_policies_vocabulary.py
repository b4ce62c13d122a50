"""The vocabulary tying MediTOD dataset values to questionnaire-ontology codes."""

from __future__ import annotations

import pytest

from agent.core.data import load_dialogues
from agent.core.ontology import VocabularyError, default_vocabulary, load_ontology, load_vocabulary


def test_ontology_codes_per_slot_type():
    onto = load_ontology()
    assert len(onto.symptoms) == 103
    assert {"dyspnea", "fainting", "hemoptysis", "cough", "chest pain"} <= onto.codes["symptom"]
    assert {"smoking", "alcoholism", "marijuana"} <= onto.codes["habit"]
    assert "past experience" in onto.codes["medical_history"]


def test_dataset_values_resolve_to_ontology_codes():
    vocab = default_vocabulary()
    assert vocab.code("symptom", "coughing") == "cough"  # table (the keyword names six codes)
    assert vocab.code("symptom", "Hemoptysis") == "hemoptysis"  # a code, any case
    assert vocab.code("symptom", "haemoptysis") == "hemoptysis"  # a keyword that names exactly one code
    assert vocab.code("symptom", "dyspnoea") is None  # a keyword of two codes (dyspnea, sleep dyspnea): no guess
    assert vocab.code("symptom", "dermatologic problem") is None  # listed, no ontology code
    assert vocab.same("habit", "alcohol abuse", "alcoholism")
    assert not vocab.same("symptom", "dermatologic problem", "swelling")


def test_every_symptom_value_of_the_shared_dialogues_is_known():
    vocab = default_vocabulary()
    values = {
        (name.split("_", 1)[1] if name.split("_", 1)[0] in ("positive", "negative", "unknown") else name, it["value"])
        for d in load_dialogues()
        for u in d.utterances
        for f in u.nlu or []
        for name, its in (f.get("slots") or {}).items()
        for it in its
        if "value" in it
    }
    unknown = sorted(v for base, v in values if base == "symptom" and not vocab.known("symptom", v))
    assert unknown == []


def test_mapping_to_a_non_code_is_an_error(tmp_path):
    path = tmp_path / "v.yaml"
    path.write_text("symptom:\n  coughing: coughs\n")
    with pytest.raises(VocabularyError, match="'coughs' is not an ontology code of symptom"):
        load_vocabulary(path)
    path.write_text("symptoms:\n  coughing: cough\n")
    with pytest.raises(VocabularyError, match="unknown slot type"):
        load_vocabulary(path)


def test_a_value_in_the_other_grammatical_number_is_the_same_value():
    """A value is listed in one number; a story, a card or a model writes either ("an oral contraceptive", "statins",
    "migraines"). Both name one item; a form unknown in both numbers stays unknown."""
    vocab = default_vocabulary()
    assert vocab.same("medication", "oral contraceptive", "oral contraceptives")
    assert vocab.same("medical_history", "migraines", "migraine")
    assert vocab.canonical("symptom", "palpitation") == vocab.canonical("symptom", "palpitations")
    assert vocab.canonical("symptom", "flibbertigibbets") is None
