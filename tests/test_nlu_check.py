"""``medhx nlu-check``: the four label-free measures on real dev transcripts, and the frozen check slice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.runs import nlu_check

REPO = Path(__file__).resolve().parents[1]
OSCE = REPO / "data" / "osce_transcripts"


def _holdout() -> set[str]:
    names = {line.strip() for line in (REPO / "data" / "eval_holdout.txt").read_text().splitlines() if line.strip()}
    return names | {"RES0006", "RES0045"}  # the sources of the shared annotated dialogues 115 and 317


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("nlu_check")
    rep = nlu_check.run(slices=("dev",), limit=3, sample_out=out / "sample.jsonl", flags_out=out / "flags.jsonl",
                        progress=False)
    rep["_out"] = out
    return rep


def test_the_four_measures_on_three_dev_transcripts(report):
    dev = report["slices"]["dev"]
    assert dev["transcripts"] == 3 and dev["patient_turns"] > 0
    for measure in ("opening", "closed_answers", "second_stage"):
        assert 0.0 <= dev[measure]["share"] <= 1.0, measure
    assert dev["opening"]["n"] == 3
    assert dev["closed_answers"]["n"] > 0
    flags = dev["red_flags"]
    assert flags["per_1000"] >= 0 and all(v >= 0 for v in (*flags["per_rule"].values(), *flags["per_level"].values()))
    assert dev["second_stage"]["items"] > 0
    assert set(report["slices"]) == {"dev"}
    table = nlu_check.markdown(report)
    assert table.count("\n| (") == 4 and "| check |" in table.splitlines()[0]


def test_the_sample_and_flags_files_are_dev_jsonl(report):
    dev_names = set(nlu_check.split_slices()["dev"])
    sample = [json.loads(line) for line in (report["_out"] / "sample.jsonl").read_text().splitlines()]
    assert 0 < len(sample) <= nlu_check.SAMPLE_SIZE
    for row in sample:
        assert row["transcript"] in dev_names and row["doctor"] and row["patient"] and row["asked"] and row["frames"]
    for line in (report["_out"] / "flags.jsonl").read_text().splitlines():
        row = json.loads(line)
        assert row["transcript"] in dev_names and {"turn", "patient", "id", "level", "evidence"} <= set(row)


def test_the_check_slice_file_is_every_fifth_non_holdout_transcript():
    held = _holdout()
    eligible = sorted(p.stem for p in OSCE.glob("*.txt") if p.stem not in held)
    expected = [n for i, n in enumerate(eligible) if i % 5 == 4]
    listed = nlu_check.read_slice_file(nlu_check.SLICE_FILE)
    assert listed == expected
    assert not set(listed) & held
    slices = nlu_check.split_slices()
    assert sorted(slices["dev"] + slices["check"]) == eligible and not set(slices["dev"]) & set(slices["check"])


def test_a_missing_or_holdout_slice_name_fails_clearly(tmp_path):
    bad = tmp_path / "slice.txt"
    bad.write_text("# comment\nCAR0005\nNOPE9999\n")
    with pytest.raises(ValueError, match=r"missing from .*NOPE9999"):
        nlu_check.run(slices=("dev",), limit=1, slice_file=bad, progress=False)
    bad.write_text(f"CAR0005\n{sorted(_holdout())[0]}\n")
    with pytest.raises(ValueError, match="holdout"):
        nlu_check.split_slices(slice_file=bad)
    with pytest.raises(OSError, match="no check-slice file"):
        nlu_check.split_slices(slice_file=tmp_path / "absent.txt")


def test_closed_questions_read_as_yes_no():
    assert nlu_check.reads_yes_no("Do you smoke?")
    assert nlu_check.reads_yes_no("Any fevers or chills?")
    assert nlu_check.reads_yes_no("No, OK. And do you have any pain in your ears?")
    assert not nlu_check.reads_yes_no("When did the cough start?")
    assert not nlu_check.reads_yes_no("OK, how long have you had it?")
    assert not nlu_check.reads_yes_no("OK, so tell me about your cough, do you?")
