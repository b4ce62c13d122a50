"""Teacher-forced prediction for every non-LLM NLU kind, and the silver data builder."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from graph_fixtures import REPO

from agent.core.data import load_dialogues, nlu_examples
from eval.metrics.lenient import score_nlu_lenient
from eval.metrics.score import load_predictions
from eval.runs.predict import teacher_forced_contexts
from policies.nlu.clinical import ClinicalNLU
from policies.nlu.silver import SHARED_SOURCES, build_silver, doctor_actions, read_holdout


def test_teacher_forced_contexts_carry_the_gold_past():
    dialogues = load_dialogues(REPO / "data" / "meditod", "all")
    contexts = teacher_forced_contexts(dialogues)
    assert len(contexts) == len(nlu_examples(dialogues)) == 104
    dialog_id, uttr_id, ctx = contexts[1]
    d = {x.dialog_id: x for x in dialogues}[dialog_id]
    utts = {u.uttr_id: u for u in d.utterances}
    assert ctx.turns[-1] == ("patient", utts[uttr_id].text)
    assert ctx.past_actions[-1] == utts[uttr_id - 1].actions  # the doctor's question before this answer
    assert ctx.state == utts[uttr_id - 2].dialog_state  # the state after the previous patient turn


def test_medhx_predict_runs_the_clinical_nlu_and_medhx_score_reads_it(tmp_path):
    out = tmp_path / "clinical.jsonl"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agent.cli",
            "predict",
            "--config",
            str(REPO / "configs" / "default.yaml"),
            "--task",
            "nlu",
            "--split",
            "valid",
            "--out",
            str(out),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(proc.stdout)
    assert summary["kind"] == "clinical" and summary["rows"] == 53
    preds = load_predictions(out)
    dialogues = load_dialogues(REPO / "data" / "meditod", "valid")
    report = score_nlu_lenient(nlu_examples(dialogues), {k: r["prediction"] for k, r in preds.items()})
    # the aim on each held-out dialogue (development figures: README states the caveat)
    assert report["overall"]["f1"] >= 0.5 and report["canonical"]["f1"] >= 0.6, report
    assert report["format_errors"] == 0


def test_silver_data_excludes_holdout_and_shared_sources(tmp_path):
    summary = build_silver(tmp_path / "silver", limit=3, progress=False,
                           gold_dir=REPO / "data" / "meditod", gold_train=("115",), gold_valid=("317",))
    assert set(summary["excluded"]) >= read_holdout() | set(SHARED_SOURCES)
    dialogs = json.loads((tmp_path / "silver" / "dialogs.json").read_text())
    assert not any(k.removeprefix("silver-") in summary["excluded"] for k in dialogs)
    train = load_dialogues(tmp_path / "silver", "train")
    assert {d.dialog_id for d in train} >= {"115"} and len(train) == 4
    assert [d.dialog_id for d in load_dialogues(tmp_path / "silver", "valid")] == ["317"]
    assert nlu_examples(train)  # strict CMAS throughout: the loader parses every frame, action and state
    assert summary["patient_turns_with_slots"] > 0


def test_silver_doctor_actions_read_the_question():
    nlu = ClinicalNLU()
    assert doctor_actions(nlu, "Have you had any fevers or chills?", {}) == [
        {"action": "inquire", "symptom": [{"value": "fever"}, {"value": "chills"}]}]
    state = {"positive_symptom": [{"value": "coughing"}]}
    assert doctor_actions(nlu, "When did it start?", state) == [
        {"action": "inquire", "symptom": [{"value": "coughing", "checks": [{"type": "onset"}]}]}]
    assert doctor_actions(nlu, "Okay, thank you.", {}) == [{"action": "nod_prompt_salutations"}]


def test_silver_labels_score_against_gold_on_the_shared_dialogues():
    """The silver labeller is the clinical NLU: on the gold-annotated turns its labels are what we measured."""
    dialogues = load_dialogues(REPO / "data" / "meditod", "all")
    nlu = ClinicalNLU()
    preds = {(d, u): nlu.understand(ctx).value for d, u, ctx in teacher_forced_contexts(dialogues)}
    report = score_nlu_lenient(nlu_examples(dialogues), preds)
    assert report["overall"]["f1"] >= 0.5


def test_silver_data_holds_no_holdout_text(tmp_path):
    """Stock phrasings recur across transcripts; none of the holdout transcripts' passages reaches silver data.

    The filter is checked on every source transcript (258, seconds); ``build_silver`` itself on the first 20, where
    its dialogues must be exactly the filtered ones. Labelling all 258 with the lexicon takes ~40 s and tests
    nothing more about the text: the labels come from the kept utterances."""
    from agent.core.data import load_osce
    from policies.nlu.silver import HoldoutText, without_holdout_text

    names = read_holdout()
    held = HoldoutText(names)
    osce = {d.dialog_id: d for d in load_osce()}
    sources = [d for n, d in sorted(osce.items()) if n not in names | set(SHARED_SOURCES)]
    cleaned = [without_holdout_text(d, held) for d in sources]
    texts = [" ".join(u.text.lower().split()) for d, _ in cleaned for u in d.utterances]
    # checked independently of the filter's own normalisation: every holdout sentence of 20+ characters, as written
    sentences = {" ".join(x.lower().split()) for n in names for u in osce[n].utterances
                 for x in re.split(r"(?<=[.?!])\s+", u.text) if len(x.strip()) >= 20}
    blob = "\n".join(texts)
    assert not [x for x in sentences if x in blob]
    assert not [t for t in texts if t in held]  # no run of 10 words either
    assert len(held.passages) > len(sentences) / 2
    assert sum(n for _, n in cleaned) > 0  # the stock phrasings were there to drop

    summary = build_silver(tmp_path / "silver", limit=20, progress=False, second_stage=False)
    dialogs = json.loads((tmp_path / "silver" / "dialogs.json").read_text())
    first = [d for d, _ in cleaned if f"silver-{d.dialog_id}" in dialogs]
    assert len(first) == summary["transcripts"] == 20
    assert {f"silver-{d.dialog_id}": [u.text for u in d.utterances] for d in first} == {
        i: [u["text"] for u in d["utterances"]] for i, d in dialogs.items()}
