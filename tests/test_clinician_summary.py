"""The clinician's summary (issue 18): ranked differential considerations from the presentation plans, each citing
facts of the patient state for and against it; the red-flag screen's result; kept in the interview's state, never said
to the patient; scored by ``medhx simulate`` (the card's diagnosis among the top 3, the screen on time)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from agent.app.export import summary_markdown
from agent.core import cmas
from agent.core.ontology import default_vocabulary
from agent.core.safety import default_rules
from eval.runs.cases import load_card
from eval.runs.simulate import run
from eval.runs.simulate_metrics import same_diagnosis
from policies.presentations import default_plans
from policies.summary import clinician_summary

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "data" / "cases"
VOCAB = default_vocabulary()
PLANS = default_plans()


def cited_facts_are_in_the_state(summary: dict, state: dict) -> None:
    """Every fact a consideration or the screen cites is an item of the state: same slot type, status, value and
    locations (the summary reads the state, it never words a fact of its own)."""
    cited = [f for c in summary["considerations"] for f in (*c["supports"], *c["against"])]
    cited += [f for r in summary["red_flag_screen"] for f in r.get("facts") or []]
    for f in cited:
        items = [it for status, it in cmas.slot_items(state, f["slot"]) if status == f["status"]]
        assert any(it.get("value") == f["value"] and list(it.get("location") or []) == f.get("location", [])
                   for it in items), f


def test_considerations_are_ranked_by_the_facts_for_and_against_them():
    state = {
        "positive_symptom": [{"value": "chest pain", "location": ["chest"]}, {"value": "chest pain rest"},
                             {"value": "hyperhidrosis"}, {"value": "nausea"}],
        "negative_symptom": [{"value": "dyspnea"}, {"value": "hemoptysis"}],
        "positive_habit": [{"value": "smoking"}],
    }
    s = clinician_summary(state, PLANS, used=["chest_pain"])
    assert s["for"] == "clinician" and s["presentation"] == {"id": "chest_pain", "title": PLANS["chest_pain"].title,
                                                              "inferred": False}
    top = s["considerations"][0]
    assert top["label"] == "possible nstemi / stemi"
    assert {f["value"] for f in top["supports"]} >= {"chest pain rest", "hyperhidrosis", "nausea", "smoking"}
    # a denied typical feature argues against: no breathlessness, no blood in the sputum, for a pulmonary embolism
    pe = next(c for c in s["considerations"] if c["label"] == "pulmonary embolism") if any(
        c["label"] == "pulmonary embolism" for c in s["considerations"]) else None
    assert pe is None or pe["score"] < top["score"]
    stable = next(c for c in s["considerations"] if c["label"] == "stable angina")
    assert [f["text"] for f in stable["against"]] == ["chest pain rest"]  # pain at rest argues against stable angina
    scores = [c["score"] for c in s["considerations"]]
    assert scores == sorted(scores, reverse=True) and all(c["supports"] for c in s["considerations"])
    cited_facts_are_in_the_state(s, state)


def test_the_red_flag_screen_says_positive_negative_or_what_is_left():
    state = {"positive_symptom": [{"value": "pain", "location": ["lower back"]}],
             "negative_symptom": [{"value": "saddle anaesthesia"}, {"value": "urinary retention"},
                                  {"value": "urinary incontinence"}, {"value": "faecal incontinence"}]}
    raised = [{"id": "aortic_dissection", "level": "urgent", "message": "m", "turn": 3}]
    s = clinician_summary(state, PLANS, used=["back_pain"], red_flags=raised)
    by_rule = {r["rule"]: r for r in s["red_flag_screen"]}
    assert by_rule["cauda_equina"]["result"] == "negative"
    assert {f["text"] for f in by_rule["cauda_equina"]["facts"]} == {
        "no saddle anaesthesia", "no urinary retention", "no urinary incontinence", "no faecal incontinence"}
    assert by_rule["aortic_dissection"]["result"] == "positive"
    assert s["red_flag_screen"][0]["rule"] == "aortic_dissection"  # raised flags first
    assert any(r["result"] == "incomplete" and r["unanswered"] for r in s["red_flag_screen"])


def test_a_context_rule_is_not_screened_negative_outside_its_context():
    # a headache plan screens pre-eclampsia through vision loss; "no" from a patient who is not pregnant (a man, or
    # a woman never asked) is no negative pre-eclampsia screen, and a denied pregnancy says so
    state = {"positive_symptom": [{"value": "headache"}], "negative_symptom": [{"value": "vision loss"}]}
    summary = clinician_summary(state, PLANS, used=["headache"])
    screen = {r["rule"]: r for r in summary["red_flag_screen"]}
    assert screen["pre_eclampsia"]["result"] == "not applicable"
    assert "**Not applicable** `pre_eclampsia`: only with pregnancy: not reported" in summary_markdown(summary)
    assert screen["pre_eclampsia"]["needs"] == ["pregnancy: not reported"]
    assert [r["result"] for r in screen.values()][-1] == "not applicable"  # after what was screened
    denied = {**state, "negative_medical_history": [{"value": "pregnancy"}]}
    screen = {r["rule"]: r for r in clinician_summary(denied, PLANS, used=["headache"])["red_flag_screen"]}
    assert screen["pre_eclampsia"]["needs"] == ["pregnancy: denied"]
    pregnant = {**state, "positive_medical_history": [{"value": "pregnancy"}]}
    screen = {r["rule"]: r for r in clinician_summary(pregnant, PLANS, used=["headache"])["red_flag_screen"]}
    assert screen["pre_eclampsia"]["result"] == "negative"
    assert [f["text"] for f in screen["pre_eclampsia"]["facts"]] == ["no vision loss"]


def test_without_a_followed_plan_the_state_chooses_one_and_says_so():
    state = {"positive_symptom": [{"value": "melena"}]}
    s = clinician_summary(state, PLANS)
    assert s["presentation"]["id"] == "gi_bleeding" and s["presentation"]["inferred"]
    assert clinician_summary({}, PLANS)["presentation"] is None


@pytest.mark.parametrize("path", sorted(CASES.glob("*.yaml")), ids=lambda p: p.stem)
def test_on_every_card_the_summary_cites_only_facts_of_the_state(path):
    card = load_card(path)
    s = clinician_summary(card.state, PLANS, used=[card.presentation] if card.presentation else ())
    cited_facts_are_in_the_state(s, card.state)
    assert s["presentation"] is not None and s["presentation"]["id"] == card.presentation


@pytest.mark.parametrize(("expected", "label", "same"), [
    ("variceal bleed", "oesophageal varices (variceal bleeding)", True),
    ("migraine with aura", "migraine", True),
    ("transient ischaemic attack", "stroke or transient ischaemic attack", True),
    ("subarachnoid hemorrhage", "subarachnoid haemorrhage", True),
    ("pulmonary embolism", "pulmonary embolism", True),
    ("stable angina", "unstable angina", False),
    ("subarachnoid haemorrhage", "stroke or intracerebral haemorrhage", False),
    ("pneumonia", "aortic dissection", False),
])
def test_a_diagnosis_matches_a_consideration_by_its_names(expected, label, same):
    assert same_diagnosis(expected, label, VOCAB) is same


def one_card_per_presentation() -> list[Path]:
    """A card of every presentation class the cards cover (each plan's first card by name); for four classes the
    card that tests more: the renal colic card is a man whose sex the screen asks before its questions about periods
    and pregnancy, and his screen is on time without them (an item only the other sex has is no part of his
    screen). Each card's opening complaint is its class's, so every plan's screen is tested."""
    chosen = {"abdominal_pain": "gu-renal-colic", "gi_bleeding": "gastro-peptic-ulcer-bleed",
              "weakness_numbness": "neuro-stroke", "back_pain": "msk-cauda-equina",
              # cards whose opening complaint is the class's own (a DKA patient opens with tummy pain, a
              # meningitis one with the headache: their interviews follow those plans)
              "vomiting_diarrhoea": "gastro-gastroenteritis", "fever": "resp-elderly-pneumonia-confusion"}
    for path in sorted(CASES.glob("*.yaml")):
        chosen.setdefault(load_card(path).presentation, path.stem)
    return [CASES / f"{stem}.yaml" for stem in chosen.values()]


def test_through_the_real_graph_the_summary_is_kept_never_said_and_scored(tmp_path):
    """One interview per presentation class, oracle NLU, the shipped questionnaire with plans, the real graph: the
    red-flag screen of the class on time, the summary kept for the clinician, never said, and scored."""
    chosen = one_card_per_presentation()
    assert len(chosen) == len({load_card(p).presentation for p in CASES.glob("*.yaml")}) >= 18
    cfg = {
        "agents": [{"name": "q", "config": str(REPO / "configs" / "default.yaml")}],
        "cases": [str(p) for p in chosen],
        "simulator": {"kind": "agenda", "lexicon": str(REPO / "configs" / "simulate" / "lay_phrases.yaml")},
        "modes": ["oracle"],
        "seeds": [0],
        "workers": 2,
        "output_dir": str(tmp_path / "out"),
        "keep_sessions": False,
    }
    path = tmp_path / "sim.yaml"
    path.write_text(yaml.safe_dump(cfg))
    summary = run(path, progress=False)
    messages = [r.message for r in default_rules().rules]
    records = [yaml.safe_load(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert len(records) == len(chosen)
    for rec in records:
        s, state = rec["clinician_summary"], rec["final_state"]
        assert s["for"] == "clinician" and s["considerations"], rec["case"]
        cited_facts_are_in_the_state(s, state)
        # never told: no statement names a consideration (a question may ask about it as a history item: "have you
        # ever been diagnosed with atrial fibrillation?"; a red flag's safety message names its danger, as it must)
        told = " ".join(x for t in rec["transcript"] if t["speaker"] == "doctor"
                        for x in re.split(r"(?<=[.?!])\s+", t["text"])
                        if not x.rstrip().endswith("?") and not any(x in msg for msg in messages)).casefold()
        assert not any(c["label"].casefold() in told for c in s["considerations"]), rec["case"]
        assert not any(a.get("action") == "diagnosis" for t in rec["transcript"] if t["speaker"] == "doctor"
                       for a in t["actions"] or [])
        m = rec["metrics"]
        if m["diagnosis"] is not None:  # a card may state no diagnosis (a symptom picture, e.g. a viral cold)
            assert m["diagnosis"]["offered"] == [c["label"] for c in s["considerations"]]
            assert m["diagnosis"]["match"] == (m["diagnosis"]["rank"] is not None and m["diagnosis"]["rank"] <= 3)
        sc = m["red_flag_screen"]
        assert sc["plan"] == load_card(CASES / f"{rec['case']}.yaml").presentation, (rec["case"], sc)
        assert sc["plan"] == s["plans"][0] and sc["complaint_known_at"] is not None
        assert sc["on_time"], (rec["case"], sc)
        assert m["facts_per_turn"] > 0
    cards = summary["overall"]["cards"]["oracle"]
    assert cards["red_flag_screen"]["cases"] == len(records) == cards["red_flag_screen"]["on_time"]


def test_an_absent_risk_factor_is_no_fact_against():
    """Clinical scores count the risk factors present (Wells, HEART): a deep vein thrombosis after a flight is not
    argued against by the surgery, the cancer or the clot the patient never had; a denied symptom still argues."""
    state = {"positive_symptom": [{"value": "swelling", "location": ["left calf"]},
                                  {"value": "pain", "location": ["left calf"]}],
             "positive_medication": [{"value": "oral contraceptives"}],
             "negative_medical_history": [{"value": "operative surgical procedures"}, {"value": "malignant neoplasms"},
                                          {"value": "deep vein thrombosis"}, {"value": "server immobility"}],
             "negative_symptom": [{"value": "dyspnea"}, {"value": "chest pain"}],
             "basic_information": [{"sex": "female"}]}
    s = clinician_summary(state, PLANS, used=["leg_pain_swelling"])
    top = s["considerations"][0]
    assert top["label"] == "deep vein thrombosis" and not top["against"]
    pe = next(c for c in s["considerations"] if c["label"] == "pulmonary embolism")
    assert {f["value"] for f in pe["against"]} == {"dyspnea", "chest pain"}
    cited_facts_are_in_the_state(s, state)


def test_a_fact_is_named_as_the_note_names_it():
    """The summary's facts read as the history note does: MediTOD files any drinking under "alcohol abuse", which a
    clinician would take for a diagnosis."""
    from policies.summary import fact_text

    assert fact_text("habit", "positive", {"value": "alcohol abuse"}) == "alcohol use"
    assert fact_text("habit", "positive", {"value": "secondhand cigarette"}) == "second-hand smoke"
    assert fact_text("symptom", "negative", {"value": "fever"}) == "no fever"
