"""A red flag never depends on the NLU alone: every rule fires from lay phrasings through the full graph on the
default config (state rules via the clinical NLU, text rules via ConText-aware phrases), and not on its negated
phrasing. Real graph, real SQLite sessions, real spaCy/medspaCy."""

from __future__ import annotations

import pytest
import yaml
from graph_fixtures import REPO, default_store

from agent.app.sessions import SessionStore
from agent.core.safety import check_text_flags, default_rules

CASES = {
    "back_pain_with_cancer_features": (
        ["I'm 68, my back has ached for two months and I've lost a stone without trying.",
         "I'm 60 and had bowel cancer three years ago, and now my lower back hurts all the time."],
        "I'm 68 and my back aches after gardening, but I haven't lost any weight and I've never had cancer.",
    ),
    "retinal_detachment": (  # NICE CKS Retinal detachment: new flashes or floaters (the state's onset tells "new")
        ["Since yesterday I keep getting little flickers of light at the outer edge of my left eye.",
         "A swarm of dark dots started drifting across the sight of my right eye two days ago."],
        "No flashes of light and no floaters in either eye.",
    ),
    "chest_pain_with_dyspnea": (
        ["I have chest pain and I'm short of breath.", "Crushing chest pain and I can't breathe."],
        "I have no chest pain and I'm not short of breath.",
    ),
    "chest_pain_with_syncope_or_palpitations": (
        ["I had chest pain and then I passed out.", "Chest pain, and my heart is racing."],
        "No chest pain, and I have never fainted.",
    ),
    "hemoptysis": (
        ["I've been coughing up blood.", "There was blood in my phlegm this morning."],
        "No blood in my sputum.",
    ),
    "syncope": (["I passed out yesterday.", "I fainted at work."], "I've never fainted."),
    "suicidal_ideation": (
        ["Sometimes I want to die.", "I've thought about ending my life."],
        "I don't want to hurt myself.",
    ),
    "stridor_or_choking": (
        ["There's a high-pitched breathing noise when I breathe in.", "I feel like I'm choking."],
        "No choking.",
    ),
    "gastrointestinal_bleeding": (["I've been vomiting blood.", "I've had black stools."], "No blood in my stool."),
    "stroke_signs": (
        ["My face is drooping on one side.", "I'm slurring my words."],
        "No slurred speech and no face drooping.",
    ),
    "seizure": (["I had a seizure last week.", "I've been having fits."], "I've never had a seizure."),
    "fever_with_confusion": (
        ["I have a fever and I'm confused.", "I've had a high temperature and I feel confused."],
        "No fever and I'm not confused.",
    ),
    "severe_dyspnea": (["I'm short of breath, it's 9 out of 10.", "I can't breathe."], "I'm not short of breath."),
    "sore_throat_with_airway_signs": (  # a sore throat with trismus or drooling: quinsy, epiglottitis
        ["My throat's agony on the left and I can hardly open my mouth now.",
         "This sore throat is so bad I'm dribbling because I can't swallow my own spit."],
        "I've got a sore throat but I can open my mouth fine and I'm not drooling.",
    ),
    "weight_loss_with_hemoptysis_or_night_sweats": (
        ["I've lost weight and I've had night sweats.", "I'm losing weight and coughing up blood."],
        "I haven't lost weight and no night sweats.",
    ),
}


PHRASINGS = yaml.safe_load((REPO / "tests" / "data" / "red_flag_phrasings.yaml").read_text())["rules"]


def test_every_rule_has_cases():
    """Every rule has lay phrasings written before its own phrases were visible to the writer (at least 5 with
    their negated forms, tests/data/red_flag_phrasings.yaml), or hand cases here for the state combinations."""
    rules = {r.id for r in default_rules().rules}
    assert set(CASES) | set(PHRASINGS) == rules
    for rule, entry in PHRASINGS.items():
        assert len(entry["fires"]) >= 5 and len(entry["negated"]) == len(entry["fires"]), rule


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with default_store(tmp_path_factory.mktemp("flags")) as s:
        yield s


def flags_after(store: SessionStore, text: str) -> list[str]:
    session = store.start()
    session.send(text)
    return [f["id"] for f in session.state().red_flags]


@pytest.mark.parametrize("rule", sorted(CASES))
def test_rule_fires_from_lay_phrasings_and_not_when_negated(store, rule):
    fires, negated = CASES[rule]
    for text in fires:
        assert rule in flags_after(store, text), text
    assert rule not in flags_after(store, negated), negated


def test_text_rules_read_context():
    rules = default_rules()
    assert [f.id for f in check_text_flags("I coughed up blood twice.", rules)] == ["hemoptysis"]
    assert check_text_flags("My father coughed up blood before he died.", rules) == []  # a relative's
    assert check_text_flags("I haven't been coughing up blood.", rules) == []
    flag = check_text_flags("I passed out.", rules)[0]
    assert flag.evidence[0] == {"text": "passed out", "sentence": "I passed out.", "match": "phrase"}


def test_a_rule_with_a_context_needs_it_in_the_words_or_the_state():
    """Pre-eclampsia (NICE NG133): a headache or blurred sight is a red flag in pregnancy or just after a birth, and
    an ordinary complaint otherwise. The context is read from the same turn (not when denied) or from the state."""
    rules = default_rules()

    def ids(text, state=None):
        return [f.id for f in check_text_flags(text, rules, state=state)]

    assert "pre_eclampsia" in ids("I'm twenty-eight weeks pregnant and since this morning I see shimmering lights "
                                  "in front of my eyes.")
    assert "pre_eclampsia" in ids("My midwife is seeing me on Friday but my face and both hands swelled up "
                                  "overnight.")
    assert "pre_eclampsia" not in ids("Since this morning I see shimmering lights in front of my eyes.")
    assert "pre_eclampsia" not in ids("I'm definitely not pregnant. My face and both hands swelled up overnight.")
    assert "pre_eclampsia" not in ids("I'm twenty-eight weeks pregnant and my eyesight is fine, no lights or spots.")
    pregnant = {"positive_medical_history": [{"value": "pregnancy"}]}
    assert "pre_eclampsia" in ids("Since this morning I see shimmering lights in front of my eyes.", pregnant)
    # the context said now, the sign already in the state: the two together raise it
    blurred = {"positive_symptom": [{"value": "visual impairment"}]}
    assert "pre_eclampsia" in ids("Oh, and I should say I'm expecting a baby in May.", blurred)
    assert "pre_eclampsia" not in ids("Oh, and I should say I'm expecting a parcel in May.", blurred)



def test_an_everyday_phrase_with_a_rule_word_raises_nothing():
    # rule phrases match inflected ("fainted" finds "faint"); feeling faint is near-fainting, not a blackout
    assert check_text_flags("Whenever I get up too fast I start to feel faint and grey.") == []
    assert [f.id for f in check_text_flags("I felt faint on the bus and then I fainted.")] == ["syncope"]


def test_a_near_miss_of_a_faint_raises_no_syncope():
    """"I nearly blacked out" says the patient did not: a near miss of a syncope phrase takes its words, and the
    clause it is in raises no syncope by meaning either (presyncope is asked apart, NICE CKS Blackouts)."""
    for said in ("I nearly blacked out when I stood up in the kitchen.",
                 "At church I honestly thought I was about to keel over."):
        assert "syncope" not in {f.id for f in check_text_flags(said)}, said
    assert "syncope" in {f.id for f in check_text_flags("I blacked out when I stood up in the kitchen.")}


def test_a_clause_raises_the_rules_it_is_nearest_to():
    """A swollen calf after a journey, with no word of breathlessness, is a DVT's; the pulmonary embolism's
    description that shares its calf half ("my calf is swollen and I am breathless") is a rival too far behind to be
    raised by it (``screen.rival``). Said with the breathlessness, the embolism is raised."""
    calf = "My right calf has swollen right up and it's tender since the long coach trip."
    got = {f.id for f in check_text_flags(calf)}
    assert "deep_vein_thrombosis" in got and "pulmonary_embolism" not in got, got
    both = "My right calf has swollen up since the coach trip and now I'm suddenly really short of breath."
    assert "pulmonary_embolism" in {f.id for f in check_text_flags(both)}


def test_a_hint_of_a_risk_to_life_is_raised_as_possible_and_a_topic_word_is_not():
    """Suicide, self-harm and harm to others are ``recall_first``: a clause the encoder places below ``possible`` but
    well nearer the rule than every ordinary complaint and the social and drug history raises it as "possible".
    Topic words alone (family, tablets, the pill), a denial and a short clause raise nothing."""
    hint = "Most evenings I stand on the bridge on my way home and think how easy it would be to step off."
    flags = {f.id: f for f in check_text_flags(hint)}
    assert "suicidal_ideation" in flags, flags
    assert flags["suicidal_ideation"].level == "possible"
    assert flags["suicidal_ideation"].evidence[0]["similarity"] < default_rules().screen.possible  # the low path
    for quiet in ("I live with my husband and our two boys, and my sister pops round most days.",
                  "I've been taking co-codamol for the pain in my hip, two tablets four times a day.",
                  "I'm on the pill and I take a multivitamin.",
                  "I've never had any thoughts of hurting myself, if that's what you're asking."):
        raised = {f.id for f in check_text_flags(quiet)}
        assert not raised & {"suicidal_ideation", "self_harm", "harm_to_others"}, (quiet, raised)


def test_a_knock_to_the_head_alone_raises_nothing_and_with_a_warning_feature_it_does():
    """NICE NG232: a head injury is an emergency with what follows it (vomiting, a blackout, drowsiness, a worsening
    headache, blood thinners), not by the knock alone."""
    for quiet in ("I whacked my head on the loft hatch last night, just a bit of a lump.",
                  "I knocked my head getting into the car but I'm fine."):
        assert "head_injury" not in {f.id for f in check_text_flags(quiet, opening=True)}, quiet
    said = "I smacked my head on the pavement when I slipped and I've been throwing up since."
    assert "head_injury" in {f.id for f in check_text_flags(said, opening=True)}


def test_an_ordinary_sore_throat_raises_nothing():
    """NICE CKS Sore throat (acute): most sore throats are self-limiting; the airway signs make the flag."""
    for quiet in ("I've had a sore throat for three days, it hurts to swallow but I'm eating and drinking.",
                  "My throat's scratchy and my voice has gone a bit croaky with this cold."):
        assert not check_text_flags(quiet, opening=True), quiet


def test_an_accidental_injury_is_no_hint_of_self_harm_and_a_deliberate_one_is():
    """A cut or a burn got by accident (cooking, DIY, the garden: NICE CKS Lacerations, Burns and scalds) is among
    the ordinary complaints the screen contrasts with; self-harm is the injury done on purpose."""
    for quiet in ("I sliced the top of my thumb open with the bread knife on Sunday.",
                  "I caught my hand on the oven shelf and it's blistered a bit.",
                  "I grazed both knees when I tripped over the kerb."):
        raised = {f.id for f in check_text_flags(quiet, opening=True)}
        assert "self_harm" not in raised, (quiet, raised)
    for said in ("When it all gets too much I take a blade to the tops of my legs.",
                 "I've been burning my wrists with a lighter when I'm upset."):
        assert "self_harm" in {f.id for f in check_text_flags(said, opening=True)}, said


def test_a_clause_that_denies_part_of_what_it_says_is_read_by_what_it_affirms():
    """The re-walk of a cardiac chest pain: "My arm's not weak, it just aches with the pain" raised the stroke emergency
    (0.76 from "my arm suddenly went weak" as said): compared without its denied words it is an ache. A description
    that denies too still meets the whole clause ("... and not waking up")."""
    said = "Honestly my arm isn't weak at all, it's just stiff from the gym."
    assert "stroke_signs" not in {f.id for f in check_text_flags(said)}
    assert "stroke_signs" in {f.id for f in check_text_flags("My left arm has gone weak and I can't lift the kettle.")}


def test_a_lost_function_said_as_a_negation_is_a_stroke_sign_and_a_lasting_tingle_is_not():
    """FAST's signs are lost functions ("cannot lift", "cannot smile"), and patients say them as negations of what a
    part does: they are the complaint, not its denial, and the NHS's own words of lost function are among the rule's
    descriptions. A long-standing tingle of the fingers (NICE CKS Carpal tunnel syndrome) is an ordinary complaint."""
    said = "Since breakfast the right side of my mouth won't move when I try to smile."
    assert "stroke_signs" in {f.id for f in check_text_flags(said)}, said
    lasting = "For a year or so I've had tingling and numbness in my thumb and fingers, mostly at night."
    assert "stroke_signs" not in {f.id for f in check_text_flags(lasting)}


@pytest.mark.parametrize(("said", "rule", "raised"), [
    # a thought, urge or fear of harming another person (NICE NG10; NICE CG192 asks every new mother about thoughts
    # of harming the baby): a harm verb and a person, however combined
    ("I get these awful urges to smother my newborn and it terrifies me.", "harm_to_others", True),
    ("I keep picturing myself stabbing my flatmate.", "harm_to_others", True),
    ("Honestly I'm frightened I could shake the baby when she won't stop crying.", "harm_to_others", True),
    ("I'd never hurt my kids, I'm just exhausted.", "harm_to_others", False),
    ("I'm worried I might hurt her feelings if I say no.", "harm_to_others", False),
    ("I'm scared of hurting my back again lifting the twins.", "harm_to_others", False),
    # preparatory acts said without a word of suicide (C-SSRS "preparatory behaviour")
    ("I've been quietly hoarding my painkillers in a shoebox.", "suicidal_ideation", True),
    ("I've written letters to my kids saying goodbye.", "suicidal_ideation", True),
    ("I've been saving up for a holiday in Spain.", "suicidal_ideation", False),
    ("I keep my tablets in a box by the bed so I remember them.", "suicidal_ideation", False),
    ("I wrote a letter to the council about the bins.", "suicidal_ideation", False),
    # finding out what dose would be lethal (researching a method: C-SSRS preparatory behaviour)
    ("Last night I was googling how much paracetamol would be enough to not wake up.", "suicidal_ideation", True),
    ("I checked how many of my sleeping tablets it would take.", "suicidal_ideation", True),
    ("I looked up how many ibuprofen I can take in a day with my period pain.", "suicidal_ideation", False),
    ("I asked the pharmacist how much it would cost to get the tablets on prescription.", "suicidal_ideation", False),
    # an injury done to oneself, told with what makes it deliberate (NICE NG225): a tool, a reason, a feeling
    ("I scratch at my skin until it bleeds whenever I feel panicky.", "self_harm", True),
    ("Sometimes I punch my thighs really hard to stop the thoughts.", "self_harm", True),
    ("I burnt my forearm on the grill at work last week.", "self_harm", False),
    ("I bit my tongue when I fell over.", "self_harm", False),
    # a way of dying thought of (C-SSRS item 3: ideation with a method), with no word of suicide
    ("Lately I keep thinking about walking out in front of a lorry on the bypass.", "suicidal_ideation", True),
    ("I've considered throwing myself off the top of the cliffs near us.", "suicidal_ideation", True),
    ("There have been days I planned to hang myself in the garage.", "suicidal_ideation", True),
    ("I jumped off the bottom step and went over on my ankle.", "suicidal_ideation", False),
    ("I stepped in front of a car last week but it stopped in time, gave me a fright.", "suicidal_ideation", False),
    # the wish not to wake said as what would be better (C-SSRS item 1)
    ("Honestly it would be a relief to never wake up.", "suicidal_ideation", True),
    ("I'd rather I didn't wake up tomorrow.", "suicidal_ideation", True),
    ("I hope I don't wake up coughing again tonight.", "suicidal_ideation", False),
    ("Yesterday I gave my guitar and all my books away to my mates, I won't need them.", "suicidal_ideation", False),
    ("Last week I gave all my stuff away, I've sorted everything out now.", "suicidal_ideation", True),
    ("I've been slashing my forearms with a razor blade when it gets too much.", "self_harm", True),
    ("I sliced my thumb on a tin lid making tea.", "self_harm", False),
    # the breath of ketoacidosis (NHS: "smells fruity, like pear drop sweets or nail varnish")
    ("I'm diabetic, I've been vomiting since last night and my husband says my breath smells of pear drops.",
     "hyperglycaemia", True),
    # a weapon kept hidden and a threat of finishing someone (NICE NG10: access to weapons)
    ("He's been hiding a machete in his wardrobe and muttering about the landlord.", "harm_to_others", True),
    ("She told me she'll deal with that man once and for all.", "harm_to_others", True),
    ("I'm going to sort my sleep out for good this time.", "harm_to_others", False),
    ("We keep a bread knife in the kitchen drawer.", "harm_to_others", False),
])
def test_a_rule_pattern_fires_on_what_it_describes_and_not_on_a_look_alike(said, rule, raised):
    """The rules' ``patterns``: word combinations a phrase list cannot spell, read by ConText like phrases."""
    assert (rule in {f.id for f in check_text_flags(said)}) is raised


def test_breathlessness_lying_flat_or_on_exertion_is_not_breathlessness_at_rest():
    """Orthopnoea and breathlessness on exertion are what a history of heart failure or COPD is about (NICE CKS
    Heart failure, Breathlessness): asked about, not the emergency of breathlessness at rest, which still fires."""
    for said in ("I have to sleep sitting up on a pile of pillows, lying down I just can't get my breath.",
                 "Going up a hill I can't get my breath and have to stop halfway."):
        assert "severe_dyspnea" not in {f.id for f in check_text_flags(said)}, said
    rest = "I can't get my breath at all, even sitting still in the chair."
    at_rest = {f.id: f.level for f in check_text_flags(rest)}
    assert at_rest.get("severe_dyspnea") == "emergency", at_rest


def test_breathlessness_now_said_with_what_makes_it_worse_is_still_raised():
    """A patient who cannot breathe says too what makes it worse ("even worse when I lie down", "if I walk at all I
    have to stop"): the effort or the lying down does not make it breathlessness on exertion. A rule that set aside
    every sentence naming effort or lying down (tried, and reverted) had missed both."""
    for said in ("I'm really struggling to breathe and it's even worse when I lie down.",
                 "I can't breathe properly and if I walk at all I have to stop after a few steps."):
        assert "severe_dyspnea" in {f.id for f in check_text_flags(said, opening=True)}, said


def test_a_verdict_that_all_is_well_raises_no_flag_by_its_denied_words():
    """"I'm getting air in fine" is denied by its verdict ("fine"), not by a negation: it is no match for a negated
    description ("I cannot get any air in even sitting down"), which only a clause that negates may meet. It had
    raised the severe-breathlessness emergency in a clinician's walkthrough of a quinsy."""
    assert "severe_dyspnea" not in {f.id for f in check_text_flags("No trouble breathing, I'm getting air in fine.")}
    assert "suicidal_ideation" in {f.id for f in check_text_flags("I just don't want to be here any more.")}


@pytest.mark.parametrize(("said", "rule"), [
    ("My chest has felt so heavy since I got up.", "acute_coronary_syndrome"),
    ("His skin has gone all mottled and he's burning up.", "sepsis"),
    ("Her lips have gone really swollen after the cashew nuts.", "anaphylaxis"),
])
def test_a_red_flag_quality_said_of_the_part_is_its_phrase(said, rule):
    # the rules' "<quality> <part>" phrases ("heavy chest", "mottled skin") said of the part, words between
    flags = {f.id: f for f in check_text_flags(said, opening=True)}
    assert rule in flags and any(e.get("match") == "phrase" for e in flags[rule].evidence), flags


def test_a_red_flag_quality_denied_of_the_part_raises_nothing():
    assert not check_text_flags("My chest isn't heavy at all, it's just my back.", opening=True)


@pytest.mark.parametrize(("said", "fainted"), [
    ("There's a faint pink blotch on my shin.", False),  # an adjective: dim, not a faint
    ("The music sounds faint in my right ear now.", False),
    ("The line on the test was faint.", False),
    ("I had a faint in the supermarket on Saturday.", True),  # a noun: one faint
    ("I often faint when I stand up too quickly.", True),  # the verb
])
def test_faint_as_dim_is_no_fainting(said, fainted):
    """"faint" meaning dim or weak raises no syncope, in the red-flag phrases and in the NLU, both read through one
    phrase finder (agent.core.clinical_text._dim); fainting said as a verb or a noun still does."""
    from eval.runs.nlu_check import build_nlu

    raised = "syncope" in {f.id for f in check_text_flags(said, default_rules())}
    frames = build_nlu()[0].read(said, [], {}, "").frames
    read = any(x.get("value") == "syncope" for f in frames for x in (f.get("slots") or {}).get("positive_symptom", []))
    assert (raised, read) == (fainted, fainted), (said, raised, frames)


@pytest.mark.parametrize(("said", "rule", "raised"), [
    ("I collapsed once, maybe fifteen years ago, on holiday in Spain. Never since.", "syncope", False),
    ("I blacked out three years ago and again last night in the bathroom.", "syncope", True),
    ("I keeled over at work an hour ago.", "syncope", True),
    ("I had a seizure when I was about six, with a fever.", "seizure", False),
    ("He had fits as a baby but nothing for years.", "seizure", False),
    ("I had a fit this afternoon and bit my tongue.", "seizure", True),
])
def test_an_event_long_past_is_history_and_its_return_is_not(store, said, rule, raised):
    """A symptom said to have begun years ago, or in childhood, is the patient's past and raises no acute rule
    (safety.PAST_EPISODE_DAYS; the HISTORICAL cues of clinical_text, an age said as the time); said to have come back
    lately ("... and again last night"), it is raised."""
    assert (rule in flags_after(store, said)) is raised, said


@pytest.mark.parametrize(("said", "value", "status", "rule"), [
    ("Since I got up today there's no hearing at all in my right ear.", "hearing impairment", "positive",
     "sudden_hearing_loss"),
    ("I woke up on Tuesday with no sight in my left eye.", "vision loss", "positive", "sudden_visual_loss"),
    ("There's no feeling in my toes on the right.", "paresthesia", "positive", None),
    ("I've had no feeling of dizziness at all.", "paresthesia", None, None),
    ("No vision problems, no hearing problems.", "vision loss", None, None),
])
def test_no_faculty_in_a_part_is_its_loss_not_a_denial(store, said, value, status, rule):
    """"No hearing in my ear", "no feeling in my toes" say the faculty is lost (clinical_text.LOST_FACULTIES), the
    complaint itself; "no feeling of dizziness" and "no vision problems" still deny. Woken with it, the patient's
    waking is its onset, which a sudden loss's rule needs."""
    session = store.start()
    session.send(said)
    st = session.state()
    found = {s: [i["value"] for i in st.patient_state.get(f"{s}_symptom") or []]
             for s in ("positive", "negative", "unknown")}
    got = next((s for s, values in found.items() if value in values), None)
    assert got == status, (said, found)
    if rule:
        assert rule in [f["id"] for f in st.red_flags], said


def test_a_reply_that_denies_the_sign_meets_no_description_that_denies_only_its_pain():
    """"Blood in my urine but no pain" (painless haematuria) affirms the sign: a reply denying the blood ("No blood,
    but my wee's gone cloudy") is compared by what it affirms, and raises no cancer warning; the sign said painless
    still does."""
    from agent.core.safety import check_text_flags

    assert not [f.id for f in check_text_flags("No blood at all, but my wee's gone cloudy and it smells.")]
    assert "cancer_warning_signs" in [f.id for f in check_text_flags("There's blood in my wee but it doesn't hurt.")]
