"""Template NLG: any valid CMAS action list -> one natural doctor utterance, no model.

The grammar lives here; the patient-facing wording of values lives in
``configs/nlg_lexicon.yaml``. The agent is a history-taking assistant, never a clinician:
greetings say so, and diagnosis actions become "possible conditions to discuss with
your clinician".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from agent.core import cmas
from agent.core.clinical_text import looks_plural
from agent.core.paths import REPO_ROOT
from agent.core.protocol import ModuleOutput, TurnContext

DEFAULT_LEXICON = REPO_ROOT / "configs" / "nlg_lexicon.yaml"

INTRODUCTION = (
    "Hello, I'm a history-taking assistant. I'll ask you some questions so that your clinician has a clear "
    "picture of your health before they see you; I don't replace them."
)
OPEN_QUESTION = "What brings you in today?"
GREETING = f"{INTRODUCTION} {OPEN_QUESTION}"
"""The opening turn; with questions (the age and sex the policy's ``greeting_asks`` takes first), the introduction,
those questions, then "And what brings you in today?"."""
FAREWELL = (
    "Thank you, those are all my questions. I'll pass your history on to your clinician, who will go through it "
    "with you. Take care."
)
ANYTHING_ELSE = "Is there anything else you would like to tell me or ask about?"
ACKNOWLEDGE = "Thank you for telling me."
OTHER = "Could you tell me a little more about that?"
DIAGNOSIS_CAVEAT = "Only your clinician can make a diagnosis, after seeing you."


PREPOSITIONS = ("in ", "on ", "at ", "around ", "under ", "behind ", "between ", "down ", "across ", "near ", "over ")
_ASIDE = re.compile(r"\s*\([^)]*\)")
_QUALIFIER = re.compile(r" (?:or|and|in|on|of|to|at|from|when|that|with|passing|keeps?|up|after|during|like|such) ")
_OWN_PLACE = re.compile(r"\s+(?:in|on) your [^()]+$")
_ARTICLE = re.compile(r"^(?:a|an|any|the) ", re.I)
DIAGNOSED = "ever been diagnosed with"
OPEN_TAILS = {"medication": "any other medicines", "medical_history": "any other medical conditions",
              "family_history": "any other conditions that run in the family"}
"""The open "any other ...?" said at the end of the named items of its slot type it follows, in one question ("Are
you taking aspirin, warfarin or any other medicines?") rather than as a second question of the same thing."""
SOCIAL_CLAUSES = {"occupation": "what you do for work", "residence": "who you live with",
                  "travel": "whether you have travelled anywhere recently"}
"""The open social-history questions asked together, as one question ("Could you tell me what you do for work, who you
live with, and whether you have travelled anywhere recently?") rather than three questions in a row."""


MEDICINE_USE = frozenset({"respone_to", "impact"})
"""The follow-ups of a medicine the patient takes (what it is for, whether it helped): asked of several medicines at
once, they are one question (:meth:`TemplateNLG._medicines_use`)."""


def is_long(term: str) -> bool:
    """A name said in full once an utterance, then referred to by a pronoun: one with an aside ("palpitations (a racing
    or pounding heart)") or of three words or more ("shortness of breath")."""
    return "(" in term or len(term.split()) >= 3


@dataclass
class Lexicon:
    terms: dict[str, dict[str, str]] = field(default_factory=dict)
    questions: dict[str, dict[str, str]] = field(default_factory=dict)
    check_questions: dict[str, dict[str, str]] = field(default_factory=dict)
    habit_verbs: dict[str, tuple[str, str]] = field(default_factory=dict)
    exposure_phrases: dict[str, tuple[str, str]] = field(default_factory=dict)
    history_verbs: dict[str, str] = field(default_factory=dict)
    locations: dict[str, str] = field(default_factory=dict)
    number: dict[str, str] = field(default_factory=dict)

    def term(self, base: str, value: str) -> str:
        found = self.terms.get(base, {}).get(value.casefold())
        if found:
            return found
        return value.replace("/", " or ").replace("_", " ").strip()

    def question(self, base: str, value: str) -> str | None:
        return self.questions.get(base, {}).get(value.casefold())

    def check_question(self, value: str, check: str) -> str | None:
        return self.check_questions.get(value.casefold(), {}).get(check)

    def location(self, value: str) -> str:
        return self.locations.get(value.casefold(), value.replace("(L)", " (left)").replace("(R)", " (right)"))

    def where(self, values: list[str]) -> str:
        """Places as a phrase: "in your arm or shoulder"; a place the lexicon words with its own preposition keeps it
        ("on one side of your body", the wording of the set {left side, right side})."""
        key = ", ".join(sorted(v.casefold() for v in values))
        phrases = (
            [self.locations[key]] if len(values) > 1 and key in self.locations else [self.location(v) for v in values]
        )
        if not any(p.startswith(PREPOSITIONS) for p in phrases):
            return f"in your {join_or(phrases)}"
        return join_or([p if p.startswith(PREPOSITIONS) else f"in your {p}" for p in phrases])

    def plural(self, term: str) -> bool:
        """Whether a name takes plural agreement ("have the headaches", "have they helped"): its head noun, the last
        word before a qualifier ("problems passing urine", "changes in your bowel movements"), ends in -s but not
        -ss/-us/-is ("weakness", "tinnitus"); ``number`` in the lexicon overrides ("diabetes": singular)."""
        bare = _ARTICLE.sub("", _ASIDE.sub("", term).strip().casefold())
        words = _QUALIFIER.split(bare)[0].split()
        word = words[-1].strip(",") if words else ""
        if word in self.number:
            return self.number[word] == "plural"
        return looks_plural(word)


NUMBERS = ("singular", "plural")


def load_lexicon(path: str | Path = DEFAULT_LEXICON) -> Lexicon:
    raw = yaml.safe_load(Path(path).read_text()) or {}
    known = {"terms", "questions", "check_questions", "habit_verbs", "exposure_phrases", "history_verbs", "locations",
             "number"}
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
    for value, checks in (raw.get("check_questions") or {}).items():
        if not isinstance(checks, dict) or set(checks) - set(cmas.SLOTS["symptom"].check_types):
            raise ValueError(f"{path}: check_questions.{value}: expected {{symptom check type: question}}")
    for word, number in (raw.get("number") or {}).items():
        if number not in NUMBERS:
            raise ValueError(f"{path}: number.{word}: expected one of {NUMBERS}, got {number!r}")

    def low(d: dict) -> dict:
        return {str(k).casefold(): v for k, v in (d or {}).items()}

    return Lexicon(
        terms={b: low(v) for b, v in (raw.get("terms") or {}).items()},
        questions={b: low(v) for b, v in (raw.get("questions") or {}).items()},
        check_questions=low(raw.get("check_questions")),
        habit_verbs={k: tuple(v) for k, v in low(raw.get("habit_verbs")).items()},
        exposure_phrases={k: tuple(v) for k, v in low(raw.get("exposure_phrases")).items()},
        history_verbs={k: str(v) for k, v in low(raw.get("history_verbs")).items()},
        locations=low(raw.get("locations")),
        number=low(raw.get("number")),
    )


def join_or(words: list[str], conj: str = "or") -> str:
    """"a, b or c"; "a or b, or c" when an item has its own "or" ("numbness or tingling")."""
    words = [w for w in words if w]
    if len(words) <= 1:
        return "".join(words)
    comma = "," if any(f" {conj} " in _ASIDE.sub("", w) for w in words) else ""
    return f"{', '.join(words[:-1])}{comma} {conj} {words[-1]}"


def the(term: str) -> str:
    """"the head injury" of "a head injury"."""
    return f"the {_ARTICLE.sub('', term)}"


def own_place_dropped(term: str) -> str:
    """"weakness" of "weakness in your arms or legs": a name without the place it says, for another place."""
    return _OWN_PLACE.sub("", term)


@dataclass(frozen=True)
class Mention:
    """An item as the subject or object of a question: its name the first time, a pronoun once a long name was said
    in the same utterance; verbs agree with its number."""

    name: str
    plural: bool
    again: bool = False

    @property
    def subj(self) -> str:
        return ("they" if self.plural else "it") if self.again else self.name

    @property
    def obj(self) -> str:
        return ("them" if self.plural else "it") if self.again else self.name

    @property
    def pron(self) -> str:
        return "they" if self.plural else "it"

    @property
    def be(self) -> str:
        return "are" if self.plural else "is"

    @property
    def have(self) -> str:
        return "have" if self.plural else "has"

    @property
    def does(self) -> str:
        return "do" if self.plural else "does"


def _lower_first(s: str) -> str:
    """Lower the first letter for a connective ("And when ..."), unless it starts an acronym or "I"."""
    if len(s) > 1 and s[0].isupper() and s[1].islower() and not s.startswith(("I ", "I'")):
        return s[0].lower() + s[1:]
    return s


MAX_QUESTIONS = 2
"""Question sentences a turn says: three questions about one topic are said as two, two of them run together the way
a clinician does ("When did it start, and did it come on suddenly?"), so the patient hears no list."""


def join_questions(sentences: list[tuple[str, bool, bool]], most: int | None = None) -> list[tuple[str, bool, bool]]:
    """(text, is a question, opens its group) sentences with adjacent questions joined, the shortest pair first,
    until at most :data:`MAX_QUESTIONS` question sentences remain. A joined sentence is joined again only when no
    pair of single questions is left, as a list ("does anything make it better or worse, how often do you get it,
    and have you had anything like this before?"), so no sentence asks more than three things."""
    most = MAX_QUESTIONS if most is None else most
    out = [(text, question, opens, 1) for text, question, opens in sentences]
    while sum(q for _, q, _, _ in out) > most:
        adjacent = [i for i in range(len(out) - 1) if out[i][1] and out[i + 1][1] and out[i][3] + out[i + 1][3] <= 3]
        pairs = ([(len(out[i][0]) + len(out[i + 1][0]), i) for i in adjacent if out[i][3] + out[i + 1][3] == 2]
                 or [(len(out[i][0]) + len(out[i + 1][0]), i) for i in adjacent])
        if not pairs:
            break
        _, i = min(pairs)
        (a, _, opens, n_a), (b, _, _, n_b) = out[i], out[i + 1]
        a = a.rstrip("?")
        if n_a > 1:  # "x, and y" + z -> "x, y, and z"
            a = a.replace(", and ", ", ", 1)
        # x + "y, and z" -> "x, y, and z"
        joined = f"{a}, {_lower_first(b)}" if n_b > 1 else f"{a}, and {_lower_first(b)}"
        out[i:i + 2] = [(joined, True, opens, n_a + n_b)]
    return [(text, question, opens) for text, question, opens, _ in out]


@dataclass
class Sentence:
    text: str
    question: bool = True


class TemplateNLG:
    """Verbalizes CMAS actions; raises :class:`agent.core.cmas.CMASError` on actions that are not valid CMAS."""

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
        said: set[tuple[str, str]] = set()  # items named so far: a long name is said once, then referred to
        only_chit_chat = all(a["action"] == "chit-chat" for a in actions)
        actions, social = self._social(actions)
        if social:
            groups.append([Sentence(social)])
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
                groups.append([s for base, items in act.items() if base != "action"
                               for s in self._inquire(base, items, said)])
        groups = self._drug_history(actions, groups)
        if not any(groups):
            groups = [[Sentence(OTHER)]]
        # acknowledgement, then other statements (diagnoses), then questions; a farewell goes last
        ordered = [g for g in groups if g and g[0].text == ACKNOWLEDGE]
        ordered += [g for g in groups if g and not g[0].question and g[0].text != ACKNOWLEDGE]
        ordered += [g for g in groups if g and g[0].question]
        ordered = [g for g in ordered if g[0].text != FAREWELL] + [g for g in ordered if g[0].text == FAREWELL]
        flat = [(s.text, s.question, s_i == 0) for group in ordered for s_i, s in enumerate(group)]
        greeting_asks = opening and flat and flat[0][0] == GREETING and any(q for _, q, _ in flat[1:])
        if greeting_asks:  # "Hello, ... How old are you, and what sex ...? And what brings you in today?"
            flat = [(INTRODUCTION, False, True), *flat[1:]]
        out: list[str] = []
        prev_question = False
        for text, question, opens_group in join_questions(flat, 1 if greeting_asks else None):
            if question and prev_question:
                text = ("Also, " if opens_group else "And ") + _lower_first(text)
            out.append(text)
            prev_question = question
        if greeting_asks:  # "First, how old are you, and what sex ...? And what brings you in today?"
            out = [out[0], "First, " + _lower_first(out[1]), *out[2:], "And " + _lower_first(OPEN_QUESTION)]
        return " ".join(out)

    @staticmethod
    def _drug_history(actions: list[dict], groups: list[list[Sentence]]) -> list[list[Sentence]]:
        """The drug allergy asked with the medicines (``policies.questionnaire.DRUG_ALLERGY``) as the end of their
        question ("Are you taking metformin or any other medicines, and have you ever had an allergic reaction to a
        medicine?"): one topic, one question. ``groups``: the sentences of each action, in order."""
        def only(act: dict, base: str, value: str | None = None) -> bool:
            items = act.get(base) or []
            return (act["action"] == "inquire" and [b for b in act if b != "action"] == [base] and bool(items)
                    and all(not it.get("checks") and (value is None or it.get("value") == value) for it in items))

        meds = next((i for i, a in enumerate(actions) if only(a, "medication")), None)
        allergy = next((i for i, a in enumerate(actions) if only(a, "medical_history", "drug allergy")), None)
        if meds is None or allergy is None or len(groups[meds]) != 1 or len(groups[allergy]) != 1:
            return groups
        asked, then = groups[meds][0], groups[allergy][0]
        joined = Sentence(f"{asked.text.rstrip('?')}, and {_lower_first(then.text)}")
        return [[joined] if i == meds else g for i, g in enumerate(groups) if i != allergy]

    @staticmethod
    def _social(actions: list[dict]) -> tuple[list[dict], str | None]:
        """Two or more open social-history questions (work, home, travel) as one question; the other actions."""
        def open_social(act: dict) -> str | None:
            bases = [b for b in act if b != "action"]
            if act["action"] != "inquire" or len(bases) != 1 or bases[0] not in SOCIAL_CLAUSES:
                return None
            items = act[bases[0]] or []
            is_open = len(items) == 1 and not items[0].get("checks") and (
                str(items[0].get("value", "")).casefold() in cmas.OPEN_VALUES)
            return bases[0] if is_open else None

        found = [b for a in actions if (b := open_social(a))]
        if len(found) < 2:
            return actions, None
        clauses = [SOCIAL_CLAUSES[b] for b in found]
        rest = [a for a in actions if not open_social(a)]
        return rest, f"Could you tell me {', '.join(clauses[:-1])} and {clauses[-1]}?"

    # ------------------------------------------------------------------ diagnosis

    def _diagnosis(self, act: dict) -> list[Sentence]:
        names = [self.lex.term(base, it["value"]) for base, items in act.items() if base != "action" for it in items]
        names = [n for n in names if n.casefold() not in cmas.OPEN_VALUES]
        if not names:
            return [
                Sentence(f"Your clinician will discuss possible causes with you. {DIAGNOSIS_CAVEAT}", question=False)
            ]
        return [
            Sentence(
                "From what you've told me, possible conditions to discuss with your clinician include "
                f"{join_or(names, 'and')}. "
                f"{DIAGNOSIS_CAVEAT}",
                question=False,
            )
        ]

    # ------------------------------------------------------------------ inquire

    def _inquire(self, base: str, items: list[dict], said: set[tuple[str, str]]) -> list[Sentence]:
        """Screening items (whether the patient has them; a symptom "in your abdomen" too) in one question, then each
        checked item's checks."""
        screen: list[tuple[str, list[str]]] = []
        checked = []
        conditional: dict[str, list[str]] = {}  # value -> checks asked "if you do" (after a status check)
        for it in items:
            checks = it.get("checks") or []
            if not checks:
                screen.append((it["value"], []))
            elif checks[0]["type"] == "status" and base == "habit":
                screen.append((it["value"], []))
                conditional[it["value"]] = [c["type"] for c in checks[1:]]
            elif base == "symptom" and len(checks) == 1 and checks[0]["type"] == "location" and checks[0].get("values"):
                screen.append((it["value"], list(checks[0]["values"])))  # "any pain in your arm?"
            else:
                checked.append(it)
        out: list[Sentence] = self._screen(base, screen, said) if screen else []
        if conditional:
            out.append(Sentence(self._habit_if(conditional)))
        if base == "medication" and checked and all(
                {c["type"] for c in it["checks"]} <= MEDICINE_USE for it in checked):
            asked = {c["type"] for it in checked for c in it["checks"]}
            out.append(Sentence(self._medicines_use([it["value"] for it in checked], asked, said)))
            checked = []
        for it in checked:
            asks = []
            for i, chk in enumerate(it["checks"]):
                values = list(chk.get("values") or [])
                if base == "symptom":  # named once, then "it": "... the chest pain, and how severe is it?"
                    asks.append(self._symptom_check(it["value"], chk["type"], values, said, refer=i > 0,
                                                    brief=len(it["checks"]) >= 3))
                else:
                    asks.append(self._check(base, it["value"], chk["type"], values, said))
            out += [Sentence(a) for a in asks]
        return out

    def _screen(self, base: str, entries: list[tuple[str, list[str]]], said: set[tuple[str, str]]) -> list[Sentence]:
        """Whether the patient has any of ``entries`` (value, places): special questions alone, the rest in one
        question."""
        tail = OPEN_TAILS.get(base)
        named = [v for v, _ in entries if v.casefold() not in cmas.OPEN_VALUES]
        if tail and named and len(named) < len(entries):  # "Are you taking aspirin or any other medicines?"
            entries = [(v, p) for v, p in entries if v.casefold() not in cmas.OPEN_VALUES]
        else:
            tail = None
        special = [self.lex.question(base, v) for v, _ in entries]
        rest = [e for e, q in zip(entries, special, strict=True) if not q]
        said.update((base, v) for v, _ in entries)
        if tail and not rest:  # every named item has its own question: the open one keeps its own too
            return [Sentence(q) for q in special if q] + [Sentence(self.lex.question(base, "other") or tail)]
        if not rest:
            return [Sentence(q) for q in special if q]
        values = [v for v, _ in rest]
        if base in cmas.RECORD_SLOTS:
            return [Sentence(q or self._record(base, v, None, [])) for (v, _), q in zip(entries, special, strict=True)]
        terms = [self.lex.term(base, v) for v in values]
        match base:
            case "symptom":
                text = f"Have you had any {join_or(self._symptom_phrases(rest))}?"
            case "medical_history":
                text = f"Have you {self._history(values, tail)}?"
            case "family_history":
                text = f"Does anyone in your family have {join_or(terms + ([tail] if tail else []))}?"
            case "habit":
                verbs = [self.lex.habit_verbs[v.casefold()][0] for v in values if v.casefold() in self.lex.habit_verbs]
                used = [self.lex.term("habit", v) for v in values if v.casefold() not in self.lex.habit_verbs]
                text = f"Do you {join_or(verbs + ([f'use {join_or(used)}'] if used else []))}?"
            case "exposure":
                text = f"Have you been {self._exposure(values, [])}?"
            case "medication":
                text = f"Are you taking {join_or(terms + ([tail] if tail else []))}?"
            case "medical_test":
                text = f"Have you had {join_or([self._test(v) for v in values])}?"
            case "disease":
                text = f"Have you ever been told you have {join_or(terms)}?"
            case _:
                text = f"Could you tell me about {join_or(terms)}?"
        at = special.index(None)  # the question of the rest goes where its first item was asked
        return [Sentence(q) for q in special[:at]] + [Sentence(text)] + [Sentence(q) for q in special[at:] if q]

    def _symptom_phrases(self, entries: list[tuple[str, list[str]]]) -> list[str]:
        """Screened symptoms as phrases; those asked at the same places say the places once ("weakness, or numbness or
        tingling in your legs")."""
        phrases: list[tuple[list[str], list[str]]] = []
        at: dict[tuple[str, ...], int] = {}
        for value, places in entries:
            name = self._placeable(value)
            key = tuple(sorted(p.casefold() for p in places))
            if not places or name is None:
                phrases.append(([self._symptom_phrase(value, places)], []))
            elif key in at:
                phrases[at[key]][0].append(name)
            else:
                at[key] = len(phrases)
                phrases.append(([name], places))
        return [f"{join_or(names)} {self.lex.where(places)}" if places else names[0] for names, places in phrases]

    def _placeable(self, value: str) -> str | None:
        """The name a symptom takes before "in your <place>", None for a pain named by its own place."""
        if value.casefold() == "all":
            return "symptoms"
        term = self.lex.term("symptom", value)
        if own_place_dropped(term) == term and (
            value.casefold().endswith(" pain") or term.casefold().endswith(" pain")
        ):
            return None
        return own_place_dropped(term)

    def _symptom_phrase(self, value: str, places: list[str]) -> str:
        """A symptom as screened, at its places: "pain in your arm"; a name that says its own place says the asked one
        instead ("weakness in your legs" of "weakness in your arms or legs"); a pain named by its place spreads to
        the asked one ("chest pain that spreads to your back")."""
        if value.casefold() == "all":
            return f"symptoms {self.lex.where(places)}" if places else "symptoms"
        term = self.lex.term("symptom", value)
        if not places:
            return term
        if own_place_dropped(term) != term:
            return f"{own_place_dropped(term)} {self.lex.where(places)}"
        if value.casefold().endswith(" pain") or term.casefold().endswith(" pain"):
            return f"{term} that spreads to your {join_or([self.lex.location(p) for p in places])}"
        return f"{term} {self.lex.where(places)}"

    def _history(self, values: list[str], tail: str | None = None) -> str:
        """What follows "Have you" for history items: conditions after "ever been diagnosed with", an event or an
        activity after its own verb ("ever had a head injury", "been in hospital recently"); ``tail``, the open "any
        other conditions", goes with the diagnoses."""
        by_verb: dict[str, list[str]] = {}
        for v in values:
            by_verb.setdefault(self.lex.history_verbs.get(v.casefold(), DIAGNOSED), []).append(
                self.lex.term("medical_history", v))
        if tail:
            by_verb.setdefault(DIAGNOSED, []).append(tail)
        return ", or ".join(f"{verb} {join_or(objs)}" for verb, objs in by_verb.items())

    def _mention(
        self, base: str, value: str, name: str, said: set[tuple[str, str]], term: str | None = None,
        refer: bool = False,
    ) -> Mention:
        """``name`` as a subject or object; a pronoun if its long name was said before in this utterance (any name
        with ``refer``)."""
        term = term or self.lex.term(base, value)
        again = (base, value) in said and (refer or is_long(term))
        said.add((base, value))
        return Mention(name, self.lex.plural(term), again)

    # ------------------------------------------------------------------ one check

    def _check(self, base: str, value: str, check: str, values: list[str], said: set[tuple[str, str]]) -> str:
        if base in cmas.RECORD_SLOTS:
            return self._record(base, value, check, values)
        if base == "symptom":
            return self._symptom_check(value, check, values, said)
        if check in ("value", "status"):
            return self._screen(base, [(value, [])], said)[0].text
        term = self.lex.term(base, value)
        is_open = value.casefold() in cmas.OPEN_VALUES
        match base, check:
            case "medical_history", "starting":
                return f"When did {the(term)} start?" if not is_open else "When did that start?"
            case "medical_history", "frequency":
                return f"How often do you have {the(term)}?" if not is_open else "How often does that happen?"
            case "family_history", "relation":
                return f"Who in your family has {term}?" if not is_open else "Who in your family has had that?"
            case "habit", "starting":
                verb, doing = self._habit(value)
                if verb.startswith("used to "):
                    return f"How long did you {verb.removeprefix('used to ')} for?"
                return f"How long have you been {doing}?"
            case "habit", "frequency":
                verb = self._habit(value)[0]
                if verb.startswith("used to "):
                    return f"How often did you {verb.removeprefix('used to ')}, and how much?"
                return f"How often do you {verb}, and how much?"
            case "exposure", "where":
                if values:
                    return f"Have you been {self._exposure([value], values)}?"
                return f"Where were you {self._exposure([value], [])}?"
            case "exposure", "when":
                return f"When were you {self._exposure([value], [])}?"
            case "medication", _:
                return self._medication(value, check, values, said)
            case "medical_test", "when":
                return f"When did you have {self._test(value)}?"
        return f"Could you tell me more about {the(term)}?"

    def _symptom_check(self, value: str, check: str, values: list[str], said: set[tuple[str, str]],
                       refer: bool = False, brief: bool = False) -> str:
        """One attribute question about a symptom; ``refer``: a pronoun once it was named, whatever its length (a
        later question about the same item in the same turn); ``brief``: the short forms ("how long does it last each
        time?"), for a turn of three questions about it, or a question after another about it."""
        if own := self.lex.check_question(value, check):
            return own  # "What colour is your vomit?" (it does not name the symptom: a later check does)
        every = value.casefold() == "all"
        term = "symptoms" if every else self.lex.term("symptom", value)
        s = self._mention("symptom", value, "your symptoms" if every else the(term), said, term, refer=refer)
        vals = join_or(values)
        if check in cmas.CHECK_ATTRIBUTES["characteristics"]:
            check = "characteristics"
        elif check in cmas.CHECK_ATTRIBUTES["ana_factors"]:
            check = "ana_factors"
        match check:
            case "value" | "status":
                return (
                    self.lex.question("symptom", value)
                    or f"Do you currently have {'your symptoms' if every else term}?"
                )
            case "onset":
                return f"When did {s.subj} start?"
            case "initiation":
                return f"Did {s.subj} come on suddenly or gradually?"
            case "location":
                if values:
                    return f"Have you had any {self._symptom_phrase(value, values)}?"
                return f"Where exactly do you feel {s.obj if s.again else the(own_place_dropped(term))}?"
            case "duration":
                if values:
                    return f"Would you describe {s.obj} as {vals}?"
                if s.again or brief:
                    return f"How long {s.does} {s.subj} last each time?"
                return f"How long {s.does} {s.subj} last each time, or {s.be} {s.pron} constant?"
            case "characteristics":
                if not values:
                    return f"How would you describe {s.obj}?"
                return f"Would you describe {s.obj} as {join_or([self._strip_term(x, value) for x in values])}?"
            case "ana_factors":
                return (
                    f"Does {vals} make {s.obj} better or worse?"
                    if values
                    else f"Does anything make {s.obj} better or worse?"
                )
            case "severity":
                if s.again or brief:
                    return f"How bad {s.be} {s.subj}, from 1 to 10?"
                return f"On a scale of 1 to 10, with 10 the worst, how severe {s.be} {s.subj}?"
            case "progression":
                if s.again or brief:
                    return f"{s.be.capitalize()} {s.subj} getting better or worse?"
                return f"{s.have.capitalize()} {s.subj} been getting better, getting worse, or staying the same?"
            case "frequency":
                return f"How often do you get {s.obj}?"
            case "volume":
                amount = f"of {s.obj}" if s.again or every else _ARTICLE.sub("", term)
                return f"Roughly how much {amount} do you have each day, for example in teaspoons?"
            case "color":
                return f"What colour {s.be} {s.subj}?"
            case "itching":
                return f"How itchy {s.be} {s.subj}, on a scale of 1 to 10?"
            case "lesion_size":
                return f"{s.be.capitalize()} {s.subj} larger than 1 centimetre?"
            case "lesions_peel_off":
                return f"{s.does.capitalize()} {s.subj} peel off?"
            case "rash_swollen":
                return f"{s.be.capitalize()} {s.subj} swollen?"
        return f"Could you tell me more about {s.obj}?"

    # ------------------------------------------------------------------ slot-specific phrasing

    def _strip_term(self, attribute: str, value: str) -> str:
        """"dry cough" said of the cough is "dry"."""
        for name in {value.casefold(), self.lex.term("symptom", value).casefold()}:
            if attribute.casefold().endswith(" " + name):
                return attribute[: -len(name) - 1]
        return attribute

    def _habit_if(self, conditional: dict[str, list[str]]) -> str:
        """The amount of habits asked with the question whether the patient has them: "If you drink alcohol, how
        often, and how much?"; of several, "If you do, how much, and for how long?"."""
        kinds = {c for cs in conditional.values() for c in cs}
        how = {"frequency": "how often, and how much", "starting": "for how long"}
        if kinds == {"frequency", "starting"}:
            asks = "how much, and for how long"
        else:
            asks = " and ".join(how.get(k, k) for k in sorted(kinds))
        if len(conditional) == 1:
            verb = self._habit(next(iter(conditional)))[0]
            return f"If you {verb.removeprefix('used to ')}, {asks}?"
        return f"If you do, {asks}?"

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

    def _medicines_use(self, values: list[str], asked: set[str], said: set[tuple[str, str]]) -> str:
        """What medicines are for and whether they help (``asked``: either or both), as one question ("What do you take
        the metformin and the statin for, and have they helped?", "What do you take the statin for, and has it
        helped?"): a question each would spend a turn a medicine on the same topic, and a name said twice reads as a
        form."""
        said.update(("medication", v) for v in values)
        terms = [self.lex.term("medication", v) for v in values]
        names = join_or([the(t) for t in terms], "and")
        many = len(terms) > 1 or self.lex.plural(terms[0])
        if "respone_to" not in asked:
            return f"{'Have' if many else 'Has'} {names} helped?"
        helped = ", and have they helped?" if many else ", and has it helped?"
        return f"What do you take {names} for" + (helped if "impact" in asked else "?")

    def _medication(self, value: str, check: str, values: list[str], said: set[tuple[str, str]]) -> str:
        is_open = value.casefold() in cmas.OPEN_VALUES
        term = "your medications" if is_open else self.lex.term("medication", value)
        m = self._mention("medication", value, term, said)
        match check:
            case "frequency":
                return f"How often do you take {m.obj}?"
            case "respone_to":
                if is_open:
                    return "Have you taken anything for your symptoms?"
                return f"Do you take {m.obj} for {join_or(values)}?" if values else f"What do you take {m.obj} for?"
            case "impact":
                return "Has anything you've taken helped?" if is_open else f"{m.have.capitalize()} {m.subj} helped?"
            case "start":
                return f"When did you start taking {m.obj}?"
        return f"Could you tell me more about {m.obj}?"

    def _record(self, base: str, value: str, check: str | None, values: list[str]) -> str:
        is_open = value.casefold() in cmas.OPEN_VALUES or value == "None"
        match base, check:
            case "travel", None | "status":
                return (
                    "Have you travelled anywhere recently?" if is_open else f"Have you travelled to {value} recently?"
                )
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
                return (
                    "Could you tell me a bit about your living situation?" if is_open else f"Do you live in a {value}?"
                )
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
