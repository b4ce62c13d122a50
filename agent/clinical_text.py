"""Finding concepts in what a patient says, with their ConText status: the one home of the spaCy + medspaCy
machinery, shared by the clinical NLU (``policies.nlu.clinical``) and the red-flag text rules
(``agent.safety``), so both read negation ("no blood in my sputum") the same way.

A :class:`PhraseFinder` matches phrases (case-insensitive, whole tokens, longest match wins) and reports each
match's key, sentence and status: ``negative`` / ``unknown`` when a ConText cue *precedes* it (medspaCy's
clinical rules plus the conversational cues below; a cue inside the phrase is part of what it names), else
``positive``, and ``family`` when a FAMILY cue modifies it. A cue that starts before the phrase counts even when
it overlaps it ("never had" before "had a seizure").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property


def conversation_rules():
    """ConText rules for how patients talk (medspaCy's defaults are written for clinical notes).

    FORWARD only: in speech the cue comes first ("no fever", "never smoked"); a cue after a mention is usually
    about something else ("I take an inhaler, it hasn't helped")."""
    from medspacy.context import ConTextRule

    neg = ["haven't", "have not", "hasn't", "don't", "do not", "didn't", "did not", "never", "nope", "nothing",
           "none", "no longer", "not had", "not noticed", "can't say i have", "wasn't", "weren't", "isn't", "aren't",
           "doesn't", "does not", "i don't think", "neither", "nor"]
    unsure = ["not sure", "i'm not sure", "unsure", "maybe", "possibly", "perhaps", "might", "i think", "i guess",
              "don't know", "not certain", "kind of", "sort of", "can't remember", "don't remember", "probably"]
    rules = [ConTextRule(p, "NEGATED_EXISTENCE", direction="FORWARD", max_scope=8) for p in neg]
    rules += [ConTextRule(p, "POSSIBLE_EXISTENCE", direction="FORWARD", max_scope=8) for p in unsure]
    rules += [ConTextRule(p, "NEGATED_EXISTENCE", direction="TERMINATE") for p in ("but", "except", "although", "though",
                                                                                    "however", "just", "only", "other than")]
    return rules


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


class PhraseFinder:
    """Phrases -> keys, found with their ConText status. The pipeline is built on first use (about 3 s)."""

    def __init__(self, phrases: Iterable[tuple[str, str]]):
        self._phrases = list(phrases)  # (phrase, key)

    @cached_property
    def _pipeline(self):
        import medspacy  # noqa: F401  (registers the medspacy_* factories and the span extensions)
        import spacy
        from loguru import logger
        from spacy.matcher import PhraseMatcher

        logger.disable("PyRuSH")
        nlp = spacy.blank("en")
        nlp.add_pipe("sentencizer")
        context = nlp.add_pipe("medspacy_context")
        context.add(conversation_rules())
        matcher = PhraseMatcher(nlp.vocab, attr="LOWER")
        keys: dict[str, str] = {}
        for i, (phrase, key) in enumerate(self._phrases):
            label = f"P{i}"
            keys[label] = key
            matcher.add(label, [nlp.make_doc(phrase)])
        return nlp, matcher, keys

    def find(self, text: str) -> tuple[list[Found], list[str]]:
        """The matches in ``text`` and its sentences (as written)."""
        from spacy.tokens import Span
        from spacy.util import filter_spans

        if not text.strip():
            return [], []
        nlp, matcher, keys = self._pipeline
        doc = nlp.make_doc(text)
        for name, proc in nlp.pipeline:
            if name == "medspacy_context":
                doc.ents = filter_spans([Span(doc, s, e, label=nlp.vocab.strings[k]) for k, s, e in matcher(doc)])
            doc = proc(doc)
        sents = list(doc.sents)
        out = []
        for ent in doc.ents:
            sent = next(i for i, s in enumerate(sents) if s.start <= ent.start < s.end)
            kinds = {m.category for m in ent._.modifiers if m.modifier_span[0] < ent.start}
            status = "negative" if "NEGATED_EXISTENCE" in kinds else "unknown" if "POSSIBLE_EXISTENCE" in kinds else "positive"
            offset = sents[sent].start_char
            out.append(Found(keys[ent.label_], ent.text, status, bool(ent._.is_family), sent, ent.start, sents[sent].text,
                             ent.start_char - offset, ent.end_char - offset))
        return out, [s.text for s in sents]
