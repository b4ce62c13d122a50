"""Fact-level NLG score: read each generated doctor utterance back into CMAS and compare its facts with the
planned action's facts (after imapScore, Wang et al.: score generated text by the medical facts it carries, not by
its words).

Why: BLEU / ROUGE / BERTScore reward wording. A doctor turn that asks "when did the cough start?" when the plan was
"when did the shortness of breath start?" shares almost every word with the right question and is still the wrong
question. Reading facts back out of the text and comparing them with the action the NLG was told to say scores
what matters: did the utterance ask about the planned item and the planned attribute.

Pieces:

- the doctor-utterance reader, :class:`policies.nlu.doctor_reader.FactReader`, reads one doctor utterance into CMAS
  actions with no model (the clinical NLU's lexicon and machinery, the template NLG's wording inverted, question
  cues for check types); it lives next to the clinical NLU it mirrors, this module only scores what it reads.
- :func:`action_facts` unrolls actions into facts, canonical and non-canonical apart.
- :func:`score_nlg_facts` scores a prediction set (micro precision / recall / F1); :func:`turn_fact_f1` one turn.
- :func:`validate` checks on the shared dialogues that the score separates a turn's own action from another turn's
  and ranks a deliberately wrong utterance below the right one (``python3 -m eval.metrics.nlg_facts --validate``).

Facts of one turn (actions in prefix or attribute form alike):

- ``(family, value)``, ``(family, value, check type)``, ``(family, value, check type, check value)`` for medical
  slots; ``family`` is the slot type with any status prefix removed (``positive_symptom`` and the doctor's
  ``symptom`` are one family: an utterance asks about a symptom, it does not assert its status);
- record slots (travel, occupation, residence, basic_information): ``(family, value)``, ``(family, check type)``,
  ``(family, check type, check value)``: as in MediTOD's official POL unrolling, a record's checks are not keyed
  by its (free-text, often open) value.

Canonical (compared exactly): medical head values, put through the shared vocabulary (``coughing`` and ``cough``
are one code), check types, and the check values of the attributes MediTOD canonicalises (``SlotSpec.canonical``:
location, severity, progression, ...; ``status`` of records). Non-canonical (compared by the pluggable matcher of
:mod:`eval.metrics.matching`, exact by default): record values, ``disease`` values (diagnoses are free text: "chronic
bronchitis"), and the other check values (duration "constant", characteristics "dry or wet", where "at work").
Checks of type ``value`` / ``status`` on a medical item restate the item ("do you have X?") and add no fact.
The intent of an action is not a fact: an action without slots (chit-chat, salutations) has no facts.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from agent.core import cmas
from agent.core.data import DEFAULT_DATA_DIR, Example, load_dialogues, nlg_examples
from agent.core.ontology import Vocabulary, default_vocabulary
from eval.metrics.matching import ExactMatcher, Matcher, count_matches, values_to_compare
from eval.metrics.tuples import normalize_value
from policies.nlu.doctor_reader import NOT_CONDITIONS, FactReader, default_reader
from policies.nlu.lexicon import CONDITION

OPEN_VALUES = cmas.OPEN_VALUES
"""Head values that name no concept (an open question); never chosen as the target of a wrong utterance."""
_CHECK_GROUP = {name: group for group, names in cmas.CHECK_ATTRIBUTES.items() for name in names}


# --------------------------------------------------------------------------- facts


def slot_family(slot: str) -> str | None:
    """``positive_symptom`` / ``symptom`` -> ``symptom``; ``None`` for a slot CMAS does not know."""
    try:
        return cmas.split_slot_name(slot)[1]
    except KeyError:
        return None


def check_type(family: str, ctype: Any) -> str | None:
    """A check type as a fact: state attribute names fold into the doctor's check groups
    (``aggravating_factor`` -> ``ana_factors``, ``positive_characteristics`` -> ``characteristics``)."""
    if not isinstance(ctype, str) or not ctype.strip():
        return None
    ctype = ctype.strip().lower()
    return _CHECK_GROUP.get(ctype, ctype) if family == "symptom" else ctype


def head_value(family: str, value: str, vocab: Vocabulary | None = None) -> str:
    """A medical head value as a fact: its vocabulary code when it has one (``coughing`` -> ``cough``), else the
    value lower-cased with whitespace folded."""
    value = normalize_value(value)
    if family in cmas.RECORD_SLOTS or family == "disease":
        return value
    code = (vocab or default_vocabulary()).code(family, value)
    return normalize_value(code) if code else value


def action_facts(actions: Any, vocab: Vocabulary | None = None) -> tuple[set, set]:
    """``(canonical, non_canonical)`` fact sets of one turn's actions (see the module docstring).

    Tolerant of what a model writes: a dict is one action, unknown slots and malformed items are skipped,
    slot names may carry a status prefix."""
    vocab = vocab or default_vocabulary()
    canonical: set = set()
    non_canonical: set = set()
    if isinstance(actions, dict):
        actions = [actions]
    if not isinstance(actions, list):
        return canonical, non_canonical
    for act in actions:
        if not isinstance(act, dict):
            continue
        for slot, items in act.items():
            family = slot_family(slot) if slot != "action" else None
            if family is None or not isinstance(items, list):
                continue
            spec = cmas.SLOTS[family]
            record = family in cmas.RECORD_SLOTS
            for item in items:
                if not isinstance(item, dict):
                    continue
                value = item.get("value")
                head = head_value(family, value, vocab) if isinstance(value, str) and value.strip() else None
                if head is not None:
                    (non_canonical if record or family == "disease" else canonical).add((family, head))
                checks = item.get("checks")
                for chk in checks if isinstance(checks, list) else []:
                    if not isinstance(chk, dict):
                        continue
                    ctype = check_type(family, chk.get("type"))
                    if ctype is None or (not record and ctype in ("value", "status")):
                        continue
                    if not record and head is None:
                        continue
                    where = (family, ctype) if record else (family, head, ctype)
                    canonical.add(where)
                    values = chk.get("values")
                    for v in values if isinstance(values, list) else []:
                        if isinstance(v, str) and v.strip():
                            (canonical if ctype in spec.canonical else non_canonical).add((*where, normalize_value(v)))
    return canonical, non_canonical


# --------------------------------------------------------------------------- scoring


@dataclass
class FactCounts:
    """Matched, gold and predicted fact counts (canonical + non-canonical) of one or many turns."""

    tp: float = 0
    gold: int = 0
    pred: int = 0
    tp_canonical: float = 0
    gold_canonical: int = 0
    pred_canonical: int = 0

    def __iadd__(self, other: FactCounts) -> FactCounts:
        for k in ("tp", "gold", "pred", "tp_canonical", "gold_canonical", "pred_canonical"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        return self

    @staticmethod
    def _prf(tp: float, gold: int, pred: int) -> dict[str, float]:
        p = tp / pred if pred else 0.0
        r = tp / gold if gold else 0.0
        return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}

    @property
    def f1(self) -> float:
        """Per-turn F1 (= 2 tp / (gold + pred)); 1.0 when neither side has a fact (nothing planned, nothing said)."""
        return 2 * self.tp / (self.gold + self.pred) if self.gold + self.pred else 1.0

    def report(self) -> dict:
        return {
            **self._prf(self.tp, self.gold, self.pred),
            "canonical": self._prf(self.tp_canonical, self.gold_canonical, self.pred_canonical),
            "non_canonical": self._prf(self.tp - self.tp_canonical, self.gold - self.gold_canonical,
                                       self.pred - self.pred_canonical),
        }


def text_facts(text: Any, reader: FactReader | None = None,
               context: Sequence[tuple[str, str]] | None = None) -> tuple[set, set]:
    """Facts of a doctor utterance, as the reader reads it (a non-string is an empty utterance)."""
    reader = reader or default_reader()
    return action_facts(reader.read(text if isinstance(text, str) else "", context), reader.vocab)


def _count(gold: tuple[set, set], pred: tuple[set, set], matcher: Matcher) -> FactCounts:
    tp_c = len(gold[0] & pred[0])
    tp_n = count_matches(gold[1], pred[1], matcher)
    return FactCounts(tp_c + tp_n, len(gold[0]) + len(gold[1]), len(pred[0]) + len(pred[1]),
                      tp_c, len(gold[0]), len(pred[0]))


def turn_fact_counts(actions: Any, text: Any, matcher: Matcher | None = None, reader: FactReader | None = None,
                     context: Sequence[tuple[str, str]] | None = None) -> FactCounts:
    """Fact counts of one utterance against one turn's actions."""
    reader = reader or default_reader()
    return _count(action_facts(actions, reader.vocab), text_facts(text, reader, context), matcher or ExactMatcher())


def turn_fact_f1(actions: Any, text: Any, matcher: Matcher | None = None, reader: FactReader | None = None,
                 context: Sequence[tuple[str, str]] | None = None) -> float:
    """F1 of the facts read from ``text`` against the facts of ``actions`` (1.0 when both have none)."""
    return turn_fact_counts(actions, text, matcher, reader, context).f1


def example_context(ex: Example) -> list[tuple[str, str]]:
    """What the NLG saw before the turn: the last exchange (previous doctor turn, patient answer)."""
    return list(ex.history or []) + list(ex.last_exchange or [])


NOTES = (
    "facts: (slot family, value), (slot family, value, check type), (slot family, value, check type, check value) for "
    "medical slots (status prefixes removed), (family, value), (family, check type[, check value]) for record slots; "
    "an action's intent is not a fact",
    "canonical (exact): medical head values through configs/vocabulary.yaml, check types, check values of MediTOD's "
    "canonical attributes; non-canonical (matcher): record and disease values, other check values",
    "micro precision/recall/F1 over all turns: a turn whose gold actions have no facts (chit-chat, salutations) adds "
    "no gold facts but its predicted facts still count against precision",
    "each utterance is read with the example's last exchange as context (anaphora: 'when did that start?'); gold "
    "text read this way does not score 1.0: the reader is a lexicon and cue reader, not an oracle",
)


def score_nlg_facts(examples: Sequence[Example], predictions: Mapping[tuple[str, int], Any],
                    matcher: Matcher | None = None, reader: FactReader | None = None,
                    use_context: bool = True) -> dict:
    """Fact-level NLG score: micro P/R/F1 of the facts read from each predicted utterance against the facts of the
    turn's gold actions. ``predictions``: ``(dialog_id, uttr_id)`` -> generated text; missing or non-string
    predictions are empty utterances (counted in ``missing`` / ``format_errors``)."""
    reader = reader or default_reader()
    matcher = matcher or ExactMatcher()
    pairs = []
    missing = format_errors = without = 0
    for ex in examples:
        key = (ex.dialog_id, ex.uttr_id)
        if key not in predictions:
            missing += 1
        pred = predictions.get(key)
        if not isinstance(pred, str):
            format_errors += 1
            pred = ""
        gold = action_facts(ex.actions or [], reader.vocab)
        if not (gold[0] or gold[1]):
            without += 1
        pairs.append((gold, text_facts(pred, reader, example_context(ex) if use_context else None)))
    matcher.prepare(v for g, p in pairs for v in values_to_compare(g[1], p[1]))
    total = FactCounts()
    for gold, pred in pairs:
        total += _count(gold, pred, matcher)
    rep = total.report()
    return {
        "task": "nlg_facts",
        "turns": len(examples),
        **{k: round(rep[k], 4) for k in ("precision", "recall", "f1")},
        "canonical": {k: round(v, 4) for k, v in rep["canonical"].items()},
        "non_canonical": {k: round(v, 4) for k, v in rep["non_canonical"].items()},
        "gold_facts": total.gold,
        "predicted_facts": total.pred,
        "matched_facts": total.tp,
        "turns_without_facts": without,
        "missing": missing,
        "format_errors": format_errors,
        "context": use_context,
        "reader": reader.describe(),
        "matcher": matcher.describe(),
        "notes": list(NOTES),
    }


# --------------------------------------------------------------------------- validation


@lru_cache(maxsize=1)
def _lexicon_values() -> dict[str, list[str]]:
    """The values ``configs/nlu_lexicon.yaml`` lists by name (not the ontology keywords added to them)."""
    from policies.nlu.lexicon import DEFAULT_LEXICON

    raw = yaml.safe_load(Path(DEFAULT_LEXICON).read_text()) or {}
    return {"symptom": sorted((raw.get("values") or {}).get("symptom") or {}),
            CONDITION: sorted(raw.get("conditions") or {})}


def _candidates(reader: FactReader, base: str) -> list[tuple[str, str]]:
    """(value, phrase) replacements of a slot type: the lexicon's named values in sorted order (symptoms for a
    symptom, conditions for medical / family history), each with its first phrase."""
    lex = reader.lexicon
    b = "symptom" if base == "symptom" else CONDITION
    keys = [(b, v) for v in _lexicon_values()[b]]
    out = []
    for b, v in keys:
        phrases = lex.phrases(b, v)
        if v in OPEN_VALUES or v in NOT_CONDITIONS or not phrases:
            continue
        if reader.by_phrase.get(phrases[0]) == (b, v):  # the phrase reads back as this value
            out.append((v, phrases[0]))
    return out


def _target(actions: list[dict]) -> tuple[str, str] | None:
    """The first symptom / condition item of the turn: (slot type, value)."""
    for act in actions:
        for base, items in act.items():
            if base not in ("symptom", "medical_history", "family_history"):
                continue
            for it in items:
                v = str(it.get("value", "")).casefold()
                if v not in OPEN_VALUES and v not in NOT_CONDITIONS:
                    return base, it["value"]
    return None


def _replace_value(actions: list[dict], base: str, old: str, new: str) -> list[dict]:
    out = json.loads(json.dumps(actions))
    for act in out:
        for it in act.get(base) or []:
            if it.get("value") == old:
                it["value"] = new
    return out


def wrong_utterance(ex: Example, reader: FactReader, rotation: int = 0) -> dict | None:
    """A deliberately wrong utterance for a turn whose action has a symptom / condition value: the gold text with
    the mention of that value replaced by a phrase of another value of the same slot type; when the gold text does
    not name it literally, the template NLG rendering of the action against the rendering with the value replaced.
    ``None`` when the turn has no such value."""
    from policies.template_nlg import TemplateNLG

    target = _target(ex.actions or [])
    if target is None:
        return None
    base, value = target
    vocab = reader.vocab
    used = {(b, it.get("value")) for act in ex.actions for b, its in act.items() if b != "action" for it in its}
    candidates = _candidates(reader, base)
    fam = "symptom" if base == "symptom" else base
    replacement = None
    for k in range(len(candidates)):
        v, phrase = candidates[(rotation + k) % len(candidates)]
        if not any(b == base and vocab.same(fam, v, u) for b, u in used) and v not in OPEN_VALUES:
            replacement = (v, phrase)
            break
    if replacement is None:
        return None
    new_value, new_phrase = replacement
    text = ex.target
    mentions, _ = reader.mentions(text)
    for m in mentions:
        mb = base if m.base == CONDITION and base != "symptom" else m.base
        if mb == base and vocab.same(fam, m.value, value):
            wrong = text[:m.start] + new_phrase + text[m.end:]
            return {"how": "text", "right": text, "wrong": wrong, "value": value, "replacement": new_value}
    nlg = TemplateNLG()
    return {"how": "template", "right": nlg.render(ex.actions), "value": value, "replacement": new_value,
            "wrong": nlg.render(_replace_value(ex.actions, base, value, new_value))}


def validate(data_dir: str | Path = DEFAULT_DATA_DIR, split: str = "all", matcher: Matcher | None = None,
             reader: FactReader | None = None, details: bool = False, use_context: bool = True) -> dict:
    """Does the fact score measure what it claims? On the dialogues of ``data_dir``:

    - own vs other: every doctor turn whose gold actions have facts, its gold utterance scored against its own
      actions and against another turn's (the next turn with facts, in a rotation over all such turns, skipping
      turns with the very same facts); reported as the means and the share of turns where own > other;
    - wrong utterance: for turns whose action has a symptom / condition value, :func:`wrong_utterance`; reported as
      the share of turns where the right utterance scores above the wrong one, and the means;
    - ``mean_template_own``: the template NLG's rendering of each turn's actions against those actions (how well
      the reader reads the wording it inverts; no context).

    Every utterance is read with its own turn's context (``use_context``), whichever actions it is scored
    against."""
    reader = reader or default_reader()
    matcher = matcher or ExactMatcher()
    examples = nlg_examples(load_dialogues(data_dir, split))
    facts = [(ex, action_facts(ex.actions or [], reader.vocab)) for ex in examples]
    scored = [(ex, f) for ex, f in facts if f[0] or f[1]]
    n = len(scored)
    own_scores, other_scores, rows = [], [], []
    for i, (ex, f) in enumerate(scored):
        ctx = example_context(ex) if use_context else None
        other = next((scored[(i + k) % n] for k in range(1, n) if scored[(i + k) % n][1] != f), None)
        own = turn_fact_f1(ex.actions, ex.target, matcher, reader, ctx)
        oth = turn_fact_f1(other[0].actions, ex.target, matcher, reader, ctx) if other else 0.0
        own_scores.append(own)
        other_scores.append(oth)
        rows.append({"turn": f"{ex.dialog_id}/{ex.uttr_id}", "own": round(own, 4), "other": round(oth, 4),
                     "other_turn": f"{other[0].dialog_id}/{other[0].uttr_id}" if other else None})
    from policies.template_nlg import TemplateNLG

    nlg = TemplateNLG()
    template = [turn_fact_f1(ex.actions, nlg.render(ex.actions), matcher, reader) for ex, _ in scored]
    wrong_rows = []
    for i, (ex, _) in enumerate(scored):
        w = wrong_utterance(ex, reader, rotation=7 * i)
        if w is None:
            continue
        ctx = example_context(ex) if w["how"] == "text" and use_context else None
        right = turn_fact_f1(ex.actions, w["right"], matcher, reader, ctx)
        wrong = turn_fact_f1(ex.actions, w["wrong"], matcher, reader, ctx)
        wrong_rows.append({"turn": f"{ex.dialog_id}/{ex.uttr_id}", **w, "right_f1": round(right, 4),
                           "wrong_f1": round(wrong, 4)})

    def mean(xs: list[float]) -> float:
        return round(sum(xs) / len(xs), 4) if xs else 0.0

    report = {
        "data": str(data_dir), "split": split, "context": use_context, "turns": len(examples), "n": n,
        "mean_own": mean(own_scores), "mean_other": mean(other_scores),
        "share_own_gt_other": mean([float(a > b) for a, b in zip(own_scores, other_scores, strict=True)]),
        "share_own_eq_other": mean([float(a == b) for a, b in zip(own_scores, other_scores, strict=True)]),
        "mean_template_own": mean(template),
        "wrong_utterance": {
            "n": len(wrong_rows),
            "from_text": sum(r["how"] == "text" for r in wrong_rows),
            "from_template": sum(r["how"] == "template" for r in wrong_rows),
            "mean_right": mean([r["right_f1"] for r in wrong_rows]),
            "mean_wrong": mean([r["wrong_f1"] for r in wrong_rows]),
            "share_right_gt_wrong": mean([float(r["right_f1"] > r["wrong_f1"]) for r in wrong_rows]),
        },
        "reader": reader.describe(),
        "matcher": matcher.describe(),
    }
    if details:
        report["turn_scores"] = rows
        report["wrong_utterance"]["turns"] = wrong_rows
    return report


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m eval.metrics.nlg_facts", description=__doc__.split("\n\n")[0])
    p.add_argument("--validate", action="store_true", help="run the validation on --data and print it as JSON")
    p.add_argument("--data", default=str(DEFAULT_DATA_DIR), help="MediTOD-layout directory")
    p.add_argument("--split", default="all")
    p.add_argument("--pred", help="NLG predictions JSONL (dialog_id, uttr_id, prediction) to score")
    p.add_argument("--gold-as-pred", action="store_true", help="score the gold utterances themselves")
    p.add_argument("--match", default="exact", help="matcher for non-canonical values (exact|synonym|embedding|llm)")
    p.add_argument("--details", action="store_true", help="validation: add per-turn rows")
    p.add_argument("--no-context", action="store_true", help="read each utterance alone (no dialogue context)")
    args = p.parse_args(argv)
    from eval.metrics.matching import make_matcher

    matcher = make_matcher(args.match)
    if args.validate:
        print(json.dumps(validate(args.data, args.split, matcher, details=args.details,
                                  use_context=not args.no_context), indent=2))
        return 0
    examples = nlg_examples(load_dialogues(args.data, args.split))
    if args.gold_as_pred:
        predictions: dict[tuple[str, int], Any] = {(ex.dialog_id, ex.uttr_id): ex.target for ex in examples}
    elif args.pred:
        from eval.metrics.score import load_predictions

        predictions = {k: r.get("prediction") for k, r in load_predictions(args.pred).items()}
    else:
        p.error("give --validate, --pred FILE or --gold-as-pred")
    print(json.dumps(score_nlg_facts(examples, predictions, matcher, use_context=not args.no_context), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
