"""The doctor's words put to the person who is there. When a guardian speaks for the patient ("I'm calling about my
mum, she's gone all muddled"), the questions about the patient are asked in the third person ("Has she had any
fits?"), not as if the guardian were the patient ("Have you had any fits?", "Have you had unprotected sex?"); what
is asked of the speaker themselves stays in the second person ("Could you tell me ...", "Thank you").

Who the speaker speaks for is read from the opening statement (:func:`agent.core.clinical_text.spoken_for`); this
module only rewrites an English utterance, so it serves any NLG's output the same way."""

from __future__ import annotations

import re

_SHE = frozenset("mum mom mother mam daughter wife girl grandma grandmother granny nan nana sister".split())
_HE = frozenset("dad father son husband boy grandad grandfather grandpa brother".split())

# What the speaker is asked to do or judge keeps "you": the speaker tells, describes, rates, says.
_TO_THE_SPEAKER = re.compile(
    r"\b(?:thank you|(?:could|can|would|will) you (?:please )?(?:tell|describe|say|explain|give|let|show|rate|"
    r"point|think)|do you (?:know|think|remember)|you mean|if you (?:can|could)|you're welcome|"
    r"your local emergency number)\b", re.I)
_AUX_INVERTED = re.compile(r"\b(have|has|do|does|are|is|were|was|did|can|could|would|will|should|might|may)\s+you\b",
                           re.I)
_CONTRACTED = re.compile(r"\byou('ve|'re|'d|'ll)\b", re.I)
_SUBJECT_AUX = {"have": "has", "are": "is", "were": "was", "do": "does", "don't": "doesn't", "haven't": "hasn't",
                "aren't": "isn't", "weren't": "wasn't"}
_MODALS = frozenset("""had did can could would will might may should must need ever never still also always
usually often sometimes really just""".split())
# A "you" after these is an object ("made you unwell", "keeps you from", "go through it with you"); elsewhere, and
# before an auxiliary, it is the subject ("how much urine you pass", "each time you vomit").
_OBJECT_AFTER = frozenset("""made make makes making keep keeps kept wake wakes woke bother bothers bothered tell told
give gave help helps helped stop stops stopped let lets see saw send sent ask asked take took bring brings brought get
got affect affects affected worry worries hurt hurts with for to from at on about against than like near""".split())
_NOT_VERBS = frozenset("your yourself the a an any to in on at for with about from".split())


def pronouns(relative: str) -> tuple[str, str, str, str]:
    """Subject, object, possessive and reflexive pronouns for the patient a guardian speaks of ("she", "her", "her",
    "herself"); a child, baby or partner, whose sex the word does not say, is "they"."""
    r = relative.lower()
    if r in _SHE:
        return "she", "her", "her", "herself"
    if r in _HE:
        return "he", "him", "his", "himself"
    return "they", "them", "their", "themselves"


def _third_singular(verb: str) -> str:
    """A verb's third-person singular present ("pass" -> "passes", "worry" -> "worries", "live" -> "lives")."""
    low = verb.lower()
    if low in _SUBJECT_AUX:
        return _SUBJECT_AUX[low]
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 2 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _cased(word: str, like: str) -> str:
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def about_the_patient(text: str, relative: str) -> str:
    """``text``, said to a guardian, with the patient in the third person: "Have you had any fainting spells?" ->
    "Has she had any fainting spells?", "Could you tell me whether you have travelled?" -> "Could you tell me whether
    she has travelled?", "What do you take it for?" -> "What does she take it for?"."""
    subj, obj, poss, refl = pronouns(relative)
    singular = subj != "they"
    kept: list[str] = []

    def keep(m: re.Match[str]) -> str:
        kept.append(m.group(0))
        return f"\x00{len(kept) - 1}\x00"

    out = _TO_THE_SPEAKER.sub(keep, text)

    def inverted(m: re.Match[str]) -> str:
        aux = m.group(1)
        new = {"have": "has", "do": "does", "are": "is", "were": "was"}.get(aux.lower(), aux.lower()) \
            if singular else aux.lower()
        return f"{_cased(new, aux)} {subj}"

    out = _AUX_INVERTED.sub(inverted, out)
    out = _CONTRACTED.sub(lambda m: _cased(subj + ({"'ve": "'s", "'re": "'s"}.get(m.group(1).lower(), m.group(1))
                                                   if singular else m.group(1)), m.group(0)), out)
    out = re.sub(r"\byourselves\b|\byourself\b", refl, out, flags=re.I)
    out = re.sub(r"\byours\b", {"her": "hers", "his": "his", "their": "theirs"}[poss], out, flags=re.I)
    out = re.sub(r"\byour\b", lambda m: _cased(poss, m.group(0)), out, flags=re.I)

    tokens = re.split(r"(\s+)", out)
    words = [i for i, t in enumerate(tokens) if t.strip()]
    for n, i in enumerate(words):
        core = re.sub(r"\W", "", tokens[i])
        if core.lower() != "you":
            continue
        prev = re.sub(r"[^\w']", "", tokens[words[n - 1]]).lower() if n else ""
        nxt_i = words[n + 1] if n + 1 < len(words) else None
        nxt = re.sub(r"[^\w']", "", tokens[nxt_i]).lower() if nxt_i is not None else ""
        is_subject = bool(nxt) and (nxt in _SUBJECT_AUX or nxt in _MODALS or prev not in _OBJECT_AFTER)
        if not is_subject or tokens[i].rstrip().endswith((",", ".", "?", "!")):
            tokens[i] = tokens[i].replace(core, _cased(obj, core))
            continue
        tokens[i] = tokens[i].replace(core, _cased(subj, core))
        if singular and nxt_i is not None and nxt not in _MODALS and nxt not in _NOT_VERBS \
                and not nxt.endswith(("ed", "ing")):
            word = re.sub(r"[^\w']", "", tokens[nxt_i])
            tokens[nxt_i] = tokens[nxt_i].replace(word, _third_singular(word), 1)
    out = "".join(tokens)
    return re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], out)
