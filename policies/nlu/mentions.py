"""Mention finding: which concepts the patient named, with their status and owner.

A spaCy ``PhraseMatcher`` over the lexicon (``policies.nlu.lexicon``; the longest match wins, so "chest pain" is
not also "pain") finds the mentions; medspaCy ConText (``agent.core.clinical_text``) gives each one's status (negated,
uncertain) and whether a relative is the subject ("my brother had a heart attack": family history).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from agent.core.clinical_text import (
    GUARDED_SEX,
    HOW_ONE_IS_SAID,
    KIN,
    OTHER_PEOPLE,
    PRODUCT_WORDS,
    RELATIVES,
    ClauseReader,
    PhraseFinder,
    singular,
)
from agent.core.lay_terms import inn_stems
from agent.core.ontology import SITE_VALUES, part_members, site_of
from policies.nlu import attributes as attr
from policies.nlu.lexicon import CONDITION, Lexicon, body_part_words
from policies.nlu.observations import DYED, DYED_BY, finding, observed


@dataclass
class Mention:
    base: str  # CMAS slot type (condition already resolved)
    value: str
    status: str  # positive / negative / unknown
    sent: int
    start: int
    relation: str | None = None
    sentence: str = ""  # the sentence as written
    char_start: int = 0  # the mention's place in it
    char_end: int = 0


_PAST_IS_HISTORY = frozenset({"self-harm", "suicidal ideation"})
"""Symptoms whose past episodes ("I used to self-harm when I was at school") NICE NG225 asks about as history, a risk,
not as the present complaint (values the vocabulary also knows as medical history)."""


class MentionFinder:
    """The lexicon's phrases found in an utterance, as :class:`Mention` s."""

    def __init__(self, lexicon: Lexicon):
        self.lexicon = lexicon

    @cached_property
    def finder(self) -> PhraseFinder:
        self._terms = {f"T{i}": (t.base, t.value) for i, t in enumerate(self.lexicon.terms)}
        return PhraseFinder(((t.phrase, f"T{i}") for i, t in enumerate(self.lexicon.terms)), words=_generic_drug,
                            spans=observed, parts=body_part_words(self.lexicon), members=part_members())

    @cached_property
    def _conditions(self) -> dict[str, str]:
        """The lexicon's condition phrases (singular) -> value: the words that name an illness someone has."""
        conditions = [t for t in self.lexicon.terms if t.base == CONDITION]
        return {singular(w): t.value for t in conditions for w in (t.value, t.phrase)}

    def mentions(self, text: str, named_before: Iterable[str] = (), others: bool = True, proxy: str | None = None
                 ) -> tuple[list[Mention], list[str]]:
        """Concept mentions with their status, and the utterance's sentences (cleaned, in order). ``named_before``:
        the places the conversation was last about, which a "they" may stand for ("They're stiff in the morning").
        ``others``: "he", "she" and the people of the patient's life who are no blood relatives (a wife, a friend)
        are someone else; False when a guardian speaks, for whom "she" is the patient. ``proxy``: the relative a
        guardian speaks for, whose habits are the patient's."""
        found, sents = self.finder.find(text, named_before)
        out = []
        normal: set[tuple[int, str]] = set()  # (sentence, value) a normal reading denies ("my temp was 36.8")
        for f in found:
            base, value = self._terms.get(f.key) or ("medication", f.key.removeprefix(_DRUG))
            seen = finding(f.key)
            if seen is not None:
                base, value, is_normal, a_kind = seen
                if is_normal:
                    normal.add((f.sent, value))
                if a_kind and f.status != "positive":
                    continue  # "the room doesn't spin" denies the spinning, not the dizziness
            if base == "habit" and _DRINK.fullmatch(f.text.lower()) and (
                    _NOT_ALCOHOL.match(f.sentence[f.char_end:]) or _EATING_AND.search(f.sentence[:f.char_start])):
                continue  # "I'm drinking litres of water", "eating and drinking normally": drinking, not alcohol
            if (base == "habit" and value != "regular energy drinks"
                    and _SOFT_DRINK_BEFORE.search(f.sentence[:f.char_start])):
                if not f.sentence[:f.char_start].lower().rstrip().endswith("energy"):
                    continue  # "fizzy drinks": no alcohol
                value = "regular energy drinks"  # "four energy drinks a day", read as drinks a day
            if base == "habit" and value == "smoking" and _CANNABIS_AFTER.match(f.sentence[f.char_end:]):
                continue  # "smoking weed": cannabis (its own habit), not tobacco
            if base == "symptom" and value == "falls" and (_THING_FALLS_AFTER.match(f.sentence[f.char_end:])
                                                           or _THING_BEFORE.search(f.sentence[:f.char_start])):
                continue  # "my trousers are falling off me": a thing falls, not the patient
            if base == "symptom" and value == "fatigue" and _DONE_TO_A_THING.match(f.sentence[f.char_end:]):
                continue  # "they drained it", "shattered the glass": a thing done to, no tiredness
            if base == "symptom" and value == "fever" and any(
                    m.end() == f.char_end for m in HOW_ONE_IS_SAID.finditer(f.sentence)):
                continue  # "I've not been feeling so hot": unwell in general, no fever
            if base == "symptom" and _IDIOM_PAIN.search(f.sentence[max(0, f.char_start - 30):f.char_end + 25]):
                continue  # "my new manager is a real pain in the neck": a nuisance, no pain
            if base == "habit" and _COFFEE_LOOK.match(f.sentence[f.char_end:]):
                continue  # "dark, coffee granules": what the vomit looked like (NICE CG141's "coffee grounds")
            if base in _DONE_OR_TAKEN and _simile(f.sentence[:f.char_start]):
                continue  # "it looked like coffee grounds", "black like tar": a description, not a habit or a drug
            if base == "symptom" and value in DYED and f.status == "positive" and DYED_BY.search(f.sentence):
                continue  # "black since I started the iron tablets": the dye's colour, no bleeding
            if (base in (CONDITION, "medical_history") and value in _SELF_LIMITING
                    and _PRODUCT_AFTER.match(f.sentence[f.char_end:])):
                continue  # "a cold and flu remedy", "flu tablets": what the product is sold for, nobody's illness
            if base in (CONDITION, "medical_history") and _LIKENESS_BEFORE.search(f.sentence[:f.char_start]):
                continue  # "I bloat up like I'm pregnant": a likeness, not a condition had
            # ConText says a relative owns it; the relation word names which ("someone in my family": family)
            relation = (self.relation(f.sentence.lower(), before=f.char_start) or "family") if f.family else None
            if relation and relation != "family" and self._speaker_after(relation, f.sentence, f.char_start):
                relation = None  # "Since my husband passed last spring I can't sleep": the sleeplessness is mine
            if seen is not None and seen[2] and relation:
                continue  # "my dad's weight is steady", "mum's temperature was normal": nothing of anyone's
            before = f.sentence[:f.char_start]
            if base == "habit" and ((relation and relation != proxy) or (
                    others and not f.family and _someone_else(" ".join(sents[:f.sent]), before))):
                if value != "smoking" or f.status != "positive" or not _breathed_in(before, f.sentence):
                    continue  # "my dad smokes", "my husband drinks a lot": their habit, not the patient's
                # someone the patient lives with smokes: the smoke the patient breathes is theirs (MediTOD's guide,
                # special case 3: "secondhand cigarette")
                value, relation = "secondhand cigarette", None
            if base == "medication" and (relation or (
                    others and not f.family and _someone_else(" ".join(sents[:f.sent]), before))):
                continue  # "my dad ... he was on insulin": a relative's medicine is not the patient's
            theirs = bool(relation) and others and self._kin_of_another_at(" ".join(sents[:f.sent]), f.sentence,
                                                                             f.char_start)
            if ((relation in NO_BLOOD_KIN or theirs) and relation != proxy
                    and base in (CONDITION, "medical_history", "symptom")):
                # "The wife had a chest infection, I caught it off her": a spouse's illness is no family history
                relation = None
                if base == "symptom" or _PASSING_ILLNESS.search(value):
                    base, value = "exposure", "sick person"
                else:
                    continue
            elif (others and not f.family and base in (CONDITION, "medical_history", "symptom")
                    and _someone_else(" ".join(sents[:f.sent]), before)):
                kin = self._blood_kin_referred_to(" ".join(sents[:f.sent]), before)
                if base == "symptom" or _PASSING_ILLNESS.search(value):
                    base, value = "exposure", "sick person"  # "I live with my wife. She's got a cold": a contact
                elif kin and base in (CONDITION, "medical_history"):
                    base, relation = CONDITION, kin  # "My sister Bridie, she'd the angina terrible": hers
                else:
                    continue  # "my husband has diabetes": no blood relative's, and not the patient's
            if base in (CONDITION, "medical_history", "symptom") and _VACCINE_AFTER.match(f.sentence[f.char_end:]):
                base, value = CONDITION, IMMUNIZATION  # "my flu jab": a vaccine against it, not the illness
            if base == CONDITION and not relation and value in self.lexicon.felt and felt_now(f.sentence):
                base, value = "symptom", self.lexicon.felt[value]  # "I've been so anxious lately": not a diagnosis
            elif base in (CONDITION, "medical_history") and relation and _PASSING_ILLNESS.search(value):
                base, value = "exposure", "sick person"  # "my grandson had a cold last week": a contact, no history
            elif base == CONDITION:
                base = "family_history" if relation else "medical_history"
            elif base == "medical_history" and relation and relation != proxy:
                continue  # "my mum had her knee operated on": a relative's operation or stay is no one's history here
            elif relation and base == "symptom" and (illness := self._conditions.get(singular(f.text.lower()))):
                # a relative's lasting illness ("my sister gets migraines") runs in families: not a sick contact
                base, value = "family_history", illness
            elif relation and base == "symptom":
                # a relative with the symptom: someone sick around the patient
                base, value = "exposure", "sick person"
            if (base == "exposure" and value == "sick person" and _LONG_AGO.search(f.sentence)
                    and not _LONG_INCUBATION.search(f.sentence)):
                continue  # "my husband had the same thing last year": no contact now (NICE CKS: incubation is days)
            status = f.status
            if base == "symptom" and f.historical and status == "positive" and value in _PAST_IS_HISTORY:
                base = "medical_history"  # "I used to self-harm at school": the patient's history, not now
            if base == "symptom" and status == "negative" and (_CIRCUMSTANCE.search(before)
                                                              or _EPISODES_OF.search(before)):
                continue  # "no phlegm when I cough", "between the coughs I'm fine": the cough is when, not denied
            if base in (CONDITION, "medical_history") and feared(before):
                continue  # "I'm terrified it's cancer", "I wasn't panicking about meningitis": a fear, no history
            if base in (CONDITION, "medical_history", "symptom") and guessed(before):
                continue  # "my neighbour says it's probably an ulcer": a lay guess, nobody's history
            if base in (CONDITION, "medical_history") and status == "negative" and _POSSESSED.search(before):
                status = "positive"  # "never been in hospital with my asthma": the denial is of the stay, not of it
            if value == PAST_EXPERIENCE and status != "negative" and _NEVER_BEFORE.search(before):
                status = "negative"  # "never had pain like this before": no past episode (the superlative is no
                # denial of the pain, clinical_text's "never had pain like it", but it is one of the past's)
            if (status == "negative" and base == "symptom" and _USUALLY_NOT.search(before)
                    and _BUT_THIS_ONE.match(f.sentence[f.char_end:])):
                status = "positive"  # "I don't usually get headaches, but this one ...": this one is had
            if (status == "negative" and base == "symptom" and _NOT_AGAIN.match(f.sentence[f.char_end:])
                    and not _NEVER_BEFORE.search(before)):
                status = "positive"  # "he hasn't been sick again since eight": it was had, and has not come back
            if status != "negative" and _DENIED_AFTER.match(f.sentence[f.char_end:]):
                status = "negative"  # "Fever no.", "Blood? None.": the denial said after what it denies
            if base == "medication" and _ONLY_CONSIDERED.search(f.sentence[:f.char_start]):
                continue  # "I'm wondering about HRT", "could I try the pill?": a medicine asked about, not taken
            if base == "medication" and status == "positive" and _stopped(f.sentence, f.char_start, f.char_end):
                status = "negative"
            if base == "habit" and value == "alcohol abuse" and status == "positive" and _OCCASIONAL.search(f.sentence):
                status = "negative"  # "a glass of wine at Christmas only": no alcoholism (MediTOD's guide, CAGE)
            if base == "habit" and value == "smoking" and status == "positive" and (
                    _quit(f.sentence[f.char_end:]) or _quit_before(f.sentence[:f.char_start])):
                value = "former smoker"  # "I smoked forty a day for years, I packed it in three years ago"
            if (base == "medical_history" and status == "positive" and _ASKING.match(f.sentence.strip())
                    and not re.search(r"\bmy\s+$", f.sentence[:f.char_start].lower())):  # "is it my asthma?": had
                status = "unknown"  # "Could I be pregnant?", "Is it my asthma?": a condition asked about, not had
            if base == "medical_history" and status != "negative" and _RULED_OUT_BEFORE.search(before):
                status = "negative"  # "I can't be pregnant, I've got the coil": ruled out, not had
            elif (base == "medical_history" and status == "positive" and not relation
                    and _GUESS_BEFORE.search(f.sentence[:f.char_start])):
                status = "unknown"  # "it's probably just flu", "could be a virus": the patient's guess, not had
            elif (base == "symptom" and status == "positive" and not relation
                    and _IT_IS_ONLY.search(f.sentence[:f.char_start])):
                status = "unknown"  # "I'll bet it's only indigestion": what the patient thinks the complaint is
            if (f.sent, value) in normal and seen is not None and status == "positive":
                status = "negative"
            out.append(Mention(base, value, status, f.sent, f.start, relation, f.sentence, f.char_start, f.char_end))
        if normal:  # the reading is the verdict: "temperature" said beside a normal one names no fever
            out = [m for m in out if (m.sent, m.value) not in normal or m.status == "negative"]
        return out, [attr.clean(s) for s in sents]

    def kin_of_another(self, said: str) -> bool:
        """Whether the relation word said right after ``said`` (the turn up to it) is someone else's relative: "My
        wife worries. Her brother had leukaemia" is the wife's brother and "my husband's mum" his mother, no blood
        relatives of the patient; "my mum had a stroke and her brother ..." is the patient's uncle. A "her" or "his"
        is the person named last before it. Only where "her" and "his" are not the patient (no guardian speaking)."""
        said = said.lower()
        if m := _THEIR_KIN.search(said):
            owner = m.group("owner")
            if owner not in ("her", "his", "their"):
                return True  # "my wife's brother"
            people = _named_in((*self.lexicon.relations, *NO_BLOOD_KIN), said[:m.start()])
            return bool(people) and max(people)[1] in NO_BLOOD_KIN
        return False

    @staticmethod
    def _speaker_after(relation: str, sentence: str, at: int) -> bool:
        """Whether the speaker is the subject again between the relation word last named before character ``at``
        and ``at`` ("my husband passed last spring, I can't sleep"): ConText's family scope runs on past the "I"."""
        low = sentence.lower()
        named = [m.end() for m in _whole_word(relation).finditer(low) if m.end() <= at]
        said = [m.end() for m in _I_AFTER.finditer(sentence[named[-1]:at])] if named else []
        # ... and names nobody else after it ("my brother, I think he has diabetes" is still the brother's)
        return bool(said) and not re.search(r"\b(?:he|she|they|his|her|their)\b", sentence[named[-1] + said[-1]:at],
                                            re.I)

    def _blood_kin_referred_to(self, earlier: str, before: str) -> str | None:
        """The blood relative a "he" or "she" stands for, when the relation word named last before it is one ("My
        sister Bridie now, she'd the angina"), else None (a wife, a friend: no family history)."""
        said = f"{earlier} {before}".lower()
        m = _SOMEONE_ELSE.search(before)
        if m is None or m.group("who").lower() not in ("he", "she"):
            return None
        upto = said[:len(said) - len(before) + m.start()]
        # a "he" is no mum nor gran: the relative it stands for is the last one named of its sex ("His mum, my gran,
        # had dementia. He has diabetes": the he is not the gran); a word that tells no sex (a cousin) may be either
        sex = "male" if m.group("who").lower() == "he" else "female"
        people = [p for p in _named_in(self.lexicon.relations, upto) if GUARDED_SEX.get(p[1], sex) == sex]
        if not people:
            return None
        last = max(people)[1]
        return None if last in NO_BLOOD_KIN else last

    def _kin_of_another_at(self, earlier: str, sentence: str, before: int) -> bool:
        """:meth:`kin_of_another` for the relation word that owns a mention at character ``before`` of
        ``sentence`` (said after ``earlier``)."""
        low = sentence.lower()
        found = [at for at, _ in _named_in(self.lexicon.relations, low) if at < before]
        return bool(found) and self.kin_of_another(f"{earlier} {sentence[:max(found)]}")

    def relation(self, sentence: str, before: int | None = None) -> str | None:
        """The relation word of the lexicon in ``sentence`` (lower case) nearest before character ``before`` (the
        owner of a mention: "my dad has asthma and my sister had a stroke" - the stroke is the sister's), else the
        first one in the sentence, if any."""
        found = _named_in(self.lexicon.relations, sentence)
        if not found:
            return None
        earlier = [f for f in found if before is not None and f[0] < before]
        return max(earlier)[1] if earlier else min(found)[1]


@lru_cache(maxsize=512)
def _whole_word(word: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(word)}\b")


def _named_in(words: Iterable[str], text: str) -> list[tuple[int, str]]:
    """(position, word) of each of ``words`` said whole in ``text``: the one scan for who is named where (the owner of
    a mention, whose relative a "her" is, whom a "she" stands for). The patterns are compiled once: these run on every
    mention of every turn."""
    return [(m.start(), w) for w in words for m in _whole_word(w).finditer(text)]


_THEIR_KIN = re.compile(
    r"\b(?P<owner>her|his|their|(?:wife|husband|partner|spouse|fiance|fiancee|boyfriend|girlfriend|friend|neighbour|"
    r"neighbor)'s)\s+(?:(?:older|younger|big|little|late|eldest|youngest|twin|own|other)\s+)?$")
"""A relation word's owner said before it ("her brother", "my wife's mum"): maybe someone else
(:meth:`MentionFinder.kin_of_another`)."""


_DIAGNOSED = re.compile(r"\b(?:history of|diagnos\w*|treated for|treatment for|suffer(?:s|ed)? (?:from|with)|used to "
                        r"(?:have|get)|(?:medication|medicines?|tablets|pills|therapy|counselling) for|"
                        r"(?:years|ages) ago|as a (?:child|kid|teenager))\b", re.I)
_NOW = re.compile(r"\b(?:feel|feels|feeling|felt|been|getting|lately|recently|these days|at the moment|right now|"
                  r"all the time|this (?:week|month|year)|past (?:few )?(?:days|weeks|months)|i'm|i am|im)\b", re.I)


def felt_now(sentence: str) -> bool:
    """Whether a condition that is also a symptom (the lexicon's ``felt_conditions``: anxiety, depression) is said as
    the patient's present experience ("I've been really anxious lately", "there's been a lot of anxiety", "my
    anxiety has been bad this month") rather than a diagnosis ("I have a history of anxiety", "I was diagnosed with
    depression years ago", "tablets for my anxiety"). MediTOD annotates the felt one as a symptom: a patient who
    opens with it is presenting with it, and the interview takes its history."""
    return not _DIAGNOSED.search(sentence) and bool(_NOW.search(sentence))


_ASKING = re.compile(r"^\W*(?:(?:so|but|and|oh|well)\W+)?(?:could|can|might|may|is|are|am|was|were|would|should|"
                    r"will|do you \w+|does|did)\b.*\?\W*$", re.I | re.S)
"""A patient's own yes/no question ("Could it be my heart?", "Do you think I'm pregnant?"): a condition it names is
what the patient wonders about, so it is unknown, never the patient's history. (A symptom in such a question, "Is the
cough serious?", is presupposed and keeps its status.)"""

_VACCINE_AFTER = re.compile(r"^\W*(?:jabs?|shots?|vaccines?|vaccinations?|vaccinated|immuni[sz]ations?|boosters?)\b",
                            re.I)
"""A vaccine word right after a condition's name ("flu jab", "covid booster"): the immunisation, not the illness."""
IMMUNIZATION = "immunization"  # MediTOD's medical-history value for vaccinations

_IDIOM_PAIN = re.compile(r"\b(?:is|'s|’s|are|was|were|be|being)\s+(?:a|an|such a|a real|a right|an absolute|a total|"
                         r"a bit of a|a proper)\s+(?:real\s+|right\s+|absolute\s+|total\s+)?pain\s+in\s+(?:the|my|his|"
                         r"her)\s+(?:neck|arse|ass|backside|butt|bum|rear)\b|"
                         r"\b(?:the only|the real|the biggest|the one|what a|such a)\s+pain\s+in\s+the\s+"
                         r"(?:neck|arse|ass|backside|butt|bum|rear)\b", re.I)
"""Someone or something that "is a pain in the neck" is a nuisance (the idiom), not a pain anywhere."""

_DONE_OR_TAKEN = ("habit", "medication", "exposure")
_SIMILE_BEFORE = re.compile(r"\b(?:(?:like|as if|as though|the colou?r of|colou?red like|resembl(?:es|ed|ing))\s+"
                            r"(?:(?:a|an|the|some|old|black|dark|used|wet|ground)\s+){0,2}"
                            r"|(?:like|as if|as though)\s+(?:i|he|she|you|they|we|someone|somebody)"
                            r"(?:'s|'d|'ve|'m|’s|’d|’ve|\s+has|\s+had|\s+have|\s+was|\s+were)?\s+(?:had|been|drunk|taken|smoked|on|run|ran|done|did|"
                            r"gone|went|played|swum|climbed|cycled|walked)\s+"
                            r"(?:\w+\s+){0,2})$", re.I)
"""A habit, drug or exposure word in a simile ("it looked like coffee grounds", "sticky like tar"): the patient
describes what they saw or felt by it; they do not say they drink, take or met it."""
NO_BLOOD_KIN = frozenset("""wife husband partner boyfriend girlfriend fiance fiancee spouse stepdad stepmum stepmom
stepfather stepmother father-in-law mother-in-law""".split()) | OTHER_PEOPLE
"""The people of the patient's family who share no blood with them: their illnesses are no family history (a
contact's passing illness is an exposure)."""
_SELF_LIMITING = frozenset({"cold", "influenza", "urti", "viral infection", "cough"})
_PRODUCT_AFTER = re.compile(rf"^(?:\s*(?:and|&|or|/)\s*[\w-]+)?\s+(?:{PRODUCT_WORDS}|drinks?|stuff)\b", re.I)
"""An over-the-counter product named by the short illness it is sold for ("a cold and flu remedy", "some flu
tablets", "cold and flu sachets"): the illness names the product, and a patient taking it may or may not have had one
(the complaints they took it for are read in their own words)."""
_LIKENESS_BEFORE = re.compile(r"\b(?:like|as if|as though)\s+(?:i|i'm|i am|i was|i've|i have|i had|i've got|he|he's|"
                              r"she|she's|you|you're|someone|somebody|a person)\b[^,.;!?]{0,20}$", re.I)
"""A condition in a likeness ("I bloat up like I'm pregnant", "it felt as if I was having a heart attack"): the
patient tells what it was like, not that they have it (a pregnancy so recorded had raised the ectopic emergency)."""

_GUESS_BEFORE = re.compile(
    r"\b(?:(?:it'?s|it is|it was|it'll be|this is|must be|probably|likely|prob)\s+(?:probably\s+|likely\s+|only\s+)?"
    r"(?:just|only|nothing but)|(?:i|we)\s+(?:think|thought|reckon|reckoned|guess|guessed|assumed|assume|figured|hope|"
    r"hoped)\s+(?:it'?s|it is|it was|it'd be|it might be|it could be|it must be|(?:he|she)'?s|(?:he|she) (?:is|was|had|"
    r"has)|(?:he|she)'?d|(?:he|she) just had|i'?m having|i am having|i might have|i may have|i might be having|"
    r"i'?ve (?:got|picked up|caught)|i (?:have|got|caught))(?:\s+(?:probably|only|just))?"
    r"|(?:could|might|may)\s+(?:just\s+)?be"
    r"|probably)\s+(?:a\s+|an\s+|the\s+|some\s+|touch of\s+|a touch of\s+|a bit of\s+|a dose of\s+)?$",
    re.I)
"""The patient's own guess at what it is ("it's probably just flu", "I thought it was just a cold", "could be a
virus", "I think I'm having a gastric ulcer or gastritis"): a diagnosis the patient proposes, which the history is
taken to test, not one they have been given. Recorded as unknown, as a condition the patient asks about is; recorded
as had, it had made a meningitis story influenza."""

_IT_IS_ONLY = re.compile(
    r"\b(?:(?:(?:i'll|i will|i'd|i)\s+bet|i expect|i'm sure|i am sure|i reckon|i think|i'm guessing)\s+"
    r"(?:it'?s|it is|it'll be|it will be|this is|that's)\s+(?:probably\s+|likely\s+|surely\s+)?|"
    r"(?:it'?s|it is|it'll be|it will be|this is|that's)\s+(?:probably|likely|surely)\s+|"
    r"(?:^|(?<=[.!?,;]\s))\s*(?:probably|likely|most likely|bet it's)\s+)"
    r"(?:only|just|nothing but|nothing more than)\s+(?:a\s+|an\s+|some\s+|bad\s+|a bit of\s+|a touch of\s+)?$", re.I)
"""A complaint's name said as the patient's guess at what "it" only is ("I'll bet it's only indigestion", "it's
probably just heartburn"): their explanation of the complaint they go on to tell (a crushing chest pain), not a
second complaint; recorded as unknown, as a guessed condition is. Without the guess ("it's just a headache") it is the
complaint, played down."""

_GUESS_IN = re.compile(_GUESS_BEFORE.pattern.removesuffix("$"), re.I)


def a_guess(clause: str) -> bool:
    """Whether ``clause`` proposes a diagnosis as the patient's guess (:data:`_GUESS_BEFORE`, anywhere in it): for a
    condition found by meaning, whose place in the clause is not known."""
    return bool(_GUESS_IN.search(clause))


_RULED_OUT_BEFORE = re.compile(
    r"\b(?:can'?t|cannot|can not|couldn'?t|could not|won'?t)\s+(?:possibly\s+|really\s+|actually\s+)?be\s+"
    r"(?:a\s+|an\s+)?$|\b(?:no way|no chance)\s+(?:i'?m|i am|i could be|that i'?m)\s+$", re.I)
"""A condition said to be impossible ("I can't be pregnant", "there's no way I'm diabetic"): ruled out by the patient,
a denial (medspaCy's "n't" is kept from negating after "can't", since an inability is no denial)."""

_LIKING = re.compile(r"\b(?:i|we|you|they|he|she|really|do|don't|does|did|would|'d|i'd)\s+(?:really\s+)?like\s+"
                     r"(?:\w+\s+){0,2}$", re.I)


_HOUSEHOLD_WORD = re.compile(
    r"\b(?:husband|wife|partner|boyfriend|girlfriend|fiancee?|flatmate|housemate|roommate)s?\b")
_SHARED_AIR = re.compile(r"\b(?:at home|in the house|in the flat|indoors|inside|in the car|around me|around us|"
                         r"in front of (?:me|us|the kids|the children))\b")


def _breathed_in(before: str, sentence: str) -> bool:
    """Whether the smoker the patient names (``before``: the sentence up to the habit) shares the patient's air: a
    partner or housemate, or anyone said to smoke at home, indoors or in the car ("my dad smokes in the house")."""
    return bool(_HOUSEHOLD_WORD.search(before.lower()) or _SHARED_AIR.search(sentence.lower()))


_CIRCUMSTANCE = re.compile(r"\b(?:when(?:ever)?|while|as)\s+(?:i|i'm|i am)\s+(?:\w+\s+)?$", re.I)
"""A symptom said as the time of another ("no blood when I cough", "I don't bring anything up when I'm coughing"):
the patient presupposes it, so the negation of the sentence does not deny it."""


_THING_FALLS_AFTER = re.compile(r"^\s+(?:off|apart|to bits|to pieces|asleep|pregnant|in love|out with|behind|"
                                r"through|for|into (?:a|the) (?:habit|routine|trap))\b", re.I)
_THING_BEFORE = re.compile(r"\b(?:trousers|jeans|clothes|skirt|dress|belt|shoes?|glasses|rings?|watch|teeth|tooth|"
                           r"nails|things|stuff|plates?|cups?)\b(?:\s+[\w']+){0,3}\s*$", re.I)
"""A thing that falls ("my trousers are falling off me", "things keep falling out of my hand"), or a fall that is no
fall ("I fell asleep in my lenses", "fell pregnant", "fell out with my sister"): no fall of the patient's."""
_DONE_TO_A_THING = re.compile(r"^\s+(?:it|them|the|a|an|this|that|some|off|out)\b(?!\s+(?:bit|lot|little)\b)",
                              re.I)
"""A tiredness word used as a verb with its object ("they drained it", "I shattered the glass", "drained off the
fluid"): what was done to a thing; "drained a bit" stays a degree of tiredness."""
_EPISODES_OF = re.compile(r"\b(?:in\s+)?(?:between|after|during)\s+(?:the\s+|my\s+|a\s+|each\s+|every\s+)?(?:\w+\s+)?$",
                          re.I)
"""A symptom said as the frame of a time ("between the coughs I'm okay", "after the cough I make the noise"): its
episodes are presupposed, and what the sentence denies is about the time between them."""
_FEARED = re.compile(r"\b(?:scared|terrified|frightened|afraid|worried|worrying|worries|panicking|panicked|petrified|"
                     r"paranoid|fear|fearing|feared|dread|dreading|convinced|read(?:ing)?\s+(?:up\s+)?(?:about|on)|"
                     r"look(?:ed|ing)\s+up|googl\w+|search(?:ed|ing)\s+(?:for|about)|heard\s+about)\b"
                     r"(?:\s+[\w']+){0,6}\s*$", re.I)
"""A condition named as what the patient fears ("I'm terrified it's cancer", "scared I've got a brain tumour", "I
wasn't panicking about meningitis") or has read about ("I've been reading about AF", "I googled lymphoma"): their
concern, which says nothing of their history either way."""
PAST_EXPERIENCE = "past experience"
_NEVER_BEFORE = re.compile(r"\bnever\b|(?:\bnot|n't|’t)\s+(?:ever\s+)?(?:had|felt|experienced|been|known)\b", re.I)
"""A denial of ever having had it, said before "... like this before" (MediTOD: medical history "past experience")."""
_POSSESSED = re.compile(r"\b(?:my|his|her|their)\s+(?:\w+\s+)?$", re.I)
"""A condition the speaker calls theirs ("with my asthma", "for her epilepsy"): had, whatever the sentence denies
("never been in hospital with my asthma" denies the stay)."""
_DENIED_AFTER = re.compile(r"^\s*[,:?-]?\s*(?:(?:no|none|never|nope|nah|not at all)|(?:never\s+)?(?:i|he|she|we)\s+"
                           r"(?:(?:do|does|did)\s*)?(?:n't|n’t|not|never)(?:\s+(?:do|does|did))?)\s*(?:[.!;]|$)", re.I)
"""A denial said after its object, as a terse or non-native speaker says it ("Fever no.", "Blood in it? None."), or
with the object fronted, as Chinese, Creole and other English put it ("Smoke I don't.", "Cigarettes, never I do
not."): right after the object, so "wetting herself, which she never does" denies nothing."""


_COFFEE_LOOK = re.compile(r"^[\s-]*(?:grounds?|granules?|grains?)\b", re.I)
"""Coffee named by its grounds or granules: a look (of vomit or stool), not a drink."""
_NOT_AGAIN = re.compile(r"^\s*(?:again|any more since|anymore since|since then)\b", re.I)
"""A denial of a further episode, said after the symptom ("hasn't been sick again", "not had a fit since then"): the
symptom was had (MediTOD records it positive), only it has not come back."""
_USUALLY_NOT = re.compile(r"\b(?:don't|do not|never|rarely|hardly ever|seldom)\s+(?:\w+\s+){0,2}?(?:usually|normally|"
                          r"really|often|ever|get|suffer)\b|\b(?:usually|normally)\s+(?:don't|do not|never)\b", re.I)
_BUT_THIS_ONE = re.compile(r"^[^.!?]*?\b(?:but|and|though|however)\s*,?\s+(?:this|that|the)\s+"
                           r"(?:one|time|(?:new\s+)?one's)\b", re.I)
"""A kind of complaint denied as a habit and then told ("I don't usually make a fuss over headaches, but this one came
on like a light switch", "I never get migraines, but this one ..."): the "one" is a headache the patient has now."""


def _simile(before: str) -> bool:
    """Whether the words before a mention open a simile ("looked like", "black like") rather than say a liking ("I like
    a drink" is a habit)."""
    return bool(_SIMILE_BEFORE.search(before)) and not _LIKING.search(before)


_DRINK = re.compile(r"drink(?:s|ing|er)?")
_NOT_ALCOHOL = re.compile(r"^(?:\s+(?:fine|normally|ok|okay|alright|well|as normal|as usual|properly)\b|"
                          r"(?:\W+\w+){0,5}?\W+(?:water|fluids?|litres?|liters?|lots|loads|plenty|tea|teas|coffee|"
                          r"coffees|juice|milk|squash|pop|soda|cola|coke|pepsi|smoothies?|energy|red bull|monster|"
                          r"lucozade|fizzy|shakes?)\b|\W+(?:enough|as much as|nearly enough)\b)", re.I)
_EATING_AND = re.compile(r"\b(?:eating|eat|eats|ate|feeding|feeds|fed)\s+(?:and|or|&)\s+$", re.I)
"""Drinking said with eating ("she's eating and drinking normally"): food and fluids, not alcohol."""
_SOFT_DRINK_BEFORE = re.compile(r"\b(?:energy|soft|fizzy|sports|protein|diet|sugary|hot|fruit)\s+$", re.I)
"""A "drinks" that a kind of soft drink names ("three energy drinks a day"): no alcohol."""
"""Words after a bare "drink" that make it something other than alcohol (the lexicon's ``drink`` is alcohol): a
drink named, or the amount said as the advice on fluids says it ("I don't drink enough", "I don't always drink as much
as I should")."""

_CANNABIS_AFTER = re.compile(r"^(?:\W+\w+){0,3}?\W+(?:weed|cannabis|marijuana|pot|joints?|spliffs?|skunk|hash|"
                             r"dope)\b", re.I)
"""Words after a smoking word that make it cannabis ("smoking weed", "I smoke a joint"), which the lexicon records
as its own habit; tobacco smoking is not said."""

_OTHER_PERSON = (r"(?:he|she|(?:my|our|a|the)\s+(?:wife|husband|partner|boyfriend|girlfriend|fiance|fiancee|"
                 r"flatmate|housemate|roommate|friends?|colleagues?|boss|neighbou?rs?|lodger)|someone|somebody|"
                 r"everyone|everybody|people|half (?:the|my) \w+|"
                 # someone not named ("a girl on my floor", "a lad in his class", "some of the kids")
                 r"(?:a|one|another|some)\s+(?:of\s+the\s+)?(?:girls?|boys?|lads?|lass|kids?|child|children|guys?|man|woman|"
                 r"lady|students?|pupils?|teachers?|nurses?|people)\b)")
_SOMEONE_ELSE = re.compile(
    rf"(?:^|[.,;]|\b(?:and|but|so|because|cause|actually|also)\b)\W*(?P<who>{_OTHER_PERSON})(?:'s|’s|'ve|’ve|'d|’d)?\s+"
    rf"(?!(?:\w+\s+)?(?:said|says|say|told|tells|thinks|think|reckons|noticed|notices|thought|saw|sees|heard|hears)\b)"
    r"(?:(?!\b(?:i|i'm|i've|i'd|me|myself)\b)(?!(?<!\bon )(?<!\bin )(?<!\bat )(?<!\bfrom )\bmy\b)[^,;.])*$", re.I)
"""A clause whose subject is someone other than the patient, before the mention: "he", "she" ("they" is as often the
knees or the headaches the patient spoke of), or one of the
patient's people who is no blood relative (ConText's family cues name those): "I live with my wife. She's got a cold",
"my husband has been coughing all week". Someone who reports on the patient ("my wife says I snore") is not it."""
_PERSON_NOUN = re.compile(r"\b(?:wife|husband|partner|boyfriend|girlfriend|fiancee?|flatmate|housemate|roommate|"
                          r"friends?|colleagues?|boss|neighbou?rs?|lodger|mum|mom|mother|dad|father|son|daughter|"
                          r"mama|mamma|mam|mammy|mummy|mommy|papa|daddy|"
                          r"brother|sister|gran\w*|grand\w+|nan|aunt\w*|uncle|cousin|baby|kids?|child|children|"
                          r"girl|boy|man|woman|lady|guy)\b", re.I)


_NAMED_PERSON = re.compile(r"\b(?:[Mm]y|[Oo]ur)\s+(?!(?:GP|A&E|NHS)\b)[A-Z][a-z]+\b")
"""One of the patient's people by name ("my Glenys, God rest her, she had the asthma"): case matters, a capital after
"my" names a person where a body part or a thing would be lower case."""


def feared(before: str) -> bool:
    """Whether a condition said after ``before`` (the words before it) is named as what the patient fears
    (:data:`_FEARED`), not as theirs ("with my asthma" is theirs however worried they are)."""
    return bool(_FEARED.search(re.split(r"[,;.]|\b(?:and|but)\b", before)[-1])) and not _POSSESSED.search(before)


_GUESSERS = "|".join(sorted(RELATIVES | KIN | OTHER_PEOPLE | {
    "google", "internet", "web", "everyone", "everybody", "people", "missus", "misses", "hubby", "other half"}))
_GUESSED = re.compile(
    rf"\b(?:{_GUESSERS})(?:'s|’s)?\s+(?:\w+\s+)?(?:says?|said|thinks?|thought|reckons?|reckoned|swears|insists?|"
    r"is\s+convinced|(?:keeps?|kept)\s+(?:on\s+)?(?:saying|telling\s+me)|tells?\s+me|told\s+me)\s+(?:that\s+)?"
    r"(?:it'?s|it’s|it\s+is|it\s+was|it\s+(?:might|could|must|may|would)\s+be|this\s+is|that'?s)\b[^.;!?]{0,30}$", re.I)
"""A lay person's guess at what the patient's complaint is ("my neighbour says it's probably an ulcer", "my sister
thinks it might be asthma", "my husband keeps telling me it's high blood pressure", "Google says it could be"):
their opinion, no fact of the patient's history either way (a clinician's word, "the doctor said it was gout", is
a diagnosis and stays)."""


_GUESSED_IN = re.compile(_GUESSED.pattern.removesuffix("[^.;!?]{0,30}$"), re.I)


def guessed(before: str, anywhere: bool = False) -> bool:
    """Whether a condition said after ``before`` (its sentence's words before it) is a lay person's guess at what
    the patient has (:data:`_GUESSED`); ``anywhere``: whether ``before`` (a clause found by meaning, whose place in
    it is not known) holds such a guess at all."""
    return (_GUESSED_IN if anywhere else _GUESSED).search(before) is not None


def someone_elses(earlier: str, clause: str) -> bool:
    """Whether ``clause`` (said after ``earlier`` in the turn) has someone else for its subject, as a mention's own
    clause is read: for what the second stage finds by meaning, which has no place in a sentence."""
    return _someone_else(earlier, clause)


_I_AFTER = re.compile(r"\b(?:I|I'm|I’m|I've|I’ve|I'd|I’d|I'll|I’ll)\s+(?!\w+\s+(?:him|her|them)\b)", re.I)
"""A first-person subject said after someone else was named and before the mention: the clause is the speaker's."""


def _someone_else(earlier: str, before: str) -> bool:
    """Whether the clause a mention is in has someone else for its subject (:data:`_SOMEONE_ELSE`); a "he" or "she"
    only when the turn named a person before it ("I live with my wife. She's got a cold"): said alone, it is as
    likely the patient a guardian speaks for."""
    m = _SOMEONE_ELSE.search(before)
    if m is not None and _I_AFTER.search(before[m.end():]):
        return False  # "Since my husband passed last spring I can't sleep": the "I" after him is the subject
    if m is None and (a := _APPOSITION.search(before)) is not None:
        return _someone_else(earlier, before[:a.start()])  # "she's taking a tablet every morning, levothyroxine"
    if m is None:
        return False
    subject = m.group("who").lower()
    if subject not in ("he", "she"):
        return True
    said = f"{earlier} {before[:m.start()]}"
    return bool(_PERSON_NOUN.search(said) or _NAMED_PERSON.search(said))


_OCCASIONAL = re.compile(r"\b(?:at|for|over)\s+christmas\b|\bon\s+(?:special\s+)?occasions?\b|\bspecial\s+occasions?\b|"
                         r"\b(?:very\s+)?(?:rarely|occasionally|seldom)\b|\bhardly\s+(?:ever|at\s+all)\b|"
                         r"\bonce\s+in\s+a\s+(?:blue\s+moon|while)\b|\bthe\s+odd\s+(?:glass|drink|pint|beer|one)\b|"
                         r"\b(?:at|for)\s+(?:weddings?|birthdays?|new\s+year)\b|\bonce\s+or\s+twice\s+a\s+year\b", re.I)
"""Drinking said to be only now and then ("a glass of wine at Christmas", "the odd pint", "hardly ever"): MediTOD's
guide annotates such drinking as no alcoholism ("may be a glass of wine on the weekends ... status: No", judged by
CAGE); a daily or weekly habit stays the annotators' judgement, recorded as had."""

_LONG_AGO = re.compile(r"\b(?:last|the other)\s+year\b|\byears?\s+ago\b|\b(?:a|one|two|three|four|five|six|"
                       r"several|few|couple\s+of|\d+)\s+(?:years|months)\s+(?:ago|back)\b|\bas\s+a\s+(?:kid|child)\b|"
                       r"\bwhen\s+(?:he|she|they)\s+was\s+(?:little|young|a\s+(?:kid|child|baby))\b", re.I)
"""A time long past in a sentence telling someone else's illness: a contact then is no sick contact now."""
_LONG_INCUBATION = re.compile(r"tuberculosis|\bTB\b|hepatitis|\bHIV\b", re.I)
"""Illnesses a contact long ago still matters for (tuberculosis shows itself months to years after; NICE NG33)."""

_APPOSITION = re.compile(r"[,;:]\s*(?:(?:the|a|an|called|named|it's|its|it’s|which\s+is)\s+)*$", re.I)
"""A name said after a comma with no verb of its own ("she takes the small white tablet, levothyroxine"): the name
of what the clause before it spoke of, whose subject it keeps."""


_PASSING_ILLNESS = re.compile(r"infection|cold|influenza|flu\b|pneumonia|tuberculosis|vir(?:us|al)|covid|bug|"
                              r"meningitis|chickenpox|measles|"
                              r"gastroenteritis|pox|measles|tonsillitis|pharyngitis|conjunctivitis|pink eye|"
                              r"laryngitis|bronchitis|sinusitis|otitis|impetigo|scarlet fever|norovirus|"
                              r"glandular fever|mumps|whooping cough|pertussis|strep", re.I)
"""An illness that passes between people: someone else's is a sick contact (an exposure), a lasting one is nobody's
in the patient's state."""

_ONLY_CONSIDERED = re.compile(
    r"\b(?:wonder(?:ing|ed)?\s+(?:about|if|whether)|thinking\s+(?:about|of)|think(?:ing)?\s+about\s+(?:trying|going\s+on)|"
    r"ask(?:ing|ed)?\s+(?:about|for)|consider(?:ing)?|interested\s+in|heard\s+(?:about|of)|read\s+about|"
    r"(?:could|can|should|would|might)\s+(?:i|we|he|she)\s+(?:try|have|get|start|go\s+on|take|be\s+put\s+on)|"
    r"want(?:ed)?\s+to\s+(?:try|start|go\s+on|get|ask\s+about)|would\s+like\s+(?:to\s+(?:try|start|go\s+on)\s+)?|"
    r"what\s+about|how\s+about|is\s+there\s+any|"
    # a medicine asked for, or out of reach: "I want antibiotics", "I can't afford the clinic for HRT"
    # ("need" is left out: "I need senna most nights" is taking it)
    r"(?:i|we)(?:'d|’d|\s+would)?\s+(?:really\s+|just\s+|only\s+)?(?:want|wanted|like|was\s+hoping\s+for|"
    r"came\s+for)(?!\s+(?:my|more|to\s+use|to\s+take)\b)|"
    r"(?:give|prescribe|get)\s+me|can\s+(?:i|we)\s+(?:have|get)|"
    r"(?:can't|can’t|cannot|couldn't|couldn’t|could\s+not)\s+afford|too\s+expensive)\b(?:\W+\w+){0,4}?\W*$", re.I)
"""Words before a medicine that make it one asked about, asked for or considered, not taken ("so I'm wondering about
HRT", "could I try the pill?", "I want antibiotics", "I can't afford the clinic for HRT"): MediTOD's guide records
medications the patient takes or took."""

_DRUG = "drug:"
# A medicine the patient no longer takes. MediTOD's guide gives a medication three statuses (currently taking / took
# in the past / no), and the annotated dialogues file what is no longer taken under "no": a stopped medicine is a
# negative item, never a current one. "Tried" is not a stop ("I've tried my inhalers, they sometimes help" is
# annotated positive).
_STOPPED_BEFORE = re.compile(r"\b(?:stopped|stop|came off|come off|coming off|been off|i'm off|i am off|took me off|"
                             r"taken off|no longer|gave up|quit|used to|"
                             r"was on|were on|had been on|was taking|used to take)\b(?:\W+\w+){0,4}\W*$", re.I)
_STOPPED_AFTER = re.compile(r"^(?:\W+\w+){0,6}?\W+(?:but|and|so)\W+(?:i\W+|i've\W+|they\W+|the doctor\W+)?"
                            r"(?:stopped|came off|come off|gave|quit|had to stop|took me off)\W+"
                            r"(?:taking\W+)?(?:it|them|that|those)\b", re.I)  # "... but I stopped it": the same drug


_QUIT = re.compile(r"\b(?:quit|gave (?:it |them |up )?(?:up)?|given (?:it |them )?up|stopped|packed (?:it |them )?in|"
                   r"knocked (?:it|that|them) on the head|kicked (?:it|the habit)|haven't (?:had|smoked) (?:one|a \w+) "
                   r"since|(?:till|until|up until|up to) (?:about |around |maybe )?(?:\w+ )?(?:\w+ )?"
                   r"(?:years?|months?) ago)\b", re.I)
"""A smoker's quitting said after the smoking ("I smoked for thirty years and quit in 2015", "... I packed it in
three years ago", "I smoked twenty a day till about five years ago"): a former smoker (the ontology's own value), not
a current one."""


_QUIT_ATTEMPT = re.compile(r"\b(?:try|tried|trying|tries|want|wants|wanted|going|gonna|thinking|think|like|should|"
                           r"hoping|hope|plan|planning|need|needs|can't|cannot|couldn't|never|not|haven't|hasn't|"
                           r"won't|attempts?)\b(?:\W+\w+){0,2}\W*$", re.I)


def _quit(after: str) -> bool:
    """Whether the words after a smoking habit say it was given up, not only tried or wished ("I've tried to quit
    but I can't", "I want to give up" are a current smoker's)."""
    return any(not _QUIT_ATTEMPT.search(after[:m.start()]) for m in _QUIT.finditer(after))


_QUIT_BEFORE = re.compile(r"\b(?:quit|quitted|gave up|given up|give up|stopped|packed in|packed up|kicked|off|come off|"
                          r"came off|been off|knocked)\s+(?:the\s+|my\s+|on\s+the\s+)?$", re.I)


def _quit_before(before: str) -> bool:
    """Whether the words just before a smoking habit say it was given up ("I gave up the fags ten year ago", "I'm off
    the cigarettes two years now"), not only tried or wished ("I've tried to give up smoking")."""
    m = _QUIT_BEFORE.search(before)
    return m is not None and not _QUIT_ATTEMPT.search(before[:m.start()])


def _stopped(sentence: str, start: int, end: int) -> bool:
    """True when the words around a medication say the patient has stopped it ("I came off the metformin",
    "ramipril, but I stopped it"); the words before are read back to the clause's start only."""
    before = re.split(r"[,;.]|\bbut\b", sentence[:start])[-1]
    return bool(_STOPPED_BEFORE.search(before) or _STOPPED_AFTER.match(sentence[end:]))


def _generic_drug(word: str) -> str | None:
    """A medicine the lexicon does not list, named by its generic name (known by its WHO INN stem): recorded as
    the patient said it ("doxazosin"), one item with its class through the vocabulary."""
    return f"{_DRUG}{word}" if inn_stems().drug_class(word) is not None else None


# Mentions joined by a bare conjunction share their words; a determiner or an intensifier between them ("swollen and
# really painful") does not make a new clause.
_COORDINATED = re.compile(
    r"^[\s,]*(?:and|or|&|/)?[\s,]*(?:(?:a|an|the|some|my|any|also|really|very|quite|so|pretty|slightly|extremely|"
    r"a bit|a little)\s+)*\s*$", re.I)
_BOUNDARY = re.compile(r"[,;:]|\b(?:and|but|or|while|whereas|plus|then|also|as well as)\b", re.I)


_NEW_CLAUSE = re.compile(r"[,;]?\s*\b(?:and|but|while|whereas|plus)\s+(?:i'm|i am|i've|i have|i'd|i was|i take|i use|"
                         r"i get|i got)\b", re.I)
"""After the last thing a sentence names, a new clause of the patient's own ("..., and I'm on the purple one twice a
day"): its details are of what it tells, not of the thing named before it."""
_BACK_TO_IT = re.compile(r"(?:\W+\w+){0,3}?\W+(?:it|them|that|this|those|these|one of them)\b", re.I)
"""... unless it speaks of that thing again ("a cough, and I've had it for a week")."""


def segments(mentions: list[Mention]) -> dict[int, str]:
    """The part of its sentence that each mention's attributes are read from, by ``id(mention)``.

    A sentence that names several things says each one's details next to it: "a fever since yesterday and a cough
    for about a week" gives the fever "since yesterday" and the cough "about a week". The words between two
    mentions are split at the last clause boundary between them (a comma, "and", "but"...): what precedes it
    belongs to the first, the rest (pre-modifiers such as "green" in "green phlegm") to the second. Mentions joined
    by a bare conjunction ("a cough and fever for a week") are one group and share their words."""
    out: dict[int, str] = {}
    by_sent: dict[int, list[Mention]] = {}
    for m in mentions:
        by_sent.setdefault(m.sent, []).append(m)
    for ms in by_sent.values():
        ms = sorted(ms, key=lambda m: m.char_start)
        sentence = ms[0].sentence
        groups: list[list[Mention]] = [[ms[0]]]
        cuts = [0]
        for prev, nxt in zip(ms, ms[1:], strict=False):
            gap = sentence[prev.char_end:nxt.char_start]
            if nxt.char_start <= prev.char_end or _COORDINATED.match(gap):
                groups[-1].append(nxt)
                continue
            bounds = list(_BOUNDARY.finditer(gap))
            last = bounds[-1] if bounds else None
            cuts.append(prev.char_end + (last.start() if last else 0))
            groups.append([nxt])
        tail = _NEW_CLAUSE.search(sentence, ms[-1].char_end)
        cuts.append(tail.start() if tail and not _BACK_TO_IT.match(sentence, tail.end()) else len(sentence))
        for i, group in enumerate(groups):
            part = sentence[cuts[i]:cuts[i + 1]]
            for m in group:
                out[id(m)] = attr.clean(part)
    return out


def own_clause(m: Mention) -> str:
    """The clause of its sentence a mention stands in, between the clause boundaries around it (commas, "and",
    "but"), cleaned: where a time said of it alone is ("... three days ago and since yesterday I can't breathe")."""
    before = [b.end() for b in _BOUNDARY.finditer(m.sentence[:m.char_start])]
    after = _BOUNDARY.search(m.sentence, m.char_end)
    return attr.clean(m.sentence[before[-1] if before else 0:after.start() if after else len(m.sentence)])


def names_a_pain(value: str) -> bool:
    """A symptom value that is a pain: ``pain``, ``chest pain``, ``headache``."""
    return "pain" in value or value.endswith("ache")


def pain_kind(value: str) -> bool:
    """A complaint that is a pain of its own name: ``chest pain``, ``headache`` (not the bare ``pain``)."""
    return value != "pain" and names_a_pain(value)


_ON_BREATHING = re.compile(
    r"\b(?:(?:when|whenever|if|as|every time)\s+(?:i|he|she)\s+(?:breathe|breath|breathes|inhale|inhales|take a "
    r"(?:deep |big )?breath|takes? a (?:deep |big )?breath|try to breathe)|"
    r"on (?:breathing|deep breathing|breathing in)|breathing in|(?:deep|big) breaths?)\b", re.I)
"""A pain brought on by breathing in, as patients say it (the pleuritic pain of NICE CKS Chest pain)."""


_TOPIC_THEN_IT = re.compile(r"(?:^|(?<=[.!?]\s))(?P<topic>(?:my|the|his|her|our)\s+(?:left\s+|right\s+)?"
                            r"[a-z]+(?:\s+[a-z]+)?)\s*[.!?]+\s+(?P<it>it(?=\s|'s|’s))", re.I)


def topic_then_it(text: str, places: Mapping[str, str]) -> str:
    """A body part said on its own and then "it" ("My left ball. It hurts. Like, really bad."): the terse speaker's
    topic first, the complaint after; the "it" is the part, so the pain is placed there ("my left ball hurts")."""
    def named(m: re.Match[str]) -> str:
        topic = m.group("topic")
        if not _body_parts(topic, places):
            return m.group(0)
        return f"{m.group(0)[:m.start('it') - m.start()]}{topic.lower()}"
    return _TOPIC_THEN_IT.sub(named, text)


def resolve_pain(mentions: list[Mention], state: dict, places: Mapping[str, str] | None = None,
                 asked: Sequence[str] = ()) -> None:
    """"The pain" is the pain already being talked about: a specific pain named in the same utterance, else the one
    the doctor just asked about (``asked``: "How would you describe the headache?" - "a dull throbbing ache"), else the
    latest one in the state ("I take ibuprofen for the pain" after chest pain is about the chest pain). An ache of
    its own name (a headache) takes a bare "ache" only from a sentence that names no body part (``places``, the
    lexicon's locations): "it's a dull pressing ache" of a headache is the headache, not a second pain to take a
    history of; "an ache in my knee" is the knee's."""
    parts = segments(mentions)
    if places:  # a bare pain whose own words place it at a site MediTOD names ("a sharp pain in my chest") is that
        for m in mentions:  # pain now, so another pain said elsewhere in the turn ("my calf is sore") stays its own
            said = set(_body_parts(attr.without_spread(parts.get(id(m), m.sentence)), places))
            if m.base == "symptom" and m.value == "pain" and len(said) == 1 and (site := site_of(said.pop())):
                m.value = SITE_VALUES[site]
    # a pain the patient denies is not the one being talked about: "No chest pain. The pain's easier if I lean forward"
    specific = [m.value for m in mentions if m.base == "symptom" and pain_kind(m.value) and m.status != "negative"]
    known = [it["value"] for it in state.get("positive_symptom") or [] if pain_kind(str(it.get("value", "")))]
    asked_pains = [v for v in asked if pain_kind(v)]
    target = specific[0] if specific else asked_pains[0] if asked_pains else known[-1] if known else None
    if target is None:
        if places:  # a new pain said only to come on breathing in ("a stabbing pain when I breathe in") is in the
            for m in mentions:  # chest: pleuritic chest pain (NICE CKS Chest pain), the pulmonary embolism's sign
                own = parts.get(id(m), m.sentence)
                if (m.base == "symptom" and m.value == "pain" and m.status != "negative"
                        and _ON_BREATHING.search(own) and not _body_parts(own, places)):
                    m.value = "chest pain"
        return
    for m in mentions:
        if m.base == "symptom" and m.value == "pain":
            if "pain" not in target and places and attr.phrase_hits(m.sentence.lower(), dict(places)):
                continue
            # where the pain goes is the spread of the pain being talked about ("the pain goes through to my back")
            if places and _elsewhere(attr.without_spread(parts.get(id(m), m.sentence)), target, places):
                continue  # "... pain in my chest, and my left calf is swollen and sore": the calf's own pain
            m.value = target


def _body_parts(part: str, places: Mapping[str, str]) -> list[str]:
    """The body parts ``part`` names (``places``: the lexicon's locations); a side ("on the left side") is no part."""
    return [p for p in attr.phrase_hits(part.lower(), dict(places)) if "side" not in p]


def _elsewhere(part: str, target: str, places: Mapping[str, str]) -> bool:
    """Whether the words a bare pain is said with name a body part, and not the one the pain being talked about is
    named for (a side, "on the left side", is no other part)."""
    said = _body_parts(part, places)
    site = target.removesuffix(" pain").casefold()
    return bool(said) and not any(site in p.casefold() or p.casefold() in site for p in said)


_SITES = (  # where blood comes from, by the words said around it -> the symptom value
    ("hemoptysis", re.compile(r"\b(?:cough\w*|phlegm|sputum|mucus|spit\w*|chest)\b")),
    ("hematuria", re.compile(r"\b(?:wee(?:s|d|ing)?|pee(?:s|d|ing)?|urin\w*|water|bladder)\b")),
    ("rectal bleeding", re.compile(r"\b(?:poo\w*|stools?|motions?|bowels?|bottom|back passage|toilet paper|rect\w*|"
                                   r"diarrh\w*|wipe|wiping|loose|runs|bowl|pan|passed|passing)\b")),
    ("hematemesis", re.compile(r"\b(?:vomit\w*|threw up|throw\w* up|thrown up|was sick|been sick|being sick|"
                               r"(?:the|my|his|her) sick)\b")),
    # bleeding in pregnancy is from the womb until said otherwise (NICE CKS Bleeding in pregnancy)
    ("vaginal bleeding", re.compile(r"\b(?:vagin\w*|down below|pads?|periods?|pregnan\w*|weeks (?:gone|along)|"
                                    r"miscarr\w*|womb|spotting)\b")),
)
_SITE_WORDS = dict(_SITES)
"""The words of each site, by the bleeding named for it (``resolve_toilet`` reads the bowel's and the urine's)."""
_SITE_OF_SYMPTOM = (  # the state's complaints -> the site a bare "blood" is from when the utterance does not say
    ("hemoptysis", re.compile(r"cough|sputum|hemoptysis|dyspnea|wheez|chest")),
    ("hematuria", re.compile(r"urin|dysuria|hematuria|polyuria|nocturia")),
    ("rectal bleeding", re.compile(r"faeces|bowel|diarrh|constipation|rectal|stool|melena|tarry")),
    ("hematemesis", re.compile(r"vomit|hematemesis|coffee ground")),
    ("vaginal bleeding", re.compile(r"pregnancy|amenorrhea|vaginal")),
)
_BARE_BLOOD = frozenset({"hemoptysis", "unusual bleeding"})
"""The values the lexicon gives bare "blood" and "bleeding" ("some blood in it", "some bleeding"): the site decides."""
_NAMED_BLEEDING = re.compile(r"\b(?:unusual|abnormal|bruis\w*)\b", re.I)
_BLEEDINGS = frozenset(value for value, _ in _SITES)
"""The bleedings a site decides: a bleeding the second stage took by meaning from a clause that names no site ("I've
started bleeding this morning") is the encoder's guess among them, and the site said around it decides instead."""


_AFTER_THE_CHANGE = re.compile(
    r"\b(?:(?:finished|been through|gone through|went through|through|past|after|since)\s+(?:the|my)\s+"
    r"(?:change|menopause)|post[- ]?menopausal|periods?\s+(?:stopped|finished|ended|dried up)\s+(?:\w+\s+){0,3}?"
    r"(?:years?|ages)\s+ago|(?:no|not had an?|haven't had an?)\s+periods?\s+(?:for|in)\s+(?:\w+\s+)?years)\b", re.I)
"""The menopause told as past ("I finished the change ten years ago", "my periods stopped years ago")."""


def resolve_after_the_change(mentions: list[Mention], text: str) -> None:
    """A vaginal bleeding told with the menopause past is a postmenopausal bleeding (NICE NG12 1.5.13: refer at 55 and
    over on the suspected cancer pathway; a bleed after the menopause is never a period)."""
    if not _AFTER_THE_CHANGE.search(text):
        return
    for m in mentions:
        if m.base == "symptom" and m.value == "vaginal bleeding" and m.status != "negative":
            m.value = "postmenopausal bleeding"


def resolve_blood(mentions: list[Mention], text: str, state: dict) -> None:
    """Bare "blood" ("no blood that I've seen", "some blood in it") is blood from where the conversation is: the
    lexicon files such phrases under coughed-up blood (MediTOD's respiratory dialogues), but after "my wee burns"
    they are blood in the urine (:func:`blood_site`). So is a bleeding the second stage took from a clause by meaning
    (:data:`_BLEEDINGS`): "nine weeks gone and I've started bleeding" is vaginal bleeding, not the rectal bleeding
    the encoder found nearest."""
    # the complaints told with it come last, as the latest: "I've been loose for weeks and there's blood mixed in"
    told = [{"value": m.value} for m in mentions if m.base == "symptom" and m.status == "positive"
            and m.value not in _BARE_BLOOD | _BLEEDINGS]
    state = {**state, "positive_symptom": [*(state.get("positive_symptom") or []), *told]} if told else state
    for m in mentions:
        placed = m.char_end > m.char_start  # a second-stage mention has its clause, not a place in a sentence
        if m.base != "symptom" or not (m.value in _BARE_BLOOD or (not placed and m.value in _BLEEDINGS)):
            continue
        said = m.sentence[m.char_start:m.char_end] if placed else m.sentence
        if m.value != "hemoptysis" and _NAMED_BLEEDING.search(said):
            continue  # "I haven't had unusual bleeding": the concept asked about, by its name
        if _IN_THE_EYE.search(_clause_around(m.sentence, m.char_start, m.char_end) if placed else m.sentence):
            m.base = ""  # "a blood spot on the white part": the eye's own redness (a subconjunctival bleed), no bleed
            continue  # from the chest or the gut to ask about, whatever was coughed
        at = (m.char_start + m.char_end) // 2 if placed else None
        # the conversation's complaint decides a bare "blood" said of it; a bare bleeding only when it is said to be
        # there ("No, no bleeding" to "any unusual bleeding?" denies no rectal bleeding the patient came with)
        context = state if m.value == "hemoptysis" or m.status == "positive" else {}
        site = blood_site(said, m.sentence, at, text, context)
        if site is None and placed and _FROM_THE_SKIN.search(m.sentence.lower()):
            m.base = ""  # "scratching it raw, spots of blood on the sheets": the skin's, no bleed to ask about
        m.value = site or m.value
    mentions[:] = [m for m in mentions if m.base]


_IN_THE_EYE = re.compile(
    r"\b(?:eyes?|eyeballs?|whites?\s+of\s+(?:my|the|his|her)\s+eyes?|white\s+(?:part|bit)|the\s+whites?)\b", re.I)
"""A bare blood said of the eye ("a blood spot on the white part", "blood in the white of my eye"); for a bleeding
found by meaning, its clause is what the encoder read."""


def _clause_around(sentence: str, start: int, end: int) -> str:
    """The stretch of ``sentence`` between the breaks (comma, semicolon, dash) around characters ``start``-``end``."""
    left = max(sentence.rfind(c, 0, start) for c in ",;-")
    rights = [i for i in (sentence.find(c, end) for c in ",;-") if i >= 0]
    return sentence[left + 1:min(rights) if rights else len(sentence)]


_FROM_THE_SKIN = re.compile(r"\b(?:scratch\w*|scratched|graze\w*|shaving|shaved|picking|picked|scabs?|cut myself|"
                            r"cut my (?:finger|hand|leg|knee|arm|thumb)|nicked)\b")
"""A bare blood said with what broke the skin ("I'm scratching it raw and there's blood on the sheets")."""


def blood_site(said: str, sentence: str, at: int | None, text: str, state: dict) -> str | None:
    """Where blood named by the words ``said`` (at character ``at`` of ``sentence``) comes from, as a symptom value:
    None when the words say it themselves ("coughing up blood") or nothing tells; else the site words nearest it in
    its sentence, else in the whole utterance ``text``, else the latest complaint in ``state``. The clinical NLU
    reads the patient's words with it, the doctor-utterance reader the doctor's ("throwing up any blood?")."""
    if _SITES[0][1].search(said.lower()):
        return None
    site = _nearest_site(sentence.lower(), at) or _nearest_site(text.lower(), None)
    if site is None:
        latest = [str(it.get("value", "")) for base in ("symptom", "medical_history")
                  for it in state.get(f"positive_{base}") or []]
        site = next((value for v in reversed(latest) for value, cue in _SITE_OF_SYMPTOM if cue.search(v)), None)
    return site


def _nearest_site(text: str, at: int | None) -> str | None:
    found = [(abs(hit.start() - at) if at is not None else hit.start(), value)
             for value, cue in _SITES for hit in cue.finditer(text)]
    return min(found)[1] if found else None


_EYE = re.compile(r"\b(?:eyes?|eyelids?|eye lids?|lids)\b")
_DISCHARGE_SITE = (
    (_EYE, "eye discharge"),
    (re.compile(r"\b(?:ears?|earholes?|ear canals?)\b"), "ear discharge"),
    (re.compile(r"\b(?:penis|willy|todger|tip of my (?:penis|willy)|foreskin)\b"), "penile discharge"),
    (re.compile(r"\b(?:vagina|vaginal|down below|down there|front passage)\b"), "vaginal discharge"),
)
"""Where a discharge the lexicon files under sputum comes from, and its name there (NHS Health A-Z: sticky eyes,
discharge from the ear, from the penis, from the vagina): the site decides the concept, as for blood."""
_COUGH_WORDS = re.compile(r"\b(?:cough\w*|chest|phlegm|sputum|spit\w*|bring\w* up|brought up|throat)\b")
_RED = re.compile(r"\b(?:red|redder|bloodshot|pink)\b")


# what an allergy to a medicine shows (NICE CG183 Drug allergy: rash, urticaria, angioedema, anaphylaxis, itch); a
# swelling only of the face, lips, tongue or throat (angioedema): ankles swollen since amlodipine are a side effect
# the patient still has, no allergy
_ALLERGIC_SIGNS = frozenset({"dermatologic problem", "skin rash", "rash", "urticaria", "angioedema", "pruritus",
                             "anaphylaxis", "itching"})
_ALLERGIC_SWELLING_SITE = re.compile(r"\b(?:face|lips?|tongue|throat|mouth|eyelids?)\b", re.I)
"""Where a swelling a medicine caused makes it an allergy (wider than ``details._ANGIOEDEMA_SITE``, which names the
swelling itself and leaves out the face and a tight throat)."""
# the words between a medicine and a sign that say the medicine caused it: "penicillin gave me a rash", "I came out in
# hives after amoxicillin", "allergic to codeine, it makes me itch"
_CAUSED_BY = re.compile(r"\b(?:gave|gives|give|made|makes|make|brought|brings)\s+"
                        r"(?:me|my|him|his|her|them|their|us|our)\b|\b(?:after|from)\b|"
                        r"\breaction\s+to\b|\ballergic\b|\ballergy\b")

_REACTION_TO = re.compile(r"\b(?:reaction|reactions|allergic|allergy|allergies)\s+to\s+(?:\w+\s+)?$")


def resolve_drug_reaction(mentions: list[Mention]) -> None:
    """A rash, hives or swelling that a medicine caused is an allergy to the medicine (medical history ``drug
    allergy``), neither a rash the patient has now nor a medicine they take ("Penicillin gave me a rash once" had
    recorded a current rash, which the interview then characterised, and penicillin as a current medicine)."""
    drop: set[int] = set()
    allergic: list[Mention] = []
    for d in [m for m in mentions if m.status == "positive" and (
            m.base == "medication" or (m.base == "medical_history" and m.value == "drug allergy"))]:
        for sign in (m for m in mentions if m.sent == d.sent and m.base == "symptom" and m.status == "positive"
                     and m.char_start >= 0 and (m.value in _ALLERGIC_SIGNS or (
                         m.value == "swelling" and _ALLERGIC_SWELLING_SITE.search(m.sentence)))):
            first, second = sorted((d, sign), key=lambda m: m.char_start)
            if not (_CAUSED_BY.search(d.sentence[first.char_end:second.char_start].lower())
                    or _REACTION_TO.search(d.sentence[:d.char_start].lower())):
                continue
            drop |= {id(d), id(sign)} if d.base == "medication" else {id(sign)}
            allergic.append(Mention("medical_history", "drug allergy", "positive", d.sent, d.start, None, d.sentence,
                                    d.char_start, d.char_end))
    if not drop:
        return
    had = any(m.base == "medical_history" and m.value == "drug allergy" and m.status == "positive" for m in mentions)
    mentions[:] = [m for m in mentions if id(m) not in drop] + ([] if had else allergic[:1])


_FEEL_BEFORE = re.compile(r"\b(?:feel|feels|felt|feeling|came over|come over|comes over|coming over|go|goes|going|"
                          r"went|gone|turned|turning)\s+(?:(?:really|very|a bit|a little|quite|so|all|kind of|sort of|"
                          r"bit)\s+)*$", re.I)
_URINE_AROUND = re.compile(r"\b(?:urin\w*|wee(?:s|d|ing)?|pee(?:s|d|ing)?|toilet|loo|bladder|stream|flow|water)\b",
                           re.I)


def resolve_faint_and_dribble(mentions: list[Mention]) -> None:
    """Two words whose sense the words around them decide: "faint" after a verb of feeling ("I feel really faint", "came
    over all faint") is near-fainting, not a loss of consciousness (NICE CKS Blackouts asks them apart; the
    lexicon's "feel faint" misses an intensifier); "dribbling" said of urine ("only dribbles come out when I pee") is
    trouble passing it, not drooling."""
    for m in mentions:
        if m.char_end <= m.char_start:
            continue
        said = m.sentence[m.char_start:m.char_end].lower()
        if m.value == "syncope" and said == "faint" and _FEEL_BEFORE.search(m.sentence[:m.char_start]):
            m.value = "presyncope"
        elif m.value == "sialorrhea" and said.startswith("dribbl") and _URINE_AROUND.search(m.sentence):
            m.value = "difficulty passing urine"


_AT_NIGHT = re.compile(r"\b(?:at night|every night|each night|most nights|in the night|during the night|overnight|"
                       r"night-?time|nightly|in bed|in my sleep|wake up|woke up|waking up|the sheets|my sheets|"
                       r"the bed|my pillow)\b", re.I)


def resolve_night_sweats(mentions: list[Mention]) -> None:
    """A sweating said of the night ("I'm drenched in sweat every night", "I wake up soaked through") is night sweats
    (NHS Health A-Z "Night sweats"), the sign of infection and cancer the red-flag rules ask for, not a daytime
    sweating; said in the sweating's own sentence."""
    for m in mentions:
        if m.base == "symptom" and m.value == "hyperhidrosis" and m.status != "negative" and _AT_NIGHT.search(
                m.sentence):
            m.value = "night sweats"


_BLOCKED_WORDS = re.compile(r"\b(?:bunged|blocked|stuffed)\b", re.I)
_NOSE = re.compile(r"\b(?:nose|nostrils?|sinus(?:es)?|nasal)\b", re.I)


def resolve_blocked(mentions: list[Mention]) -> None:
    """A "bunged up" or "blocked up" said in a sentence about the nose ("my nose hasn't cleared, it's completely
    bunged up") is the nose's congestion, not the bowel's constipation the same words name alone."""
    for m in mentions:
        if (m.base == "symptom" and m.value == "constipation" and m.char_start >= 0
                and _BLOCKED_WORDS.search(m.sentence[m.char_start:m.char_end]) and _NOSE.search(m.sentence)):
            m.value = "nasal congestion"


_TOILET_WORDS = re.compile(r"\b(?:going|always going|constantly going|back and forth|up and down|running)\b", re.I)


def resolve_toilet(mentions: list[Mention]) -> None:
    """Going to the toilet more often said in a sentence about the bowels ("I've been going more often and looser",
    "up and down to the loo with my bowels") is a change in bowel habit (NICE NG12), not the urinary frequency the same
    words name alone; the site decides, as for blood (:func:`resolve_blood`)."""
    for m in mentions:
        if (m.base == "symptom" and m.value == "urinary frequency" and m.char_start >= 0
                and _TOILET_WORDS.search(m.sentence[m.char_start:m.char_end])
                and _SITE_WORDS["rectal bleeding"].search(m.sentence.lower())
                and not _SITE_WORDS["hematuria"].search(m.sentence.lower())):
            m.value = "change in faeces/bowel movements"


def resolve_eye(mentions: list[Mention], text: str, sents: list[str], clauses: ClauseReader) -> None:
    """What a sentence about the eyes says is the eyes': a discharge word the lexicon files under sputum ("gunk",
    "mucus") is an eye discharge when its sentence names the eye and no cough ("my eyes are red and gunky"; likewise
    the ear's, the penis's or the vagina's discharge, :data:`_DISCHARGE_SITE`), and an
    eye said to be red or bloodshot is eye redness, however the sentence words it ("both my eyes have gone red").
    The site decides the concept, as for blood (:func:`resolve_blood`). The redness takes the ConText reading of the
    shortest clause of ``text`` that says it (``clauses``, the reader the second stage uses on the same turn): denied
    ("my eyes aren't red"), unsure, or a relative's ("my husband's eyes are red": no finding of the patient's).
    A "tearing" or "tears" said where no eye is is no watering eye: "it felt like something tearing" is a pain's
    character (aortic dissection's, NICE CKS Chest pain), "in tears" is crying."""
    mentions[:] = [m for m in mentions if not (
        m.base == "symptom" and m.value == "watery eyes" and m.char_end > m.char_start
        and m.sentence[m.char_start:m.char_end].lower() in ("tearing", "tear", "tears", "teary")
        and not _EYE.search(m.sentence.lower()))]
    for m in mentions:
        if m.base == "symptom" and m.value == "colored/excess sputum":
            sentence = m.sentence.lower()
            if _COUGH_WORDS.search(sentence):
                continue
            m.value = next((value for site, value in _DISCHARGE_SITE if site.search(sentence)), m.value)
    if any(m.base == "symptom" and m.value == "eye redness" for m in mentions):
        return
    at = next((i for i, s in enumerate(sents) if _EYE.search(s.lower()) and _RED.search(s.lower())), None)
    if at is None:
        return  # most turns: no clause to read
    said = [c for c in clauses.clauses(text) if _EYE.search(c.text.lower()) and _RED.search(c.text.lower())]
    if not said:
        return
    clause = min(said, key=lambda c: len(c.text))
    if clause.family:
        return
    status = "negative" if clause.negated else "unknown" if clause.uncertain else "positive"
    red = _RED.search(sents[at].lower())
    assert red is not None  # ``at`` is a sentence with a red word
    mentions.append(Mention("symptom", "eye redness", status, at, red.start(), sentence=sents[at],
                            char_start=red.start(), char_end=red.end()))
