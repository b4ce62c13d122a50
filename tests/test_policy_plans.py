"""Issue 18: presentation plans drive the questionnaire policy. The chief complaint's first checks, then the plan's
red-flag screen (first question within 2 doctor turns of the complaint, all of it within 5), the rest of the
characterisation, the associated groups asked together, the risk factors, then the remaining sections; no plan: the
review of systems exactly as before. Real objects only: the shipped plans, config, tracker and template NLG."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from policy_driver import ctx_of, run_interview

from agent.core import cmas
from agent.core.ontology import find_item
from agent.core.tracker import update_state
from policies.plan_choice import choose_plan
from policies.presentations import DEFAULT_DIR, default_plans
from policies.questionnaire import (
    PAST_EPISODES,
    QuestionnaireConfigError,
    QuestionnairePolicy,
    history_topic,
    load_questionnaire_config,
)
from policies.questions import Question, answered, questions_of, to_actions
from policies.template_nlg import TemplateNLG

PLANS = default_plans()


@pytest.fixture(scope="module")
def base_config():
    return load_questionnaire_config()


@pytest.fixture(scope="module")
def with_plans(base_config) -> QuestionnairePolicy:
    return QuestionnairePolicy(dataclasses.replace(base_config, plans=PLANS))


@pytest.fixture(scope="module")
def without_plans(base_config) -> QuestionnairePolicy:
    return QuestionnairePolicy(dataclasses.replace(base_config, plans=None))


@pytest.fixture(scope="module")
def nlg() -> TemplateNLG:
    return TemplateNLG()


def denies(questions) -> dict:
    """A patient who says no to every screening question and tells onset and duration when asked."""
    slots: dict[str, list] = {}
    for q in questions:
        if q.base == "basic_information":
            slots.setdefault("basic_information", [{}])[0][q.value] = {"age": "58", "sex": "male"}[q.value]
        elif q.base in cmas.RECORD_SLOTS:
            slots[q.base] = [
                {
                    "travel": {"status": "not_traveled"},
                    "occupation": {"value": "teacher", "status": "true"},
                    "residence": {"value": "house", "status": "living"},
                }[q.base]
            ]
        elif q.screening:
            slots.setdefault(f"negative_{q.base}", []).append(
                {"value": q.value, **({"location": list(q.values)} if q.values else {})})
        elif q.base == "symptom" and q.check in ("onset", "duration"):
            slots.setdefault("positive_symptom", []).append({"value": q.value, q.check: "3 days"})
    return slots


def affirms(questions) -> dict:
    """A patient who says yes to every symptom screening question (raising red flags as it goes)."""
    slots: dict[str, list] = {}
    for q in questions:
        if q.base == "symptom" and q.screening:
            slots.setdefault("positive_symptom", []).append(
                {"value": q.value, **({"location": list(q.values)} if q.values else {})})
        elif q.base == "symptom" and q.check == "onset":
            slots.setdefault("positive_symptom", []).append({"value": q.value, "onset": "yesterday"})
    return slots or denies([q for q in questions if q.base != "symptom"])


def interview(policy, answer, first_state, nlg=None, max_turns=80):
    return run_interview(policy, answer, first_state, nlg, max_turns)


def complaint_of(plan) -> dict:
    t = plan.triggers[0]
    return {"positive_symptom": [{"value": t.value, **({"location": [t.location[0]]} if t.location else {})}]}


def key(q) -> str:
    return json.dumps([q.base, q.value, q.check, sorted(q.values)])


# --------------------------------------------------------------------------- the screen comes first and on time


@pytest.mark.parametrize("complaint, plan_id", [
    ({"value": "melena"}, "gi_bleeding"),
    ({"value": "chest pain"}, "chest_pain"),
    ({"value": "pain", "location": ["lower back"]}, "back_pain"),
])
def test_red_flag_screen_within_two_turns_and_whole_within_five(with_plans, nlg, complaint, plan_id):
    first = {"positive_symptom": [complaint]}
    opening = update_state({}, cmas.parse_nlu([{"intent": "inform", "slots": first}]))
    plan = choose_plan(opening, PLANS)
    assert plan is not None and plan.id == plan_id
    _, past, stages, texts = interview(with_plans, denies, first, nlg)
    # doctor turn 0 greets; the patient's reply names the complaint; doctor turns 1.. follow
    assert stages[1] == "hpi" and "onset" in [q.check for q in questions_of(past[1])]
    assert stages.index("red_flag_screen") <= 2
    screen = [with_plans._ask(opening, a) for s in plan.red_flag_screen for a in s.ask]
    wanted = {key(q) for q in screen if q is not None and not answered(opening, q, with_plans.vocab)}
    early = {key(q) for turn in past[1:6] for q in questions_of(turn)}
    assert wanted and wanted <= early, sorted(wanted - early)
    assert max(i for i, s in enumerate(stages) if s == "red_flag_screen") <= 5
    order = [s for i, s in enumerate(stages) if i == 0 or s != stages[i - 1]]
    # the rest of the characterisation after the screen, unless the first turn held all of it ("had this before?"
    # ending it)
    assert order[:5] in (["greeting", "hpi", "red_flag_screen", "hpi", "associated_symptoms"],
                         ["greeting", "hpi", "red_flag_screen", "associated_symptoms", "risk_factors"])
    assert order.index("risk_factors") > order.index("associated_symptoms")
    assert "review_of_systems" not in order and order[-2:] == ["wrap_up", "close"]
    assert all(t.strip() and "{" not in t for t in texts)


@pytest.mark.parametrize("plan_id", sorted(PLANS))
def test_every_plan_screens_on_time_groups_by_topic_and_never_repeats(with_plans, nlg, plan_id):
    plan = PLANS[plan_id]
    first = complaint_of(plan)
    opening = update_state({}, cmas.parse_nlu([{"intent": "inform", "slots": first}]))
    assert choose_plan(opening, PLANS) is plan
    _, past, stages, texts = interview(with_plans, denies, first, nlg)
    screen_turns = [i for i, s in enumerate(stages) if s == "red_flag_screen"]
    if plan.red_flag_screen:
        assert screen_turns and screen_turns[0] <= 2 and screen_turns[-1] <= 5, (plan_id, stages[:8])
    # a group's items, and the screening symptoms of its system that fill the room its last question leaves
    fillers = with_plans.config.systems
    # (a system's groups pack together, up to three items a turn, so a turn's items are one system's)
    groups = [{(a.base, a.value) for g in plan.associated if g.system == system for a in g.ask}
              | {(q.base, q.value) for q in fillers.get(system, ())}
              for system in {g.system for g in plan.associated}]
    for turn, stage in zip(past, stages, strict=True):
        qs = questions_of(turn)
        # an open "... or any other medicines?" ends its group's question, "had this before?" the complaint's last
        # questions: no item of their own; "if you do, how much?" asks about an item the turn names already
        assert len({(q.base, q.value) for q in qs if q.value.casefold() not in cmas.OPEN_VALUES
                    and q != PAST_EPISODES}) <= 3
        if stage in ("red_flag_screen", "risk_factors", "associated_symptoms") and all(q.screening for q in qs):
            # one topic a turn (the drug allergy joins the past conditions or the medicines)
            assert any(len({history_topic(q.base, q.value, with_) for q in qs}) == 1
                       for with_ in ("medical_history", "medication")), (plan_id, qs)
        if stage == "associated_symptoms" and all(q.screening for q in qs):
            assert any({(q.base, q.value) for q in qs} <= g for g in groups), (plan_id, qs)  # one group = one system
        if stage == "hpi":  # one symptom's attributes, the last of the complaint's with "had this before?"
            assert len({q.value for q in qs if q != PAST_EPISODES}) <= 1
            assert all(q.base == "symptom" or q == PAST_EPISODES for q in qs)
    asked = [key(q) for turn in past for q in questions_of(turn)]
    assert len(asked) == len(set(asked)), plan_id
    assert all(t.strip() and "{" not in t for t in texts)


@pytest.mark.parametrize("plan_id", sorted(PLANS))
def test_a_patient_who_says_yes_to_everything_is_never_asked_twice(with_plans, nlg, plan_id):
    """Positives raise red flags (which may move the plan) and get their decisive checks; nothing repeats."""
    _, past, stages, texts = interview(with_plans, affirms, complaint_of(PLANS[plan_id]), nlg)
    asked = [key(q) for turn in past for q in questions_of(turn)]
    assert len(asked) == len(set(asked)), plan_id
    assert stages[-1] == "close" and all(t.strip() for t in texts)


# --------------------------------------------------------------------------- every plan question renders


def test_every_question_of_every_plan_renders_through_the_template_nlg(with_plans, nlg):
    n = 0
    for plan in PLANS.values():
        qs = []
        for symptom in plan.characterise:
            qs += [[q] for q in with_plans._characterise(plan, {"value": symptom})]
        for s in plan.red_flag_screen:
            qs += [[with_plans._ask({}, a)] for a in s.ask]
        for g in plan.associated:
            qs.append([with_plans._ask({}, a) for a in g.ask])  # the group, asked together
            qs += [[dataclasses.replace(with_plans._ask({}, a), check=a.check, values=())] for a in g.ask if a.check]
        for a in plan.risk_factors:
            qs.append([with_plans._ask({}, a)])
            if a.check:
                qs.append([dataclasses.replace(with_plans._ask({}, a), check=a.check)])
        for group in qs:
            actions = to_actions(group)
            assert cmas.parse_actions(actions) == actions
            text = nlg.verbalize(actions, ctx_of({}, [[{"action": "nod_prompt_salutations"}]])).value
            assert text.strip() and "{" not in text and "_" not in text, (plan.id, group, text)
            n += 1
    assert n > 300


# --------------------------------------------------------------------------- no plan: today's behaviour


def test_a_complaint_no_plan_knows_gives_todays_interview(with_plans, without_plans):
    first = {"positive_symptom": [{"value": "anosmia", "onset": "a week ago"}]}
    opening = update_state({}, cmas.parse_nlu([{"intent": "inform", "slots": first}]))
    assert choose_plan(opening, PLANS) is None
    on = interview(with_plans, denies, first)
    off = interview(without_plans, denies, first)
    assert on[1] == off[1] and on[2] == off[2]
    assert "review_of_systems" in on[2] and "red_flag_screen" not in on[2]


def test_plans_off_is_todays_policy(without_plans):
    assert without_plans.config.plans is None and without_plans.plan_for(ctx_of(
        {"positive_symptom": [{"value": "melena"}]}, [[{"action": "nod_prompt_salutations"}]])) is None
    out = without_plans.next_actions(ctx_of({"positive_symptom": [{"value": "melena", "onset": "yesterday"}]},
                                            [[{"action": "nod_prompt_salutations"}]]))
    assert out.meta["stage"] == "hpi"


# --------------------------------------------------------------------------- the config switch


def test_config_plans_switch(tmp_path):
    cfg = tmp_path / "q.yaml"
    cfg.write_text("hpi: {checks: [onset]}\nplans: null\n")
    assert load_questionnaire_config(cfg).plans is None
    plans_dir = tmp_path / "plans"
    plans_dir.mkdir()
    (plans_dir / "gi_bleeding.yaml").write_text((DEFAULT_DIR / "gi_bleeding.yaml").read_text())
    cfg.write_text("hpi: {checks: [onset]}\nplans: plans\n")  # relative to the config file's directory
    loaded = load_questionnaire_config(cfg)
    assert list(loaded.plans) == ["gi_bleeding"] and loaded.plans_dir == plans_dir.resolve()
    cfg.write_text("hpi: {checks: [onset]}\nplans: nowhere\n")
    with pytest.raises(QuestionnaireConfigError, match="plans"):
        load_questionnaire_config(cfg)
    (plans_dir / "gi_bleeding.yaml").write_text("id: gi_bleeding\ntitle: x\n")
    cfg.write_text("hpi: {checks: [onset]}\nplans: plans\n")
    with pytest.raises(QuestionnaireConfigError, match="gi_bleeding.yaml"):
        load_questionnaire_config(cfg)
    cfg.write_text("hpi: {checks: [onset]}\nplan: plans\n")
    with pytest.raises(QuestionnaireConfigError, match="plan"):
        load_questionnaire_config(cfg)


def test_after_a_plan_only_the_general_history_groups_follow(with_plans, without_plans):
    """With a plan, the configured sections shrink to ``after_plan`` (a group a turn; a record's general questions
    join the plan's risk factors of that record); the review of systems keeps every section."""
    general = {(q.base, q.value) for g in with_plans.config.after_plan for q in g}
    sections = {(q.base, q.value) for sec in with_plans.config.sections for q in sec.ask}
    assert general < sections
    state, past, stages, _ = interview(with_plans, denies, {"positive_symptom": [{"value": "melena"}]})
    asked = {(q.base, q.value) for turn in past for q in questions_of(turn)}
    # each general question asked, or answered by what the plan asked ("any other conditions?" after its own)
    assert all(x in asked or answered(state, Question(*x), with_plans.vocab) for x in general)
    plan_asks = {(a.base, a.value) for a in PLANS["gi_bleeding"].risk_factors} | {(PAST_EPISODES.base,
                                                                                  PAST_EPISODES.value)}
    plan_asks |= {(q.base, q.value) for q in with_plans.config.after_plan_fillers}  # where a question has room
    assert not (sections - general) & asked - plan_asks
    assert stages.count("general_history") <= len(with_plans.config.after_plan)
    _, past, _, _ = interview(without_plans, denies, {"positive_symptom": [{"value": "melena"}]})
    assert sections <= {(q.base, q.value) for turn in past for q in questions_of(turn)}


@pytest.mark.parametrize("after, message", [
    ("after_plan: [[{habit: skydiving}]]", "after_plan.0.0"),
    ("after_plan_fillers: [{habit: skydiving}]", "after_plan_fillers.0"),
    ("greeting_asks: [{basic_informaton: age}]", "greeting_asks.0"),
    ("hpi: {checks: [onset], scored: [pain, stomach wobbles]}", "hpi.scored.1"),
    ("hpi: {checks: [onset], episodic: pain}", "hpi.episodic"),
    ("sections:\n  habits:\n    ask: [{habit: smoking}]\n    followup: {habit: [frequency]}\n"
     "    followup_skip: {'habit: skydiving': [frequency]}", "followup_skip"),
    ("after_plan: [[{habit: smoking}, {habit: alcohol abuse}, {travel: other}, {occupation: other}]]", "groups"),
    ("after_plan: {habit: smoking}", "groups"),
])
def test_a_bad_after_plan_fails_with_its_key(tmp_path, after, message):
    cfg = tmp_path / "q.yaml"
    cfg.write_text("hpi: {checks: [onset]}\nsections:\n  habits:\n    ask: [{habit: smoking}, {habit: alcohol abuse}]\n"
                   "  social:\n    ask: [{travel: other}, {occupation: other}]\n" + after + "\n")
    with pytest.raises(QuestionnaireConfigError, match=message):
        load_questionnaire_config(cfg)


def test_a_no_to_a_located_screen_does_not_erase_the_complaint(with_plans):
    """A located screen question is asked of a patient who has that symptom elsewhere ("does the pain reach your
    groin?" of a back pain), and a "no" denies that place only: the tracker keeps it beside the positive item."""
    state = {"positive_symptom": [{"value": "pain", "location": ["lower back"], "onset": "3 days ago"}]}
    ctx = ctx_of(state, [[{"action": "nod_prompt_salutations"}]])
    plan = with_plans.plan_for(ctx)
    located = [
        c.question for c in with_plans.open_questions(ctx, plan) if c.question.value == "pain" and c.question.values
    ]
    assert plan.id == "back_pain" and located
    q = located[0]
    after = update_state(state, [{"intent": "inform", "slots": {"negative_symptom": [
        {"value": "pain", "location": list(q.values)}]}}])
    assert find_item(after, "symptom", "pain", with_plans.vocab) == ("positive", state["positive_symptom"][0])
    assert after["negative_symptom"] == [{"value": "pain", "location": list(q.values)}]


def test_the_shipped_config_turns_the_plans_on():
    cfg = load_questionnaire_config()
    assert cfg.plans is not None and set(cfg.plans) == set(PLANS) and cfg.plans_dir == DEFAULT_DIR.resolve()


def test_with_plans_never_asks_what_the_gold_states_answer_nor_what_gold_doctors_asked(with_plans):
    from agent.core.data import load_dialogues

    checked = 0
    for d in load_dialogues():
        state, past = {}, []
        for u in d.utterances:
            if u.speaker == "patient":
                state = u.dialog_state or state
                continue
            if past:
                qs = questions_of(with_plans.next_actions(ctx_of(state, past)).value)
                assert len(qs) <= 3
                earlier = {key(p) for turn in past for p in questions_of(turn)}
                for q in qs:
                    assert not answered(state, q, with_plans.vocab), (d.dialog_id, u.uttr_id, q)
                    assert key(q) not in earlier, (d.dialog_id, u.uttr_id, q)
                checked += 1
            past.append(u.actions)
    assert checked == 104


# --------------------------------------------------------------------------- a problem named later


def test_a_problem_named_later_gets_its_screen_and_the_opening_review_goes_on(with_plans):
    """A patient who opened with low mood and mentions headaches later: the headache's red-flag screen comes first
    (its plan is followed now), then the opening plan's associated groups and risk factors, never the headache
    plan's own review (a second full history)."""
    from agent.core.protocol import TurnContext

    state = {"positive_symptom": [{"value": "low mood", "onset": "two months ago"}, {"value": "headache"}]}
    ctx = TurnContext(state=state, past_actions=[[{"action": "nod_prompt_salutations"}]])
    plan = with_plans.plan_for(ctx)
    assert plan is not None and plan.id == "headache"
    assert with_plans.opening_plan(ctx).id == "low_mood_anxiety"
    cands = list(with_plans.open_questions(ctx, plan))
    screen = {(a.base, a.value) for s in PLANS["headache"].red_flag_screen for a in s.ask}
    assert (cands[0].stage, (cands[0].question.base, cands[0].question.value)) in {
        ("hpi", ("symptom", "headache")), *(("red_flag_screen", k) for k in screen)}
    review = {(c.question.base, c.question.value) for c in cands if c.stage in ("associated_symptoms", "risk_factors")}
    opening = {(a.base, a.value) for g in PLANS["low_mood_anxiety"].associated for a in g.ask}
    opening |= {(a.base, a.value) for a in PLANS["low_mood_anxiety"].risk_factors}
    headache_only = {(a.base, a.value) for g in PLANS["headache"].associated for a in g.ask} - opening - screen
    assert review & opening and not review & headache_only


def test_a_place_with_its_side_answers_the_screen_of_that_place(with_plans):
    """A boy with a pain in the left testicle is not asked "any pain in your testicles?"; a pain in the chest reaching
    the left arm answers "does it reach your arm?", and not "any pain in your abdomen?"."""
    vocab = with_plans.vocab
    boy = {"positive_symptom": [{"value": "pain", "location": ["left testicle"]}]}
    assert answered(boy, Question("symptom", "pain", "location", ("testicles",)), vocab)
    chest = {"positive_symptom": [{"value": "pain", "location": ["chest", "left arm"]}]}
    assert answered(chest, Question("symptom", "pain", "location", ("upper extremity",)), vocab)
    assert not answered(chest, Question("symptom", "pain", "location", ("abdomen",)), vocab)


@pytest.mark.parametrize("complaint, screened", [
    ({"value": "facial palsy", "location": ["right side"]}, False),  # a face's weakness
    ({"value": "weak limbs", "location": ["left arm"]}, False),
    ({"value": "weak limbs", "location": ["left leg"]}, True),
    ({"value": "paresthesia", "location": ["foot"]}, True),
])
def test_a_screen_is_asked_only_for_the_complaints_it_is_for(with_plans, nlg, complaint, screened):
    """The weakness plan's cauda equina screen (``when``) is for the legs and the back: a face's or an arm's weakness
    is not asked about saddle numbness, and the clinician's summary says the screen was not applicable."""
    from policies.summary import screen_result

    first = {"positive_symptom": [complaint]}
    state, past, _, _ = interview(with_plans, denies, first, nlg)
    assert choose_plan(update_state({}, cmas.parse_nlu([{"intent": "inform", "slots": first}])), PLANS).id == (
        "weakness_numbness")
    asked = {q.value for turn in past for q in questions_of(turn)}
    assert ("saddle anaesthesia" in asked) is screened
    result = {r["rule"]: r["result"] for r in screen_result([PLANS["weakness_numbness"]], state, [],
                                                             with_plans.vocab)}
    assert (result["cauda_equina"] == "not applicable") is not screened


@pytest.mark.parametrize("complaint, joins", [
    ({"value": "chest pain", "onset": "an hour ago"}, "medication"),  # one medicine: room beside it
    ({"value": "low mood", "onset": "a month ago"}, "medication"),  # four medicines: room beside the fourth
    ({"value": "pain", "location": ["abdomen"], "onset": "yesterday"}, "medical_history"),  # three: no room
])
def test_medicines_are_followed_up_together_and_the_allergy_fills_a_question(with_plans, nlg, complaint, joins):
    """The drug allergy joins the last question of the medicines where it has room, else that of the past conditions
    (never a turn of its own when either has room); what four medicines the patient takes are for is asked three at a
    time ("What do you take the metformin, the statin and the warfarin for, and have they helped?"), not a turn a
    medicine."""
    from test_plan_wording import problems

    taken = ["metformin", "statin", "warfarin", "omeprazole"]

    def answer(questions):
        slots = denies([q for q in questions if not (q.base == "medication" and q.screening)])
        if any(q.base == "medication" and q.screening for q in questions):
            slots["positive_medication"] = [{"value": v} for v in taken]
        return slots

    _, past, _, texts = interview(with_plans, answer, {"positive_symptom": [complaint]}, nlg)
    turns = [(questions_of(turn), text) for turn, text in zip(past, texts, strict=True)]
    allergy = next((qs, text) for qs, text in turns if any(q.value == "drug allergy" for q in qs))
    assert {q.base for q in allergy[0]} == {joins, "medical_history"} and len(allergy[0]) > 1, allergy[1]
    assert len({q.value for q in allergy[0] if q.value.casefold() not in cmas.OPEN_VALUES}) <= 3
    follow = [(qs, text) for qs, text in turns if any(q.base == "medication" and q.check for q in qs)]
    assert len(follow) == 2, [t for _, t in follow]
    assert sorted(v for qs, _ in follow for v in {q.value for q in qs}) == sorted(taken)
    assert {len({q.value for q in qs}) for qs, _ in follow} == {3, 1}
    for qs, text in [allergy, *follow]:
        assert not problems(qs, to_actions(qs), text), text
    assert re.fullmatch(r"What do you take the [\w ]+, the [\w ]+ and the [\w ]+ for, and have they helped\?",
                        follow[0][1]), follow[0][1]


@pytest.mark.parametrize(("age", "asked"), [("71", False), ("58", False), ("29", True)])
def test_a_woman_past_the_childbearing_years_is_not_asked_whether_she_could_be_pregnant(with_plans, nlg, age, asked):
    """A blind walkthrough asked a 71-year-old with a temporal headache "Is there any chance you could be pregnant?".
    Pregnancy, missed periods and the pill are items of the childbearing years (``configs/sex_specific.yaml``
    ``childbearing``, FSRH: fertility assumed lost at 55): past them, by the stated age, they are not asked; and an
    ectopic screen's pregnancy question is then no part of her screen, which the summary does not count as unasked."""
    from policies.summary import screen_result

    first = {"positive_symptom": [{"value": "pain", "location": ["lower abdomen"], "onset": "yesterday"}],
             "basic_information": [{"age": age, "sex": "female"}]}
    state, past, _, texts = interview(with_plans, denies, first, nlg)
    values = {q.value for turn in past for q in questions_of(turn)}
    assert ("pregnancy" in values) is asked, values
    assert ("amenorrhea" in values) is asked, values
    assert any("pregnant" in t for t in texts) is asked
    plan = choose_plan(update_state({}, cmas.parse_nlu([{"intent": "inform", "slots": first}])), PLANS)
    unanswered = [u for r in screen_result([plan], state, [], with_plans.vocab) for u in r.get("unanswered", [])]
    assert "pregnancy" not in unanswered, unanswered


def _checks_asked(policy, state: dict) -> set[tuple[str, str]]:
    """(symptom, check) of every attribute question the interview may still ask from ``state``."""
    from agent.core.protocol import TurnContext

    ctx = TurnContext(state=state, past_actions=[[{"action": "nod_prompt_salutations"}]])
    return {(c.question.value, c.question.check) for c in with_plans_candidates(policy, ctx)
            if c.question.base == "symptom" and c.question.check}


def with_plans_candidates(policy, ctx):
    return list(policy.open_questions(ctx, policy.plan_for(ctx)))


def test_a_score_is_asked_of_pains_and_breathlessness_and_episodes_timed_only_where_they_come_and_go(with_plans):
    """hpi.scored / hpi.episodic hold for the plans' checks too: tiredness is not rated from 1 to 10 nor timed per
    episode (the fatigue plan names both), a pain is asked both."""
    tired = _checks_asked(with_plans, {"positive_symptom": [{"value": "fatigue"}]})
    assert ("fatigue", "onset") in tired and not {("fatigue", "severity"), ("fatigue", "duration")} & tired
    pain = _checks_asked(with_plans, {"positive_symptom": [{"value": "chest pain"}]})
    assert {("chest pain", "severity"), ("chest pain", "duration")} <= pain


def test_a_plan_group_with_room_is_filled_from_its_system_and_a_filler_never_takes_a_turn(with_plans, nlg):
    """The room a plan's associated question leaves is spent on its system's screening symptoms (config ``systems``);
    when the plan's items are all answered no filler is asked on its own."""
    from agent.core.protocol import TurnContext

    plan = PLANS["fatigue_weight_loss"]
    cardio = [a for g in plan.associated if g.system == "cardiovascular" for a in g.ask]
    state = {"positive_symptom": [{"value": "fatigue", "onset": "2 months ago"}]}
    ctx = TurnContext(state=state, past_actions=[[{"action": "nod_prompt_salutations"}]])
    group = [c.question for c in with_plans_candidates(with_plans, ctx) if c.group == "group:cardiovascular"]
    system = {q.value for q in with_plans.config.systems["cardiovascular"]}
    assert [q.value for q in group[:len(cardio)]] == [a.value for a in cardio]
    assert len(group) == 3 and {q.value for q in group[len(cardio):]} <= system
    answered_all = {**state, "negative_symptom": [{"value": a.value} for a in cardio]}
    ctx = TurnContext(state=answered_all, past_actions=[[{"action": "nod_prompt_salutations"}]])
    assert not [c for c in with_plans_candidates(with_plans, ctx) if c.group == "group:cardiovascular"]


def test_how_long_someone_has_drunk_is_not_asked_but_how_long_they_smoked_is(with_plans):
    """sections.habits.followup_skip: alcohol and caffeine get how much and how often; smoking also how long."""
    from agent.core.protocol import TurnContext

    state = {"positive_symptom": [{"value": "fatigue"}],
             "positive_habit": [{"value": "alcohol abuse"}, {"value": "smoking"}, {"value": "regular coffee tea"}]}
    ctx = TurnContext(state=state, past_actions=[[{"action": "nod_prompt_salutations"}]])
    asked = {(c.question.value, c.question.check) for c in with_plans.open_questions(ctx, None)
             if c.question.base == "habit" and c.question.check}
    assert ("smoking", "starting") in asked and ("alcohol abuse", "frequency") in asked
    assert not {("alcohol abuse", "starting"), ("regular coffee tea", "starting")} & asked


def test_a_problem_named_later_gets_the_short_history_and_constipation_no_meningism_screen(with_plans):
    """Constipation said at "anything else?" by a patient who opened with tiredness: its plan's screen for bleeding,
    not the meningitis or sepsis screens of vomiting, and of its characterisation only the secondary checks."""
    from agent.core.protocol import TurnContext

    state = {"positive_symptom": [{"value": "fatigue", "onset": "6 months ago"}, {"value": "constipation"}]}
    past = [[{"action": "nod_prompt_salutations"}], [{"action": "chit-chat"}]]
    ctx = TurnContext(state=state, past_actions=past)
    plan = with_plans.plan_for(ctx)
    assert plan is not None and plan.id == "vomiting_diarrhoea"
    cands = with_plans_candidates(with_plans, ctx)
    screened = {c.question.value for c in cands if c.stage == "red_flag_screen"}
    assert "melena" in screened and not {"neck stiffness", "photophobia", "oliguria"} & screened
    checks = [c.question.check for c in cands if c.question.value == "constipation" and c.question.check]
    assert checks and set(checks) <= set(with_plans.config.secondary_checks)


def test_how_much_is_asked_with_whether_and_never_without_it(with_plans, without_plans, nlg):
    """sections.habits.followup_with_ask: "Do you smoke, drink alcohol ...? And if you do, how much ...?" in one turn.
    A drinker is not asked the amount again a turn later, and the amount of an item whose "do you ...?" did not
    make the turn is never asked alone before it."""
    def drinks(questions):
        slots = denies([q for q in questions if q.base != "habit"])
        for q in questions:
            if q.base == "habit" and q.value == "alcohol abuse":
                slots.setdefault("positive_habit", []).append({"value": "alcohol abuse", "frequency": "a pint a week"})
            elif q.base == "habit" and q.check is None:
                slots.setdefault("negative_habit", []).append({"value": q.value})
        return slots

    for first in ({"positive_symptom": [{"value": "melena"}]}, {"positive_symptom": [{"value": "coughing"}]}):
        for policy in (with_plans, without_plans):
            state, past, _, texts = interview(policy, drinks, first, nlg)
            habit_turns = [(turn, text) for turn, text in zip(past, texts, strict=True)
                           if any(q.base == "habit" for q in questions_of(turn))]
            first_turn, text = habit_turns[0]
            qs = questions_of(first_turn)
            assert Question("habit", "alcohol abuse") in qs and Question("habit", "alcohol abuse", "frequency") in qs
            assert "drink alcohol" in text and "if you" in text.casefold() and "how much" in text, text
            for turn, _ in habit_turns:  # an amount only with its own "do you ...?"
                for q in questions_of(turn):
                    if q.check is not None:
                        assert Question(q.base, q.value) in questions_of(turn) or find_item(
                            state, q.base, q.value, policy.vocab), (q, questions_of(turn))
            amount = [t for t, _ in habit_turns if Question("habit", "alcohol abuse", "frequency") in questions_of(t)]
            assert len(amount) == 1


def test_a_status_check_keeps_the_question_whether_in_the_actions():
    qs = [Question("habit", "smoking"), Question("habit", "smoking", "frequency"), Question("habit", "cocaine")]
    actions = to_actions(qs)
    assert actions == [{"action": "inquire", "habit": [
        {"value": "smoking", "checks": [{"type": "status"}, {"type": "frequency"}]}, {"value": "cocaine"}]}]
    assert questions_of(cmas.parse_actions(actions)) == qs


def test_followup_with_ask_must_be_true_or_false(tmp_path):
    cfg = tmp_path / "q.yaml"
    cfg.write_text("hpi: {checks: [onset]}\nsections:\n  habits:\n    ask: [{habit: smoking}]\n"
                   "    followup: {habit: [frequency]}\n    followup_with_ask: sometimes\n")
    with pytest.raises(QuestionnaireConfigError, match="followup_with_ask"):
        load_questionnaire_config(cfg)


def test_rigors_answer_any_chills():
    """A patient shivering uncontrollably (rigors) has had chills: "any chills?" is not asked of her."""
    from agent.core.ontology import default_vocabulary

    vocab = default_vocabulary()
    assert answered({"positive_symptom": [{"value": "rigor"}]}, Question("symptom", "chills"), vocab)
    assert not answered({"positive_symptom": [{"value": "fever"}]}, Question("symptom", "chills"), vocab)


@pytest.mark.parametrize("plan_id", sorted(PLANS))
def test_a_system_filler_never_takes_a_turn_of_its_own(with_plans, plan_id):
    """The screening symptoms of a group's system fill the room its question leaves ("any palpitations, chest pain
    or fainting?"); a turn of the associated symptoms always asks an item of the plan's own groups."""
    plan = PLANS[plan_id]
    _, past, stages, _ = interview(with_plans, denies, complaint_of(plan))
    own = {(a.base, a.value) for g in plan.associated for a in g.ask}
    for turn, stage in zip(past, stages, strict=True):
        qs = [q for q in questions_of(turn) if q.screening]
        if stage == "associated_symptoms" and qs and len(qs) == len(questions_of(turn)):
            assert {(q.base, q.value) for q in qs} & own, (plan_id, qs)


def test_a_pain_in_the_right_side_is_the_flank_the_plan_asks_about(with_plans):
    """"Any pain in your side?" (the flank) is not asked of a patient who said her ache is in her right side."""
    state = {"positive_symptom": [{"value": "pain", "location": ["right side", "back"]}]}
    assert answered(state, Question("symptom", "pain", "location", ("flank",)), with_plans.vocab)
    assert not answered({"positive_symptom": [{"value": "pain", "location": ["chest"]}]},
                        Question("symptom", "pain", "location", ("flank",)), with_plans.vocab)
