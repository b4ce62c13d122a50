"""Short-answer reading: what the patient's reply says about what the doctor just asked.

The doctor's last action names the asked items and their checks ("any fever?", "when did the cough start?"), so a
short answer ("No.", "About a week.", "On the left.") becomes a frame about the asked items and their asked
attributes; a reply that names the asked item itself keeps the status its own words give.
"""

from __future__ import annotations

import re
from functools import cached_property

import numpy as np
from spacy.lang.en.stop_words import STOP_WORDS

from agent.core import cmas
from agent.core.clinical_text import word_stem
from agent.core.ontology import Vocabulary
from agent.core.semantic import default_encoder
from policies.nlu import attributes as attr
from policies.nlu.details import COUGH_KIND, DetailReader
from policies.nlu.frame import TEST_STATUS, Frame, set_attr
from policies.nlu.lexicon import Lexicon
from policies.nlu.mentions import Mention, MentionFinder

Asked = tuple[str, str, list[dict]]
"""(slot type, value, checks) of one item the doctor asked about."""


def asked_items(actions: list[dict]) -> list[Asked]:
    """(slot type, value, checks) of every item the doctor's ``inquire`` actions ask about, in order: the one
    reading of a doctor action's questions (the clinical NLU and the patient simulators share it)."""
    out = []
    for act in actions or []:
        if not isinstance(act, dict) or act.get("action") != "inquire":
            continue
        for base, items in act.items():
            if base == "action" or base not in cmas.SLOTS or not isinstance(items, list):
                continue
            for it in items:
                if isinstance(it, dict) and isinstance(it.get("value"), str):
                    out.append((base, it["value"], [c for c in it.get("checks") or [] if isinstance(c, dict)]))
    return out


def state_status(state: dict, base: str, value: str) -> str | None:
    """The status under which the state holds exactly ``value`` of slot type ``base``, if it does."""
    for status in cmas.SLOTS[base].statuses:
        if any(it.get("value") == value for it in state.get(f"{status}_{base}") or []):
            return status
    return None


_DISCOURSE_SURE = re.compile(r"^sure\s+(?:look|listen|what|(?:i|i'm|i've|i'd|it's|we|we're|he|he's|she|she's|they|"
                             r"you|that's|there's)\s+(?!(?:do|did|have|had|am|was|can|will|does|is|would|could|"
                             r"have been|had been)\b\W*(?:\w+\W*){0,4}$))", re.I)
"""Hiberno-English and Scots "sure" opening a statement with no break ("Sure I'm eighty-two and still at Mass",
"sure look, it's nothing"): a discourse marker, not a yes; "Sure I do", "Sure, I get them" still answer."""
_ANSWER_WORD = re.compile(r"^\W*(?:oh|well|um+|uh+|so)?\W*(?:yes|yeah|yep|yup|yea|no|nope|nah|not really|uh-huh|"
                          r"sure|correct|absolutely|definitely|of course)\b", re.I)
_POINTS_THERE = re.compile(r"\b(?:there|that spot|that area|that side|that way|it does|it do|they do|both)\b", re.I)
"""A reply that points at the asked place ("it goes there", "it does"): it answers where the question asked."""
_REFERS_BACK = re.compile(r"\b(?:it|that|them|those|this|these)\b", re.I)
_ELSEWHERE = re.compile(r"\b(?:not (?:there|here|in (?:that|this|the same) (?:spot|place|area|part|bit))|"
                        r"somewhere else|elsewhere|(?:only|just) in my)\b", re.I)
"""A reply that puts the asked symptom somewhere else ("not there, but I've an ache in my tummy"): the asked place is
not where it is."""

_NO_NAMING = re.compile(r"^\W*(?:oh|well|um+|uh+|so)?\W*no\s+(?:[\w'-]+\s+){0,2}$", re.I)
"""What comes before a mention that a "no" determines ("No cough", "No real headaches"): "no" as the determiner of
what the reply names, not the answer "No, ..." (a comma or a pronoun after it is an answer: "No, I ...")."""


_ALTERNATIVES = re.compile(r"\w,? or \w")
_WHETHER_AT_ALL = re.compile(r"\b(?:any|anything|anyone|ever|either)\b")
_OR_NOT = re.compile(r"\bor (?:not|no|none|neither|something|anything|whatever)\b")
"""What makes a question with "or" a yes/no question (see :meth:`AnswerReader.offers_alternatives`): "any" or
"ever" before the "or" ("Any cough or fever?"), or "or not", "or anything" after it."""
_PRESUPPOSES = re.compile(r"\b(?:is|are|does|do|did|was|were|has|have|would)\s+(?:it|they|that|this|these|those|the|"
                          r"your|you\s+say)\b")
"""How a question that offers alternatives refers to the item it presupposes ("is it ...", "does the pain ...", "would
you say ..."): without such a reference, "X or Y?" names one item twice and asks whether."""


_HOW_OFTEN = re.compile(r"\b(?:every (?:other )?(?:day|night|week|weekend|morning|evening)|"
                        r"most (?:days|nights|weekends)|"
                        r"(?:a|per) (?:day|night|week|month)|daily|weekly|nightly|at (?:the )?weekends?|"
                        r"on (?:a )?(?:friday|saturday|sunday)s?)\b")
"""How often a habit is kept ("every other day", "ten a day", "most nights"): said, it shows the habit is kept."""


_DENIED_OBJECT = re.compile(
    r"\b(?:haven't|have not|hasn't|has not|don't|do not|didn't|did not|never|not)\s+(?:really\s+|ever\s+)?"
    r"(?:had|have|got|noticed|seen|felt|experienced|been having|been getting|get|getting|on|taking|take|taken|"
    r"using|use|used)\s+"
    r"(?:(?:any|an?|much|the|my)\s+)?(?P<obj>[a-z][a-z' -]*?)\s*"
    r"(?:[.,!?;]|\b(?:and|but|or|either|at all|lately|recently|before|since|so far)\b|$)")
"""What a denial denies: "No, I haven't had any <object>" / "I don't get <object>" / "I'm not on any <object>"."""
_DENIED_NO = re.compile(
    r"^\W*(?:no|nope|nah)\b[\s,.!;-]+(?:and\s+)?(?:there(?:'s| is| was|'s been| has been| were)\s+)?no\s+"
    r"(?:more\s+)?(?P<obj>[a-z][a-z' -]*?)\s*(?:[.,!?;]|\b(?:and|but|or|either|at all|lately|recently|before|since|"
    r"so far|in|when|with|on)\b|$)")
"""A second "no" after the answer word: "No, there was no blood when I threw up" denies the blood."""
_BARE_NO = re.compile(
    r"^\W*no\s+(?!(?:i|i'm|i've|i'd|it|it's|its|not|never|nothing|none|nobody|thanks|thank|sir|ma'am|doctor|doc|way|"
    r"problems?|issues?|trouble|worries|idea|just|really|that|there|we|he|she|they|you|my|the|more|one|changes?|"
    r"nope|no|sorry|actually|definitely|absolutely|certainly|honestly|mate|love|dear|"
    r"different|difference|better|worse|improvement|longer|less|further|earlier|later|clue|such|other|single|real|big|"
    r"major|particular)\b)"
    r"(?P<obj>[a-z][a-z' -]*?)\s*(?:[.,!?;]|\b(?:and|but|or|either|at all|lately|recently|before|since|so far|in|when|"
    r"with|on)\b|$)")
"""A reply whose opening "no" determines a thing it names, without a comma ("No earache, no discharge" to "any
fainting or fits?"): the object the lexicon may not know, weighed like a denied object (a pronoun, a generic
"problems", an adverb or a form of address after it keeps it the question's no)."""
_NOT_AN_OBJECT = frozenset("anything something that it them those this these one such like sort kind".split())
SYNONYM_SIMILARITY = 0.45
"""Cosine similarity (the embedded all-MiniLM-L6-v2) at which a denied object unknown to the lexicon is taken for an
asked item in other words ("any blood in your urine?" - "No, my wee's been a normal colour")."""


_ADVERB_OPENING = re.compile(r"^(?:sometimes|occasionally|now and then|every now and then|a little|a bit)\s+"
                             r"(?:a|an|the|my|i|i'm|i've|it|it's|there|they|when|if|after|at|in|on)\b", re.I)
"""An answer word that opens a statement of its own ("Sometimes a sour taste comes up into my mouth", "Occasionally I
get a twinge"): a frequency adverb of that statement, no yes to the asked items."""


_AUXILIARY_OPENER = re.compile(r"(?:i\s+)?(?:have|haven't|have not|do|don't|do not|did|didn't|did not|am|i'm not)",
                               re.I)
"""An answer that opens with an auxiliary ("I haven't", "I do", "didn't"): no yes or no when a verb of its own
follows (:data:`_ANOTHER_PREDICATE`)."""
_FIRST_WORD = re.compile(r"\s+([a-z']+)")
_NEGATED_VERB = re.compile(
    r"^(?:i\s+)?(?:don't|do not|didn't|did not|haven't|have not|hadn't|had not|can't|cannot|can not|won't)\s+"
    r"([a-z']+)")
_OBJECT_AFTER = re.compile(r"\s+(?:it|them|that|those|this|these|one|any|either)\b")
"""The object after a negated verb that keeps it the question's no ("I don't get them", "I haven't had one"). Its own
name: :data:`_REFERS_BACK` (a reply pointing back at the question) had been shadowed by this one, so the "one" of "for
about one month" made a reply about a medicine answer the symptoms asked."""
_HAVING = frozenset("""have had has having got get gets getting noticed notice seen see felt feel feeling experienced
experience been think believe know recall remember suffer suffered really ever usually always often any anything so
that either no not much""".split())
"""The words after "I don't" / "I haven't" that keep it the question's no ("I haven't had any", "I don't think so",
"I don't get them"); another verb makes it a statement of its own (:meth:`AnswerReader.states_its_own_verb`)."""
_ANOTHER_PREDICATE = frozenset("""told tell telling said say saying mentioned mention want wanted wanting wanna like
liked mind minded mean meant care cared bother bothered blame blamed understand understood expect expected
dare""".split())
"""Verbs of saying, wanting and minding after an auxiliary opener: "I haven't told anyone", "I didn't want to bother
anybody", "I don't mind" start a predicate of their own, no yes or no to the question. (A reply's other verbs are the
question's kind: "I haven't had any", "I did, just last night", "I haven't heard of anyone being sick".)"""


class AnswerReader:
    """Applies a reply to the asked items of the doctor's last action."""

    def __init__(self, lexicon: Lexicon, vocab: Vocabulary, finder: MentionFinder, details: DetailReader):
        self.lexicon = lexicon
        self.vocab = vocab
        self.finder = finder
        self.details = details

    def polarity(self, text: str) -> str | None:
        """affirm / deny / unsure when the utterance opens with (or is) such an answer, else None."""
        t = attr.clean(text)
        t = re.sub(r"^(?:(?:oh|well|so|okay|ok|hmm|and|i mean|i suppose|i guess|um|uh)\b[,\s]*)+", "", t)
        best: tuple[int, str] | None = None
        for kind in ("unsure", "deny", "affirm"):  # "not sure" before "not", "no" before "yes"
            for phrase in self.lexicon.answers[kind]:
                if re.match(rf"{re.escape(phrase)}(?![\w'])", t) and (best is None or len(phrase) > best[0]):
                    best = (len(phrase), kind)
        if best and best[1] == "affirm" and _DISCOURSE_SURE.match(t):
            return None  # "Sure I'm eighty-two, and ...": the Irish and Scots opener, no yes to the question
        if best:
            rest = _FIRST_WORD.match(t[best[0]:])
            if _AUXILIARY_OPENER.fullmatch(t[:best[0]]) and rest and rest.group(1) in _ANOTHER_PREDICATE:
                return None  # "I haven't told anyone": another verb after the opener says something else
            return best[1]
        head = " ".join(t.split()[:6])
        for kind in ("unsure", "deny"):
            for phrase in self.lexicon.answers[kind]:
                if len(phrase.split()) > 1 and re.search(rf"\b{re.escape(phrase)}\b", head):
                    return kind
        return None

    def apply(self, frame: Frame, text: str, sents: list[str], mentions: list[Mention], asked: list[Asked],
              state: dict, doctor: str) -> None:
        """Write what the reply says about each asked item into ``frame``."""
        if not asked:
            return
        polarity = self.polarity(text)
        if (polarity == "affirm" and _ADVERB_OPENING.match(attr.clean(text)) and self.lists_whether(asked)
                and not re.search(r"\b(?:them|it|that|those|these|both|either)\b", text, re.I)):
            polarity = None  # "Sometimes a sour taste comes up": how often that happens, no yes to the question
        if polarity == "deny" and (self.no_determines(mentions) or self.states_its_own_verb(text, doctor)):
            polarity = None
        if polarity in ("affirm", "deny") and self.offers_alternatives(doctor, asked):
            polarity = None  # "Is it dry or chesty?" - "No, just dry": an alternative picked, the cough not denied
        said = {(m.base, m.value) for m in mentions}
        status = {"affirm": "positive", "deny": "negative", "unsure": "unknown"}.get(polarity or "")
        named = [(b, v) for b, v, _ in asked if any(sb == b and self.vocab.same(b, sv, v) for sb, sv in said)]
        # "What do you take it for?" - "It's for my asthma": what the answer names is the purpose, else the
        # doctor's topic
        named_purpose = next(
            (m.value for m in mentions if m.base in ("medical_history", "symptom") and m.status == "positive"), None
        )
        topic = named_purpose or self.doctor_topic(doctor)
        doctor_factors = self.doctor_factors(doctor, polarity)
        if polarity == "deny" and not named and self.denies_something_else(text, doctor, asked):
            return  # "No, I haven't had any flashing lights" to "any vision loss?": the asked items stay unanswered
        unsaid_which = polarity is None and self.lists_whether(asked)
        for base, value, checks in asked:
            spec = cmas.SLOTS[base]
            if not spec.medical:
                self._answer_record(frame, base, polarity)
                continue
            if value.casefold() in cmas.OPEN_VALUES:
                if value.casefold() == "all" and base == "symptom":
                    for it in state.get("positive_symptom") or []:
                        self.answer_checks(frame, base, it["value"], checks, sents, "positive", polarity, topic)
                elif base == "medication" and topic:
                    for (name, _), item in frame.items.items():
                        if name == "positive_medication" and "respone_to" not in item:
                            item["respone_to"] = topic
                continue
            if (base, value) in named:
                # the patient named it: the mention's status stands; the asked check values still apply when the
                # reply says yes to them or points there ("Yes, the pain goes there"), unless it places it elsewhere
                # ("any pain in your testicles?" "Not there, but my belly hurts"); a reply that only describes the
                # pain ("It's sharp, about a 7") to "does the pain spread to your back?" has not put it there
                confirms = polarity == "affirm" or bool(_POINTS_THERE.search(text))
                for (name, v), item in frame.items.items():
                    if (v == value and name.endswith(base) and not self.elsewhere(item, checks, text)
                            and (confirms or not self.asks_a_place(checks))):
                        self.check_values(item, checks, base)
                continue
            known = state_status(state, base, value)
            attribute_question = any(c.get("type") not in ("value", "status") and not c.get("values") for c in checks)
            # an attribute asked of what the patient has is answered in the sentences that name nothing else, whatever
            # else the reply names ("It hasn't changed. I've never had this before." to "is it getting worse? and
            # had it before?"); a screening item is unanswered by a reply that names another of the asked items
            about_own = attribute_question and known == "positive"
            if not about_own and (named or self.says_something_else(text, polarity, mentions) or unsaid_which):
                continue  # unsaid_which: "Since Sunday, it's constant" to "any headache, stiff neck or rash?"
            busy = {m.sent for m in mentions if not (m.base == base and self.vocab.same(base, m.value, value))}
            busy |= self._elsewhere(sents, checks)
            if polarity is None and known is None and not self.is_bare_answer(text, busy):
                continue  # a reply that reports something else leaves the asked item unanswered
            extracted = self.answer_checks(frame, base, value, checks, sents, None, polarity, topic, busy=busy)
            if known == "positive" and not checks and status == "negative" and not extracted:
                continue  # "is the pain radiating?" - "No": the patient still has the pain
            if (
                known
                and base == "symptom"
                and doctor_factors
                and not extracted
                and any(c.get("type") == "ana_factors" for c in checks)
            ):
                item = frame.item(base, value, known)
                for k, v in doctor_factors.items():
                    set_attr(item, k, v)
                continue
            if known and attribute_question:
                # "does anything make it worse?" - "No": says nothing about having the symptom
                item_status = known if extracted else None
            else:
                item_status = status or ((known or "positive") if extracted else None)
            if item_status is None:
                continue
            if base == "medical_test":
                item_status = TEST_STATUS.get(item_status, item_status)
            self.answer_checks(frame, base, value, checks, sents, item_status, polarity, topic, busy=busy)

    @staticmethod
    def says_something_else(text: str, polarity: str | None, mentions: list[Mention]) -> bool:
        """Whether a reply that names none of the asked items is a statement about what it does name, so it answers
        none of them.

        - "Yes, I feel sick" to "any cough?", "I have a couple of pints" to "any vision loss?": the yes is about what
          they named (a symptom; or a habit, a medicine, a condition unless the reply points back at the question:
          "sometimes I've noticed it, like with my asthma");
        - "I don't smoke, I work in a bakery" to "any palpitations?": the denial is a statement about what it names;
        - "I am eating fine" to "any weight loss?": an "I am" opening a statement about what it names (no "yes").
        """
        if polarity == "affirm":
            if any(m.status == "positive" and (m.base == "symptom" or (
                    cmas.SLOTS[m.base].medical and not _REFERS_BACK.search(text))) for m in mentions):
                return True
            # "I am eating and drinking normally" to "any weight loss, night sweats or cough?": an "I am" that opens
            # a statement about what it names (a stated normal, a denial) is no yes; an explicit "yes" stays one
            return (not _ANSWER_WORD.match(text) and not _REFERS_BACK.search(text)
                    and any(cmas.SLOTS[m.base].medical for m in mentions))
        return (polarity == "deny" and not _ANSWER_WORD.match(text) and not _REFERS_BACK.search(text)
                and any(cmas.SLOTS[m.base].medical for m in mentions))

    @staticmethod
    def lists_whether(asked: list[Asked]) -> bool:
        """Whether the question asks whether the patient has any of several items, and nothing about them: then a
        reply with neither yes nor no that names none of them ("About an 8, it's there all the time" to "any missed
        periods, bleeding or fainting?") does not say which it is about, and affirms none (an invented fact each).
        Asked about one item, or about an attribute ("when did the cough and the fever start?", "is it a dry cough or
        are you bringing up phlegm?"), such a reply answers the question. A place asked ("any pain in your tummy?") is
        part of what is asked whether."""
        medical = [checks for base, _, checks in asked if cmas.SLOTS[base].medical]
        return len(medical) > 1 and not any(
            c.get("type") not in ("value", "status", "location") for checks in medical for c in checks)

    def denies_something_else(self, text: str, doctor: str, asked: list[Asked]) -> bool:
        """Whether a "no" reply that does not name the asked items denies something else: "No, I haven't had any
        flashing lights" (or "... any cramps", which the NLU records as denied) to "any loss of vision?" says nothing
        of the vision loss. The denied object, in the sentence the "no" opens, is the asked item when it repeats a
        word of the question or, said otherwise, is near one of the asked items' names by the sentence encoder
        (:data:`SYNONYM_SIMILARITY`); "No, nothing like that" refers back, and "No, and no headaches either" is the
        question's no and one more."""
        first = re.split(r"(?<=[.!?])\s+", attr.clean(text).strip())[0]  # the sentence the "no" opens
        m = _DENIED_OBJECT.search(first) or _DENIED_NO.search(first.lower()) or _BARE_NO.search(first.lower())
        if m is None or re.search(r"\b(?:either|neither|too|as well|also)\b", first):
            return False  # "No, and I don't get headaches either": the question's no, and another
        words = [w for w in re.findall(r"[a-z]+", m.group("obj")) if w not in STOP_WORDS and w not in _NOT_AN_OBJECT]
        if not words:
            return False
        question = {w.rstrip("s") for w in re.findall(r"[a-z]+", doctor.lower())}
        if any(w.rstrip("s") in question for w in words):
            return False
        names = [n for b, v, _ in asked if cmas.SLOTS[b].medical
                 for n in (v, *self.lexicon.phrases(b, v)) if n.casefold() not in cmas.OPEN_VALUES]
        if not names:
            return False
        sims = default_encoder().embed([m.group("obj")]) @ self._name_embeddings(sorted(set(names))).T
        return float(sims.max()) < SYNONYM_SIMILARITY

    @cached_property
    def _known_names(self) -> dict[str, np.ndarray]:
        """Every lexicon phrase and value, embedded once and kept on disk (``Encoder.embed_references``): the asked
        items' names are these, and embedding a question's 30-50 names at the turn had cost 40-80 ms."""
        names = sorted({n for t in self.lexicon.terms for n in (t.phrase, t.value)})
        return dict(zip(names, default_encoder().embed_references(names), strict=True))

    def _name_embeddings(self, names: list[str]) -> np.ndarray:
        """Unit embeddings of ``names``, one row each: the kept row of a lexicon name, the rest embedded now."""
        known = self._known_names
        rest = [n for n in names if n not in known]
        fresh = dict(zip(rest, default_encoder().embed(rest), strict=True)) if rest else {}
        return np.stack([known[n] if n in known else fresh[n] for n in names])

    @staticmethod
    def states_its_own_verb(text: str, doctor: str) -> bool:
        """Whether a reply opening "I don't ..." / "I haven't ..." goes on with a verb of its own that the question
        did not use: "I don't smoke" to "any fever or chills?" tells the smoking, it answers nothing asked (the
        reply is read for what it names). The verbs of having and noticing keep it the question's no
        (:data:`_HAVING`), and so do the question's own verb ("Do you sleep well?" "I don't sleep much") and a verb
        whose object refers back ("I haven't checked it")."""
        t = re.sub(r"^(?:(?:oh|well|so|okay|ok|hmm|and|um|uh)\b[,.\s]*)+", "", attr.clean(text))
        m = _NEGATED_VERB.match(t)
        if m is None or m.group(1) in _HAVING or _OBJECT_AFTER.match(t[m.end():]):
            return False  # "I haven't checked it" to "did you take your temperature?": it is the asked thing
        asked = {word_stem(w) for w in re.findall(r"[a-z']+", doctor.lower())}
        return word_stem(m.group(1)) not in asked

    @staticmethod
    def no_determines(mentions: list[Mention]) -> bool:
        """Whether the reply's opening "no" is the determiner of what it names ("No cough, but I get a sharp pain
        when I breathe" to "any chest pain or swollen legs?"): then it is no "No" to the question, and the asked
        items take only what the rest of the reply says of them."""
        return any(m.sent == 0 and m.status == "negative" and m.char_start >= 0
                   and _NO_NAMING.match(m.sentence[:m.char_start]) for m in mentions)

    @staticmethod
    def hedged_amount(frame: Frame, text: str) -> None:
        """A habit the reply says how often or how much of is the patient's, however hedged: "maybe three or four
        glasses a week", "probably a can most nights" - the hedge is on the amount, not on whether. Doubt about the
        habit itself says no amount ("I'm not sure, now and then maybe") and stays unknown."""
        t = attr.clean(text)
        if not (attr.frequency(t) or _HOW_OFTEN.search(t)):
            return
        for value in [v for name, v in frame.items if name == "unknown_habit"]:
            frame.item("habit", value, "positive")  # the item moves to the new status with its attributes

    def offers_alternatives(self, doctor: str, asked: list[Asked]) -> bool:
        """Whether the doctor's question offers alternatives about the one item it asks ("Is the pain sharp, or more
        of an ache?", "Does it stay all day or come and go?"): such a question presupposes the item, so a yes or no
        at the head of the reply picks an alternative or objects to both, and answers nothing about having it. A
        question that lists items ("Any chest pain or palpitations?"), asks whether at all ("... or not?") or asks
        for anything ("any", "ever") is a yes/no question, and its "no" denies what it lists."""
        if len(asked) != 1 or not cmas.SLOTS[asked[0][0]].medical:
            return False
        questions = [q for q in re.split(r"(?<=[?.!])\s+", doctor.strip()) if q.endswith("?")]
        question = (questions[-1] if questions else "").lower()
        alternatives = _ALTERNATIVES.search(question)
        if not alternatives or _WHETHER_AT_ALL.search(question[:alternatives.end()]) or _OR_NOT.search(question):
            return False
        if not _PRESUPPOSES.search(question):
            return False  # "How about being lightheaded, or like you were going to pass out?": two names of one item
        named = {m.value for m in self.finder.mentions(question)[0] if cmas.SLOTS[m.base].medical}
        return len(named) <= 1

    def _elsewhere(self, sents: list[str], checks: list[dict]) -> set[int]:
        """Sentences about another part of the body than the question ("Have you had a fever?" - "My knees have
        been giving me trouble on and off"): their times and frequencies belong to what they name."""
        if any(c.get("type") == "location" for c in checks):
            return set()
        places = self.lexicon.locations
        return {i for i, sent in enumerate(sents) if attr.phrase_hits(attr.without_spread(sent), places)}

    @staticmethod
    def is_bare_answer(text: str, busy: set[int], max_words: int = 8) -> bool:
        """A reply without yes/no/unsure answers the question only when it is short and about nothing else:
        "About a week.", "On and off, mostly at night." - not a story about something else."""
        return not busy and len(re.findall(r"[a-z']+", text.lower())) <= max_words

    def doctor_factors(self, doctor: str, polarity: str | None) -> dict[str, list[str]]:
        """ "Does lying down make it worse?" - "Yes": the factor is the doctor's, the answer the patient's."""
        if polarity not in ("affirm", "deny") or not doctor:
            return {}
        asked = attr.factors(attr.clean(doctor), self.lexicon.factors)
        out = {}
        for key, values in asked.items():
            key = key.removeprefix("not_")
            out[key if polarity == "affirm" else f"not_{key}"] = values
        return out

    def doctor_topic(self, doctor: str) -> str | None:
        """The symptom or condition the doctor's utterance is about ("anything for this cough?"): what a
        medication the patient names is taken for."""
        if not doctor.strip():
            return None
        for m in self.finder.mentions(doctor)[0]:
            if m.base in ("symptom", "medical_history"):
                return m.value
        return None

    @staticmethod
    def elsewhere(item: dict, checks: list[dict], text: str) -> bool:
        """Whether a reply naming the asked item puts it somewhere other than the asked place: it says so ("not
        there", "somewhere else"), or it names places of its own none of which was asked."""
        asked = {v for c in checks if c.get("type") in cmas.VALUE_SENSITIVE_CHECKS for v in c.get("values") or []}
        if not asked:
            return False
        own = set(item.get("location") or []) | ({item["where"]} if item.get("where") else set())
        return bool(_ELSEWHERE.search(text)) or bool(own and not own & asked)

    @staticmethod
    def asks_a_place(checks: list[dict]) -> bool:
        """Whether the question named where ("any pain in your back?"): its location or where values."""
        return any(c.get("type") in ("location", "where") and c.get("values") for c in checks)

    @staticmethod
    def check_values(item: dict, checks: list[dict], base: str) -> None:
        """A yes/no answer to "any pain in your abdomen?" confirms or denies it *there*: the asked values."""
        spec = cmas.SLOTS[base]
        for c in checks:
            kind, values = c.get("type"), c.get("values") or []
            if not values:
                continue
            if kind in ("location",) and kind in spec.lists:
                set_attr(item, kind, list(values))
            elif kind in ("where", "duration") and kind in spec.scalar and item.get(kind) is None:
                item[kind] = values[0]

    def answer_checks(
        self,
        frame: Frame,
        base: str,
        value: str,
        checks: list[dict],
        sents: list[str],
        status: str | None,
        polarity: str | None,
        topic: str | None = None,
        busy: set[int] | None = None,
    ) -> bool:
        """Attributes the answer gives for the asked checks, applied to the item when ``status`` is given; whether
        there are any."""
        found: dict = {}
        kinds = {c.get("type") for c in checks}
        whole = " ".join(sents)
        if base == "symptom":
            self._symptom_checks(found, value, checks, kinds, sents, whole, polarity, busy or set())
        elif base in ("habit", "medical_history"):
            key = "starting"
            if kinds & {"starting", "onset", "when"} and (v := attr.onset(whole, asked=True)):
                found[key] = v
            if "frequency" in kinds and (v := attr.frequency(whole)):
                found["frequency"] = v
            if base == "habit" and (v := attr.frequency(whole)):
                found["frequency"] = v
        elif base == "medication":
            if "frequency" in kinds and (v := attr.frequency(whole)):
                found["frequency"] = v
            if kinds & {"impact", "respone_to"} and (v := attr.impact(whole)):
                found["impact"] = v
            if "respone_to" in kinds and topic:
                found["respone_to"] = topic
        elif base == "family_history" and "relation" in kinds and (r := self.finder.relation(whole)):
            found["relation"] = r
        elif base == "exposure" and (w := attr.where(whole)):
            found["where"] = w
        if status is None:
            return bool(found)
        item = frame.item(base, value, status)
        for k, v in found.items():
            set_attr(item, k, v)
        self.check_values(item, checks, base)
        return bool(found)

    def _symptom_checks(
        self,
        found: dict,
        value: str,
        checks: list[dict],
        kinds: set,
        sents: list[str],
        whole: str,
        polarity: str | None,
        busy: set[int],
    ) -> None:
        for i, clause in enumerate(sents):
            if i in busy:
                continue  # "I smoke a pack a day" answers nothing about the asked cough
            for k, v in self.details.symptom_attributes(clause, value, kinds).items():
                wanted = (
                    k in kinds
                    or k in ("onset", "severity", "progression", "duration", "frequency")
                    or k.endswith("factor")
                    or (k.endswith("characteristics") and "characteristics" in kinds)
                )
                if wanted:
                    set_attr(found, k, v)
        for c in checks:
            if c.get("type") == "characteristics" and c.get("values") and "positive_characteristics" not in found:
                options = [o.strip() for v in c["values"] for o in re.split(r"\bor\b|,", v)]
                said = [o for o in options if o and re.search(rf"\b{re.escape(o.split()[0])}\b", whole)]
                if said:
                    found["positive_characteristics"] = [
                        COUGH_KIND.get(o.split()[0], o) if value == "coughing" else o for o in said
                    ]
            if c.get("type") == "duration" and c.get("values") and polarity == "affirm":
                found.setdefault("duration", c["values"][0])

    @staticmethod
    def _answer_record(frame: Frame, base: str, polarity: str | None) -> None:
        if base == "travel" and polarity in ("deny", "affirm") and "travel" not in frame.records:
            frame.record("travel")["status"] = "not_traveled" if polarity == "deny" else "traveled"
