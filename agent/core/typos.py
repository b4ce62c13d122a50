"""Typing slips in a patient's clinical words, corrected before the clinical NLU and the red-flag screen read them.

A patient who types ("chest paon since 40 mins", "diarea since yesterday", "feeling nauseus") names a complaint the
lexicon, the rule phrases and the ConText cues know only in its right spelling, and the sentence encoder sees an
unknown word piece. Only a slip of a *clinical* word is corrected, and only when the typed word is no English word
at all: the known words are pyspellchecker's English word list with the project's own words (:func:`known_words`),
so "eczema" (a word) or "Drakensberg" (no clinical word near it) stay as typed. A slip is one edit away (a letter
added, dropped, changed or two swapped), or two for a word of six letters or more, from exactly one nearest clinical
word with the same first letter; a tie corrects nothing. The clinical words are the lay phrases of the NLU lexicon
(``configs/nlu_lexicon.yaml``), read here, not through the lexicon module, so the foundation does not import the
modules above it. Checked label-free on the patient turns of the 258 non-holdout OSCE transcripts (spoken, so nearly
free of slips): 9 corrections in 12,561 turns after the texting spellings of dialect.yaml, 7 of them right
("vomitting", "ventilin", "peaople"), 2 wrong ("musc", "gunkie").
"""

from __future__ import annotations

import re
from functools import lru_cache

import yaml
from spellchecker import SpellChecker

from agent.core.paths import REPO_ROOT

NLU_LEXICON = REPO_ROOT / "configs" / "nlu_lexicon.yaml"
VOCABULARY_FILES = REPO_ROOT / "configs" / "vocabulary"

_WORD = re.compile(r"(?<![\w'’])[A-Za-z]{4,}(?![\w'’])")
"""A word that may be a slip: letters only (numbers, contractions and hyphenated words are left alone), four or
more (shorter words are too close to too many others to tell a slip from another word)."""


def _leaves(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [s for v in node.values() for s in _leaves(v)]
    if isinstance(node, list):
        return [s for v in node for s in _leaves(v)]
    return []


@lru_cache(maxsize=1)
def clinical_words() -> frozenset[str]:
    """The words of the NLU lexicon's lay phrases (``values``), four letters or more: what a slip is corrected to."""
    raw = yaml.safe_load(NLU_LEXICON.read_text()) or {}
    words = {w for phrase in _leaves(raw.get("values") or {}) for w in phrase.lower().split()}
    return frozenset(w for w in words if len(w) >= 4 and w.isalpha())  # "haven't" is no word to correct to


@lru_cache(maxsize=1)
def known_words() -> frozenset[str]:
    """Words a typed word may be, never corrected: pyspellchecker's English word list (about 160,000 words, by
    frequency in subtitles, so everyday and medical words alike: "eczema", "bloated", "snore"), the clinical words,
    and every word of the vocabulary files (medicine and brand names, "spiriva", "beconase")."""
    english = set(SpellChecker(language="en").word_frequency.dictionary)
    ours = {w for path in sorted(VOCABULARY_FILES.glob("*.yaml"))
            for leaf in _leaves(yaml.safe_load(path.read_text()) or {})
            for w in re.findall(r"[a-z]+", leaf.lower())}
    return frozenset(english | ours) | clinical_words()


@lru_cache(maxsize=1)
def _clinical_speller() -> SpellChecker:
    """pyspellchecker over the clinical words alone: its edits (a letter added, dropped, changed or two swapped) find
    the clinical words a typed word is one or two edits from."""
    speller = SpellChecker(language=None, distance=2)
    speller.word_frequency.load_words(clinical_words())
    return speller


_SUFFIXES = ("ing", "ed", "es", "s", "y", "ly", "ish", "er", "ers", "ness")
_BRITISH = (("our", "or"), ("ise", "ize"), ("yse", "yze"), ("ae", "e"), ("oe", "e"), ("tre", "ter"), ("ll", "l"))


def is_a_word(word: str) -> bool:
    """Whether ``word`` is English (:func:`known_words`), also in its British spelling ("colour") or as a known word
    with an ending ("texting", "crampy", "tylenols", "whiteish"): the dictionary lists few derived forms."""
    w = word.lower()
    known = known_words()
    if w in known or any(a in w and w.replace(a, b) in known for a, b in _BRITISH):
        return True
    for suffix in _SUFFIXES:
        stem = w[: -len(suffix)]
        if w.endswith(suffix) and len(stem) >= 3 and (stem in known or stem + "e" in known):
            return True  # (never a doubled consonant dropped: "vomitting" is the slip it looks like)
    return False


@lru_cache(maxsize=20_000)
def correction(word: str) -> str | None:
    """The clinical word ``word`` is a slip of, or None (a word, or no single nearest clinical word). Two edits only
    drop or change letters of the clinical word and keep its last letter ("diarea": diarrhea), never add two
    ("fiance" is no "face")."""
    w = word.lower()
    if is_a_word(w):
        return None
    speller = _clinical_speller()
    near = [c for c in speller.known(speller.edit_distance_1(w)) if c[0] == w[0]]
    if not near and len(w) >= 6:
        near = [c for c in speller.known(speller.edit_distance_2(w))
                if c[0] == w[0] and len(w) <= len(c) and w[-1] == c[-1]]
    return near[0] if len(near) == 1 else None


def corrected(text: str) -> str:
    """``text`` with each slip of a clinical word corrected (:func:`correction`); every other word as typed, and a
    capitalised word inside a sentence too: a name ("my Glenys, God rest her" is no "glands")."""

    def fix(m: re.Match[str]) -> str:
        word = m.group(0)
        if word[0].isupper() and text[:m.start()].rstrip()[-1:] not in ("", ".", "!", "?", "-", ":", "\n"):
            return word
        return correction(word) or word

    return _WORD.sub(fix, text)
