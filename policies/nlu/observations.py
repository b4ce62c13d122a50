"""What patients observe and measure, read as the finding it shows.

Two things a phrase list cannot spell, because patients combine their own words freely:

- **the colour of what comes out**: a fluid word and a blood colour in one clause ("my pee's gone pink", "phlegm
  streaked red", "stools dark and tarry") is the bleeding of that site (haematuria, haemoptysis, haematemesis, rectal
  bleeding; black or tarry stool is melaena). The fluids and colours are lists of words, combined by position, so
  "wee that looks pinky-red" and "reddish urine" need no phrase of their own.
- **a reading the patient quotes** from a meter or a thermometer ("sugars of 28", "temp 39.4", "the finger thing
  said 88"): the abnormal finding by the published threshold (below). The unit is told by the number's range
  (mmol/L or mg/dL, Celsius or Fahrenheit). A normal temperature is a denied fever (MediTOD annotates "it was normal"
  so); other normal readings show nothing.

Each finding is a span (:func:`observed`) with a key ``O:<slot type>:<value>[:normal]``; the mention finder reads it
with medspaCy ConText like a listed phrase, so "my wee isn't red" denies it and "my dad's sugar was 20" is his. The
span is the colour or the number: the words before it (a negation, a relative) govern it as they would a symptom.
"""

from __future__ import annotations

import re

from agent.core.numbers import with_digits

PREFIX = "O:"
NORMAL = ":normal"
KIND = ":kind"  # a kind of the finding ("the room spins" of dizziness): said, it affirms; denied, it denies nothing

_GAP = r"(?:[\s-]+(?!(?:and|but|or|so|because|while)\b)[\w'’]+){0,5}?[\s-]+"
"""Up to five words between a fluid and its colour, none of them a clause's joining word, no punctuation: "my wee
has gone the colour of cola", not "my poo is normal but my eyes are red"."""

_FLUIDS: dict[str, str] = {
    # what comes out -> the words for it (lower case, regex alternation)
    "urine": r"wee|wees|pee|pees|urine|piss|wee-wee",
    "stool": r"poo|poos|poop|stools?|motions?|bowel movements?|faeces|feces|number twos?|diarrh(?:o)?ea",
    "vomit": r"vomit|sick bowl|puke",
    "sputum": r"phlegm|sputum|spit|mucus|snot|what i cough up|what i'm coughing up|what i bring up",
}
_RED = r"red|reddish|reddy|pink|pinky|pinkish|rosé|rose-coloured|rose-colored|bloody|blood-stained|bloodstained|" \
       r"blood-streaked|blood-tinged|red-tinged|pink-tinged|streaked red|streaked pink|crimson|maroon"
_BLACK = r"black|tarry|tar-like|like tar|jet black|pitch black"
_COFFEE = r"coffee grounds|coffee-grounds"

_BLEEDING_OF: tuple[tuple[str, str, str], ...] = (
    # (fluid, colours, the symptom value): NICE CKS Haematuria, Gastrointestinal bleeding (melaena is black, tarry
    # stool; haematemesis may look like coffee grounds), Haemoptysis
    ("urine", _RED, "hematuria"),
    ("stool", _BLACK, "melena"),
    ("stool", _RED, "rectal bleeding"),
    ("vomit", f"{_RED}|{_COFFEE}", "hematemesis"),
    ("sputum", _RED, "hemoptysis"),
    # not a bleeding, read the same way: NICE CKS UTI (cloudy urine); urine the colour of cola or strong tea is dark
    # urine (HPO "Dark urine", the NHS Jaundice page's "dark pee"), which a clinician reads with the rest (jaundice,
    # a nephritis); as a bleeding it had raised a cancer warning for a jaundiced patient
    ("urine", r"cloudy|murky|milky|turbid", "cloudy urine"),
    ("urine", r"cola|coca-cola|coke|brown|tea-coloured|tea-colored|colour of tea|color of tea|strong tea",
     "dark urine"),
)


def _colour_patterns() -> list[tuple[re.Pattern[str], str]]:
    out = []
    for fluid, colours, value in _BLEEDING_OF:
        words = _FLUIDS[fluid]
        # fluid first: "my pee was bright pink", "stools are dark and tarry" (the colour is the span)
        out.append((re.compile(rf"\b(?:{words})(?:['’]s)?\b{_GAP}(?:(?:bright|dark|deep|light|pale|very|really|quite|"
                               rf"a bit|kind of|sort of|all|(?:dark|black|red|sticky|runny) (?:and|&))\s+)?"
                               rf"(?P<c>{colours})\b", re.I), value))
        # colour first, next to it: "pink wee", "reddish urine", "blood-streaked phlegm" ("the red wine made me wee"
        # is no colour of the wee)
        out.append((re.compile(rf"\b(?P<c>{colours})\s+(?:{words})\b", re.I), value))
    return out


_COLOURS = _colour_patterns()

# -- readings ---------------------------------------------------------------------------------------------------

_UNITS_SAID = "one|two|three|four|five|six|seven|eight|nine"
_NUMBER = (rf"(?P<n>\d{{1,3}}(?:(?:\.|\s+point\s+)\d{{1,2}})?|(?:twenty|thirty|forty)(?:[- ](?:{_UNITS_SAID}))?"
           rf"(?:\s+point\s+(?:\d|{_UNITS_SAID}|nought|zero))?)")
"""A number, its decimals said with a point or the word ("38.1", "38 point 1"), or said in words as a thermometer's
or a meter's reading is read out ("thirty-eight point five", "thirty-nine")."""
_BEFORE_NUMBER = (r"(?:[\s,:-]+(?!(?:but|because|or)\b)[\w'’]+){0,6}?[\s,:-]+"
                  r"(?:of\s+|at\s+|about\s+|around\s+|over\s+|above\s+|nearly\s+|almost\s+|under\s+|below\s+|to\s+)?")
"""Up to six words between what was measured and the number ("my sugars were", "my oxygen on the finger thing said")."""
_MEASURES: dict[str, str] = {
    # a bare "meter" is the glucose meter, not a peak-flow one
    "glucose": r"(?:blood\s+)?(?:sugars?|glucose|bms?|bgs?|glucometer|glucose meter|sugar meter)|(?<!flow )meter|"
               r"finger[- ]?prick(?: test)?",
    "temperature": r"temperature|temp|thermometer",
    "oxygen": r"oxygen|o2|sats|saturations?|oximeter|sat level|oxygen levels?",
    "ketones": r"ketones?|ketone (?:strip|reading|level|meter)s?",
    "pulse": r"pulse|heart ?rate|hr|(?:apple |smart ?)?watch|fitbit|garmin|heart (?:was|is|'s|’s|going|at|hit|hitting)",
}
_NOT_A_READING = (r"(?!\s*(?:years?|days?|weeks?|months?|hours?|minutes?|times?|kg|stone|pounds?|lbs?|units?|"
                  r"tablets?|mg\b))")
"""A number counting something else ("my sugar's been up for 3 days", "I take 20 units")."""
_READING = {kind: re.compile(rf"\b(?:{words})(?:['’]s)?\b{_BEFORE_NUMBER}{_NUMBER}\b{_NOT_A_READING}", re.I)
            for kind, words in _MEASURES.items()}
_METER_HIGH = re.compile(r"\b(?:meter|glucometer|monitor|sensor|libre|reading)\b(?:\s+\w+){0,3}?\s+"
                         r"(?:says?|said|reads?|showed|shows|showing|displays?|displayed|flashing|flashed)\s+"
                         r"(?:just\s+)?['\"‘“]?(?P<c>HI|LO|high|low)\b", re.I)
_SUGAR_WORD = re.compile(r"\b(?:blood\s+)?(?:sugars?|glucose|bms?)\b(?:\s+(?:levels?|readings?))?\s+(?:is|are|was|were|"
                         r"have been|has been|'s been|’s been|been|keep|keeps|running|gone|going|getting)\s+"
                         r"(?:(?:really|very|so|too|way|super|extremely|dangerously|always|still)\s+)?"
                         r"(?P<c>high|higher|low|lower|through the roof|sky high|sky-high)\b", re.I)
"""A blood sugar said in words to be high or low ("my sugars have been really high"); "a bit high" is no finding."""
_KETONE_WORD = re.compile(r"\bketones?\b(?:\s+(?:levels?|readings?|strips?))?\s+(?:is|are|was|were|have been|has been|"
                          r"'s been|’s been|been|came up|came back|showed|show|went|turned|gone)\s+(?:\w+\s+)?"
                          r"(?P<c>high|raised|positive|up|purple|dark purple)\b", re.I)


_KETONES_FOUND = re.compile(
    r"\b(?:got|have|has|had|there (?:are|were|was|is)|there's|showing|showed|shows|found|picked up)\s+(?:\w+\s+)?"
    r"(?P<c>ketones?)\s+(?:on|in)\s+(?:the|my|his|her)\s+(?:strip|stick|urine|wee|test|meter|blood)", re.I)
"""Ketones found on a test strip or meter (NICE NG17/NG18: ketones with a high glucose is ketoacidosis's sign)."""
_DIMMED = (r"(?:blurry|blurred|blurty|fuzzy|funny|misty|hazy|cloudy|double|weird|strange|wobbly|patchy|dim|foggy|"
           r"spotty|wavy|odd|muffled|tinny|echoey)\b")
"""What a sense "went" when it changed without going ("my vision went blurry", "my hearing went muffled"): an
impairment, not a loss."""
_FACULTY_GONE = (
    (re.compile(r"\bhearing\b(?:\s+in\s+(?:my|the|his|her)\s+(?:left\s+|right\s+)?ears?)?\s+(?:has\s+|have\s+|had\s+|"
                r"'s\s+|’s\s+)?(?:just\s+|completely\s+|totally\s+|suddenly\s+|all\s+but\s+)?(?P<c>vanished|disappeared|"
                r"gone|went|packed in|packed up|died|stopped working|shut off|switched off|cut out|dropped out|"
                r"went dead|gone dead|gone deaf|went deaf)\b", re.I),
     "symptom:hearing impairment"),
    # ... or said of the ear itself ("my left ear had simply gone", "the ear went dead overnight"); an ear "gone" red
    # or funny is said of its look or feel, not its hearing
    (re.compile(r"\b(?:my|the|his|her)\s+(?:left\s+|right\s+)?ear\s+(?:has\s+|had\s+|'s\s+|’s\s+)?(?:just\s+|simply\s+|"
                r"completely\s+|totally\s+|suddenly\s+)?(?P<c>gone deaf|went deaf|gone dead|went dead|packed in|died|"
                r"(?:gone|went)(?=\s*(?:[,.;!?]|$|as\b|and\b|overnight\b|completely\b|totally\b)))", re.I),
     "symptom:hearing impairment"),
    (re.compile(r"\b(?:sight|vision|eyesight)\b(?:\s+in\s+(?:my|the|his|her)\s+(?:left\s+|right\s+)?eyes?)?\s+(?:has\s+|"
                r"have\s+|had\s+|'s\s+|’s\s+)?(?:just\s+|completely\s+|totally\s+|suddenly\s+)?(?P<c>vanished|"
                r"disappeared|gone|went(?!\s+(?:all\s+|a\s+bit\s+|really\s+|very\s+)?" + _DIMMED + r")|packed in|died|"
                r"shut off|switched off|cut out|gone black|went black)\b", re.I),
     "symptom:vision loss"),
)
"""A faculty said to have vanished ("the hearing in my left ear has just vanished", "the sight in that eye went"):
its sudden loss (NHS "Sudden hearing loss", "Vision loss")."""
_CANNOT = r"(?:can't|can’t|cannot|can not|couldn't|couldn’t|could not)"
_NOTHING = r"(?:anything|a thing|owt|nothing|a single thing)(?:\s+at all)?"
_NOTHING_THROUGH = (
    (re.compile(rf"\b(?P<c>{_CANNOT}\s+see\s+{_NOTHING})\s+(?:out of|with|through|from|in)\s+"
                r"(?:my|the|his|her|that|this)\s+(?:(?:left|right|good|bad)\s+)?eye\b", re.I), "symptom:vision loss"),
    (re.compile(rf"\b(?P<c>{_CANNOT}\s+hear\s+{_NOTHING})\s+(?:out of|with|through|from|in|on)\s+"
                r"(?:my|the|his|her|that|this|it)\b", re.I), "symptom:hearing impairment"),
)
"""Nothing at all seen or heard through one eye or ear ("I can't see anything at all out of my right eye"): a loss of
the faculty on that side, not a blurring (NHS "Vision loss": sudden loss of vision in one eye)."""


def _value(n: str) -> float:
    """The number of :data:`_NUMBER`'s text ("38 point 1" is 38.1, "thirty-eight point five" 38.5)."""
    said = with_digits(re.sub(r"\b(?:nought|zero)\b", "0", n.lower()))
    return float(re.sub(r"\s+point\s+", ".", said))


def _glucose(n: float) -> str | None:
    """NICE NG17/NG18 and NICE CKS Hypoglycaemia: blood glucose above 11 mmol/L (200 mg/dL) is hyperglycaemia (DKA's
    threshold), below 4 mmol/L (70 mg/dL) hypoglycaemia. Under 35 is mmol/L, 40 and over mg/dL (US meters)."""
    if n < 35:
        return "hyperglycemia" if n > 11 else "hypoglycemia" if n < 4 else None
    if n >= 40:
        return "hyperglycemia" if n >= 200 else "hypoglycemia" if n < 70 else None
    return None


def _temperature(n: float) -> str | None:
    """NICE NG143 / NICE CKS Fever: 38 C (100.4 F) and above is a fever; below 37.5 C (99.5 F) is none."""
    if 30 <= n <= 45:
        return "fever" if n >= 38 else "fever" + NORMAL if n < 37.5 else None
    if 90 <= n <= 110:
        return "fever" if n >= 100.4 else "fever" + NORMAL if n < 99.5 else None
    return None


def _oxygen(n: float) -> str | None:
    """BTS guideline for oxygen use in adults (2017): an oxygen saturation below 92% is hypoxaemia in a patient not
    known to retain CO2; 92% and over shows nothing here."""
    return "hypoxemia" if 50 <= n < 92 else None


def _ketones(n: float) -> str | None:
    """NICE NG17/NG18 (Joint British Diabetes Societies): blood ketones of 1.5 mmol/L and over are raised (3 and over
    with hyperglycaemia is DKA)."""
    return "ketosis" if 1.5 <= n < 10 else None


TEMPERATURE_TAKEN = "body temperature measurement"
"""The medical test a temperature the patient quotes was read by (the vocabulary's value)."""


def _pulse(n: float) -> str | None:
    """A heart rate the patient read off a watch or a monitor: 120 a minute and over at rest is a racing heart, what
    the patient feels as palpitations (NICE CKS Palpitations: a sustained rate over 120 is a red flag with chest pain
    or breathlessness); up to 250, what a wrist device shows."""
    return "palpitations" if 120 <= n <= 250 else None


_VERDICT = {"glucose": _glucose, "temperature": _temperature, "oxygen": _oxygen, "ketones": _ketones,
            "pulse": _pulse}
_BEATS = re.compile(rf"{_NUMBER}\s*(?:bpm|beats (?:a|per) minute|beats a min|on (?:my|the|his|her) (?:apple |smart ?)?"
                    rf"(?:watch|fitbit|garmin|monitor))\b", re.I)
"""A heart rate said with its unit or its device after it ("like 200 bpm", "170 on my watch")."""
_TEMP_TAKEN = re.compile(
    rf"{_NUMBER}\s*(?:°\s*[cf]?\s*|degrees?\s+)?(?:(?:under|in|from)\s+(?:his|her|my|their|the)\s+(?:arm|armpit|ear|"
    rf"mouth|tongue|forehead)|on the (?:thermometer|forehead strip|ear thermometer))\b", re.I)
"""A temperature told by where it was taken rather than named ("39.8 under his arm", "38.4 in her ear", "39 on the
thermometer"): read as a temperature (NICE NG143 names the armpit and the ear as the places to take a child's)."""


# -- what the patient senses ------------------------------------------------------------------------------------

_SURROUNDINGS = (r"(?:room|whole room|world|whole world|everything|everything around me|ceiling|walls|floor|things|"
                 r"my surroundings|the place|place)")
_MOVING = (r"spinning|spun|spins|spin|going (?:a)?round(?: and (?:a)?round)?|went (?:a)?round|turning|whirling|"
           r"tilting|swaying|rocking|lurching|moving")
_SPINNING = re.compile(rf"\b{_SURROUNDINGS}\b(?:\s+(?:was|were|is|are|'s|’s|kept|keeps|started|starts|seemed|seems|"
                       rf"felt|feels|looked|looks|like|it|to|be|just|all|suddenly|really|still|not|n't|didn't|"
                       rf"doesn't|did|does|never|isn't|wasn't|round|around|me|on|going|been|has|had)){{0,4}}\s+"
                       rf"(?P<c>{_MOVING})\b", re.I)
"""The surroundings moving: vertigo as the NHS describes it ("feeling like everything around you is spinning"), said
of whatever surrounds the patient ("the whole room was going round", "the ceiling started tilting"). MediTOD records
vertigo as dizziness. The span is the movement; "the room doesn't spin" denies the spinning, not the dizziness a
patient came with (:data:`KIND`)."""
_SOUND = (r"ringing|buzzing|whooshing|swooshing|hissing|humming|roaring|rushing|whistling|throbbing|pulsing|thumping|"
          r"(?:high|low|constant|faint|loud)?\s*(?:hiss|buzz|hum|whine|whistle|ring)")
_EAR = (r"(?:(?:my|the|both|one|one of my|either|that|this|the same)\s+)?(?:(?:left|right|inner|bad|good)\s+)?"
        r"ears?\b")
_OUT_OF = (r"[^.!?]{0,120}?\b(?P<c>(?:stuff|gunk|goo|gunge|pus|fluid|liquid|muck|discharge|yuck)\b[^.!?]{0,30}?\b"
           r"(?:coming|came|"
           r"comes|leaking|leaked|leaks|running|ran|runs|oozing|oozed|oozes|dripping|dripped|drips|weeping|pouring|seeping)"
           r"\s+(?:out\s+)?(?:of|from))\s+")
_EAR_DISCHARGE = re.compile(rf"\bears?\b{_OUT_OF}(?:it|them|her ear|his ear|my ear|the ear|that ear)\b|"
                            rf"(?P<d>(?:stuff|gunk|goo|gunge|pus|fluid|liquid|muck|discharge)\b[^.!?]{{0,30}}?\b(?:coming|"
                            rf"leaking|running|oozing|dripping|weeping|pouring|seeping)\s+(?:out\s+)?(?:of|from)\s+"
                            rf"(?:her|his|my|the|their|that)\s+(?:left\s+|right\s+)?ears?)\b", re.I)
"""A discharge told as what comes out of the ear, named before ("her ear ... yellowy stuff coming out of it") or after
("gunk leaking from his ear"): the ear's discharge (NHS "Ear infections")."""
_COUGHED_UP = re.compile(
    r"\b(?:bring(?:ing|s)?|brought|cough(?:ing|ed|s)?|hack(?:ing|ed)?|spit(?:ting)?|hawk(?:ing|ed)?)\s+up\s+"
    r"(?P<c>(?:(?:this|that|some|a\s+lot\s+of|lots\s+of|loads\s+of|horrible|thick|sticky|nasty|gross)\s+)*"
    r"(?:(?:green|greeny|yellow|yellowy|brown|browny|grey|white|clear|frothy)\s+)*"
    r"(?:muck|gunk|goo|gunge|slime|crud|gloop|snot|mucus|phlegm|stuff|green|yellow|brown|grey))\b", re.I)
"""Phlegm told as what is coughed or brought up ("bringing up this green muck every morning"; NHS "Chest infection":
"coughing up yellow or green mucus"), in the words patients use for it; blood coughed up is hemoptysis's."""

_EAR_NOISE = (
    # "a whooshing noise in my ear", "ringing in both ears"
    re.compile(rf"\b(?P<c>{_SOUND}|(?:a\s+)?noises?|(?:a\s+)?sounds?)(?:\s+(?:noise|noises|sound|sounds))?\s+"
               rf"(?:in|inside|in\s+one\s+of)\s+{_EAR}", re.I),
    # "my ears are ringing", "my left ear keeps buzzing"
    re.compile(rf"\b{_EAR}(?:\s+(?:is|are|'s|’s|keep|keeps|kept|have been|has been|been|won't stop|started|start|"
               rf"just|always|constantly|still)){{0,3}}\s+(?P<c>{_SOUND})\b", re.I),
    # "the hearing in my left ear has gone, and there's a ringing in it": the ear named before, "it" after
    re.compile(rf"\b{_EAR}\b[^.!?]{{0,80}}?\b(?P<c>{_SOUND})(?:\s+(?:noise|noises|sound|sounds))?\s+in\s+(?:it|them)\b",
               re.I),
)
"""Tinnitus as the NHS defines it: hearing noises that do not come from outside, such as ringing, buzzing, hissing,
humming, whooshing or throbbing, said as a sound in the ear or as the ear making it. The span is the sound."""
_CANT_HEAR = re.compile(
    r"\b(?P<c>(?:can'?t|cannot|can barely|can hardly|can only just|barely|hardly|struggl\w+ to|couldn'?t|"
    r"could barely)\s+hear\s+(?:anything\s+|a thing\s+|much\s+)?(?:at all\s+)?(?:out of|with|in|through|on)\s+"
    r"(?:it|that|this|my|the|one|either|his|her)\b)", re.I)
"""Hearing lost in one ear, said as what cannot be heard with it (NHS "Sudden hearing loss": hearing loss in one ear,
often noticed on waking; "I can barely hear out of it"): hearing impairment, which the sudden-hearing-loss rule reads
with its onset."""


_SIGHT = r"(?:eyesight|vision|sight|eyes?)"
_BLUR = (r"blurr?y|blurred|blurring|fuzzy|fuzzier|misty|hazy|cloudy|foggy|out of focus|smudged|smeary|wavy|"
         r"distorted|double")
_BLURRED_SIGHT = (
    # "my eyesight's gone a bit fuzzy", "the vision in my left eye is misty"
    re.compile(rf"\b{_SIGHT}(?:'s|’s)?{_GAP}(?P<c>{_BLUR})\b", re.I),
    # "fuzzy eyesight", "everything's gone misty in one eye" is the first
    re.compile(rf"\b(?P<c>{_BLUR})\s+(?:vision|eyesight|sight)\b", re.I),
)
"""Sight said to blur, in the patient's own pairing of words (NHS "Blurred vision": blurry, cloudy, misty, fuzzy):
the sight word and the blur word by position, so "my eyesight's gone a bit fuzzy" needs no phrase of its own. The
span is the blur word; "my eyes aren't blurry" is denied by ConText."""

_SEE = r"(?:see|sees|seeing|saw|seen|getting|get|gets|got|noticed|noticing|notice|there(?:'s|’s| is| are| were| was))"
_LIGHT = (r"flash(?:es)?|flashing|flashy|sparks?|sparkles?|sparkly|sparkling|flickers?|flickering|flicks? of light|"
          r"lightning(?: bolts?)?|streaks? of light|shooting stars?|twinkl(?:es?|ing|y)|glints?|pin ?pricks? of light|"
          r"bursts? of light|bright (?:lights?|streaks?|specks?|dots?)")
_EYE_PLACE = (r"(?:(?:my|the|his|her|one|both|either)\s+)?(?:(?:left|right|good|bad|other)\s+)?(?:eyes?|vision|sight|"
              r"eyesight|field of (?:vision|view))\b")
_SPECK = (r"specks?|spots?|dots?|blobs?|flecks?|cobwebs?|squiggl(?:es?|y (?:lines|bits))|threads?|strings?|hairs?|"
          r"tadpoles?|flies|midges|gnats|smudges?|black bits|dark bits|grey bits|gray bits|little bits|wiggly lines|"
          r"worms?|circles")
_DRIFT = r"float(?:s|ing|y)?|drift(?:s|ing)?|swim(?:s|ming)?|darting|dart about|flit(?:s|ting)?|moving about"
_VEIL = (r"curtain|shadow|veil|blind|shade|dark patch|black patch|grey patch|gray patch|blank patch|"
         r"blank (?:spot|bit|area)|dark (?:area|bit)|black (?:area|bit)|grey (?:area|bit)|gray (?:area|bit)|"
         r"darkness|blackness|greyness")
_OVER = (r"(?:over|across|covering|(?:coming|came|come|creeping|crept|moving|moved) in from|"
         r"coming (?:down|up|across|over)|"
         r"came (?:down|up|across|over)|come (?:down|up|across)|"
         r"drawn (?:down|across)|pulled (?:down|across)|(?:creeping|crept|creeps|moving|moved|spreading|spread|"
         r"rising|rose|risen)"
         r" (?:over|across|up|down)|in front of|blocking|"
         r"obscuring|down over|up over)")
_SEEN_PART = rf"(?:{_EYE_PLACE}|what (?:i|he|she) (?:can |could )?see|my view|the view)"
"""What a veil covers: the eye, the vision or what is seen ("coming in from the side of my right eye")."""
_SEEING_LIGHTS = (
    # "I keep seeing little sparks", "I've been getting flashes" (not a "hot flash", not "in a flash")
    re.compile(rf"\b{_SEE}\s+(?:(?:these|those|little|tiny|small|bright|white|sudden|odd|funny|strange|weird|some|a|"
               rf"few|lots of|loads of|the odd|of)\s+){{0,3}}(?P<c>{_LIGHT})\b", re.I),
    # "sparks at the edge of my right eye", "flickering in the corner of my vision"
    re.compile(rf"(?<!\bhot )\b(?P<c>{_LIGHT})\s+(?:[\w'’]+\s+){{0,5}}?(?:in|at|on|across|around|from|out of)\s+"
               rf"(?:the\s+(?:edge|corner|side|top|bottom|outside|middle)s?\s+of\s+)?{_EYE_PLACE}", re.I),
)
"""Flashes of light as patients describe them (NHS "Retinal detachment": "flashes of light in your vision"): a light
word the patient sees, or one placed in the eye or the vision ("little sparks at the edge of my eye"). The span is the
light word; "no flashes in my eye" is denied by ConText."""
_FLOATING_SPECKS = (
    # "black specks floating about", "dots drifting across my eye"
    re.compile(rf"\b(?P<c>{_SPECK})\s+(?:[\w'’]+\s+){{0,2}}?(?:{_DRIFT})\b", re.I),
    # "spots in my vision", "cobwebs across my sight" (a speck "in my eye" is dirt: the vision or sight, or drifting)
    re.compile(rf"\b(?P<c>{_SPECK})\s+(?:in|across|over|before|in front of)\s+(?:(?:my|the|his|her)\s+)?"
               rf"(?:(?:left|right)\s+)?(?:vision|sight|eyesight|field of (?:vision|view))\b", re.I),
    # "a shower of black specks in one eye" (NHS "Floaters": "a sudden shower of floaters"): many at once are no grit
    re.compile(rf"\b(?P<c>(?:shower|burst|cloud|flurry|swarm|rash)\s+of\s+(?:[\w'’]+\s+){{0,2}}?(?:{_SPECK}))\b",
               re.I),
)
"""Floaters as the NHS describes them ("dots or lines (floaters) suddenly appear in your vision"): specks that drift,
or specks in the vision. A speck "in my eye" is grit, not a floater, so it takes the vision or a drift."""
_FIELD_LOST = (
    # "a grey curtain across the top half of what I can see", "like a shadow coming down over my vision"
    re.compile(rf"\b(?P<c>{_VEIL})\s+(?:[\w'’]+\s+){{0,3}}?{_OVER}\s+(?:(?:the|a|my|part of|half of|some of|from|"
               rf"top|bottom|upper|lower|left|right|outer|inner|side|edge|corner|half|bit|part|of|one|all|my)\s+){{0,5}}"
               rf"{_SEEN_PART}", re.I),
    # "half my vision has gone", "the bottom part of my sight is missing", "lost the top half of my vision"
    re.compile(r"\b(?P<c>(?:(?:lost|losing|lose|can'?t see|cannot see|can not see|missing)\s+)?(?:the\s+)?"
               r"(?:top|bottom|upper|lower|left|right|outer|inner|side)?\s*(?:half|part|bit|side|corner|chunk|section|"
               r"patch|edge)\s+(?:of\s+)?(?:my|the|his|her)\s+(?:(?:left|right)\s+(?:eye'?s\s+)?)?(?:vision|sight|"
               r"eyesight|field of (?:vision|view))(?:(?:'s|’s|\s+(?:has|is|was|had|just))?\s+(?:gone|missing|dark|"
               r"black|blank|grey|gray|disappeared|blacked out|went (?:dark|black|grey|gray|blank)))?)", re.I),
)
"""A part of the sight lost (NHS "Retinal detachment": "a dark 'curtain' or shadow moving across your vision"; RCOphth
sudden visual loss): a veil over what the patient sees, or a part of the vision said to be gone. Recorded as vision
loss, the sudden loss the red-flag screen asks an emergency for."""

_EATING_WELL = re.compile(
    r"(?<!not )(?<!n't )(?<!n’t )(?<!never )(?<!barely )(?<!hardly )(?<!stopped )(?<!stop )(?<!longer )(?<!quit )"
    r"\b(?P<c>(?:eating|feeding|eats|feeds)"
    r"(?:\s+and\s+drinking)?\s+(?:fine|normally|well|ok|okay|alright|as normal|as usual|"
    r"properly|like a horse|plenty|loads)|(?:appetite|appetite's|appetite’s)\s+"
    r"(?:is\s+|has been\s+|'s been\s+|’s been\s+)?(?:fine|normal|good|ok|okay|the same|as normal|as usual|"
    r"unchanged))\b", re.I)
"""Eating said to be as usual ("I'm eating fine", "she's eating and drinking normally", "appetite's fine"): a normal
observation, so no loss of appetite (MediTOD annotates a stated normal as the negative)."""
_STEADY_WEIGHT = re.compile(
    r"\bweight(?:'s|’s)?(?:\s+(?:has|have|is|was|been|stayed|stays|staying|remained|kept|pretty|fairly|quite|about|much|"
    r"roughly|just|really|more or less|all|totally|completely)){0,3}\s+(?P<c>steady|stable|the same|unchanged|constant|"
    r"fine|normal|ok|okay|alright)\b", re.I)
"""A weight the patient says is steady ("my weight's been steady", "weight has stayed about the same"): a normal
observation, so no unexplained weight loss (the NHS asks "have you lost weight without trying?"; this is its no)."""


# -- someone else ill -------------------------------------------------------------------------------------------

_ILLNESS = (r"(?:bug|thing|symptoms?|illness|virus|cold|flu|cough|infection|sickness|tummy bug|stomach bug|lurgy|"
            r"it|this)")
_ILLNESS_NOUN = r"(?:bug|virus|cold|flu|cough|infection|sickness|tummy bug|stomach bug|lurgy|sore throat)"
"""An illness by name: "had a tummy bug from my boyfriend" (not "had this from my GP")."""
_INFECTION = (r"(?:whooping cough|chickenpox|chicken pox|measles|mumps|meningitis|scarlet fever|flu|influenza|covid|"
              r"norovirus|a bug|a tummy bug|a stomach bug|a virus|impetigo|conjunctivitis|slapped cheek|"
              r"hand,? foot and mouth|tonsillitis|strep throat|glandular fever|nits|headlice|head lice)")
"""Infections that pass between people, by the names parents and patients use (NHS Health A-Z, "Childhood
illnesses", "Infections")."""
_WHOSE = r"(?:his|her|my|the|their|our)"
_BE = r"(?:is|are|was|were|has been|have been)"
_SOME = r"(?:a lot of\s+|lots of\s+|some\s+|loads of\s+)?"
_AMONG_OTHERS = r"(?:school|class|nursery|creche|playgroup|work|office|ward|care home|halls|family|house)"
_WHO = (r"(?:my|a|the|our|his|her|their|someone|somebody|one of|people|others|school|work|nursery|him|them|us)"
        r"(?!\s+(?:own|self)\b)")
_AFTER_SAME = (r"(?=\s*(?:[.,;!?]|$|(?:but|and|as|a|too|last|over|before|recently|earlier|then|when|which|that|"
               r"about|around|few|couple|week|weeks|days?|ago|now|at|on|this|yesterday|for a|for two|for three|"
               r"for the)\b))")
_CONTAGION = (
    # "picked this bug up from my daughter", "caught a cold off my little boy"
    re.compile(rf"\b(?P<c>(?:caught|catch|catching|picked up|pick up|picked\s+(?:\w+\s+){{1,2}}up)"
               rf"(?:\s+(?:it|this|that|a|the|my|\w+))?(?:\s+{_ILLNESS})?\s+(?:off|from)\s+{_WHO})\b", re.I),
    # "got it from someone at work", "got this cough off my husband" (the thing got is an illness)
    re.compile(rf"\b(?P<c>(?:(?:got|get|getting|gotten)\s+(?:(?:a|the|this|that|my)\s+)?{_ILLNESS}|had\s+(?:a|the|this|that)"
               rf"\s+{_ILLNESS_NOUN})\s+(?:off|from)\s+"
               rf"{_WHO})\b", re.I),
    # "my flatmate had exactly the same symptoms", "the kids have had the same thing" (someone else: not "I have
    # the same pain", not "the same carpets")
    re.compile(rf"(?<!\bi )(?<!\bi've )(?<!\bwe )(?<!\bwe've )(?<!\bi’ve )(?<!\bwe’ve )\b(?P<c>(?:had|has|have|got|"
               rf"gotten|having)\s+(?:exactly\s+|just\s+|pretty much\s+)?the same(?:\s+{_ILLNESS}{_AFTER_SAME}|"
               rf"{_AFTER_SAME}))", re.I),
    # "there's something going round at work", "a bug doing the rounds"
    re.compile(r"\b(?P<c>going (?:a)?round|doing the rounds|going about)\b", re.I),
    # "in his school there is whooping cough", "there's been chickenpox at nursery": an infection among others
    re.compile(rf"\b(?P<c>(?:(?:at|in)\s+{_WHOSE}\s+{_AMONG_OTHERS}\s+there\s+{_BE}\s+{_SOME}{_INFECTION}|"
               rf"there(?:'s|’s|\s+{_BE})(?:\s+been)?\s+{_SOME}{_INFECTION}\s+(?:at|in)\s+{_WHOSE}\s+"
               rf"{_AMONG_OTHERS}))\b", re.I),
    # "half my class has been off with something", "everyone at work has had it"
    re.compile(r"\b(?P<c>(?:off|been off)\s+(?:sick|ill|poorly|with\s+(?:something|it|the same|this|"
               r"(?:a|the)\s+(?:\w+\s+)?(?:bug|virus|cold|flu|cough|infection|lurgy))|with\s+flu))\b", re.I),
)
"""Someone else ill with it, as patients tell it (NICE CKS and the OSCE history guides ask about unwell contacts):
caught off or from someone, someone who had the same, an illness going round, others off sick. Recorded as MediTOD's
exposure to a sick person; the span is the telling words, so "nobody else has had the same" is denied by ConText."""


# -- passing urine ----------------------------------------------------------------------------------------------

_VOID = (r"(?:wee|wees|pee|pees|a wee|a pee|go|(?:use |go to )?the (?:toilet|loo|bathroom|washroom|restroom|lav|"
         r"lavatory)|pass water|passing water|urinate|pass urine)")
"""Passing urine as patients say it: "to go", "for a pee", "the loo" (in a history, getting up at night to go, or
having to go every hour, is passing urine)."""
_TO_VOID = rf"(?:to|for|needing|need|wanting|want)\s+{_VOID}\b"
_NIGHT = (r"(?:(?:a|at|in the|every|each|during the|through the)\s+night(?:[- ]?time)?|nightly|overnight|at nights|"
          r"night[- ]?time)")
_OFTEN = (r"every\s+(?:half (?:an )?hour|hour|(?:couple|few) (?:of )?(?:hours|minutes)|\d+\s+minutes|"
          r"(?:five|ten|fifteen|twenty|thirty|forty) minutes|hour or (?:so|two))|all the time|constantly|non-?stop")
_LUTS: tuple[tuple[re.Pattern[str], str], ...] = (
    # NICE CKS LUTS in men / Urinary incontinence in women: storage symptoms
    # "up two or three times a night for a pee", "I wake up in the night needing the loo"
    (re.compile(rf"\b(?P<c>(?:up|get up|getting up|got up|wake up|waking up|woken up|wake|waking|woke)\b"
                rf"[^.;!?]{{0,40}}?\b{_NIGHT}\b[^.;!?]{{0,30}}?\b{_TO_VOID}|"
                rf"(?:up|get up|getting up|wake up|waking up|woken up)\b"
                rf"[^.;!?]{{0,30}}?\b{_TO_VOID}[^.;!?]{{0,30}}?\b{_NIGHT}|\bnights?\b[^.;!?]{{0,25}}?\b"
                rf"(?:up|get up|getting up|wake up|waking up)\b[^.;!?]{{0,30}}?\b{_TO_VOID})", re.I), "nocturia"),
    # "I need to go every twenty minutes", "back and forth to the loo every hour"
    (re.compile(rf"\b(?P<c>(?:{_TO_VOID}|(?:to|back and forth to|up and down to|running to|in and out of)\s+"
                rf"(?:the )?(?:toilet|loo|bathroom|lav))\s+(?:about\s+|around\s+|roughly\s+|nearly\s+|almost\s+)?"
                rf"(?:{_OFTEN}))\b", re.I), "urinary frequency"),
    # voiding: "it takes forever for my wee to get started" (hesitancy)
    (re.compile(r"\b(?P<c>(?:takes?|taking|took)\s+(?:ages|forever|a while|a long time|time)\s+(?:for\s+(?:my|the)\s+"
                r"(?:wee|pee|urine|stream|flow)\s+)?to\s+(?:get\s+(?:it\s+)?(?:started|going)|start|come|flow))",
                re.I), "urinary hesitancy"),
)


_URINE_PASSED = re.compile(
    r"(?<!\bno )(?<!\bany )(?<!\bfew )\b(?P<c>(?:wet|heavy|soaking|soaked|full|wee-y|wee)\s+nappy|"
    r"(?:wet|heavy|soaking|soaked|full)\s+nappies|(?:weeing|peeing|passing (?:urine|water)|wees|pees)\s+"
    r"(?:normally|fine|okay|ok|as usual|plenty|"
    r"a normal amount|like normal))\b", re.I)
"""Urine passed as usual, as parents and patients tell it (NICE NG143 asks after wet nappies; "still having wet
nappies"): the normal finding, so no oliguria ("no wet nappies" is the lexicon's oliguria, not this)."""

_ON_STANDING = re.compile(
    r"\b(?P<c>swimmy|woozy|light-?headed|funny|spacey|muzzy|(?:my\s+)?head\s+(?:swims|spins|goes)|"
    r"see(?:ing)? stars|(?:everything|it all|my vision)\s+goes\s+(?:black|grey|gray|dark))\b[^.;!?]{0,40}?\b"
    r"(?:when|if|as|"
    r"whenever|after)\s+(?:i|he|she|you)\s+(?:stand|stood|get|got|getting|standing|sit|sat)\s+up\b", re.I)
"""Light-headed on standing (NHS "Low blood pressure": dizziness or light-headedness when you stand up; NICE CG161
asks it of anyone who falls): the lightheadedness of the dataset, said in the words that are neither "dizzy" (the
dataset's dizziness) nor "faint" (a faint, or the lexicon's near-faint)."""
_FIERY_WEE = re.compile(
    r"\b(?P<c>(?:weeing|peeing|pissing|passing|pee(?:ing)?|wee(?:ing)?)\s+(?:out\s+)?"
    r"(?:razor ?blades|broken glass|glass|"
    r"fire|acid|knives|needles|hot coals|barbed wire|lava))\b", re.I)
"""Pain passing urine in its common similes (NHS "Cystitis": pain, burning or stinging when you pee; "like weeing
razor blades"): dysuria."""
_CANNOT_VOID = re.compile(
    r"\b(?P<c>(?:haven'?t|have not|hasn'?t|has not|not)\s+been\s+able\s+to|(?:can'?t|cannot|couldn'?t|could not|"
    r"unable to)(?:\s+(?:even|actually))?)\s+(?:pass (?:water|urine|a drop|anything)|wee|pee|urinate|"
    r"go for a (?:wee|pee)|"
    r"squeeze (?:a drop|anything) out|get (?:a drop|anything) out)"
    r"(?=\s*(?:[.,;!?]|$|at all|since|for|all|even though|though|no matter|however|despite|nothing|and|but|"
    r"so))", re.I)
"""Unable to pass urine at all, in the patient's words (NICE CKS Urinary retention (acute): unable to pass urine,
with a painful bladder): urinary retention. Said with a "since" or "at all" or as a whole clause; "can't wee
without it stinging" is how the passing feels, not a retention."""

_WEIGHT_LOST = re.compile(
    r"\b(?P<c>(?:lost|dropped|shed|losing|dropping|shedding|gone down)\s+(?:about\s+|around\s+|nearly\s+|almost\s+|"
    r"over\s+|more than\s+|roughly\s+|like\s+|maybe\s+|a good\s+|the best part of\s+|most of\s+|getting on for\s+|"
    r"well over\s+|close to\s+|the guts of\s+)?(?:a|half a|one|two|three|four|five|six|seven|eight|"
    r"nine|ten|eleven|twelve|fifteen|twenty|a couple of|a few|several|\d+(?:\.\d+)?)\s*(?:and a half\s+)?"
    r"(?:stones?|st|kilos?|kgs?|kilograms?|pounds|lbs?|dress sizes?|clothes sizes?|sizes?)\b)", re.I)
"""Weight lost said as an amount ("I've lost about ten kilos", "dropped two dress sizes"): the NHS asks "have you lost
weight without trying?"; the amount says the loss, whether or not the patient says "weight"."""
_TROUBLE_FROM = re.compile(
    r"\b(?:back|neck|knees?|hips?|shoulders?|legs?|arms?|feet|foot|ankles?|wrists?|hands?|elbows?|chest|stomach|tummy|"
    r"belly|head|joints?|teeth|tooth|jaw|ears?|eyes?|throat|side)(?:['’]s)?\s+(?:(?:has|have|is|are|'s|'ve)\s+)?"
    r"(?:been\s+)?(?:really\s+|properly\s+|still\s+)?(?P<c>(?:giving|given|gives|give)\s+(?:me|him|her|them)\s+"
    r"(?:real\s+|some\s+|a lot of\s+|no end of\s+|terrible\s+|such\s+)?"
    r"(?:grief|gyp|jip|jib|hell|gip|stick|trouble|bother|murder|agony|jaip|curry|heaps)|playing\s+up|"
    r"grumbling|niggling|nagging|acting up|"
    r"(?:been\s+)?killing\s+(?:me|him|her))\b", re.I)
_TROUBLE_WITH = re.compile(
    r"\b(?P<c>(?:bad|trouble|troubled|problems?|bother|bothered|issues?|martyr|suffering|plagued)\s+(?:again\s+)?"
    r"(?:with|from|by)\s+(?:my|his|her|their|the|me)\s+(?:(?:left|right|bad|dodgy|lower|upper)\s+)?"
    r"(?:back|neck|knees?|hips?|shoulders?|legs?|arms?|feet|foot|ankles?|wrists?|hands?|elbows?|joints?|jaw|side))\b",
    re.I)
"""The same trouble told of the person ("I'm bad with my back again", "I've had trouble with my hip since Christmas",
"a martyr to my knees"): a pain at the part named; the place is read from the words as for any pain."""
"""A part that troubles its owner, in the idioms of British and American speech ("my back's been giving me real grief",
"my knees have been playing up", "my feet are killing me"): a pain there (the MediTOD held-out dialogue's "knees giving
me trouble" is its joint pain)."""
_A_FIT = re.compile(r"\b(?:had|has|have|having|took|gone into|went into|going into)\s+(?:a|another|two|three|a few|"
                    r"some|several|his|her|their)?\s*(?:bad\s+|big\s+|funny\s+|sort of\s+|kind of\s+)?(?P<c>fits?)\b"
                    r"(?!\s+(?:and\s+(?:healthy|well)|of\s+(?:laughter|giggles|coughing|sneezing|rage|temper|pique)|"
                    r"for\b|to\b))", re.I)
"""A seizure said as "a fit" ("she had a fit at school", "he's having fits"; NICE NG217's lay word): "fit and
healthy", "a coughing fit" and "a fit of laughter" are no seizure, and "fit" alone is too often the adjective."""


# -- signs patients describe by what they do ---------------------------------------------------------------------

_SPOTS = r"(?:spots?|dots?|rash|marks?|blotch(?:es)?|pin ?pricks?|pinpricks?|freckles|specks?|bruises?)"
_PRESSED = (r"(?:when (?:i|you|we) (?:press|pressed|push|pushed|roll|rolled)|under (?:a|the) glass|"
            r"with (?:a|the) glass|"
            r"(?:i|we) did the glass test|the glass test|(?:i|we) pressed)")
_NON_BLANCHING = (
    # "they don't fade when I press", "the spots didn't go away under a glass"
    re.compile(rf"\b(?P<c>{_SPOTS})\b[^.;!?]{{0,80}}?\b(?:don'?t|doesn'?t|didn'?t|won'?t|do not|does not|did not|"
               rf"will not|never|aren'?t|are not|weren'?t|not)\s+(?:\w+\s+)?(?:fade|fading|go away|going away|"
               rf"disappear|disappearing|go pale|blanch|blanching|change|go white)\b", re.I),
    # "I did the glass test and you can still see them"
    re.compile(r"\b(?P<c>glass test)\b[^.;!?]{0,40}?\b(?:still (?:see|there|showing)|didn'?t (?:fade|go)|"
               r"don'?t (?:fade|go))", re.I),
)
_BLANCHING = re.compile(
    # "the few spots she's got fade when I press them": a rash that blanches (NICE NG240's glass test passed)
    rf"\b(?P<c>{_SPOTS})\b[^.;!?]{{0,60}}?(?<!n't )(?<!not )(?<!never )\b(?:fade|fades|faded|go away|goes away|"
    rf"went away|"
    rf"disappear|disappears|disappeared|go pale|goes pale|went pale|blanch|blanches|go white|goes white)\b"
    rf"[^.;!?]{{0,20}}?{_PRESSED}", re.I)
"""The glass test as parents do it (NICE NG240 Meningitis, NHS "Meningitis": a rash that does not fade when a glass
is pressed on it): spots said not to fade when pressed are the non-blanching rash; spots said to fade are its normal
finding, so the rash is denied."""

_CAME_ROUND = re.compile(
    r"\b(?P<c>(?:next thing (?:i|he|she|we) (?:knew|know|remember)|came (?:a)?round|came to|woke up|"
    r"found (?:myself|himself|herself))"
    r"\b[^.;!?]{0,30}?\b(?:on|lying on|flat on|face down on|sprawled on)\s+(?:the|my|his|her)\s+(?:\w+\s+)?"
    r"(?:floor|ground|pavement|road|carpet|deck|tiles|back|grass|bathroom floor|kitchen floor)|"
    r"(?:people|everyone|someone|a crowd|paramedics)\s+"
    r"(?:were\s+|was\s+)?(?:standing|stood|leaning|crowded|bending)\s+over\s+(?:me|him|her)|"
    r"(?:i|he|she)\s+(?:must have|must've|must of)\s+(?:gone|went|blacked|passed|conked)\s+out)\b", re.I)
"""Having come round, as people tell a faint they did not see (NHS "Fainting": you lose consciousness briefly and
come round): "the next thing I knew I was on the pavement", "people standing over me", "I must have gone out for a
few seconds". Recorded as syncope."""

_BIGGER_THAN_OTHER = re.compile(
    r"\b(?:legs?|calf|calves|ankles?|thighs?|knees?|feet|foot|arms?|hands?|wrists?|testicles?|testes|balls?|nuts?)"
    r"(?:['’]s|\s+(?:is|are|has|have|looks?|seems?|feels?|gone|got|become|been|getting))*\s+(?:\w+\s+){0,3}?"
    r"(?P<c>(?:(?:bigger|larger|fatter|thicker|puffier|wider|more swollen|swollen(?: up)?|puffed up)\s+(?:round\s+)?"
    r"(?:than|compared (?:to|with))|(?:twice|double|two times|three times)\s+the\s+(?:size|width|thickness)\s+of)"
    r"\s+(?:the|my|his|her)\s+(?:other|left|right)(?!\s+(?:side|hand side)\b))\b", re.I)
"""A limb (or a testicle) bigger than its fellow: one side swollen, as the Wells score asks it ("calf swelling at
least 3 cm larger than the asymptomatic side") and patients see it ("one leg's much bigger than the other", "my left
leg is twice the size of the right", "fatter than the left")."""

_PART_OPERATED = re.compile(
    r"\b(?:had|having|have had|'ve had|got)\s+(?:my|his|her|their|a|the)\s+(?:new\s+)?(?:(?:left|right)\s+)?"
    r"(?:hip|knee|shoulder|appendix|gall ?bladder|womb|uterus|tonsils|ovar(?:y|ies)|kidney|spleen|bowel|prostate|"
    r"thyroid|breast|cataracts?|varicose veins|veins|hernia|bunions?|wisdom teeth)\s+(?P<c>replaced|removed|taken out|"
    r"out|done|operated on|repaired|fixed|pinned|plated|reconstructed|resurfaced)\b", re.I)
"""An operation said as what was done to the part ("I had my hip replaced", "she had her womb removed", "had my
tonsils out"): surgery, a clot's risk for weeks after (NICE NG89). The span is what was done, so a condition named
as the part ("my cataracts done") is still its own mention."""

_SUFFERING_WITH = re.compile(
    r"\b(?P<c>(?:screaming|crying|suffering|struggling|bothered|plagued|in agony|in pain|in bits|playing up|bad|poorly|"
    r"martyr)\s+with\s+(?:(?:her|his|my|their|the|a|a bad|a sore)\s+)?(?:left\s+|right\s+)?(?:ears?|teeth|tooth|back|"
    r"knees?|hips?|tummy|stomach|belly|throat|chest|head|neck|shoulders?|feet|foot|legs?|arms?|wrists?))\b", re.I)
"""A pain told as what someone suffers with (British usage: "she's been screaming with her ear", "he's bad with his
back", "I'm a martyr with my knees"): a pain at that part, its place read from the words."""

_WORST_HEADACHE = re.compile(
    r"\b(?:headache|head)\b[^!?]{0,200}?\b(?P<c>(?:the\s+)?(?:worst|most painful)\s+(?:pain|thing|agony)\s+(?:of|in)\s+"
    r"(?:my|his|her)\s+life|(?:from\s+)?(?:nothing|zero|0)\s+to\s+(?:ten|10|a ten|unbearable|agony)"
    r"(?:\s+out of\s+(?:ten|10))?"
    r"\s+in[,\s]+(?:like,?\s+)?(?:a|one|two|a few|seconds|a second|a split second|an instant)"
    r"|(?:came on|come on|comes on|hit me|hit|started|peaked|built up|exploded|went off|was at its worst|maxed out)"
    r"\s+(?:\w+\s+){0,2}?(?:in|within)\s+(?:a few\s+|a couple of\s+|a\s+|one\s+|two\s+|ten\s+|30\s+|\d+\s+)?"
    r"(?:seconds?|split seconds?|instant|heartbeat|moment))", re.I)
"""A headache told, in its turn, as the worst pain of a life or as reaching its peak in seconds (NICE CG150: a
thunderclap headache, "sudden-onset headache reaching maximum intensity within 5 minutes"): "it came on in seconds",
"hit me within a couple of seconds"."""

_THROAT_CLOSING = re.compile(
    r"\b(?:throat|airway|windpipe)(?:['’]s)?\b(?:\W+(?!(?:not|no|isn't|wasn't|never)\b)\w+){0,5}?\W+"
    r"(?P<c>closing(?:\s+up|\s+over)?|closed(?:\s+up|\s+over)|shutting|shut(?:\s+up|\s+over)|"
    r"swelling\s+shut|swelled\s+shut|swollen\s+shut)\b", re.I)
"""A throat felt to be closing (NHS "Anaphylaxis": "throat ... swelling", "the throat closing"; Resuscitation Council
UK: the airway's swelling): "my throat feels like it's closing up", said however many words come between."""

_LIPS_SWELLING = re.compile(
    r"\b(?:lips?|tongue|mouth)(?:['’]s)?\s+(?:(?:has|have|had|is|are|was|were|went|gone|got|getting|all|just|really|"
    r"right|completely|massively|suddenly|started|starting|begun|begin|to|been)\s+){0,3}(?P<c>blown up|blowing up|"
    r"puffed up|puffing up|puffy|ballooned|ballooning|swelled|swelled up|swollen|swollen up|swelling|swelling up|"
    r"gone fat|fat|huge|massive|thick|thicker|fattened up)\b|\b(?:face|eyes|eyelids)(?:['’]s)?\s+(?:(?:has|have|had|is|"
    r"are|was|were|went|gone|got|all|just|really|right|suddenly|started|starting|to|been)\s+){0,3}"
    r"(?P<f>blown up|blowing up|puffed up|puffing up|ballooned|ballooning)\b", re.I)
"""Lips, tongue or mouth swelling in the words people use (NHS "Anaphylaxis": swelling of the lips, tongue or throat;
"Angioedema": swelling under the skin): "his lips have blown up", "my tongue's gone thick". A face or eyes only when
they blow up or balloon: a face swollen round a bad tooth is no allergy."""

_CHEST_WEIGHT = re.compile(
    r"\b(?P<c>(?:a\s+|this\s+|some\s+|like\s+(?:a|an)\s+)?(?:(?:heavy|tight|huge|big)\s+)?(?:weight|band|vice|pressure|"
    r"heaviness|elephant|brick|bricks|something heavy|belt|strap|crushing))\b(?:\s+[\w'’]+){0,3}?\s+"
    r"(?:on|across|around|"
    r"round|in|sat on|sitting on|pressing on|pressing down on|squeezing)\s+(?:my|his|her|the)\s+chest\b", re.I)
"""Cardiac chest pain as patients feel it rather than name it (NICE CG95: pain may be felt as pressure, tightness or
heaviness; the NHS "Heart attack" page: "a feeling of pressure, tightness or squeezing across your chest"): a weight,
band or vice across the chest is chest pain, which the cardiac rules then read with what came with it."""

_OVERDOSE = re.compile(
    r"\b(?:took|taken|swallowed|downed|necked|had)\s+(?P<c>(?:a load of|loads of|lots of|a lot of|"
    r"a whole (?:packet|box|bottle|strip|pack|tub) of|a whole|all (?:of )?(?:my|the|his|her)|"
    r"a (?:handful|bunch|fistful|pile) of|a (?:packet|box|bottle|strip|pack|"
    r"tub|month's supply) of|(?:the )?(?:whole|entire) (?:packet|box|bottle|strip)(?: of)?|(?:maybe |about |around |"
    r"like |over |at least )?(?:\d{2,3}|ten|twelve|fifteen|sixteen|eighteen|twenty|thirty|forty|fifty|a dozen|"
    r"dozens)(?: or (?:\d{2,3}|\w+))?)\s+(?:(?:of\s+)?(?:my|his|her|the|me|mum's|mom's|dad's)\s+)?(?:\w+\s+)?"
    r"(?:pills|tablets|paracetamol|painkillers|sleeping (?:pills|tablets)|co-codamol|codeine|ibuprofen|aspirin|"
    r"meds|medication|antidepressants|insulin|capsules|tabs))\b", re.I)
"""An overdose told as what was taken (NICE NG225 Self-harm: intentional self-poisoning is self-harm, whatever the
intent): a count or a heap of tablets taken at once ("took a load of paracetamol", "swallowed maybe twenty of
mum's pills"). One or two tablets, or a dose as prescribed, are no heap; the past tense only, since "I've thought about
taking all my tablets" is a thought of suicide, which the suicide rules read, not a self-harm done."""

_WORDS_LOST = re.compile(
    r"\b(?P<c>(?:couldn'?t|can'?t|cannot|could not|unable to|struggl\w+ to|struggl\w+ (?:for|with))\s+"
    r"(?:find|get|think of|"
    r"say|remember)?\s*(?:the|my|his|her|any)?\s*(?:right\s+)?words?(?:\s+out)?|words?\s+(?:came|come|were coming|are "
    r"coming|kept coming)\s+out\s+(?:wrong|jumbled|muddled|all wrong|backwards|garbled|mixed up))\b", re.I)
"""Words lost as patients and witnesses tell it (NHS "Stroke": difficulty talking or understanding; the FAST
campaign's speech): "I couldn't find the word for kettle", "his words came out jumbled". Recorded as aphasia.
"Can't get my words out" is also how the breathless talk; :func:`observed` leaves it to them when breath is said."""
_BREATH_WORD = re.compile(r"\b(?:breath\w*|asthma|inhaler|pump|puffer|wheez\w*|gasp\w*|puffed)\b", re.I)

_SPEECH_SLURS = re.compile(
    r"\b(?:speech|talking|words)(?:['’]s)?\s+(?:(?:has|had|is|was|went|gone|got|all|a bit|really|suddenly|"
    r"been|going)\s+){0,3}(?P<c>slurry|slurred|slurring|drunk-sounding|funny|weird|strange|garbled)\b", re.I)
"""Speech said to have gone wrong ("my mom's speech went slurry", "his talking's gone all funny"): slurred speech, the
FAST campaign's S. The voice is not among them: a voice gone thick or muffled is the throat's (a quinsy's "hot potato"
voice), and one gone hoarse is dysphonia."""

_LIMB_GAVE_WAY = re.compile(
    r"\b(?:(?:my|his|her|the)\s+)?(?:(?P<side>left|right)\s+)?(?:leg|legs|arm|knee|knees)\s+(?:just\s+|suddenly\s+|"
    r"completely\s+)?(?P<c>gave way|gave out|buckled|went from under (?:me|him|her)|went dead|went floppy|"
    r"went weak|went to jelly|stopped working|wouldn't work|won't work)\b", re.I)
"""A limb failing all at once (NHS "Stroke": weakness of one side of the body; "my left leg gave way"): weakness of the
limbs, the side kept by the mention reader's place words."""

_SLEEP_LOST = re.compile(
    r"\b(?P<c>(?:haven't|have not|hasn't|has not|not|never|barely|hardly|don't|doesn't|didn't|did not)\s+(?:been\s+)?"
    r"(?:really\s+|properly\s+)?(?:sleeping|slept|sleep)\b(?!\s+(?:too much|a lot|all day|in\b|through the alarm|well "
    r"enough to))|(?:awake|up|wide awake)\s+(?:at|by|from)\s+(?:\d{1,2}|one|two|three|four|five)\b"
    r"(?:\s*(?:am|o'clock))?"
    r"\s+(?:every|each|most)\s+(?:morning|night)s?|(?:keeps?|kept|keeping)\s+(?:me|him|her)\s+(?:awake|up at "
    r"night)|(?:only|maybe|about|just|like)\s+(?:getting\s+|sleeping\s+|managing\s+)?(?:\d|one|two|three|four|five)\s+"
    r"hours?\s+(?:of sleep\s+|sleep\s+)?(?:a|per|each|every)\s+night|can'?t\s+(?:switch|turn|shut)\s+(?:my\s+)?"
    r"(?:brain|mind|head|thoughts)\s+off)", re.I)
"""Sleep lost, told by what happens (NHS "Insomnia": lying awake at night, waking early, not feeling refreshed): not
sleeping, awake at four every morning, kept awake, four hours a night, a mind that will not switch off."""

_LIMB_WONT_DO = re.compile(
    r"(?:^|(?<=[.!?;]\s))"
    r"(?![^.!?;]*\b(?:pain|painful|hurts?|hurting|sore|stiff|aches?|aching|agony|injur\w*|sprain\w*|broke|broken|"
    r"fracture\w*|arthritis|frozen|cast|sling|plaster)\b)"
    r"[^.!?;]*?\b(?P<c>(?:can'?t|cannot|can not|couldn'?t|could not|unable to|not able to)\s+(?:properly\s+|really\s+)?"
    r"(?:grip|hold|lift|raise|move|squeeze|grasp|pick up|use))\b"
    r"[^.!?;]{0,40}?\b(?:my|his|her|their|me|the)\s+(?:(?P<side>left|right)\s+)?"
    r"(?:hand|hands|arm|arms|leg|legs|fingers|foot|feet)\b", re.I)
"""A limb that will not do what it is told ("she can't grip her cup with her left hand", "I can't lift my right
arm"): weakness (NHS "Stroke", FAST: "Arms - the person may not be able to lift both arms"). Not when the sentence
gives a pain, an injury or a stiffness for it: then the pain stops the limb ("my shoulder's so stiff I can't lift my
arm")."""

_NECK_BENDS_BADLY = re.compile(
    r"\b(?P<c>(?:hurts|painful|agony|agonising|excruciating|too sore|impossible|can'?t|cannot|unable)\s+(?:to\s+)?"
    r"(?:bend|move|turn|tilt|lower|put down|bring down)\s+(?:my|his|her)\s+(?:neck|head|chin)|(?:can'?t|cannot|"
    r"couldn'?t|won'?t)\s+(?:touch|put|get|bring)\s+(?:my|his|her)\s+chin\s+(?:to|on|onto|down to)\s+(?:my|his|her)"
    r"\s+chest|neck(?:['’]s| is| was)?\s+(?:\w+\s+)?(?:stiff as a board|rigid|won'?t bend|doesn'?t bend|too stiff))\b",
    re.I)
"""A neck that will not bend (NICE NG240 Meningitis: neck stiffness; the NHS "Meningitis" page: a stiff neck), said as
the hurt of bending it or a chin that will not reach the chest."""

_LIGHT_HURTS = re.compile(
    r"\b(?:can'?t|cannot|couldn'?t)\s+(?:stand|bear|cope with|tolerate|take|face|look at)\s+(?P<c>(?:the\s+)?(?:light|"
    r"lights|brightness|bright light|daylight|sunlight|the sun|curtains open|blinds open|telly on|tv on|screen))\b",
    re.I)
"""Light that cannot be borne (NICE NG240 Meningitis, NHS "Migraine": sensitivity to light, photophobia): "I can't
stand the light", "she can't bear the curtains open"."""

_MOLE_CHANGED = re.compile(
    r"\b(?P<c>moles?|freckles?|beauty spots?|birthmarks?)\b[^.;!?]{0,80}?\b(?:changed|changing|"
    r"chang\w+ (?:shape|colou?r|"
    r"size)|grown|growing|got bigger|getting bigger|gone bigger|bigger than|darker|darkened|gone black|turned black|"
    r"black in places|blotchy|ragged|jagged|irregular|bled|bleeds|bleeding|oozing|oozes|crusty|crusting|new colou?rs?|"
    r"different colou?rs?|spreading|raised up|lumpy|(?<!as it )(?<!as they )(?<!same as )used to be|"
    r"three colou?rs|two colou?rs)\b", re.I)
"""A mole that changed, as the NHS "Melanoma skin cancer" page lists it (a new mole or one that changes size, shape or
colour, bleeds, itches or crusts; NICE NG12 1.7: the weighted 7-point checklist): recorded as a changing mole, a
cancer warning sign. A mole said only to itch is not enough: itch is the checklist's minor feature."""
_HEAD_HIT = re.compile(
    r"\b(?P<c>(?:hit|banged|bumped|knocked|cracked|smacked|whacked|struck|bashed|clonked|thumped|smashed|slammed|"
    r"walloped|split|cut)\s+(?:\w+\s+){0,3}?"
    r"(?:on|to|against)?\s*(?:the|my|his|her|their)\s+head)\b|\b(?:took|had|got|taken|gotten|takes)\s+(?:a|an|one|"
    r"another)\s+(?P<d>(?:nasty\s+|bad\s+|big\s+|hard\s+|real\s+)?(?:knock|bang|bump|blow|whack|thump|smack|clonk|hit|"
    r"kick|elbow|knee)\s+(?:on|to|in)\s+(?:the|his|her|my|their)\s+(?:head|face|temple|forehead))\b", re.I)
"""A blow to the head as it is told ("took a knock to the head playing rugby", "banged her head on the table", "banged
the back of my head"): a head injury (NICE NG232), which the head-injury rule reads with what followed it."""
_KNOCKED_OUT = re.compile(
    r"\b(?P<c>(?:was|were|went|been|got|is)\s+(?:knocked\s+)?out(?:\s+cold)?\s+for\s+"
    r"(?:a|a few|a couple of|about|around|"
    r"maybe|like|\d+|one|two|three|four|five|ten|thirty|several)\s+(?:\w+\s+)?(?:seconds?|secs?|minutes?|mins?|moments?)|"
    r"knocked\s+(?:him|her|me|them)\s+(?:out|unconscious|spark out)|"
    r"(?:was|were)\s*(?:n't|n’t|\s+not)\s+(?:awake|conscious|responding)\s+(?:for\s+)?(?:a|a few|a couple of|about|"
    r"around|maybe|like|\d+|one|two|three|four|five|ten|thirty|several)\s+(?:\w+\s+)?(?:seconds?|secs?|minutes?|"
    r"mins?|moments?))\b", re.I)
"""Knocked out for a time (NICE NG232 Head injury: any loss of consciousness): "he was out for a few seconds", or a
witness's "he was not awake maybe one minute" (a lexicon phrase "not awake" would sit beside "I'm awake half the
night" as a reference of the second stage and take it from insomnia). Recorded
as the dataset's syncope, the loss of consciousness the rules read."""
_EVENT_FORGOTTEN = re.compile(
    r"\b(?P<c>(?:can'?t|cannot|couldn'?t|doesn'?t|does not|don'?t|didn'?t)\s+remember\s+(?:what happened|anything\s+"
    r"(?:about|after|before|of)|the\s+(?:match|game|accident|fall|crash|journey|drive|collision|hit|tackle|race|bout)|"
    r"how\s+(?:i|he|she|they)\s+got|getting\s+(?:here|home|there)|being\s+(?:hit|tackled)))\b", re.I)
"""An event the patient cannot remember (NICE NG232: amnesia for events before or after a head injury; the NHS
"Concussion" page): memory impairment. "I can't remember the name of my tablets" is no amnesia; events only."""
_BOTTOM_NUMB = re.compile(
    r"\b(?:wip(?:e|es|ed|ing)|toilet paper|loo roll|bottom|bum|back passage|down below|between (?:my|his|her) legs|"
    r"privates|genitals|inner thighs|saddle area|private parts)\b[^.;!?]{0,50}?\b(?P<c>numb|numbness|no feeling|"
    r"can'?t feel|cannot feel|feel nothing|dead|pins and needles)\b|\b(?P<d>numb|numbness|no feeling|can'?t feel|"
    r"cannot feel|feel nothing|pins and needles)\b[^.;!?]{0,30}?\b(?:when (?:i|he|she) wipe|wiping|toilet paper|"
    r"loo roll|bottom|bum|back passage|down below|between (?:my|his|her) legs|privates|genitals|inner thighs)\b", re.I)
"""Numbness of the saddle area in the patient's words (NHS "Cauda equina syndrome": numbness around your bottom or
genitals; you might not feel toilet paper when you wipe): saddle anaesthesia, in either order of part and feeling."""
_ACCIDENT = re.compile(
    r"\b(?P<c>(?:a|an|some|little|a little|a few|few|couple of)?\s*accidents?)\s+(?:with|in|of)\s+(?:my|his|her|the)\s+"
    r"(?P<what>bowels?|bowel|bladder|pants|underwear|trousers|knickers|nappy)\b", re.I)
"""Incontinence as "an accident" (NHS "Cauda equina syndrome": problems controlling when you pee or poo): with the
bowels, faecal; with the bladder, urinary; in the pants, whichever the sentence names (urine when it names neither)."""
_NO_SENSE = re.compile(
    r"\b(?P<c>(?:saying|talking|says|said|coming out with|came out with)\s+(?:stuff|things|words|rubbish|nonsense)\s+"
    r"(?:that|which)\s+(?:doesn'?t|don'?t|didn'?t|does not|do not|did not)\s+make\s+(?:any\s+)?sense)\b", re.I)
"""Speech that makes no sense (NHS "Confusion": not being able to think or speak clearly): confusion."""
_CANCER_TREATMENT = re.compile(
    r"\b(?P<c>(?:having|on|getting|receiving|started|starting|finished|halfway through|going through|undergoing|had)\s+"
    r"(?:\w+\s+){0,2}?(?:treatment|chemo\w*|therapy|infusions?|drips?|cycles?)\s+for\s+(?:his|her|my|the|their)?\s*"
    r"(?:\w+\s+)?(?:leuka?emia|cancer|lymphoma|myeloma|tumou?r|sarcoma|melanoma))\b", re.I)
"""Anticancer treatment told by what it treats ("he's having treatment for leukaemia"): NICE CG151 Neutropenic sepsis
counts anticancer treatment in the past six weeks; recorded as the dataset's chemotherapy."""

DYED_BY = re.compile(
    r"\b(?:beetroots?|beets|blackberr\w*|rhubarb|food colou?ring|red dye|iron (?:tablets?|pills?|supplements?)|"
    r"ferrous|pepto|bismuth|liquorice|licorice|blueberr\w*|rifampicin|senna)\b", re.I)
"""What colours urine or stools without any bleeding (NHS "Blood in urine": pee can turn pink or red after beetroot,
blackberries or rhubarb, or with some medicines; NHS "Blood in poo" and NICE CKS Gastrointestinal bleeding: iron
tablets, bismuth and liquorice turn stools black): a colour said with its dye in the sentence is no bleeding, whether
the colour is read here or named by a lexicon phrase; the mention reader and the second stage apply it
(:data:`DYED`)."""
DYED = frozenset({"hematuria", "melena", "rectal bleeding", "dark urine"})
"""The findings a dye can imitate."""

_WEEKS_PREGNANT = re.compile(
    r"\b(?:i'?m|i am|she'?s|she is|we'?re|at|now)\s+(?:about\s+|around\s+|nearly\s+|almost\s+|just over\s+)?"
    r"(?P<c>(?:[4-9]|[1-3]\d|4[0-2]|(?:twenty|thirty)(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?|"
    r"forty(?:[- ](?:one|two))?|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|"
    r"eighteen|nineteen)"
    r"(?:\s*\+\s*\d)?\s+weeks)(?!\s+(?:ago|old|of|since|now|later|running|in a row|off|at|on|late|overdue|post\S*|"
    r"after|out|into|behind|"
    r"clean|sober|dry))\b", re.I)
"""A pregnancy told by its week ("I'm 34 weeks", "she's 12 weeks"): in a history nothing else is counted so (NICE NG133
Hypertension in pregnancy asks the gestation this way). "I'm 6 weeks post-op" is excluded by what follows, and a
baby "six weeks old" by "old"."""


_TOLD: tuple[tuple[re.Pattern[str], str], ...] = (
    # (pattern, key without the prefix), in the order of precedence of overlapping spans (:func:`_first_of_overlapping`)
    (_KETONE_WORD, "symptom:ketosis"),
    (_KETONES_FOUND, "symptom:ketosis"),
    *_FACULTY_GONE,
    *_NOTHING_THROUGH,
    (_A_FIT, "symptom:seizure"),
    (_TROUBLE_FROM, "symptom:pain"),
    (_TROUBLE_WITH, "symptom:pain"),
    (_WEIGHT_LOST, "symptom:unexplained weight loss"),
    *((p, "symptom:visual impairment") for p in _BLURRED_SIGHT),
    *((p, "symptom:vision loss") for p in _FIELD_LOST),
    *((p, "symptom:photopsia") for p in _SEEING_LIGHTS),
    *((p, "symptom:floaters") for p in _FLOATING_SPECKS),
    (_STEADY_WEIGHT, f"symptom:unexplained weight loss{NORMAL}"),
    (_EATING_WELL, f"symptom:loss of appetite{NORMAL}"),
    (_URINE_PASSED, f"symptom:oliguria{NORMAL}"),
    (_ON_STANDING, "symptom:lightheadedness"),
    (_FIERY_WEE, "symptom:dysuria"),
    (_CANNOT_VOID, "symptom:urinary retention"),
    *((p, f"symptom:{v}") for p, v in _LUTS),
    (_SPINNING, f"symptom:dizziness{KIND}"),  # before the contagion: "the room was going round" is no illness
    *((p, "symptom:tinnitus") for p in _EAR_NOISE),
    (_CANT_HEAR, "symptom:hearing impairment"),
    *((p, "symptom:non-blanching rash") for p in _NON_BLANCHING),
    (_BLANCHING, f"symptom:non-blanching rash{NORMAL}"),
    (_CAME_ROUND, "symptom:syncope"),
    (_MOLE_CHANGED, "symptom:changing mole"),
    (_HEAD_HIT, "medical_history:head injury"),
    (_KNOCKED_OUT, "symptom:syncope"),
    (_EVENT_FORGOTTEN, "symptom:memory impairment"),
    (_BOTTOM_NUMB, "symptom:saddle anaesthesia"),
    (_NO_SENSE, "symptom:confusion"),
    (_CANCER_TREATMENT, "medication:chemotherapy"),
    (_LIPS_SWELLING, "symptom:angioedema"),
    (_THROAT_CLOSING, "symptom:angioedema"),
    (_BIGGER_THAN_OTHER, "symptom:swelling"),
    (_PART_OPERATED, "medical_history:operative surgical procedures"),
    (_SUFFERING_WITH, "symptom:pain"),
    (_WORST_HEADACHE, "symptom:thunderclap headache"),
    (_EAR_DISCHARGE, "symptom:ear discharge"),
    (_COUGHED_UP, "symptom:colored/excess sputum"),
    (_SLEEP_LOST, "symptom:insomnia"),
    (_CHEST_WEIGHT, "symptom:chest pain"),
    (_OVERDOSE, "symptom:self-harm"),
)
"""What a pattern shows by itself, whatever the rest of the turn says."""
_TOLD_AFTER_WORDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (_SPEECH_SLURS, "symptom:slurred speech"),
    (_LIMB_GAVE_WAY, "symptom:weak limbs"),
    (_LIMB_WONT_DO, "symptom:weak limbs"),
    (_NECK_BENDS_BADLY, "symptom:neck stiffness"),
    (_LIGHT_HURTS, "symptom:photophobia"),
    (_WEEKS_PREGNANT, "medical_history:pregnancy"),
    *((p, "exposure:sick person") for p in _CONTAGION),
)
"""The same, after the words lost (:data:`_WORDS_LOST`), which take precedence over them."""


def _told(patterns: tuple[tuple[re.Pattern[str], str], ...], text: str) -> list[tuple[int, int, str]]:
    """The spans of ``patterns`` in ``text`` with their keys; a span is the pattern's first named group that matched
    (``c``, or its other alternative's ``d`` / ``f``)."""
    out = []
    for pattern, key in patterns:
        for m in pattern.finditer(text):
            g = next(n for n in ("c", "d", "f") if n in pattern.groupindex and m.group(n) is not None)
            out.append((m.start(g), m.end(g), f"{PREFIX}{key}"))
    return out


def observed(text: str) -> list[tuple[int, int, str]]:
    """``(char start, char end, key)`` of each observation in ``text``: the colour or number that shows a finding."""
    out: list[tuple[int, int, str]] = []
    for pattern, value in _COLOURS:
        out += [(m.start("c"), m.end("c"), f"{PREFIX}symptom:{value}") for m in pattern.finditer(text)]
    for kind, pattern in _READING.items():
        for m in pattern.finditer(text):
            if (value := _VERDICT[kind](_value(m.group("n")))) is not None:
                out.append((m.start("n"), m.end("n"), f"{PREFIX}symptom:{value}"))
                if kind == "temperature":  # a temperature read is a temperature taken (MediTOD's medical test),
                    # told by the word that names the measure (the number's span is the finding's)
                    named = re.match(r"[\w'’]+", m.group())
                    out.append((m.start(), m.start() + (named.end() if named else 1),
                                f"{PREFIX}medical_test:{TEMPERATURE_TAKEN}"))
    for m in _BEATS.finditer(text):
        if (value := _pulse(_value(m.group("n")))) is not None:
            out.append((m.start("n"), m.end("n"), f"{PREFIX}symptom:{value}"))
    for m in _TEMP_TAKEN.finditer(text):
        if (value := _temperature(_value(m.group("n")))) is not None:
            out.append((m.start("n"), m.end("n"), f"{PREFIX}symptom:{value}"))
    for m in _METER_HIGH.finditer(text):
        value = "hyperglycemia" if m.group("c").lower() in ("hi", "high") else "hypoglycemia"
        out.append((m.start("c"), m.end("c"), f"{PREFIX}symptom:{value}"))
    for m in _SUGAR_WORD.finditer(text):
        value = "hypoglycemia" if m.group("c").lower().startswith("low") else "hyperglycemia"
        out.append((m.start("c"), m.end("c"), f"{PREFIX}symptom:{value}"))
    out += _told(_TOLD, text)
    for m in _ACCIDENT.finditer(text):  # which incontinence the sentence tells
        bowel = m.group("what").lower().startswith("bowel") or re.search(
            r"\b(?:poo|poop|bowels?|stools?|soil\w*)\b", sentence_of(text, m.start("c")), re.I)
        out.append((m.start("c"), m.end("c"),
                    f"{PREFIX}symptom:{'faecal incontinence' if bowel else 'urinary incontinence'}"))
    if not _BREATH_WORD.search(text):  # "I can only get a couple of words out" to an asthmatic is the breath
        out += [(m.start("c"), m.end("c"), f"{PREFIX}symptom:aphasia") for m in _WORDS_LOST.finditer(text)]
    out += _told(_TOLD_AFTER_WORDS, text)
    return _first_of_overlapping(out)


def sentence_of(text: str, at: int) -> str:
    """The sentence of ``text`` around character ``at``."""
    start = max(text.rfind(c, 0, at) for c in ".;!?") + 1
    ends = [i for c in ".;!?" if (i := text.find(c, at)) >= 0]
    return text[start:min(ends) if ends else len(text)]


def _first_of_overlapping(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """One finding a stretch of text: of overlapping spans the earlier pattern's (a black stool is melaena before a
    red one is rectal bleeding)."""
    kept: list[tuple[int, int, str]] = []
    for s in spans:
        if not any(s[0] < k[1] and k[0] < s[1] for k in kept):
            kept.append(s)
    return sorted(kept)


def finding(key: str) -> tuple[str, str, bool, bool] | None:
    """``(slot type, value, normal, a kind of it)`` of an observation key, else None (not an observation)."""
    if not key.startswith(PREFIX):
        return None
    body = key.removeprefix(PREFIX)
    normal, kind = body.endswith(NORMAL), body.endswith(KIND)
    base, value = body.removesuffix(NORMAL).removesuffix(KIND).split(":", 1)
    return base, value, normal, kind
