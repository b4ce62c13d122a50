"""A knowledge-based clinical NLU: what the patient said, as CMAS frames, in milliseconds on a CPU.

A thin module over three readers, each in its own file:

1. **Mentions** (``policies.nlu.mentions``): the lexicon's phrases with their ConText status and owner.
2. **Details** (``policies.nlu.details``): each mention's attributes from its own part of the sentence, and the
   utterance's records (age, sex, home, job, travel).
3. **Answers** (``policies.nlu.answers``): the doctor's last action says what was asked, so a short answer
   ("No.", "About a week.", "On the left.") becomes a frame about the asked items and their asked attributes.

Every frame is strict CMAS (``agent.core.cmas.parse_nlu``) and every medical value is one the vocabulary knows.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from agent.core import cmas
from agent.core.clinical_text import (
    GUARDED_SEX,
    REPORTING_VERBS,
    as_the_patient,
    default_clause_reader,
    here_for_myself,
    spoken_for,
    without_echoes,
)
from agent.core.lay_terms import plain_english
from agent.core.ontology import Vocabulary, default_vocabulary
from agent.core.protocol import ModuleOutput, TurnContext
from agent.core.safety import default_rules, disclosure_words, disclosures
from agent.core.speech_repair import repaired
from policies.nlu import attributes as attr
from policies.nlu.answers import AnswerReader, asked_items
from policies.nlu.concepts import DEFAULT_THRESHOLD, ConceptMatcher
from policies.nlu.details import DetailReader, last_placed, mention_status
from policies.nlu.frame import Frame, set_attr
from policies.nlu.lexicon import Lexicon, default_lexicon
from policies.nlu.mentions import (
    NO_BLOOD_KIN,
    Mention,
    MentionFinder,
    a_guess,
    feared,
    guessed,
    resolve_after_the_change,
    resolve_blocked,
    resolve_blood,
    resolve_drug_reaction,
    resolve_eye,
    resolve_faint_and_dribble,
    resolve_night_sweats,
    resolve_pain,
    resolve_toilet,
    segments,
    someone_elses,
    topic_then_it,
)
from policies.nlu.observations import DYED, DYED_BY, sentence_of

_PRESSURE_NAMED = re.compile(r"\b(?:blood pressure|bp)\b")
"""A medicine phrase that names the blood pressure it treats."""


@dataclass(frozen=True)
class Reading:
    """One utterance read: its CMAS frames, and the (slot name, value) items the second stage gave."""

    frames: list[dict]
    second_stage: set[tuple[str, str]] = field(default_factory=set)


_SPEAKERS_OWN = re.compile(r"[^.!?;,]*\b(?:myself|me personally|me too|i do too|i have too|so do i|so have i)\b"
                           r"[^.!?;,]*(?:\s*\b(?:but|and)\b)?", re.I)
"""What a guardian says of themselves ("I've got asthma myself but her chest is fine"): the clause, to its
boundary, with the joining word; what follows is about the patient again."""
_RELATIVE_DENIED = re.compile(r"\b(?:not|no|nor|neither)\b[^.,;]*\b(?:mum|mom|mother|dad|father|brother|sister|"
                              r"family|parents|anyone|anybody|grand\w+|aunt\w*|uncle|son|daughter|wife|husband)\b|"
                              r"\b(?:nobody|no one|none of them)\b", re.I)
"""A reply that denies it of a relative too ("no, and not my parents either"): no relative owns the asked illness."""
_REPORTS = rf"(?:{'|'.join(sorted(REPORTING_VERBS))})\b"
"""A reporting verb after a relative ("my mum says ..."): the relative reports and owns nothing."""
_RATE = re.compile(r"\b(rate|scale|out of (?:10|ten)|1 to 10|one to ten|zero to ten|0 to 10)\b")


_LIFETIME = re.compile(r"\bnever\s+(?:\w+\s+)?(?:get|gets|suffer|suffers|suffered)\b|"
                       r"\b(?:not usually|don't usually|do not usually|don't normally|not normally|hardly ever)\b|"
                       r"\bin (?:my|his|her|their) (?:whole )?life\b|\b(?:before|ever)\b", re.I)
"""A denial said of a lifetime or of what is usual ("I never get headaches", "never had one in his life", "not had
anything like it before"); a bare "never" is not one ("I've never blacked out with it" denies the episodes' own
feature)."""




class ClinicalNLU:
    """The ``clinical`` NLU kind. ``understand`` reads ``ctx.turns[-1]`` (the patient), the doctor's last
    actions (``ctx.past_actions[-1]``) and the state (to keep the status of an item being elaborated)."""

    def __init__(self, lexicon: Lexicon | None = None, vocab: Vocabulary | None = None, second_stage: bool = True,
                 concept_threshold: float = DEFAULT_THRESHOLD):
        self.lexicon = lexicon or default_lexicon()
        self.vocab = vocab or default_vocabulary()
        self.finder = MentionFinder(self.lexicon)
        self.details = DetailReader(self.lexicon, self.vocab)
        self.answers = AnswerReader(self.lexicon, self.vocab, self.finder, self.details)
        self.concepts = ConceptMatcher(self.lexicon, self.vocab, concept_threshold) if second_stage else None
        self.clause_reader = default_clause_reader()  # the ConText reading of clauses (shared; built on first use)

    def mentions(self, text: str, named_before: Iterable[str] = ()) -> tuple[list[Mention], list[str]]:
        """Concept mentions with their status, and the utterance's sentences (cleaned, in order)."""
        return self.finder.mentions(text, named_before)

    def answer_polarity(self, text: str) -> str | None:
        """affirm / deny / unsure when the utterance opens with (or is) such an answer, else None."""
        return self.answers.polarity(text)

    def understand(self, ctx: TurnContext) -> ModuleOutput:
        t0 = time.perf_counter()
        text = ctx.turns[-1][1] if ctx.turns else ""
        doctor = ctx.turns[-2][1] if len(ctx.turns) > 1 and ctx.turns[-2][0] == "doctor" else ""
        last_actions = ctx.past_actions[-1] if ctx.past_actions and doctor else []
        proxy = spoken_for(ctx.turns[:-1]) if len(ctx.turns) > 1 else None
        frames = self.read(text, last_actions, ctx.state, doctor, proxy=proxy).frames
        return ModuleOutput(value=frames, meta={"nlu": "clinical", "latency_s": round(time.perf_counter() - t0, 6)})

    def frames(self, text: str, last_actions: list[dict] | None = None, state: dict | None = None,
               doctor: str = "") -> list[dict]:
        """CMAS frames of one patient utterance, given the doctor's last actions and utterance and the state."""
        return self.read(text, last_actions, state, doctor).frames

    def read(self, text: str, last_actions: list[dict] | None = None, state: dict | None = None,
             doctor: str = "", proxy: str | None = None) -> Reading:
        """:meth:`frames`, with which of their items the second recognition stage gave (value or status).
        ``proxy``: the relative a guardian speaks for (``agent.core.clinical_text.spoken_for``), who is the patient;
        what the speaker says of themselves ("I've got asthma myself") is then nobody's in this state."""
        state = state or {}
        # "Pregnant? I'm 71!": the echoed question is no answer; "the right, no, sorry, the left one": the left
        text = topic_then_it(without_echoes(repaired(plain_english(text))), self.lexicon.locations)
        if proxy:
            text = _SPEAKERS_OWN.sub("", text)
        relative = None
        opening = not any(cmas.slot_items(state, "symptom"))
        if opening:  # the opening statement: maybe a guardian's (MediTOD's guide)
            # a bare "she" opens a carer's account only in the interview's first words (nothing recorded yet): later,
            # "She's not had a temperature" is the person already spoken of
            text, relative = as_the_patient(text, pronouns=not any(v for k, v in state.items()
                                                                   if k != "basic_information"))
        frame = Frame()
        # someone named who is not the patient is someone else, except in the opening statement, where a guardian
        # introduces the patient in ways no list covers ("I was just bringing my son and he's had a cough")
        others = proxy is None and (not opening or here_for_myself(text))
        mentions, sents = (self.finder.mentions(text, last_placed(state), others=others,
                                                proxy=proxy)
                           if text.strip() else ([], []))
        second = self._second_stage(text, mentions, others) if text.strip() else []
        mentions += second
        mentions = self._no_history_of_it(mentions, state)
        whole = attr.clean(text)
        asked = asked_items(last_actions or [])
        if doctor and _RATE.search(doctor.lower()):
            asked = [(b, v, [*c, {"type": "severity"}]) if b == "symptom" else (b, v, c) for b, v, c in asked]
        resolve_pain(mentions, state, self.lexicon.locations,
                     asked=[v for b, v, checks in asked if b == "symptom" and checks])  # its attributes were asked
        resolve_blood(mentions, text, state)
        resolve_after_the_change(mentions, text)
        resolve_faint_and_dribble(mentions)
        resolve_night_sweats(mentions)
        resolve_blocked(mentions)
        resolve_toilet(mentions)
        resolve_eye(mentions, text, sents, self.clause_reader)
        resolve_drug_reaction(mentions)
        self.details.denied_elsewhere(frame, mentions, sents)
        for m in mentions:
            item = frame.item(m.base, m.value, mention_status(m))
            if m.base == "family_history" and m.relation:
                set_attr(item, "relation", m.relation)
        self._purpose_named(frame, mentions)
        self.details.attributes(frame, mentions, sents, asked)
        self.details.keep_places_apart(frame)
        self.details.details_of_clauses(frame, second, {c.get("type", "") for _, _, cs in asked for c in cs}, sents)
        self.details.spread_of_pain(frame, text)
        self.details.place_from_before(frame, mentions, state)
        self.details.side_of_the_same_part(frame, text, state)
        self.details.name_angioedema(frame, mentions)
        self.details.pain_at_rest(frame, mentions, sents)
        self.details.records(frame, text, whole, asked)
        if relative in GUARDED_SEX:  # "I'm here with my mum": the patient is a woman
            frame.record("basic_information").setdefault("sex", GUARDED_SEX[relative])
        self.answers.apply(frame, text, sents, mentions, asked, state, doctor)
        self._relatives_answer(frame, text, mentions, asked, proxy)
        self.answers.hedged_amount(frame, text)
        self._disclosed(frame, mentions, asked)
        self.details.name_sited_pain(frame)
        self._drop_known(frame, state, asked)
        slots = frame.slots()
        from_second = {(name, value) for (name, value) in frame.items
                       if any(m.value == value and name.endswith(m.base) for m in second)}
        if slots:
            return Reading(cmas.parse_nlu([{"intent": "inform", "slots": slots}]), from_second)
        return Reading(cmas.parse_nlu([{"intent": self._intent(whole)}]), set())

    def _no_history_of_it(self, mentions: list[Mention], state: dict) -> list[Mention]:
        """A complaint the patient has now, denied for a lifetime ("Never get headaches. Ever." after telling one, "he's
        never had a fit in his life" after the fit this morning): no history of it before, never a denial of the
        present one (which it had turned negative). Recorded as the medical history's negative where the
        vocabulary names it so (MediTOD's antecedents), else only the wrong denial is left out."""
        out = []
        for m in mentions:
            if (m.base == "symptom" and m.status == "negative" and _LIFETIME.search(m.sentence)
                    and any(self.vocab.same("symptom", str(it.get("value", "")), m.value)
                            for it in state.get("positive_symptom") or [])):
                code = self.vocab.canonical("symptom", m.value) or ""
                had = code.split(":", 1)[1] if code.startswith("code:") else m.value
                if self.vocab.known("medical_history", had):
                    m.base, m.value = "medical_history", had
                    out.append(m)
                continue
            out.append(m)
        return out

    @staticmethod
    def _purpose_named(frame: Frame, mentions: list[Mention]) -> None:
        """ "I take a tablet for my blood pressure", "a blood pressure tablet": a medicine named by what it treats says
        the patient has it (a treated high blood pressure, MediTOD's hypertensive disease); the medicine phrase had
        taken the condition's words. Only the patient's own medicine, said as taken."""
        for m in mentions:
            said = m.sentence[m.char_start:m.char_end].lower() if m.char_end > m.char_start else ""
            if (m.base == "medication" and m.status == "positive" and not m.relation
                    and _PRESSURE_NAMED.search(said)):
                if not any(v == "hypertensive disease" for _, v in frame.items):
                    frame.item("medical_history", "hypertensive disease", "positive")
                set_attr(frame.item("medication", m.value, "positive"), "respone_to", "hypertensive disease")

    def _second_stage(self, text: str, mentions: list[Mention], others: bool = True) -> list[Mention]:
        """Symptoms the lexicon missed, as mentions (no place in a sentence: their details are not read). ``others``:
        as the mention finder's, a clause whose subject is someone else ("my Glenys, she had the asthma") is theirs,
        so nothing of the patient's."""
        if self.concepts is None:
            return []
        parts = segments(mentions)
        unplaced = [m for m in mentions if m.base == "symptom" and m.value == "pain" and m.status != "negative"
                    and not attr.phrase_hits(parts.get(id(m), m.sentence).lower(), self.lexicon.locations)]
        named = [m.sentence[m.char_start:m.char_end] for m in mentions]
        affirmed = [m.sentence[m.char_start:m.char_end] for m in mentions if m.status != "negative"]
        if unplaced:  # "it hurts to swallow": a pain named by what it goes with (odynophagia), whatever "it" is
            rest = [m.sentence[m.char_start:m.char_end] for m in mentions if m not in unplaced]
            for h in self.concepts.find(text, rest, antecedents=[]):
                pain = next((m for m in unplaced if m.sentence[m.char_start:m.char_end].lower() in h.clause.lower()),
                            None)  # the pain's clause names no other concept: "it hurts when I breathe" is no dyspnea
                if pain is not None and h.base == "symptom" and attr.PAIN_WORD.search(h.matched):
                    pain.value = h.value
        known = {(m.base, m.value) for m in mentions}
        # a disclosure's own words are no ordinary complaint: "it'd be easier not to wake up" is the wish to be dead
        # the red-flag screen reads (its phrases and patterns), not the sleep trouble it is near by meaning
        low = text.lower()
        told = [(at, at + len(w)) for w in disclosure_words(text, default_rules()) if (at := low.find(w.lower())) >= 0]
        out = []
        for h in self.concepts.find(text, named, affirmed):
            if any(b == h.base and self.vocab.same(b, h.value, v) for b, v in known):
                continue
            at = low.find(h.clause.lower())
            if at >= 0 and any(a < at + len(h.clause) and at < b for a, b in told):
                continue
            dyed_in = sentence_of(text, at) if at >= 0 else h.clause  # "my poo was red, but I'd eaten beetroot"
            if h.base == "symptom" and h.value in DYED and DYED_BY.search(dyed_in):
                continue  # "black since I started the iron tablets": the dye's colour, no bleeding
            relation = self.finder.relation(h.clause.lower()) if h.base == "family_history" else None
            said_so_far = text[:at + len(h.clause)].rstrip(".!? ") if at >= 0 else ""
            if others and h.base != "family_history" and said_so_far and someone_elses("", said_so_far):
                continue
            if relation in NO_BLOOD_KIN or (relation and others and self.finder.kin_of_another(
                    said_so_far[:at + (h.clause.lower().find(relation) if relation in h.clause.lower() else 0)])):
                continue  # "my husband has diabetes", "her brother" (the wife's): no family history, nor the patient's
            if h.base in ("medical_history", "family_history") and feared(said_so_far or h.clause):
                continue  # "I'm terrified it's cancer in my lungs": a fear, found by meaning as by a phrase
            if h.base in ("medical_history", "symptom") and guessed(h.clause, anywhere=True):
                continue  # "my sister thinks it might be asthma": a lay guess, found by meaning as by a phrase
            status = h.status
            if h.base == "medical_history" and status == "positive" and a_guess(h.clause):
                status = "unknown"  # "I think I'm having a gastric ulcer": the patient's guess, as for a phrase
            out.append(Mention(h.base, h.value, status, -1, -1, relation, sentence=h.clause))
        return out

    def _relatives_answer(self, frame: Frame, text: str, mentions: list[Mention], asked: list,
                          proxy: str | None = None) -> None:
        """ "Yes, my dad", "Not me, my grandad had one", "No, but my mum has" to "have you ever had a heart attack?":
        a relative named in a reply that names no illness of its own owns the asked condition (family history); the
        patient's own item keeps only a denial ("not me", "no"), never the yes that was about the relative. Asked
        about symptoms, "Yes, my dad did" affirms none of them for the patient. The relative a guardian speaks for
        (``proxy``) is the patient."""
        if any(m.base in ("medical_history", "family_history") for m in mentions):
            return
        relation = self.finder.relation(attr.clean(text))
        if relation is None or relation == proxy or _RELATIVE_DENIED.search(text) or re.search(
                rf"\b{re.escape(relation)}\W+(?:\w+\W+)?{_REPORTS}", text, re.I):
            return  # "my mum says it started at five": a relative who reports owns nothing
        for b, v, _ in asked:
            if b == "symptom" and not any(m.base == "symptom" for m in mentions):
                frame.items.pop(("positive_symptom", v), None)  # "Yes, my dad did" to "any X, Y or Z?"
        conditions = [v for b, v, _ in asked if b == "medical_history" and v.casefold() not in cmas.OPEN_VALUES]
        if len(conditions) != 1:
            return
        set_attr(frame.item("family_history", conditions[0], "positive"), "relation", relation)
        frame.items.pop(("positive_medical_history", conditions[0]), None)
        frame.items.pop(("unknown_medical_history", conditions[0]), None)

    def _disclosed(self, frame: Frame, mentions: list[Mention], asked: list) -> None:
        """A hedged or unsure disclosure of suicidal thoughts, self-harm or thoughts of harming others is had, never
        unknown ("I don't know... sometimes I think everyone'd be better off without me" had been an unsure suicidal
        ideation in the note of a patient with a plan): the red-flag screen's ``hedge_keeps_level`` values. What the
        patient's words named, or the one item asked; of several asked, a thought of harming others is not inferred
        from an unsure reply ("Probably this weekend..." to "any self-harm, or thoughts of harming other people?"
        had raised the harm-to-others emergency for a patient planning to end their own life)."""
        named = {m.value for m in mentions if m.base == "symptom"}
        several = sum(1 for b, _, _ in asked if cmas.SLOTS[b].medical) > 1
        for (name, value) in list(frame.items):
            base = cmas.split_slot_name(name)[1]
            if not (name.startswith("unknown_") and base == "symptom" and any(
                    self.vocab.same("symptom", value, d) for d in disclosures())):
                continue
            if value in named or not several or not any(
                    self.vocab.same("symptom", value, o) for o in disclosures(self_directed=False)):
                frame.item(base, value, "positive")
            else:  # which of the listed items the hedge is about is not said: not this one
                del frame.items[(name, value)]

    @staticmethod
    def _drop_known(frame: Frame, state: dict, asked: list) -> None:
        """What the state already holds is no news: a re-mention with nothing new is not an inform (MediTOD
        annotates "Yeah yeah." about a known habit as a nod). An answer to a question keeps what it said."""
        asked_values = {(b, v) for b, v, _ in asked}
        for (name, value), item in list(frame.items.items()):
            before = next((it for it in state.get(name) or [] if it.get("value") == value), None)
            if before is None:
                continue
            extra = {k: v for k, v in item.items() if k != "value"}
            new = {k: v for k, v in extra.items() if before.get(k) != v}
            base = cmas.split_slot_name(name)[1]
            if not extra or (not new and (base, value) not in asked_values):
                del frame.items[(name, value)]

    def _intent(self, whole: str) -> str:
        t = re.sub(r"[^\w\s']", " ", whole)
        t = f" {' '.join(t.split())} "
        for phrase in sorted(self.lexicon.acknowledgements, key=len, reverse=True):
            t = t.replace(f" {phrase} ", " ")
        if not t.strip():
            return "nod_prompt_salutations"
        return "chit-chat"
