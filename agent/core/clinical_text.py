"""Finding concepts in what a patient says, with their ConText status: the one home of the spaCy + medspaCy
machinery, shared by the clinical NLU (``policies.nlu.clinical``) and the red-flag text rules
(``agent.core.safety``), so both read negation ("no blood in my sputum") the same way.

A :class:`PhraseFinder` matches phrases (case-insensitive, whole tokens, longest match wins) and reports each
match's key, sentence and status: ``negative`` / ``unknown`` when a ConText cue *precedes* it (medspaCy's
clinical rules plus the conversational cues below; a cue inside the phrase is part of what it names), else
``positive``, and ``family`` when a FAMILY cue modifies it. A cue that starts before the phrase counts even when
it overlaps it ("never had" before "had a seizure").
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.matcher import PhraseMatcher
    from spacy.tokens import Doc


_APPROX_COUNT = (r"^(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|forty|"
                 r"fifty|few|couple|several|half)$")
"""The count of a time said approximately ("maybe ten years ago", "perhaps a couple of weeks"); the unit is left
out of the cue so the historical cue "years ago" that follows still reads."""


LOST_FUNCTIONS = frozenset("""move moving moved work working worked lift lifting grip gripping hold holding respond
responding obey obeying cooperate co-operate coming come form forming making make bear straighten straightening
recognise recognised recognising recognize recognized recognizing
""".split())
"""Verbs of what a part or a person does: negated, they say a loss of function ("my hand won't grip", "the words
aren't coming out"), which is the complaint and no denial of it."""
YOUNG_PEOPLE = ("child", "kid", "baby", "toddler", "teenager", "teen", "boy", "girl", "youngster", "infant")
"""What a person was when a past event happened ("a fit as a toddler", "when I was a little girl"): the childhood cues
of ConText here, the NLU's onset in the patient's words (``policies.nlu.attributes``) and the red-flag screen's long
past (``agent.core.safety.onset_days``) read the same words."""
YOUNG = rf"(?:a |an )?(?:little |small )?(?:{'|'.join(YOUNG_PEOPLE)})"
"""One of :data:`YOUNG_PEOPLE` as said ("a little girl", "an infant"), as a regular expression."""
_AGE_WORDS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
              "seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty")
AT_AN_AGE = (rf"(?:at the age of|at age|aged)\s+(?:about\s+|around\s+)?(?:\d{{1,2}}|(?:{_AGE_WORDS})"
             rf"(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?)|"
             rf"at (?:thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|1[3-9]\b)"
             rf"(?![:.]\d)(?! ?(?:past|to|minutes|o'clock|hundred|hours|hrs|am|pm)\b)")
"""An age said as the time a past event happened ("I fainted once at sixteen", "aged 12", "at the age of five"),
as a regular expression: read like "when I was sixteen" (a clock's "at six" is no age: only the teens stand bare)."""
LOST_FACULTIES = frozenset("""hearing sight vision eyesight feeling sensation movement power strength grip voice
balance taste smell""".split())
"""Nouns of what a part or a person can do: after "no" they say its loss ("no hearing in my left ear", "no feeling in
my foot"), the complaint and no denial of it."""

_HOW_ONE_IS_WORDS = ("been", "feeling", "felt", "feel", "doing", "looking", "quite", "really")
_HOW_ONE_IS = {"LOWER": {"IN": list(_HOW_ONE_IS_WORDS)}, "OP": "*"}
"""The verb of how one is in general, between the "not" and the verdict ("not been feeling so hot", "not doing too
great", "not looking so good"): the idiom is the same however it is said."""
HOW_ONE_IS_SAID = re.compile(
    rf"\b(?:not|n't|n’t)\s+(?:(?:{'|'.join(_HOW_ONE_IS_WORDS)})\s+)*"
    r"(?:(?:so|too|that|all that|very)\s+(?:hot|great|good|well|brilliant|clever|grand|fantastic)"
    r"|(?:great|good|well|brilliant|grand|fantastic|right|myself|herself|himself|themselves))\b", re.I)
"""How one is in general, said by the idiom ("not feeling so hot", "I've not been too great", "not quite right"):
unwell, and no concept of its own (not a fever for its "hot"); a bare "not hot" denies the heat, so "hot" needs
its degree word."""
PRODUCT_WORDS = (r"(?:remed(?:y|ies)|medicines?|medications?|tablets?|pills?|capsules?|caplets?|sachets?|powders?|"
                 r"syrups?|mixtures?|lozenges?|sprays?|products?|treatments?|inhalers?|creams?|drops?)")
"""The nouns of a medicine product as people name it ("a cold and flu remedy", "hay fever tablets", "some cough
mixture"), as a regular expression: the word before names what it is for, and the clause tells a taking."""
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
          "december")
_MONTH = "(?:" + "|".join(m for m in MONTHS if m != "may") + ")"  # "in May" alone is too often the verb's
DATED = re.compile(
    rf"\b((?:back\s+)?in\s+(?:(?:early|late|mid)\s+)?(?:19[4-9]\d|20[0-4]\d)|(?:back\s+)?in\s+(?:early\s+|late\s+)?{_MONTH}"
    rf"(?:\s+(?:19[4-9]\d|20[0-4]\d))?|last\s+{_MONTH}|since\s+(?:19[4-9]\d|20[0-4]\d)|since\s+{_MONTH})\b", re.I)
"""A time said as a calendar year or month ("back in 2015", "in March", "last September", "since 2019"): when
something happened, as a date rather than a span (the NLU keeps the patient's words; the red-flag screen counts
the days, ``agent.core.safety.onset_days``)."""


def days_since_dated(text: str, today: date | None = None) -> float | None:
    """How many days ago the calendar time of :data:`DATED` in ``text`` was (a month without a year is the last one
    that began on or before ``today``; a past year is taken from its middle; this year alone tells no day: None)."""
    m = DATED.search(text)
    if m is None:
        return None
    today = today or date.today()
    said = m.group(1).lower()
    if year := re.search(r"(?:19|20)\d\d", said):
        month = next((i + 1 for i, name in enumerate(MONTHS) if name in said), None)
        y = int(year.group(0))
        if y >= today.year and month is None:
            return None  # "in 2026" said in 2026: some time this year
        return float(max((today - date(y, month or 7, 1)).days, 0))
    month = next(i + 1 for i, name in enumerate(MONTHS) if name in said)
    y = today.year if month <= today.month else today.year - 1
    return float(max((today - date(y, month, 1)).days, 0))

DENIAL_END = "DENIAL_END"
"""The ConText category of words that end a denial's (or a doubt's) scope and no other scope."""


def conversation_rules() -> list[Any]:
    """ConText rules for how patients talk (medspaCy's defaults are written for clinical notes).

    FORWARD only: in speech the cue comes first ("no fever", "never smoked"); a cue after a mention is usually
    about something else ("I take an inhaler, it hasn't helped")."""
    from medspacy.context import ConTextRule

    neg = ["haven't", "have not", "hasn't", "don't", "do not", "didn't", "did not", "never", "nope", "nothing",
           "none", "no longer", "not had", "not noticed", "can't say i have", "wasn't", "weren't", "isn't", "aren't",
           "doesn't", "does not", "i don't think", "neither", "nor", "nobody", "no one", "noone", "not anyone"]
    # Uncertainty about whether it happens, not the hedges people wrap a plain statement in ("I think I've lost
    # weight", "sort of a tight chest" state the symptom: MediTOD annotates them positive).
    unsure = ["not sure", "i'm not sure", "unsure", "maybe", "possibly", "perhaps", "might", "don't know",
              "not certain", "can't remember", "don't remember", "no idea",
              # a hedged label ("I wouldn't say I'm depressed exactly, just flat"): not a denial of the state
              "wouldn't say", "would not say", "wouldn't call", "would not call", "wouldn't describe"]
    rules = [ConTextRule(p, "NEGATED_EXISTENCE", direction="FORWARD", max_scope=8) for p in neg]
    rules += [ConTextRule(p, "POSSIBLE_EXISTENCE", direction="FORWARD", max_scope=8) for p in unsure]
    # "if anything" turns to the opposite ("I haven't lost weight, if anything I've put some on"), "in fact" to
    # what is so instead ("no fever, in fact I've been cold"); not "actually", said inside a denial ("I don't
    # actually smoke")
    terminators = ("but", "except", "although", "though", "however", "other than", "if anything", "in fact")
    # a hedge after a denial takes part of it back ("not really pain, maybe a dull ache now and then"): what follows
    # is no longer denied (the hedge itself is read as the uncertainty cue it is)
    rules.append(ConTextRule(", maybe", "NEGATED_EXISTENCE", direction="TERMINATE", pattern=[
        {"LOWER": {"IN": [",", ";", "-"]}}, {"LOWER": {"IN": ["maybe", "perhaps", "possibly"]}},
        {"LOWER": {"IN": ["a", "an", "some", "the", "just"]}}]))  # not a hedge on when ("maybe fifteen years ago")
    rules += [ConTextRule(p, "NEGATED_EXISTENCE", direction="TERMINATE") for p in terminators]
    # "just" and "only" end a denial ("no pain, just a dull ache") and nothing else: a relative's ("my granddaughter's
    # just got over chickenpox") or a past scope goes on (a TERMINATE cue would end every scope). A one-token scope,
    # as the TERMINATE cues' below, so that medspaCy's overlap test lets it cut the denial's scope.
    rules += [ConTextRule(p, DENIAL_END, direction="PSEUDO", max_scope=1) for p in ("just", "only")]
    # a figure of speech taken back after it ("I could throttle him, not literally"): the one cue that looks back, since
    # the taking back always follows what it takes back
    figurative = ["not literally", "only joking", "just joking", "just kidding", "only kidding", "letting off steam",
                  "figure of speech", "manner of speaking", "i'm joking", "i am joking", "i'm kidding"]
    rules += [ConTextRule(p, "NEGATED_EXISTENCE", direction="BACKWARD", max_scope=10) for p in figurative]
    # ... also when a "but" or a "you know" leads into the taking back ("I could kill him, but, you know, figure of
    # speech"): the lead words join the cue, so the "but" that ends other scopes does not end this one
    lead_in = {"LOWER": {"IN": ["but", ",", "-", "you", "know", "just", "a", "it", "it's", "'s", "’s", "i", "mean",
                                "obviously", "of", "course"]}, "OP": "+"}
    rules += [ConTextRule(f"... {p}", "NEGATED_EXISTENCE", direction="BACKWARD", max_scope=10,
                          pattern=[lead_in, *({"LOWER": w} for w in p.split())]) for p in figurative]
    # Kin words medspaCy's FAMILY cue lacks (British and familiar forms): a relative who has the condition owns it.
    rules.append(ConTextRule("kin", "FAMILY", direction="FORWARD", pattern=[
        {"LOWER": {"IN": sorted(KIN)}}, {"LOWER": {"IN": ["'s", "’s"]}, "OP": "?"}]))
    # ... and a friend, a colleague or a neighbour ("my friend was coughing up blood last year"): someone else's
    # (a short scope: "I'm so wound up with my neighbour I swear I'm going to kill him" is the patient's own threat)
    rules.append(ConTextRule("someone else", "FAMILY", direction="FORWARD", max_scope=5, pattern=[
        {"LOWER": {"IN": ["my", "our", "a", "his", "her"]}},
        {"LOWER": {"IN": sorted(OTHER_PEOPLE | {f"{p}s" for p in OTHER_PEOPLE})}},
        {"LOWER": {"IN": ["'s", "’s"]}, "OP": "?"}]))
    # A relative who only reports ("my wife says I snore", "my son noticed I was muddled") does not own what they
    # report: the longer PSEUDO match removes the FAMILY cue it contains.
    rules.append(ConTextRule("relative reports", "FAMILY", direction="PSEUDO", pattern=[
        {"LOWER": "my", "OP": "?"}, {"LOWER": {"IN": sorted(RELATIVES | OTHER_PEOPLE)}},
        {"LOWER": {"IN": ["'s", "’s"]}, "OP": "?"},
        {"LOWER": {"IN": ["has", "had", "keeps", "always", "just", "then", "also"]}, "OP": "?"},
        {"LOWER": {"IN": list(REPORTING_VERBS)}}]))
    # "I can't stop coughing", "I couldn't keep food down": an inability is no denial (medspaCy's "n't" cue would
    # negate what follows); "No, got high blood pressure": a bare answer word before a comma answers the question
    # and does not negate the next clause.
    rules.append(ConTextRule("can't", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["ca", "could", "wo", "can"]}}, {"LOWER": {"IN": ["n't", "not", "’t"]}}]))
    # "I've lost weight without trying", "I wet myself without realising": "without" + an intention or awareness
    # word says how it happened, and denies nothing.
    rules.append(ConTextRule("without trying", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": "without"},
        {"LOWER": {"IN": ["even", "really", "any", "me", "my", "a", "much", "particular"]}, "OP": "*"},
        {"LOWER": {"IN": ["trying", "try", "meaning", "dieting", "realising", "realizing", "noticing", "warning",
                          "reason", "cause", "thinking", "knowing", "wanting", "intending", "effort"]}}]))
    # "I'm not trying to lose weight", "I haven't been dieting": a denied intention says the loss was unintended,
    # the warning sign itself, and denies nothing.
    rules.append(ConTextRule("not trying", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["not", "n't", "’t", "never"]}},
        {"LOWER": {"IN": ["been", "even", "really", "actually"]}, "OP": "*"},
        {"LOWER": {"IN": ["trying", "tried", "dieting", "meaning", "intending"]}}]))
    # "Half my face isn't moving", "my arm won't lift", "my words aren't coming out right", "she's not making any
    # sense": a part that does not do its work is a loss of function, the complaint itself, not its denial.
    rules.append(ConTextRule("won't move", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["is", "are", "was", "were", "does", "do", "did", "wo", "would", "will", "has", "have", "'s",
                          "’s", "'re"]}, "OP": "?"},
        {"LOWER": {"IN": ["n't", "not", "’t"]}},
        {"LOWER": {"IN": ["be", "properly", "really", "quite", "any", "at", "all", "right", "been"]}, "OP": "*"},
        {"LOWER": {"IN": sorted(LOST_FUNCTIONS)}}]))
    rules.append(ConTextRule("no hearing", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["no", "zero"]}}, {"LOWER": {"IN": ["real", "proper", "more"]}, "OP": "?"},
        {"LOWER": {"IN": sorted(LOST_FACULTIES)}}, {"LOWER": "at", "OP": "?"}, {"LOWER": "all", "OP": "?"},
        {"LOWER": {"IN": ["in", "on", "from", "at"]}}]))
    rules.append(ConTextRule("not been able to", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["have", "has", "had", "was", "were", "am", "is", "are", "i", "i've"]}, "OP": "?"},
        {"LOWER": {"IN": ["n't", "not", "’t", "never"]}}, {"LOWER": "been", "OP": "?"}, {"LOWER": "able"},
        {"LOWER": "to"}]))
    # "I had a stomach ulcer maybe ten years ago", "it started perhaps a couple of weeks back": the hedge is about
    # when, not whether; only a hedge on the event itself makes it uncertain.
    rules.append(ConTextRule("maybe ten", "POSSIBLE_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["maybe", "perhaps", "possibly", "probably"]}},
        {"LOWER": {"IN": ["about", "around", "roughly", "like", "over", "just", "nearly", "almost"]}, "OP": "?"},
        {"LOWER": {"IN": ["a", "an", "the", "last"]}, "OP": "?"},
        {"LOWER": {"REGEX": _APPROX_COUNT}}, {"LOWER": "of", "OP": "?"}]))
    rules.append(ConTextRule("no,", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["no", "nope", "nah", "not"]}}, {"LOWER": {"IN": ["really", "that", "not"]}, "OP": "?"},
        {"IS_PUNCT": True, "LOWER": {"IN": [",", ".", ";", "-", "!", "..."]}}]))
    # A new clause ends a denial: "I've lost weight without trying, and today I've been sick", "I'm not eating
    # more, my skin's dry". A list keeps it ("no fever, chills or sweats"): only a clause's subject after the
    # comma or "and" ends it.
    rules.append(ConTextRule("new clause", "NEGATED_EXISTENCE", direction="TERMINATE", pattern=[
        {"LOWER": {"IN": [",", ";", "and", "so"]}}, {"LOWER": "and", "OP": "?"}, {"LOWER": {"IN": CLAUSE_SUBJECTS}}]))
    # ... as does a thing said to work after the break: "nothing makes it better, paracetamol helps a little" (a list of
    # denied things has no verb after its second item: "no fever, chills or sweats")
    rules.append(ConTextRule(", paracetamol helps", "NEGATED_EXISTENCE", direction="TERMINATE", pattern=[
        {"LOWER": {"IN": [",", ";"]}}, {"LOWER": {"NOT_IN": ["or", "and", "nor", "no", "not", "never"]}},
        {"LOWER": {"IN": ["helps", "helped", "works", "worked", "eases", "eased", "settles", "settled", "does", "did",
                          "takes", "took", "makes", "made", "calms", "calmed", "relieves", "relieved"]}}]))
    # ... as does a verb in the past with its object, its subject left out: "no helmet, cracked his head on the kerb",
    # "no fever, coughed up a bit of blood this morning" (a list of denied things has no such verb)
    rules.append(ConTextRule(", cracked his", "NEGATED_EXISTENCE", direction="TERMINATE", pattern=[
        {"LOWER": {"IN": [",", ";"]}}, {"LOWER": "and", "OP": "?"}, {"LOWER": {"REGEX": r"^[a-z]{3,}ed$"}},
        {"LOWER": {"IN": ["my", "his", "her", "their", "the", "it", "up", "out", "off", "into", "in", "down", "a", "an",
                          "over", "back", "myself", "himself", "herself", "on"]}}]))
    # "No other problems in this pregnancy", "no complications during my pregnancy": its problems are denied, not the
    # pregnancy they are said of (it had been recorded as denied); "no problems with my knee" stays a denial
    rules.append(ConTextRule("no problems in this", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["no", "not", "nothing", "without", "n't"]}},
        {"LOWER": {"IN": ["other", "any", "real", "major", "else", "much"]}, "OP": "*"},
        {"LOWER": {"IN": ["problems", "problem", "issues", "issue", "complications", "complication", "trouble",
                          "worries", "concerns"]}},
        {"LOWER": {"IN": ["in", "during"]}}, {"LOWER": {"IN": ["this", "my", "the", "her", "that"]}},
        {"LOWER": {"IN": ["pregnancy", "pregnancies"]}}]))
    # ... and so does an amount said after a break: "Never smoked, a few beers at the weekend", "no fever, a bit of a
    # cough" (a denied list goes on with bare names: "no fever, chills or sweats")
    rules.append(ConTextRule(", a few", "NEGATED_EXISTENCE", direction="TERMINATE", pattern=[
        {"LOWER": {"IN": [",", ";"]}}, {"LOWER": {"IN": ["a", "the", "some", "lots", "loads", "plenty", "two", "one"]}},
        {"LOWER": {"IN": ["few", "couple", "odd", "bit", "lot", "little", "of", "or"]}}]))
    # A verdict "right" closing what it is said of: "Nah, waterworks are right", "my chest's right now" (British and
    # Australian for fine); "the pain is right here" points, and needs the break after it
    rules.append(ConTextRule("are right.", "NEGATED_EXISTENCE", direction="BACKWARD", max_scope=3, pattern=[
        {"LOWER": {"IN": ["'s", "’s", "is", "are", "was", "were"]}}, {"LOWER": "right"},
        {"LOWER": {"IN": ["now", "again"]}, "OP": "?"}, {"IS_PUNCT": True}]))
    # A colon opens what the speaker goes on to tell: "I haven't bumped into a thing: bruises all over"
    rules.append(ConTextRule("colon", "NEGATED_EXISTENCE", direction="TERMINATE", pattern=[{"LOWER": ":"}]))
    # A new predicate with its subject left out ends a denial too: "I didn't eat and kept throwing up", "I don't smoke
    # and have been coughing up phlegm", "no temperature, and am getting night sweats" (a verb that goes on, or an
    # auxiliary with a verb in -ing, after "and" or a comma). "no cough and haven't been wheezy" keeps its own cue.
    rules.append(ConTextRule("and kept", "NEGATED_EXISTENCE", direction="TERMINATE", pattern=[
        {"LOWER": {"IN": [",", ";", "and"]}}, {"LOWER": "and", "OP": "?"},
        {"LOWER": {"IN": ["have", "has", "had", "'ve", "’ve", "am", "'m", "’m", "is", "was", "were", "been"]},
         "OP": "?"}, {"LOWER": "been", "OP": "?"}, {"LOWER": {"IN": ["still", "now", "also", "just"]}, "OP": "?"},
        {"LOWER": {"IN": CONTINUING_VERBS}}]))
    # ... and so does a verb inflected for its own subject after a comma: "he doesn't smoke, drinks a couple of pints"
    # ("doesn't" governs a bare verb, so "drinks" is a new predicate; "doesn't smoke, drink or gamble" stays denied)
    rules.append(ConTextRule(", drinks", "NEGATED_EXISTENCE", direction="TERMINATE", pattern=[
        {"LOWER": {"IN": [",", ";"]}}, {"LOWER": {"IN": ["drinks", "takes", "eats", "uses", "vapes", "works", "walks",
                                                          "has", "gets", "goes", "likes", "enjoys", "smokes"]}}]))
    rules.append(ConTextRule("and am getting", "NEGATED_EXISTENCE", direction="TERMINATE", pattern=[
        {"LOWER": {"IN": [",", ";", "and"]}}, {"LOWER": "and", "OP": "?"},
        {"LOWER": {"IN": ["have", "has", "had", "'ve", "’ve", "am", "'m", "’m", "is", "was", "were"]}},
        {"LOWER": "been", "OP": "?"}, {"LOWER": {"IN": ["still", "now", "also", "just", "really", "constantly"]},
                                      "OP": "?"},
        {"LOWER": {"REGEX": r"^[a-z]{3,}ing$", "NOT_IN": ["nothing", "anything", "something", "everything"]}}]))
    # "she doesn't know where she is", "he didn't know what year it was": not knowing where, who or when one is, is
    # disorientation (NICE CKS Delirium), not the hedge "I don't know" nor a denial of what follows.
    rules.append(ConTextRule("doesn't know where", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["do", "does", "did", "could", "ca", "can"]}}, {"LOWER": {"IN": ["n't", "not", "’t"]}},
        {"LOWER": {"IN": ["know", "tell", "say", "remember"]}},
        {"LOWER": {"IN": ["where", "who", "what", "which", "when"]}}]))
    rules.append(ConTextRule("don't know where", "POSSIBLE_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["do", "does", "did", "could", "ca", "can"]}}, {"LOWER": {"IN": ["n't", "not", "’t"]}},
        {"LOWER": {"IN": ["know", "tell", "say", "remember"]}},
        {"LOWER": {"IN": ["where", "who", "what", "which", "when"]}}]))
    # "My hearing's fine", "swallowing is normal", "I can breathe fine": a verdict after the mention denies it (the
    # one backward cue: three tokens, so "I feel fine in myself" denies nothing said before).
    rules.append(ConTextRule("is fine", "NEGATED_EXISTENCE", direction="BACKWARD", max_scope=3, pattern=[
        {"LOWER": {"IN": ["'s", "’s", "is", "are", "was", "were", "been", "seems", "feels"]}, "OP": "?"},
        {"LOWER": {"IN": ["fine", "normal", "ok", "okay", "alright", "good", "unaffected", "perfect"]}}]))
    # A denial said after its topic, as Indian and other English put it: "Chest pain is not there", "Alcohol I am not
    # taking", "Weakness in the legs is not there" (the topic first, the denial closing the sentence)
    rules.append(ConTextRule("is not there", "NEGATED_EXISTENCE", direction="BACKWARD", max_scope=5, pattern=[
        {"LOWER": {"IN": ["is", "are", "was", "were", "'s", "’s"]}}, {"LOWER": {"IN": ["not", "n't", "’t"]}},
        {"LOWER": "there"}, {"IS_PUNCT": True}]))
    # A clinical register's verdict after its topic: "Thoughts of ending it: negative.", "chest pain - nil", "Drugs:
    # none." (a review of systems as a patient who works in health reads it out)
    rules.append(ConTextRule(": negative", "NEGATED_EXISTENCE", direction="BACKWARD", max_scope=8, pattern=[
        {"LOWER": {"IN": [":", "-", "–", "="]}},
        {"LOWER": {"IN": ["negative", "nil", "none", "no", "denied", "denies", "absent", "nope", "never", "neg"]}},
        {"IS_PUNCT": True}]))
    rules.append(ConTextRule("i am not taking", "NEGATED_EXISTENCE", direction="BACKWARD", max_scope=3, pattern=[
        # (a verb of taking only: "I don't smoke." names its own habit, which the cue must not swallow)
        {"LOWER": {"IN": ["i", "he", "she"]}}, {"LOWER": {"IN": ["am", "'m", "’m", "is", "'s", "’s"]}},
        {"LOWER": {"IN": ["not", "n't", "’t"]}}, {"LOWER": {"IN": ["taking", "having", "using"]}},
        {"IS_PUNCT": True}]))
    # ... nor one under a "can't": "I cannot breathe good", "can't hear right" say what does not work (the verdict
    # is the function's manner, in plain or non-native English), so the longer cue takes the verdict's words
    rules.append(ConTextRule("can't breathe good", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["ca", "can", "could", "do", "does", "did"]}}, {"LOWER": {"IN": ["n't", "not", "’t"]}},
        {"LOWER": {"REGEX": r"^[a-z]{3,}$"}},
        # its object between ("I cannot take breath properly", "can't get my breath right")
        {"IS_ALPHA": True, "LOWER": {"NOT_IN": ["and", "but", "or", "so", "because", "any", "anything", "feel", "be"]},
         "OP": "{0,2}"},
        {"LOWER": {"IN": ["good", "fine", "normal", "ok", "okay", "alright", "right", "properly", "well"]}}]))
    # ... but a verdict on treatment is no denial: "my blood pressure is fine on it", "sugars are good with the tablets"
    # say the condition is there and treated (the longer cue takes the verdict's words).
    rules.append(ConTextRule("fine on it", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["'s", "’s", "is", "are", "was", "were", "been", "seems", "feels"]}, "OP": "?"},
        {"LOWER": {"IN": ["fine", "normal", "ok", "okay", "alright", "good", "better", "controlled", "perfect"]}},
        {"LOWER": {"IN": ["now", "since", "again"]}, "OP": "?"},
        {"LOWER": {"IN": ["on", "with", "since", "thanks", "because", "taking"]}},
        {"LOWER": {"IN": ["it", "them", "the", "my", "this", "that", "these", "those", "tablets", "pills", "to",
                          "medication", "medicine", "treatment", "an", "a", "i", "i've", "i'm", "starting"]}}]))
    # "She's not herself", "not quite right": the idiom says someone is unwell and denies nothing after it ("our nan's
    # not herself, overnight she's gone muddled")
    rules.append(ConTextRule("not herself", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["is", "are", "was", "were", "am", "'s", "’s", "'m", "’m", "'re", "’re"]}, "OP": "?"},
        {"LOWER": "not"}, {"LOWER": {"IN": ["quite", "really", "been", "at", "feeling"]}, "OP": "*"},
        {"LOWER": {"IN": ["herself", "himself", "myself", "themselves", "yourself", "right"]}},
        {"LOWER": {"IN": ["there", "with", "it"]}, "OP": "?"}]))
    # How the patient is in general ("not too great", "not feeling so good", "talking not normal") denies nothing
    # after it: "Oh, not too great, I've had this cough the last few days", "not normal, a little bit confused".
    # "I'll not lie", "I won't lie", "not gonna lie": the speaker's frankness about what follows, no denial of it
    rules.append(ConTextRule("i'll not lie", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["not", "n't", "’t", "never"]}}, {"LOWER": {"IN": ["going", "gonna", "gon"]}, "OP": "?"},
        {"LOWER": {"IN": ["to", "na"]}, "OP": "?"}, {"LOWER": {"IN": ["lie", "lying", "kid", "kidding"]}}]))
    rules.append(ConTextRule("not too great", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["is", "are", "was", "were", "am", "'s", "’s", "'m", "’m", "'re", "’re"]}, "OP": "?"},
        {"LOWER": "not"}, _HOW_ONE_IS, {"LOWER": {"IN": ["too", "so", "very", "that", "all"]}, "OP": "?"},
        {"LOWER": {"IN": ["great", "good", "well", "brilliant", "fantastic", "grand", "bad", "clever", "normal",
                          "fine", "ok", "okay", "alright"]}}]))
    # ... "not so hot" among them, with its degree word: a bare "they're not hot or red" denies the heat
    rules.append(ConTextRule("not so hot", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["is", "are", "was", "were", "am", "'s", "’s", "'m", "’m", "'re", "’re"]}, "OP": "?"},
        {"LOWER": "not"}, _HOW_ONE_IS, {"LOWER": {"IN": ["too", "so", "very", "that", "all"]}}, {"LOWER": "hot"}]))
    # "Never had pain like it", "I've never felt a headache like this before": a superlative (the worst ever), which
    # says the thing is here now and unlike any before, not a denial of it (a thunderclap headache's own words).
    # "Nothing like that" stays a denial ("no fever, nothing like that").
    rules.append(ConTextRule("never had pain like it", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["never", "not", "n't", "’t"]}}, {"LOWER": {"IN": ["ever", "once", "in", "my", "life"]},
                                                           "OP": "*"},
        {"LOWER": {"IN": ["had", "felt", "experienced", "known", "been", "seen", "have", "feel", "get", "got"]}},
        {"IS_PUNCT": False, "LOWER": {"NOT_IN": ["and", "but", "or", "so", "no", "nothing", "like"]}, "OP": "{0,4}"},
        {"LOWER": "like"}, {"LOWER": {"IN": ["it", "this", "that"]}}]))
    # "My nose hasn't cleared", "the cough hasn't gone away", "it won't settle": a denied recovery says the complaint
    # goes on, and denies nothing of it ("hasn't gone into my arm" is no recovery: "gone" only with "away")
    degree = {"LOWER": {"IN": ["fully", "completely", "really", "quite", "totally", "properly", "yet", "ever"]},
              "OP": "*"}
    rules.append(ConTextRule("hasn't cleared", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["not", "n't", "’t", "never"]}}, degree,
        {"LOWER": {"IN": ["cleared", "clear", "settled", "settle", "eased", "ease", "improved", "improve", "shifted",
                          "shift", "budged", "budge", "resolved", "healed", "heal"]}},
        {"LOWER": {"IN": ["up", "away", "off", "down"]}, "OP": "?"}]))
    rules.append(ConTextRule("hasn't gone away", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["not", "n't", "’t", "never"]}}, degree,
        {"LOWER": {"IN": ["gone", "go", "went", "let", "eased"]}}, {"LOWER": {"IN": ["away", "off", "up"]}}]))
    # "Nothing's much fun any more", "nothing interests me": the "nothing" is the loss of pleasure itself (anhedonia,
    # PHQ-9 item 1: "little interest or pleasure in doing things"), not a denial of what follows
    rules.append(ConTextRule("nothing's fun", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": {"IN": ["nothing", "nothin", "nothin'"]}},
        {"LOWER": {"IN": ["'s", "’s", "is", "seems", "feels"]}, "OP": "?"},
        {"LOWER": {"IN": ["much", "really", "very", "any"]}, "OP": "?"},
        {"LOWER": {"IN": ["gives", "brings", "makes", "give", "bring", "make"]}, "OP": "?"},
        {"LOWER": {"IN": ["me", "him", "her", "them", "us"]}, "OP": "?"}, {"LOWER": {"IN": ["any", "much"]}, "OP": "?"},
        {"LOWER": {"IN": ["fun", "enjoyable", "interesting", "interests", "excites", "appeals", "matters", "worth",
                          "pleasurable", "exciting", "joy", "pleasure", "happy", "happiness", "delight",
                          "satisfaction", "joyful", "interest"]}}]))
    # ... but a comparison is no verdict: "I'm more out of breath than normal", "worse than OK" say it is there.
    rules.append(ConTextRule("than normal", "NEGATED_EXISTENCE", direction="PSEUDO", pattern=[
        {"LOWER": "than"}, {"LOWER": {"IN": ["fine", "normal", "ok", "okay", "alright", "good", "usual"]}}]))
    # A new clause about the patient ends a relative's scope: "my brother had a heart attack and I get chest pain".
    rules.append(ConTextRule("and i", "FAMILY", direction="TERMINATE", pattern=[
        {"LOWER": {"IN": ["and", "but", "so", "while", "whereas", ",", ";"]}},
        {"LOWER": {"IN": ["i", "i'm", "i've", "i'd", "i’m", "i’ve", "me", "myself"]}}]))
    # ... and so does a relative's part in the patient's visit, said of the patient and closed: "my daughter made me,
    # is there's been blood", "my wife brought me in. I've been dizzy" (the relative acts on the patient; what
    # follows is the patient's). "My mum told me she has diabetes" goes on: no break after the "me".
    rules.append(ConTextRule("made me,", "FAMILY", direction="TERMINATE", pattern=[
        {"LOWER": {"IN": ["me", "us"]}}, {"LOWER": {"IN": ["in", "along", "here", "come", "today"]}, "OP": "*"},
        {"IS_PUNCT": True, "LOWER": {"IN": [",", ".", ";", "-", "!", "..."]}}]))
    # The patient's past, said as people say it (medspaCy's HISTORICAL cues are written for notes: "h/o").
    young = [*(f"{'an' if w[0] in 'aeiou' else 'a'} {w}" for w in YOUNG_PEOPLE), "a little boy", "a little girl",
             "a student", "at school"]
    hist_fwd = ["in the past", "used to", "back in", "years ago i", "a long time ago", "when i was younger",
                "when i was little", "when i was small", "once before", "previously",
                *(f"as {y}" for y in young if y != "at school"), *(f"when i was {y}" for y in young)]
    hist_back = ["years ago", "when i was little", "when i was small", "when i was younger", "a long time ago",
                 "in the past", "back then", "ages ago", "decades ago",
                 *(f"as {y}" for y in young if y != "at school"), *(f"when i was {y}" for y in young)]
    # a cue said on either side ("when I was a teenager I self-harmed", "I self-harmed when I was a teenager") is one
    # bidirectional rule: as two rules of the same words, medspaCy kept only the backward one of the overlapping
    # pair, and the past said first was read as the present
    both = [p for p in hist_fwd if p in hist_back]
    rules += [ConTextRule(p, "HISTORICAL", direction="FORWARD", max_scope=10) for p in hist_fwd if p not in both]
    rules += [ConTextRule(f"{p} ", "HISTORICAL", direction="BACKWARD", max_scope=12,
                          pattern=[{"LOWER": w} for w in p.split()]) for p in hist_back if p not in both]
    rules += [ConTextRule(p, "HISTORICAL", direction="BIDIRECTIONAL", max_scope=10) for p in both]
    # an age said as the time: "a fit when I was about four", "when I was 12 I broke my arm"
    at_an_age = [{"LOWER": "when"}, {"LOWER": {"IN": ["i", "he", "she"]}}, {"LOWER": "was"},
                 {"LOWER": {"IN": ["about", "around", "only", "just", "maybe"]}, "OP": "?"}, {"LIKE_NUM": True}]
    rules.append(ConTextRule("when i was <age>", "HISTORICAL", direction="BIDIRECTIONAL", max_scope=12,
                             pattern=at_an_age))
    # an age said as the time ("aged 12", "at the age of five", "at sixteen"): a bare "at" only before a teen, since
    # "at 5 this morning" is a clock's time, no age (it had made a crushing chest pain "started at 5" the past)
    teens = ["thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
             *(str(n) for n in range(13, 20))]
    for lead in ([{"LOWER": "aged"}], [{"LOWER": "at"}, {"LOWER": "age"}],
                 [{"LOWER": "at"}, {"LOWER": "the"}, {"LOWER": "age"}, {"LOWER": "of"}]):
        rules.append(ConTextRule("at the age of <age>", "HISTORICAL", direction="BIDIRECTIONAL", max_scope=12,
                                 pattern=[*lead, {"LOWER": {"IN": ["about", "around"]}, "OP": "?"},
                                          {"LIKE_NUM": True}]))
    rules.append(ConTextRule("at <teen>", "HISTORICAL", direction="BIDIRECTIONAL", max_scope=12, pattern=[
        {"LOWER": "at"}, {"LOWER": {"IN": teens}},
        {"LOWER": {"NOT_IN": ["past", "to", "minutes", "o'clock", "hundred", "hours", "hrs", "am", "pm", ":"]}}]))
    # a past year said as the time, before or after ("back in 2019 I had a clot", "a clot in my leg in 2015"); not
    # "since 2019" (what began then may go on) nor this year
    past_years = [str(y) for y in range(1940, date.today().year)]
    rules.append(ConTextRule("back in <year>", "HISTORICAL", direction="BIDIRECTIONAL", max_scope=12, pattern=[
        {"LOWER": {"IN": ["back", "in", "around"]}}, {"LOWER": {"IN": ["in", "around", "about"]}, "OP": "?"},
        {"TEXT": {"IN": past_years}}]))
    return rules


NEAR_MISS_CUES = ("nearly", "almost", "about to", "going to", "gonna", "close to", "on the verge of", "like i might",
                  "like i'd", "like i would", "want to", "wanted to", "like i need to",
                  # "faint" felt, not fainted (NICE CKS Blackouts: presyncope): "I feel a bit faint", "came over all
                  # faint"
                  *(f"{verb} {degree}".strip() for verb in ("feel", "feels", "felt", "feeling", "came over all",
                                                             "come over all", "went all", "gone all")
                    for degree in ("", "a bit", "a little", "really", "very", "so", "quite", "a bit of a")))
"""Words that make an event a near miss: "I nearly passed out", "I thought I was going to faint", "close to blacking
out", "light-headed, like I might keel over", "I feel like I want to vomit" say it did not happen. Not "might" alone
(doubt whether it happened: "I might have fainted") nor "would" alone (a habit: "I would faint every morning")."""


def near_misses(phrases: Iterable[str]) -> list[str]:
    """Each phrase of an event said as a near miss ("passed out" -> "nearly passed out", "about to passed out"): the
    phrase matcher compares stems, so "about to pass out" and "close to passing out" find them too."""
    return [f"{cue} {p}" for p in phrases for cue in NEAR_MISS_CUES]


CLAUSE_SUBJECTS = ["i", "i'm", "i've", "my", "it", "it's", "there", "here", "they", "he", "she", "we", "today", "now",
                   "yesterday", "this", "then", "since"]
"""Words that start a new clause after a comma or "and" (spaCy splits "I've" into "I" and "'ve")."""

CLAUSE_VERBS = ["is", "are", "was", "were", "'s", "’s", "has", "have", "had", "seem", "seems", "seemed", "feel",
                "feels", "felt", "look", "looks", "looked", "get", "gets", "got", "come", "comes", "came", "keep",
                "keeps", "kept"]
"""Verbs after a thing named that make it a new clause's subject ("..., and the cramps are mild")."""

CONTINUING_VERBS = ["keep", "keeps", "kept", "keeping", "started", "start", "starts", "starting", "began", "begun",
                    "ended", "end", "ends", "get", "gets", "got", "getting", "feel", "feels", "felt"]
"""Verbs that open a new predicate with its subject left out ("... and kept being sick", "... and now get chest
pain"): what follows them is said to happen."""

OTHER_PEOPLE = frozenset("""friend mate colleague workmate coworker boss neighbour neighbor flatmate housemate
roommate""".split())
"""People of the patient's life outside the family: what they have is theirs (ConText FAMILY, "someone else"), no
family history and not the patient's."""

KIN = frozenset("""mum mam mom nan nana gran granny grandma grandad grandpa auntie twin stepdad stepmum stepmom
father-in-law mother-in-law lad lass bairn wean grandson granddaughter grandchildren grandkids niece nephew""".split())
RELATIVES = frozenset("""mum mom mother dad father brother sister son daughter wife husband partner girlfriend boyfriend
grandma grandmother granny nan grandad grandfather grandpa aunt uncle cousin parents family kids children friend
friends flatmate roommate colleague boss lad lass""".split())
REPORTING_VERBS = frozenset("""says said say saying thinks thought reckons reckoned noticed notices notice tells told
telling mentioned
pointed complains complained worries worried saw sees heard hears feels felt wonders wondered""".split())


@dataclass(frozen=True)
class Found:
    key: str  # what the phrase was registered under
    text: str  # the words matched
    status: str  # positive / negative / unknown
    family: bool
    sent: int  # sentence index in the text
    start: int  # token index
    sentence: str
    char_start: int = 0  # where the match lies in ``sentence`` (characters)
    char_end: int = 0
    historical: bool = False  # a past-time cue modifies it ("when I was a child", "years ago")


class PhraseFinder:
    """Phrases -> keys, found with their ConText status. The pipeline is built on first use (about 3 s)."""

    def __init__(self, phrases: Iterable[tuple[str, str]], words: Callable[[str], str | None] | None = None,
                 spans: Callable[[str], list[tuple[int, int, str]]] | None = None, parts: Iterable[str] = (),
                 members: Mapping[str, Iterable[str]] | None = None):
        self._phrases = list(phrases)  # (phrase, key)
        # body-part words: a listed "<quality> <part>" ("dry mouth") is also said of the part ("my mouth has been
        # really dry", "stiff in the joints"; :meth:`_predicative_matches`), of a place that belongs to the part
        # (``members``: "stiff joints" in "my knees are stiff"), and of "it" or "they" when the part or such a
        # place was named before in the text ("my knees ache. They're stiff in the morning")
        self._members = {word_stem(k): frozenset(word_stem(m) for m in v) for k, v in (members or {}).items()}
        self._parts = frozenset(word_stem(p) for p in parts) | {m for v in self._members.values() for m in v}
        self._anaphoric: dict[str, frozenset[str]] = {}  # pronoun-form label -> the part stems "it" may stand for
        self._words = words  # a single word -> key, for open sets no list spells out (generic drugs by INN stem)
        # text -> (char start, char end, key): what a phrase list cannot spell (a colour said of a fluid, a number
        # read off a meter); read by ConText like the phrases, and a listed phrase it overlaps gives way to it
        self._spans = spans

    @cached_property
    def _pipeline(self) -> tuple[Language, tuple[PhraseMatcher, PhraseMatcher, PhraseMatcher, PhraseMatcher],
                                 dict[str, str]]:
        from spacy.lang.en.stop_words import STOP_WORDS
        from spacy.matcher import PhraseMatcher

        nlp = context_pipeline()
        exact = PhraseMatcher(nlp.vocab, attr="LOWER")
        inflected = PhraseMatcher(nlp.vocab, attr="NORM")
        linked = PhraseMatcher(nlp.vocab, attr="NORM")  # without "be" and "have" (:meth:`_linked_matches`)
        predicative = PhraseMatcher(nlp.vocab, attr="NORM")  # "<part> ... <quality>" (:meth:`_predicative_matches`)
        keys: dict[str, str] = {}
        for i, (phrase, key) in enumerate(self._phrases):
            label = f"P{i}"
            keys[label] = key
            doc = nlp.make_doc(phrase)
            exact.add(label, [doc])
            if len(doc) > 1 or len(word_stem(doc[0].lower_)) >= 4:  # "fits" must not match "fit"
                inflected.add(label, [_stemmed(doc)])
            bare = [doc[i].text for i in _unlinked(doc)]
            # "throat is closing" is also "throat closing", which "my throat's closing" says; a phrase that the
            # verb makes ("if I were gone" is no "if I go") keeps it
            if len(bare) > 1 and (len(bare) == len(doc) or sum(w.lower() not in STOP_WORDS for w in bare) > 1):
                linked.add(label, [_stemmed(nlp.make_doc(" ".join(bare)))])
            if self._parts and len(doc) == 2 and not {t.lower_ for t in doc} & STOP_WORDS:
                first, second = (word_stem(t.lower_) in self._parts for t in doc)
                if first != second:  # "dry mouth" (a quality, then the part) or "scalp tenderness" (the part first)
                    part, quality = (doc[1].lower_, doc[0].lower_) if second else (doc[0].lower_, doc[1].lower_)
                    places = self._members.get(word_stem(part), frozenset())
                    forms = [*_said_of(part, quality),
                             *(f for p in sorted(places) for f in _said_of(p, quality, few=True))]
                    predicative.add(label, [_stemmed(nlp.make_doc(f)) for f in forms])
                    anaphoric = f"A{i}"
                    keys[anaphoric] = key
                    self._anaphoric[anaphoric] = places | {word_stem(part)}
                    predicative.add(anaphoric, [_stemmed(nlp.make_doc(f"{p} {quality}")) for p in _PARTS_PRONOUNS])
            if (done := _inability_of(doc)) is not None:  # "poor concentration": "I can't concentrate"
                sensed = f"S{i}"  # "trouble hearing": "I couldn't hear a thing", unless a clause follows
                inability = sensed if word_stem(done) in _PERCEIVING else label
                keys[inability] = key
                predicative.add(inability, [_stemmed(nlp.make_doc(f"{m} {done}")) for m in _INABILITY])
            if (stimulus := _intolerance_of(doc)) is not None:  # "light hypersensitivity": "I can't stand light"
                predicative.add(label, [_stemmed(nlp.make_doc(f"{m} {d}{stimulus}")) for m in _INTOLERANT
                                        for d in _STIMULUS_DETERMINERS])
            if (done := _painful_action(doc)) is not None:  # "painful swallowing": "it hurts when I swallow"
                predicative.add(label, [_stemmed(nlp.make_doc(f"{p} {w} {done}")) for p in _PAIN_SAID
                                        for w in _WHEN_DOING])
        return nlp, (exact, inflected, linked, predicative), keys

    def find(self, text: str, named_before: Iterable[str] = ()) -> tuple[list[Found], list[str]]:
        """The matches in ``text`` and its sentences (as written). A phrase matches as written or inflected ("heart
        racing" finds "my heart races", "throw up" finds "I've thrown up"): the pipeline has no lemmatizer (no model
        can be downloaded here), so both sides are compared through :func:`word_stem`. ``named_before``: the body
        parts the conversation was last about, which an "it" or a "they" at the start may stand for."""
        from spacy.tokens import Span
        from spacy.util import filter_spans

        if not text.strip():
            return [], []
        nlp, (exact, inflected, linked, predicative), keys = self._pipeline
        doc = nlp.make_doc(text)
        for name, proc in nlp.pipeline:
            if name == "medspacy_context":
                norms = [t.norm_ for t in doc]
                found = [*exact(doc), *(m for m in inflected(_stemmed(doc)) if not self._noun_of_adjective(doc, m))]
                without, denied = self._linked_matches(doc, linked)
                found += without
                said_of, denied_of = self._predicative_matches(doc, predicative)
                before = frozenset(word_stem(w) for p in named_before for w in p.lower().split())
                found += [m for m in said_of if self._antecedent_named(doc, m, before) and _perceived(doc, m)]
                denied |= denied_of
                for t, n in zip(doc, norms, strict=True):
                    t.norm_ = n  # ConText reads the tokens as written
                spanned = self._span_matches(doc)
                taken = {i for _, start, end in spanned for i in range(start, end)}
                found = [m for m in found if not taken & set(range(m[1], m[2]))] + spanned
                covered = {i for _, start, end in found for i in range(start, end)}
                found += [m for m in self._word_matches(doc) if m[1] not in covered]  # a listed phrase wins
                found = [m for m in found if not _dim(doc, m[1], m[2])]
                doc.ents = filter_spans([Span(doc, s, e, label=nlp.vocab.strings[k]) for k, s, e in found])
            doc = proc(doc)
        sents = list(doc.sents)
        out = []
        for ent in doc.ents:
            sent = next(i for i, s in enumerate(sents) if s.start <= ent.start < s.end)
            kinds = {m.category for m in ent._.modifiers if m.modifier_span[0] < ent.start or m.direction == "BACKWARD"}
            status = ("negative" if "NEGATED_EXISTENCE" in kinds or (ent.start, ent.end) in denied
                      else "unknown" if "POSSIBLE_EXISTENCE" in kinds else "positive")
            offset = sents[sent].start_char
            key = keys.get(ent.label_) or ent.label_.removeprefix(_WORD)
            out.append(Found(key, ent.text, status, bool(ent._.is_family), sent, ent.start, sents[sent].text,
                             ent.start_char - offset, ent.end_char - offset, bool(ent._.is_historical)))
        return out, [s.text for s in sents]

    def _noun_of_adjective(self, doc: Doc, match: tuple[int, int, int]) -> bool:
        """Whether an inflected match is the bare noun a one-word "-y" or "-ed" adjective of the lists comes from:
        "stuffy" (a blocked nose) is not "stuff", "puffy" not a "puff" of an inhaler, "brandy" not a "brand", "pooped"
        not a "poop"; the stems meet because :func:`word_stem` drops the ending, but the noun names something else.
        Its own forms ("stuffier", "bloating") and a noun the lists give of their own ("sweat", "lump") still match."""
        label, start, end = match
        name = doc.vocab.strings[label]
        if end - start != 1 or not name.startswith("P"):
            return False
        phrase = self._phrases[int(name[1:])][0].casefold()
        token = doc[start].lower_
        if " " not in phrase and phrase.endswith("ed") and token in (phrase[:-2], phrase[:-1]):
            return True  # "pooped" (worn out) is no "poop", "bushed" no "bush": the participle's bare stem is a noun
        return (" " not in phrase and phrase.endswith("y") and token != phrase
                and not token.startswith(phrase[:-1] + "i"))

    def _antecedent_named(self, doc: Doc, match: tuple[int, int, int], before: frozenset[str]) -> bool:
        """A quality said of "it" or "they" through a linking verb ("they're stiff", "it feels swollen") stands for
        its part only when the part, or a place of it, was named earlier in the text ("my knees ache. They're stiff")
        or is what the conversation was last about (``before``);
        every other match stands as found. Without the verb the pronoun is no part's ("it hurts to swallow": the
        swallowing hurts)."""
        label, start, end = match
        parts = self._anaphoric.get(doc.vocab.strings[label])
        return parts is None or (end - start > 2 and (bool(parts & before)
                                                       or any(word_stem(t.lower_) in parts for t in doc[:start])))

    @staticmethod
    def _linked_matches(doc: Doc, linked: PhraseMatcher) -> tuple[list[tuple[int, int, int]], set[tuple[int, int]]]:
        """Phrases said with a form of "be" or "have" between their words ("my throat's closing up" for "throat
        closing up", "my ankles have been swelling" for "ankle swelling"): matched on the text without those words,
        each match spanning the words as written. Patients put the verb in; the lists are written without it. A
        "not" among the words left out ("my ankle isn't swelling") sits inside the match, where ConText cannot read
        it as a cue: those matches are returned apart, denied. ``linked``: the phrases without those words, stemmed
        (a listed "throat is closing" meets "my throat's closing"); reads the stems :func:`_stemmed` set on ``doc``."""
        return _matches_without(doc, _unlinked(doc), linked)

    @staticmethod
    def _predicative_matches(doc: Doc, predicative: PhraseMatcher) -> tuple[list[tuple[int, int, int]],
                                                                          set[tuple[int, int]]]:
        """A listed quality of a body part said of the part ("dry mouth": "my mouth has been really dry", "my joints
        feel stiff", "stiff in the joints", "tender on my scalp"): matched on the text without the linking verbs and
        degree words between them (:data:`_PREDICATIVE_SKIP`), each match spanning the words as written. Only a
        two-word phrase with one body part, the other word its quality: "back pain" is never read from "the pain is
        back" (a part said first in the phrase is only read after its quality: "pain in my back"). A "not" among the
        words left out ("my mouth isn't dry") denies the match, as in :meth:`_linked_matches`."""
        keep = [t.i for t in doc if not (t.lower_ in _PREDICATIVE_SKIP or (
            t.lower_ in _LINK_NEGATIONS and t.i > 0 and doc[t.i - 1].lower_ in _PREDICATIVE_SKIP))]
        return _matches_without(doc, keep, predicative)

    def _span_matches(self, doc: Doc) -> list[tuple[int, int, int]]:
        """``(label, start, end)`` of each span the ``spans`` function finds, labelled ``W:<key>``."""
        if self._spans is None:
            return []
        out = []
        for start, end, key in self._spans(doc.text):
            if (span := doc.char_span(start, end, alignment_mode="expand")) is not None:
                out.append((doc.vocab.strings.add(_WORD + key), span.start, span.end))
        return out

    def _word_matches(self, doc: Doc) -> list[tuple[int, int, int]]:
        """``(label, start, end)`` of each token the ``words`` function gives a key, labelled ``W:<key>``."""
        if self._words is None:
            return []
        out = []
        for t in doc:
            if (key := self._words(t.lower_)) is not None:
                out.append((doc.vocab.strings.add(_WORD + key), t.i, t.i + 1))
        return out


_FAINT_BY = frozenset("""i i'd i'll you he she we they it'd to would could might may will can 'd 'll did do does
feel feels felt feeling""".split())
"""What "faint" follows when a person faints or feels faint ("I faint", "going to faint", "I felt faint")."""
_GOING = frozenset("go goes going went gone".split())
_PERSONS = frozenset("i you he she we they".split())
_SKIPPED = frozenset("""really very quite so bit little slightly all sometimes often always just nearly almost then
suddenly completely totally had has have 've 's was were is am been""".split())
_NOUN_FOLLOWERS = frozenset("""at in on and or but with when while after before last yesterday today earlier this
that then once twice""".split())


def _dim(doc: Doc, start: int, end: int) -> bool:
    """Whether a match is the adjective "faint" (dim, weak: "a faint rash", "the sound has gone faint", "her voice
    sounds faint"), not a person fainting or feeling faint: "faint" names an event only after a person, a modal or a
    verb of feeling ("I faint", "going to faint", "I went faint", "I felt faint"), or as a noun ("I had a faint at
    work"). Read for every phrase list (the NLU's lexicon and the red-flag phrases), which match "faint" inflected."""
    if end - start != 1 or doc[start].lower_ != "faint":
        return False
    i = start - 1
    while i >= 0 and doc[i].lower_ in _SKIPPED:
        i -= 1
    before = doc[i].lower_ if i >= 0 else ""
    if before in _FAINT_BY:
        return False
    if before in _GOING:  # "I went faint", not "the sound has gone faint"
        j = i - 1
        while j >= 0 and doc[j].lower_ in _SKIPPED:
            j -= 1
        return not (j >= 0 and doc[j].lower_ in _PERSONS)
    if before in ("a", "the", "one", "another", "this", "that"):  # "a faint at work" names one; "a faint rash" not
        after = doc[start + 1] if start + 1 < len(doc) else None
        return after is not None and after.is_alpha and after.lower_ not in _NOUN_FOLLOWERS
    return before != ""  # "Faint, then ..." opens with it; a noun or an adjective before ("sounds faint") is dimness


_WORD = "W:"
_PARTS_PRONOUNS = ("it", "they", "them")
"""What stands for a body part named before ("they're stiff", "it's gone all swollen"): :meth:`PhraseFinder.
_antecedent_named`."""


def _said_of(part: str, quality: str, few: bool = False) -> list[str]:
    """The ways a quality is said of a part, with the words between left out (:data:`_PREDICATIVE_SKIP`): "stiff in
    the joints", "joints ... stiff" ("my tongue has gone all swollen"). ``few``: the commonest only ("knees ... stiff",
    "stiff in my knees"), for the places that belong to a listed part: every form for each of them had made the
    NLU's matcher take 6 s instead of 4 to build, past a turn's deadline in a fresh process."""
    if few:
        return [f"{part} {quality}", *(f"{quality} in {d}{part}" for d in ("", "my ", "the ", "both "))]
    return [*(f"{quality} {p} {part}" for p in _PART_PREPOSITIONS),
            *(f"{quality} {p} {d} {part}" for p in _PART_PREPOSITIONS for d in _PART_DETERMINERS), f"{part} {quality}"]


_LINK_NEGATIONS = frozenset({"not", "n't", "n’t"})

_LINKING = frozenset({"is", "are", "was", "were", "'s", "’s", "'re", "’re", "has", "have", "had", "'ve", "’ve",
                      "been", "being"})
"""The words a patient puts between the words of a listed phrase ("my throat's closing", "my legs have been
swelling"): forms of "be" and "have", and a "not" after one of them ("isn't"; :meth:`PhraseFinder._linked_matches`)."""
_PREDICATIVE_SKIP = _LINKING | frozenset({
    "feel", "feels", "felt", "feeling", "get", "gets", "got", "getting", "gone", "go", "goes", "going", "went",
    "seem", "seems", "seemed", "look", "looks", "looked", "become", "becomes", "became", "does", "do", "did",
    "really", "very", "so", "quite", "pretty", "too", "always", "constantly", "terribly", "awfully", "extremely",
    "incredibly", "all", "a", "bit", "little", "kind", "sort", "of", "still", "also", "just", "more", "and", "lot",
    "lots", "much", "far", "even", "way"})
"""What a patient puts between a body part and the quality said of it ("my mouth has been really dry", "my joints
feel a bit stiff"): linking verbs, degree words and a "not" after them (which denies; :meth:`PhraseFinder.
_predicative_matches`)."""
_DIFFICULTY = frozenset({"poor", "difficulty", "difficulties", "trouble", "problems", "problem", "lack", "reduced",
                         "impaired", "decreased", "inability", "unable"})
_INABILITY = ("can't", "cannot", "can not", "couldn't", "could not", "unable to", "struggle to", "struggling to",
              "struggled to", "hard to", "difficult to")
"""A difficulty named as a noun ("poor concentration", "difficulty swallowing") is said as an inability to do it ("I
just can't concentrate", "I'm struggling to swallow"): :func:`_inability_of`."""


def _inability_of(doc: Doc) -> str | None:
    """The one thing a listed difficulty is about ("concentration" of "poor concentration", "swallowing" of
    "difficulty with swallowing"), compared by its stem with the verb a patient uses; None for other phrases."""
    words = [t.lower_ for t in doc]
    if len(words) < 2 or words[0] not in _DIFFICULTY:
        return None
    rest = words[1:]
    if rest[0] in ("of", "with", "in", "to") and len(rest) == 2:
        rest = rest[1:]
    done = rest[0] if len(rest) == 1 and rest[0].isalpha() and len(rest[0]) > 3 else None
    return None if done is None or word_stem(done) in {word_stem(w) for w in _SAYING} else done


def _painful_action(doc: Doc) -> str | None:
    """The action a listed pain on doing it is about ("swallowing" of "painful swallowing", "urination" of "pain on
    urination"), compared by its stem with the verb a patient uses; None for other phrases."""
    words = [t.lower_ for t in doc]
    if len(words) < 2 or words[0] not in ("painful", "pain"):
        return None
    rest = words[1:]
    if rest[0] in ("on", "when", "with", "during", "while") and len(rest) == 2:
        rest = rest[1:]
    return rest[0] if len(rest) == 1 and rest[0].isalpha() and rest[0].endswith(("ing", "ation")) else None


def _intolerance_of(doc: Doc) -> str | None:
    """What a listed intolerance is of ("light" of "light hypersensitivity", "cold" of "cold intolerance"); None for
    other phrases."""
    words = [t.lower_ for t in doc]
    if len(words) != 2 or not words[0].isalpha() or words[1] not in _INTOLERANCE:
        return None
    return words[0]


_INTOLERANCE = frozenset({"intolerance", "sensitivity", "hypersensitivity"})
_INTOLERANT = ("can't stand", "cannot stand", "can't bear", "cannot bear", "can't tolerate", "cannot tolerate",
               "can't take", "can't cope with", "sensitive to", "bothered by", "hurt by")
_STIMULUS_DETERMINERS = ("", "the ", "any ", "bright ", "the bright ")
"""An intolerance said as what the patient cannot stand ("I can't stand the light", "I can't bear the cold",
"sensitive to bright light"): :func:`_intolerance_of`."""


_PAIN_SAID = ("hurts", "hurt", "hurting", "painful", "sore", "agony", "stings", "burns", "kills", "killing")
_WHEN_DOING = ("to", "when i", "whenever i", "every time i", "each time i", "if i", "as i", "while i")
"""A pain on doing something, said as what hurts when it is done ("it really hurts when I swallow", "it's agony
whenever I swallow", "it stings as I urinate"): :func:`_painful_action`."""


_SAYING = ("remembering", "recalling", "thinking", "saying", "telling", "understanding", "believing", "imagining")
"""Verbs whose "can't" is a way of speaking ("I can't remember any injuries", "I can't think why"): a listed "trouble
remembering" is not read from them (an OSCE patient's "No, I can't remember any injuries like that" had recorded a
memory impairment)."""
_PERCEIVING = frozenset({"see", "hear"})
"""Senses whose "can't" is a loss of the sense ("I couldn't hear a thing out of my ear", "I can't see properly") or a
way of speaking ("I can't see why", "I couldn't hear what he said"), told apart by what follows (:func:`_perceived`)."""
_SPOKEN_OBJECTS = frozenset({"why", "what", "how", "that", "if", "whether", "where", "when", "who", "which", "you",
                             "him", "her", "them", "it", "this", "anyone", "anybody", "myself", "yourself", "any"})
"""What follows a sense verb said as a way of speaking: a clause ("why", "what he said", "if it's worse"), a person
("you"), or something already named ("it"): "I can't see why", "I couldn't hear you"."""


def _perceived(doc: Doc, match: tuple[int, int, int]) -> bool:
    """A "can't hear" or "can't see" match (label ``S...``) is a loss of the sense unless a clause, a person or
    something named follows it (:data:`_SPOKEN_OBJECTS`); every other match stands as found."""
    label, _, end = match
    if not doc.vocab.strings[label].startswith("S"):
        return True
    return end >= len(doc) or doc[end].lower_ not in _SPOKEN_OBJECTS


_PART_PREPOSITIONS = ("in", "on", "at", "around", "behind", "across")
_PART_DETERMINERS = ("my", "the", "both", "his", "her", "their", "your", "our", "one")
"""A quality said before its part: "stiff in the joints", "tender on my scalp"."""
_IRREGULAR = {"thrown": "throw", "threw": "throw", "felt": "feel", "lost": "lose", "bled": "bleed", "fell": "fall",
              "fallen": "fall", "woke": "wake", "woken": "wake", "broke": "break", "broken": "break",
              "swollen": "swell", "spat": "spit", "brought": "bring", "came": "come", "went": "go", "gone": "go",
              "ate": "eat", "eaten": "eat", "slept": "sleep", "kept": "keep", "began": "begin", "begun": "begin",
              "sweated": "sweat", "shook": "shake", "shaken": "shake", "passes": "pass", "passed": "pass",
              # derived words whose meaning left the root's: sleepy (drowsy) is not sleep, bloody (British "very")
              # not blood, and "I can't sleep" is no drowsiness
              "sleepy": "sleepy", "bloody": "bloody"}


_EDGE_START = re.compile(r"^(?:\s*(?:and|but|so|or|then|also|plus|because|cos|as)\b[\s,]*)+", re.I)
_EDGE_END = re.compile(r"(?:\s+(?:with it|with that|as well|too|though|at all|either|and all|or anything|or something|"
                       r"really|like))+\W*$|\W+$", re.I)


def clause_core(clause: str) -> str:
    """A clause without the words at its edges that tie it to its neighbours ("and ... with it."): they carry no
    meaning of their own and pull the encoder away from what the clause says (0.71 -> 0.61 from "struggle to
    breathe" for "and I'm really struggling to get my breath with it."). The NLU's second stage compares this by
    meaning; the red-flag screen does not (tried: on the OSCE dev slice it raised 15 more flags, mostly "trouble
    breathing" read as severe breathlessness, and no more development statements)."""
    return _EDGE_END.sub("", _EDGE_START.sub("", clause)).strip() or clause


def looks_plural(word: str) -> bool:
    """Whether an English word reads as a plural: it ends in -s, but not in -ss, -us or -is ("weakness", "tinnitus",
    "pelvis" are singular). Spelling alone decides; a lexicon that knows a word's number ("diabetes") says so."""
    return word.endswith("s") and not word.endswith(("ss", "us", "is"))


def singular(phrase: str) -> str:
    """``phrase`` with a plural last word made singular by dropping its -s ("my sister gets migraines" names the
    condition "migraine"). Unlike :func:`word_stem`, which cuts every inflection off a word so a lexicon phrase
    meets "racing" and "raced" in the matcher, this keeps the phrase readable and changes number only: its result
    is looked up among lexicon phrases, and names are shown or spelt in the other number from it."""
    return phrase[:-1] if looks_plural(phrase) else phrase


def word_stem(word: str) -> str:
    """A crude English stem ("races", "racing", "raced" -> "rac"; "thrown" -> "throw"; "itchy" -> "itch"; a "-ness"
    noun meets its adjective: "drowsiness" -> "drows" as "drowsy"): enough
    to let a lexicon phrase match its inflections. Short words are left alone, so no two everyday words of four
    letters or fewer meet."""
    w = word.lower()
    if w in _IRREGULAR:
        return _IRREGULAR[w]
    if not w.isalpha():
        return w
    if len(w) <= 4:
        return w[:-1] if len(w) == 4 and w.endswith("e") else w  # "race" meets "races"; "fits" stays
    if w.endswith("iness") and len(w) > 7:  # "drowsiness" meets "drowsy", "dizziness" "dizzy"
        return word_stem(w[:-5] + "y")
    if w.endswith("ness") and len(w) > 7:  # "numbness" meets "numb", "tiredness" "tired"
        return word_stem(w[:-4])
    if w.endswith("ier") and len(w) > 5:  # "heavier" meets "heavy", "itchier" "itchy"
        return word_stem(w[:-3] + "y")
    if w.endswith(("ies", "ied")):
        w = w[:-3] + "y"
    elif w.endswith("ing") and len(w) > 5:
        w = w[:-3]
        w = w[:-1] if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "aeioulsz" else w
    elif w.endswith("ation") and len(w) > 7:  # "constipation" meets "constipated", "urination" "urinate"
        w = w[:-3]
    elif w.endswith("ed") and len(w) > 4:
        w = w[:-2]
        w = w[:-1] if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "aeioulsz" else w
    elif w.endswith(("ches", "shes", "sses", "xes", "zes")):
        w = w[:-2]
    elif looks_plural(w) or (
            w.endswith("y") and not w.endswith(("ly", "ey", "ay", "oy")) and not re.search(r"[aeiou]ry$", w)):
        w = w[:-1]  # not after a vowel and "r": "weary" is no "wear", "scary" no "scar"
    return w[:-1] if len(w) > 3 and w.endswith("e") else w


def _matches_without(doc: Doc, keep: list[int], matcher: PhraseMatcher) -> tuple[list[tuple[int, int, int]],
                                                                               set[tuple[int, int]]]:
    """``matcher``'s matches on ``doc`` read with only the tokens ``keep`` (the words a patient puts between a
    phrase's words left out), each spanning the words as written, and those with a "not" among the words left out
    (denied: ConText cannot read a cue inside a match). Reads the stems :func:`_stemmed` set on ``doc``."""
    from spacy.tokens import Doc as _Doc

    kept = set(keep)
    view = _Doc(doc.vocab, words=[doc[i].text for i in keep], spaces=[True] * len(keep))
    for t, i in zip(view, keep, strict=True):
        t.norm_ = doc[i].norm_
    out, denied = [], set()
    for label, start, end in matcher(view):
        first, last = keep[start], keep[end - 1] + 1
        out.append((label, first, last))
        if any(doc[i].lower_ in _LINK_NEGATIONS for i in range(first, last) if i not in kept):
            denied.add((first, last))
    return out, denied


def _unlinked(doc: Doc) -> list[int]:
    """The indexes of ``doc``'s tokens but the forms of "be" and "have" inside it, and a "not" after one of them
    ("isn't", "haven't been"; a "not" after another word stays: "can't sleep" is the complaint)."""
    return [t.i for t in doc if not (0 < t.i < len(doc) - 1 and (t.lower_ in _LINKING or (
        t.lower_ in _LINK_NEGATIONS and doc[t.i - 1].lower_ in _LINKING)))]


def _stemmed(doc: Doc) -> Doc:
    """``doc`` with each token's NORM set to its stem (what the inflection matcher compares)."""
    for t in doc:
        t.norm_ = word_stem(t.lower_)
    return doc


def context_pipeline() -> Language:
    """A blank English pipeline with a sentencizer and medspaCy ConText (its clinical rules plus
    :func:`conversation_rules`). Built once per caller (about 3 s)."""
    import medspacy  # noqa: F401  (registers the medspacy_* factories and the span extensions)
    import spacy
    from loguru import logger

    logger.disable("PyRuSH")
    nlp = spacy.blank("en")
    # spaCy keeps a single letter and its full stop together as an initial ("D."); patients end sentences on one
    # ("I only take vitamin D.", "I had hepatitis B."), and the phrase "vitamin d" must meet the letter
    tokenizer: Any = nlp.tokenizer
    tokenizer.rules = {k: v for k, v in tokenizer.rules.items() if not (len(k) == 2 and k[1] == "." and k[0].isalpha())}
    tokenizer.suffix_search = spacy.util.compile_suffix_regex(
        [*(nlp.Defaults.suffixes or ()), r"(?<=\b[A-Za-z])\."]).search
    nlp.add_pipe("sentencizer")
    context: Any = nlp.add_pipe("medspacy_context")
    context.add(conversation_rules())
    # medspaCy lets a TERMINATE cue cut a scope only when the two scopes "overlap", and its overlap test is false when
    # the cue's scope (the whole sentence) contains the other (a FORWARD cue with max_scope): "I don't smoke, and I
    # have a glass of wine" kept the wine denied. A one-token window around each TERMINATE cue makes it lie inside
    # the scopes it should cut.
    for rule in context.rules:
        if rule.direction == "TERMINATE" and rule.max_scope is None:
            rule.max_scope = 1
        if rule.category == "NEGATED_EXISTENCE" and rule.direction == "FORWARD" and rule.on_modifies is None:
            rule.on_modifies = _no_clause_between
        if rule.category in ("NEGATED_EXISTENCE", "POSSIBLE_EXISTENCE"):
            rule.terminated_by.add(DENIAL_END)
        if rule.category == "FAMILY" and rule.direction == "FORWARD" and rule.on_modifies is None:
            rule.on_modifies = _not_past_a_new_when
    return nlp


_NEW_WHEN = re.compile(r"\b(?:when|while|whilst)\s+(?:this|the|a|an|my|i|i'm|i've|i’m|suddenly|all|out|it|it's|it’s)\b")


def _not_past_a_new_when(target: Any, modifier: Any, between: Any) -> bool:
    """ConText's ``on_modifies`` for a relative: a new clause of time whose subject is not the relative ends their
    scope ("I was out with my partner when this headache exploded", "my son was playing when the pain started"), while
    "my dad had a stroke when he was sixty" stays his. A callback, not a TERMINATE cue (which would end the denials'
    and the past's scopes too: "no blood when I go to the loo")."""
    if _NEW_WHEN.search(between.text.lower()):
        return False
    # a relative named as a time, a reason or a company, after a preposition, owns nothing past a break ("we keep it
    # on the top shelf since the grandchildren, and out of nowhere came a ripping pain", "back from my granddaughter's
    # christening, and this band came round my chest"): they are the subject of no clause
    before = [t.lower_ for t in modifier.doc[max(modifier.start - 2, 0):modifier.start]]
    if any(w in _TOLD_TO for w in before):
        return False  # the patient telling a relative ("I keep telling my mates I'll ..."): the listener owns nothing
    return not (any(w in _RELATIVE_AS_CIRCUMSTANCE for w in before) and _BREAK_BETWEEN.search(between.text))


_RELATIVE_AS_CIRCUMSTANCE = frozenset("since for to at with from after before about because of".split())
_TOLD_TO = frozenset("tell tells telling told warn warned warning asked asking ask texted texting messaged".split())
_BREAK_BETWEEN = re.compile(r"[,;.!?]|\band\b|\bbut\b")


_CLAUSE_BETWEEN = re.compile(
    r"(?:,|;|\band\b|\bbut\b)\s+(?:and\s+)?(?:the|my|his|her|their|our)\s+[a-z]+(?:\s+[a-z]+)?"
    rf"(?:\s+(?:{'|'.join(CLAUSE_VERBS)})\b|(?:'s|’s)\b)"
    r"|\b(?:when|whenever|while|because|cos|cause|until|till)\s+(?:i|i'm|i've|it|it's|he|she|they|we|there|my)\b")
"""A clause of its own between a denial and what follows it: a thing named as a new subject ("no cough, and the
pain is worse at night": the pain is had), or a clause of time or cause ("no blood when I cough": the cough is)."""
_SUBJECT_BEFORE = re.compile(r"(?:,|;|\band\b|\bbut\b)\s+(?:and\s+)?(?:the|my|his|her|their|our)(?:\s+[a-z]+){0,2}\s*$")
"""What a denial's scope reaches ends on a determiner after a break: the thing named may be a new clause's subject."""


def _no_clause_between(target: Any, modifier: Any, between: Any) -> bool:
    """ConText's ``on_modifies`` for the denials: a denial reaches a concept named only with no clause of its own
    between them (:data:`_CLAUSE_BETWEEN`), nor when the concept is itself a new clause's subject ("No fever, I haven't
    been sick, and the cramps are only mild": the cramps are had). A callback on the denial, not a TERMINATE cue:
    medspaCy lets a TERMINATE cue end every cue's scope (a relative's, a past one's) and drops a cue it overlaps
    ("and my brother are both diabetic" had lost the brother). The clause reader's words (label ``W``) keep the
    plain scope: a clause is judged denied by its words as a whole ("No blood when I go to the loo")."""
    if target.label_ == "W":
        return True
    text = between.text.lower()
    if _CLAUSE_BETWEEN.search(text):
        return False
    after = [t.lower_ for t in target.doc[target.end:target.end + 2]]
    return not (_SUBJECT_BEFORE.search(text) and after and (after[0] in CLAUSE_VERBS or (
        len(after) > 1 and after[0] not in (",", ".") and after[1] in CLAUSE_VERBS)))


@dataclass(frozen=True)
class Clause:
    """A stretch of a patient turn (a clause, two neighbouring clauses, or a sentence) with the ConText reading of
    its content words: ``negated`` / ``uncertain`` / ``family`` / ``historical`` when that cue governs it."""

    text: str
    negated: bool
    uncertain: bool
    family: bool
    historical: bool
    words: int  # content words
    denies: bool = False  # some content word is in a negation's scope ("no thoughts of harming myself, if ...")
    affirmed: str = ""  # the clause without its denied words and their negation cues ("My arm's not weak, it just
    # aches with the pain" -> "My arm's, it just aches with the pain"): what it says is so


# Function words and ConText cue words: they carry no content of their own, so a clause's status is read from the
# others. Only what a cue modifies counts.
_FUNCTION = frozenset("""a an the and or but so to of in on at for with by from up down out off over into onto about as
is am are was were be been being do does did have has had having i i'm i've i'd me my mine myself you your it its it's
this that these those there here he she they them his her their we us our not no never nothing none don't didn't
doesn't haven't hasn't isn't wasn't weren't aren't can't cannot couldn't won't wouldn't just only really very quite
bit little lot some any also too then than if when while because like well oh um uh er yeah yes okay ok maybe
perhaps probably think guess sure know kind sort might""".split())
_FRAGMENT_TOKENS = 6
"""At most this many tokens (its full stop one of them) in each sentence of a turn told in fragments."""
_CLAUSE_CUT = frozenset({",", ";", ":", "and", "or", "but", "so", "because", "then", "although", "though", "while",
                         "plus", "whereas", "which", "...", "…", "—", "–"})
"""Words and marks between two clauses; an ellipsis or a dash is a pause between two (one inside a clause is closed
up before: ``agent.core.speech_repair``)."""


def _joins_numbers(token: Any) -> bool:
    """Whether a joining word stands between two numbers ("four or five times a night", "between 3 and 4"): a spoken
    range, one amount, not two clauses (cut there, "five times a night" had been read as a second complaint)."""
    doc = token.doc
    return (token.lower_ in ("or", "and") and 0 < token.i < len(doc) - 1
            and doc[token.i - 1].like_num and doc[token.i + 1].like_num)


class ClauseReader:
    """Splits a patient turn into clauses and reads each one's ConText status, for matchers that compare whole
    clauses rather than phrases (the red-flag screen, the NLU's second stage).

    Every content token is made a ConText target, so the same rules that give a lexicon mention its status give a
    clause its status: a clause is negated when most of its content words are in a negation's scope, about a
    relative or the past likewise, and uncertain when a third of them are in a hedge's scope."""

    def __init__(self) -> None:
        self._recent: dict[tuple[str, int], list[Clause]] = {}
        self._lock = threading.Lock()  # one reader per process, shared by the interviews' threads

    @cached_property
    def _nlp(self) -> Language:
        return context_pipeline()

    def clauses(self, text: str, max_words: int = 40) -> list[Clause]:
        """Each clause, each pair of neighbouring clauses of a sentence, each sentence, and each pair of neighbouring
        short sentences ("My chest is tight. It goes down my arm."), with at least two content words. The last turns
        read are kept: the NLU's second stage and the red-flag screen read the same turn."""
        key = (text, max_words)
        with self._lock:
            if (hit := self._recent.get(key)) is not None:
                return hit
        out = self._clauses(text, max_words)
        with self._lock:
            self._recent[key] = out
            while len(self._recent) > 64:
                self._recent.pop(next(iter(self._recent)))
        return out

    def _clauses(self, text: str, max_words: int) -> list[Clause]:
        from spacy.tokens import Span

        if not text.strip():
            return []
        nlp = self._nlp
        doc = nlp.make_doc(text)
        doc = nlp.get_pipe("sentencizer")(doc)
        content = [t for t in doc if t.is_alpha and t.lower_ not in _FUNCTION and len(t) > 1]
        doc.ents = [Span(doc, t.i, t.i + 1, label="W") for t in content]
        doc = nlp.get_pipe("medspacy_context")(doc)
        state: dict[int, set[str]] = {}
        cues: set[int] = set()  # the words of a cue say the status, not the content ("seems normal", "not")
        negation_cues: set[int] = set()
        for ent in doc.ents:
            state[ent.start] = {m.category for m in ent._.modifiers}
            for m in ent._.modifiers:
                cues.update(range(*m.modifier_span))
                if m.category == "NEGATED_EXISTENCE":
                    negation_cues.update(range(*m.modifier_span))
            # a negation inside an "if" is no denial ("they'd be fine if I wasn't around" says what it says); an "if"
            # after the negation is an aside ("I've never thought of hurting myself, if that's what you're asking")
            ifs = [m.modifier_span[0] for m in ent._.modifiers if m.category == "HYPOTHETICAL"]
            nots = [m.modifier_span[0] for m in ent._.modifiers if m.category == "NEGATED_EXISTENCE"]
            if ifs and nots and min(ifs) < max(nots):
                state[ent.start].discard("NEGATED_EXISTENCE")
        windows: list[tuple[int, int]] = []
        sents = list(doc.sents)
        for si, sent in enumerate(sents):
            cuts = [sent.start] + [t.i for t in sent if t.lower_ in _CLAUSE_CUT and t.i > sent.start
                                   and not _joins_numbers(t)] + [sent.end]
            parts = [(a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
            windows += parts
            windows += [(parts[i][0], parts[i + 1][1]) for i in range(len(parts) - 1)]
            if len(parts) > 2:
                windows.append((sent.start, sent.end))
            if si + 1 < len(sents) and len(sent) + len(sents[si + 1]) <= max_words:
                windows.append((sent.start, sents[si + 1].end))
        # terse speech tells one thing in fragments ("Leg. Swollen. Painful. Calf. Since the flight."): the turn
        # read whole, as well as each fragment and pair
        if len(sents) > 2 and all(len(sent) <= _FRAGMENT_TOKENS for sent in sents):
            windows.append((sents[0].start, sents[-1].end))
        bounds = [(sent.start, sent.end) for sent in sents]
        out, seen = [], set()
        for a, b in windows:
            span = doc[a:b]
            every = [state[t.i] for t in span if t.i in state]
            if len(every) < 2 or b - a > max_words * 2:
                continue
            # the status is read from the words the cues speak of: "her breathing seems normal" is denied, though
            # "seems" and "normal" (the cue) are two of its three content words
            words = [state[t.i] for t in span if t.i in state and t.i not in cues] or every
            clause_text = span.text.strip(" ,;:")
            if clause_text.lower() in seen:
                continue
            seen.add(clause_text.lower())
            n = len(every)

            def share(cat: str, ws: list[Any] = words) -> float:
                return sum(1 for w in ws if cat in w) / len(ws)

            negated = share("NEGATED_EXISTENCE") >= 0.5
            # Two sentences read together are denied when either one is: "No, I haven't had any chest pain. On the
            # left side anyway." says nothing of a pain on the left, though most of its words are outside the "no".
            for sa, sb in bounds:
                if a <= sa and sb <= b and (sa, sb) != (a, b):
                    part = [state[t] for t in range(sa, sb) if t in state and t not in cues]
                    if part and sum("NEGATED_EXISTENCE" in w for w in part) / len(part) >= 0.5:
                        negated = True
            denied = {t.i for t in span if "NEGATED_EXISTENCE" in state.get(t.i, ())} | negation_cues
            affirmed = "".join(t.text_with_ws for t in span if t.i not in denied).strip(" ,;:")
            out.append(Clause(clause_text, negated, share("POSSIBLE_EXISTENCE") >= 1 / 3,
                              share("FAMILY") >= 0.5, share("HISTORICAL") >= 0.5, n,
                              denies=negated or share("NEGATED_EXISTENCE") > 0, affirmed=affirmed))
        return out


@lru_cache(maxsize=1)
def default_clause_reader() -> ClauseReader:
    """One clause reader per process (its ConText pipeline takes about 3 s to build)."""
    return ClauseReader()


# --------------------------------------------------------------------------- a guardian speaking for the patient

# Who brings a patient and speaks for them (MediTOD's guide: "the patient is an infant (or is unable to communicate)
# and is accompanied by its guardian ... you must label the utterance from the perspective of the patient").
# Friends and colleagues are left out: they are sick contacts more often than patients brought in.
GUARDED = frozenset("""mum mom mother mam dad father son daughter wife husband partner baby child kid boy girl
grandma grandmother granny gran nan nana grandad grandfather grandpa brother sister toddler lad lass grandson
granddaughter boyfriend girlfriend fiance fiancee roommate flatmate housemate friend""".split())
"""Whom a speaker may speak for: kin, a partner, and those who share a home or a night out (a flatmate who finds
someone confused, a friend who saw the fall: the NHS's "call 999" pages are written for such bystanders too)."""
_FEMALE_KIN = ("mum mom mother mam daughter wife girl grandma grandmother granny gran nan nana sister lass "
               "granddaughter girlfriend")
GUARDED_SEX = {**dict.fromkeys(_FEMALE_KIN.split(), "female"),
               **dict.fromkeys("dad father son husband boy grandad grandfather grandpa brother lad grandson boyfriend "
                               "he".split(), "male"), "she": "female"}
"""The sex a relation word tells of the relative a guardian speaks for: MediTOD's guide records it ("my son, he's 2
1/2 months old": the patient is male); a partner, a baby or a child tells none."""
# Relatives whose mention after the first makes a turn a family history; a spouse or child may well be mentioned
# in a guardian's report ("today he didn't recognise our daughter").
_BLOOD_RELATIVES = frozenset("""mum mom mother dad father brother sister grandma grandmother grandad grandfather nan
granny grandpa aunt uncle cousin""".split())
_FILLERS = frozenset("""um uh er erm well so hi hello yes yeah ok okay doctor doc right it's its it is this madam sir
ma'am nurse please sorry excuse me good morning afternoon evening""".split())
"""Words before the relative a guardian opens with: fillers, and the "it's" of "It's my wee girl, she's ..."."""
_TIME_LEAD_IN = frozenset("""since from over for in during this last past today yesterday tonight overnight earlier
morning afternoon evening night out of nowhere suddenly all a sudden just about around an hour hours ago few couple
days week weeks the breakfast lunch lunchtime dinner dinnertime tea teatime supper bedtime midnight monday tuesday
wednesday thursday friday saturday sunday weekend""".split())
"""Words of a time said before the relative a guardian speaks for ("Since this morning my grandad ...")."""
# A relative's past, not a present problem: "my dad had a heart attack at 55", "my mum died of a stroke".
_FAMILY_PAST = re.compile(r"\b(?:died|passed away|passed on|passed (?=in\b|last\b|recently\b|this\b)|"
                          r"at (?:the age of )?\d+|"
                          r"in (?:his|her) (?:\w+ties|teens)"
                          r"|years ago|(?<!the )last year|years back|used to|runs in|history of|when (?:he|she) was"
                          r"|for (?:many )?years|for ages"
                          r"|all (?:his|her) life|long[- ]standing)\b", re.I)
# The speaker's own complaint in the same turn ("my dad had one and I get chest pain"): then the speaker is the
# patient and the relative is family history.
_HERE_FOR_MYSELF_WORDS = (r"\b(?:here|came|come|coming|calling|ringing|in)\s+(?:today\s+|in\s+)?(?:about|for|with|"
                          r"because of|over)\s+(?:my\s+own|something\s+of\s+my\s+own|myself)\b")
"""The speaker saying they came about their own complaint ("... but I'm here about my own ingrown toenail")."""
_OWN_COMPLAINT = re.compile(_HERE_FOR_MYSELF_WORDS + r"|"
                            r"\bI(?:'ve| have| get| feel| keep| had| got|'m having| am having|'m getting)\b"
                            r"(?!\s+(?:just\s+|only\s+|recently\s+|now\s+)?(?:found|noticed|seen|heard|learned|learnt|"
                            r"discovered|been told|spotted|caught|realised|realized|brought|taken|come|had to bring|"
                            r"been (?:worried|looking after|caring|watching|keeping))\b)|\b(?:it's|it is) me\b|"
                            r"(?<=[,;]\s)(?:and\s+)?(?:now\s+)?my\s+(?:(?:both|left|right|own)\s+)?(?:eyes?|chest|throat|"
                            r"head|stomach|tummy|back|skin|legs?|arms?|ears?|nose|knees?|feet|hands?)\b|"
                            r"\b(?:and|now|but)\s+(?:now\s+)?(?:both\s+)?my\s+(?:(?:left|right|own)\s+)?(?:eyes?|chest|throat|"
                            r"head|stomach|tummy|back|skin|legs?|arms?|ears?|nose|knees?|feet|hands?)\b", re.I)
"""... or the speaker's own body after the relative's part ("my wife had conjunctivitis and now both my eyes are
sticky"): the relative's illness is the speaker's contact, the complaint the speaker's."""
# "My wife says I snore": the relative reports on the speaker, who is the patient (read in the opening clause: "Dad's
# got a fever, he thought I was his brother" is his confusion, no report on the speaker).
_REPORTS_ON_ME = re.compile(rf"\b(?:{'|'.join(sorted(REPORTING_VERBS))})\s+(?:that\s+)?"
                            r"(?:(?:the|a|some)\s+\w+\s+(?:of|on|in)\s+)?(?:I|I'm|I've|me|my)\b", re.I)
"""... or on a part of the speaker ("my wife noticed the whites of my eyes have gone yellow")."""
# A present problem or an acute episode, as a guardian tells it ("my son's got", "she's been", "he keeps", "this
# morning", "collapsed", "went stiff"); without one, "my mother has diabetes" and "my brother had a heart attack"
# are family history.
_PRESENT = re.compile(r"(?:'s|’s)\s+(?!a\b|an\b)\w+|\b(?:today|tonight|this (?:morning|afternoon|evening|week)|"
                      r"yesterday|last night|since|for the (?:past|last)|now|just|suddenly|keeps?|started|began|"
                      r"is|are|has been|have been|won't|can't|cannot|doesn't|isn't|hasn't|collapsed|blacked out|"
                      r"passed out|fainted|fell|went|woke|seems|looks|looked|couldn't|could not|wouldn't|would not|"
                      r"at (?:breakfast|lunch|lunchtime|dinner|dinnertime|tea|teatime|supper)|"
                      r"(?:minutes?|hours?|days?) ago|lasted\s+(?:\w+\s+){0,2}(?:seconds?|minutes?)|"
                      r"was\s+(?:shaking|jerking|twitching|fitting|convulsing|foaming|thrashing)|"
                      # an acute complaint had now ("my daughter has a high fever", "she's got spots"): a relative's
                      # illness of a lifetime is a condition ("my dad has diabetes"), never these
                      r"(?:has|have|has got|got)\s+(?:a\s+|an\s+|some\s+)?(?:(?:really|very|high|bad|terrible|"
                      r"awful|nasty|little|small|tiny|funny|strange|new|purple|red)\s+){0,2}(?:fever|temperature|"
                      r"temp|rash|spots|cough|vomiting|diarrh\w*|headache|earache|ear ache|tummy ache|stomach ache|"
                      r"sore throat|swelling|lump|bruis\w*|nosebleeds?|fits?|seizures?))\b",
                      re.I)
_POSSESSED = frozenset("""face head chest arm arms leg legs hand hands foot feet eye eyes neck back tummy stomach belly
skin lip lips tongue throat breathing speech words voice temperature sugar sugars blood heart wee urine poo knee
knees ankle ankles testicle testicles balls mouth nose ear ears chin jaw hip hips shoulder side vision sight
memory mind temp""".split())
_KIN_MODIFIERS = frozenset("""little young younger youngest old older oldest eldest elder middle baby teenage newborn
infant twin year years month months week weeks wee""".split())
"""Words a guardian puts between "my" and the relative ("my little girl", "my eldest son", "my 3-year-old daughter",
whose digits the word split drops): the relative is the word after them."""
_AGE_UNITS = frozenset("year years month months week weeks".split())
_KIN_MODIFIER = re.compile(
    rf"(?:(?:{'|'.join(sorted(_KIN_MODIFIERS - _AGE_UNITS))}|\d+[- ](?:year|month|week)s?[- ]old)\s+)*", re.I)
"""The same words in the text as written ("my 3-year-old daughter" keeps its digits there)."""
_HAVE_NEXT = frozenset("got gone been had started just suddenly always never also now still already".split())
_VERB_AFTER_NOUN = frozenset("is was has keeps seems gets got isn't hasn't wasn't".split())
"""A verb after the word that follows "X's": that word is a noun X owns ("my son's asthma is bad", "Dad's cough keeps
him up"), not what X is or has ("my son's been sick")."""


_GUARDIAN_FRAME = re.compile(
    r"^\W*(?:(?:hi|hello|yes|yeah|well|so|um|erm|doctor)\W+)*(?:(?:i'm|i am|i've|i have|we're|we are)\s+"
    r"(?:just\s+|only\s+)?(?:(?:calling|phoning|ringing|here|come(?: in)?|asking|worried|concerned|speaking)\s+)?"
    r"(?:about|for|with|on behalf of|because of)|(?:it's|it is)(?:\s+about)?"
    r"|(?:i've|i have|we've|we have)\s+(?:just\s+)?brought|(?:i'm|i am|i was|i|we're|we are)\s+(?:just\s+)?bringing"
    r"(?:\s+in)?)\s+(?=my\s)", re.I)
"""How a guardian introduces whom they speak for ("I'm calling about my mum, she's ...", "I'm here with my dad",
"It's my son, he's ...", "I've brought my gran in, she's ..." reads without it as "my son, he's ...")."""


_HEDGED_LEAD = re.compile(r"^\W*(?:(?!\bmy\b)[\w'’]+[\s,]+){1,8}?but\s+(?=my\s|(?:mum|mom|dad)(?:'s|’s)?\s)", re.I)
"""An apology or a hedge before the report ("Probably nothing, but my mum's speech went slurry", "Sorry to bother you,
but my son ..."): the report is what follows the "but"."""


def unframed(text: str) -> str:
    """``text`` without a guardian's introduction (:data:`_GUARDIAN_FRAME`); unchanged when it has none."""
    return _GUARDIAN_FRAME.sub("", text.replace("’", "'"), count=1)


_HERE_FOR_MYSELF = re.compile(_HERE_FOR_MYSELF_WORDS, re.I)


def here_for_myself(text: str) -> bool:
    """Whether the speaker says they came about their own complaint ("... but I'm here about my own ingrown toenail"):
    then a relative's illness told in the same opening is someone else's, not the patient's."""
    return _HERE_FOR_MYSELF.search(text) is not None


ANOTHER_EVENT = re.compile(
    r"(?:,|\band\b|\bbut\b)\s+(?:he|she|i|we|they)\s+(?:also\s+|only\s+|just\s+)?"
    r"(?!(?:started|began|first|noticed|felt|got|had|developed|woke|came|been|was|were|kept|found|realised|realized|"
    r"noted|saw|spotted|thought|think|said|says|told|reckon\w*|went|seemed|looked)\b)"
    r"(?:retired|moved|married|divorced|separated|emigrated|graduated|left|quit|bought|sold|flew|travelled|traveled|"
    r"returned|lost|buried|joined|finished|changed|stopped|gave|had\s+(?:a|the|his|her|my|our)\s+(?:baby|op|operation|"
    r"wedding)|\w+ed)\b", re.I)
"""A later clause with its own subject and an event verb of a life ("..., and he retired twenty years ago"): its time is
that event's, not the complaint's. Verbs that date a complaint ("and I noticed it a week ago") are not it."""


_PASSES_ON = re.compile(r"(?:he|she) (?:says|said|tells me|told me|is saying) (?:that )?(?:he|she|his|her)\b")


def proxy_subject(text: str, pronouns: bool = True) -> str | None:
    """The relative a speaker is speaking for, when the turn opens by telling that relative's present problem ("My
    son's had a fit", "Mum's gone all muddled since yesterday", "I'm calling about my mum, she's gone all muddled"),
    else None. A relative's past ("my dad had a heart attack at 55") or a turn that also tells the speaker's own
    complaint is family history, not a proxy report. ``pronouns``: a bare "he" or "she" opening may be a carer's
    ("His lips are going blue"): only in the interview's first words, where nobody has been named yet."""
    text = _HEDGED_LEAD.sub("", unframed(text), count=1)
    words = re.findall(r"[a-z']+", text.lower().replace("’", "'"))
    i = 0
    while i < len(words) and words[i] in _FILLERS:
        i += 1
    lead = i  # "Since this morning my grandad ...", "Out of nowhere today my wife ...": when, then who
    while lead < len(words) and lead - i < 8 and words[lead] in _TIME_LEAD_IN:
        lead += 1
    if lead < len(words) and (words[lead] in ("my", "our") or (lead > i and words[lead].removesuffix("'s") in GUARDED)):
        i = lead  # "... my grandad", or a bare kin word ("Since this morning Dad's been talking gibberish")
    if i < len(words) and words[i] in ("my", "our"):  # "our nan", "our little one": the family's
        i += 1
    while i + 1 < len(words) and words[i] in _KIN_MODIFIERS:
        i += 1
    if i >= len(words):
        return None
    head: str = words[i].removesuffix("'s")
    if head in ("his", "her") and i == lead and pronouns and i + 1 < len(words) and words[i + 1] not in GUARDED:
        head = "he" if head == "his" else "she"  # "His lips are going blue": the body of someone spoken of
    if head in ("he", "she") and i == lead and pronouns:
        # a carer's opening that names nobody ("He's been fitting for five minutes", "Her lips have gone blue"):
        # the person spoken of is the patient; so is one whose own report an interpreter passes on ("He says he
        # vomited blood", "She says her head ...")
        if _PASSES_ON.match(" ".join(words[i:i + 4])):
            return head
        return head if _PRESENT.search(text) and not _REPORTS_ON_ME.search(re.split(r"[,;.!?]|\band\b", text)[0]) \
            else None
    if head == "old" or (head not in GUARDED and i > 0 and words[i - 1] == "old"):
        head = "child"  # "my 9 year old is constantly thirsty", "my 2-year-old's got a rash": the age says who
    speakers = {w.removesuffix("'s") for a, w in zip(words[i:], words[i + 1:], strict=False) if a in ("my", "our")}
    if (speakers - {head}) & _BLOOD_RELATIVES:
        return None  # a list of the speaker's relatives is a family history ("my dad has ..., and my sister had ...")
    first_clause = re.split(r"[,;.!?]|\band\b", text, maxsplit=1)[0]  # "my wife says I snore, ..."
    event = next((e for e in ANOTHER_EVENT.finditer(text)
                  if re.search(r"\b(?:he|she|they)\b", e.group(), re.I)), None)
    told = text[:event.start()] if event else text  # "..., and she moved in with
    if head not in GUARDED or not _PRESENT.search(text) or any(  # us ten years ago": no past of the illness
            p.search(told) for p in (_FAMILY_PAST, _OWN_COMPLAINT)) or _REPORTS_ON_ME.search(first_clause):
        return None
    return head


def first_person(text: str, relative: str) -> str:
    """``text`` told as the patient would tell it: the relative and the third-person pronouns become "I", "me",
    "my" ("My wife blacked out, she said her heart was racing" -> "I blacked out, I said my heart was racing"), so
    readers written for what patients say of themselves read a guardian's report of the patient."""
    rel = _KIN_MODIFIER.pattern + re.escape(relative)  # "my little girl" is the girl
    contraction = r"(?:'s|’s)"

    def subject_s(m: re.Match[str]) -> str:  # "X's" is possessive before a body word, else "is" / "has"
        nxt = m.group("next").lower()
        then = (m.groupdict().get("then") or "").strip().lower()
        if nxt in _POSSESSED or (then in _VERB_AFTER_NOUN and nxt not in _HAVE_NEXT):  # "my son's asthma is bad"
            return f"my {m.group('next')}"
        return f"{'I have' if nxt in _HAVE_NEXT else 'I am'} {m.group('next')}"

    if relative == "child":  # "my 9 year old is ...": the age alone names the child
        text = re.sub(r"\bmy\s+(?:little\s+)?(?:\d+|[a-z]+)[- ](?:year|month|week)s?[- ]old\b", "my child", text,
                      flags=re.I)
    out = re.sub(rf"\b(?:my\s+)?{rel}{contraction}\s+(?P<next>\w+)(?=(?P<then>\s+\w+)?)", subject_s, text, flags=re.I)
    out = re.sub(rf"\b(?:he|she){contraction}\s+(?P<next>\w+)", subject_s, out, flags=re.I)
    out = re.sub(rf"\b(?:my\s+){rel}\b", "I", out, flags=re.I)
    out = re.sub(rf"^(\W*){rel}\b", r"\1I", out, flags=re.I)
    for pattern, repl in ((r"\b(?:he|she)\b", "I"), (r"\bhim\b", "me"), (r"\b(?:his|her)\b", "my"),
                          (r"\b(?:himself|herself)\b", "myself"), (r"\bI is\b", "I am"), (r"\bI has\b", "I have"),
                          (r"\bI isn't\b", "I am not"), (r"\bI hasn't\b", "I haven't"), (r"\bI doesn't\b", "I don't"),
                          (r"\bI does\b", "I do")):
        out = re.sub(pattern, repl, out, flags=re.I)
    # the relative's own report of it, put through the speaker ("My husband says the pain in his chest ...", an
    # interpreter's "She says her headache came all at once"): what they say is the patient's own account
    return _SAYS_FRAME.sub("", out)


_SAYS_FRAME = re.compile(r"(?:(?<=^)|(?<=[.!?;,]\s)|(?<=\band\s))\s*I\s+(?:says|said|tells me|told me|reckons)\s+"
                         r"(?:that\s+)?(?=(?:my|I|I'm|I've|I'd|it|it's|the|there|there's|this)\b)", re.I)
"""A report's frame once the relative is "I" ("I says my calf ...", from "she says her calf ..."), at a sentence's or
a clause's start, before what is reported ("he keeps saying stuff that makes no sense" is the complaint itself)."""


OPENING_MIN_WORDS = 4  # "Hi." or "Yes, hello." is no opening statement


def is_opening(earlier_patient_turns: Iterable[str]) -> bool:
    """Whether the next patient turn is the opening statement: no earlier patient turn said anything of substance."""
    return all(len(t.split()) < OPENING_MIN_WORDS for t in earlier_patient_turns)


_ECHO = re.compile(r"(?:^|(?<=[.!?]))\s*(?:[^\s.!?]+\s+){0,3}[^\s.!?]+\?+(?=\s|$)")
"""A question of four words or fewer opening a sentence of the patient's: an echo of what was asked ("Pregnant? I'm
71!", "Chest pain? No, never."), said back in surprise or to check, which tells nothing; the answer follows it."""


_ANSWERED_ECHO = re.compile(
    r"(?:^|(?<=[.!?]))\s*(?:(?:am i|do i have|do i get|have i got|have i had|have i been|did i have|is there|are there|"
    r"any)\s+)?((?:[^\s.!?]+\s+){0,6}[^\s.!?]+)\?+\s*(?:(no|nope|nah|not really|never|not at all)|(yes|yeah|yep|aye))"
    r"(?!\s+(?:idea|clue|one|way|longer|more)\b)(?=[\s,.!;]|$)[,.!;]?", re.I)
"""A question the patient asks back and answers at once ("Am I short of breath? No, I can still get to the
kitchen", "Any blood in it? Yes, a streak"): the answer is the question's status."""


def without_echoes(text: str) -> str:
    """``text`` less the short questions it echoes back (:data:`_ECHO`): read as statements, "Chest pain? No, never."
    had recorded a chest pain. A question answered at once is read as its answer (:data:`_ANSWERED_ECHO`): "Am I
    short of breath? No," is "No short of breath." (dropping it had left the denial nothing to deny)."""
    text = _ANSWERED_ECHO.sub(lambda m: f" {'No ' if m.group(2) else ''}{m.group(1)}.", text)
    out = _ECHO.sub(" ", text).strip()
    return out if out else text


_MIND_WORKS = re.compile(
    r"\b(?:(?:i'm|i am|i've been|i have been|i feel|i'm feeling|(?:he|she)'s|(?:he|she) is)\s+(?:\w+\s+)?"
    r"(?:thinking (?:straight|clearly|fine)|with it|all there|clear[- ]headed|(?:perfectly |completely )?lucid)|"
    r"(?:i|he|she)\s+(?:know|knows|knew)\s+(?:exactly\s+|perfectly well\s+|full well\s+|just\s+)?"
    r"(?:where|who|what)\b)", re.I)
NEGATION_WORD = re.compile(r"\b(?:no|not|never|nothing|none|nobody|cannot|without)\b|n't\b|n’t\b", re.I)
"""A negation said in words ("I don't want to be here any more", "I'm not thinking straight")."""


_DOES_IT_FINE = re.compile(
    r"\b(?:i|he|she|we|they)\s+(?:can|could)\s+(?:still\s+)?(?:\w+\s+){1,3}?(?:normally|fine|perfectly(?: well)?|"
    r"properly|ok|okay|all right|alright|no problem)\b", re.I)
"""A clause that says a function works, plainly ("I can speak normally, as you hear", "she can move her arms fine")."""


def says_the_mind_works(clause: str) -> bool:
    """Whether a clause says the mind works ("I'm thinking straight", "I know exactly where I am"), with no negation
    in it: by meaning it is near the confusion it denies (0.75 from "I cannot think straight"), so neither the red-flag
    screen nor the NLU's second stage may read it as confusion."""
    return bool(_MIND_WORKS.search(clause)) and not NEGATION_WORD.search(clause)


def says_it_works(clause: str) -> bool:
    """:func:`says_the_mind_works`, or a function said to work ("I can speak normally", :data:`_DOES_IT_FINE`): the
    red-flag screen reads no loss by meaning in it ("I can speak normally" had raised the stroke as "possible"); the
    NLU's second stage reads such a clause as the function's denial, which MediTOD annotates."""
    return says_the_mind_works(clause) or (bool(_DOES_IT_FINE.search(clause)) and not NEGATION_WORD.search(clause))


def as_the_patient(text: str, pronouns: bool = True) -> tuple[str, str | None]:
    """An opening statement as the patient's own words, and the relative speaking for them (None: the speaker is
    the patient). Callers decide what an opening statement is; later turns of a guardian say "he" / "she", which
    no reader takes for a relative. ``pronouns``: as :func:`proxy_subject`'s."""
    relative = proxy_subject(text, pronouns)
    return (first_person(unframed(text), relative), relative) if relative else (text, None)


def spoken_for(turns: Sequence[tuple[str, str]]) -> str | None:
    """The relative the person answering speaks for, from the interview's opening statement (the first patient turn
    of substance, :func:`is_opening`), or None when the patient speaks for themselves. The doctor's questions about
    the patient are then put in the third person, to the person who is there."""
    earlier: list[str] = []
    for speaker, text in turns:
        if speaker != "patient":
            continue
        if is_opening(earlier):
            if len(text.split()) >= OPENING_MIN_WORDS:
                return proxy_subject(text)
            earlier.append(text)
    return None
