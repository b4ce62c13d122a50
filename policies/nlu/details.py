"""The details of what the patient named: each mention's attributes (onset, severity, factors, location...) read
from its own part of the sentence, and the records (age, sex, home, job, travel) read from the whole utterance.

The attribute extractors themselves (one regular-language reader per attribute) live in
``policies.nlu.attributes``; this module decides which words each mention's attributes are read from.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.core.clinical_text import ANOTHER_EVENT
from agent.core.ontology import SITE_VALUES, Vocabulary, located_finding, sited_pain, without_side
from policies.nlu import attributes as attr
from policies.nlu.frame import TEST_STATUS, Frame, set_attr
from policies.nlu.lexicon import Lexicon
from policies.nlu.mentions import Mention, names_a_pain, own_clause, segments

_ANGIOEDEMA_SITE = re.compile(r"\b(?:lips?|tongue|mouth|eyelids?|eyes? (?:have|has) (?:puffed|swollen|closed))\b",
                              re.I)
_FOCAL = re.compile(r"lumps?|lumpy|bumps?|knots?|nodules?|cysts?", re.I)
_PRONOUN_START = re.compile(r"\W*(?:and |but )?(?:it|it's|its|it is|it has|they|they're|they are|they've)\b",
                            re.IGNORECASE)
"""A part of a sentence about what was just named ("..., it's swollen", "... and they're itchy")."""

# Cough characteristics people name -> the dataset's values.
COUGH_KIND = {"dry": "dry cough", "wet": "wet cough", "productive": "wet cough", "phlegm": "wet cough",
              "sputum": "wet cough", "mucus": "wet cough", "barky": "barky", "barking": "barky", "harsh": "harsh",
              "hacking": "hacking"}


def mention_status(m: Mention) -> str:
    """A mention's status as its slot type spells it (a test is avail/unavail, not positive/negative)."""
    if m.base == "medical_test":
        return TEST_STATUS[m.status]
    return m.status


_PAIRED_ORGAN = re.compile(r"\b(?:eyes?|ears?|facial|face|hearing|visual|vision|otorrh\w*|tinnitus|ptosis|photopsia|"
                           r"floaters)\b", re.I)
"""A symptom of an organ we have two of, or one side of (the face): which side is what a clinician asks first (a
right facial palsy, a red left eye, hearing gone in the left ear), so a side said with it is its location."""
_AT_REST = re.compile(
    r"\b(?:at rest|(?:while|when|as)\s+(?:i\s+was\s+|i'm\s+|i\s+am\s+|he\s+was\s+|she\s+was\s+)?(?:just\s+)?"
    r"(?:resting|sitting|sat|lying|laid|watching|reading|asleep|sleeping|in bed|in my chair|doing nothing)|"
    r"sitting (?:down|still|quietly)|sat (?:down|still|in my chair)|lying (?:down|in bed)|"
    r"doing nothing|not doing anything|woke me|wakes me|woken me|"
    r"(?:came|come|comes|started|starts|began|begins|kicked in)\s+(?:on\s+)?(?:while\s+|when\s+)?(?:i\s+was\s+|i'm\s+)?"
    r"(?:just\s+)?(?:watching|sitting|reading|resting|lying|asleep|sleeping|in bed|in my chair))\b", re.I)
"""A pain come while at rest (NICE CG95: "pain at rest"), not on exertion."""
_SPEAKS_OF_IT = re.compile(
    r"^\W*(?:(?:and|but|so|well|oh|um|er|uh|yes|yeah|yep|no|nope|mm|hmm|ok|okay|i'd say|i would say|i think|i guess|"
    r"i reckon|probably|maybe|perhaps|roughly|about|around|only|just|oh)\W+)*"
    r"(?:since|for|over|last|this|yesterday|today|on|at|in|from|a|an|\d+|one|two|three|four|five|six|seven|eight|nine|"
    r"ten|few|couple|several|started|starts|began|begun|came|comes|gradually|suddenly|slowly|worse|better|constant|"
    r"all|every|most|mostly|sometimes|now|then|off|on|and)\b|\b(?:it|it's|its|this|that|they|them|these|those)\b",
    re.I)
"""A sentence that names nothing and speaks of what was just named: its "it" ("I noticed it a week ago"), or an answer
that opens with a time or a course ("Two days ago.", "Since Monday, on and off", "Gradually, over a week"). One that
tells another thing ("I had a stent put in three years back") does not date the complaint."""
_IT_AGAIN = re.compile(r"^\W*(?:and\s+)?(?:it|this|that|the pain|the ache|the pressure|the tightness)\b", re.I)
"""A sentence that goes on about what the one before named ("... pain in my chest. It came on watching telly.")."""

_PLACE_DENIED = re.compile(r"\b(?:no|not|never|nothing|fine|normal|ok|okay|alright|unaffected)\b|n't\b", re.I)
"""A sentence that names no symptom and denies or clears a place ("My eyes are fine.", "Not my arms.") places nothing:
the numbness said before is not in the eyes."""


_POINTED_PART = re.compile(r"\b(?:in |on |of |with )?(?:that|this|the same|same|(?:the )?(other))\s+"
                           r"(?:one,?\s+(?:my|the)\s+)?([a-z]+)\b")
"""A part pointed at rather than sided: "that ear", "the same eye", "the other knee" (group 1: "other")."""
_OPPOSITE = {"left": "right", "right": "left"}


_NOT_OF_THE_PAIN = re.compile(
    r"\b(?:heavy|heavier|tight|tighter)\s+(?:bench|lifting|lift|bag|bags|box|boxes|weights|load|loads|session|workout|"
    r"day|night|week|drinker|drinking|smoker|smoking|cold|period|periods|meal|shopping|furniture|object|suitcase|gym|"
    r"squat|squats|deadlifts?|press|rain|snow|traffic|schedule|shift|shifts|clothes|jeans|trousers|belt|shoes)\b", re.I)
"""A quality word that qualifies something else in the clause ("a heavy bench press session", "heavy lifting", "tight
jeans"): no pain's character (a "heavy" read there made a strained chest wall a crushing, cardiac-sounding pain)."""


_SYSTEMIC = frozenset({"fever", "chills", "rigor", "fatigue", "night sweats", "unexplained weight loss", "weight gain",
                       "loss of appetite", "insomnia", "confusion", "drowsiness", "nausea", "vomiting", "hyperglycemia",
                       "hypoglycemia", "low mood", "anxiety"})
"""Symptoms of the whole body: a place said beside them is where something was measured or another item's ("38.9
under her arm" is where the temperature was taken), never their location, even when a location was asked."""


def _names_the_place(value: str, place: str) -> bool:
    """Whether a symptom's own name says the place (``eye`` of "eye redness"): then the place is no location of its.
    Whole words: "ear" is no part of "hearing impairment"."""
    return re.search(rf"\b{re.escape(place)}\b", value) is not None


def last_placed(state: dict) -> list[str]:
    """The places of the complaint the state placed last: what an "it" or a "they" opening the next turn may stand
    for ("It's red, hot and swollen" of the big toe just described)."""
    placed = [it for it in state.get("positive_symptom") or [] if isinstance(it.get("location"), list)
              and it["location"]]
    return [p for p in placed[-1]["location"] if isinstance(p, str)] if placed else []


_LOST_ON_WAKING = frozenset({"hearing impairment", "hearing loss", "vision loss", "visual impairment"})
_FOUND_ON_WAKING = re.compile(r"\b(?:woke|woken|waking|wake)\s+(?:up\s+)?(?:\w+\s+){0,3}?"
                        r"(?:with|to find|and)\b", re.I)
"""A sense found gone on waking (NICE CKS Hearing loss in adults: sudden sensorineural loss is often noticed on
waking): it went over one night, which is sudden (developing over 3 days or less)."""


class DetailReader:
    """Attributes of the mentions and the utterance's records, written into a :class:`Frame`."""

    def __init__(self, lexicon: Lexicon, vocab: Vocabulary):
        self.lexicon = lexicon
        self.vocab = vocab

    def symptom_attributes(self, clause: str, value: str, asked_checks: set[str], ended: bool = False) -> dict:
        """The attributes of symptom ``value`` that ``clause`` gives (``asked_checks``: what the doctor asked;
        ``ended``: its sentence tells the episode ended, ``attributes.episode_ended``)."""
        out: dict = {}
        set_attr(out, "onset", attr.onset(clause, asked="onset" in asked_checks, ended=ended))
        set_attr(out, "duration", attr.duration(clause, ended=ended))
        set_attr(out, "frequency", attr.frequency(clause))
        set_attr(out, "severity", attr.severity(clause, asked="severity" in asked_checks, lay_mild=names_a_pain(value)))
        set_attr(out, "initiation", attr.initiation(clause, asked="initiation" in asked_checks))
        if value in _LOST_ON_WAKING and "initiation" not in out and _FOUND_ON_WAKING.search(clause):
            out["initiation"] = "abruptly"  # "woke up on Thursday with my left ear completely dead": gone overnight
        prog = attr.progression(clause, asked="progression" in asked_checks)
        if prog and not (
            prog.endswith("worse over time")
            and re.search(r"\bworse (?:at|in|when|with|after|on|if (?!anything\b))\b", clause)
        ):  # "worse at night", "worse if I bend": a factor; "worse, if anything" is the course
            set_attr(out, "progression", prog)
        for key, values in attr.factors(clause, self.lexicon.factors).items():
            set_attr(out, key, [v for v in values if not self.vocab.same("symptom", v, value)])
        if self.vocab.same("symptom", value, "colored/excess sputum"):
            set_attr(out, "color", attr.color(clause))
            set_attr(out, "volume", attr.volume(clause))
        elif value != "coughing":  # the colour or amount of what else was asked for ("What colour is your vomit?"
            # "Yellowish"); a cough's is its sputum's, which the sputum item takes
            if "color" in asked_checks:
                set_attr(out, "color", attr.color(clause))
            if "volume" in asked_checks:
                set_attr(out, "volume", attr.volume(clause))
        if self.locatable(value) or ("location" in asked_checks and value not in _SYSTEMIC):
            set_attr(
                out, "location",
                [x for x in attr.places(clause, self.lexicon.locations, self.lexicon.sided)
                 if not _names_the_place(value, x)]
            )  # "chest pain" located in the chest says nothing new
        if value != "coughing" and ("characteristics" in asked_checks or names_a_pain(value)):
            set_attr(out, "positive_characteristics",
                     attr.phrase_hits(_NOT_OF_THE_PAIN.sub(" ", clause), self.lexicon.characteristics))
        if value == "coughing":
            kinds = [v for k, v in COUGH_KIND.items() if re.search(rf"\b{k}\b", clause)]
            if kinds and (
                "characteristics" in asked_checks or re.search(r"\b(dry|wet|productive|barky|harsh)\b", clause)
            ):
                set_attr(out, "positive_characteristics", list(dict.fromkeys(kinds)))
        return out

    @staticmethod
    def locatable(value: str) -> bool:
        """Whether a symptom is somewhere on the body, so a place said with it is its location."""
        return (names_a_pain(value) or value == "dermatologic problem" or located_finding(value) is not None
                or _PAIRED_ORGAN.search(value) is not None)

    def place_of_it(self, frame: Frame, symptoms: list[Mention], part: dict[int, str]) -> None:
        """ "A pain in my left testicle, it's swollen": a located symptom whose own part of the sentence names no place
        and begins with "it" or "they" is where the symptom named just before it in the sentence is (the pronoun is
        that place). Only backwards, only within the sentence, only from a symptom that has a place."""
        ordered = sorted(symptoms, key=lambda m: m.char_start)
        for i, m in enumerate(ordered):
            item = frame.item("symptom", m.value, mention_status(m))
            if i == 0 or item.get("location") or not self.locatable(m.value):
                continue
            if not _PRONOUN_START.match(part.get(id(m), "")):
                continue
            before = frame.item("symptom", ordered[i - 1].value, mention_status(ordered[i - 1]))
            if before.get("location"):
                set_attr(item, "location", list(before["location"]))

    def _it_places_nothing(self, sentence: str) -> bool:
        """A sentence that opens with "it" or "they" and names no place: its complaint is where the one before is."""
        return bool(_PRONOUN_START.match(sentence.strip())) and not attr.places(
            sentence.lower(), self.lexicon.locations, self.lexicon.sided)

    def place_of_it_before(self, frame: Frame, symptoms: list[Mention], sentence: str,
                           before: list[Mention]) -> None:
        """ "My ankle is killing me. It's red, hot and swollen.": a located complaint whose sentence opens with "it"
        or "they" and names no place is where the complaint of the sentence before it is, as
        :meth:`place_from_before` reads a later turn."""
        if not before or not self._it_places_nothing(sentence):
            return
        placed = [loc for m in before if (loc := frame.item("symptom", m.value, mention_status(m)).get("location"))]
        if not placed:
            return
        for m in symptoms:
            item = frame.item("symptom", m.value, mention_status(m))
            if self.locatable(m.value) and not item.get("location"):
                set_attr(item, "location", list(placed[-1]))

    def place_from_before(self, frame: Frame, mentions: list[Mention], state: dict) -> None:
        """ "It's red, hot and swollen", said of the big toe the patient had just described: a located complaint whose
        sentence names no place and opens with "it" or "they" is where the complaint the state last placed is (the
        pronoun is that place). Only when nothing in the turn has a place of its own."""
        if any(item.get("location") for item in frame.items.values()):
            return
        place = last_placed(state)
        if not place:
            return
        for m in mentions:
            if m.base != "symptom" or not self.locatable(m.value) or m.sent < 0:  # "They're not swollen": there too
                continue
            if self._it_places_nothing(m.sentence) and not self._placed_before(m.value, state):
                item = frame.item("symptom", m.value, mention_status(m))
                if not item.get("location"):
                    set_attr(item, "location", place)

    def side_of_the_same_part(self, frame: Frame, text: str, state: dict) -> None:
        """ "A hiss in that ear too", "the same eye", "the other knee": a paired part pointed at, not sided, has the
        side of the part the patient sided before, in this turn or an earlier one ("the other" the opposite side).
        Only when one side of that part was said: with both, the pointer is ambiguous and the bare part stays."""
        pointed = {m.group(2): "other" if m.group(1) else "same" for m in _POINTED_PART.finditer(attr.clean(text))}
        if not pointed:
            return
        said = [str(p) for it in frame.items.values() for p in it.get("location") or [] if isinstance(p, str)]
        said += [str(p) for k, items in state.items() if k.endswith("_symptom") and isinstance(items, list)
                 for it in items if isinstance(it, dict) for p in it.get("location") or [] if isinstance(p, str)]
        for item in frame.items.values():
            places = item.get("location")
            if not isinstance(places, list):
                continue
            for i, place in enumerate(places):
                part = place[:-1] if place.endswith("s") and place[:-1] in self.lexicon.sided else place
                if part not in self.lexicon.sided or not (pointer := pointed.get(part) or pointed.get(f"{part}s")):
                    continue
                sides = {p.split()[0] for p in said if p in (f"left {part}", f"right {part}")}
                if len(sides) == 1:
                    side = sides.pop()
                    places[i] = f"{_OPPOSITE[side] if pointer == 'other' else side} {part}"
            item["location"] = list(dict.fromkeys(places))

    def _placed_before(self, value: str, state: dict) -> bool:
        """Whether the state already places the complaint itself: its "it" is then that complaint, where it was ("It's
        a dull throbbing ache", of the temple's headache, is not in the eye the patient last spoke of)."""
        return any(isinstance(it.get("location"), list) and it["location"]
                   and self.vocab.same("symptom", str(it.get("value", "")), value)
                   for it in state.get("positive_symptom") or [])

    def details_of_clauses(self, frame: Frame, mentions: list[Mention], asked_checks: set[str],
                           sents: Sequence[str] = ()) -> None:
        """A symptom found by its clause (the second stage: "my left arm has gone weak" is ``weak limbs``, no lexicon
        phrase) has no place in a sentence to read details from: its own clause gives them ("this heavy pressure in
        the middle of my chest for about forty minutes": its duration). Where it is matters too (which arm, for the
        stroke rule and the clinician): the one place its own clause names is its location. ``sents``: the turn's
        sentences, whose end ("..., but it passed") tells whether the clause's "for" span is a duration."""
        for m in mentions:
            if m.base != "symptom" or m.status == "negative":
                continue
            item = frame.item("symptom", m.value, mention_status(m))
            clause = m.sentence.lower()
            ended = any(attr.episode_ended(s.lower()) for s in sents if clause and clause in s.lower())
            for k, v in self.symptom_attributes(clause, m.value, asked_checks, ended).items():
                # a detail another item already has from the same words is that item's ("my taste is getting worse
                # and worse", ageusia's progression, is not a second finding's)
                if k != "location" and k not in item and not any(
                        other is not item and other.get(k) == v for other in frame.items.values()):
                    set_attr(item, k, v)
            if not self.locatable(m.value):
                continue
            said = [x for x in attr.places(m.sentence.lower(), self.lexicon.locations, self.lexicon.sided)
                    if not _names_the_place(m.value, x)]
            if not item.get("location") and len(said) == 1:  # two places: which is the symptom's is not known
                set_attr(item, "location", said)

    def attributes(
        self, frame: Frame, mentions: list[Mention], sents: list[str], asked: list[tuple[str, str, list[dict]]]
    ) -> None:
        """Each mention's attributes from its own segment; a sentence naming nothing dates what was just named."""
        asked_checks = {c.get("type") for _, _, checks in asked for c in checks}
        by_sent: dict[int, list[Mention]] = {}
        for m in mentions:
            by_sent.setdefault(m.sent, []).append(m)
        part = segments(mentions)
        last_symptoms: list[Mention] = []
        for i, sentence in enumerate(sents):
            here = by_sent.get(i, [])
            symptoms = [m for m in here if m.base == "symptom" and m.status != "negative"]
            # "It started a week ago." is about what was just named; "I had a stent put in three years back" is not
            carried = not here and last_symptoms and _SPEAKS_OF_IT.search(sentence) is not None
            ended = attr.episode_ended(sentence)  # "jumbled for a minute or so, but it passed": a duration
            for m in symptoms or (last_symptoms if carried else []):
                item = frame.item("symptom", m.value, mention_status(m))
                clause = sentence if carried else part.get(id(m), sentence)
                found = self.symptom_attributes(clause, m.value, asked_checks, ended)
                if (event := ANOTHER_EVENT.search(clause)) is not None:  # "... and he retired twenty years ago"
                    for k in [k for k in ("onset", "duration") if k in found]:  # read again before that event
                        found[k] = getattr(attr, k)(clause[:event.start()], ended=ended)
                        if not found[k]:
                            del found[k]
                if not carried:  # a time said in the symptom's own clause is its time, not an earlier one's
                    own = own_clause(m)  # ("I came back from Australia three days ago and since yesterday I ...")
                    found |= {k: v for k in ("onset", "duration") if (v := getattr(attr, k)(own, ended=ended))}
                for k, v in found.items():
                    if not (carried and k == "location" and _PLACE_DENIED.search(sentence)):
                        set_attr(item, k, v)
            self.share_trailing_time(frame, symptoms)
            self.place_of_it(frame, symptoms, part)
            self.place_of_it_before(frame, symptoms, sentence, last_symptoms)
            values = {m.value for m in symptoms}
            if "coughing" in values and any(self.vocab.same("symptom", v, "colored/excess sputum") for v in values):
                set_attr(frame.item("symptom", "coughing", "positive"), "positive_characteristics", ["wet cough"])
            if symptoms:
                last_symptoms = symptoms
            for m in here:
                self._other_attributes(frame, m, here, part.get(id(m), sentence), sentence, asked_checks)
            self.place_of_denied(frame, here, part, sentence)

    def denied_elsewhere(self, frame: Frame, mentions: list[Mention], sents: list[str]) -> None:
        """ "My tummy's been sore for days, but no pain in my back": a located complaint said in the turn and denied
        at a place of its own is two facts, so the frame keeps both (:attr:`Frame.elsewhere`) and the complaint stays
        positive where it is; one status per value would let the later denial take it."""
        part = segments(mentions)
        said_positive = {m.value for m in mentions if m.base == "symptom" and m.status == "positive"}
        for m in mentions:
            if m.base != "symptom" or m.status != "negative" or m.value not in said_positive:
                continue
            if not self.locatable(m.value):
                continue
            sentence = sents[m.sent] if 0 <= m.sent < len(sents) else m.sentence
            if [x for x in attr.places(part.get(id(m), sentence), self.lexicon.locations, self.lexicon.sided)
                    if not _names_the_place(m.value, x)]:
                frame.elsewhere.add(("symptom", m.value))

    @staticmethod
    def keep_places_apart(frame: Frame) -> None:
        """The complaint of :meth:`denied_elsewhere` is not where it was denied: a place read into both ("sore for
        days but my back is fine, no back pain") is the denial's."""
        for base, value in frame.elsewhere:
            yes, no = frame.items.get((f"positive_{base}", value)), frame.items.get((f"negative_{base}", value))
            if not yes or not no or not isinstance(yes.get("location"), list):
                continue
            kept = [p for p in yes["location"] if p not in (no.get("location") or [])]
            if kept:
                yes["location"] = kept

    def place_of_denied(self, frame: Frame, here: list[Mention], part: dict[int, str], sentence: str) -> None:
        """ "No pain in my back": a denied pain (or other placed symptom) is denied where its own words place it, so
        the belly pain the patient came with is not denied with it; MediTOD records the place of a denied pain too."""
        for m in here:
            if m.base != "symptom" or m.status != "negative" or not self.locatable(m.value):
                continue
            said = [x for x in attr.places(part.get(id(m), sentence), self.lexicon.locations, self.lexicon.sided)
                    if not _names_the_place(m.value, x)]
            if said:
                set_attr(frame.item("symptom", m.value, mention_status(m)), "location", said)

    @staticmethod
    def pain_at_rest(frame: Frame, mentions: list[Mention], sents: list[str] | None = None) -> None:
        """A chest pain that came while the patient was at rest ("while I was sitting watching telly", "it woke me")
        is also MediTOD's ``chest pain rest``: angina at rest is unstable (NICE CG95 1.1.1.1, an acute coronary
        syndrome's presentation), which a pain brought on by exertion is not. Said in the pain's own sentence, or in
        the next one (``sents``: the turn's sentences) when that one goes on about it ("It came on watching telly")."""
        for m in mentions:
            if m.base != "symptom" or m.value != "chest pain" or m.status != "positive":
                continue
            at = m.sent if m.sent >= 0 else next(  # a mention found by meaning holds its clause: find its sentence
                (i for i, x in enumerate(sents or []) if attr.clean(m.sentence).lower().strip(" .!?") in x.lower()), -1)
            told = [m.sentence] + ([sents[at]] if sents and at >= 0 else [])
            if sents and 0 <= at < len(sents) - 1 and _IT_AGAIN.match(sents[at + 1]):
                told.append(sents[at + 1])
            if any(_AT_REST.search(t) for t in told):  # its own part of the sentence is a piece of the sentence
                item = frame.item("symptom", "chest pain", "positive")
                rest = frame.item("symptom", "chest pain rest", "positive")
                for k in ("onset", "duration"):
                    if k in item and k not in rest:
                        rest[k] = item[k]

    @staticmethod
    def name_angioedema(frame: Frame, mentions: list[Mention]) -> None:
        """A swelling of the lips, tongue, mouth or eyelids is angio-oedema (NICE CKS Angio-oedema and anaphylaxis:
        the deeper swelling that affects them), the anaphylaxis rule's sign and not a swelling of wherever else its
        sentence names ("my lips and tongue started swelling ... and my throat feels tight" is no throat swelling). A
        lump is focal ("a lump on my eyelid": a stye or a chalazion, NICE CKS), no angio-oedema."""
        for m in mentions:  # its own clause: "my knee is swollen and my mouth is dry" is the knee's
            if m.base == "symptom" and m.value == "swelling" and m.char_start >= 0 and _ANGIOEDEMA_SITE.search(
                    own_clause(m)) and not _FOCAL.fullmatch(m.sentence[m.char_start:m.char_end]):
                name = f"{mention_status(m)}_symptom"
                if (name, "swelling") in frame.items:
                    frame.rename(name, "swelling", "angioedema").pop("location", None)

    def spread_of_pain(self, frame: Frame, text: str) -> None:
        """ "... and it's going down my left arm and into my jaw": where a pain spreads, said after it, is among its
        places (MediTOD lists every place of a pain in its location; the clinician reads the radiation there). The
        places after each spreading verb go to the first pain of the turn."""
        pain = next((item for (name, value), item in frame.items.items()
                     if name == "positive_symptom" and names_a_pain(value)), None)
        if pain is None:
            return
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            for hit in attr.SPREADS.finditer(sentence):
                said = attr.places(attr.clean(sentence[hit.end():]), self.lexicon.locations, self.lexicon.sided)
                for place in said:
                    if place not in pain.get("location", []) and place not in str(pain["value"]):
                        pain.setdefault("location", []).append(place)

    @staticmethod
    def name_sited_pain(frame: Frame) -> None:
        """A pain placed at a site MediTOD names as a value of its own is that value (``pain`` in the chest ->
        ``chest pain``, :data:`agent.core.ontology.SITE_VALUES`); its other places stay its locations (where it
        spreads)."""
        for (name, value), item in list(frame.items.items()):
            places = item.get("location") or []
            site = sited_pain(places) if value == "pain" else None
            if site is None:
                continue
            renamed = frame.rename(name, value, SITE_VALUES[site])
            rest = [p for p in places if without_side(p) != site]  # the site is in the name; a part of it stays
            if rest:
                renamed["location"] = rest
            else:
                renamed.pop("location", None)

    def _other_attributes(
        self, frame: Frame, m: Mention, here: list[Mention], clause: str, sentence: str, asked_checks: set[str]
    ) -> None:
        if m.base == "habit" and m.status == "positive":
            item = frame.held("habit", m.value, "positive")
            set_attr(item, "frequency", attr.frequency(clause))
            if re.search(r"\b(since|for|started|ago)\b", clause) or "starting" in asked_checks:
                set_attr(item, "starting", attr.onset(clause, asked="starting" in asked_checks))
        elif m.base == "exposure" and m.status == "positive":  # when it was met ("a long flight last week")
            set_attr(frame.held("exposure", m.value, "positive"), "when", attr.onset(clause))
        elif m.base == "medication" and m.status == "positive":
            item = frame.held("medication", m.value, "positive")
            set_attr(item, "frequency", attr.frequency(clause))
            if re.search(r"\b(help|helps|helped|helping|work|worked|better|difference|relief)\b", clause):
                set_attr(item, "impact", attr.impact(clause))
            if (taken_for := self._taken_for(m, here)) is not None:
                set_attr(item, "respone_to", taken_for)
        elif m.base == "exposure":
            item = frame.held("exposure", m.value, m.status)
            set_attr(item, "where", attr.where(clause))
        elif m.base == "medical_history" and m.value == "pregnancy" and m.status == "positive":
            # how far along, in the patient's words ("34 weeks"): what tells an early pregnancy's emergency (an
            # ectopic, NICE NG126) from a late one's (pre-eclampsia, NICE NG133)
            set_attr(frame.held("medical_history", "pregnancy", "positive"), "starting", attr.gestation(sentence))

    @staticmethod
    def _taken_for(m: Mention, here: list[Mention]) -> str | None:
        """What a medication is taken for: the condition named after a "for" that follows the drug ("ramipril for my
        blood pressure"; "ramipril and amlodipine for my blood pressure" both), or in a "for ..." that opens the
        sentence ("For my blood pressure I take ramipril"). A drug named after the condition is not for it
        ("ramipril for my blood pressure and a statin": the statin is not)."""
        conditions = [x for x in here if x.base in ("medical_history", "symptom") and x.status == "positive"]
        text = m.sentence.lower()
        for x in sorted(conditions, key=lambda c: c.char_start):
            if x.char_start >= m.char_end and re.search(r"\bfor\b", text[m.char_end:x.char_end]):
                return x.value
        if re.match(r"\s*(?:and\s+|so\s+)?for\b", text):
            return next((x.value for x in conditions if x.char_end <= m.char_start), None)
        return None

    @staticmethod
    def share_trailing_time(frame: Frame, symptoms: list[Mention]) -> None:
        """ "A cough that's been getting worse, and short of breath for the last few months": a time said once, after
        several symptoms, dates the earlier ones that have no time of their own. Only onset travels back, and only
        to symptoms named before it in the same sentence (a later symptom's "since yesterday" stays its own)."""
        ordered = sorted(symptoms, key=lambda m: m.char_start)
        items = [frame.item("symptom", m.value, mention_status(m)) for m in ordered]
        for i, item in enumerate(items):
            if "onset" in item:
                for earlier in items[:i]:
                    earlier.setdefault("onset", item["onset"])
                break

    @staticmethod
    def records(frame: Frame, text: str, whole: str, asked: list) -> None:
        """Basic information, residence, occupation and travel said anywhere in the utterance."""
        asked_bases = {b for b, _, _ in asked}
        a = attr.age(whole) or (attr.bare_age(whole) if "basic_information" in asked_bases else None)
        if a and ("basic_information" in asked_bases or re.search(r"\b(?:years?|yrs?)[\s-]*old\b", whole)
                  or attr.stated_age(whole) == a):
            frame.record("basic_information")["age"] = a
        if s := attr.sex(whole, asked="basic_information" in asked_bases):
            frame.record("basic_information")["sex"] = s
        if (home := attr.dwelling(whole)) is not None:
            rec = frame.record("residence")
            rec.update({"value": home, "status": "living"})
        if (j := attr.job(whole, asked="occupation" in asked_bases)) is not None:
            frame.record("occupation").update({"value": j, "status": "true"})
        elif (was := attr.past_job(whole, asked="occupation" in asked_bases)) is not None:
            frame.record("occupation").update(was)
        if attr.pregnancy_test_positive(whole) and not any(
                v == "pregnancy" for (_, v) in frame.items):
            frame.item("medical_history", "pregnancy", "positive")
        elif attr.pregnancy_test_negative(whole) and not any(v == "pregnancy" for (_, v) in frame.items):
            frame.item("medical_history", "pregnancy", "negative")
        if back := attr.returned_from(text):
            frame.record("travel").update({"status": "traveled", "destination": back})
        elif attr.travel(whole):
            rec = frame.record("travel")
            negated = re.search(r"\b(no|not|haven't|didn't|never|nowhere)\b", whole)
            rec["status"] = "not_traveled" if negated else "traveled"
            if not negated and (dest := attr.destination(text)):
                rec["destination"] = dest
