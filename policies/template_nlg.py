"""Template NLG: any valid CMAS action list -> one natural doctor utterance, no model.

The grammar lives here; the patient-facing wording of values lives in
``configs/nlg_lexicon.yaml``. The agent is a history-taking assistant, never a clinician:
greetings say so, and diagnosis actions become "possible conditions to discuss with
your clinician".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from agent import cmas
from agent.paths import REPO_ROOT
from agent.protocol import ModuleOutput, TurnContext

DEFAULT_LEXICON = REPO_ROOT / "configs" / "nlg_lexicon.yaml"

GREETING = (
    "Hello, I'm a history-taking assistant. I'll ask you some questions so that your clinician has a clear "
    "picture of your health before they see you; I don't replace them. What brings you in today?"
)
FAREWELL = (
    "Thank you, those are all my questions. I'll pass your history on to your clinician, who will go through it "
    "with you. Take care."
)
ANYTHING_ELSE = "Is there anything else you would like to tell me or ask about?"
ACKNOWLEDGE = "Thank you for telling me."
OTHER = "Could you tell me a little more about that?"
DIAGNOSIS_CAVEAT = "Only your clinician can make a diagnosis, after seeing you."


@dataclass
class Lexicon:
    terms: dict[str, dict[str, str]] = field(default_factory=dict)
    questions: dict[str, dict[str, str]] = field(default_factory=dict)
    habit_verbs: dict[str, tuple[str, str]] = field(default_factory=dict)
    exposure_phrases: dict[str, tuple[str, str]] = field(default_factory=dict)
    locations: dict[str, str] = field(default_factory=dict)

    def term(self, base: str, value: str) -> str:
        found = self.terms.get(base, {}).get(value.casefold())
        if found:
            return found
        return value.replace("/", " or ").replace("_", " ").strip()

    def question(self, base: str, value: str) -> str | None:
        return self.questions.get(base, {}).get(value.casefold())

    def location(self, value: str) -> str:
        return self.locations.get(value.casefold(), value.replace("(L)", " (left)").replace("(R)", " (right)"))


def load_lexicon(path: str | Path = DEFAULT_LEXICON) -> Lexicon:
    raw = yaml.safe_load(Path(path).read_text()) or {}
    known = {"terms", "questions", "habit_verbs", "exposure_phrases", "locations"}
    if unknown := set(raw) - known:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}")
    for key in ("terms", "questions"):
        for base in raw.get(key) or {}:
            if base not in cmas.SLOTS:
                raise ValueError(f"{path}: {key}: unknown slot type {base!r}")
    for key in ("habit_verbs", "exposure_phrases"):
        for value, pair in (raw.get(key) or {}).items():
            if not (isinstance(pair, list) and len(pair) == 2):
                raise ValueError(f"{path}: {key}.{value}: expected a pair [phrase, phrase]")

    def low(d: dict) -> dict:
        return {str(k).casefold(): v for k, v in (d or {}).items()}

    return Lexicon(
        terms={b: low(v) for b, v in (raw.get("terms") or {}).items()},
        questions={b: low(v) for b, v in (raw.get("questions") or {}).items()},
        habit_verbs={k: tuple(v) for k, v in low(raw.get("habit_verbs")).items()},
        exposure_phrases={k: tuple(v) for k, v in low(raw.get("exposure_phrases")).items()},
        locations=low(raw.get("locations")),
    )


def join_or(words: list[str], conj: str = "or") -> str:
    words = [w for w in words if w]
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} {conj} {words[-1]}"


def _lower_first(s: str) -> str:
    """Lower the first letter for a connective ("And when ..."), unless it starts an acronym or "I"."""
    if len(s) > 1 and s[0].isupper() and s[1].islower() and not s.startswith(("I ", "I'")):
        return s[0].lower() + s[1:]
    return s


@dataclass
class Sentence:
    text: str
    question: bool = True


class TemplateNLG:
    """Verbalizes CMAS actions; raises :class:`agent.cmas.CMASError` on actions that are not valid CMAS."""

    def __init__(self, lexicon: Lexicon | None = None):
        self.lex = lexicon or load_lexicon()

    # ------------------------------------------------------------------ protocol

    def verbalize(self, actions: list[dict], ctx: TurnContext) -> ModuleOutput:
        actions = cmas.parse_actions(actions)
        return ModuleOutput(value=self.render(actions, ctx), meta={"nlg": "template"})

    def render(self, actions: list[dict], ctx: TurnContext | None = None) -> str:
        ctx = ctx or TurnContext()
        opening = not ctx.past_actions and ctx.doctor_turns == 0
        groups: list[list[Sentence]] = []
        only_chit_chat = all(a["action"] == "chit-chat" for a in actions)
        for act in actions:
            kind = act["action"]
            if kind == "nod_prompt_salutations":
                groups.append([Sentence(GREETING if opening else FAREWELL, question=False)])
            elif kind == "chit-chat":
                groups.append([Sentence(ANYTHING_ELSE if only_chit_chat else ACKNOWLEDGE, question=only_chit_chat)])
            elif kind == "other":
                groups.append([Sentence(OTHER)])
            elif kind == "diagnosis":
                groups.append(self._diagnosis(act))
            else:
                groups.append([s for base, items in act.items() if base != "action" for s in self._inquire(base, items)])
        if not any(groups):
            groups = [[Sentence(OTHER)]]
        # acknowledgement, then other statements (diagnoses), then questions; a farewell goes last
        ordered = [g for g in groups if g and g[0].text == ACKNOWLEDGE]
        ordered += [g for g in groups if g and not g[0].question and g[0].text != ACKNOWLEDGE]
        ordered += [g for g in groups if g and g[0].question]
        ordered = [g for g in ordered if g[0].text != FAREWELL] + [g for g in ordered if g[0].text == FAREWELL]
        out: list[str] = []
        prev_question = False
        for group in ordered:
            for s_i, s in enumerate(group):
                text = s.text
                if s.question and prev_question:
                    text = ("And " if s_i > 0 else "Also, ") + _lower_first(text)
                out.append(text)
                prev_question = s.question
        return " ".join(out)

    # ------------------------------------------------------------------ diagnosis

    def _diagnosis(self, act: dict) -> list[Sentence]:
        names = [self.lex.term(base, it["value"]) for base, items in act.items() if base != "action" for it in items]
        names = [n for n in names if n.casefold() not in cmas.OPEN_VALUES]
        if not names:
            return [Sentence(f"Your clinician will discuss possible causes with you. {DIAGNOSIS_CAVEAT}", question=False)]
        return [Sentence(
            f"From what you've told me, possible conditions to discuss with your clinician include {join_or(names, 'and')}. "
            f"{DIAGNOSIS_CAVEAT}",
            question=False,
        )]

    # ------------------------------------------------------------------ inquire

    def _inquire(self, base: str, items: list[dict]) -> list[Sentence]:
        plain = [it["value"] for it in items if not it.get("checks")]
        checked = [it for it in items if it.get("checks")]
        out: list[Sentence] = []
        if plain:
            out.extend(self._screen(base, plain))
        for it in checked:
            for chk in it["checks"]:
                out.append(Sentence(self._check(base, it["value"], chk["type"], list(chk.get("values") or []))))
        return out

    def _screen(self, base: str, values: list[str]) -> list[Sentence]:
        """Whether the patient has any of ``values``: special questions alone, the rest in one question."""
        special = [self.lex.question(base, v) for v in values]
        out = [Sentence(q) for q in special if q]
        rest = [v for v, q in zip(values, special, strict=True) if not q]
        if not rest:
            return out
        if base in cmas.RECORD_SLOTS:
            return out + [Sentence(self._record(base, v, None, [])) for v in rest]
        terms = [self.lex.term(base, v) for v in rest]
        match base:
            case "symptom":
                text = f"Have you had any {join_or(terms)}?"
            case "medical_history":
                text = f"Have you ever been diagnosed with {join_or(terms)}?"
            case "family_history":
                text = f"Does anyone in your family have {join_or(terms)}?"
            case "habit":
                special = [self.lex.habit_verbs[v.casefold()][0] for v in rest if v.casefold() in self.lex.habit_verbs]
                used = [self.lex.term("habit", v) for v in rest if v.casefold() not in self.lex.habit_verbs]
                text = f"Do you {join_or(special + ([f'use {join_or(used)}'] if used else []))}?"
            case "exposure":
                text = f"Have you been {self._exposure(rest, [])}?"
            case "medication":
                text = f"Are you taking {join_or(terms)}?"
            case "medical_test":
                text = f"Have you had {join_or([self._test(v) for v in rest])}?"
            case "disease":
                text = f"Have you ever been told you have {join_or(terms)}?"
            case _:
                text = f"Could you tell me about {join_or(terms)}?"
        return out + [Sentence(text)]

    # ------------------------------------------------------------------ one check

    def _check(self, base: str, value: str, check: str, values: list[str]) -> str:
        if base in cmas.RECORD_SLOTS:
            return self._record(base, value, check, values)
        if base == "symptom":
            return self._symptom_check(value, check, values)
        if check in ("value", "status"):
            return self._screen(base, [value])[0].text
        term = self.lex.term(base, value)
        is_open = value.casefold() in cmas.OPEN_VALUES
        match base, check:
            case "medical_history", "starting":
                return f"When did the {term} start?" if not is_open else "When did that start?"
            case "medical_history", "frequency":
                return f"How often do you have the {term}?" if not is_open else "How often does that happen?"
            case "family_history", "relation":
                return f"Who in your family has {term}?" if not is_open else "Who in your family has had that?"
            case "habit", "starting":
                return f"How long have you been {self._habit(value)[1]}?"
            case "habit", "frequency":
                return f"How often do you {self._habit(value)[0]}, and how much?"
            case "exposure", "where":
                if values:
                    return f"Have you been {self._exposure([value], values)}?"
                return f"Where were you {self._exposure([value], [])}?"
            case "exposure", "when":
                return f"When were you {self._exposure([value], [])}?"
            case "medication", _:
                return self._medication(value, check, values)
            case "medical_test", "when":
                return f"When did you have {self._test(value)}?"
        return f"Could you tell me more about the {term}?"

    def _symptom_check(self, value: str, check: str, values: list[str]) -> str:
        v = value.casefold()
        plural = v == "all"
        s = "your symptoms" if plural else f"the {self.lex.term('symptom', value)}"
        is_, has = ("are", "have") if plural else ("is", "has")
        vals = join_or(values)
        if check in cmas.CHECK_ATTRIBUTES["characteristics"]:
            check = "characteristics"
        elif check in cmas.CHECK_ATTRIBUTES["ana_factors"]:
            check = "ana_factors"
        match check:
            case "value" | "status":
                return self.lex.question("symptom", value) or f"Do you currently have {s[4:] if not plural else s}?"
            case "onset":
                return f"When did {s} start?"
            case "initiation":
                return f"Did {s} come on suddenly or gradually?"
            case "location":
                if values:
                    where = join_or([self.lex.location(x) for x in values])
                    return f"Have you had any {self.lex.term('symptom', value) if not plural else 'symptoms'} in your {where}?"
                return f"Where exactly do you feel {s}?"
            case "duration":
                return f"Would you describe {s} as {vals}?" if values else f"How long does {s} last each time, or is it constant?"
            case "characteristics":
                if not values:
                    return f"How would you describe {s}?"
                return f"Would you describe {s} as {join_or([self._strip_term(x, value) for x in values])}?"
            case "ana_factors":
                return f"Does {vals} make {s} better or worse?" if values else f"Does anything make {s} better or worse?"
            case "severity":
                return f"On a scale of 1 to 10, with 10 the worst, how severe {is_} {s}?"
            case "progression":
                return f"{has.capitalize()} {s} been getting better, getting worse, or staying the same?"
            case "frequency":
                return f"How often do you get {s}?"
            case "volume":
                return f"Roughly how much {s[4:] if not plural else 'of it'} do you have each day, for example in teaspoons?"
            case "color":
                return f"What colour {is_} {s}?"
            case "itching":
                return f"How itchy {is_} {s}, on a scale of 1 to 10?"
            case "lesion_size":
                return f"{is_.capitalize()} {s} larger than 1 centimetre?"
            case "lesions_peel_off":
                return f"Do{'es' if not plural else ''} {s} peel off?"
            case "rash_swollen":
                return f"{is_.capitalize()} {s} swollen?"
        return f"Could you tell me more about {s}?"

    # ------------------------------------------------------------------ slot-specific phrasing

    def _strip_term(self, attribute: str, value: str) -> str:
        """"dry cough" said of the cough is "dry"."""
        for name in {value.casefold(), self.lex.term("symptom", value).casefold()}:
            if attribute.casefold().endswith(" " + name):
                return attribute[: -len(name) - 1]
        return attribute

    def _habit(self, value: str) -> tuple[str, str]:
        pair = self.lex.habit_verbs.get(value.casefold())
        if pair:
            return pair
        term = self.lex.term("habit", value)
        return f"use {term}", f"using {term}"

    def _exposure(self, values: list[str], where: list[str]) -> str:
        """"around anyone who is sick, or exposed to dust or irritants at work"."""
        by_verb: dict[str, list[str]] = {}
        for v in values:
            verb, obj = self.lex.exposure_phrases.get(v.casefold(), ("exposed to", self.lex.term("exposure", v)))
            by_verb.setdefault(verb, []).append(obj)
        phrase = ", or ".join(f"{verb} {join_or(objs)}" for verb, objs in by_verb.items())
        return f"{phrase} {join_or(where)}" if where else phrase

    def _test(self, value: str) -> str:
        term = self.lex.terms.get("medical_test", {}).get(value.casefold())
        return term or f"a {value}"

    def _medication(self, value: str, check: str, values: list[str]) -> str:
        is_open = value.casefold() in cmas.OPEN_VALUES
        term = "your medications" if is_open else self.lex.term("medication", value)
        match check:
            case "frequency":
                return f"How often do you take {term}?"
            case "respone_to":
                if is_open:
                    return "Have you taken anything for your symptoms?"
                return f"Do you take {term} for {join_or(values)}?" if values else f"What do you take {term} for?"
            case "impact":
                return "Has anything you've taken helped?" if is_open else f"Has {term} helped?"
            case "start":
                return f"When did you start taking {term}?"
        return f"Could you tell me more about {term}?"

    def _record(self, base: str, value: str, check: str | None, values: list[str]) -> str:
        is_open = value.casefold() in cmas.OPEN_VALUES or value == "None"
        match base, check:
            case "travel", None | "status":
                return "Have you travelled anywhere recently?" if is_open else f"Have you travelled to {value} recently?"
            case "travel", "value" | "destination":
                return f"Have you travelled to {join_or(values)}?" if values else "Where did you travel to?"
            case "travel", "when" | "date":
                return "When did you travel?"
            case "travel", "frequency":
                return "How often do you travel?"
            case "occupation", None | "value":
                return "What do you do for work?" if is_open else f"Do you work in {value}?"
            case "occupation", "status":
                return "Are you working at the moment?"
            case "occupation", "exposure" | "hazards":
                return "Are you exposed to any hazards at work, such as dust, fumes or chemicals?"
            case "occupation", "when":
                return "How long have you worked there?"
            case "residence", None:
                return "Could you tell me a bit about your living situation?" if is_open else f"Do you live in a {value}?"
            case "residence", "value":
                return "Where do you live at the moment?"
            case "residence", "status":
                return "Are you living there at the moment?"
            case "residence", "household_size":
                return "How many people live with you?"
            case "residence", "when":
                return "How long have you lived there?"
            case "basic_information", _:
                key = check if check in ("name", "age", "gender", "sex") else value.casefold()
                return {
                    "name": "What is your name?",
                    "age": "How old are you?",
                    "gender": "What is your gender?",
                    "sex": "What sex were you assigned at birth?",
                }.get(key, "Could you remind me of your name and age?")
        return "Could you tell me a little more about that?"
