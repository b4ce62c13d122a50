"""Issue 18, deliverable 4: every question a presentation plan makes the questionnaire policy ask reads as a clinician
would say it. Each plan's questions are built the way the policy builds them (``QuestionnairePolicy._ask``,
``_decisive``, ``_decisive_record``, ``_characterise``, ``section_candidates``, grouped up to ``PLAN_GROUP`` a turn,
``to_actions``), plus two whole interviews per plan (a patient who answers nothing and one who says yes to every
screen); each turn is rendered by the shipped template NLG and held to general rules: one topic a turn, agreement, a
long name said once, no location said twice, no vocabulary code or unexplained clinical term, a screen naming its
items, a bounded length. A failure names the plan, the part of the plan and the question."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterator

import pytest
from policy_driver import run_interview

from agent.core import cmas
from agent.core.ontology import default_vocabulary
from agent.core.protocol import TurnContext
from policies.presentations import Ask, Plan, default_plans
from policies.questionnaire import PLAN_GROUP, QuestionnairePolicy, load_questionnaire_config
from policies.questions import Question, questions_of, to_actions
from policies.registry import make_template_nlg

PLANS = default_plans()
CONFIG = load_questionnaire_config()
POLICY = QuestionnairePolicy(dataclasses.replace(CONFIG, plans=PLANS))
NLG = make_template_nlg({})
LEX = NLG.lex
LATER = TurnContext(
    turns=[("doctor", "..."), ("patient", "...")], past_actions=[[{"action": "nod_prompt_salutations"}]]
)
PARTS = ("characterise", "red_flag_screen", "associated", "risk_factors", "interview")
MAX_CHARS = 200

Turn = tuple[str, list[Question]]  # (what it asks, in words for a failure message; the questions of one doctor turn)


# --------------------------------------------------------------------------- the questions, as the policy builds them


def positive(a: Ask) -> dict:
    """A state in which the patient has the item ``a`` names (so its decisive check and follow-ups are asked)."""
    item = {"value": a.value, **({"location": list(a.location)} if a.location else {})}
    if a.base in cmas.RECORD_SLOTS or a.base == "basic_information":
        return {}
    return {f"positive_{a.base}": [item]}


def turns_of(questions: list[Question], limit: int = PLAN_GROUP) -> Iterator[list[Question]]:
    """Screening questions asked together as the policy asks a group: one slot type, up to ``limit`` a turn, and a
    second question about the same item starts a new turn."""
    chunk: list[Question] = []
    for q in dict.fromkeys(questions):
        same_item = any(p.base == q.base and p.value == q.value for p in chunk)
        if chunk and (len(chunk) >= limit or q.base != chunk[0].base or same_item):
            yield chunk
            chunk = []
        chunk.append(q)
    if chunk:
        yield chunk


def by_base(questions: list[Question]) -> list[Question]:
    return [q for base in dict.fromkeys(q.base for q in questions) for q in questions if q.base == base]


def characterise_turns(plan: Plan) -> Iterator[Turn]:
    for symptom in plan.characterise:
        n = POLICY.checks_a_turn(symptom)
        qs = POLICY._characterise(plan, {"value": symptom})
        for i, q in enumerate(qs):
            yield f"characterise {symptom}: {q.check}", [q]
            if n > 1 and i + 1 < len(qs):  # the policy asks a symptom's checks n a turn, in plan order
                yield f"characterise {symptom}: {q.check} + {qs[i + 1].check}", qs[i:i + n]


def screen_turns(plan: Plan) -> Iterator[Turn]:
    for s in plan.red_flag_screen:
        asked = [q for a in s.ask if (q := POLICY._ask({}, a)) is not None]
        for group in turns_of(by_base(asked)):
            yield f"screen {s.rule}", group
        for a in s.ask:
            if (q := POLICY._decisive(positive(a), a)) is not None:
                yield f"screen {s.rule}: {a.value} {a.check}", [q]
    whole = [q for s in plan.red_flag_screen for a in s.ask if (q := POLICY._ask({}, a)) is not None]
    for group in turns_of(by_base(whole)):  # the policy asks the screen by slot type across rules
        yield "screen (all rules)", group


def associated_turns(plan: Plan) -> Iterator[Turn]:
    for i, g in enumerate(plan.associated):
        for group in turns_of([q for a in g.ask if (q := POLICY._ask({}, a)) is not None]):
            yield f"associated {i} ({g.system})", group
        for a in g.ask:
            if (q := POLICY._decisive(positive(a), a)) is not None:
                yield f"associated {i}: {a.value} {a.check}", [q]


def risk_turns(plan: Plan) -> Iterator[Turn]:
    asked = [q for a in plan.risk_factors if (q := POLICY._ask({}, a)) is not None]
    for group in turns_of(by_base(asked)):
        yield f"risk factors ({group[0].base})", group
    for a in plan.risk_factors:
        state = positive(a)
        if a.check is not None and (q := POLICY._decisive_record(state, a)) is not None:
            yield f"risk factor {a.value}: {a.check}", [q]
        follow = [c.question for c in POLICY.section_candidates(TurnContext(state=state))
                  if c.question.check is not None and c.question.value == a.value]
        for i in range(0, len(follow), CONFIG.questions_per_turn):  # a section asks a positive item's checks
            yield f"risk factor {a.value}: follow-up", follow[i:i + CONFIG.questions_per_turn]


def says_nothing(questions: list[Question]) -> dict:
    return {}


def says_yes(questions: list[Question]) -> dict:
    """Yes to every screening question (raising red flags, getting decisive checks and follow-ups)."""
    slots: dict[str, list] = {}
    for q in questions:
        located = q.check == "location" and q.values
        if q.base in cmas.RECORD_SLOTS or q.base == "basic_information" or (q.check is not None and not located):
            continue
        if q.value.casefold() not in cmas.OPEN_VALUES:
            slots.setdefault(f"positive_{q.base}", []).append(
                {"value": q.value, **({"location": list(q.values)} if located else {})})
    return slots


def interview_turns(plan: Plan) -> Iterator[Turn]:
    t = plan.triggers[0]
    first = {"positive_symptom": [{"value": t.value, **({"location": [t.location[0]]} if t.location else {})}]}
    for name, patient in (("no answers", says_nothing), ("yes to all", says_yes)):
        _, past, stages, _ = run_interview(POLICY, patient, first, max_turns=200)
        for i, (actions, stage) in enumerate(zip(past, stages, strict=True)):
            if qs := questions_of(actions):
                yield f"interview ({name}) turn {i} {stage}", qs


BUILDERS = {"characterise": characterise_turns, "red_flag_screen": screen_turns, "associated": associated_turns,
            "risk_factors": risk_turns, "interview": interview_turns}


def render(questions: list[Question]) -> tuple[list[dict], str]:
    actions = to_actions(questions)
    assert cmas.parse_actions(actions) == actions
    return actions, NLG.verbalize(actions, LATER).value


# --------------------------------------------------------------------------- what a clinician's question is


def _lexicon_wordings() -> list[str]:
    said: list[str] = []
    for section in (LEX.terms, LEX.questions):
        said += [w for d in section.values() for w in d.values()]
    for pairs in (LEX.habit_verbs, LEX.exposure_phrases):
        said += [w for pair in pairs.values() for w in pair]
    said += list(LEX.locations.values())
    for name in ("history_verbs", "short_names"):  # wordings a later lexicon may add
        extra = getattr(LEX, name, None) or {}
        said += [w for v in extra.values() for w in ([v] if isinstance(v, str) else v.values())]
    return said


WORDINGS = _lexicon_wordings()
REVIEWED = {w.casefold() for text in WORDINGS for w in re.findall(r"[A-Za-z][\w-]*", text)}
"""Words a person chose for the patient (the lexicon's wordings): a clinical term or acronym among them was meant."""
REVIEWED_ASIDES = {m.casefold() for text in WORDINGS for m in re.findall(r"\([^)]*\)", text)}
JARGON = re.compile(r"\b[a-z-]*(?:algia|emesis|phagia|uria|dipsia|pnoea|pnea|rrhoea|rrhea|orrhage|opathy|plopia|phobia|"
                    r"paresis|plegia|phasia|ptysis|aemia|emia|osis|itis|edema|oedema|staxis|icaria|ritus|ismus|"
                    r"idor|ization|ideation|lena)\b", re.I)
"""Word endings of clinical terms a patient may not know (dysphagia, photophobia, melena, derealization, ...)."""
EVENTS = {"injury", "fracture", "surgery", "operation", "accident", "sex", "activity", "pregnancy", "diet",
          "immobility", "harm", "self-harm", "ideation", "overweight", "attack", "infection"}
"""Things that happen to a patient, or that they do: asked "have you had / been / done", not "diagnosed with"."""
LOCATION_WORDS = (
    {w for loc in default_vocabulary().ontology.locations for w in re.findall(r"[a-z]+", loc.casefold())}
    | {w for loc in LEX.locations.values() for w in re.findall(r"[a-z]+", loc.casefold())}
    | {w for p in PLANS.values() for _, _, locs in p.questions() for loc in locs for w in re.findall(r"[a-z]+", loc)}
    | {"or", "and", "the", "of", "your", "side", "body", "one", "left", "right", "arms", "legs", "arm", "leg"}
)
PLACE = re.compile(r"\b(?:in|on|to|into) (?:your|the|one) ")
SINGULAR_AUX = {"is", "has", "does", "was"}
PLURAL_AUX = {"are", "have", "do", "were"}


def plural(term: str) -> bool:
    """Whether a patient-facing name is plural: its head noun (before a qualifier: "problems passing urine", "changes
    in your bowel movements") ends in -s but not -ss/-us/-is ("weakness", "tinnitus", "haemoptysis")."""
    bare = re.sub(r"\s*\([^)]*\)", "", term).strip().casefold()
    head = re.split(r" (?:or|and|in|on|of|to|at|from|when|that|with|passing|keeps?|up|after|during|like|such) ", bare)[
        0
    ]
    word = head.split()[-1] if head.split() else ""
    number = getattr(LEX, "number", {}) or {}
    if word in number:
        return number[word] == "plural"
    return word.endswith("s") and not word.endswith(("ss", "us", "is"))


def term_of(base: str, value: str) -> str:
    return "your symptoms" if value.casefold() == "all" else LEX.term(base, value)


def forms(base: str, value: str) -> list[str]:
    """How an item may be named in a question: its lexicon question or term, the term without its aside or its own
    place ("weakness" of "weakness in your arms or legs"), its habit verb or exposure object."""
    term = LEX.term(base, value)
    out = [LEX.question(base, value) or term, term, re.sub(r"\s*\([^)]*\)", "", term),
           re.sub(r"\s+(?:in|on) your .*$", "", term), re.sub(r"^(?:an?|any|some) ", "", term)]
    out += list(LEX.habit_verbs.get(value.casefold(), ()))[:1] if base == "habit" else []
    out += list(LEX.exposure_phrases.get(value.casefold(), ()))[1:] if base == "exposure" else []
    return [f.casefold() for f in out if f]


def problems(questions: list[Question], actions: list[dict], text: str) -> list[str]:
    """What a clinician would not say in ``text``, the rendering of one doctor turn asking ``questions``."""
    out: list[str] = []
    low = text.casefold()
    items = list(dict.fromkeys((q.base, q.value) for q in questions))
    screening = [q for q in questions if q.check is None or (q.check == "location" and q.values)]
    checked = [q for q in questions if q not in screening]

    # shape and length
    if not text or text != text.strip() or "  " in text or not text[0].isupper() or text[-1] not in "?.":
        out.append("not one clean sentence sequence")
    if len(text) > MAX_CHARS:
        out.append(f"{len(text)} characters (at most {MAX_CHARS})")
    if m := re.search(r"\b(\w+)\s+\1\b", text, re.I):
        out.append(f"word repeated back to back: {m.group(0)!r}")

    # no vocabulary code, no unexplained clinical term
    for bad in ("_", "/", "{", "}", "None", "and/or", "(L)", "(R)"):
        if bad in text:
            out.append(f"code leaks: {bad!r}")
    for aside in re.findall(r"\([^)]*\)", text):
        if aside.casefold() not in REVIEWED_ASIDES:
            out.append(f"parenthesis no lexicon wording has: {aside!r}")
    for word in re.findall(r"\b[A-Z][A-Z0-9-]+\b", text):
        if word.casefold() not in REVIEWED and word != "I":
            out.append(f"all-caps code: {word!r}")
    for m in JARGON.finditer(text):
        if m.group(0).casefold() not in REVIEWED:
            out.append(f"clinical term no lexicon wording explains: {m.group(0)!r}")
    if m := re.search(r"\bany (?:a|an|the|being|feeling|looking|passing|getting)\b", low):
        out.append(f"'any' before an article or a verb: {m.group(0)!r}")
    if m := re.search(r"\b(?:do|does|did) (?:you|they|it) \w+ed\b", low):
        out.append(f"tense: {m.group(0)!r}")
    if (m := re.search(r"diagnosed with ([^?.,]*)", low)) and (
            set(re.findall(r"[a-z-]+", m.group(1))) & EVENTS or re.match(r"an? ", m.group(1))):
        out.append(f"an event or activity asked as a diagnosis: {m.group(0)!r}")

    # a place is said once
    places = list(PLACE.finditer(low))
    for a, b in zip(places, places[1:], strict=False):
        between = re.findall(r"[a-z]+", low[a.end():b.start()])
        if between and all(w in LOCATION_WORDS for w in between):
            out.append(f"location said twice: {low[a.start():b.end() + 12]!r}")

    said_places = [m.group(0) for m in re.finditer(r"\b(?:in|on) your [a-z]+(?: or [a-z]+)?", low)]
    for phrase in dict.fromkeys(said_places):
        if said_places.count(phrase) > 1 and phrase.split()[-1] in LOCATION_WORDS:
            out.append(f"the same place said {said_places.count(phrase)} times: {phrase!r}")

    # one topic: one question, or one item's question and its follow-up
    n_q = text.count("?")
    own = [i for i in items if LEX.question(*i) or i[0] in cmas.RECORD_SLOTS or i[0] == "basic_information"]
    if checked:
        allowed = min(2, len(checked)) if len(items) == 1 else 2
    else:
        allowed = min(2, len(own) + (1 if len(own) < len(items) else 0))
    if n_q > allowed:
        out.append(f"{n_q} questions for one topic (at most {allowed})")

    # a screen names every item it asks about, and its places
    for q in screening:
        if q.base in cmas.RECORD_SLOTS or q.base == "basic_information" or q.value.casefold() in cmas.OPEN_VALUES:
            continue  # asked by their own question ("What do you do for work?", "How old are you?")
        if not any(f in low for f in forms(q.base, q.value)):
            out.append(f"screen does not name {q.value!r}")
        if q.values:
            where = [LEX.location(x).casefold() for x in q.values]
            joined = LEX.locations.get(", ".join(sorted(x.casefold() for x in q.values)), "").casefold()
            if not (all(w in low for w in where) or (joined and joined in low)):
                out.append(f"screen does not say where: {list(q.values)}")

    # agreement and a long name said once
    subjects = [(b, v) for b, v in items if b in ("symptom", "medication") and any(q.check for q in checked
                                                                                  if (q.base, q.value) == (b, v))]
    for base, value in items:
        term = term_of(base, value).casefold()
        if ("(" in term or len(term.split()) >= 3) and low.count(term) > 1:
            out.append(f"long name said {low.count(term)} times: {term!r}")
    for base, value in subjects:
        term = term_of(base, value).casefold()
        many = plural(term)
        for m in re.finditer(re.escape(term), low):
            before = re.findall(r"[a-z]+", low[:m.start()])
            if before and before[-1] == "the":
                before = before[:-1]
            aux = before[-1] if before else ""
            if len(before) >= 2 and before[-2] == "you":
                continue  # "do you take", "do you currently have"
            if (many and aux in SINGULAR_AUX) or (not many and aux in PLURAL_AUX):
                out.append(f"agreement: {aux!r} with {'plural' if many else 'singular'} {term!r}")
        if len(subjects) == 1 and term in low:
            after = low[low.index(term) + len(term):]
            pronoun = re.search(r"\b(it|its)\b" if many else r"\b(they|them|their)\b", after)
            if pronoun:
                out.append(f"agreement: {pronoun.group(0)!r} refers to {'plural' if many else 'singular'} {term!r}")
    return out


# --------------------------------------------------------------------------- the tests


@functools.cache
def rendered(plan_id: str, part: str) -> list[tuple[str, list[Question], str, list[str]]]:
    out = []
    for label, questions in BUILDERS[part](PLANS[plan_id]):
        actions, text = render(questions)
        out.append((label, questions, text, problems(questions, actions, text)))
    return out


@pytest.mark.parametrize("part", PARTS)
@pytest.mark.parametrize("plan_id", sorted(PLANS))
def test_every_question_of_the_plan_reads_as_a_clinician_would_say_it(plan_id, part):
    bad = [f"{label}: {text!r}: {'; '.join(p)}" for label, _, text, p in rendered(plan_id, part) if p]
    assert not bad, f"{plan_id} {part}: {len(bad)} renderings read wrong:\n" + "\n".join(bad)


def test_the_checks_cover_every_part_of_every_plan():
    n = {part: sum(len(rendered(plan_id, part)) for plan_id in PLANS) for part in PARTS}
    assert all(n.values()), n
    assert sum(n.values()) > 1500, n


@pytest.mark.parametrize("text, wrong", [
    ("Have you had any weakness in your arms or legs in your legs?", "location said twice"),
    ("How long does the headaches last each time, or is it constant?", "agreement"),
    ("Has anti-inflammatory painkillers (such as ibuprofen) helped?", "agreement"),
    ("Have you ever been diagnosed with head injury?", "diagnosis"),
    ("Do you used to smoke?", "tense"),
    ("Have you had any dysphagia?", "clinical term"),
    ("Have you had any chest pain rest rest?", "repeated"),
    ("Are you taking corticosteroid and/or corticosteroid derivative?", "code leaks"),
    ("Have you had any being unable to pass urine?", "'any' before"),
    ("Have you had any weakness in your legs, or numbness or tingling in your legs?", "the same place"),
])
def test_the_rules_catch_what_a_clinician_caught(text, wrong):
    """The rules are not vacuous: renderings a clinician flagged break them."""
    questions = {
        "location said twice": [Question("symptom", "weak limbs", "location", ("leg",))],
        "agreement": [Question("symptom", "headache", "duration")] if "headaches" in text
        else [Question("medication", "nsaids", "impact")],
    }.get(wrong, [Question("symptom", "fever")])
    found = problems(questions, to_actions(questions), text)
    assert any(wrong in p for p in found), found


def test_a_long_name_is_said_once_and_then_referred_to():
    text = ("What do you take anti-inflammatory painkillers (such as ibuprofen) for? "
            "And has anti-inflammatory painkillers (such as ibuprofen) helped?")
    qs = [Question("medication", "nsaids", "respone_to"), Question("medication", "nsaids", "impact")]
    found = problems(qs, to_actions(qs), text)
    assert any("long name said 2 times" in p for p in found) and any("agreement" in p for p in found), found


_SPEAKER_YOU = re.compile(r"\b(?:thank you|(?:could|can|would) you (?:tell|describe|say|explain|give|rate|think)|"
                          r"do you (?:know|think|remember)|your local emergency number)\b", re.I)
_DISAGREES = re.compile(r"\b(?:(?:have|do|are|were) (?:she|he)|(?<!does )(?<!did )(?<!can )(?<!could )(?<!would )"
                        r"(?<!will )(?:she|he) (?:have|do|are|were|don't|haven't)|(?:has|does|is|was) they)\b", re.I)


@pytest.mark.parametrize("relative", ["mum", "son", "baby"])
def test_every_question_of_every_plan_is_put_to_a_guardian_about_the_patient(relative):
    """A guardian speaking for the patient (a blind walkthrough: a daughter for her 81-year-old mother was asked
    "have you had unprotected sex recently?") is asked about the patient in the third person: no "you"/"your" left
    but what is asked of the speaker, and the verb agrees with the pronoun ("Has she had", "what she does")."""
    from policies.addressing import about_the_patient

    bad = []
    for plan_id in sorted(PLANS):
        for part in PARTS:
            for label, _, text, _ in rendered(plan_id, part):
                said = about_the_patient(text, relative)
                rest = _SPEAKER_YOU.sub("", said)
                if re.search(r"\byou(?:r|rs|rself|'ve|'re|'d|'ll)?\b", rest, re.I) or _DISAGREES.search(said):
                    bad.append(f"{plan_id} {part} {label}: {said!r}")
    assert not bad, f"{len(bad)} questions not put about the {relative}:\n" + "\n".join(bad[:20])
