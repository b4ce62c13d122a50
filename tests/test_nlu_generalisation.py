"""The four failure classes of issue 17, each in wording written for this test (not the issue's examples, not the
held-aside material), through the real graph and SQLite sessions on configs/default.yaml:

1. the chief complaint in plain words is understood (lexicon, HPO lay synonyms or the second stage);
2. a stated red flag is raised (a hedge never lowers self-harm; a located chest pain is chest pain);
3. no invented facts (a reply about something else answers nothing; a "No" answers only the current question);
4. owner and status (a relative's illness is family history, a relative who reports leaves the fact the
   patient's; "I can't ..." and a leading "No," do not negate the next clause; a hedge is not a negation).
"""

from __future__ import annotations

import re

import pytest
from graph_fixtures import default_store, talk

from agent.app.sessions import SessionStore
from agent.core import cmas
from agent.core.ontology import default_vocabulary
from eval.runs.generalisation import find_status


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with default_store(tmp_path_factory.mktemp("generalisation")) as s:
        yield s


def status_of(state: dict, slot: str, value: str) -> str | None:
    return find_status(state, slot, value, default_vocabulary())


# 1 ------------------------------------------------------------------ the chief complaint in plain words

@pytest.mark.parametrize(("said", "slot", "value"), [
    ("Since Sunday my motions have come out jet black and sticky.", "symptom", "melena"),
    ("My right arm went floppy and weak this morning.", "symptom", "weak limbs"),
    ("My palpitations: my heart keeps fluttering and missing beats.", "symptom", "palpitations"),
    ("The bottom of my back has been agony for days.", "symptom", "back pain"),
    ("I've dropped nearly a stone and I haven't been dieting.", "symptom", "unexplained weight loss"),
    ("I get up four or five times every night to pass water.", "symptom", "nocturia"),
    ("I'm on about six mugs of coffee a day.", "habit", "regular coffee tea"),
    ("I have ringing in both ears all the time.", "symptom", "tinnitus"),
    # medicines patients name by their brand (drug classes with their ATC code, configs/vocabulary/drug_classes.yaml)
    ("I've been chewing Rennies and taking Peptac for the heartburn.", "medication", "antacid"),
    ("I put Doublebase on my dry skin every day.", "medication", "emollient"),
    ("I keep a Nitrolingual spray for when my angina comes on.", "medication", "vasodilators"),
    ("I took some Otrivine for my blocked nose.", "medication", "nasal decongestant"),
    ("I need senna most nights to keep my bowels going.", "medication", "laxative"),
    ("The GP started me on Fultium for my bones last winter.", "medication", "vitamin d"),
    ("The only thing I take is vitamin D.", "medication", "vitamin d"),  # a letter ending the sentence is no initial
    ("My glands have been swollen since the cold started.", "symptom", "lymphadenopathy"),
    ("I squirt Flixonase up my nose every morning in the summer.", "medication", "nasal corticosteroid"),
    ("I've been ever so thirsty since the weekend.", "symptom", "polydipsia"),
    ("On top of that I've been so thirsty.", "symptom", "polydipsia"),
    ("There was some blood in the sick this morning.", "symptom", "hematemesis"),
    # everyday names of common complaints (NHS Health A-Z symptom pages' wording), said in other words
    ("The skin on my face is yellow and my daughter says my eyes look yellow too.", "symptom", "jaundice"),
    ("For a week now my pee's been dark, almost brown.", "symptom", "dark urine"),
    ("I've noticed my poo's pale, like clay coloured.", "symptom", "pale stool"),
    ("I've been trembling, my hands shake when I hold a cup.", "symptom", "tremor"),
    ("Clumps of my hair are coming out in the shower.", "symptom", "hair loss"),
    ("I've piled on weight since Christmas and I'm not eating more.", "symptom", "weight gain"),
    ("Even in summer I'm always freezing, everyone else is fine.", "symptom", "cold intolerance"),
    ("I'm up and down to the loo all day, it's driving me mad.", "symptom", "urinary frequency"),
    ("Bright light hurts when the headache is on.", "symptom", "photophobia"),
    ("She says she hears voices at night that nobody else hears.", "symptom", "hallucinations"),
    ("I've lost interest in football and the pub, nothing gives me a lift.", "symptom", "anhedonia"),
    # FAST, meningism and confusion as the NHS pages put them to patients
    ("Her smile's gone lopsided since lunchtime.", "symptom", "facial paralysis"),
    ("He won't let me bring his chin onto his chest, it's too sore.", "symptom", "neck stiffness"),
    ("Since this morning Dad's been talking gibberish.", "symptom", "confusion"),
    # a part that troubles its owner, in everyday idioms: a pain there
    ("My shoulder's been giving me gyp since I painted the ceiling.", "symptom", "pain"),
    ("Both hips have been playing up all winter.", "symptom", "pain"),
    # a seizure said as "a fit", weight lost said as an amount
    ("My husband went into a fit in the car park, his whole body jerking.", "symptom", "seizure"),
    ("I've shed over eight kilos this year and I'm not on a diet.", "symptom", "unexplained weight loss"),
])
def test_the_complaint_in_plain_words_is_understood(store, said, slot, value):
    state = talk(store, said).state().patient_state
    assert status_of(state, slot, value) == "positive", state


# 2 ------------------------------------------------------------------ a stated red flag is raised

@pytest.mark.parametrize(("said", "rule"), [
    pytest.param("Some nights I lie there thinking everyone would manage fine if I just wasn't around.",
                 "suicidal_ideation", marks=pytest.mark.xfail(strict=True, reason=(
                     "known limit: all-MiniLM-L6-v2 puts this paraphrase at cosine 0.34 from the nearest suicide "
                     "description; no phrase matches. Kept as a tracked miss, not tuned away"))),
    ("There's a pain right in my chest and I'm so breathless I can hardly walk.", "chest_pain_with_dyspnea"),
    ("I threw up this morning and it was full of dark red blood.", "gastrointestinal_bleeding"),
    ("My speech went funny and the left side of my face sagged for about ten minutes.", "stroke_signs"),
    # post-traumatic amnesia told by a relative (NICE NG232: amnesia after a head injury is an ED referral)
    ("My husband slipped on the ice and knocked his head, and since then he keeps asking me the same questions.",
     "head_injury"),
])
def test_a_stated_red_flag_is_raised(store, said, rule):
    flags = {f["id"]: f["level"] for f in talk(store, said).state().red_flags}
    assert rule in flags, flags


def test_a_hedge_never_lowers_self_harm(store):
    flags = {
        f["id"]: f["level"]
        for f in talk(store, "I guess sometimes I feel like I might cut myself again.").state().red_flags
    }
    assert flags.get("self_harm") == "emergency", flags


def test_a_hedged_or_unsure_disclosure_is_recorded_as_had(nlu_for_state):
    """Failure class 2 in the state, from a blind walkthrough: "I don't know... sometimes I think everyone'd be better
    off without me", to the screen's question, left "unsure: suicidal ideation" in the note of a patient with a plan.
    A hedge or an unsure reply never makes a disclosure of suicide, self-harm or harm to others unknown (NICE NG225);
    a denial still denies."""
    nlu = nlu_for_state
    asked = [{"action": "inquire", "symptom": [{"value": "suicidal ideation"}, {"value": "self-harm"}]}]
    doctor = "Have you had any thoughts of ending your life, or of harming yourself?"
    one = [{"action": "inquire", "symptom": [{"value": "suicidal ideation"}]}]
    hedged = "Um, I'm not sure... maybe a bit, some nights I think they'd cope fine without me."
    for reply, question in ((hedged, asked), ("I'm not sure, maybe.", one)):
        slots = nlu.frames(reply, question, {}, doctor)[0].get("slots") or {}
        assert "suicidal ideation" in {it["value"] for it in slots.get("positive_symptom") or []}, (reply, slots)
        assert not slots.get("unknown_symptom"), (reply, slots)
    slots = nlu.frames("No, never, nothing like that.", asked, {}, doctor)[0].get("slots") or {}
    assert {it["value"] for it in slots.get("negative_symptom") or []} >= {"suicidal ideation", "self-harm"}, slots


@pytest.fixture(scope="module")
def nlu_for_state():
    from policies.nlu.clinical import ClinicalNLU

    return ClinicalNLU()


def test_wishing_oneself_absent_is_suicidal_ideation_and_its_denial_is_not(store):
    """The C-SSRS "wish to be dead" said as a counterfactual ("things would be simpler if I weren't around"): passive
    suicidal ideation, raised; denied, nothing."""
    flags = {f["id"] for f in talk(store, "Lately I catch myself thinking things would be simpler if I weren't "
                                          "around.").state().red_flags}
    assert "suicidal_ideation" in flags, flags
    flags = {f["id"] for f in talk(store, "I've had a cough for a week.",
                                   "I've never once thought it would be better if I was gone.").state().red_flags}
    assert "suicidal_ideation" not in flags, flags


def test_a_denied_red_flag_is_not_raised(store):
    session = talk(store, "I've had a cough for a week. No blood in it, and I've never fainted.")
    assert {f["id"] for f in session.state().red_flags} & {"hemoptysis", "syncope"} == set()


# 3 ------------------------------------------------------------------ no invented facts

def _answer_to(store: SessionStore, opener: str, reply: str):
    """The doctor's question after ``opener`` and the state after the patient's ``reply`` to it."""
    session = talk(store, opener)
    st = session.state()
    asked = [(b, it["value"]) for act in st.turns[-1].actions or [] if act.get("action") == "inquire"
             for b, items in act.items() if b in cmas.SLOTS for it in items or []]
    session.send(reply)
    return asked, st.patient_state, session.state().patient_state


def test_a_reply_about_something_else_answers_nothing(store):
    asked, before, after = _answer_to(store, "I've had a sore throat for three days.",
                                      "My elbow has been clicking on and off since I fell off my bike.")
    for base, value in asked:
        if cmas.SLOTS[base].medical and status_of(before, base, value) is None:
            assert status_of(after, base, value) is None, (base, value, after)


def test_a_statement_about_a_habit_is_no_yes_to_the_asked_symptoms(store):
    """"I have a glass of wine with dinner" opens like a yes ("I have") but names a habit: it answers nothing asked."""
    asked, before, after = _answer_to(store, "I've had a sore throat for three days.",
                                      "I have a glass of wine with my dinner most evenings.")
    for base, value in asked:
        if cmas.SLOTS[base].medical and base != "habit" and status_of(before, base, value) is None:
            assert status_of(after, base, value) is None, (base, value, after)
    assert status_of(after, "habit", "alcohol abuse") == "positive", after


@pytest.mark.parametrize(("reply", "answers"), [
    ("I haven't told anyone about any of this, not even my partner.", False),
    ("I didn't want to bother anybody with it.", False),
    ("I haven't, no.", True),
    ("I haven't had anything like that.", True),
    ("I don't, not really.", True),
])
def test_an_answer_opener_followed_by_another_verb_answers_nothing(nlu_for_state, reply, answers):
    """"I haven't told anyone" opens like a no but says something else: the asked items stay unanswered; "I
    haven't, no" and "I haven't had anything like that" answer."""
    asked = [{"action": "inquire", "medical_history": [{"value": "suicidal ideation"}, {"value": "self-harm"}]}]
    doctor = "Have you had thoughts of ending your life in the past, or ever harmed yourself?"
    slots = nlu_for_state.frames(reply, asked, {"positive_symptom": [{"value": "low mood"}]}, doctor)[0].get(
        "slots") or {}
    denied = {it["value"] for it in slots.get("negative_medical_history") or []}
    assert (denied >= {"suicidal ideation", "self-harm"}) is answers, (reply, slots)


@pytest.mark.parametrize(("reply", "answers"), [
    ("No, there was no blood when I threw up.", False),
    ("No, no thirst at all.", True),
])
def test_a_no_followed_by_another_denied_thing_answers_only_that(nlu_for_state, reply, answers):
    """"No, there was no blood when I threw up" to "any passing more urine, great thirst or a stiff neck?" denies the
    blood; the asked items stay unanswered. "No, no thirst at all" repeats the question's word: it answers."""
    asked = [{"action": "inquire", "symptom": [{"value": "polyuria"}, {"value": "polydipsia"},
                                               {"value": "neck stiffness"}]}]
    doctor = "Have you had any increase in how much urine you pass, excessive thirst or neck stiffness?"
    slots = nlu_for_state.frames(reply, asked, {"positive_symptom": [{"value": "vomiting"}]}, doctor)[0].get(
        "slots") or {}
    denied = {it["value"] for it in slots.get("negative_symptom") or []}
    assert ("polyuria" in denied) is answers, (reply, slots)


def test_a_no_answers_only_the_current_question(store):
    session = talk(store, "I've been coughing for two weeks.")
    earlier = {(b, it["value"]) for t in session.state().turns if t.speaker == "doctor"
               for act in t.actions or [] for b, items in act.items() if b in cmas.SLOTS for it in items or []}
    session.send("I'm not sure, maybe.")
    last = {(b, it["value"]) for act in session.state().turns[-1].actions or []
            for b, items in act.items() if b in cmas.SLOTS for it in items or []}
    session.send("No.")
    st = session.state()
    just_asked = {(b, it["value"]) for act in st.turns[-3].actions or []
                  for b, items in act.items() if b in cmas.SLOTS for it in items or []}
    for base in cmas.SLOTS:
        for it in st.patient_state.get(f"negative_{base}") or []:
            assert (base, it["value"]) in just_asked, (base, it["value"], just_asked, earlier, last)


# 4 ------------------------------------------------------------------ owner and status

def test_a_relatives_illness_is_family_history(store):
    state = talk(store, "My dad has had heart trouble for years, and my sister had a stroke.").state().patient_state
    assert status_of(state, "family_history", "heart diseases") == "positive"
    assert status_of(state, "medical_history", "heart diseases") is None


def test_a_relative_who_reports_leaves_the_fact_the_patients(store):
    state = talk(store, "My husband keeps telling me I snore really loudly.").state().patient_state
    assert status_of(state, "symptom", "snoring") == "positive"


def test_an_inability_and_a_leading_no_do_not_negate_what_follows(store):
    state = talk(store, "I can't stop sneezing and I've gone off my food.").state().patient_state
    assert status_of(state, "symptom", "loss of appetite") == "positive", state
    state = talk(store, "No, but I do have diabetes.").state().patient_state
    assert status_of(state, "medical_history", "diabetes mellitus") == "positive", state


def test_a_pain_denied_in_one_place_leaves_the_pain_elsewhere(store):
    """"No pain in my back" denies a pain there, not the belly pain the patient came with: the denied pain keeps its
    place, and the complaint stays positive."""
    session = talk(store, "I've had a nasty ache low down in my belly since the weekend.",
                   "I haven't got any pain in my back though.")
    pains = [(status, it) for status, it in cmas.slot_items(session.state().patient_state, "symptom")
             if it.get("value") == "pain"]
    assert ("positive", "abdomen") in {(status, loc) for status, it in pains for loc in it.get("location") or []}, pains
    state = talk(store, "My chest has been wheezy for a week.", "There's no pain in my knees at all.").state()
    denied = [it for status, it in cmas.slot_items(state.patient_state, "symptom")
              if status == "negative" and it.get("value") == "pain"]
    assert denied and all(it.get("location") for it in denied), state.patient_state


def test_a_hedge_is_not_a_negation(store):
    state = talk(store, "I think I've been a bit more tired than usual.").state().patient_state
    assert status_of(state, "symptom", "fatigue") == "positive", state


def test_a_denial_ends_at_the_next_clause_about_the_patient(store):
    """A negation's scope stops at "and I" / "but I": medspaCy's overlap test kept a whole-sentence TERMINATE cue
    from cutting a windowed negation."""
    state = talk(store, "I've never smoked, and I drink a couple of beers at the weekend.").state().patient_state
    assert status_of(state, "habit", "smoking") == "negative", state
    assert status_of(state, "habit", "alcohol abuse") == "positive", state
    state = talk(store, "There's no temperature with it but I keep coughing.").state().patient_state
    assert status_of(state, "symptom", "fever") == "negative", state
    assert status_of(state, "symptom", "coughing") == "positive", state


def test_a_guardian_speaking_for_the_patient_is_read_as_the_patient(store):
    """MediTOD's guide: a guardian's answers are labelled from the patient's perspective. An opening statement about
    a relative's present problem is the patient's; a family history said first stays the relatives'."""
    session = talk(
        store, "My boy's been throwing up all night and he's got a rash that doesn't fade when I press a glass on it."
    )
    state, flags = session.state().patient_state, session.state().red_flags
    assert status_of(state, "symptom", "vomiting") == "positive", state
    assert status_of(state, "family_history", "vomiting") is None, state
    assert (state.get("basic_information") or [{}])[0].get("sex") == "male", state  # the guide: "my son" is male
    assert flags and all("guardian" in e.get("told_by", "") for f in flags for e in f["evidence"] if "told_by" in e)
    assert any(e.get("told_by") for f in flags for e in f["evidence"]), flags
    state = talk(store, "My mother has had diabetes for years and my brother had a heart attack.").state().patient_state
    assert status_of(state, "family_history", "diabetes mellitus") == "positive", state
    assert status_of(state, "medical_history", "diabetes mellitus") is None, state
    session = talk(store, "My uncle had a stroke.")  # a relative's illness said first: family history, no flag
    assert status_of(session.state().patient_state, "medical_history", "stroke") is None
    assert session.state().red_flags == []


def test_a_febrile_child_who_is_floppy_raises_sepsis(store):
    """NICE NG143/NG51: a feverish child who is floppy, hard to wake or not responding has a red feature. Told by a
    parent who puts words between "my" and the child ("my little boy", "my 10-month-old son"), the report is the
    patient's own: the child's fever and drowsiness, not the parent's family history."""
    session = talk(store, "My baby son is ten months old and he's been burning up since this morning, he's gone all "
                          "limp and sleepy and he won't take his bottle.")
    state, flags = session.state().patient_state, {f["id"]: f for f in session.state().red_flags}
    assert status_of(state, "symptom", "fever") == "positive", state
    assert "sepsis" in flags, flags
    assert status_of(state, "family_history", "fever") is None, state


def test_a_guardian_who_introduces_the_patient_is_asked_about_the_patient(store):
    """Failure class 4 (wrong owner), from a blind walkthrough: "Hi, I'm calling about my mum, she's ..." was read as
    the caller's own words, and the daughter was then asked "Have you had any fainting spells?" and about her own
    sexual history. The introduction is read through, the report is the patient's, and the questions about the
    patient are put in the third person to the person who is there."""
    session = talk(store, "Hello, I'm phoning about my dad, he's 79 and since last night he's been really muddled.",
                   "It's there all the time.")
    st = session.state()
    assert "confusion" in {it["value"] for it in st.patient_state.get("positive_symptom") or []}, st.patient_state
    asked = [t.text for t in st.turns if t.speaker == "doctor"][-1]
    question = asked.split("emergency department.")[-1]  # the safety message speaks to the caller
    assert re.search(r"\b(?:he|his|him)\b", question), asked
    assert not re.search(r"\b(?:you|your|yourself)\b", _SPEAKER.sub("", question), re.I), asked


_SPEAKER = re.compile(r"\b(?:thank you|(?:could|can|would) you (?:tell|describe|say|rate)|do you (?:know|think))\b",
                      re.I)


def test_a_disclosed_suicide_plan_is_assessed_and_not_asked_again(store):
    """NICE NG225: a disclosure is taken as had and assessed. The flag the screen raised from the patient's words puts
    the suicidal ideation in the state (the NLU leaves such sentences to the screen), so the interview does not ask
    whether the patient has what they just said, and asks about plans, intent and what keeps them safe. An unsure
    reply ("maybe next week, ...") to a question listing self-harm and harm to others is a hint of the self-directed
    item only (recall first): no thoughts of harming others, and no harm-to-others emergency, are invented."""
    session = talk(store, "Everything's felt pointless since my divorce in the spring.",
                   "Lately I keep thinking I'd be better off dead, and I've looked up how many of my sleeping pills "
                   "it would take.")
    st = session.state()
    assert status_of(st.patient_state, "symptom", "suicidal ideation") == "positive", st.patient_state
    assert "suicidal_ideation" in {f["id"] for f in st.red_flags}
    doctor = []
    for reply in ("Maybe next week, after the kids go back to their dad's.", "I haven't really told anyone.",
                  "I'm not sure."):
        doctor.append(session.send(reply).text)
    after = [d.lower() for d in [st.turns[-1].text, *doctor]]
    assert not any("have you had any thoughts of harming yourself or ending your life" in d for d in after), after
    # the lethal dose looked up is a preparation told (C-SSRS): recorded in the patient's words, so the question about
    # plans and preparations is not put; intent and what keeps them safe still are
    item = next(it for status, it in cmas.slot_items(session.state().patient_state, "symptom")
                if status == "positive" and it.get("value") == "suicidal ideation")
    assert any("pills" in c for c in item.get("positive_characteristics") or []), item
    assert not any("made any plans or preparations" in d for d in after), after
    assert any("act on them" in d for d in after), after
    state = session.state().patient_state
    assert status_of(state, "symptom", "homicidal ideation") != "positive", state
    assert "harm_to_others" not in {f["id"] for f in session.state().red_flags}


def test_preparations_told_are_recorded_and_not_asked_again(store):
    """Preparations the patient tells (C-SSRS preparatory behaviour: pills put aside) answer the risk assessment's
    question about plans and preparations: the patient's words are recorded as the suicidal ideation's
    characteristics and the question is not put to them."""
    session = talk(store, "I've felt empty and hopeless since the summer, I can't enjoy anything.",
                   "To be honest I've been stockpiling my painkillers, there's a bag of them under the bed.")
    st = session.state()
    item = next((it for status, it in cmas.slot_items(st.patient_state, "symptom")
                 if status == "positive" and it.get("value") == "suicidal ideation"), None)
    assert item is not None and any("painkillers" in c for c in item.get("positive_characteristics") or []), item
    doctor = [st.turns[-1].text] + [session.send(r).text for r in ("I don't know.", "Not really, no.")]
    assert not any("made any plans or preparations" in d for d in doctor), doctor


def test_a_relative_named_in_a_reply_owns_the_asked_illness_and_a_guardian_keeps_their_own(store, nlu_for_state):
    """Wrong owner, in answers: "Not me, but my brother did" to "have you ever had a stroke?" is family history, and
    "Yes, my uncle did" to a list of symptoms affirms none of them. A guardian's own illness ("I'm asthmatic myself")
    is not the patient's; the relative they speak for is the patient."""
    from policies.nlu.doctor_reader import default_reader

    reader = default_reader()
    doctor = "Have you ever had a stroke?"
    s = nlu_for_state.frames("Not me, but my brother did a few years back.", reader.read(doctor, []), {}, doctor)
    slots = s[0].get("slots") or {}
    assert {it["value"]: it.get("relation") for it in slots.get("positive_family_history") or []} == {
        "stroke": "brother"}, slots
    assert not slots.get("positive_medical_history"), slots
    doctor = "Have you had any neck stiffness, sensitivity to light or a rash?"
    s = nlu_for_state.frames("Yes, my uncle did, a long time ago.", reader.read(doctor, []), {}, doctor)
    assert not (s[0].get("slots") or {}).get("positive_symptom"), s
    session = talk(store, "I'm ringing about my grandad, he's been really drowsy and hot since this morning.",
                   "I'm asthmatic myself, but he's never had any chest trouble.")
    assert status_of(session.state().patient_state, "medical_history", "asthma") is None, session.state().patient_state


@pytest.mark.parametrize(("said", "denied", "had"), [
    ("I didn't eat anything yesterday and kept throwing up all night.", None, ("symptom", "vomiting")),
    ("I don't smoke and have been coughing up green stuff.", ("habit", "smoking"), ("symptom", "coughing")),
    ("I've not had a temperature and am getting these awful night sweats.", ("symptom", "fever"),
     ("symptom", "night sweats")),
])
def test_a_denial_ends_where_a_new_predicate_begins(store, said, denied, had):
    """"and kept ...", "and have been ...", "and am getting ...": the patient goes on to say what does happen (the
    subject left out, as people do); the negation before it does not reach it."""
    state = talk(store, said).state().patient_state
    assert status_of(state, *had) == "positive", state
    if denied:
        assert status_of(state, *denied) == "negative", state


def test_a_list_of_denials_stays_denied(store):
    state = talk(store, "I haven't had any cough and haven't been wheezy either.").state().patient_state
    assert status_of(state, "symptom", "coughing") == "negative", state
    assert status_of(state, "symptom", "wheezing") == "negative", state


@pytest.mark.parametrize("said", [
    "Since this morning my grandad doesn't know where he is and keeps trying to get out of bed.",
    # (a known limit until the twenty-third session, which gave the lexicon's confusion the NICE CKS wording of not
    # recognising one's own people: "didn't recognise")
    "Out of nowhere today my wife didn't recognise our son and thought it was 1985.",
])
def test_lost_orientation_or_recognition_is_new_confusion_not_its_denial(store, said):
    """Not knowing where one is, or not recognising a close relative, is disorientation (NICE CKS Delirium): the
    complaint itself, not a denial and not the hedge "I don't know"."""
    flags = {f["id"] for f in talk(store, said).state().red_flags}
    assert "new_confusion" in flags, flags


@pytest.mark.parametrize(("said", "relative", "rule"), [
    ("Grandad's burning up since last night and he doesn't know what day it is, he thought I was his wife.",
     "grandad", "new_confusion"),  # his wife is no relative of the speaker's: no family history
    ("My 4 year old has been drinking loads and weeing all the time, and she's lost weight.", "child",
     "hyperglycaemia"),  # the age alone names the child
    ("My son's 16 and I've just discovered he's been cutting his arms.", "son", "self_harm"),  # the parent found out
    ("My husband's breathing is terrible, he's wheezing and can't talk in full sentences.", "husband",
     "severe_dyspnea"),  # "X's breathing is": the noun X owns
])
def test_a_guardians_report_is_the_patients_however_it_opens(store, said, relative, rule):
    """A relative speaking for the patient, who names the patient by an age ("my 4 year old"), says what they found
    out ("I've just discovered"), names someone else's relative ("his wife"), or what the patient has ("my husband's
    breathing is terrible"), is still read as the patient's report, and the report's red flag is raised."""
    from agent.core.clinical_text import proxy_subject

    assert proxy_subject(said) == relative, said
    assert rule in [f["id"] for f in talk(store, said).state().red_flags], said


def test_a_pregnancy_told_by_its_test_and_a_pain_placed_low_down_raise_the_ectopic_emergency(store):
    """A pregnancy said without the word (a positive test, in an utterance about a period) and a pain placed "low down"
    with no part named (the lower abdomen) are what the ectopic-pregnancy rule reads from the state (NICE NG126). Said
    of a part, "low down" is that part's."""
    st = talk(store, "Missed my last period and the test from the chemist came back positive. Now there's a nasty "
                     "pain low down on the right side.").state()
    assert status_of(st.patient_state, "medical_history", "pregnancy") == "positive", st.patient_state
    pain = next(it for status, it in cmas.slot_items(st.patient_state, "symptom") if it.get("value") == "pain")
    assert "lower abdomen" in pain.get("location", []), pain
    assert {f["id"]: f["level"] for f in st.red_flags}.get("ectopic_pregnancy") == "emergency", st.red_flags
    st = talk(store, "I tested positive for covid at the weekend and there's an ache low down in my back.").state()
    assert status_of(st.patient_state, "medical_history", "pregnancy") is None, st.patient_state
    pain = next(it for status, it in cmas.slot_items(st.patient_state, "symptom") if it.get("value") == "pain")
    assert pain.get("location") == ["back"], pain


def test_epilepsy_is_a_history_and_if_anything_ends_a_denial(store):
    """Wrong statuses: "no epilepsy" after a fit told denies the condition, not the fit the patient came with; "if
    anything" turns a denial to its opposite ("I haven't lost weight, if anything I've put on weight")."""
    session = talk(store, "My daughter had a fit at school an hour ago, all four limbs shaking.",
                   "She's not got epilepsy, this has never happened before.")
    state = session.state().patient_state
    assert status_of(state, "symptom", "seizure") == "positive", state
    assert status_of(state, "medical_history", "convulsion") == "negative", state
    said = "No, I haven't lost any weight, if anything I've put on weight this year."
    state = talk(store, said).state().patient_state
    assert status_of(state, "symptom", "weight gain") == "positive", state


def test_a_jaundiced_patient_is_warned_for_and_her_pale_stools_raise_no_bleed(store):
    """A walkthrough's painless jaundice: the itch had taken her into the rash plan, "stools gone pale, greyish" had
    raised the GI-bleeding emergency (0.75 from "my stools have turned black") and cola-coloured urine had been a
    haematuria. Jaundice is a cancer warning (NICE NG12 1.2.5) and an abdominal presentation; pale stools and dark
    urine are what they are; a hedge after a denial ("not really pain, maybe a dull ache") leaves the ache had."""
    session = talk(store, "I'm 72 and my husband says my face has gone a yellow colour, and my eyes are yellow too.",
                   "My poo's gone a pale putty colour and it floats, and my wee looks like cola.",
                   "Not really a pain, maybe a dull ache under my ribs now and then.")
    st = session.state()
    flags = {f["id"] for f in st.red_flags}
    assert "cancer_warning_signs" in flags and "gastrointestinal_bleeding" not in flags, st.red_flags
    for value in ("jaundice", "pale stool", "dark urine", "pain"):
        assert status_of(st.patient_state, "symptom", value) == "positive", (value, st.patient_state)
    assert status_of(st.patient_state, "symptom", "hematuria") is None, st.patient_state


def test_words_whose_sense_their_neighbours_decide(store):
    """Invented facts from a word's other sense: "faint" after a verb of feeling is near-fainting, not a blackout;
    "dribbling" said of urine is trouble passing it, not drooling; a spouse's illness is no family history (a
    passing one is a sick contact)."""
    state = talk(store, "I've gone all faint and woozy since lunch.").state().patient_state
    assert status_of(state, "symptom", "presyncope") == "positive", state
    assert status_of(state, "symptom", "syncope") is None, state
    state = talk(store, "When I wee it stings and it just dribbles out bit by bit.").state().patient_state
    assert status_of(state, "symptom", "sialorrhea") is None, state
    assert status_of(state, "symptom", "difficulty passing urine") == "positive", state
    session = talk(store, "I've had a cough for a week.", "My partner has asthma and he had flu last week.")
    state = session.state().patient_state
    assert status_of(state, "family_history", "asthma") is None, state
    assert status_of(state, "exposure", "sick person") == "positive", state


def test_a_condition_named_in_a_likeness_is_not_had(store):
    """Invented facts: "my stomach swells up as if I was pregnant" tells a swelling, not a pregnancy (which had been
    recorded and raised the ectopic-pregnancy emergency); "like with my asthma" names the patient's asthma still."""
    st = talk(store, "By the evening my stomach swells up as if I was pregnant, and it's been like that for months.")
    state = st.state().patient_state
    assert status_of(state, "medical_history", "pregnancy") is None, state
    assert status_of(state, "symptom", "abdominal distension") == "positive", state
    state = talk(store, "I get wheezy at night, like with my asthma when I was a kid.").state().patient_state
    assert status_of(state, "medical_history", "asthma") == "positive", state


def test_a_wish_not_to_wake_is_suicidal_ideation_not_sleep_trouble(store):
    """C-SSRS item 1 ("wish to be dead ... go to sleep and not wake up"), said as what would be easier: the state holds
    the suicidal ideation the screen raised, and not the insomnia its words are near by meaning."""
    session = talk(store, "Most evenings I feel it would be simpler all round if I never woke up again.")
    st = session.state()
    assert status_of(st.patient_state, "symptom", "suicidal ideation") == "positive", st.patient_state
    assert status_of(st.patient_state, "symptom", "insomnia") is None, st.patient_state
    assert {f["id"]: f["level"] for f in st.red_flags}.get("suicidal_ideation") == "emergency", st.red_flags


@pytest.mark.parametrize("said", [
    "My husband noticed the skin on my neck has a lump he didn't like.",
    "My wife says I snore and stop breathing at night.",
    "My dad has diabetes and my sister had a stroke last year.",
    "My daughter's fine, it's me who's got the cough.",
])
def test_a_relative_who_reports_on_me_or_a_family_history_is_no_guardian(said):
    from agent.core.clinical_text import proxy_subject

    assert proxy_subject(said) is None, said


@pytest.mark.parametrize(("said", "value", "rule"), [
    ("Bread keeps getting stuck on the way down, and it's worse than it was in the summer.", "dysphagia",
     "cancer_warning_signs"),
    ("Out of the blue my heart's going ten to the dozen and there's a tight pain across my chest.", "palpitations",
     "chest_pain_with_syncope_or_palpitations"),
])
def test_swallowing_and_a_racing_heart_in_everyday_words(store, said, value, rule):
    """Food that sticks on the way down is dysphagia, and a heart "going ten to the dozen" palpitations (NHS Health
    A-Z wording): read, they raise what they raise with the rest of the turn."""
    session = talk(store, said)
    assert status_of(session.state().patient_state, "symptom", value) == "positive", session.state().patient_state
    assert rule in [f["id"] for f in session.state().red_flags], said


# ------------------------------------------------------------------ from the twelfth session's walkthrough (GCA)

def test_an_echoed_question_is_no_answer_and_a_treated_condition_is_no_denial():
    """A blind walkthrough (a 71-year-old with a temporal headache): "Pregnant? I'm 71!" recorded a pregnancy and
    raised pre-eclampsia, and "my blood pressure is fine on it" (the ramipril) denied her hypertension. A short
    question said back is no statement (``clinical_text.without_echoes``); a verdict on treatment keeps the
    condition (the ConText cue "fine on it")."""
    from eval.runs.nlu_check import build_nlu

    nlu = build_nlu()[0]
    asked = [{"action": "inquire", "habit": [{"value": "smoking"}]}]
    frames = nlu.read("Smoking? Never in my life.", asked, {}, "Do you smoke?").frames
    slots = {k: [i["value"] for i in v] for f in frames for k, v in f.get("slots", {}).items()}
    assert "smoking" not in slots.get("positive_habit", []), frames
    assert "smoking" in slots.get("negative_habit", []), frames
    frames = nlu.read("Asthma? No, never had it. I'm 67.", [], {}, "Anything else?").frames
    assert not any("positive_medical_history" in f.get("slots", {}) for f in frames), frames
    for said, value in [("My cholesterol has been good since I started the statin.", "high cholesterol"),
                        ("His sugars are fine now with the insulin.", "diabetes mellitus")]:
        slots = {k: [i.get("value") for i in v] for f in nlu.read(said, [], {}, "").frames
                 for k, v in f["slots"].items()}
        assert value not in slots.get("negative_medical_history", []), (said, slots)


def test_a_weak_match_to_what_the_patient_denied_is_not_raised(store):
    """Said "my eyes aren't red or sore", then that the sight went misty: the misty sight is near the painful red
    eye's description (0.75 here), by meaning alone, and the denial already answers it (``safety.denied_before``): the
    flag is lowered to "possible" (recall first: a firm match is kept); the change of sight itself is still raised."""
    session = talk(store, "I've had a headache for a fortnight. My eyes aren't red or sore at all.",
                   "This morning the vision in my left eye went misty and grey for a few minutes.")
    flags = {f["id"]: f["level"] for f in session.state().red_flags}
    assert flags.get("sight_threatening_red_eye") in (None, "possible"), flags
    assert "sudden_visual_loss" in flags, flags
    session = talk(store, "This morning the vision in my left eye went misty and grey for a few minutes.")
    assert "sight_threatening_red_eye" in [f["id"] for f in session.state().red_flags]  # not denied: raised


@pytest.mark.parametrize(("said", "values"), [
    ("He's always thirsty and he's peeing all the time, even up in the night to pee.",
     {"polydipsia", "polyuria", "nocturia"}),
    ("I keeled... no, I was out cold on the bathroom floor for a minute.", {"syncope"}),
])
def test_thirst_night_weeing_and_being_out_cold_in_everyday_words(said, values):
    """NHS Health A-Z words for the symptoms of diabetes ("very thirsty", "peeing more than usual, particularly at
    night") and for a faint ("out cold"): each is its symptom (dev set 2's DKA and syncope stories had none)."""
    from eval.runs.nlu_check import build_nlu

    frames = build_nlu()[0].read(said, [], {}, "").frames
    found = {i["value"] for f in frames for i in f.get("slots", {}).get("positive_symptom", [])}
    assert values <= found, frames


def test_a_feverish_child_with_spots_that_stay_under_a_glass_and_gone_limp_raises_the_emergency(store):
    """A parent's report over three turns (NICE NG143 red features, NICE NG240's glass test), in words written for
    this test: the rash that stays under the glass and the floppiness are in the state, and the emergency is raised
    from the state, not only from one turn's words."""
    session = talk(store, "My son is two and he's been red hot since lunchtime, 39.8 under his arm.",
                   "Now there's a scatter of dark red spots on his ankles and they didn't fade under the glass.",
                   "And he's gone all floppy on the sofa, he won't even watch his programme.")
    state, flags = session.state().patient_state, {f["id"] for f in session.state().red_flags}
    assert status_of(state, "symptom", "non-blanching rash") == "positive", state
    assert status_of(state, "symptom", "hypotonia") == "positive", state
    assert {"meningism", "sepsis"} <= flags, flags


@pytest.mark.parametrize(("said", "rule"), [
    ("Sorry to trouble you, but my nan's face has dropped on one side and her words are all muddled.", "stroke_signs"),
    ("My flatmate's boiling hot and she keeps asking me what day it is over and over.", "fever_with_confusion"),
])
def test_a_report_for_someone_else_after_an_apology_or_by_a_flatmate_is_the_patients(store, said, rule):
    """A guardian may open with an apology ("sorry to trouble you, but") or be no relative at all (a flatmate, a
    friend): the report is still the patient's, and its red flag is raised."""
    flags = {f["id"] for f in talk(store, said).state().red_flags}
    assert rule in flags, flags


def test_a_guess_at_the_diagnosis_is_not_recorded_as_had(store):
    """"It's probably just a cold": the patient's guess is what the history tests, not a history (recorded unknown)."""
    state = talk(store, "It's probably just a cold but I've had a sore throat and a temperature for three days.")
    assert status_of(state.state().patient_state, "medical_history", "common cold") != "positive"
    assert status_of(state.state().patient_state, "symptom", "fever") == "positive"


@pytest.mark.parametrize("said", [
    "My girlfriend wound me up so much last night I could strangle her, only joking, we made up this morning.",
    "My period is a week late but I did a test and it came back negative, and there's no pain at all.",
])
def test_a_figure_of_speech_taken_back_and_a_negative_test_raise_nothing(store, said):
    """A threat taken back as it is said ("only joking") and a late period with a negative pregnancy test: no red
    flag (a figure of speech had raised harm to others, a negative test a possible ectopic pregnancy)."""
    assert talk(store, said).state().red_flags == []


def test_flashes_and_a_shadow_over_the_sight_raise_the_eye_emergencies(store):
    """NICE CKS Retinal detachment: new flashes or floaters are urgent, a shadow across the sight an emergency;
    floaters of many years are the patient's past and raise nothing."""
    session = talk(store, "Since Friday I've been seeing bright flickers off to the side of my left eye.",
                   "And this morning it's like a dark veil came down over the bottom of my vision in that eye.")
    flags = {f["id"]: f["level"] for f in session.state().red_flags}
    assert flags.get("retinal_detachment") == "urgent" and flags.get("sudden_visual_loss") == "emergency", flags
    session = talk(store, "I've had a few floaters in my right eye for years now, they never change.")
    assert session.state().red_flags == []


@pytest.mark.parametrize(("said", "rule"), [
    ("My daughter got an elbow to the head at netball, she was knocked out for about a minute and doesn't remember "
     "the game at all.", "head_injury"),
    ("Ever since I put my back out at the weekend I can't feel the loo roll when I wipe, and I've had an accident "
     "in my pants.", "cauda_equina"),
    ("My mum's halfway through chemo for her breast cancer and she's gone shivery, her temp is 38 point 4.",
     "neutropenic_sepsis"),
    ("My housemate's feverish and coming out with things that don't make any sense.", "fever_with_confusion"),
    ("This asthma attack is awful, I can only manage one or two words at a time.", "severe_dyspnea"),
])
def test_red_flags_told_by_what_happened(store, said, rule):
    """NICE NG232 (a blow, a knock-out, events forgotten), the NHS cauda equina page (the toilet paper not felt, an
    accident), NICE CG151 (anticancer treatment told by what it treats), NHS Confusion, BTS/SIGN asthma (a few words
    at a time): each raised, in words written for this test."""
    flags = {f["id"] for f in talk(store, said).state().red_flags}
    assert rule in flags, flags


@pytest.mark.parametrize("said", [
    "My period hasn't come this month, but the pregnancy test said not pregnant and there's no pain anywhere.",
    "Our son has a cold and a temperature of 38.2, and the little spots on his arm go pale when I roll a glass on "
    "them.",
])
def test_a_flag_near_only_by_meaning_is_set_aside_when_what_it_needs_was_denied(store, said):
    """A red flag the words raise only by meaning is set aside when the state denies what the rule cannot do without:
    an ectopic pregnancy without any pain, a meningococcal rash that blanches under the glass (NICE NG240)."""
    assert talk(store, said).state().red_flags == []


def test_a_hearing_lost_on_waking_told_by_what_cannot_be_heard_raises_its_flag(store):
    """The last walkthrough (`walk16b`): a hearing loss said as what cannot be heard with the ear, and a hiss "in that
    ear", were read as nothing; in other words here (NHS "Sudden hearing loss"). A bad telephone line is no loss."""
    session = talk(store, "Since I got up this morning I can hardly hear anything through my left ear, and there's "
                          "a low hum in that ear as well.")
    state = session.state().patient_state
    assert status_of(state, "symptom", "hearing impairment") == "positive", state
    assert status_of(state, "symptom", "tinnitus") == "positive", state
    assert "sudden_hearing_loss" in {f["id"] for f in session.state().red_flags}
    assert talk(store, "Sorry, I can't hear you very well, the line keeps cutting out.").state().red_flags == []


@pytest.mark.parametrize(("said", "rule"), [
    ("He cannae lift his right arm off the table and his speech has gone all thick since teatime.", "stroke_signs"),
    ("Ah've been coughin' up blood every morning since Thursday.", "hemoptysis"),
    ("A squeezing feeling in the middle of my chest started half an hour ago while I was sat reading.",
     "acute_coronary_syndrome"),
    ("My mum's left calf is a good bit fatter than the other one and she's been stuck in bed since her hip op.",
     "deep_vein_thrombosis"),
    ("My dad couldn't hold his fork in his left hand at dinner and his smile looked lopsided.", "stroke_signs"),
    ("I've a pain in my chest and I can't breathe right, since an hour.", "chest_pain_with_dyspnea"),
])
def test_red_flags_in_regional_spellings_and_plain_signs(store, said, rule):
    """Regional spellings read in standard English (``configs/vocabulary/dialect.yaml``: Scots "cannae", the dropped
    g of "coughin'"), a chest pain felt as cardiac pain is felt begun within the day (NICE CG95), a limb bigger than
    its fellow (Wells), a hand that will not grip (FAST), and "can't breathe right" (a verdict under a "can't" is no
    denial): each raised, in words written for this test."""
    flags = {f["id"] for f in talk(store, said).state().red_flags}
    assert rule in flags, flags


@pytest.mark.parametrize("said", [
    "For the last month I get a tight chest walking up the hill to work, and it goes after a couple of minutes' rest.",
    "My chest is tight and wheezy and I've been coughing all night, the usual with my asthma.",
    "My chest has been sore since a heavy day of lifting boxes at the warehouse, it hurts when I press on it.",
    "My shoulder is so stiff and painful after the fall that I can't lift my arm to brush my hair.",
])
def test_a_tight_chest_of_weeks_or_of_the_airways_and_a_painful_limb_raise_no_emergency(store, said):
    """Stable angina's pattern (weeks, relieved by rest: NICE CG95 1.3, the chest pain clinic), a tight chest with a
    wheeze and a cough (the airways'), "heavy" said of the lifting, and a limb that pain stops (at most "possible",
    for the clinician to judge): none is the cardiac or the stroke emergency."""
    flags = {f["id"]: f["level"] for f in talk(store, said).state().red_flags}
    assert "acute_coronary_syndrome" not in flags and flags.get("stroke_signs") in (None, "possible"), flags


def test_ear_complaints_their_side_and_a_no_that_names_something_else(store):
    """An earache in one word is a pain at the ear, a discharge word said of the ear is the ear's (not sputum), "that
    ear" keeps the side named before, and "No itchiness, no fever" to a question about other things answers none of
    them (a determiner "no", not the question's); the ear plan's screen follows."""
    session = talk(store, "I've had an earache in my right ear since Tuesday and yellow gunk is leaking out of it.",
                   "And the hearing is muffled in that ear too.")
    state = session.state().patient_state
    pain = next(it for status, it in cmas.slot_items(state, "symptom") if it.get("value") == "pain")
    assert pain.get("location") == ["right ear"], state
    assert status_of(state, "symptom", "ear discharge") == "positive", state
    assert status_of(state, "symptom", "colored/excess sputum") is None, state
    loss = next(it for status, it in cmas.slot_items(state, "symptom") if it.get("value") == "hearing impairment")
    assert loss.get("location") == ["right ear"], state


def test_a_reply_that_opens_no_with_a_thing_answers_only_that_thing():
    """"No dandruff" to "any fainting or fits?" denies neither (the object is not asked); "No fits" denies the fits
    alone; "No, not at all" denies what was asked."""
    from eval.runs.nlu_check import build_nlu

    nlu = build_nlu()[0]
    asked = [{"action": "inquire", "symptom": [{"value": "syncope"}, {"value": "seizure"}]}]
    doctor = "Have you had any fainting spells or fits?"

    def statuses(reply: str) -> dict[str, str]:
        frames = nlu.read(reply, asked, {"positive_symptom": [{"value": "headache"}]}, doctor).frames
        return {i["value"]: name.split("_")[0] for f in frames for name, items in f.get("slots", {}).items()
                if name.endswith("_symptom") for i in items}

    assert not {"syncope", "seizure"} & set(statuses("No dandruff, but my scalp itches.")), statuses
    assert statuses("No, not at all.") == {"syncope": "negative", "seizure": "negative"}
    assert statuses("No different from before.") != {}


@pytest.mark.parametrize(("said", "rule"), [
    ("The meter reads 27 and there are ketones in my wee on the stick, I keep being sick.", "hyperglycaemia"),
    ("Since Monday the sight in my right eye has completely disappeared.", "sudden_visual_loss"),
    ("Since teatime Herself can't squeeze a drop out and her tummy is rock hard.", "acute_urinary_retention"),
    ("I'm 71 and there's been some spotting from down below, and my periods stopped twenty years ago.",
     "cancer_warning_signs"),
    ("Out of the blue an hour ago my left bollock started killing me and I've been sick.", "testicular_torsion"),
    ("Our grandad's not himself today, he's all muddled and doesn't know what day it is.", "new_confusion"),
    ("A voice keeps ordering me to hurt the neighbours' kids.", "harm_to_others"),
    ("I'm 66, I had bowel cancer four years ago and now my low back aches every night in bed.",
     "back_pain_with_cancer_features"),
])
def test_red_flags_told_by_signs_slang_and_history(store, said, rule):
    """Ketones on a test strip (NICE NG17), a faculty said to have vanished, a retention told by the drop that will
    not come (Hiberno-English "Herself" for the speaker's wife), a bleed with the menopause past (NICE NG12 1.5.13),
    testicle slang, "not himself" (an idiom, no denial) in a family's report ("our grandad"), command hallucinations
    (NICE CG178), and a named past cancer as "a history of cancer" (NICE CKS Back pain): each raised."""
    flags = {f["id"] for f in talk(store, said).state().red_flags}
    assert rule in flags, flags


@pytest.mark.parametrize(("said", "absent"), [
    ("Back when I was a teenager I self-harmed for a while, but that was twenty years ago, I'm here about my knee.",
     "self_harm"),
    ("My brother-in-law drives me up the wall, I could wring his neck, but, you know, just a figure of speech.",
     "harm_to_others"),
    ("I cricked my neck at the gym and it's stiff turning to the left, no fever at all.", "meningism"),
    ("The spots on my son's chest went white when I rolled a glass over them, and he's eating fine.", "meningism"),
    ("My mum's in hospital with a chest infection and she's gone confused, but I'm here for myself, about a rash.",
     "new_confusion"),
    ("I'm 80 and I can't pass water at all since last night.", "cauda_equina"),
])
def test_a_past_episode_a_figure_of_speech_an_explained_sign_or_someone_elses_raises_no_emergency(store, said, absent):
    """A self-harm of twenty years ago is history (at most "possible", for the clinician to ask about), a threat taken
    back after "but, you know", a neck stiff from a strain, a rash that blanches under the glass, a relative's
    confusion from a speaker here for themselves, a retention with no back pain (acute retention's, not cauda
    equina's): none raises the emergency."""
    flags = {f["id"]: f["level"] for f in talk(store, said).state().red_flags}
    assert flags.get(absent) in (None, "possible"), flags


@pytest.mark.parametrize(("said", "slot", "value"), [
    ("I'm up at five every morning and can't get back off, it's been weeks.", "symptom", "insomnia"),
    ("Honestly I've barely slept this month, three hours a night if I'm lucky.", "symptom", "insomnia"),
    ("My granny suffered terribly with her nerves.", "family_history", "anxiety"),
])
def test_sleep_lost_and_nerves_in_everyday_words(store, said, slot, value):
    """NHS "Insomnia" (waking early, lying awake, few hours a night) and "nerves" for an anxiety illness: each read."""
    state = talk(store, said).state().patient_state
    assert status_of(state, slot, value) == "positive", state


@pytest.mark.parametrize(("said", "slot", "value", "status"), [
    ("Never had a knock to the head, no.", "medical_history", "head injury", "negative"),
    ("I packed in the cigarettes after my fortieth.", "habit", "former smoker", "positive"),
    ("I've been off the fags since the new year.", "habit", "former smoker", "positive"),
    ("Nae fever, just the cough.", "symptom", "fever", "negative"),
])
def test_a_denial_before_the_blow_a_quit_said_first_and_scots_no(store, said, slot, value, status):
    """A blow to the head denied before it is told ("Never had a knock"), a smoker's quitting said before the
    cigarettes ("packed in the cigarettes", "off the fags": a former smoker), and Scots "nae" for no."""
    state = talk(store, said).state().patient_state
    assert status_of(state, slot, value) == status, state


def test_a_little_lads_illness_is_family_history(store):
    """"Lad", "lass" and "bairn" are kin words (British usage): a son's eczema is family history, not the patient's."""
    state = talk(store, "I've got a sore throat. Our lad has eczema and the bairn has asthma.").state().patient_state
    assert status_of(state, "family_history", "eczema") == "positive", state
    assert status_of(state, "medical_history", "eczema") is None, state
    assert status_of(state, "medical_history", "asthma") is None, state


def test_a_parent_telling_a_childs_earache_in_scots_is_read_as_the_childs(store):
    """The walkthrough `walk17a` (a Glasgow mother: "It's my wee girl ... screaming with her ear ... yellowy stuff
    coming out of it") had read nothing of the ear and asked the mother about her own fever; in other words here: the
    guardian's opening "It's my wee lad", a pain told as what he suffers with, a discharge told as what comes out of
    the ear, and a temperature taken under the arm that places no fever."""
    session = talk(store, "It's my wee lad, he's four. He's been crying with his right ear all day and there's "
                          "sticky goo oozing out of it now.",
                   "He's been burning up, 39.2 under his arm an hour ago.")
    state = session.state().patient_state
    pain = next(it for status, it in cmas.slot_items(state, "symptom") if it.get("value") == "pain")
    assert pain.get("location") == ["right ear"], state
    assert status_of(state, "symptom", "ear discharge") == "positive", state
    fever = next(it for status, it in cmas.slot_items(state, "symptom") if it.get("value") == "fever")
    assert not fever.get("location"), state
    assert (state.get("basic_information") or [{}])[0].get("sex") == "male", state


@pytest.mark.parametrize(("said", "rule"), [
    ("Me head just went bang while I was lifting the shopping. Honestly the worst pain of me life.",
     "thunderclap_headache"),
    ("This headache came out of nowhere, zero to ten in a split second, I thought I'd been shot.",
     "thunderclap_headache"),
    ("Ah've had wee specks o' blood in whit I cough up since Friday.", "hemoptysis"),
])
def test_a_headache_at_its_worst_in_seconds_and_more_scots_are_read(store, said, rule):
    """NICE CG150's thunderclap headache told as the worst pain of a life or a peak in seconds, and Scots "wee" for
    small (never the "wee" of urine there), "o'" and "whit": each raised, in words written for this test."""
    flags = {f["id"] for f in talk(store, said).state().red_flags}
    assert rule in flags, flags


@pytest.mark.parametrize(("said", "absent"), [
    ("My headache started this morning, it feels like someone's hitting me with a hammer.", "head_injury"),
    ("I'm necking three energy drinks a day to stay awake at work.", None),
])
def test_a_blow_in_a_simile_and_energy_drinks_are_no_injury_and_no_alcohol(store, said, absent):
    """A headache told in a simile of a blow is no head injury (its words by meaning need a blow or a fall said);
    energy drinks are a habit of their own, not alcohol."""
    session = talk(store, said)
    if absent:
        assert absent not in {f["id"] for f in session.state().red_flags}
    else:
        state = session.state().patient_state
        assert status_of(state, "habit", "regular energy drinks") == "positive", state
        assert status_of(state, "habit", "alcohol abuse") is None, state


def test_blood_from_scratched_skin_is_no_bleed_and_a_stone_lost_in_other_words_is_weight_loss(store):
    """Blood on the sheets from skin scratched raw is the skin's (no coughed-up blood); "the best part of a stone"
    lost is weight lost (the NHS asks it as an amount)."""
    session = talk(store, "My psoriasis is driving me mad, I scratch it till it bleeds and there's blood on my "
                          "pillowcase most mornings.")
    assert "hemoptysis" not in {f["id"] for f in session.state().red_flags}
    state = talk(store, "I've lost the best part of two stone since the summer without even trying.").state()
    assert status_of(state.patient_state, "symptom", "unexplained weight loss") == "positive", state.patient_state


@pytest.mark.parametrize(("said", "place"), [
    ("The swelling's in my left ankle, no, sorry, the right one, it came up on Friday.", "right ankle"),
    ("It's my right wrist, sorry, I mean left wrist, that's been aching since the fall.", "left wrist"),
])
def test_a_side_corrected_mid_sentence_is_the_side_meant(store, said, place):
    """A patient's self-correction (Shriberg's reparandum, editing term, repair): the corrected side is the one the
    clinician sees, not both and not the slip."""
    state = talk(store, said).state().patient_state
    places = [p for _, it in cmas.slot_items(state, "symptom") for p in it.get("location") or []]
    assert place in places, state
    other = "left" if place.startswith("right") else "right"
    assert not any(p.startswith(other) for p in places), state


def test_a_change_corrected_mid_sentence_and_a_no_that_answers_are_read_as_meant(store):
    """"Fatter, I mean thinner" is weight lost; "Blood, no, sputum yes" is no self-correction (a "no" after a thing
    answers it), so the cough's phlegm stays and nothing is replaced."""
    state = talk(store, "My belt's gone tighter, no wait, I mean looser, I've dropped weight without trying.").state()
    assert status_of(state.patient_state, "symptom", "unexplained weight loss") == "positive", state.patient_state
    assert status_of(state.patient_state, "symptom", "weight gain") is None, state.patient_state


def test_a_complaint_denied_at_another_place_stays_positive_where_it_is(store):
    """"My stomach aches ... no pain in my back though": one value said with both statuses at two places is two
    facts; one status per value had let the later denial take the stomach ache (the chief complaint shown as
    denied)."""
    state = talk(store, "I've had a horrible ache in my stomach since Tuesday, there's no pain in my back "
                        "though.").state().patient_state
    items = [(status, it) for status, it in cmas.slot_items(state, "symptom")
             if it.get("value") in ("pain", "abdominal pain", "back pain")]
    positive = [it for status, it in items if status == "positive"]
    assert positive and all("back" not in (it.get("location") or []) for it in positive), state
    assert any(status == "negative" and ("back" in (it.get("location") or []) or it.get("value") == "back pain")
               for status, it in items), state


def test_a_person_named_by_name_owns_what_she_had_and_a_simile_drink_is_no_habit(store):
    """"My Moira, bless her, she had the diabetes" is the late wife's (a capital after "my" names a person), found by
    meaning or by phrase; "like he'd been on the drink, which he never is" compares, it does not say a habit."""
    state = talk(store, "I've had a sore throat since Monday.",
                 "My Moira, bless her, she had the sugar diabetes for years before she passed.").state().patient_state
    assert status_of(state, "medical_history", "diabetes mellitus") is None, state
    state = talk(store, "Dad's speech went all mumbly, like he'd been on the drink, and he never touches it.",
                 ).state().patient_state
    assert status_of(state, "habit", "alcohol abuse") != "positive", state


@pytest.mark.parametrize("said", [
    "I've felt like I need to throw up all morning, but nothing's come up.",
    "I kept wanting to be sick on the bus, though I never actually was.",
])
def test_the_urge_to_vomit_is_nausea_not_vomiting(store, said):
    """A near miss of an event is the feeling, not the event (as a faint nearly had is presyncope): the urge to be sick
    is nausea (NHS: feeling sick), and the vomiting it did not come to is not positive."""
    state = talk(store, said).state().patient_state
    assert status_of(state, "symptom", "nausea") == "positive", state
    assert status_of(state, "symptom", "vomiting") != "positive", state


def test_a_denied_bladder_is_no_retention_and_a_life_events_time_is_not_the_complaints(store):
    """A negated description of an inability ("I cannot pass urine") meets only a clause that says an inability, not
    "no trouble with my waterworks"; "..., and she moved in with us ten years ago" dates the move, not the fever."""
    flags = {f["id"] for f in talk(store, "My back's sore. No trouble at all with my waterworks or my "
                                          "bowels.").state().red_flags}
    assert not flags & {"acute_urinary_retention", "cauda_equina"}, flags
    session = talk(store, "Mum's been hot and feverish and muddled since this morning, and she moved in with us "
                          "ten years ago.")
    assert "fever_with_confusion" in {f["id"] for f in session.state().red_flags}


def test_chest_pain_begun_at_rest_today_is_an_emergency_but_exertional_pain_is_not(store):
    """NICE CG95: pain at rest is an acute coronary syndrome's presentation; a pain on exertion that rest relieves is
    stable angina's. Both in words written for this test."""
    rest = talk(store, "About forty minutes ago this ache came across my chest while I was lying on the sofa.")
    assert "acute_coronary_syndrome" in {f["id"] for f in rest.state().red_flags}
    effort = talk(store, "My chest aches when I push the mower uphill and settles after a couple of minutes' rest.")
    assert "acute_coronary_syndrome" not in {f["id"] for f in effort.state().red_flags}


@pytest.mark.parametrize(("said", "slot", "value"), [
    ("I cycle to work every day and play squash on Thursdays.", "habit", "regular exercise"),
    ("The kids are poorly with it and my husband's got it as well.", "exposure", "sick person"),
    ("I take Adalat for my blood pressure.", "medication", "calcium channel breaker"),
    ("I'm on Elleste since the menopause.", "medication", "hormone intake"),
])
def test_exercise_a_sick_household_and_medicines_by_brand(store, said, slot, value):
    """Exercise as patients report it (NHS activity guidelines), others with the same illness (a sick contact), and
    medicine brands of classes MediTOD codes (BNF 2.6.2, 6.4.1.1)."""
    state = talk(store, "I've had a bad stomach since Tuesday.", said).state().patient_state
    assert status_of(state, slot, value) == "positive", state


def test_feeling_faint_is_no_blackout_for_the_screen(store):
    """"I felt a bit faint in the lift" is presyncope (NICE CKS Blackouts), for the screen as for the NLU: no syncope
    flag, where "I passed out" raises it."""
    felt = talk(store, "I felt a bit faint in the lift this morning.").state()
    assert "syncope" not in {f["id"] for f in felt.red_flags}
    assert status_of(felt.patient_state, "symptom", "presyncope") == "positive", felt.patient_state


@pytest.mark.parametrize("said", [
    "My neighbour was vomiting blood before Christmas, he's fine now, I'm only here about my ears.",
    "My manager's going to kill me for being off again, so I need a note for my back.",
])
def test_someone_elses_sign_and_an_idiom_of_being_killed_raise_nothing(store, said):
    """A friend's, a colleague's or a neighbour's sign is theirs (ConText FAMILY: someone else), and "X is going to
    kill me" is the patient's fear in an idiom, no threat to others."""
    flags = {f["id"] for f in talk(store, said).state().red_flags}
    assert not flags & {"gastrointestinal_bleeding", "harm_to_others"}, flags


@pytest.mark.parametrize(("said", "slot", "value", "status"), [
    ("I wake up with the bedsheets wringing wet with sweat most nights.", "symptom", "night sweats", "positive"),
    ("I've been hacking up thick yellowy gunk since the weekend.", "symptom", "colored/excess sputum", "positive"),
    ("Out of the blue a swarm of little dots appeared in my left eye.", "symptom", "floaters", "positive"),
    ("I'm twenty-eight weeks and my ankles are puffy.", "medical_history", "pregnancy", "positive"),
])
def test_night_sweats_phlegm_floaters_and_a_pregnancy_told_in_everyday_words(store, said, slot, value, status):
    """Sweats of the night (NHS "Night sweats"), phlegm told as what is brought up, floaters as a swarm of dots (NHS
    "Floaters"), and a pregnancy told by its week in words: each read."""
    state = talk(store, said).state().patient_state
    assert status_of(state, slot, value) == status, state


def test_a_medicine_only_asked_about_is_not_taken(store):
    """"I'm thinking about asking for HRT" names a medicine the patient does not take (the guide records what is
    taken or was taken)."""
    state = talk(store, "My hot flushes are awful and I'm thinking about going on HRT.").state().patient_state
    assert status_of(state, "medication", "hormone intake") is None, state


def test_a_troubled_part_told_of_the_person_is_a_pain_there_and_a_weeks_long_ache_is_no_torsion(store):
    """"I've been having bother with my left knee" is a pain at the knee, and a possessed "back" before "again" is the
    body part; a scrotal ache of months that comes and goes is not the sudden pain of a torsion (NICE CKS), so the
    emergency is at most "possible"."""
    state = talk(store, "I've been having bother with my left knee since the spring.").state().patient_state
    places = [p for _, it in cmas.slot_items(state, "symptom") for p in it.get("location") or []]
    assert any("knee" in p for p in places), state
    flags = {f["id"]: f["level"] for f in talk(
        store, "There's been a niggly ache in my right testicle on and off for about two months.").state().red_flags}
    assert flags.get("testicular_torsion") in (None, "possible"), flags


def test_a_nuisance_called_a_pain_in_the_neck_is_no_pain_and_a_threat_near_a_named_person_stays_the_patients(store):
    """"My landlord is an absolute pain in the neck" is the idiom (no neck pain, nothing to raise with a nausea); a
    threat said after naming a neighbour is still the patient's own (the "someone else" cue reaches only its
    clause)."""
    session = talk(store, "I've felt queasy all week. My landlord is an absolute pain in the neck about the rent.")
    state = session.state()
    assert not any(it.get("location") == ["neck"] for _, it in cmas.slot_items(state.patient_state, "symptom"))
    assert "acute_coronary_syndrome_beyond_chest" not in {f["id"] for f in state.red_flags}
    flags = {f["id"] for f in talk(store, "I'm that fed up with my flatmate I reckon I'm going to stab him "
                                          "tonight.").state().red_flags}
    assert "harm_to_others" in flags, flags


def test_a_reply_about_a_medicine_taken_for_one_month_answers_none_of_the_asked_symptoms(store):
    """"I've been on ibuprofen for my hip, two a day, for one month or so" names a medicine: its "one" (a number) is
    no pointing back at the question, so none of the symptoms the doctor screened for becomes positive."""
    asked, before, after = _answer_to(store, "My poo has gone black and tarry since Friday.",
                                      "I've been on ibuprofen for my hip, two a day, for one month or so.")
    assert asked
    for base, value in asked:
        if cmas.SLOTS[base].medical and status_of(before, base, value) is None:
            assert status_of(after, base, value) is None, (base, value, after)


@pytest.mark.parametrize("said", [
    "I reckon I've picked up a kidney infection, that's what it feels like.",
    "I think I'm having an asthma attack or maybe a chest infection.",
])
def test_a_diagnosis_the_patient_proposes_is_not_recorded_as_had(store, said):
    """"I reckon I've picked up ..." proposes a diagnosis, by phrase or found by meaning: unknown, never positive (the
    history tests it)."""
    state = talk(store, said).state().patient_state
    had = [it.get("value") for it in state.get("positive_medical_history") or []]
    assert not had, state


def test_an_operation_and_time_in_bed_told_in_passing_are_the_clots_risk_factors(store):
    """The walkthrough `walk18a` (three weeks after a caesarean, one swollen calf, breathless on the stairs) had read
    neither the operation nor the weeks in bed, the pulmonary embolism rule's risk factors (NICE NG89); in other
    words here."""
    state = talk(store, "My left calf is swollen.", "I had a knee replacement last month and I've been laid up in "
                                                     "bed most of the time since.").state().patient_state
    assert status_of(state, "medical_history", "operative surgical procedures") == "positive", state
    assert status_of(state, "medical_history", "server immobility") == "positive", state


def test_a_tight_chest_at_night_with_a_cough_or_wheeze_is_the_airways_not_angina_at_rest(store):
    """A chest tight when lying down or waking at night, said with a cough or a wheeze, is the airways' (as the
    crushing-pain condition reads it): no ACS emergency, where the same pain at rest without them raises it."""
    flags = {f["id"] for f in talk(store, "For two nights my chest has felt tight when I'm lying in bed, and I've "
                                          "been coughing and a bit wheezy with it.").state().red_flags}
    assert "acute_coronary_syndrome" not in flags, flags


def test_a_medicine_named_by_the_blood_pressure_it_treats_says_the_patient_has_it(store):
    """"I'm on a pill for my blood pressure" records the treated high blood pressure (the medicine phrase had taken
    the condition's words), and the medicine is for it; a relative's is neither."""
    state = talk(store, "My head's been aching for a week.",
                 "I'm on one pill for my blood pressure and that's it.").state().patient_state
    assert status_of(state, "medical_history", "hypertensive disease") == "positive", state


def test_a_no_that_opens_a_denial_of_taking_a_medicine_answers_none_of_the_asked_symptoms(store):
    """The walkthrough `walk18b`: "No, I'm not on any medicines, just the pill" to a screening question had denied
    every symptom asked. The "no" opens a denial of its own (not on, not taking, not using a medicine), so the asked
    items stay unanswered; in other words here."""
    asked, before, after = _answer_to(store, "I've been running temperatures on and off for a week.",
                                      "No, I'm not taking any tablets at the moment, only my inhaler.")
    assert asked
    for base, value in asked:
        if cmas.SLOTS[base].medical and status_of(before, base, value) is None:
            assert status_of(after, base, value) is None, (base, value, after)


def test_a_relatives_cancer_named_by_its_kind_is_family_history_of_cancer(store):
    """Leukaemia, lymphoma and myeloma are cancers (NHS Health A-Z): a relative's is a family history of cancer, the
    patient's own a past cancer (which the spinal-malignancy flag reads)."""
    state = talk(store, "I've got a cough that won't shift.", "My grandad died of lymphoma, and I had leukaemia myself "
                                                                "as a teenager.").state().patient_state
    assert status_of(state, "family_history", "malignant neoplasms") == "positive", state
    assert status_of(state, "medical_history", "malignant neoplasms") == "positive", state


def test_a_span_told_up_to_now_is_its_onset(store):
    """ "..., going on two weeks now": how long it has gone on is when it began (MediTOD's onset)."""
    state = talk(store, "My ankles have been puffy, going on two weeks now.").state().patient_state
    items = [it for it in state.get("positive_symptom") or [] if it.get("value") == "swelling"]
    assert items and items[0].get("onset") == "two weeks ago", state


def test_bruising_with_nosebleeds_and_tiredness_raises_the_blood_count_flag(store):
    """NICE NG12 1.10: unexplained bruising with nosebleeds or tiredness asks for a very urgent blood count."""
    flags = {f["id"] for f in talk(store, "These purple marks keep turning up on my arms and legs, I've had two "
                                          "nosebleeds this week and I'm worn out.").state().red_flags}
    assert "unexplained_bleeding_or_petechiae" in flags, flags


@pytest.mark.parametrize(("said", "kin"), [
    ("My husband came in with me today. His sister had breast cancer, so he made me come.", False),
    ("My partner's dad had a heart attack at fifty.", False),
    ("My dad had diabetes and his brother had a stroke.", True),
])
def test_a_relative_of_someone_else_is_no_family_history(store, said, kin):
    """"Her brother", "his sister" after a spouse is named, "my partner's dad": that person's relative, no blood kin
    of the patient; after a blood relative ("my dad ... his brother") it is the patient's uncle."""
    state = talk(store, "I've had a headache for a week.", said).state().patient_state
    assert bool(state.get("positive_family_history")) == kin, state


@pytest.mark.parametrize(("said", "slot", "value", "status"), [
    # a denial said after what it denies, as a terse or non-native speaker says it
    ("Chills no. Night sweats, none.", "symptom", "chills", "negative"),
    # a condition called the patient's own is had, whatever the sentence denies (the stay, the treatment)
    ("I've never had to stay in hospital for my epilepsy.", "medical_history", "convulsion", "positive"),
    # a new clause whose subject is a thing named ends the denial before it
    ("No sore throat, and the earache is worse at night.", "symptom", "ear pain", "positive"),
    # the frame of a time presupposes what it names
    ("In between the coughing fits I feel fine.", "symptom", "coughing", None),
    # a plain ability says there is no inability
    ("I can sleep lying flat without any trouble.", "symptom", "orthopnea", "negative"),
    # pauses inside a clause are closed up
    ("My throat... is so sore... I can't... swallow anything.", "symptom", "dysphagia", "positive"),
    ("I've had angina for years, I take a spray for it.", "medical_history", "stable angina", "positive"),
])
def test_denials_said_after_or_around_what_they_deny(store, said, slot, value, status):
    """How patients place a denial (terse, non-native, hesitant speech): after its object ("X no."), before a thing they
    call their own ("never in hospital with my ..."), in a sentence that goes on with a clause of its own; and what
    "I can ..." and a pause mean. ``None``: no status at all (not denied)."""
    state = talk(store, said).state().patient_state
    got = status_of(state, slot, value)
    assert got == status if status else got != "negative", state


def test_a_lifetime_denial_of_the_complaint_is_no_history_not_a_denial_of_it(store):
    """"I've never fainted before in my life" after telling the faint this morning: no history of it, and the faint
    stays had (it had turned negative)."""
    state = talk(store, "I fainted in the queue at the bank this morning.",
                 "I've never fainted before in my life.").state().patient_state
    assert status_of(state, "symptom", "syncope") == "positive", state


@pytest.mark.parametrize(("said", "slot", "value"), [
    ("My son says my speech is not right, a bit slurred.", "symptom", "dysarthria"),
    ("My ankles don't swell, and here in my calf it aches.", "symptom", "pain"),
])
def test_a_verdict_of_not_normal_and_a_clause_about_here_deny_nothing_after_them(store, said, slot, value):
    """"Not normal", "not right" say something is wrong (nothing after them is denied); "and here ..." opens a clause
    of its own after a denial."""
    state = talk(store, said).state().patient_state
    assert status_of(state, slot, value) == "positive", state


def test_a_clot_named_where_it_lodged_and_a_past_year_are_a_past_condition(store):
    """"A clot on my lung in 2012" is a past pulmonary embolism (no bleeding found by meaning in "blood clot"), and
    "I came off the warfarin" stops the medicine."""
    state = talk(store, "I've had a sore throat for a few days.",
                 "In 2012 I had a blood clot on my lung. I've been off the warfarin for ages.").state().patient_state
    assert status_of(state, "medical_history", "pulmonary embolism") == "positive", state
    assert status_of(state, "symptom", "rectal bleeding") is None, state
    assert status_of(state, "medication", "anticoagulant") == "negative", state


@pytest.mark.parametrize(("said", "rule"), [
    ("When I got up today I couldn't see a thing out of my left eye.", "sudden_visual_loss"),
    ("My right ear's gone totally deaf overnight.", "sudden_hearing_loss"),
    ("Her face has gone grey and she's struggling for every breath, she can't say a word.", "severe_dyspnea"),
    ("Head. Splitting. Came on in a second. Worst ever.", "thunderclap_headache"),
])
def test_a_faculty_lost_overnight_a_carers_opening_and_fragments_raise_their_flag(store, said, rule):
    """Nothing seen or heard through one eye or ear, a loss told as overnight, a carer's opening that names nobody
    ("her face has gone grey"), and a complaint told in fragments each raise their red flag."""
    flags = {f["id"] for f in talk(store, said).state().red_flags}
    assert rule in flags, flags


@pytest.mark.parametrize("said", [
    "My granddaughter's just got over chickenpox.",
    "One of the lads at training went down with flu on Friday.",
    "At her nursery there has been measles this month.",
])
def test_someone_elses_passing_infection_is_a_sick_contact_not_the_patients_history(store, said):
    """A relative's, an unnamed person's or a place's passing infection is an exposure to a sick person (NICE CKS asks
    for unwell contacts): never the patient's own history, nor a family history."""
    state = talk(store, "I've had a temperature since yesterday.", said).state().patient_state
    assert status_of(state, "exposure", "sick person") == "positive", state
    assert not state.get("positive_medical_history") and not state.get("positive_family_history"), state


def test_a_he_or_she_after_a_named_relative_is_that_relatives_and_just_ends_only_a_denial(store):
    """"My uncle Tom, he'd the sugar diabetes" is the uncle's (family history), not the patient's, and not dropped;
    "My nephew's only just had measles" keeps the nephew's scope past "only just" (a contact, not the patient's)."""
    state = talk(store, "I've had a cough for a week.", "My uncle Tom, he'd the sugar diabetes for years.",
                 "My nephew's only just had measles.").state().patient_state
    assert status_of(state, "family_history", "diabetes mellitus") == "positive", state
    assert status_of(state, "medical_history", "diabetes mellitus") is None, state
    assert status_of(state, "exposure", "sick person") == "positive", state
    assert status_of(state, "medical_history", "measles") is None, state


def test_how_far_along_a_pregnancy_is_kept_in_the_patients_words(store):
    """"I'm twenty-nine weeks" records the pregnancy with how far along it is (what tells a late pregnancy's pain
    from an ectopic's)."""
    state = talk(store, "I'm twenty-nine weeks pregnant and my feet have swollen.").state().patient_state
    items = [it for it in state.get("positive_medical_history") or [] if it.get("value") == "pregnancy"]
    assert items and items[0].get("starting") == "twenty-nine weeks", state


@pytest.mark.parametrize(("said", "slot", "value", "status"), [
    # a feared disease is the patient's concern, no history either way
    ("I'm petrified it's a stroke, my dad had one.", "medical_history", "stroke", None),
    ("I was frightened it might be leukaemia.", "medical_history", "malignant neoplasms", None),
    # "only" and "just" end a denial: what follows is had
    ("I don't drink much, only a glass of wine on a Friday.", "habit", "alcohol abuse", "positive"),
    ("Nothing regular, just an inhaler for my asthma.", "medical_history", "asthma", "positive"),
])
def test_a_feared_disease_is_no_history_and_only_ends_a_denial(store, said, slot, value, status):
    state = talk(store, "I've had a headache for three days.", said).state().patient_state
    assert status_of(state, slot, value) == status, state


@pytest.mark.parametrize(("said", "status"), [
    ("He's eating and drinking normally, no problem there.", "negative"),
    ("I'm not eating properly at all.", "positive"),
])
def test_eating_as_usual_denies_a_lost_appetite_and_drinking_with_eating_is_no_alcohol(store, said, status):
    """"Eating and drinking normally" is food and fluids: no alcohol habit, and no loss of appetite (a stated
    normal, as MediTOD annotates it); "not eating properly" is the loss."""
    state = talk(store, "I've had diarrhoea since Tuesday.", said).state().patient_state
    assert status_of(state, "symptom", "loss of appetite") == status, state
    assert not state.get("positive_habit"), state


def test_an_i_am_that_opens_a_statement_of_its_own_says_yes_to_nothing_asked(store):
    """"I'm eating and drinking normally" to a question listing weight loss, night sweats and a cough had made all
    three positive (the "I am" read as a yes) and raised the weight-loss flag for a carer's eczema story; an explicit
    "yes" stays one."""
    asked, before, after = _answer_to(store, "My eczema has flared up on my elbows this week.",
                                      "I'm eating and drinking normally and sleeping fine.")
    assert asked
    for base, value in asked:
        if cmas.SLOTS[base].medical and status_of(before, base, value) is None:
            assert status_of(after, base, value) != "positive", (base, value, after)


def test_a_word_restarted_after_a_filler_is_said_once():
    """"I'm here with um, with my son, who ..." is a guardian's opening (the restart had hidden it, and the son's
    cough became a sick contact); a pause inside a clause is closed up, a restart across a pause left as said."""
    from agent.core.clinical_text import proxy_subject
    from agent.core.speech_repair import repaired

    assert repaired("I'm here with um, with my son, who's had a fever since Monday.") == \
        "I'm here with my son, who's had a fever since Monday."
    assert proxy_subject(repaired("I'm here with um, with my son, who's had a fever since Monday.")) == "son"
    assert repaired("I can't... get my breath") == "I can't get my breath"
    assert repaired("It's the... it's the pressure.") == "It's the... it's the pressure."


def test_walk19a_a_thing_that_falls_a_smoker_who_stopped_and_a_denial_in_the_next_sentence(store):
    """The walkthrough `walk19a` (a 64-year-old with food sticking and weight lost): "my trousers are falling off me"
    had recorded falls, "I smoked twenty a day till five years ago" a current smoker and a job given up, and "since the
    swallowing started. Never had anything like it." denied the chief complaint. In other words here."""
    state = talk(store, "Solid food gets stuck in my gullet when I swallow, it's been going on since the spring.",
                 "My jeans keep falling down on me, I must have lost half a stone.",
                 "I used to smoke about ten a day up until three years ago.",
                 "It's been worse since the swallowing trouble began. Nothing like it before.").state().patient_state
    assert status_of(state, "symptom", "falls") is None, state
    assert status_of(state, "habit", "former smoker") == "positive", state
    assert not state.get("occupation"), state
    assert status_of(state, "symptom", "dysphagia") == "positive", state


# twentieth session: mechanisms from the dev sets' missed flags and alarms, in other words here

def test_never_having_felt_a_pain_like_it_is_the_pain_now_and_no_past_episode(store):
    """"Never had pain like it" is a superlative: the pain is here (the denial cue had removed the headache and its
    thunderclap flag), and, as MediTOD annotates "anything like this before?", the past experience is denied."""
    state = talk(store, "My head started pounding out of the blue while I was at the gym, I've never known a "
                        "headache like this before.").state().patient_state
    assert status_of(state, "symptom", "headache") == "positive", state
    assert status_of(state, "medical_history", "past experience") == "negative", state
    state = talk(store, "I get these migraines now and then.", "I've had ones like this before, yes.").state()
    assert status_of(state.patient_state, "medical_history", "past experience") == "positive", state.patient_state


def test_a_when_with_a_subject_of_its_own_ends_a_relatives_scope(store):
    """"... with my brother when this pain tore through my chest": the pain is the patient's, not the brother's; "my
    dad had a stroke when he was 60" stays the dad's."""
    state = talk(store, "I was shifting a wardrobe with my brother when a tearing pain went right through my chest "
                        "into my back.").state().patient_state
    assert status_of(state, "symptom", "chest pain") == "positive", state
    state = talk(store, "I've got a cough.", "My father had a stroke when he was sixty.").state().patient_state
    assert status_of(state, "family_history", "stroke") == "positive", state


def test_a_mild_or_easing_testicular_ache_is_no_torsion_and_a_severe_one_is(store):
    """NICE CKS names torsion by its sudden severe pain: a slight ache after a run, or one easing off, raises no
    emergency (it had on every development set); a severe one does."""
    for said in ("There's been a slight ache in my left testicle since my long run on Sunday, nothing swollen.",
                 "My testicle has been tender since I fell off my bike yesterday, but it's getting better."):
        flags = {f["id"]: f["level"] for f in talk(store, said).state().red_flags}
        assert flags.get("testicular_torsion") in (None, "possible"), (said, flags)
    flags = {f["id"]: f["level"] for f in talk(
        store, "I've got excruciating pain in my testicle that came on suddenly an hour ago.").state().red_flags}
    assert flags.get("testicular_torsion") == "emergency", flags


def test_a_part_given_a_clean_verdict_is_no_location():
    """"my hips are fine" names where the pain is not."""
    from policies.nlu.attributes import places
    from policies.nlu.lexicon import default_lexicon

    lex = default_lexicon()
    said = places("my knee is sore since the fall, my hips are fine", lex.locations, lex.sided)
    assert "knee" in " ".join(said) and not any("hip" in p for p in said), said


@pytest.mark.parametrize(("said", "rule"), [
    # a relative or an interpreter passing on the patient's own account: the account is the patient's
    ("My wife says her chest feels like it's being crushed in a vice, it came on while she was reading in bed "
     "forty minutes ago.", "acute_coronary_syndrome"),
    ("He says he's been throwing up fresh blood, two big mouthfuls, since this morning.", "gastrointestinal_bleeding"),
])
def test_an_account_passed_on_by_someone_else_is_the_patients(store, said, rule):
    flags = {f["id"] for f in talk(store, said).state().red_flags}
    assert rule in flags, flags


def test_a_chest_pain_whose_next_sentence_says_it_came_at_rest_is_a_pain_at_rest(store):
    state = talk(store, "There's a pressing pain right in the centre of my chest. It started while I was sitting "
                        "in the car half an hour ago.").state().patient_state
    assert status_of(state, "symptom", "chest pain rest") == "positive", state


def test_when_it_began_does_not_hide_what_it_is_from_the_second_stage(store):
    """"About an hour ago I got a heavy weight in the middle of my chest": the time cut before the clause is compared
    by meaning (said with it, the clause fell below the threshold)."""
    state = talk(store, "Since about two hours ago there's been a heavy weight sat across the middle of my "
                        "chest.").state().patient_state
    assert status_of(state, "symptom", "chest pain") == "positive", state


def test_a_guess_at_what_the_complaint_only_is_is_no_second_complaint(store):
    state = talk(store, "I expect it's only heartburn, but there's a tight feeling across my chest.").state()
    assert status_of(state.patient_state, "symptom", "pyrosis") == "unknown", state.patient_state
    assert status_of(state.patient_state, "symptom", "chest pain") == "positive", state.patient_state
    state = talk(store, "It's just a sore throat, really.").state().patient_state
    assert status_of(state, "symptom", "sore throat") == "positive", state


def test_a_simile_or_a_thing_named_like_a_part_is_no_place(store):
    """"Swollen up like a golf ball" (ball: slang for a testicle) had raised the torsion emergency for a sprained
    ankle."""
    state = talk(store, "My wrist blew up like a golf ball after I fell on it, and it's sore.").state()
    assert not any("testic" in p for it in state.patient_state.get("positive_symptom") or []
                   for p in it.get("location") or []), state.patient_state
    assert "testicular_torsion" not in {f["id"] for f in state.red_flags}


def test_a_mind_said_to_work_raises_no_confusion(store):
    flags = {f["id"] for f in talk(store, "I've had a fever and a sore throat since Tuesday, but I'm thinking "
                                          "clearly and I know exactly what day it is.").state().red_flags}
    assert "new_confusion" not in flags, flags


def test_one_leg_bigger_than_the_other_and_an_operation_told_by_the_part(store):
    state = talk(store, "My right calf is double the size of the left one. I had my knee replaced a fortnight "
                        "ago.").state()
    assert status_of(state.patient_state, "symptom", "swelling") == "positive", state.patient_state
    assert status_of(state.patient_state, "medical_history", "operative surgical procedures") == "positive"
    assert "deep_vein_thrombosis" in {f["id"] for f in state.red_flags}


def test_a_relatives_operation_is_no_history_here(store):
    state = talk(store, "I've had a cough for a week.", "My sister had her gallbladder out last year.").state()
    assert status_of(state.patient_state, "medical_history", "operative surgical procedures") is None, \
        state.patient_state


def test_a_new_pain_on_breathing_in_is_the_chests_and_raises_the_clot_flag_after_surgery(store):
    flags = {f["id"] for f in talk(store, "Ten days after my hip operation I've come over breathless, and there's a "
                                          "knifelike pain whenever I take a breath in.").state().red_flags}
    assert "pulmonary_embolism" in flags, flags


def test_no_water_passed_with_a_swollen_belly_is_retention(store):
    flags = {f["id"] for f in talk(store, "I've not passed any urine since last night and my lower belly is swollen "
                                          "and tight.").state().red_flags}
    assert "acute_urinary_retention" in flags, flags


def test_a_past_self_harm_said_to_have_ended_years_ago_raises_nothing_but_a_return_does(store):
    """A self-harm the patient says stopped years ago is their history, not a crisis to answer with the emergency
    message (every development set's writer called it quiet); one that came back lately is raised."""
    flags = {f["id"] for f in talk(store, "I self-harmed when I was a student but I haven't done it for about eight "
                                          "years now. I've come about my hay fever.").state().red_flags}
    assert "self_harm" not in flags, flags
    flags = {f["id"] for f in talk(store, "I used to cut myself years ago, and last night I did it again.")
             .state().red_flags}
    assert "self_harm" in flags, flags


@pytest.mark.parametrize(("said", "slot", "value", "status"), [
    # a bare "not hot" denies the heat ("not so hot" is the idiom for unwell); being up at night is no vomiting
    ("My knees are stiff and sore but they're not hot.", "symptom", "fever", None),
    ("I've been up four nights running with the baby and I'm shattered.", "symptom", "vomiting", None),
    # the caffeine drink taken before training is no alcohol
    ("I have a pre-workout shake before the gym most days.", "habit", "alcohol abuse", None),
    ("I have a pre-workout shake before the gym most days.", "habit", "regular energy drinks", "positive"),
    # a relative's "heart rhythm thing" is a heart disease in the family
    ("My mum's got a heart rhythm thing, she's on tablets for it.", "family_history", "heart disease", "positive"),
    # the abbreviation patients are given
    ("I've had AF for a few years and I'm on apixaban.", "medical_history", "atrial fibrillation", "positive"),
    # a blocked nose in everyday words is the nose's, not the bowel's
    ("My nose is bunged up and I can't taste anything.", "symptom", "nasal congestion", "positive"),
    ("My nose is bunged up and I can't taste anything.", "symptom", "constipation", None),
    # a faint told by what came after it
    ("I was queuing at the shop and the next thing I remember I was on the floor.", "symptom", "syncope", "positive"),
    ("I must have blacked out for a bit, I can't remember falling.", "symptom", "syncope", "positive"),
])
def test_everyday_words_read_as_what_they_mean_and_nothing_more(store, said, slot, value, status):
    state = talk(store, "I've had a cough for about a week.", said).state().patient_state
    assert status_of(state, slot, value) == status, state


def test_a_recovery_denied_says_the_complaint_goes_on_and_a_condition_read_about_is_not_had(store):
    """"My nose hasn't cleared, it's bunged up" is a blocked nose (the denied recovery had denied it, and "bunged up"
    had made it constipation); "I've been reading about AF" is a worry, not a history."""
    state = talk(store, "Since my cold my sinuses just haven't settled, they're bunged up all the time.").state()
    assert status_of(state.patient_state, "symptom", "nasal congestion") == "positive", state.patient_state
    assert status_of(state.patient_state, "symptom", "constipation") is None, state.patient_state
    state = talk(store, "My heart keeps skipping beats and I've been googling heart failure all week.").state()
    assert status_of(state.patient_state, "medical_history", "heart failure") is None, state.patient_state


def test_walk20a_a_fall_asleep_a_factor_of_it_and_flashes_denied_with_floaters(store):
    """The walkthrough `walk20a` (a contact-lens wearer with a painful red eye): "I fell asleep in them" had recorded
    falls, "Blinking makes it sting" a flashing light (and the retinal detachment flag), and "no flashes or floaters"
    left the flashes had. In other words here."""
    state = talk(store, "My left eye is red and gritty and it's been streaming since Sunday.",
                 "I dropped off on the sofa with my lenses still in.",
                 "Looking at a screen sets it off.",
                 "I haven't seen any flashes or floaters at all.").state()
    ps = state.patient_state
    assert status_of(ps, "symptom", "falls") is None, ps
    assert status_of(ps, "symptom", "photopsia") in (None, "negative"), ps
    assert "retinal_detachment" not in {f["id"] for f in state.red_flags}
    state = talk(store, "I fell asleep in the chair and woke up with my neck all stiff.").state().patient_state
    assert status_of(state, "symptom", "falls") is None, state


@pytest.mark.parametrize(("said", "rule"), [
    # a headache said to have come on suddenly and to score 8 or more is NICE CG150's thunderclap, whatever its words
    ("Out of nowhere this morning my head started banging, it's a nine out of ten and it hit me in seconds.",
     "thunderclap_headache"),
    # a hearing loss said to have gone suddenly, when not yet told, is NICE CKS's sudden hearing loss
    ("All of a sudden I can't hear a thing out of my right ear.", "sudden_hearing_loss"),
])
def test_a_sudden_severe_headache_and_a_sudden_deafness_raise_their_flags(store, said, rule):
    flags = {f["id"] for f in talk(store, said).state().red_flags}
    assert rule in flags, flags


_WORDS_READ_AS_MEANT = [
    # the idiom of being unwell in general is no fever, and denies nothing told after it
    ("Honestly I've not been doing too hot since Friday, coughing my guts up.", "symptom", "fever", None),
    ("Honestly I've not been doing too hot since Friday, coughing my guts up.", "symptom", "coughing", "positive"),
    # a product named by the short illness it is sold for is nobody's illness
    ("Mum gave me some cold and flu sachets for it on Tuesday.", "medical_history", "cold", None),
    ("Mum gave me some cold and flu sachets for it on Tuesday.", "medical_history", "influenza", None),
    # blood given is no bleeding; blood told with loose motions is from the bowel
    ("I went a bit grey and keeled over once when I was donating blood.", "symptom", "hemoptysis", None),
    ("I've gone loose since the weekend and there's blood in it.", "symptom", "rectal bleeding", "positive"),
    # an accident told in everyday words is incontinence
    ("Twice this week I've wet myself before I could get to the loo.", "symptom", "urinary incontinence", "positive"),
    ("He's been soiling himself at night, which isn't like him.", "symptom", "faecal incontinence", "positive"),
    # a procedure done to a thing is no tiredness
    ("The GP lanced the abscess and drained it, that was in 2019.", "symptom", "fatigue", None),
    # breathless in the everyday word; a simile of running is no exercise habit
    ("I'm puffing and panting like I've done a triathlon just walking to the bus.", "symptom", "dyspnea", "positive"),
    ("I'm puffing and panting like I've done a triathlon just walking to the bus.", "habit", "regular exercise", None),
]


def test_a_place_the_pain_is_said_not_to_reach_and_a_time_said_back_then_are_no_places(store):
    state = talk(store, "The ache's right across my chest but it doesn't travel into my jaw or anything.").state()
    assert not any("jaw" in str(it.get("location")) for it in state.patient_state.get("positive_symptom", [])), \
        state.patient_state
    state = talk(store, "I had a terrible headache back in 2012 that put me in hospital.").state()
    assert not any("back" in (it.get("location") or []) for it in state.patient_state.get("positive_symptom", [])), \
        state.patient_state


@pytest.mark.parametrize("said", [
    # an episode dated months or years back and said not to have come back is history, not a flag now
    "I blacked out in the shower last September, they checked my heart and it's never happened again.",
    "In 2017 I had a funny turn where my arm went weak, it was a migraine in the end, and I've been fine ever since.",
    # idioms of anger and of laughter borrow a red flag's words and carry none
    "My neighbour's dog barked all night, I could've killed him, anyway I'm here about my hay fever.",
    "We were killing ourselves laughing at the wedding and now my side aches, that's all.",
])
def test_history_over_and_done_and_idioms_raise_no_flag(store, said):
    flags = {f["id"]: f["level"] for f in talk(store, said).state().red_flags}
    assert not flags, flags


_PASSED_TODAY_AND_JOURNEYS = [
    # the same episode today, though it has passed, is still today's (NICE CG95)
    ("About an hour ago I had a heavy crushing feeling in my chest with sweating, it's eased now, fine since.",
     "acute_coronary_syndrome"),
    # a long journey with new breathlessness is the clot's risk factor (NICE CKS Pulmonary embolism: travel > 4 hours)
    ("I got off a twelve-hour flight on Sunday and since then I've been breathless and my chest catches when I "
     "breathe in.", "pulmonary_embolism"),
]


_DIALECTS_AND_SIGNS = [
    # regional spellings read as standard English before anything else (Jamaican Creole, Scots, Southern US)
    ("Mi belly a hurt me bad bad an' mi cyaan eat nutten since Tuesday.", "symptom", "loss of appetite", "positive"),
    ("Ma knee's been giein' me gyp since the weekend.", "symptom", "pain", "positive"),
    ("My ankle's swole up real bad since I turned it.", "symptom", "swelling", "positive"),
    # a verb with its object between it and the verdict is how it fails, not a denial
    ("I can't catch my breath properly since this morning.", "symptom", "dyspnea", "positive"),
    # a denied thing, then a verb in the past with its object, is a new clause
    ("No seatbelt, smashed his head on the windscreen.", "medical_history", "head injury", "positive"),
    # signs in everyday words: blue lips, not knowing one's own people, a sense gone on waking
    ("Her lips have gone a bluey colour and she's struggling.", "symptom", "cyanosis", "positive"),
    ("Dad's had a temperature since Sunday and today he didn't recognise me.", "symptom", "confusion", "positive"),
    ("I woke up yesterday and couldn't hear out of my right ear at all.", "symptom", "hearing impairment",
     "positive"),
    # a colour seen on a cartoon is no sign; water kept down is no thirst
    ("She's been a bit quiet, just lying there watching Bluey all day.", "symptom", "cyanosis", None),
    ("He's keeping down sips of juice, that's about all.", "symptom", "polydipsia", None),
    # going more often, told of the bowels, is a change in bowel habit; a side said low is the lower belly
    ("Since the spring I'm going more often and my bowels are looser.", "symptom", "urinary frequency", None),
    # petechiae and bleeding gums in their everyday words
    ("There are little purple dots all over his tummy and he's floppy.", "symptom", "non-blanching rash",
     "positive"),
    ("My gums keep bleeding and I'm covered in bruises I can't explain.", "symptom", "unusual bleeding", "positive"),
]


_NEW_WORDINGS_OF_FLAGS = [
    # a relative named as a circumstance ("since the grandkids", "at my son's wedding") owns nothing after a break
    ("We were at my nephew's wedding, and out of the blue this tearing pain went right through to my back.",
     "aortic_dissection"),
    # the patient telling a friend does not make the friend the owner
    ("I told my sister I'd be better off throwing myself under a lorry, and I meant it.", "suicidal_ideation"),
    # an overdose told by what was swallowed; a firearm taken out with a threat
    ("My son took two whole packets of paracetamol this afternoon.", "self_harm"),
    ("Her ex keeps saying he's going to shoot her and he's got a shotgun in the van.", "harm_to_others"),
    # a sense lost overnight within the month is sudden hearing loss (NICE NG98: over 3 days or less, in 30 days)
    ("I woke up on Saturday and my left ear had gone completely deaf.", "sudden_hearing_loss"),
    # pain low on one side with a positive test is the ectopic's; no urine with a drum-tight belly is retention
    ("My test came back positive last week and now I've a stabbing pain low on the right side.", "ectopic_pregnancy"),
    ("I've not passed a drop since teatime and my tummy's tight as a drum.", "acute_urinary_retention"),
]


_TOPIC_FIRST_AND_FOCAL = [
    # a denial said after its topic (Indian English and others): "X is not there", "X I am not taking"
    ("Fever is not there, only the cough since Saturday.", "symptom", "fever", "negative"),
    ("Cigarettes I am not having.", "habit", "smoking", "negative"),
    # Scots "nae" and "no" before a verb in -ing
    ("There's nae blood in it and she's no eating much.", "symptom", "hemoptysis", "negative"),
    # a nuisance called a pain in the neck is no pain
    ("My cough's the worst of it; the only pain in the neck is my landlord.", "symptom", "pain", None),
    # a lump on the eyelid is focal (a stye), no angio-oedema
    ("There's a hard little lump on my upper eyelid that's been there a fortnight.", "symptom", "angioedema", None),
]


def test_a_discourse_sure_answers_no_question(store):
    """"Sure I'm seventy-nine, and I still walk the dog" opens a statement (Hiberno-English and Scots "sure"): the
    items the doctor just asked stay unanswered (a "yes" to a question about a drooping face had raised the stroke
    emergency)."""
    session = talk(store, "I've been getting dizzy when I stand up since they changed my tablets.")
    before = {it["value"] for it in session.state().patient_state.get("positive_symptom", [])}
    session.send("Sure I'm seventy-nine, and I still walk the dog round the park every day.")
    after = {it["value"] for it in session.state().patient_state.get("positive_symptom", [])}
    assert after == before, (before, after)


def test_walk21_an_australian_back_pain_with_cancer_features(store):
    """The walkthrough `walk21` (a 67-year-old Australian with night back pain after a prostate cancer): "giving me
    curry" had lost the back pain, "waterworks are right" had made a urinary complaint, "never smoked, a few beers"
    had denied the beers and "pretty crook" had become nausea. In other words here."""
    state = talk(store, "I'm 71. Me hip's been giving me curry since the footy season started.",
                 "The bladder's right, no trouble there.",
                 "Never touched cigarettes, a couple of wines with tea most nights.",
                 "I've been real crook this last fortnight.").state().patient_state
    assert any("hip" in (it.get("location") or []) for it in state.get("positive_symptom", [])), state
    assert status_of(state, "symptom", "difficulty passing urine") in (None, "negative"), state
    assert status_of(state, "habit", "alcohol abuse") == "positive", state
    assert status_of(state, "symptom", "nausea") is None, state


@pytest.mark.parametrize(("said", "slot", "value", "status"),
                         [*_WORDS_READ_AS_MEANT, *_DIALECTS_AND_SIGNS, *_TOPIC_FIRST_AND_FOCAL])
def test_regional_words_idioms_and_signs_read_as_meant(store, said, slot, value, status):
    """The twenty-first session's mechanisms, each case in words of its own: regional English read as standard, idioms
    and products that name no illness, denials said after their topic, signs in everyday words."""
    state = talk(store, said).state().patient_state
    assert status_of(state, slot, value) == status, state


@pytest.mark.parametrize(("said", "rule"), [*_PASSED_TODAY_AND_JOURNEYS, *_NEW_WORDINGS_OF_FLAGS])
def test_new_wordings_of_red_flags_raise_them(store, said, rule):
    """A passed episode of today, a journey with breathlessness, and the ninth set's classes of red flags in words of
    their own (a relative as a circumstance, the one told, an overdose told by what was swallowed, a lost sense)."""
    flags = {f["id"] for f in talk(store, said).state().red_flags}
    assert rule in flags, flags


def test_walk22_a_pregnancy_told_by_its_weeks_is_no_ectopic_and_its_problems_denied_leave_it_had(store):
    """The walkthrough `walk22` (pre-eclampsia at 33 weeks): "33 weeks with my first baby" gave no gestation, so a
    pain under the ribs raised the ectopic emergency, and "No other problems in this pregnancy" denied the pregnancy.
    In other words here."""
    state = talk(store, "I'm 36 weeks with our second, and I've got a bad headache and pain up under my right ribs.",
                 "There've been no complications during this pregnancy till now.").state()
    assert status_of(state.patient_state, "medical_history", "pregnancy") == "positive", state.patient_state
    assert "ectopic_pregnancy" not in {f["id"] for f in state.red_flags}, state.red_flags


# --------------------------------------------------------------------------- twenty-second session: other languages'
# words and typing slips (configs/vocabulary/code_switching.yaml, agent/core/typos.py)

_MIXED_AND_MISTYPED = [
    # Spanish words mixed into English, read in English
    ("Tengo fiebre desde ayer, and my whole body aches.", "symptom", "fever", "positive"),
    ("Me falta el aire when I climb the stairs at work.", "symptom", "dyspnea", "positive"),
    ("No tengo fiebre, just the runny nose.", "symptom", "fever", "negative"),
    ("Me duele la garganta since Monday, it's worse when I swallow.", "symptom", "sore throat", "positive"),
    # slips in typing a clinical word, and apostrophes left out
    ("been feelin realy nausious all week and my stomache hurts", "symptom", "nausea", "positive"),
    ("i dont have a temprature but the cough is bad", "symptom", "fever", "negative"),
    ("my ankels are swolen by the evening", "symptom", "edema", "positive"),
]


def test_a_typing_slip_is_corrected_only_to_one_clinical_word_and_never_a_word():
    """What is English stays as typed (also a derived form or a British spelling); a slip is corrected only to a
    single nearest clinical word sharing its first letter."""
    from agent.core.typos import correction

    for word in ("eczema", "hernia", "bloated", "snore", "colour", "texting", "Drakensberg", "eish", "fiance"):
        assert correction(word) is None, word
    assert correction("vomitting") == "vomiting"
    assert correction("diarea") == "diarrhea"
    assert correction("paon") == "pain"


_GUESSES_AND_WHOSE = [
    # a lay person's guess at what the patient has is nobody's history; a clinician's word is a diagnosis
    ("My flatmate reckons it's probably shingles, she's always on the internet.", "medical_history", "herpes zoster",
     None),
    ("Google says it could be gallstones but I've no idea.", "medical_history", "cholelithiasis", None),
    ("The consultant said it was gallstones back in the spring.", "medical_history", "cholelithiasis", "positive"),
    # a name said after a comma keeps its clause's subject: the relative's medicine
    (("I've had headaches for a week.",
      "My dad has the blood pressure, he takes a pill for it every night, amlodipine."),
     "medication", "calcium channel breaker", None),
]


def test_a_present_complaint_told_after_a_history_over_and_done_keeps_its_flag(store):
    """"A cancer years ago, all clear since. Now ..." tells the history a rule reads as its risk, then today's
    complaint: the flag is raised (the history alone, told over and done, raises nothing)."""
    flags = {f["id"] for f in talk(store, "I'm 64. Bowel cancer eight years back, clear ever since. These days my "
                                          "lower back aches every night and it's getting worse.").state().red_flags}
    assert "back_pain_with_cancer_features" in flags, flags
    quiet = {f["id"] for f in talk(store, "I'm 64. A clot in my leg back in 2019, treated, never came back; I'm "
                                          "here for a holiday jab.").state().red_flags}
    assert not quiet, quiet


_ASKED_FOR_AND_LONG_AGO = [
    # a medicine asked for or out of reach is not taken; "I need my inhaler more" is taking it
    (("My chest is wheezy again.", "I'd really like some steroids to clear it, can I have them?"), "medication",
     "corticosteroids", None),
    (("My chest is wheezy again.", "I need my blue inhaler more than usual."), "medication", "albuterol", "positive"),
    # a British name of a cough medicine
    (("Tickly cough for a week.", "I've had some linctus from the pharmacy for it."), "medication", "cough syrup",
     "positive"),
    # someone's illness long ago is no sick contact now
    (("I've been throwing up since last night.", "My son had norovirus two years ago, that's all I can think of."),
     "exposure", "sick person", None),
    # ... but a contact with tuberculosis long ago still matters (it shows itself months to years later)
    (("I've been coughing for three months.", "My aunt had TB two years ago and I nursed her at home."), "exposure",
     "sick person", "positive"),
    # "poop" the noun is no "pooped" (worn out): nothing denied of tiredness
    (("Loose stools since Friday.", "Not a trace of blood in the poop."), "symptom", "fatigue", None),
    # blood passed, or seen in the toilet bowl, is from below
    ("Passing blood again today, the bowl was red after I went.", "symptom", "rectal bleeding", "positive"),
    ("Last night I threw up blood, about half a mug, after supper.", "symptom", "hematemesis", "positive"),
    # from the walkthrough walk23 (giant cell arteritis told with Spanish words), in other words: a thing said to work
    # after a denial is taken; drinking only now and then is no alcoholism (MediTOD's guide); NICE CKS's signs of GCA
    (("My head's been pounding for a week.", "Nothing helps much, ibuprofen takes the edge off."), "medication",
     "nsaids", "positive"),
    (("I'm here about my knee.", "I only drink on special occasions, a glass of fizz at weddings."), "habit",
     "alcohol abuse", "negative"),
    (("New headaches at the sides of my head.", "It hurts to brush my hair, and my jaw hurts when I eat."), "symptom",
     "scalp tenderness", "positive"),
    # a sight that "went" fuzzy changed, it did not go (its loss had raised the sudden-loss emergency)
    ("My vision went fuzzy for a moment when I stood up too fast.", "symptom", "vision loss", None),
    # a blood said of the eye is the eye's own redness, no coughed-up blood, whatever was coughed
    ("A red blotch of blood came up in the white of my eye after a coughing fit.", "symptom", "hemoptysis", None),
    # "nothing" that is the loss of pleasure itself
    (("I've been feeling low.", "Nothing seems fun any more, I just sit in the flat."), "symptom", "anhedonia",
     "positive"),
]


@pytest.mark.parametrize(("said", "slot", "value", "status"),
                         [*_MIXED_AND_MISTYPED, *_GUESSES_AND_WHOSE, *_ASKED_FOR_AND_LONG_AGO])
def test_the_twenty_second_sessions_readings(store, said, slot, value, status):
    """The twenty-second session's mechanisms, each case in words of its own: a patient's Spanish words and typing
    slips read as the English words they are, a lay guess is nobody's history, a medicine keeps its clause's owner,
    a medicine asked for is not taken, a contact long ago is none, the loss of pleasure is no denial."""
    state = talk(store, *([said] if isinstance(said, str) else said)).state().patient_state
    assert status_of(state, slot, value) == status, state


@pytest.mark.parametrize(("said", "flagged"), [
    # red flags in Spanish words and typing slips
    ("Me duele mucho el pecho, goes into my left arm, y estoy sudando since half an hour.",
     {"acute_coronary_syndrome"}),
    ("Mi papá se desmayó? No, it's me, me desmayé in the shower and my chest was hurting before.",
     {"chest_pain_with_syncope_or_palpitations"}),
    ("worst hedache of my life came on sudenly while lifting, like being hit with a hammer", {"thunderclap_headache"}),
    # a self-injury to the hand told as meant; a cut while cooking, a bug killed, a palsy over and done raise nothing
    ("When it all gets too much I cut my palm with a blade, I did it again last night.", {"self_harm"}),
    ("I sliced my thumb opening a tin of beans, it's healing fine.", set()),
    ("I need something strong to kill this bug before my exams.", set()),
    ("My face drooped on one side back in 2021, Bell's palsy they said, completely better now.", set()),
])
def test_the_twenty_second_sessions_flags(store, said, flagged):
    """Each listed flag is raised (others may come with it); a quiet statement raises none."""
    flags = {f["id"] for f in talk(store, said).state().red_flags}
    assert flags == flagged or (flagged and flagged <= flags), flags


_REGISTERS_AND_ORDER = [
    # spoken reductions, written shorthand and slang codes read as the words they stand for
    ("my knee is swole and i gotta limp, dunno why", "symptom", "swelling", "positive"),
    ("Pt reports SOB for 2 days, no CP.", "symptom", "dyspnea", "positive"),
    ("Since the weekend PV bleeding and cramps.", "symptom", "vaginal bleeding", "positive"),
    ("Been bringing up claret with the coughing since Tuesday.", "symptom", "hemoptysis", "positive"),
    # the object put first and the denial last; a review of systems read out in its own register
    (("Tight chest on the stairs.", "Cigarettes, never I do not."), "habit", "smoking", "negative"),
    (("Tight chest on the stairs.", "Drink I don't."), "habit", "alcohol abuse", "negative"),
    (("I work as a nurse, so in order.", "Fever: nil. Cough: negative."), "symptom", "fever", "negative"),
    # a question the patient puts to themself and answers at once
    (("My ankles swell by teatime.", "Do I get short of breath? Nope, I walk the dog fine."), "symptom", "dyspnea",
     "negative"),
    (("Sore throat for days.", "Any temperature? Yes, 38 last night."), "symptom", "fever", "positive"),
    # a claim another person makes and the patient denies: the patient's own last word stands
    (("My chest rattles at night.", "My son insists I smoke; I gave it up? No, I never smoked, it's my lodger."),
     "habit", "smoking", "negative"),
    # the loss of pleasure told with a "nothing"; a question whether it is normal is no verdict of normal
    (("I'm so tired of it all.", "Nothing brings me any pleasure now, not even the grandchildren."), "symptom",
     "anhedonia", "positive"),
    (("My sleep is poor.", "Is it normal that my heart starts racing when I lie down?"), "symptom", "palpitations",
     "positive"),
    # a thermometer read out in words, a chemotherapy regimen by its name
    (("I've felt rough since lunchtime.", "The thermometer said thirty-nine point two."), "symptom", "fever",
     "positive"),
    ("She's having R-CHOP for her lymphoma and now she's shivering.", "medication", "chemotherapy", "positive"),
    # an age something happened at is the past's, not the patient's age
    (("I had a seizure at work this morning.", "My first fit was aged 14, none for years."), "symptom", "seizure",
     "positive"),
    # a "he" is not the mum named before it; a carer who brought the patient in is no patient
    (("I've brought my grandad in, he's been getting confused over the last year.",
      "His sister had a stroke. He has high blood pressure and takes amlodipine."), "medication", "amlodipine",
     "positive"),
    # a kind of complaint denied as a habit, then told
    (("Hello.", "I never normally get migraines, but this one has lasted three days."), "symptom", "headache",
     "positive"),
    # a part said on its own, then "it"; an ear that "went"; a blow to a place on the head; a mole that used to be
    # otherwise; a temperature read is a temperature taken
    ("My right wrist. It's throbbing since the fall.", "symptom", "pain", "positive"),
    ("This morning my right ear just went, everything's like underwater.", "symptom", "hearing impairment",
     "positive"),
    ("I slipped on the ice and cracked the side of my head on the kerb.", "medical_history", "head injury",
     "positive"),
    ("The mole on my calf used to be flat and now it's raised and crusty.", "symptom", "changing mole", "positive"),
    ("She's had a temperature, 38.9 under her arm.", "medical_test", "body temperature measurement", "avail"),
    # from the walkthrough walk25 (a daughter telling of her father's upper GI bleed), in other words: a stool's
    # stickiness is no sticky eye; coffee grounds are a look, not a drink; a verb in -s after a denial is a new
    # predicate; a symptom that has not come back was had
    ("Mum says her motions have gone tarry and sticky since Sunday.", "symptom", "eye discharge", None),
    ("What she brought up was brown, like coffee grounds.", "habit", "regular coffee tea", None),
    (("My stomach's been burning.", "I don't vape, smokes ten roll-ups a day though."), "habit", "smoking",
     "positive"),
    (("My little boy has a tummy bug.", "He hasn't vomited again since lunchtime."), "symptom", "vomiting",
     "positive"),
    # a spouse who "passed" last year is no one the speaker speaks for; a sleepless night stays a sleepless night
    ("Since my husband passed last spring I can't sleep, I'm awake most of the night.", "symptom", "insomnia",
     "positive"),
    # a witness's "was not awake" for a time is a faint
    ("At the bus stop my son dropped and he was not conscious for about a minute.", "symptom", "syncope",
     "positive"),
]


@pytest.mark.parametrize(("said", "slot", "value", "status"), _REGISTERS_AND_ORDER)
def test_the_twenty_third_sessions_readings(store, said, slot, value, status):
    """The twenty-third session's mechanisms, each case in words of its own (not the eleventh set's): spoken
    reductions, shorthand and slang codes; a denial after its object; an answered self-question; a later own denial
    over an earlier claim; a thermometer in words; whose "he" is; a habit denied and then told."""
    state = talk(store, *([said] if isinstance(said, str) else said)).state().patient_state
    assert status_of(state, slot, value) == status, state


@pytest.mark.parametrize(("said", "flagged"), [
    # a wish to die in a spoken reduction; a suicidal thought told as a review-of-systems "negative" raises nothing
    ("honestly i wanna go to sleep and never wake up, i've got pills saved", {"suicidal_ideation"}),
    ("Low mood for months. Thoughts of self-harm: negative. Thoughts of ending my life: negative.", set()),
    # a fever read out in words on chemotherapy by its regimen's name
    ("He's on FOLFIRI for his bowel cancer and his temperature is thirty-eight point four.", {"neutropenic_sepsis"}),
    # a faint at a teenage age, never again: the past, no flag; a painful swallow with a sore throat is the throat's
    ("I passed out once at fifteen giving blood, never since.", set()),
    ("Sore throat since yesterday, it hurts to swallow, bit of a cold.", set()),
    # a headache that peaked in an instant, said formally
    ("An instantaneous headache of the utmost severity came upon me while gardening; excruciating, unlike any before.",
     {"thunderclap_headache"}),
    # how the patient has always been is no acute change; a function said to work is no loss of it
    ("I've always been chilly and worn out, all my life, that's just me.", set()),
    ("I have a stinking cold, but I can talk normally and move my arms fine.", set()),
    # a clock's "at 5" is no age said as the time: the pain is now, not the past
    ("Crushing pain in the middle of my chest since about 6 this morning, started at 6, down my left arm, clammy.",
     {"acute_coronary_syndrome"}),
    # a terse teenager's testicle: the part first, then "it"
    ("My right nut. It's agony. Came on an hour ago in bed.", {"testicular_torsion"}),
])
def test_the_twenty_third_sessions_flags(store, said, flagged):
    """Each listed flag is raised (others may come with it); a quiet statement raises none."""
    flags = {f["id"] for f in talk(store, said).state().red_flags}
    assert flags == flagged or (flagged and flagged <= flags), flags
