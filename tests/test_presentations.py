"""Presentation plans (configs/presentations/*.yaml, policies/presentations.py): every shipped plan loads, names its
sources and only values the vocabulary resolves and rule ids the red-flag screen has; a broken plan fails at load with
its path and the failing key; ``choose_plan`` picks the plan of the chief complaint and moves with the red flags."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from agent.core import cmas
from agent.core.ontology import default_vocabulary
from agent.core.safety import default_rules
from eval.runs.cases import PRESENTATIONS
from policies.plan_choice import choose_plan
from policies.presentations import DEFAULT_DIR, MAX_GROUP, PlanError, load_plan, load_plans

IDS = {"cough", "breathlessness", "chest_pain", "palpitations", "syncope_dizziness", "headache", "weakness_numbness",
       "abdominal_pain", "gi_bleeding", "vomiting_diarrhoea", "back_pain", "joint_pain", "urinary", "fever",
       "sore_throat", "rash", "low_mood_anxiety", "fatigue_weight_loss", "red_eye", "scrotal_pain",
       "leg_pain_swelling", "ear_hearing"}


@pytest.fixture(scope="module")
def plans():
    return load_plans()


def raw_plan(name: str = "gi_bleeding") -> dict:
    return yaml.safe_load((DEFAULT_DIR / f"{name}.yaml").read_text())


def write(tmp_path: Path, raw: dict, name: str = "gi_bleeding") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def state(*items: tuple[str, list[str] | None]) -> dict:
    return {"positive_symptom": [{"value": v, **({"location": loc} if loc else {})} for v, loc in items]}


# --------------------------------------------------------------------------- the shipped plans


def test_every_shipped_plan_loads_and_the_issue_s_18_complaints_and_the_later_ones_are_there(plans):
    assert set(plans) == IDS == set(PRESENTATIONS)  # the case cards' presentation classes are the plans' ids
    for plan in plans.values():
        assert plan.characterise and plan.associated and plan.risk_factors and plan.considerations, plan.id
        assert all(len(g.ask) <= MAX_GROUP for g in plan.associated)


def test_every_plan_names_nice_and_osce_sources(plans):
    for plan in plans.values():
        assert any(s.startswith("NICE") for s in plan.sources), plan.id
        assert any("Geeky Medics" in s or "Oxford Handbook" in s for s in plan.sources), plan.id
        assert (DEFAULT_DIR / f"{plan.id}.yaml").read_text().startswith("# Presentation plan:"), plan.id


def test_plans_name_only_values_the_vocabulary_resolves_and_rules_the_screen_has(plans):
    vocab, rule_ids = default_vocabulary(), {r.id for r in default_rules().rules}
    for plan in plans.values():
        for base, value, _ in plan.questions():
            if base == "basic_information":
                assert value in cmas.BASIC_KEYS
            else:
                assert vocab.known(base, value) or value in cmas.OPEN_VALUES, (plan.id, base, value)
        for c in plan.considerations:
            assert c.name or vocab.known("disease", c.disease)
        assert plan.screened_rules <= rule_ids


def test_every_plan_screens_red_flags_and_every_rule_has_a_plan(plans):
    """Each of the 18 complaints has NICE red flags, so each plan screens at least one rule; and every rule is
    screened by some plan, so a raised flag always has a plan to move to."""
    for plan in plans.values():
        assert plan.screened_rules, plan.id
    screened = set().union(*(p.screened_rules for p in plans.values()))
    assert screened == {r.id for r in default_rules().rules}


# --------------------------------------------------------------------------- broken plans fail at load


def test_a_misspelt_key_fails_with_the_path_and_the_key(tmp_path):
    raw = raw_plan()
    raw["risk_factor"] = raw.pop("risk_factors")
    path = write(tmp_path, raw)
    with pytest.raises(PlanError, match=rf"{path}: risk_factor: Extra inputs are not permitted"):
        load_plan(path)
    raw = raw_plan()
    raw["associated"][1]["ask"][0] = {"symptm": "vomiting"}
    with pytest.raises(PlanError, match=r"gi_bleeding.yaml: associated\.1\.ask\.0\.symptm: Extra inputs"):
        load_plan(write(tmp_path, raw))


def test_an_unknown_value_fails_with_the_path_and_the_key(tmp_path):
    raw = raw_plan()
    raw["triggers"][0] = {"symptom": "purple elbow syndrome"}
    path = write(tmp_path, raw)
    with pytest.raises(PlanError, match=rf"{path}: triggers\.0\.symptom: .*'purple elbow syndrome' is not a symptom"):
        load_plan(path)
    raw = raw_plan()
    raw["risk_factors"][0] = {"medication": "moon dust"}
    with pytest.raises(PlanError, match=r"risk_factors\.0\.medication: .*'moon dust' is not a medication value"):
        load_plan(write(tmp_path, raw))
    raw = raw_plan()
    raw["associated"][0]["ask"][0] = {"symptom": "pain", "location": ["elbow of the soul"]}
    with pytest.raises(PlanError, match=r"associated\.0\.ask\.0\.location: .*'elbow of the soul' is not a body"):
        load_plan(write(tmp_path, raw))


def test_an_unknown_rule_or_a_question_the_rule_does_not_read_fails(tmp_path):
    raw = raw_plan()
    raw["red_flag_screen"][0]["rule"] = "gi_bleed"
    path = write(tmp_path, raw)
    with pytest.raises(PlanError, match=rf"{path}: red_flag_screen\.0\.rule: .*'gi_bleed' is not a rule id"):
        load_plan(path)
    raw = raw_plan()
    raw["red_flag_screen"][0]["ask"].append({"symptom": "fever"})
    with pytest.raises(PlanError, match=r"red_flag_screen\.0: .*ask\.3: symptom 'fever' is not an item rule "
                                        r"'gastrointestinal_bleeding' reads"):
        load_plan(write(tmp_path, raw))


def test_checks_groups_and_considerations_are_held_to_the_schema(tmp_path):
    raw = raw_plan()
    raw["characterise"]["melena"] = ["onset", "smell"]
    with pytest.raises(PlanError, match=r"characterise\.melena\.1: Input should be"):
        load_plan(write(tmp_path, raw))
    raw = raw_plan()
    raw["associated"][0]["ask"][0]["check"] = "colour"
    with pytest.raises(PlanError, match=r"associated\.0\.ask\.0: .*check: 'colour' is not a check type of symptom"):
        load_plan(write(tmp_path, raw))
    raw = raw_plan()
    raw["associated"][0]["ask"] += [{"symptom": "nausea"}, {"symptom": "pallor"}]
    with pytest.raises(PlanError, match=r"associated\.0\.ask: .*at most 3 items"):
        load_plan(write(tmp_path, raw))
    raw = raw_plan()
    raw["associated"][0]["system"] = "cardiac"
    with pytest.raises(PlanError, match=r"associated\.0\.system: Input should be"):
        load_plan(write(tmp_path, raw))
    raw = raw_plan()
    raw["considerations"][0]["supports"].append({"symptom": "tinnitus"})
    with pytest.raises(PlanError, match=r"gi_bleeding.yaml: considerations\.0\.supports\.6: symptom 'tinnitus' is not"):
        load_plan(write(tmp_path, raw))
    raw = raw_plan()
    raw["considerations"][0] = {"name": "pneumonia", "supports": [{"symptom": "melena"}]}
    with pytest.raises(PlanError, match=r"'pneumonia' is a disease value of the vocabulary; write it as 'disease'"):
        load_plan(write(tmp_path, raw))


def test_a_plan_lives_under_its_id_and_two_plans_may_not_claim_one_complaint(tmp_path):
    with pytest.raises(PlanError, match=r"cough.yaml: id: 'gi_bleeding' is not the file's name 'cough'"):
        load_plan(write(tmp_path, raw_plan(), "cough"))
    twin = raw_plan()
    twin["id"] = "gi_bleeding_again"
    (tmp_path / "cough.yaml").unlink()
    write(tmp_path, raw_plan())
    write(tmp_path, twin, "gi_bleeding_again")
    with pytest.raises(PlanError, match=r"same priority and both trigger on 'melena'"):
        load_plans(tmp_path)


# --------------------------------------------------------------------------- choosing a plan


def chosen(plans, st: dict, complaint: list[str] | None = None, flags: tuple[str, ...] = ()) -> str | None:
    plan = choose_plan(st, plans, complaint, list(flags))
    return plan.id if plan else None


def test_a_flag_the_new_complaint_s_plan_does_not_cover_goes_back_to_the_opening_plan(plans):
    # hives and a swollen tongue (anaphylaxis raised, the rash plan screens it), breathlessness among the screen's
    # answers, then light-headedness at "anything else?": the dizziness plan does not screen anaphylaxis, and of the
    # plans that do, the opening complaint's comes first (not the breathlessness plan, whose PE screen would follow)
    st = state(("urticaria", None), ("angioedema", None), ("dyspnea", None), ("presyncope", None))
    assert chosen(plans, st, ["urticaria", "angioedema", "presyncope"], ("anaphylaxis",)) == "rash"
    assert chosen(plans, st, ["presyncope"], ("anaphylaxis",)) == "breathlessness"  # no rash complaint: by priority


def test_the_chief_complaint_picks_its_plan(plans):
    assert chosen(plans, state(("melena", None)), ["melena"]) == "gi_bleeding"
    assert chosen(plans, state(("black or tarry stools", None)), ["black or tarry stools"]) == "gi_bleeding"
    assert chosen(plans, state(("pain", ["lower back"])), ["pain"]) == "back_pain"
    assert chosen(plans, state(("pain", ["back"])), ["pain"]) == "back_pain"
    assert chosen(plans, state(("chest pain", None)), ["chest pain"]) == "chest_pain"
    assert chosen(plans, state(("pain", ["chest"])), ["pain"]) == "chest_pain"  # a located pain is its place's pain
    assert chosen(plans, state(("pain", ["abdomen"])), ["pain"]) == "abdominal_pain"
    assert chosen(plans, state(("pain", ["knee(L)"])), ["pain"]) == "joint_pain"
    assert chosen(plans, state(("syncope", None)), ["syncope"]) == "syncope_dizziness"
    assert chosen(plans, state(("low mood", None)), ["low mood"]) == "low_mood_anxiety"


def test_the_higher_priority_complaint_wins_and_the_earliest_stands_in_for_a_missing_complaint(plans):
    both = state(("coughing", None), ("dyspnea", None))
    assert chosen(plans, both, ["coughing", "dyspnea"]) == "breathlessness"
    assert chosen(plans, state(("fatigue", None), ("chest pain", None)), ["fatigue", "chest pain"]) == "chest_pain"
    later = state(("hair loss", None), ("coughing", None), ("chest pain", None))
    assert chosen(plans, later) == "cough"  # chest pain came later: an answer to the cough plan's questions


def test_a_new_main_problem_switches_the_plan(plans):
    st = state(("coughing", None), ("pain", ["lower back"]))
    assert chosen(plans, st, ["coughing"]) == "cough"
    assert chosen(plans, st, ["pain"]) == "back_pain"


def test_a_red_flag_moves_to_the_plan_that_screens_it(plans):
    st = state(("headache", None))
    assert chosen(plans, st, ["headache"], ("meningism",)) == "headache"  # screened: stays
    assert chosen(plans, st, ["headache"], ("syncope",)) == "syncope_dizziness"
    assert chosen(plans, state(("coughing", None)), ["coughing"], ("gastrointestinal_bleeding",)) == "gi_bleeding"
    # a flag raised by the plan's own question (chest pain asks about fainting, coughing blood) does not move it
    syncope = state(("chest pain", None), ("syncope", None))
    flags = ("chest_pain_with_syncope_or_palpitations", "syncope")
    assert chosen(plans, syncope, ["chest pain"], flags) == "chest_pain"
    blood = state(("chest pain", None), ("hemoptysis", None))
    assert chosen(plans, blood, ["chest pain"], ("hemoptysis",)) == "chest_pain"
    # no complaint with a plan, but a flag: the flag's plan
    assert chosen(plans, state(("hearing impairment", None)), None, ("suicidal_ideation",)) == "low_mood_anxiety"


def test_no_plan_falls_back_to_the_review_of_systems(plans):
    assert chosen(plans, {}) is None
    assert chosen(plans, state(("hair loss", None)), ["hair loss"]) is None
    assert chosen(plans, state(("pain", None)), ["pain"]) is None  # a pain nobody located says no complaint yet


def test_a_swollen_calf_and_a_painful_testicle_have_plans_of_their_own(plans):
    """A walkthrough's swollen calf after a flight had followed the back-pain plan, a boy's painful testicle the
    abdominal one; sciatica (pain in the back and down the leg) stays the back's, a swollen knee the joints'."""
    assert choose_plan(state(("swelling", ["left calf"]), ("pain", ["left calf"])), plans).id == "leg_pain_swelling"
    assert choose_plan(state(("pain", ["right shin"])), plans).id == "leg_pain_swelling"
    assert choose_plan(state(("pain", ["left testicle"]), ("vomiting", None)), plans).id == "scrotal_pain"
    assert choose_plan(state(("pain", ["back", "leg"])), plans).id == "back_pain"
    assert choose_plan(state(("swelling", ["knee"]), ("pain", ["knee"])), plans).id == "joint_pain"
