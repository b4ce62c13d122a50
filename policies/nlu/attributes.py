"""Attribute values in what a patient says: when, how long, how often, how bad, where, what colour, how much,
what makes it worse or better, and the record slots (job, home, travel, age).

These are the parts of the CMAS frame that no clinical NLP library recognises in lay speech (medspaCy's
ConText decides status; it has no notion of "for two weeks" or "a pack a day"), so they are patterns here,
each returning the patient's own words in MediTOD's conventions: onset as "<amount> <unit> ago" (the
dataset writes "few months ago" for "for the last few months"), severity as the number out of ten,
progression as the questionnaire's option ("gradually getting worse over time").
"""

from __future__ import annotations

import re

from agent.core.clinical_text import AT_AN_AGE, DATED, YOUNG
from agent.core.numbers import with_digits

_SPREAD_SUBJECT = r"(?:it|it's|it is|they|they're|they are|that|this|which|the pain|the ache)"
_SPREAD_VERB = (r"(?:goes|go|went|going|spreads?|spreading|radiates?|radiating|travels?|travell?ing|shoots?|shooting|"
                r"moves?|moving|runs?|running|comes?\s+(?:up|down|through|into))")
_DIRECTION = r"(?:down|up|into|through|across|round|around|along)\s+(?:my|the|his|her|their|your)\b"
SPREADS = re.compile(rf"\b{_SPREAD_SUBJECT}\s+(?:\w+ly\s+)?{_SPREAD_VERB}\b|^{_DIRECTION}", re.I)

"""A clause telling where what was said before goes ("it goes into my jaw and down my left arm", "it shoots down the
back of my leg"), or the bare direction that continues it ("and down my left arm"): the spread of a pain, not a new
complaint at the place it names (weakness of the arm)."""


def without_spread(sentence: str) -> str:
    """A sentence without the clause that tells where the pain goes ("..., and it goes down towards my groin",
    "the pain goes through to my back"): the place there is the pain's spread, not another part of the body that the
    sentence is about."""
    m = SPREADS.search(sentence)
    if m is None:
        return sentence
    end = re.search(r"[.;]|,\s*(?:but|and)\b", sentence[m.end():])
    return sentence[:m.start()] + (sentence[m.end() + end.start():] if end else "")


PAIN_WORD = re.compile(r"\b(?:pain\w*|hurt\w*|sore\w*|ache\w*|aching|burn\w*|sting\w*|tender\w*|raw|agony|"
                       r"agonis\w*|agoniz\w*|killing|throb\w*|excruciating)\b", re.I)
"""Words that say a pain: a reference that names one is what a bare "it hurts" may be refined into, and a clause
without one names no pain by meaning ("my throat feels tight" is no sore throat)."""

_NUM = (r"(?:\d+(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
        r"forty|fifty|sixty|ninety|a few|few|a couple of|couple of|a couple|several|many|half an|half a|a|an)")
_COUNT = (r"(?:\d+(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
          r"forty|fifty)")
_SPAN_NUM = rf"(?:{_COUNT}\s*(?:or|to|-)\s*)?{_NUM}"
"""A number, or a range as the patient says it: "three or four weeks", "four to six months" (MediTOD's annotators
keep the span: the range is the answer, not its upper end)."""
_UNIT = r"(?:minutes?|hours?|days?|nights?|weeks?|fortnights?|months?|years?)"
_HEDGE = (
    r"(?:(?:about|around|like|roughly|maybe|probably|almost|nearly|over|at least|the|um|uh|just|these|last|past)\s+)*"
)

_ONSET_PATTERNS = [
    # "two months ago", "a few days ago"
    re.compile(rf"\b{_HEDGE}(?P<n>{_SPAN_NUM})\s+(?P<u>{_UNIT})\s+ago\b"),
    # "for the last few months", "for two weeks", "over the past couple of days", "these last 2 days"
    re.compile(rf"\b(?:for|over|in|since|during|these|this)\s+{_HEDGE}(?P<n>{_SPAN_NUM})\s+(?P<u>{_UNIT})\b"),
    re.compile(rf"\b(?:started|began|start|begun|came on|it's been|been)\s+{_HEDGE}(?P<n>{_SPAN_NUM})\s+"
               rf"(?P<u>{_UNIT})\b"),
    # "about three weeks now", "going on two months now": a span told up to now is how long ago it began
    re.compile(rf"\b(?:going on\s+)?{_HEDGE}(?P<n>{_SPAN_NUM})\s+(?P<u>{_UNIT})\s+(?:or so\s+)?now\b"),
    # "for the past fortnight", "over the last month": one unit back (the number left unsaid)
    re.compile(r"\b(?:for|over|in|during|since)\s+the\s+(?:past|last)\s+(?P<n>)(?P<u>week|fortnight|month|year)\b"),
]
_SINCE = re.compile(
    r"\b(since (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|last (?:week|night|month|year)"
    r"|this morning|the weekend|christmas|[a-z]+ (?:ago)))\b"
)
_CLOCK = (r"(?:\d{1,2}(?:[:.]\d{2})?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|midnight|midday"
          r"|noon)(?:\s*(?:o'clock|am|pm|a\.m\.|p\.m\.))?(?:\s+(?:in the (?:morning|afternoon|evening)|at night|"
          r"last night|this morning|yesterday(?: morning| afternoon| evening)?))?")
_HOUR = r"(?:\d{1,2}(?:[:.]\d{2})?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_DAY_PART = (r"(?:in the (?:morning|afternoon|evening)|at night|last night|this (?:morning|afternoon|evening)|"
             r"yesterday(?: morning| afternoon| evening)?|(?:on )?(?:monday|tuesday|wednesday|thursday|friday|"
             r"saturday|sunday)(?: morning| afternoon| evening| night)?)")
_MEAL = (r"(?:breakfast|lunch|lunchtime|dinner|dinnertime|teatime|tea time|supper|suppertime|bedtime|midnight|midday|"
         r"noon)")
_SINCE_TIME = re.compile(
    rf"\b(since (?:about |around |roughly |approximately |just after |just before |maybe )?(?:"
    rf"{_HOUR}\s*(?:o'clock|am|pm|a\.m\.|p\.m\.)(?:\s+{_DAY_PART})?|{_HOUR}\s+{_DAY_PART}|{_MEAL}(?:\s+{_DAY_PART})?))"
    rf"(?!\w)")
"""An onset said as a time of day after "since" ("since about four this morning", "since lunchtime yesterday"): a
bare number needs its o'clock or its part of the day ("since two" tells no time)."""
_LONG_AGO = re.compile(r"\b((?:many\s+|some\s+)?(?:years|decades|ages|yonks|a long time|a good while)\s+ago|"
                       r"for\s+(?:many\s+|some\s+|a few\s+|a good few\s+|several\s+)?(?:years|decades|donkey'?s years)|"
                       r"donkey'?s years)\b")
"""A past said without a number ("years ago I coughed up a bit of blood", "I've had floaters for years"): the
patient's words, which the red-flag screen reads as long past (``agent.core.safety.onset_days``). "For ages" is not
among them: in British speech it is as often a week."""
_RELATIVE = re.compile(
    r"\b(?:started|began|came on|noticed it|start)\s+(?:(?!and\b|but\b)[a-z']+\s+){0,3}?(?:on\s+|just\s+)?"
    r"(yesterday|last night|this morning|"
    r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|last week|a while ago)\b"
)

_WOKE_WITH = re.compile(
    r"\b(?:woke|woken|waking|wake|got up|get up|getting up)(?: up)?(?: with [a-z' ]{1,40}?)?\s+(yesterday(?: morning)?|"
    r"last night|this morning|"
    r"today|on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b"
)
"""An onset said as the waking that found it ("I woke up this morning and I can't hear", "woke up with it yesterday"):
the patient's words for when it began, as a sudden loss's red flag needs them."""

_OVERNIGHT = re.compile(r"\b(?:went|gone|go|came on|come on|happened|started|began|appeared|came up|swelled up|"
                        r"swollen up|puffed up|(?!stayed|kept|spent|admitted)[a-z]+ed)\s+(?:\w+\s+){0,2}(overnight)\b")
"""A change said to have come overnight ("my left ear went completely deaf overnight", "swelled up overnight"): the
patient's word for when it began (a day ago, to the red-flag screen)."""

_CHILDHOOD = re.compile(
    rf"\b(as {YOUNG}|when (?:i|he|she) was (?:{YOUNG}|(?:about |around |only |just |maybe )?"
    rf"(?:\d{{1,2}}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|"
    rf"sixteen|seventeen|eighteen|nineteen)|little|small|young|younger)|in (?:my|his|her) (?:childhood|teens)|"
    rf"{AT_AN_AGE})\b"
)
"""An onset said as a time of life ("a fit when I was about six", "asthma as a child"): the patient's words, which
tell the red-flag screen it is their past (``agent.core.safety.onset_days``)."""

_DAY_OPENING = re.compile(
    r"^\W*(?:(?:and|so|well|um|uh|erm|so um)\s+)?((?:yesterday|last night|this morning|this afternoon|earlier today|"
    r"(?:on\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))(?:\s+(?:morning|afternoon|evening|"
    r"night))?)\b", re.I)
"""A day said first in the sentence ("Yesterday morning I woke up and couldn't hear", "On Sunday my chest started to
hurt"): when what the sentence tells began, in the patient's words."""
_ANY_DAY = re.compile(
    r"\b((?:yesterday|last night|this morning|this afternoon|earlier today|(?:on\s+)?(?:monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday))(?:\s+(?:morning|afternoon|evening|night))?)\b", re.I)
"""A day said anywhere in a reply to "when did it start?" ("They came with the flashes, yesterday evening")."""

_CLOCK_ONSET = re.compile(
    rf"\b(?:started|began|came on|kicked in|woke me(?: up)?|happened|hit me)\s+(?:at\s+|around\s+|about\s+|"
    rf"at about\s+|at around\s+|just after\s+|just before\s+)({_CLOCK})\b")
"""An onset said as a time of day: "it started around nine in the evening" (the patient's own span, as MediTOD's
annotators keep it)."""

_DURATION = [
    (re.compile(r"\ball day long and throughout the night\b"), "all day long and throughout the night"),
    (re.compile(r"\b(?:all day and (?:all )?night|day and night|night and day)\b"), "all day and night"),
    (re.compile(r"\ball day\b"), "all day"),
    (re.compile(r"\b(?:constant|constantly|all the time|non-stop|nonstop|continuous|continuously)\b"), "constant"),
    (
        re.compile(r"\b(?:comes and goes|come and go|on and off|off and on|intermittent|intermittently)\b"),
        "intermittent",
    ),
    # "it lasts about ten minutes" (not "for the last few days")
    (re.compile(rf"(?<!\bthe )(?<!\bthese )(?<!\bpast )\b(?:lasts?|lasted|lasting|went on|goes on)\s+(?:for\s+)?"
                rf"{_HEDGE}((?:{_NUM})\s+{_UNIT})\b"), None),
]
_EPISODE_END = re.compile(r"\b(?:lasts|lasted|lasting|went on|goes on|passed|went away|goes away|wore off|wears off|"
                          r"settled|settles|stopped|stops|cleared|eased off|went back to normal|back to normal)\b")
"""An episode that ended or is told by its length ("my words came out jumbled for a minute or so, but it passed",
"it lasted for about an hour"): its "for" span is how long it lasts (MediTOD's duration), not how long ago it began.
"I've had a cough for three weeks" tells no end: the span is its onset, as the annotation guide's "for just over a
week" example."""
_FOR_SPAN = re.compile(rf"\bfor\s+{_HEDGE}((?:{_NUM})\s+{_UNIT})\b")
_NOT_ENDED = re.compile(r"(?:\bnever|\bnot|n't|\bwon't|\bhasn't|\bhaven't|\bdoesn't|\bdon't|\bjust)\s+(?:\w+\s+)?$")


def episode_ended(text: str) -> bool:
    """Whether ``text`` tells that an episode ended or how long it lasts (:data:`_EPISODE_END`); "it never goes away"
    and "it hasn't stopped" tell the opposite. A sentence opened by the day it happened, with a "for" span, tells
    how long it lasted: "Yesterday the sight in my right eye went grey for a few minutes" began yesterday (the day
    is its onset, :data:`_DAY_OPENING`), not a few minutes ago."""
    if _DAY_OPENING.search(text) and _FOR_SPAN.search(text):
        return True
    return any(not _NOT_ENDED.search(text[:m.start()]) for m in _EPISODE_END.finditer(text))

_FREQ = [
    re.compile(
        rf"\b((?:a few|few|a couple of|couple of|once|twice|one or two|two or three|{_SPAN_NUM})"
        rf"\s+times?\s+(?:a|an|per|every|each|in a|in the|at)\s+(?:hour|day|night|week|month|year))\b"
    ),
    re.compile(r"\b((?:once|twice)\s+(?:a|per)\s+(?:day|week|month|year))\b"),
    re.compile(r"\b((?:a|one|half a|two|\d+)\s+packs?\s+(?:a|per)\s+(?:day|week))\b"),
    re.compile(
        rf"\b((?:{_NUM}|\d+\s*(?:to|-)\s*\d+)\s+(?:cigarettes|cigs|drinks|beers|glasses of wine|glasses|joints|cups)"
        r"\s+(?:a|per|every|each)\s+(?:day|night|week|weekend))\b"
    ),
    re.compile(
        r"\b((?:one or two|a couple of|a few|\d+|one|two|three)\s+(?:beers|drinks|glasses of wine)\s+on the"
        r" weekends?)\b"
    ),
    # how much of a drink or a smoke, and how often, in the patient's words (MediTOD's guide keeps the span: "a glass
    # of wine on the weekends"): "a bottle of wine at the weekend", "a few roll-ups a day", "about ten a day"
    re.compile(
        rf"\b((?:a|an|half a|a few|a couple of|couple of|{_NUM}|\d+)(?:\s*(?:to|-|or)\s*(?:{_NUM}|\d+))?\s+"
        r"(?:(?:large|small|big)\s+)?(?:(?:bottles?|glass(?:es)?|pints?|cans?|units?|shots?|measures?|roll-ups|rollies|"
        r"fags|ciggies|cigarettes|cigs|drinks|beers|packs?|cups?|mugs?|joints?)(?:\s+of\s+[a-z]+)?\s+)?"
        r"(?:(?:a|per|every|each)\s+(?:day|night|week|weekend|month)|(?:at|on)\s+(?:the\s+)?weekends?|"
        r"on\s+(?:a\s+)?(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?(?:\s+(?:night|evening)s?)?|"
        r"most\s+(?:days|nights|evenings|weekends)|every\s+(?:other\s+)?(?:day|night|evening|weekend)))\b"
    ),
    re.compile(
        r"\b(every (?:day|night|morning|evening|week|weekend)|daily|nightly|weekly|most days|on weekends|on"
        r" the weekends?)\b"
    ),
    re.compile(r"\b(at least [a-z0-9]+ to [a-z0-9]+ times in a week)\b"),
]

_SEVERITY_NUM = re.compile(
    r"\b(\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten)\s*(?:/|out of|over)\s*(?:10|ten)\b"
)
_A_SCORE = re.compile(
    r"\b(?:about|around|like|maybe|probably|at least|easily|more like)\s+(?:an?\s+)(?:solid\s+|good\s+|strong\s+)?"
    r"(\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten)\b(?![-\w]|\s+(?:minutes?|hours?|days?|weeks?|"
    r"months?|years?|miles?|pack|times?|o'clock|am|pm|in the|at night|on)\b)")
"""A score said unasked with its article ("a constant gnawing ache, about a seven"): a number said so is a rating."""
_SEVERITY_WORD = re.compile(r"\b(mild|moderate|severe|excruciating|unbearable)\b")
_FEELINGS = r"worried|anxious|scared|frightened|concerned|nervous|embarrassed|silly|daft|stressed|upset|of\s+a\s+\w+"
_MILD = re.compile(rf"\b(?:a\s+(?:little\s+|tiny\s+)?bit"
                   rf"(?!\s+(?:more|worse|longer|harder|further|faster|{_FEELINGS})\b)|"
                   rf"a\s+little(?!\s+(?:more|worse|longer|while|{_FEELINGS})\b)|slight(?:ly)?|a\s+touch|"
                   r"twinges?|niggl\w*|not\s+(?:too|that|very|so)\s+(?:bad|painful|sore))\b", re.I)
"""How people say a complaint is mild ("a bit of a twinge", "my testicle aches a bit", "not too bad"): the ``mild``
of the severity scale's words (a comparison, "a bit worse", says how it changed, and "a bit worried" how the patient
feels, not how bad it is)."""
_SEVERE = re.compile(r"\b(?:agonising|agonizing|agony|unbearable|excruciating)\b", re.I)
_BARE_NUMBER = re.compile(
    r"^\W*(?:uh|um|er|i'd say|i would say|probably|maybe|about|around|like|\s)*"
    r"(\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten)\b"
)
_WORD_NUMBERS = {w: str(i) for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}
# A score said with an article or inside a short sentence, to a question that asked for one ("An 8.", "I'd say a 7",
# "It's a 9, it's awful"): a number from 0 to 10 that counts nothing else (not "3 days", "twice", "2 tablets") and
# is not a time of day or a span ("since 8", "for 2 weeks", "at 6").
_SCALE_NUMBER = re.compile(
    r"(?<!\bsince )(?<!\bfor )(?<!\bat )(?<!\babout )(?<![\d:.])"
    r"\b(\d{1,2}|zero|one|two|three|four|five|six|seven|eight|nine|ten)\b"
    r"(?![:.]\d)(?!\s*(?:-|to|or)?\s*\d*\s*(?:days?|weeks?|months?|years?|hours?|hrs?|minutes?|mins?|seconds?|times?|"
    r"o'?clock|am|pm|a\.m|p\.m|tablets?|pills?|puffs?|doses?|kg|kilos?|stones?|pounds?|lbs?|cups?|glasses|pints?|"
    r"units?|cigarettes?|fags|of them|people|kids|children|%|percent|per cent|in the morning|at night))"
)

_PROGRESSION = [
    (
        re.compile(r"\b(?:rapidly|quickly|fast)\s+(?:getting\s+)?worse\b|\bworse\s+(?:really\s+|very\s+|so\s+)?"
                   r"(?:quickly|fast|rapidly)\b|\bworse by the (?:hour|minute)\b"),
        "rapidly getting worse over time",
    ),
    (re.compile(r"\b(?:rapidly|quickly)\s+(?:getting\s+)?better\b|\bbetter\s+(?:really\s+|very\s+)?"
                r"(?:quickly|fast|rapidly)\b"), "rapidly getting better over time"),
    (
        re.compile(
            r"\b(?:getting|gotten|got|been getting|becoming|grown)\s+(?:a (?:bit|little|lot)\s+|much\s+"
            r"|progressively\s+)?worse\b"
            r"|\bworsening\b|\bworse and worse\b|\bprogressively worse\b|\bworse over time\b"
        ),
        "gradually getting worse over time",
    ),
    (
        re.compile(
            r"\b(?:getting|gotten|got|been getting)\s+(?:a (?:bit|little|lot)\s+)?better\b|\bimproving\b|\bimproved\b"
        ),
        "gradually getting better over time",
    ),
    (
        re.compile(
            r"\b(?:stayed|staying|stays|been|is|it's)\s+(?:about|pretty much|pretty)?\s*the same\b"
            r"|\bunchanged\b|\bno (?:real )?change\b|\b(?:hasn't|has not|haven't|have not|not)\s+(?:really\s+|much\s+)?"
            r"changed\b"
        ),
        "unchanged with time",
    ),
    (re.compile(r"\b(?:fluctuat\w*|up and down|better some days)\b"), "fluctuating"),
]

_COMPARATIVE_LEAD = (r"^\W*(?:(?:uh|um|er|oh|well|yeah|yes|no|it|it's|it is|it has|it's been|its|i think|i'd say|"
                     r"definitely|probably|much|far|a lot|a bit|a little|slightly|way|even|so|got|gotten|been|"
                     r"been getting|getting)\W+)*")
_RANGE_END = re.compile(r"\s*(?:or|to|-|/)\s*(?:an? )?(\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten)\b")
_ASKED_PROGRESSION = [
    (re.compile(_COMPARATIVE_LEAD + r"(?:worse|more painful|more often)\b|\bworse than (?:before|it was|last|yesterday|"
                r"this morning|when it started|at first)\b"), "gradually getting worse over time"),
    (re.compile(_COMPARATIVE_LEAD + r"better\b|\bbetter than (?:before|it was|last|yesterday|this morning|when it "
                r"started|at first)\b"), "gradually getting better over time"),
    (re.compile(_COMPARATIVE_LEAD + r"(?:(?:about|pretty much|more or less|roughly|just|much) )?the same\b|"
                r"\bno (?:different|better,? no worse)\b|\bhasn't changed\b|\bnot changed\b"), "unchanged with time"),
]

_COLOR = re.compile(
    r"\b((?:(?:white|clear|yellow|yellowish|green|greenish|brown|brownish|grey|gray|rusty|red|pink|pinkish|"
    r"bloody|dark|frothy|cloudy)(?:\s*(?:or|and|to|-|,)\s*)?){1,3})\b"
)
_COLOR_WORDS = {
    "white",
    "clear",
    "yellow",
    "yellowish",
    "green",
    "greenish",
    "brown",
    "brownish",
    "grey",
    "gray",
    "rusty",
    "red",
    "pink",
    "pinkish",
    "bloody",
    "dark",
    "frothy",
    "cloudy",
}
_VOLUME = re.compile(
    rf"\b((?:{_NUM}|\d+\s*(?:to|-)\s*\d+|half a)\s*(?:to\s+{_NUM}\s+)?(?:teaspoons?|tablespoons?|cups?|mouthfuls?|"
    r"spoonfuls?|cupfuls?)(?:\s+(?:a|per|each)\s+(?:day|hour))?)\b"
)

_AGG = re.compile(r"\b(worse|aggravat\w*|exacerbat\w*|trigger\w*|brings? (?:it )?on|sets? (?:it )?off|worsens?"
                  r"|flares? up|harder|hurts? more|more (?:painful|sore)|kills? me)\b")
_WHEN = re.compile(r"\b(?:when|whenever|every time|if|after|on)\s+(?:i|i'm|i am|going|climbing|walking|doing)\b")
_ALL = re.compile(
    r"\b(better|easier|helps?|helped|helping|relie\w+|eases?|eased|easing|soothes?|improves?|goes away|go away"
    r"|went away|settles?|settled|subsides?|subsided|disappears?|disappeared|dies down|died down|wears? off"
    r"|calms? (?:it )?down|less (?:painful|sore|bad))\b"
)
_NEG_FACTOR = re.compile(r"\b(nothing|not really|doesn't|does not|didn't|hasn't|don't|isn't)\b")

_AGE = re.compile(
    r"\b(?:i am|i'm|im|i turned|i just turned)\s+(\d{1,3})(?:\s*(?:years? old|yrs?|year-old))?\b|\b"
    r"(\d{1,3})[\s-]*(?:years?|yrs?)[\s-]*old\b"
)
_SEX = re.compile(r"\bi(?:'m| am) (?:a |an )?(?:\d{1,3}[- ]?(?:years?|yrs?)[- ]old |\w+[- ]year[- ]old "
                  r"|\d{1,3},? (?:a |an )?)?"
                  r"(man|woman|male|female|guy|lady|boy|girl|gentleman|bloke|chap|fella|fellow|lad|lass|gal)\b")
"""The patient saying their sex: "I'm a man", "I'm a 45-year-old woman", "I am a fifteen year old boy", "I'm 58,
male", "I'm 23, a bloke"."""
_BARE_SEX = re.compile(r"\b(male|female|man|woman|boy|girl|bloke|guy|lady|lad|lass)\b")
"""The sex word of a reply to "how old are you, and what sex ...?" ("58, male", "Female.")."""
_DWELLING = re.compile(
    r"\b((?:(?:small|big|large|little|tiny|old|new|shared|rented|one-bedroom|two-bedroom|basement|ground floor"
    r"|detached)\s+)*"
    r"(?:apartment|flat|house|condo|bungalow|townhouse|trailer|dorm|care home|nursing home|shelter|farm|"
    r"retirement home|group home))\b"
)
_JOB = [
    re.compile(
        r"\b(?:i work|i'm working|i am working|working)\s+(?:as|in)\s+(?:a |an |the )?([a-z][a-z\- ]{1,30}?)"
        r"(?=[,.;!?]| and | so | but | with | at |$)"
    ),
    re.compile(
        r"\bmy (?:job|work) is (?:pretty much |basically |just )?(?:a |an )?([a-z][a-z\- ]{1,30}?)(?=[,.;!?]|"
        r" and | so | but |$)"
    ),
    re.compile(
        r"\ba ((?:desk|office|construction|factory|retail|manual|warehouse|sales|teaching|nursing|farm|mining|"
        r"cleaning|kitchen|restaurant|driving|computer)\s+job)\b"
    ),
]
_DRIVES = re.compile(r"\bi drive (?:a |an |the )?(taxi|cab|bus|coach|lorry|truck|van|forklift|tractor|train|"
                     r"tram|delivery van|ambulance|minicab)s?(?: for (?:a living|work))?\b")
"""A job said as what the patient drives for it ("I drive a taxi, nights mostly"): the vehicle's driver (the present
tense only: a job held before is a past one, :func:`past_job`)."""
_JOB_FIELD = re.compile(
    r"\bi(?:'m| am) in (sales|retail|construction|finance|marketing|education|healthcare|it|tech|"
    r"insurance|banking|real estate|hospitality|accounting|administration|nursing|teaching)\b"
)
_JOB_ASKED = re.compile(r"\b(?:i'm|i am|im)\s+(?:a |an |in )?([a-z][a-z\- ]{1,30}?)(?=[,.;!?]| and | so | but | at |$)")
_NOT_A_JOB = frozenset("""not no never pregnant fine ok okay alright well sick ill unwell tired worried scared afraid
sure married single divorced widowed feeling getting having going in on allergic diabetic asthmatic living staying
just only still also really very so too the retired unemployed smoker drinker heavy fit healthy active""".split())
"""First words of an "I'm ..." that is no occupation, in a reply to "what do you do for work?" ("I'm not pregnant.
I'm a student" is a student)."""
_TRAVEL = re.compile(r"\b(travel\w*|trips?|abroad|vacation|holidays?|flew|flights?(?! of stairs| of steps)|overseas)\b")
_DESTINATION = re.compile(r"\b(?:to|in|from)\s+([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)")
_WHERE = re.compile(r"\b(at work|at home|at school|at the office|at daycare|in the house)\b")
_IMPACT_NO = re.compile(
    r"\b(?:didn't|did not|doesn't|does not|hasn't|has not|haven't|not)\s+(?:\w+\s+)?(?:help|helped|work|worked|"
    r"do anything|done anything|made a difference)|\bno (?:help|difference)\b|\bnot (?:much|really)\b"
)
_IMPACT_MAYBE = re.compile(
    r"\b(?:sometimes|kind of|sort of|a bit|a little|somewhat|bit)\s+(?:help|helps|helped|better)\b|"
    r"\bhelps? a (?:bit|little)\b"
)
_IMPACT_YES = re.compile(r"\b(?:helps?|helped|helping|works?|worked|better|relief|relieves)\b")
_FILLER = re.compile(r"\b(?:um+|uh+|er+|ah+|hm+|like)\b[,]?\s*")


def clean(text: str) -> str:
    """Lower case, fillers out, one space: the form every pattern here reads."""
    return " ".join(_FILLER.sub("", text.lower()).replace("’", "'").split())


def _amount(n: str) -> str:
    n = n.strip()
    for prefix in ("a couple of", "a few", "a couple"):
        if n == prefix:
            return {"a couple of": "couple of", "a few": "few", "a couple": "couple of"}[prefix]
    return "1" if n in ("a", "an", "") else n  # "" : "the past fortnight", one unit unsaid


_RATE_BEFORE = re.compile(r"\b(?:times?|once|twice|per|every|each)\s*$", re.I)
"""A span that counts how often ("four times a night", "twice a day", "once every week") is a frequency, not when it
began: a bare "a night" after "times" answered "when did it start?" as "a night ago"."""

_BARE_SPAN = re.compile(rf"\b{_HEDGE}(?P<n>{_SPAN_NUM})\s+"
                        rf"(?P<u>{_UNIT})\b(?!\s+(?:to|before it|till it|until it)\s+(?:stop|settle|go|ease|pass|clear|"
                        rf"calm|wear)\w*)")
"""A span said alone, which answers "when did it start?" ("about a week"); not how long something took ("a nosebleed
that took twenty minutes to stop"), which is a duration."""
_TOOK_BEFORE = re.compile(rf"\b(?:took|takes|take|taking|lasted|lasts|last|lasting)\s+{_HEDGE}$")


def onset(text: str, asked: bool = False, ended: bool = False) -> str | None:
    """When it started; ``asked``: the doctor asked when, so a bare "about a week" answers it too. ``ended``: the
    sentence tells the episode ended (:func:`episode_ended`), so its "for" span is a duration, not an onset."""
    ended = ended or episode_ended(text)
    for pat in [*_ONSET_PATTERNS, *([_BARE_SPAN] if asked else [])]:
        # "once a week" counts, "once, about ten years ago" dates: a span said with "ago" is never a rate
        m = next((x for x in pat.finditer(text)
                  if (x.group(0).endswith("ago") or not _RATE_BEFORE.search(text[:x.start()]))
                  and not (pat is _BARE_SPAN and _TOOK_BEFORE.search(text[:x.start()]))), None)
        if m and not (ended and m.group(0).startswith("for")):
            unit = m.group("u")
            n = _amount(m.group("n"))
            if n in ("1", "one", "half an", "half a") and unit.endswith("s"):
                unit = unit[:-1]  # "one month ago", "half an hour ago", not "one months ago"
            if n not in ("1", "one", "half an", "half a") and not unit.endswith("s") and n not in ("couple of", "few"):
                unit += "s"
            if n in ("few", "couple of", "several", "many") and not unit.endswith("s"):
                unit += "s"
            article = "an" if unit.startswith("hour") else "a"  # "an hour ago", not "a hour ago"
            return f"{article + ' ' + unit if n == '1' else n + ' ' + unit} ago"
    if m := _SINCE_TIME.search(text):
        return m.group(1)
    if m := _SINCE.search(text):
        return m.group(1)
    if m := _RELATIVE.search(text):
        return m.group(1)
    if m := _CLOCK_ONSET.search(text):
        return m.group(1)
    if m := _LONG_AGO.search(text):
        return m.group(1)
    if m := DATED.search(text):  # "back in 2015", "last March": the patient's words, the screen counts the days
        return m.group(1).lower()
    if m := _WOKE_WITH.search(text):
        return m.group(1)
    if m := _OVERNIGHT.search(text):
        return m.group(1)
    if m := _CHILDHOOD.search(text):
        return m.group(1)
    if m := _DAY_OPENING.search(text):
        return m.group(1).lower().removeprefix("on ")
    if asked and (m := _ANY_DAY.search(text)):
        return m.group(1).lower().removeprefix("on ")
    return None


_GESTATION = re.compile(
    r"\b(?P<n>\d{1,2}|(?:twenty|thirty)(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?|"
    r"forty(?:[- ](?:one|two))?|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|"
    r"seventeen|eighteen|nineteen)"
    r"(?:\s*\+\s*\d)?\s+(?P<u>weeks|months)(?=\s+(?:pregnant|gone|along|in)\b|\s+with\s+(?:my|our|the|this|a|"
    r"twins|baby)\b|\s*[,.]|\s*$)", re.I)
"""How far along a pregnancy is ("I'm 34 weeks", "seven weeks pregnant", "five months gone", "33 weeks with my first
baby")."""


def gestation(text: str) -> str | None:
    """How far along a pregnancy said in ``text`` is, in the patient's words ("34 weeks"), else None."""
    m = _GESTATION.search(text)
    return f"{m.group('n').lower()} {m.group('u').lower()}" if m else None


def duration(text: str, ended: bool = False) -> str | None:
    """How long it lasts: constant, intermittent, or the span of an episode that ended (``ended`` as for
    :func:`onset`)."""
    for pat, value in _DURATION:
        if m := pat.search(text):
            return value or m.group(1)
    if (ended or episode_ended(text)) and (m := _FOR_SPAN.search(text)):
        return m.group(1)
    return None


def frequency(text: str) -> str | None:
    for pat in _FREQ:
        if m := pat.search(text):
            found = m.group(1)
            return found[2:] if found.startswith("a few ") or found.startswith("a couple") else found
    return None


def severity(text: str, asked: bool = False, lay_mild: bool = False) -> str | None:
    """``7 out of 10`` -> ``7``; a bare number answers a severity question; else mild / moderate / severe.
    ``lay_mild``: a pain's, so "a bit", "slight", "a twinge" say it is mild (:data:`_MILD`), which the torsion rule
    reads; MediTOD's annotators left "a bit short of breath" without a severity, so other complaints keep none."""
    if m := _SEVERITY_NUM.search(text):
        return _WORD_NUMBERS.get(m.group(1), m.group(1))
    if asked and (m := _BARE_NUMBER.search(text) or _SCALE_NUMBER.search(text)):
        n = _WORD_NUMBERS.get(m.group(1), m.group(1))
        if int(n) <= 10:
            # a range is kept as said ("like an 8 or 9" -> 8-9), the patient's own answer
            if (r := _RANGE_END.match(text, m.end())) and int(n) < int(hi := _WORD_NUMBERS.get(r[1], r[1])) <= 10:
                return f"{n}-{hi}"
            return n
    if (m := _A_SCORE.search(text)) and int(n := _WORD_NUMBERS.get(m.group(1), m.group(1))) <= 10:
        return n
    if m := _SEVERITY_WORD.search(text):
        return m.group(1)
    if _SEVERE.search(text):
        return "severe"  # "agonising": the scale's word for it (the grounding keeps the scale's words only)
    if lay_mild and _MILD.search(text):
        return "mild"
    return None


def progression(text: str, asked: bool = False) -> str | None:
    """The course over time ("getting worse" -> the questionnaire's "gradually getting worse over time"). To a
    question that asked for it, a comparative alone answers it too ("Worse.", "A bit better today", "About the
    same", "It's worse than yesterday")."""
    for pat, value in _PROGRESSION:
        if pat.search(text):
            # "worse at night" / "worse when I walk" is a factor, not a course over time
            return value
    if asked:
        for pat, value in _ASKED_PROGRESSION:
            if pat.search(text):
                return value
    return None


_ABRUPT = re.compile(
    r"\b(?:sudden(?:ly)?|all of a sudden|abrupt(?:ly)?|out of (?:the blue|nowhere)|all at once|in an instant|"
    r"instantly|straight away|like a (?:switch|light switch|bolt)|like being (?:hit|struck|kicked)|thunderclap|"
    r"(?:came|come|comes|started|starts|began|begins|hit|hits)\s+(?:on\s+)?(?:really\s+|very\s+|so\s+)?"
    r"(?:fast|quick(?:ly)?|in seconds|within seconds|in a second)|"
    r"within (?:a few |a couple of )?(?:seconds|a second|a minute|minutes)|instantaneous(?:ly)?|"
    r"in a (?:split second|flash|heartbeat)|(?:reached|hit|peaked at) (?:its|the) (?:maximum|max|peak|worst) "
    r"(?:straight away|instantly|immediately|within|in seconds))\b")
_GRADUAL = re.compile(
    r"\b(?:gradual(?:ly)?|bit by bit|little by little|slowly|steadily|over (?:time|a (?:few|couple of) \w+|"
    r"(?:several|some|the|a) (?:hours|days|weeks|months))|crept|creeping|creeps|built up|building up|builds up|"
    r"came on slow|snuck up|sneaked up)\b")
_STARTED = re.compile(r"\b(?:came on|come on|comes on|started|starts|began|begun|begins|start|crept|creeping|creeps|"
                      r"built|building|builds|snuck|sneaked|happened|appeared|developed|hit|hits|struck)\b")
_ABRUPT_ALONE = re.compile(r"\bsudden(?:ly)?\b|\ball of a sudden\b|\bout of (?:the blue|nowhere)\b|\ball at once\b|"
                           r"\bthunderclap\b|\binstantaneous(?:ly)?\b|\bin a (?:split second|flash)\b|"
                           r"\blike a (?:light )?switch\b")
_COURSE_AFTER = re.compile(r"^\W*(?:getting|got|gotten|become|becoming|grown|worse|better|improv|increas|decreas)")


def initiation(text: str, asked: bool = False) -> str | None:
    """How it came on, the questionnaire's "abruptly" or "gradually" ("It hit me out of the blue", "it crept up over
    a few days"). A word of speed counts when a verb of starting is in the clause, or when the doctor asked how it
    came on ("Suddenly."); "slowly getting worse" is the course (:func:`progression`), not how it began."""
    if not (asked or _STARTED.search(text) or _ABRUPT_ALONE.search(text)):
        return None
    if _ABRUPT.search(text):
        return "abruptly"
    for m in _GRADUAL.finditer(text):
        if not _COURSE_AFTER.match(text[m.end():]):
            return "gradually"
    return None


def color(text: str) -> str | None:
    for m in _COLOR.finditer(text):
        words = [w for w in re.split(r"\W+", m.group(1)) if w]
        if any(w in _COLOR_WORDS for w in words):
            return re.sub(r"(?:[\s,\-]|\b(?:or|and|to)\b)+$", "", m.group(1)).strip()
    return None


def volume(text: str) -> str | None:
    m = _VOLUME.search(text)
    return m.group(1) if m else None


_ADVERB_BACK_BEFORE = re.compile(
    r"\b(?:came|come|comes|coming|got|get|gets|getting|flew|fly|flown|flying|went|go|goes|going|drove|drive|driven|"
    r"walked|walk|moved|move|sent|send|brought|bring|called|call|ring|rang|phoned|phone|wrote|write|looking|looked|"
    r"look|thinking|think|way|years?|months?|weeks?|days?|while|ago|put|gave|give|paid|pay|held|hold|fought|turned|"
    r"headed|heading|travelled|traveled)\s+$")
_ADVERB_BACK_AFTER = re.compile(r"^\s+(?:from|home|then|again|and forth)\b")
_OWNED = re.compile(r"\b(?:my|his|her|your|their|our|me|bad|sore|dodgy|lower|upper)\s+$", re.I)


def not_the_back(text: str, start: int, end: int) -> bool:
    """Whether a "back" in ``text`` is the adverb, not the body part: "since I flew back from Australia", "it came
    back", "back home", "a few years back". Said after a verb of going or returning or a time, or before "from",
    "home", "then" or "again"; anything else is the body part, as before ("my back", "a bad back", "back pain")."""
    if text[start:end] != "back":
        return False
    if _OWNED.search(text[:start]):  # "I'm bad with my back again": a possessed back is the body part
        return False
    return bool(_ADVERB_BACK_BEFORE.search(text[:start]) or _ADVERB_BACK_AFTER.search(text[end:]))


_MOVEMENT_GOAL = re.compile(
    r"\b(?:bend|bends|bent|bending|touch\w*|put|puts|putting|bring\w*|brought|tuck\w*|lower\w*|mov(?:e|es|ed|ing)|"
    r"lift\w*|rais(?:e|es|ed|ing)|reach\w*|turn\w*|tilt\w*|pull\w*)\b(?:\s+[\w']+){0,5}?\s+(?:(?:down|up|back)\s+)?"
    r"(?:to|towards|onto|against|above|over|behind)\s+(?:my|the|your|his|her)\s+$", re.I)
"""A place that is where a movement goes, not where a symptom is: "it hurts to bend my chin down to my chest" (a stiff
neck, not a chest pain: it had raised the acute-coronary emergency), "it hurts when I lift my arm above my head"."""


def movement_goal(text: str, start: int) -> bool:
    """Whether the place at ``start`` of ``text`` is where a movement the clause tells goes (:data:`_MOVEMENT_GOAL`)."""
    return bool(_MOVEMENT_GOAL.search(text[:start]))


def _matches(text: str, table: dict[str, str]) -> list[tuple[int, int, str]]:
    """``(start, end, phrase)`` of each phrase of ``table`` found in ``text`` as whole words, longest first and never
    overlapping a longer one, in text order; a possessive or contracted "'s" after the phrase still ends a word ("my
    tummy's swollen"). The adverb "back" is no place (:func:`not_the_back`), nor where a movement goes
    (:func:`movement_goal`)."""
    found: list[tuple[int, int, str]] = []
    for phrase in sorted(table, key=len, reverse=True):
        for m in re.finditer(rf"(?<![\w']){re.escape(phrase)}(?!\w|'(?!s\b))", text):
            if (any(s < m.end() and m.start() < e for s, e, _ in found) or not_the_back(text, m.start(), m.end())
                    or movement_goal(text, m.start())):
                continue
            found.append((m.start(), m.end(), phrase))
    return sorted(found)


def phrase_hits(text: str, table: dict[str, str]) -> list[str]:
    """Values of ``table`` (lay phrase -> value) whose phrase occurs in ``text`` (:func:`_matches`), in text order."""
    return list(dict.fromkeys(table[phrase] for _, _, phrase in _matches(text, table)))


_SIDE_BEFORE = re.compile(r"\b(left|right)(?:[- ]hand(?:ed)?)?\s+$")
_BARE_POSITIONS = frozenset({"low down", "lower down", "down low"})
"""Phrases that place a pain by height alone: the lower abdomen only when the clause names no part of its own."""
_SIDES = frozenset({"left side", "right side"})


_PLACE_FINE = re.compile(r"\s*(?:'s|’s|\s+is|\s+are|\s+was|\s+were|\s+feels?|\s+seems?|\s+looks?)\s+"
                         r"(?:totally\s+|completely\s+|perfectly\s+|absolutely\s+|both\s+|all\s+)?"
                         r"(?:fine|ok|okay|alright|all right|normal|good|unaffected)\b", re.I)


_BACK_AS_TIME = re.compile(r"\s+(?:in\s+(?:(?:early|late|mid)\s+)?(?:(?:19|20)\d\d|the\s+(?:day|summer|spring|winter|"
                           r"autumn|(?:19|20)?\d0s|eighties|nineties|seventies)|[a-z]+uary|march|april|june|july|"
                           r"august|september|october|november|december)|then|when|along the line)\b", re.I)
"""The "back" of a time ("back in 2015", "back then", "back when I was working"): no back, no place."""
_SPREAD_DENIED_BEFORE = re.compile(
    r"(?:\bnot|\bnever|n't|n’t)\s+(?:\w+\s+){0,2}?(?:go(?:ne|ing|es)?|went|spread(?:s|ing)?|radiat\w*|travel\w*|"
    r"mov(?:e|es|ed|ing)|shoot(?:s|ing)?|shot|run(?:s|ning)?|ran|reach(?:ed|es|ing)?)\s+(?:in)?to\s+(?:down\s+|up\s+)?"
    r"(?:my|the|your|his|her|either|both|any)?\s*(?:left|right)?\s*$|"
    r"(?:\bnot|\bnever|n't|n’t)\s+(?:\w+\s+){0,2}?(?:go(?:ne|ing|es)?|went|spread(?:s|ing)?|radiat\w*|travel\w*|"
    r"shoot(?:s|ing)?|run(?:s|ning)?)\s+(?:down|up|across|through|round|around)\s+(?:my|the|your|his|her|either|both|any)?"
    r"\s*(?:left|right)?\s*$", re.I)
"""A place the complaint is said not to reach ("it hasn't gone into my arm", "doesn't spread down my legs", "not
travelling to my jaw"): where it is not, so no place of it (the denial of the spread is the clinician's answer)."""
_SIMILE_BEFORE = re.compile(r"\b(?:like|as big as|as round as|the size of|size of)\s+(?:a|an|the|some)?\s*"
                            r"(?:[a-z]+[- ]){0,2}$", re.I)
"""A simile's object said just before a place word ("swollen like a tennis ball", "the size of a golf ball")."""


_OWNED_ONLY = frozenset({"ball", "balls", "nut", "nuts"})
"""Slang for a part that is also a thing ("a tennis ball", "a nut allergy"): a place only when someone's ("my balls",
"his left nut", "kicked in the balls")."""
_OWNER_BEFORE = re.compile(r"\b(?:my|his|your|their|the|left|right|one|both|either|other)\s+$", re.I)


def places(text: str, table: dict[str, str], sided: frozenset[str]) -> list[str]:
    """The body locations ``text`` names (:func:`phrase_hits` over the lexicon's location phrases), a paired part said
    with its side keeping it: "my left testicle" is ``left testicle``, "my right knee" ``right knee`` (the side the
    examination, the stroke rule and the note need; the cards and the red-flag rules write a side this way, and
    ``knee(L)`` of the ontology reads as ``left knee``). ``sided``: the parts the ontology names with a side."""
    out = []
    # a part given a clean verdict ("my testicles are fine", "the other leg's normal") is where it is not
    hits = [h for h in _matches(text, table) if not _PLACE_FINE.match(text, h[1])
            and not _SIMILE_BEFORE.search(text, 0, h[0])  # "puffed up like a tennis ball": a figure, no place
            and not (h[2] in _OWNED_ONLY and not _OWNER_BEFORE.search(text, 0, h[0]))
            and not _SPREAD_DENIED_BEFORE.search(text, 0, h[0])
            and not (table[h[2]] == "back" and _BACK_AS_TIME.match(text, h[1]))]
    if any(p not in _BARE_POSITIONS and table[p] not in _SIDES for _, _, p in hits):
        hits = [h for h in hits if h[2] not in _BARE_POSITIONS]  # "low down in my back": the back
    # a side said of the part after it ("on my left hand") is that part's side, no place of its own
    hits = [h for i, h in enumerate(hits) if not (table[h[2]] in _SIDES and i + 1 < len(hits)
                                                  and not text[h[1]:hits[i + 1][0]].strip())]
    for start, _, phrase in hits:
        one = phrase[:-1] if phrase.endswith("s") and phrase[:-1] in sided else phrase
        side = _SIDE_BEFORE.search(text[:start])
        out.append(f"{side.group(1)} {one}" if side and one in sided else table[phrase])
    # a side said on its own beside one paired part ("Same eye, the left.", "the right one, my ear"): that part's side
    starts = {h[0] for h in hits}
    bare = {m.group(1) for m in re.finditer(r"\b(left|right)\b(?:[- ]hand(?:ed)?)?", text)
            if not any(text[m.end():st].strip() in ("", "side of the", "side of my") for st in starts if st >= m.end())
            and not re.match(r"\s+side\b", text[m.end():])}
    unsided = [x for x in out if x in sided]
    if len(bare) == 1 and len(unsided) == 1 and not any(x.startswith(("left ", "right ")) for x in out):
        out = [f"{next(iter(bare))} {x}" if x in sided else x for x in out]
    # a part named twice, once with its side ("earache in my left ear"): one place, the sided one
    out = [x for x in out if not (x in sided and (f"left {x}" in out or f"right {x}" in out))]
    return list(dict.fromkeys(out))


_TIME_POINT = re.compile(
    r"\b(?:last|this|yesterday|tomorrow|that|one|the other|on (?:monday|tuesday|wednesday|thursday|friday|saturday"
    r"|sunday))\s+(?:night|morning|evening|afternoon)\b|\btonight\b")
"""When something happened ("last night", "this morning"), not a time of day that makes it worse."""
_ONSET_STORY = re.compile(r"\b(?:came on|started|starting|began|begun|happened|kicked in|woke me|hit me|struck)\b")
"""A clause that tells how a problem began: "it came on when I was lifting" is the onset's circumstance."""


def factors(text: str, table: dict[str, str]) -> dict[str, list[str]]:
    """Aggravating / alleviating factors of one clause, keyed by the CMAS attribute ("nothing makes it worse"
    gives ``not_aggravating_factor``). A time point is no factor ("it came on last night" is an onset, "worse at
    night" a factor), and a clause telling how the problem began has one only when it says worse or better ("it
    started when I was watching TV" gives none)."""
    text = _TIME_POINT.sub(" ", text)
    hits = phrase_hits(text, table)
    if not hits:
        return {}
    if _ALL.search(text) and _AGG.search(text):  # "worse at night and better with rest": one clause each
        parts = [p for p in re.split(r"\b(?:and|but|while|although|whereas)\b|[,;]", text) if p.strip()]
        if len(parts) > 1:
            out: dict[str, list[str]] = {}
            for part in parts:
                for k, v in factors(part, table).items():
                    out.setdefault(k, []).extend(x for x in v if x not in out.get(k, []))
            return out
    if _AGG.search(text) or (_WHEN.search(text) and not _ALL.search(text) and not _ONSET_STORY.search(text)):
        kind = "aggravating_factor"
    elif _ALL.search(text):
        kind = "alleviating_factor"
    else:
        return {}
    return {f"not_{kind}" if _NEG_FACTOR.search(text) else kind: hits}


def age(text: str) -> str | None:
    """The age the patient says ("I'm 45", "a 45-year-old", "I'm seventy-one"), in digits."""
    m = _AGE.search(with_digits(text))
    return (m.group(1) or m.group(2)) if m else None


_STATED_AGE = re.compile(
    r"\b(?:i am|i'm|im|i turned|i've just turned|i just turned)\s+(\d{1,3})\s*(?:[.,;!?]|$|and\b|now\b)")


def stated_age(text: str) -> str | None:
    """An age the patient states unasked: "I'm 67." ends the clause at the number ("I'm 30 weeks" and "I'm 5 foot"
    go on with a unit and are no age)."""
    m = _STATED_AGE.search(with_digits(text))
    return m.group(1) if m and 0 < int(m.group(1)) < 120 else None


_CLOCK_TIME = re.compile(
    r"\b(?:since|until|till|from|before|after|around|about|at|by)\s+(?:about\s+|around\s+|roughly\s+|just\s+)?"
    r"\d{1,2}(?=\s*(?:ish\b|last night|this (?:morning|afternoon|evening)|in the (?:morning|afternoon|evening)|"
    r"at night|"
    r"tonight|yesterday|o'clock))|\b\d{1,2}\s*(?:last night|this (?:morning|afternoon|evening)|in the (?:morning|"
    r"afternoon|evening)|at night|tonight)\b", re.I)
"""A time of day said as a bare hour ("since about ten last night", "around 6 this morning")."""
_READING_SAID = re.compile(
    r"\b(?:thermometer|temp|temperature|sugars?|glucose|sats|saturations?|oxygen|reading|meter|pulse|heart rate|"
    r"blood pressure|bp|weigh(?:s|ed|t)?)\b[^.,;!?]{0,25}?\d{1,3}(?:(?:\.|\s+point\s+)\d{1,2})?", re.I)
"""A reading the patient quotes ("the thermometer says 38 point 1"): its number is the reading's."""


def bare_age(text: str) -> str | None:
    """An age given as a bare number, when the doctor asked for it ("Sure, 39."). A number that counts something after
    it ("all four limbs", "two days", "3 times", any plural noun: "two tumbles") or follows a time word ("an hour ago",
    "at 3") is no age, nor an age something happened at ("a fit when I was 12", "aged 12": the past's), nor an
    ordinal's number ("cycle 3 day 10", "stage 2", "type 1")."""
    text = _READING_SAID.sub(" ", _CLOCK_TIME.sub(" ", with_digits(text)))  # a time or a reading is no age
    m = re.search(r"(?<!\bat )(?<!\bby )(?<!\bin )(?<!\bover )(?<!\bfor )(?<!\bwithin )(?<!\bafter )(?<!out of )"
                  r"(?<!\bwas )(?<!\bwere )(?<!\baged )(?<!\bage of )(?<!\bage )(?<!\bday )(?<!\bcycle )(?<!\bweek )"
                  r"(?<!\bround )(?<!\bstage )(?<!\bgrade )(?<!\btype )(?<!\blevel )(?<!\bnumber )(?<!\bsize )"
                  r"(?<!\bdose )(?<!\bbed )(?<!\broom )"
                  r"\b(\d{1,3})\b(?!\s*(?:[:.]\d|%|am\b|pm\b|o'clock\b|(?:limbs?|times?|days?|"
                  r"hours?|minutes?|mins?|weeks?|kids|children|tablets|pills|cups|mugs|pints|units|cigarettes|fags|"
                  r"pounds|stones?|kilos|kg|lbs|a day|a week|out of|/|"
                  r"(?:years?|yrs?|months?)\s+(?:ago|back|before|earlier|"
                  r"previously|since|later))\b|\s+(?!(?:as|is|was|has|this|his|its|yes|years?|yrs|"
                  r"plus|thanks)\b)[a-z]{3,}s\b))", with_digits(text))
    return m.group(1) if m and 0 < int(m.group(1)) < 120 else None


def sex(text: str, asked: bool = False) -> str | None:
    """The sex the patient states ("I'm a man"); ``asked``: the doctor asked for it, so a bare word answers."""
    text = with_digits(text)  # "I'm a fifty-two year old man"
    m = _SEX.search(text) or (_BARE_SEX.search(text) if asked else None)
    if not m:
        return None
    return "male" if m.group(1) in ("man", "male", "guy", "boy", "gentleman", "bloke", "chap", "fella", "fellow",
                                    "lad") else "female"


def dwelling(text: str) -> str | None:
    if not re.search(r"\b(live|living|stay|staying|home is)\b", text):
        return None
    m = _DWELLING.search(text)
    return m.group(1) if m else None


_SPAN = (r"(?:(?:about|around|nearly|almost|over|just over|just under)\s+)?(?:a|an|one|two|three|four|five|six|seven|"
         r"eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|a few|a couple of|several|\d+)\s+(?:years?|months?|"
         r"weeks?)\s+ago")
_WORK_ENDED = re.compile(rf"\b(?:until|till|up until|up to)\s+(?:last (?:year|month|week|summer|winter|spring|"
                         rf"autumn|christmas)|recently|{_SPAN}|(?:19|20)\d\d)\b")
"""When a job ended, said with it ("I was working as a chef until last year"): the patient works no more."""
_WORK_WORD = re.compile(r"\b(?:work|worked|working|job|jobs|employed|career|retired|business)\b|\bi was (?:a|an)\s",
                        re.I)
"""Work said in the sentence: "until five years ago" ends a job only when a job is what was said ("I smoked twenty
a day till about five years ago" had recorded a job given up)."""
_STOPPED_WHEN = re.compile(rf"\b(?:retired|stopped working|gave up work|finished work|left work|lost my job)\s+"
                           rf"(?:{_SPAN}|(?:in|last)\s+(?:(?:19|20)\d\d|year|\w+ year)|at\s+\w+(?:-\w+)?)\b")
"""When the patient stopped working, in their words ("I retired eleven years ago", "gave up work in 2019")."""


def job(text: str, asked: bool = False) -> str | None:
    if _WORK_ENDED.search(text):
        return None  # "I was working as a chef until last year": a past job (:func:`past_job`)
    for pat in _JOB:
        if m := pat.search(text):
            return m.group(1).strip()
    if m := _JOB_FIELD.search(text):
        return m.group(1)
    if m := _DRIVES.search(text):
        return f"{m.group(1)} driver"
    if asked:
        for m in _JOB_ASKED.finditer(text):
            if m.group(1).split()[0] not in _NOT_A_JOB:
                return m.group(1).strip()
    return None


_NOT_WORKING = re.compile(
    r"\bi(?:'m| am)\s+(?:not working|not in work|unemployed|out of work|between jobs|retired|off work|off sick|"
    r"on (?:the )?sick|signed off|a pensioner|on benefits)\b|"
    r"\bi (?:retired|don't work|do not work|no longer work|stopped working|gave up work|lost my job|can't work)\b")
_PAST_JOB = re.compile(r"\bi (?:used to be|used to work as|worked as|retired as|was working as|was)\s+(?:a |an )?"
                       r"([a-z][a-z\- ]{1,30}?)(?=[,.;!?]|\s+(?:and|but|until|till|up until|up to|for|before|in|"
                       r"at|most|all|since|when|from|back|years?)\b|$)")


def past_job(text: str, asked: bool = False) -> dict | None:
    """A patient not working now: MediTOD's occupation with status "false" (the guide's "has the patient worked at
    the above occupation?"), the job they had as its value ("I'm not working at the moment. I used to be a
    librarian"), when they stopped as its when, in their words ("retired eleven years ago", "until last year", else
    "retired"). Said without the question, only with a plain "I'm not working" or "I'm retired"
    ("I used to be a smoker" is no job)."""
    stop = _NOT_WORKING.search(text) or (_WORK_ENDED.search(text) if _WORK_WORD.search(text) else None)
    if not (stop or asked):
        return None
    out: dict = {"status": "false"}
    if (m := _PAST_JOB.search(text)) and m.group(1).split()[0] not in _NOT_A_JOB:
        out["value"] = m.group(1).strip()
    elif stop is None:
        return None
    # the patient's words, as MediTOD's annotators keep a when
    if (m := _STOPPED_WHEN.search(text) or _WORK_ENDED.search(text)) is not None:
        out["when"] = m.group(0)
    elif re.search(r"\bretired\b", text):
        out["when"] = "retired"
    return out


_POSITIVE_TEST = re.compile(
    r"\b(?:pregnancy test|test)\b[^.;!?]{0,40}?\b(?:came (?:up|back|out)|was|is|turned|showed|said)\s+"
    r"(?:as\s+)?(?:positive|pregnant)\b|\bpositive (?:pregnancy |home )?test\b|\bfound out (?:i|she) (?:was|is|'m) "
    r"expecting\b|\b(?:i'm|i am|she's|she is) expecting\s*(?:[.,;!?]|$|again\b|(?:a|our|my|her) (?:baby|first|second))")
_PERIOD_WORD = re.compile(r"\b(?:periods?|pregnan\w*|expecting)\b")


_NEGATIVE_TEST = re.compile(
    r"\b(?:pregnancy test|test)\b[^.;!?]{0,40}?\b(?:came (?:up|back|out)|was|is|turned|showed|said)\s+(?:as\s+)?"
    r"(?:negative|not pregnant)\b|\bnegative (?:pregnancy |home )?test\b|\b(?:test|tests)\s+(?:\w+\s+)?negative\b")


def pregnancy_test_negative(text: str) -> bool:
    """A pregnancy ruled out by a test ("my period's late but the test was negative"): the pregnancy is denied (a
    late period with a negative test had raised the ectopic emergency as possible)."""
    return bool(_NEGATIVE_TEST.search(text)) and bool(_PERIOD_WORD.search(text))


def pregnancy_test_positive(text: str) -> bool:
    """A pregnancy told without the word: "my period's late and the test I did at home came up positive", "I found
    out I was expecting". A positive test is the pregnancy's only when the utterance is about a period or a
    pregnancy (a test positive for covid is not)."""
    return bool(_POSITIVE_TEST.search(text)) and bool(_PERIOD_WORD.search(text))


def travel(text: str) -> bool:
    return bool(_TRAVEL.search(text))


_RETURNED = re.compile(r"\b(?:came|come|coming|got|get|getting|flew|flown|flying|arrived|returned|back|home)\s+"
                       r"(?:back\s+|in\s+|home\s+|over\s+|just\s+)?from\s+(?!(?:Monday|Tuesday|Wednesday|Thursday|"
                       r"Friday|Saturday|Sunday|January|February|March|April|May|June|July|August|September|October|"
                       r"November|December|I)\b)([A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)")
"""A return from a named place ("I came back from Australia three days ago", "just flown in from Lagos"): a
journey, said without a travel word. Case-sensitive on the place: "came home from work" is no journey."""


def returned_from(original: str) -> str | None:
    """The place a patient says they came back from, in their words, or None."""
    m = _RETURNED.search(original)
    return m.group(1) if m else None


def destination(original: str) -> str | None:
    m = _DESTINATION.search(original)
    return m.group(1) if m else None


def where(text: str) -> str | None:
    m = _WHERE.search(text)
    return m.group(1) if m else None


def impact(text: str) -> str | None:
    """Did the medication help: MediTOD writes ``yes`` / ``no`` / ``maybe``."""
    if _IMPACT_NO.search(text):
        return "no"
    if _IMPACT_MAYBE.search(text):
        return "maybe"
    if _IMPACT_YES.search(text):
        return "yes"
    return None
