"""The clinical NLU's second recognition stage: what the lexicon does not cover, matched by meaning.

Each clause of a patient turn that names nothing the lexicon knows ("I've lost a bit of weight", "I can't get to
sleep") is compared, with the sentence encoder medhx ships (all-MiniLM-L6-v2, ``agent.core.semantic``), to every symptom
the vocabulary knows, described by its names: the questionnaire ontology's display name, description and keywords,
the Human Phenotype Ontology's label and lay synonyms (``agent.core.lay_terms``) and the lexicon's own lay phrases. The
nearest symptom is taken when its similarity reaches ``threshold`` (chosen on the shared dialogues and the
developers' own probe stories, never on the held-aside test material) and beats the runner-up concept by
``margin``. The clause's ConText reading gives the status (negated, unsure) and drops a relative's or a past one.

Grounding is as for every frame: the value is a vocabulary value, so the state gate, red flags and policy accept it;
what this stage added is reported (``ClinicalNLU.read``) so its share can be measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from spacy.lang.en.stop_words import STOP_WORDS

from agent.core.clinical_text import (
    HOW_ONE_IS_SAID,
    PRODUCT_WORDS,
    Clause,
    ClauseReader,
    clause_core,
    default_clause_reader,
    says_the_mind_works,
    singular,
    word_stem,
)
from agent.core.lay_terms import CODED, glossed, lay_phrases
from agent.core.ontology import FACULTIES, SITE_VALUES, Vocabulary, body_part_words, site_of
from agent.core.safety import default_rules
from agent.core.semantic import Encoder, default_encoder
from policies.nlu.attributes import PAIN_WORD, SPREADS, phrase_hits
from policies.nlu.lexicon import CONDITION, Lexicon, entry_names
from policies.nlu.observations import sentence_of

DEFAULT_THRESHOLD = 0.64
DEFAULT_MARGIN = 0.03
CLEAR_LEAD_SLACK = 0.04  # how far below the threshold a clear leader is still taken
CLEAR_LEAD = 0.06  # a clear leader: this much nearer than the nearest other concept
CLOSE_MATCH = 0.72  # a clause this near a concept's own description needs only ...
CLOSE_MATCH_MARGIN = 0.015  # ... this lead over the runner-up
_GENERIC = re.compile(r"^(?:pain|ache|symptom|symptoms|general|all|problem|problems|discomfort)$")


_GRAVE = frozenset(word_stem(w) for w in """cancer cancers carcinoma malignant malignancy tumour tumor leukaemia
leukemia lymphoma melanoma sarcoma failure attack infarction stroke embolism thrombosis dementia cirrhosis
aneurysm""".split())
_WORD = re.compile(r"[a-z]+")
_ORGANS = frozenset(word_stem(w) for w in """heart lung lungs kidney kidneys liver bladder bowel bowels prostate
thyroid brain stomach gut womb uterus ovary ovaries pancreas gallbladder spleen blood skin bone bones joints""".split())
_ILLNESS = frozenset(word_stem(w) for w in """problem problems issue issues trouble condition disease diseases
illness infection infections disorder failure attack attacks murmur rhythm""".split())
"""An organ's name and the words that make it an illness ("kidney problems", "heart trouble", "a heart rhythm thing":
an abnormal rhythm is the heart's illness): the organ alone
("my bladder feels full", "my heart's racing") names no condition of it."""
MIN_CONTENT_WORDS = 2
_FOUND_BY_OTHERS = re.compile(r"\b(?:scans?|x-?rays?|ultrasounds?|ecgs?|tests?|results?|(?:they|he|she|it|doctors?|"
                              r"nurses?|midwife)\s+(?:saw|see|found|showed|shows|picked up|detected))\b", re.I)
"""A clause that reports what a test, a scan or a clinician found ("I had a scan and they saw a heartbeat"): a
finding, not the patient's symptom (the heartbeat on a scan is no palpitation); the lexicon's medical tests read it."""
_SIDE_WORDS = ("left", "right", "both", "either", "one", "other", "side", "sides")
_POSITION_WORDS = ("upper", "lower", "front", "middle", "top", "bottom", "anterior", "posterior", "lateral", "medial",
                   "region", "regions", "area", "areas", "anatomy", "proper", "structure", "part", "parts", "actual",
                   "thoracic", "thorax", "under", "below", "beneath", "above", "behind", "round", "across")
"""Words that say where on a body part, not what is wrong there: a name made of parts and these ("chest and upper
back", "anterior thoracic region", "back anatomy", UMLS's names of a site) names no complaint, and a clause of
parts and these ("it's more in my side than my actual back, just under the ribs") says where, not what (it had
raised chest pain, 0.60 from "chest and upper back", and with it a cardiac emergency)."""
_PERIOD_DATE = re.compile(r"\b(?:last|latest|most recent|previous)\s+(?:menstrual\s+)?period\s+(?:was|started|came|"
                          r"began|finished|ended)\b", re.I)
"""The date of the last menstrual period ("my last period was two weeks ago"): a record of the menstrual history, not
a symptom; by meaning it is near "missed period" (amenorrhoea), which it does not say."""
_ANAPHOR = re.compile(r"^(?:it|it's|its|they|they're|that|that's|this|which)\b", re.I)
_COUNT = (r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|"
          r"fifty|a few|few|a couple of|couple of|several|many|some)")
_WHEN = re.compile(
    rf"\b(?:(?:maybe|perhaps|probably|about|around|roughly|nearly|almost|over|like|just)\s+)*(?:(?:half\s+)?{_COUNT}\s+"
    r"(?:and a half\s+)?(?:years?|months?|weeks?|days?|hours?|minutes?|mins?)\s+(?:ago|back|before)|"
    r"(?:last|this|next)\s+(?:year|month|week|winter|summer|spring|autumn|night|morning|afternoon|evening)|"
    rf"(?:since|from)\s+(?:yesterday|last night|this morning|the weekend|(?:mon|tues|wednes|thurs|fri|satur|sun)day)|"
    rf"for\s+(?:the\s+(?:past|last)\s+)?(?:half\s+)?{_COUNT}\s+(?:years?|months?|weeks?|days?|hours?|minutes?)|"
    r"yesterday|today|tonight|"
    r"when i was (?:a (?:kid|child|baby|teenager)|little|younger|at school)|as a (?:kid|child|baby|"
    r"teenager))\b", re.I)
"""When a thing happened ("perhaps twenty years ago", "last year", "as a kid", "about an hour ago", "since
yesterday", "for three days"): no part of what it is, and in a short
clause it pulls the encoder away from the illness named (a duodenal ulcer "perhaps twenty years ago": 0.58 from
peptic ulcer; the illness alone is nearer). Cut before a clause is compared by meaning."""


_ROUTINE = frozenset("""woke woken wake wakes waking got get gets getting up out of bed went go goes going to sleep
morning mornings evening night yesterday today tonight last this first thing when then suddenly just and
so i""".split())
"""Waking, getting up and going to bed, with when: the moment a complaint began ("Yesterday morning I woke up and I
couldn't hear"), not a complaint of sleep. By meaning such a clause is near "waking up early" (insomnia)."""


_WORKS_NORMALLY = re.compile(r"\b(?:fine|perfectly|(?<!\bit )(?<!\bthat )(?<!\bthis )(?<!\bnot )(?<!n't )normal|"
                             r"normally|okay|ok|alright|all right|as (?:ever|always|usual)|"
                             r"same as (?:ever|always|usual|before)|nothing wrong|no (?:problems?|trouble|issues?))\b",
                             re.I)
"""A clause that says a function works ("I can hear perfectly well", "my hearing's the same as ever"): by meaning it
is near the function's impairment, and it denies it (MediTOD annotates a stated normal as the negative). "Is it
normal that my heart races?" asks, and "it's not normal" says the opposite: neither is a verdict of normal."""
_BODY_PRODUCT = re.compile(r"\b(?:poo+p?s?|stools?|motions?|faeces|feces|bowel movements?|urine|wee|pee|vomit|sick|"
                           r"phlegm|sputum|spit|snot|mucus)\b", re.I)
"""What the body passes or brings up: a clause about it names no part, yet its words (sticky, red, black) are not a
part's that a concept by meaning sits at (an eye's discharge)."""
_ABLE = re.compile(r"^(?:(?:and|but|so|oh|well|yes|yeah|no|[a-z]+ly)[\s,]+)*(?:i|he|she|they|we)\s+(?:still\s+)?"
                   r"(?:can|could)\s+"
                   r"(?!(?:barely|hardly|only|just|not|never|sometimes|feel|hear|see|smell|taste|tell|notice|sense|"
                   r"actually)\b)[a-z]+\b(?![^.!?]*\b(?:before|until|till|but|if|then|only|barely)\b)",
                   re.I)
"""A clause that says the patient can do something, plainly ("I can lie flat in bed", "I can walk up the stairs"): by
meaning near the inability (orthopnoea, breathlessness on effort), it says there is none. A limit ("I can walk
twenty yards before I'm puffed"), a perception ("I can feel my heart racing") or an "only" is no such clause."""


_FUNCTION_VERDICT = re.compile(
    r"^(?:(?:and|but|so|also|oh|well|yes|yeah|no|nope)[\s,]+)*"
    r"(?:my|his|her|their|your|the)\s+(?P<f>[a-z][a-z' ]{2,30}?)"
    r"(?:['’]s|\s+(?:is|are|was|were|seems?|feels?|has been|have been|'s been|’s been))\s+"
    r"(?:(?:absolutely|perfectly|totally|completely|all|still|just|pretty much|quite|been|usually|generally|mostly|"
    r"normally|always)\s+)*"
    r"(?:fine|normal|ok|okay|alright|all right|good|unaffected|perfect|no different|unchanged|"
    r"the same as (?:ever|always|usual|before)|as (?:good as )?(?:ever|always|usual))\b", re.I)
"""A function said to work, by its name ("my speech is normal", "his balance seems fine", "my waterworks are all
right"): by meaning the whole clause is as near the verdict as the function (0.58 from "difficulty articulating
speech"), so the function's name is also compared alone ("speech": 0.64 from "slurred speech"), and the clause denies
what it finds (:data:`_WORKS_NORMALLY`). A body part is no function ("my tummy's fine" names no complaint of it)."""


_SKIN_VALUE = re.compile(r"\b(?:rash|skin|dermat\w*|urticaria|hives|eczema|psoriasis|blisters?|itch\w*)\b", re.I)
_INSIDE_PARTS = frozenset({"tonsil", "tonsils", "throat", "tongue", "gums", "gum", "palate", "back of my throat"})
"""Parts with no skin: a skin symptom's words said of them ("white spots on the tonsils", a tonsillitis) name
something else (a rash moved a sore throat to the rash plan, whose history then denied the sore throat)."""


_PAIN_QUALITY = frozenset("""dull sharp burning stabbing throbbing aching ache aches pain pains constant gnawing nagging
crampy cramping heavy tight shooting niggling deep mild bad terrible awful horrible really little bit kind sort
horrid nasty""".split())
"""A pain's qualities: a clause of them alone ("a dull ache", "sharp, stabbing pain") describes the pain the turn
named, and by meaning it is near a short pain name (a dull ache: headache)."""


_PRESSURE_WORDS = frozenset("""crushing squeezing pressing gripping pressure weight heaviness tightness band vice
feeling sensation like""".split())
"""How a patient describes a pain without the word ("a crushing feeling", "like a weight pressing"): with a site
whose pain MediTOD names (chest, head, jaw), they say that pain."""
_ONSET_SAID = re.compile(
    r"\b(?:(?:started|starting|began|begun|came on|come on|kicked in|been there|there)\s+)?(?:about\s+|around\s+|"
    r"roughly\s+|nearly\s+|over\s+)?(?:(?:half an?|an?|one|two|three|four|five|ten|twenty|thirty|forty|\d+)\s+"
    r"(?:minutes?|mins?|hours?|hrs?|days?)\s+ago|(?:since|from|for)\s+(?:the last\s+|the past\s+)?(?:about\s+)?"
    r"(?:half an?|an?|one|two|three|four|five|ten|twenty|thirty|forty|\d+)\s+(?:minutes?|mins?|hours?|hrs?)|"
    r"this (?:morning|afternoon|evening)|last night|tonight|today|(?:just\s+)?now)\b|\b(?:started|began|came on)\b")
"""When a pain began, said in its clause ("a squeezing feeling in the middle of my chest started half an hour ago"):
no word of what the pain is, so the quality-at-site reading sets it aside."""
_NO_PAIN_SAID = frozenset("feeling sensation like bit little really kind sort constant mild deep bad".split())
"""Quality words that say no pain by themselves ("a funny feeling in my chest", "a bit of a sensation")."""


_URINE_WORD = re.compile(r"\b(?:urin\w*|wee(?:s|d|ing)?|pee(?:s|d|ing)?|piss\w*|water|bladder|micturi\w*|nappy|nappies|"
                         r"oliguria|polyuria|nocturia|dysuria|hematuria|haematuria|stream|dribbl\w*)\b", re.I)


_URINARY = frozenset({"oliguria", "anuria", "polyuria", "nocturia", "urinary frequency", "urinary retention",
                      "difficulty passing urine", "urinary incontinence"})
"""Troubles of passing urine: by meaning they are reached from "the toilet" or "the loo" alone (whose references say
them so: "always going to the toilet"), which may be the bowels."""


_FACTOR_OF_IT = re.compile(
    r"^\W*(?:(?:and|but|so|also|oh)\s+)*(?:it|it's|its|it is|it gets|it's got|this|that|they|they're|the pain"
    r"|the ache)\b"
    r"[^.;]*\b(?:worse|worst|better|easier|eases|hurts? more)\b[^.;]*?\b(?:when|whenever|if|after|with|as|on)\b",
    re.I)
"""A clause that tells what makes something said before worse or better ("It's worse when I breathe in deeply"):
what follows "when" is the circumstance, a factor (``attributes.factors``), not a new complaint by meaning."""


_MAKES_IT = re.compile(
    r"^\W*(?:(?:and|but|so|also|oh)\s+)*(?:[a-z]+ing|the [a-z]+|light|lights|food|cold|heat|walking|exercise)\s+"
    r"(?:\w+\s+)?(?:makes?|made|sets?|set)\s+(?:it|them|the pain|my \w+)\s+(?:off\b|"
    r"(?:really\s+|much\s+|a lot\s+|even\s+)?(?:worse|better|sting|stings|hurt|hurts|ache|aches|throb|burn|burns|"
    r"sore|water|itch|itchy|flare|go|worse))(?:\s+(?!and\b|but\b)[\w']+){0,3}\W*$", re.I)
"""A clause that says what brings "it" on ("Blinking makes it sting", "bending sets it off"): the circumstance is a
factor of what was said before, not a new complaint by meaning (blinking is no flashing light)."""


def factor_of_it(clause: str) -> bool:
    """Whether ``clause`` is a factor said of "it" or the pain (:data:`_FACTOR_OF_IT`, :data:`_MAKES_IT`)."""
    return bool(_FACTOR_OF_IT.search(clause) or _MAKES_IT.search(clause))


def only_pain_quality(clause: str) -> bool:
    """Whether every content word of a clause is a pain or a quality of one (:data:`_PAIN_QUALITY`)."""
    words = [w for w in _WORD.findall(clause.lower().replace("'", "")) if w not in STOP_WORDS]
    return bool(words) and all(w in _PAIN_QUALITY for w in words)


_QUALITY_GOES_ON = re.compile(
    r"^\W*(?:and|or|but)\s+(?:(?:really|very|quite|proper|so|a bit|kind of|sort of)\s+)?(?P<word>[a-z]+)\b")


def goes_on_with_a_quality(clause: str) -> bool:
    """Whether a clause opens by adding a pain's quality to the clause before ("tight and heavy since I was shovelling
    snow", split at "and"): the adjective is the pain's, whatever follows it (the encoder took "heavy since ..."
    for weight gain)."""
    m = _QUALITY_GOES_ON.match(clause.lower())
    return m is not None and m.group("word") in _PAIN_QUALITY


_COLOUR_WORDS = frozenset("""bright dark deep light pale fresh dull vivid red redder black yellow yellowy green greeny
brown white pink purple orange grey gray clear creamy rusty like really very quite sort kind colour color""".split())


def only_colour(clause: str) -> bool:
    """Whether a clause says only a colour ("Bright red, like."): the colour of what the turn named (the blood), no
    concept of its own (by meaning "bright red" is near "red hot", a fever)."""
    words = [w for w in _WORD.findall(clause.lower().replace("'", "")) if w not in STOP_WORDS]
    return bool(words) and all(w in _COLOUR_WORDS for w in words)


_TAKING_A_PRODUCT = re.compile(
    rf"(?:i|i've|i'd|i’ve|we|he|she|they|mum|dad)?\s*(?:\w+\s+)?(?:took|take|takes|taking|tried|trying|bought|got|"
    rf"used|using|had|have|having|been on|on)\s+(?:[\w'’&/-]+\s+){{0,5}}{PRODUCT_WORDS}"
    rf"(?:\s+(?:from|at|off)\s+(?:the\s+)?(?:chemist|pharmacy|shop|supermarket|counter|boots|walgreens))?", re.I)
"""A clause that only tells a medicine taken ("I took a cold and flu remedy last night", "been using some cough
mixture"): what it was for names the product, and the complaints it was taken for are told in their own words."""


_BLOOD_GIVEN = re.compile(r"\b(?:giv(?:e|es|ing)|gave|given|donat(?:e|es|ed|ing))\s+(?:some\s+)?blood\b|"
                          r"\bblood\s+(?:donors?|donations?|banks?|groups?|types?)\b", re.I)
"""Blood given or its kind ("I fainted giving blood", "I'm a blood donor"): no bleeding, whatever the word."""


_KEPT_DOWN = re.compile(r"\b(?:keep|keeps|keeping|kept|holding|hold|holds|held)\s+(?:\w+\s+){0,4}?down\b", re.I)
"""Food or drink kept down ("I'm keeping water and squash down"): how a vomiting patient copes, no complaint."""


_SEEN_ON = {
    "cyanosis": re.compile(r"\b(?:lips?|mouth|face|tongue|skin|fingers?|fingertips?|toes?|nails?|colou?r|grey|gray)\b",
                           re.I),
    "jaundice": re.compile(r"\b(?:skin|eyes?|whites|face|yellow\w*)\b", re.I),
    "pallor": re.compile(r"\b(?:skin|face|lips?|pale\w*|white|grey|gray|colou?r|ashen|washed)\b", re.I),
}
"""Signs seen on the body by their colour, and the words a clause that tells one names: the second stage takes them
only from such a clause (NHS "Sepsis": "blue, grey, pale or blotchy skin, lips or tongue")."""


def _within_kept_down(clause: str, text: str) -> bool:
    """Whether a clause says nothing beyond a :data:`_KEPT_DOWN` idiom the clause reader cut ("I'm keeping water" of
    "I'm keeping water and squash down")."""
    at = text.find(clause)
    if at < 0:
        return False
    rest = clause
    for m in _KEPT_DOWN.finditer(text):
        lo, hi = max(m.start(), at) - at, min(m.end(), at + len(clause)) - at
        if lo < hi:
            rest = rest[:lo] + " " * (hi - lo) + rest[hi:]
    return rest != clause and not says_enough(rest)


def _idioms_out(clause: str) -> str:
    """A clause without the idioms that name no concept (:data:`HOW_ONE_IS_SAID`, :data:`_BLOOD_GIVEN`,
    :data:`_KEPT_DOWN`), which the encoder would read by their words ("not feeling so hot" near a fever, "giving
    blood" near coughed-up blood, "keeping water down" near thirst)."""
    return _KEPT_DOWN.sub(" ", _BLOOD_GIVEN.sub(" ", HOW_ONE_IS_SAID.sub(" ", clause)))


def only_routine(clause: str) -> bool:
    """Whether every word of a clause is a daily routine or its time (:data:`_ROUTINE`)."""
    words = _WORD.findall(clause.lower().replace("'", ""))
    return bool(words) and all(w in _ROUTINE or w in STOP_WORDS and w not in ("not", "no", "never") for w in words)


def says_enough(clause: str) -> bool:
    """Whether a clause carries enough words of its own to name a concept by meaning: at least
    :data:`MIN_CONTENT_WORDS` words that are not stop words. A clause of one word besides "it seems to be just" is a
    remark about what the conversation is already about ("it seems to be just dry" of a cough), and the encoder,
    given one word, finds the nearest concept with that word in it (dry skin). What the lexicon knows in one word
    ("dizzy") it finds itself."""
    return sum(w not in STOP_WORDS for w in _WORD.findall(clause.lower().replace("'", ""))) >= MIN_CONTENT_WORDS


def _ends_a_named(clause: str, named: list[str]) -> bool:
    """Whether a clause opens with the second half of a phrase the lexicon named across a conjunction ("hot and cold"
    read as "I've been hot" + "cold all night"): the clause reader cut the phrase, whose meaning is already read."""
    start = clause_core(clause).lower()
    return any(start.startswith(n.split(sep, 1)[1]) for n in named for sep in (" and ", " or ", " then ") if sep in n)


def names_the_condition(clause: str, reference: str, places: frozenset[str] = frozenset()) -> bool:
    """Whether the patient's words name the illness a condition reference does: a diagnosis is never inferred
    from words that do not name it. The clause must share a word with the reference that is not a body part
    (``places``, stemmed), nor an organ unless a word of illness goes with it ("my bladder feels like it's bursting"
    names no bladder infection, "heart issues" may be heart disease), and every grave word of the reference
    ("cancer", "failure", "attack") must be in the clause: "prostate trouble" is not prostate cancer."""
    said = {word_stem(w) for w in _WORD.findall(clause.lower())}
    ref = {word_stem(w) for w in _WORD.findall(reference.lower())}
    shared = (said & ref) - places
    if shared and shared <= _ORGANS and not said & _ILLNESS:
        return False  # an organ is no illness without a word that says one ("heart trouble" is; "my heart races" not)
    return bool(shared) and not (ref & _GRAVE) - said


@dataclass(frozen=True)
class ConceptHit:
    value: str  # a symptom value of the vocabulary (the lexicon's spelling where it has one)
    status: str  # positive / negative / unknown
    clause: str
    matched: str  # the reference text it was nearest to
    similarity: float
    base: str = "symptom"  # symptom, or medical_history / family_history for a condition


class ConceptMatcher:
    """Symptoms named in words the lexicon lacks, by similarity to the vocabulary's descriptions of them."""

    def __init__(self, lexicon: Lexicon, vocab: Vocabulary, threshold: float = DEFAULT_THRESHOLD,
                 margin: float = DEFAULT_MARGIN, encoder: Encoder | None = None, clauses: ClauseReader | None = None):
        self.lexicon, self.vocab = lexicon, vocab
        self.threshold, self.margin = threshold, margin
        self.encoder = encoder
        self.clauses = clauses or default_clause_reader()

    @cached_property
    def references(self) -> tuple[list[tuple[str, str]], np.ndarray]:
        """(value, text) of every description of every symptom, and their embeddings."""
        emitted: dict[str, str] = {}  # ontology code -> the value the lexicon emits for it
        for t in self.lexicon.terms:
            if t.base == "symptom" and (code := self.vocab.code("symptom", t.value)) is not None:
                emitted.setdefault(code, t.value)
        rows: list[tuple[str, str]] = []
        for entry in self.vocab.ontology.symptoms.values():
            if _GENERIC.match(entry.code) or entry.code == "general enquiry":
                continue
            value = emitted.get(entry.code, entry.code)
            names = entry_names(entry)
            if entry.description:
                rows.append((value, re.sub(r"^patient (?:has|is|feels|experiences?) ", "", entry.description)))
            rows += [(value, n) for n in names if n and not CODED.search(n)]
        rows += [(p.value, p.phrase) for p in lay_phrases() if p.base == "symptom"]
        rows += [(t.value, t.phrase) for t in self.lexicon.terms if t.base == "symptom" and len(t.phrase.split()) > 1]
        rows = [(v, " ".join(t.lower().split())) for v, t in rows
                if not _GENERIC.match(t.lower().strip()) and not self._names_a_place_only(t)]
        rows = list(dict.fromkeys(rows))
        owners: dict[str, set[str]] = {}
        for v, t in rows:
            owners.setdefault(t, set()).add(v)
        # A text that names two concepts ("difficult breathing": dyspnea and orthopnea) tells them apart from nothing:
        # as a reference it would only make each the other's runner-up. Unless one of them owns it by name: the
        # lexicon's own phrase or the concept's own name decides (the ontology gives nasal congestion and a runny
        # nose one keyword list, "blocked nose" and "runny nose" in both; the lexicon says which is which).
        named = {" ".join(t.phrase.lower().split()): t.value for t in self.lexicon.terms if t.base == "symptom"}
        named |= {" ".join(v.lower().split()): v for v, _ in rows}
        rows = [(v, t) for v, t in rows if len(owners[t]) == 1 or named.get(t) == v]
        return rows, (self.encoder or default_encoder()).embed_references([t for _, t in rows])

    @cached_property
    def _complaints(self) -> frozenset[str]:
        """The lexicon's symptom and condition phrases: a glossary's plain word is a candidate on its own only when
        it names a complaint ("insomnia", "heart disease"), not a body part or a function ("urinating")."""
        return frozenset(t.phrase for t in self.lexicon.terms if t.base in ("symptom", CONDITION))

    @cached_property
    def condition_references(self) -> tuple[list[tuple[str, str]], np.ndarray]:
        """(value, text) of the illnesses a patient or a relative has (the lexicon's conditions), embedded."""
        rows = list(dict.fromkeys((t.value, t.phrase) for t in self.lexicon.terms if t.base == CONDITION))
        rows += [(v, v) for v in dict.fromkeys(v for v, _ in rows)]
        return rows, (self.encoder or default_encoder()).embed_references([t for _, t in rows])

    def _reread(self, clause: Clause, plain: str) -> Clause:
        """The clause with the ConText reading of its glossed words: a glossary phrase that contains a cue word
        ("can't sleep", "not able to hold my water") names a complaint, so its "can't" denies nothing; other cues
        ("no", "my mum") stay in the glossed text and still count."""
        # the clause's own end, as a break: a cue that closes what it is said of ("waterworks are right.") needs it
        again = self.clauses.clauses(plain if plain.rstrip()[-1:] in ".!?;," else f"{plain.rstrip()}.")
        if not again:
            return clause
        return replace(clause, negated=any(c.negated for c in again), uncertain=any(c.uncertain for c in again))

    @cached_property
    def _left_to_the_screen(self) -> frozenset[str]:
        """The symptoms of the red-flag rules that read the patient's words as their evidence, where a hedge keeps
        the level (suicidal ideation, self-harm, harm to others): this stage leaves them to the red-flag screen,
        which compares the words with each rule's descriptions *and* with the ordinary complaints that resemble
        them ("I'm convinced I'm going to die" in a panic attack is fear, not a wish to die). Nearness to a name
        alone is no ground for such an item in the state."""
        wanted = {v for rule in default_rules().rules if rule.hedge_keeps_level
                  for c in (*rule.all_of, *rule.any_of) if c.slot == "symptom" for v in c.values}
        return frozenset(v for v, _ in self.references[0] if any(self.vocab.same("symptom", v, g) for g in wanted))

    @staticmethod
    def _describes_antecedent(clause: str, text: str, named: list[str]) -> bool:
        """Whether a clause opening with "it"/"they"/"that" follows a concept the lexicon found earlier in the turn:
        then it describes that concept ("... the sputum, and it's usually white or yellowish in colour"), it does
        not name a new one (jaundice). It may refine it ("I was sick and it looked like coffee grounds" is
        haematemesis): :meth:`find` takes a symptom from it only when the clause alone and the clause read with its
        antecedent are both nearest that symptom."""
        if not _ANAPHOR.match(clause_core(clause)):
            return False
        before = text.lower()[:max(text.find(clause), 0)]
        return any(n in before for n in named)

    @staticmethod
    def _antecedent(clause: str, text: str, named: list[str]) -> str:
        """The named phrase nearest before an "it" clause: what it describes ("I was sick and it looked like coffee
        grounds": the sickness)."""
        before = text.lower()[:max(text.find(clause), 0)]
        return max((n for n in named if n in before), key=before.rfind)

    @cached_property
    def _part_words(self) -> frozenset[str]:
        """One-word body parts: the ontology's locations and the lexicon's ("tummy", "abdomen", "skin")."""
        return (body_part_words(self.vocab.ontology.locations) | frozenset(
            p for p in self.lexicon.locations if " " not in p)) - FACULTIES

    def _names_a_place_only(self, text: str) -> bool:
        """Whether every content word of ``text`` names a body part ("abdomen", "eyes", "arms and legs"): UMLS lists
        a symptom's site among its names, but a patient who names the site ("my tummy's fine") names no symptom of
        it."""
        words = [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]
        return bool(words) and all(w in self._part_words or singular(w) in self._part_words or w in _SIDE_WORDS
                                   or w in _POSITION_WORDS
                                   for w in words)

    @staticmethod
    def _said_to_be_fine(clause: str) -> str | None:
        """What a clause says is fine ("speech" of "my speech is normal", "tummy" of "my tummy's fine"), or None
        (:data:`_FUNCTION_VERDICT`)."""
        m = _FUNCTION_VERDICT.match(clause_core(clause).strip())
        return m.group("f").strip() if m else None

    def _place_said_to_be_fine(self, clause: str) -> bool:
        """Whether a clause says only that a body part is fine ("my tummy's fine", "his legs are OK"): it names no
        complaint to deny (by meaning it is 0.68 from "abdominal swelling"); a question about the part is answered
        by the asked item (``answers``)."""
        name = self._said_to_be_fine(clause)
        return name is not None and self._names_a_place_only(name)

    def _function_said_to_work(self, clause: str) -> str | None:
        """The name of the function a clause says works ("speech" of "my speech is normal"), or None: also when the
        name is a body part or a side."""
        name = self._said_to_be_fine(clause)
        if name is None or self._places_and_sides.search(name) or self._names_a_place_only(name):
            return None
        return name

    def _quality_at_site(self, clause: str) -> str | None:
        """The pain a clause names by its quality at a site whose pain MediTOD names (``SITE_VALUES``: chest pain,
        headache, jaw pain): every content word is a pain's quality (:data:`_PAIN_QUALITY`, :data:`_PRESSURE_WORDS`),
        a place or a position, with at least one quality and one such site ("there's a crushing feeling in the middle
        of my chest", "a throbbing pressure in my head"). By meaning such a clause is nearer the site's anatomy
        ("front of thorax") than any complaint, and the lexicon needs the pain's own word."""
        text = clause.lower().replace("'", " ")
        sites = {site for p in phrase_hits(text, self.lexicon.locations) if (site := site_of(p)) is not None}
        if len(sites) != 1:
            return None
        rest = _ONSET_SAID.sub(" ", self._places_and_sides.sub(" ", text))
        words = [w for w in _WORD.findall(rest) if w not in STOP_WORDS and len(w) > 1]
        qualities = [w for w in words if w in _PAIN_QUALITY or w in _PRESSURE_WORDS]
        if not qualities or any(w not in _PAIN_QUALITY and w not in _PRESSURE_WORDS for w in words):
            return None
        if all(w in _NO_PAIN_SAID for w in qualities):
            return None  # "a funny feeling in my chest" says no pain
        return SITE_VALUES[sites.pop()]

    def _only_places(self, clause: str) -> bool:
        """Whether a clause names body parts and nothing said of them ("... it goes into my jaw and my left arm": the
        fragment "and my left arm" is where the pain goes, not weakness of the arm): with its places and sides taken
        out, no content word is left ("my right leg has no strength in it" keeps "strength")."""
        rest = self._places_and_sides.sub(" ", clause.lower())
        return says_enough(clause) and not any(w not in STOP_WORDS for w in _WORD.findall(rest.replace("'", "")))

    @cached_property
    def _place_stems(self) -> frozenset[str]:
        """The stems of the lexicon's one-word body parts ("bladder", "heart", "kidneys")."""
        return frozenset(word_stem(p) for p in self.lexicon.locations if " " not in p)

    @cached_property
    def _places_and_sides(self) -> re.Pattern[str]:
        words = [*sorted(self.lexicon.locations, key=len, reverse=True), *_SIDE_WORDS, *_POSITION_WORDS]
        return re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\b")

    def _elsewhere(self, clause: str, value: str, reference: str, sentence: str = "") -> bool:
        """Whether the concept belongs to a part of the body the clause does not name while it names another ("the
        cut on my leg has gone red and hot up to my knee" is not eye redness), or names none and opens with "it"
        ("It's red and it's hot", of a swollen shin asked about): the words matched by meaning are the same, the
        place is not."""
        said = set(phrase_hits(clause.lower(), self.lexicon.locations))
        where = said - {"whole body"} - ({"back"} if re.search(r"\bback of\b", clause, re.I) else set())
        if where and _SKIN_VALUE.search(value) and where <= _INSIDE_PARTS:  # "all over", "the back of": no part
            return True  # "white spots on the tonsils" is no skin rash: the skin is not where they are
        named = set(phrase_hits(f"{value} {reference}".lower(), self.lexicon.locations))
        if named and not said and _ANAPHOR.match(clause_core(clause)):
            return True  # "It's red and it's hot": "it" is what was said before (a swollen shin), not an eye
        if named and not said and _BODY_PRODUCT.search(sentence or clause):
            return True  # "his poo was black and sticky": the stool's stickiness, not a sticky eye
        return bool(said and named and not said & named)

    def _accepts(self, sim: float, margin: float) -> bool:
        """Near enough, and nearer this concept than any other: at the threshold with the margin, or a little
        below it when no other concept comes close (every near reference names the one concept), or with a smaller
        lead when the clause is close to the concept's own words (:data:`CLOSE_MATCH`: "I'm peeing all the time" is
        0.75 from "frequent urination" and 0.72 from "trouble urinating": two urinary complaints share the word, and
        the nearer one is the one meant)."""
        return ((sim >= self.threshold and margin >= self.margin)
                or (sim >= self.threshold - CLEAR_LEAD_SLACK and margin >= CLEAR_LEAD)
                or (sim >= max(CLOSE_MATCH, self.threshold) and margin >= CLOSE_MATCH_MARGIN))

    def find(self, text: str, named: list[str], antecedents: list[str] | None = None) -> list[ConceptHit]:
        """Symptoms (the patient's, now) and conditions (the patient's or a relative's, past ones too: "I had a
        stomach ulcer years ago" is medical history) in the clauses of ``text``
        that contain none of the ``named`` phrases (the lexicon's hits). Each clause is glossed first
        (``agent.core.lay_terms.gloss``: "motions" -> "stools") so the encoder compares plain words.
        ``antecedents``: the named phrases an "it" may stand for (default all): not what the patient denied ("No, no
        fever. It's like a heavy tight feeling in my chest" tells a new complaint, not the fever's character)."""
        named_l = [n.lower() for n in named if n.strip()]
        before_l = named_l if antecedents is None else [n.lower() for n in antecedents if n.strip()]
        clauses, described = [], {}  # the clauses read, and the antecedent each "it" clause describes
        read = self.clauses.clauses(text)
        describing = [c.text for c in read if self._describes_antecedent(c.text, text, before_l)]
        # a clause that tells a medicine taken, and the parts the reader cut it into ("I took a cold" of "... a cold
        # and flu remedy")
        products = [c.text for c in read if _TAKING_A_PRODUCT.fullmatch(_WHEN.sub(" ", clause_core(c.text))
                                                                           .strip(" .,!?"))]
        for c in read:
            if (not (says_enough(_idioms_out(c.text)) or self._function_said_to_work(c.text))
                    or any(n in c.text.lower() for n in named_l) or _ends_a_named(c.text, named_l)
                    or _FOUND_BY_OTHERS.search(c.text)
                    or SPREADS.search(clause_core(c.text)) or _PERIOD_DATE.search(c.text)
                    or self._only_places(c.text) or only_routine(c.text) or only_pain_quality(c.text)
                    or goes_on_with_a_quality(c.text) or only_colour(c.text)
                    or self._place_said_to_be_fine(c.text) or factor_of_it(c.text) or says_the_mind_works(c.text)
                    or any(c.text in p for p in products) or _within_kept_down(c.text, text)):
                continue
            if by := next((d for d in describing if c.text in d), None):  # "or yellowish" of "it's white or ..."
                described[len(clauses)] = self._antecedent(by, text, before_l)
            clauses.append(c)
        if not clauses:
            return []
        hits: dict[tuple[str, str], ConceptHit] = {}
        affirmed: dict[tuple[str, str], ConceptHit] = {}  # the best positive hit of each concept
        for c in clauses:  # "a crushing feeling in the middle of my chest": a pain's quality said at its site
            if (value := self._quality_at_site(c.text)) is not None and not c.family and not c.historical:
                status = "negative" if c.negated else "unknown" if c.uncertain else "positive"
                hits[("symptom", value)] = ConceptHit(value, status, c.text, "a pain's quality at its site", 1.0)
        texts, owner = [], []  # each clause glossed, and the plain words the glossary put in, alone
        for ci, c in enumerate(clauses):
            plain, put = glossed(c.text)
            if put:  # the glossary's words may have taken the cue with them: "I cannot sleep" is "I insomnia"
                clauses[ci] = self._reread(c, plain)
            plain = _WHEN.sub(" ", clause_core(_idioms_out(plain))).strip() or plain
            alone = [p for p in put if p in self._complaints or self.vocab.known("symptom", p)]
            if function := self._function_said_to_work(c.text):
                alone.append(function)
            if ci in described:  # the clause alone, then with what "it" stands for; both must agree
                alone = [f"{described[ci]} {plain}"]
            for t in [plain, *alone]:
                texts.append(t)
                owner.append(ci)
        emb = (self.encoder or default_encoder()).embed(texts)
        for kind, (refs, ref_emb) in (("symptom", self.references), (CONDITION, self.condition_references)):
            sims = emb @ ref_emb.T
            nearest = [refs[int(np.argmax(row))][0] for row in sims]
            for ti, ci in enumerate(owner):
                clause = clauses[ci]
                if kind == "symptom" and (clause.family or clause.historical):
                    continue  # a relative's symptom is not the patient's, nor one of the past a present complaint
                if ci in described and (kind != "symptom" or owner.index(ci) == ti
                                        or nearest[owner.index(ci)] != nearest[ti]):
                    continue  # what describes a concept named before only refines it, read in both ways alike
                order = np.argsort(-sims[ti])
                best = int(order[0])
                value, sim = refs[best][0], float(sims[ti, best])
                # the runner-up is another concept, not another spelling of this one ("dysarthria" of "slurred speech")
                runner_up = next((float(sims[ti, int(j)]) for j in order[1:] if refs[int(j)][0] != value
                                  and not (kind == "symptom" and self.vocab.same("symptom", refs[int(j)][0], value))),
                                 0.0)
                if not self._accepts(sim, sim - runner_up):
                    continue
                if kind == CONDITION and not names_the_condition(clause.text, refs[best][1], self._place_stems):
                    continue
                if kind == "symptom" and value in _SEEN_ON and not _SEEN_ON[value].search(clause.text):
                    continue  # "watching Bluey" is near "blue" by its letters: a colour sign is told of the body
                if kind == CONDITION and self._said_to_be_fine(clause.text) is not None:
                    continue  # "my sugars are usually fine": a condition kept in check, not one the patient lacks
                at = text.lower().find(clause.text.lower())
                if kind == "symptom" and (value in self._left_to_the_screen
                                          or self._elsewhere(clause.text, value, refs[best][1],
                                                             sentence_of(text, at) if at >= 0 else "")
                                          or (PAIN_WORD.search(refs[best][1]) and len(refs[best][1].split()) <= 4
                                              and not PAIN_WORD.search(texts[ti]))
                                          or ((_URINE_WORD.search(refs[best][1]) or value in _URINARY)
                                              and not _URINE_WORD.search(texts[ti]) and not _URINE_WORD.search(text))):
                    # a short name of a pain needs a pain said: "my throat feels tight" is no "throat hurts"; and a
                    # description of passing urine needs urine (or the bladder) said in the turn: "I haven't been to
                    # the toilet since yesterday" may be the bowels (it had recorded oliguria, and with chills raised
                    # the sepsis emergency), "burning when I go to the bathroom" after "a bladder infection" is not
                    continue
                status = ("negative" if clause.negated or (kind == "symptom" and (
                    _WORKS_NORMALLY.search(clause.text) or _ABLE.search(clause.text.strip())))
                          else "unknown" if clause.uncertain else "positive")
                base = "symptom" if kind == "symptom" else "family_history" if clause.family else "medical_history"
                hit = ConceptHit(value, status, clause.text, refs[best][1], round(sim, 3), base)
                if (base, value) not in hits or sim > hits[(base, value)].similarity:
                    hits[(base, value)] = hit
                if status == "positive" and ((base, value) not in affirmed or sim > affirmed[(base, value)].similarity):
                    affirmed[(base, value)] = hit
        # ... and a denial in one sentence is not said of a concept its neighbour affirms: "since the swallowing
        # started. Never had anything like it." read together is denied and near the trouble swallowing, which the
        # first sentence alone affirms (it had turned the chief complaint negative)
        for key, h in list(hits.items()):
            if h.status == "negative" and (a := affirmed.get(key)) is not None and a.clause in h.clause:
                hits[key] = a
        # A denial belongs to the clause that says it: "No, I can pee fine, it just stings" denies trouble passing
        # urine (its clause "I can pee fine"), and the sting the whole sentence is near (dysuria, 0.71) takes no "no"
        # from it: a negative found only in a longer clause around another denied concept's clause is dropped (it
        # had denied the chief complaint the patient had just told).
        for key, h in list(hits.items()):
            if h.status == "negative" and any(
                    o.value != h.value and o.status == "negative" and o.clause != h.clause and o.clause in h.clause
                    for o in hits.values()):
                del hits[key]
        # One clause names one thing: "I've got angina" is the condition, not the symptom its words resemble
        # (angioedema). A symptom found in a clause that more nearly names a condition is dropped.
        named_best = {}
        for h in hits.values():
            if h.base != "symptom":
                named_best[h.clause] = max(named_best.get(h.clause, 0.0), h.similarity)
        return [h for h in hits.values() if h.base != "symptom" or h.similarity >= named_best.get(h.clause, 0.0)]
