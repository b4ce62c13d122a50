"""Self-corrections in a patient's words, read as the patient meant them.

Patients correct themselves as they speak: "my right leg, no, sorry, the left one", "my trousers are tighter, I mean
looser", "for three weeks, sorry, four". A reader that takes the words as written records both the slip and the
correction (a swelling of both legs is not the one-sided swelling of a clot; "tighter" is weight gained, not lost).
Disfluency research calls the slip the *reparandum*, the "no, sorry" the *editing term* and what follows the
*repair* (Shriberg 1994, *Preliminaries to a theory of speech disfluencies*); the repair replaces the reparandum, and
its words line up with the reparandum's: it begins as the reparandum began ("the left, no, the right"), ends as it
ended ("my right knee, sorry, left knee"), or puts a word of the same kind in the same place (a side for a side, a
number for a number, a comparative for a comparative).

Only an editing term after a break (a comma, a dash, an ellipsis) starts a repair, and only a repair that lines up
with the words before it replaces them: "Fever, no, but I've a cough" and "It hurts, sorry, I'm a bit emotional"
line up with nothing and are left as said. A bare "no" is also an answer ("Blood, no, phlegm"), so after it only a
repair of the same kind replaces anything.
"""

from __future__ import annotations

import re

_EDIT_WORDS = (r"(?:(?:no|nope|sorry|wait|oops|er|erm|um|uh|oh|well)"
               r"(?=\s*[,.!-]|\s+(?:no|sorry|wait|i mean|actually)\b)"
               r"|actually|i mean|i meant|or rather|rather|make that)")
"""An editing term's words; a "no" or "sorry" ends at a break or another editing word, so "No, sorry, no blood" keeps
its answer."""
_EDIT = re.compile(rf"(?:\s*(?:,|;|--?|—|–|\.\.\.)\s*)(?P<edit>(?:{_EDIT_WORDS}\b,?\s*)+)(?=\w)", re.I)
"""A break, then an editing term ("no, sorry,", "I mean", "or rather")."""

_CORRECTING = {"no", "nope", "sorry", "wait", "oops", "actually", "mean", "meant", "rather", "make"}
"""The words that make an editing term a correction; "oh", "well" or "erm" alone only pause."""

_BREAK = re.compile(r"[,.;!?]|\s(?:and|but|so|because|cos|though)\s", re.I)
"""Where a repair ends."""

_CLAUSE_BREAK = re.compile(r"[,.;!?]")
"""Where a reparandum may begin: "my right calf is swollen and hot, no, the left one" corrects the calf."""

_NOT_A_REPAIR = re.compile(r"^(?:but|and|so|not|never|nothing|none|no|yes|yeah|okay|ok|fine|that|it's fine|"
                           r"um+|uh+|er+m?|hm+|well|like|really|just)\b", re.I)
"""A repair does not begin as an answer, a filler or a new clause joined on does ("Fever, no, but ..."), and a
reparandum that is one ("Um, I mean, really ...", "not really, I mean ...") has nothing to correct."""

_FILLER = re.compile(r"^(?:um+|uh+|er+m?|hm+|so|well|like|and|but|oh)\W*$", re.I)
_ANSWER = re.compile(r"^(?:not|no|nope|yes|yeah|never|nothing|none)\W*$", re.I)
"""A reparandum begins after its fillers; one that begins as an answer ("not really, I mean ...") is no slip."""

_COPULA = re.compile(r"^(?:is|it's|its|it|was|that's|that|no)$", re.I)

_DETERMINERS = {"the", "a", "an", "my", "me", "his", "her", "their", "our", "this", "that", "its"}
_PRO_FORMS = {"one", "ones", "side"}
"""'The left one': the head noun the repair leaves out, as the reparandum said it."""

_NUMBERS = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
            "fifteen", "twenty", "thirty", "forty", "fifty", "sixty", "hundred", "couple", "few", "half"}
_KINDS: dict[str, re.Pattern[str]] = {
    "side": re.compile(r"^(?:left|right|both)$"),
    "number": re.compile(rf"^(?:\d+(?:\.\d+)?|{'|'.join(sorted(_NUMBERS))})$"),
    "day": re.compile(r"^(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|today)$"),
    "month": re.compile(r"^(?:january|february|march|april|may|june|july|august|september|october|november|"
                        r"december)$"),
    "unit": re.compile(r"^(?:minutes?|hours?|days?|weeks?|months?|years?)$"),
    "comparative": re.compile(r"^(?:more|less|worse|better|[a-z]{3,}er)$"),
}
"""Word kinds a repair swaps one for another; "comparative" also takes "-er" nouns, harmless since both sides must
be of the kind and line up."""

_FUNCTION = _DETERMINERS | {"i", "it", "is", "was", "i'm", "it's", "in", "on", "at", "of", "to", "for", "with",
                            "and", "but", "got", "have", "had", "been", "be", "are", "were", "there", "here",
                            "really", "so", "just", "then", "now", "too", "yes", "no", "not"}


def _kind(word: str) -> str | None:
    w = word.lower().strip(".,'")
    return next((k for k, p in _KINDS.items() if p.match(w)), None)


def _stem(word: str) -> str:
    w = word.lower().strip(".,'")
    return w[:-1] if w.endswith("s") and len(w) > 3 else w


def _head(y: list[str]) -> list[str]:
    """The repair without a leading determiner ("the left one" -> "left one"): what lines up by kind."""
    return y[1:] if y[0].lower() in _DETERMINERS and len(y) > 1 else y


def _replacement(x: list[str], y: list[str], bare_no: bool) -> int | None:
    """Where in the reparandum words ``x`` the repair ``y`` starts replacing (an index into ``x``), or None when the
    two do not line up."""
    first = y[0].lower()
    if not bare_no and first in {w.lower() for w in x}:  # "the left, no, the right": it begins as it began
        # a first word lines up only with the word after it too ("the swelling's in my left ankle, no, the right
        # one" does not begin again at "The"; "my left ear, sorry, I keep muddling it" at "I")
        starts = [i for i, w in enumerate(x) if w.lower() == first and (len(y) == 1 or i + 1 < len(x) and (
            _stem(x[i + 1]) == _stem(y[1]) or (_kind(y[1]) is not None and _kind(x[i + 1]) == _kind(y[1]))))]
        if starts:
            return starts[-1]
    if not bare_no and len(y) <= len(x) and _stem(y[-1]) == _stem(x[-1]):  # "right knee, sorry, left knee"
        return len(x) - len(y)
    core = _head(y)
    kind = _kind(core[0])
    if kind is not None:
        same = [i for i, w in enumerate(x) if _kind(w) == kind]
        if same and (len(core) == 1 or all(w.lower() in _PRO_FORMS for w in core[1:])
                     or _kind(core[1]) is not None
                     or (same[-1] + 1 < len(x) and _stem(core[1]) == _stem(x[same[-1] + 1]))):
            return same[-1]  # "three weeks, sorry, four": the number; "right leg, no, the left one": the side
    if (not bare_no and len(y) == 1 and x[-1].lower() not in _FUNCTION and first not in _FUNCTION
            and _kind(x[-1]) is None):
        return len(x) - 1  # "tighter, I mean looser", "sharp, sorry, stabbing"
    return None


_UNFINISHED = frozenset("""can't cannot can couldn't could won't will would wouldn't don't didn't doesn't isn't wasn't
aren't haven't hasn't is was are am be been being have has had get got getting i i'm i've it it's my his her their
your our the a an to of in on at by with for from into and but or so very really just quite this that these those
feel feels felt keep keeps kept like""".split())
"""Words after which a clause cannot end: an ellipsis after one is a pause inside the clause ("I can't... get my
breath"), not a break between two."""
_PAUSE = re.compile(r"(?P<word>[A-Za-z']+)\s*(?:\.\.\.|…)\s*(?=[a-z])")


def _joined_pauses(text: str) -> str:
    """``text`` with each pause inside a clause closed up: a breathless, hesitant or emotional patient's "I can't...
    get my... breath" is "I can't get my breath" (a reader that takes the ellipsis for a break denies nothing and
    finds nothing in either half). An ellipsis after a word a clause can end on stays as said."""
    def closed(m: re.Match[str]) -> str:
        before = re.findall(r"[a-z']+", text[:m.end("word")].lower().replace("’", "'"))[-3:]
        after = re.match(r"[a-z']+", text[m.end():].lower().replace("’", "'"))
        if before[-1] not in _UNFINISHED or (after and after.group(0) in before):
            return m.group(0)  # "It's the... it's the pressure": a restart, which the readers take as said
        return f"{m.group('word')} "

    return _PAUSE.sub(closed, text)


_RESTARTED = re.compile(r"\b([A-Za-z']+)[,.]?\s+(?:(?:uh|um|er|erm|uhm|ah)\b[,.]?\s+)+\1\b", re.I)
"""A word said again after a filler ("I am here with uh, with my daughter"): a restart, one word meant."""


def repaired(text: str) -> str:
    """``text`` with each self-correction's slip replaced by its correction ("my right leg is swollen, no, sorry,
    the left one" -> "my left leg is swollen"), each pause inside a clause closed up (:func:`_joined_pauses`) and a
    word restarted after a filler said once (:data:`_RESTARTED`); text with none comes back unchanged."""
    text = _RESTARTED.sub(r"\1", _joined_pauses(text))
    start = 0
    while m := _EDIT.search(text, start):
        start = m.end()
        edit_words = set(re.findall(r"[a-z]+", m.group("edit").lower()))
        if not edit_words & _CORRECTING:
            continue
        before, after = text[:m.start()], text[m.end():]
        breaks = list(_CLAUSE_BREAK.finditer(before))
        x_start = breaks[-1].end() if breaks else 0
        said = before[x_start:].split()
        fillers = 0
        while fillers < len(said) and _FILLER.match(said[fillers]):
            fillers += 1
        opening, said = said[:fillers], said[fillers:]
        y_end = _BREAK.search(after)
        y_text = after[:y_end.start() if y_end else len(after)]
        y = y_text.split()
        lead = 0
        while lead < len(y) - 1 and _COPULA.match(y[lead]):
            lead += 1
        if lead and (y[lead].lower() in _DETERMINERS or _kind(y[lead]) is not None):
            y = y[lead:]  # "the right one, no, wait, is the left", "..., it is the right": the side
        if not said or not y or len(y) > 6 or _NOT_A_REPAIR.match(" ".join(y)) or _ANSWER.match(said[0]):
            continue
        kept, x = said[:-8], said[-8:]
        at = _replacement(x, y, bare_no=edit_words <= {"no", "nope"})
        if at is None:
            continue
        core = _head(y)
        same_kind = _kind(core[0]) is not None and _kind(x[at]) == _kind(core[0])
        if same_kind and (len(core) == 1 or all(w.lower() in _PRO_FORMS for w in core[1:])):
            x = [*x[:at], core[0].strip(".,"), *x[at + 1:]]  # one word swapped, the rest of the phrase kept
        else:
            x = [*x[:at], *(core if same_kind else y)]
        space = " " if x_start and before[x_start:x_start + 1] == " " else ""
        fixed = before[:x_start] + space + " ".join([*opening, *kept, *x])
        text = fixed + after[len(y_text):]
        start = len(fixed)
    return text
