import json
import subprocess
import sys

import pytest

from agent.core import data


def test_load_splits():
    assert [d.dialog_id for d in data.load_dialogues(split="train")] == ["115"]
    assert [d.dialog_id for d in data.load_dialogues(split="valid")] == ["317"]
    assert data.load_dialogues(split="test") == []
    assert len(data.load_dialogues()) == 2


def test_load_from_any_directory_and_errors(tmp_path):
    (tmp_path / "dialogs.json").write_text((data.DEFAULT_DATA_DIR / "dialogs.json").read_text())
    (tmp_path / "test_ids.json").write_text('["317"]')
    assert [d.dialog_id for d in data.load_dialogues(tmp_path, "test")] == ["317"]
    (tmp_path / "train_ids.json").write_text('["999"]')
    with pytest.raises(data.DataError, match="999"):
        data.load_dialogues(tmp_path, "train")
    with pytest.raises(data.DataError, match="dialogs.json"):
        data.load_dialogues(tmp_path / "nowhere")


def test_malformed_annotation_is_a_clear_error(tmp_path):
    raw = {"1": {"utterances": [{"speaker": "patient", "uttr_id": 0, "text": "hi", "nlu": [{"intent": "yell"}]}]}}
    (tmp_path / "dialogs.json").write_text(json.dumps(raw))
    with pytest.raises(data.DataError, match="dialogue 1 utterance 0: 0.intent"):
        data.load_dialogues(tmp_path)


def test_task_examples_follow_the_paper():
    dl = data.load_dialogues(split="train")
    nlu = data.nlu_examples(dl, history=2)
    utts = dl[0].utterances
    assert len(nlu) == sum(1 for u in utts if u.speaker == "patient")
    ex = nlu[1]  # patient uttr 3
    assert ex.uttr_id == 3 and ex.target == utts[3].nlu
    assert ex.last_exchange == [("doctor", utts[2].text), ("patient", utts[3].text)]
    assert ex.history == [("doctor", utts[0].text), ("patient", utts[1].text)]

    pol = data.pol_examples(dl, history=2)
    assert len(pol) == sum(1 for u in utts if u.speaker == "doctor") - 1  # not the first utterance
    ex = pol[1]  # doctor uttr 4
    assert ex.uttr_id == 4 and ex.target == utts[4].actions
    assert ex.state == utts[3].dialog_state
    assert ex.last_exchange == [("doctor", utts[2].text), ("patient", utts[3].text)]

    nlg = data.nlg_examples(dl, history=None)
    assert nlg[1].target == utts[4].text and nlg[1].actions == utts[4].actions
    assert len(nlg[1].history) == 2


def test_osce_transcripts_parse():
    dialogues = data.load_osce()
    assert len(dialogues) == 272
    d = dialogues[0]
    assert d.utterances and {u.speaker for u in d.utterances} == {"doctor", "patient"}
    assert [u.uttr_id for u in d.utterances] == list(range(len(d.utterances)))
    two = data.parse_osce_transcript("D: Hello.\nP: Hi,\nthere.\nP: Cough.\nD: OK", "x")
    assert [(u.speaker, u.text) for u in two.utterances] == [
        ("doctor", "Hello."),
        ("patient", "Hi, there. Cough."),
        ("doctor", "OK"),
    ]


def test_data_stats_cli():
    out = subprocess.run(
        [sys.executable, "-m", "agent.cli", "data", "stats"], capture_output=True, text=True, check=True
    )
    stats = json.loads(out.stdout)
    assert stats["dialogues"] == 2 and stats["utterances"] == 210
    assert stats["per_split"] == {"train": 1, "valid": 1}
    assert stats["speakers"] == {"doctor": 106, "patient": 104}
    assert stats["patient_intents"]["inform"] == 98
