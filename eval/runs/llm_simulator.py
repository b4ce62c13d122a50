"""The LLM patient (``simulator: {kind: llm}``, see :mod:`eval.runs.simulators`): a backend role-plays the case card,
the agenda planner gives the gold frames, and a judge flags replies that invent facts."""

from __future__ import annotations

import json
import re
import threading
from typing import Any, Protocol

from agent.core import cmas
from agent.core.ontology import Vocabulary, default_vocabulary
from eval.runs.agenda_simulator import AgendaSimulator, _cap
from eval.runs.cases import CaseCard, frames_state, state_facts, supported
from eval.runs.lay_lexicon import LayLexicon, load_lexicon
from eval.runs.patient_protocol import DoctorTurn, PatientReply


class LLMClient:
    """One backend, its tokenizer's chat template and sampling settings; calls are serialised for in-process
    backends (one model in memory) and concurrent for a server."""

    def __init__(self, backend: Any, tokenizer: Any, adapter: str | None, max_tokens: int, temperature: float):
        self.backend, self.tokenizer, self.adapter = backend, tokenizer, adapter
        self.max_tokens, self.temperature = max_tokens, temperature
        self._lock = threading.Lock() if getattr(backend, "name", "") != "vllm-server" else None

    def complete(self, messages: list[dict], json_schema: dict | None = None, max_tokens: int | None = None) -> str:
        from models.backends import GenerationRequest
        from models.prompts import render_prompt

        req = GenerationRequest(prompt=render_prompt(messages, self.tokenizer), adapter=self.adapter,
                                json_schema=json_schema, max_tokens=max_tokens or self.max_tokens,
                                temperature=0.0 if json_schema else self.temperature)
        if self._lock is None:
            return self.backend.generate([req])[0].text
        with self._lock:
            return self.backend.generate([req])[0].text

    def close(self) -> None:
        self.backend.close()


def card_sentences(card: CaseCard, lexicon: LayLexicon) -> list[str]:
    """Every fact of the card as a first-person lay sentence (the persona prompt's "about you")."""
    speaker = AgendaSimulator(card, lexicon, seed=0, volunteer_p=0.0)
    out = []
    for base in cmas.SLOTS:
        if base in cmas.RECORD_SLOTS:
            if next(card.items(base), None) is not None:
                clauses = speaker.record_clauses(base, "other", [{"type": k} for k in ("hazards", "exposure", "when")])
                out += [_cap(c.text) + "." for c in clauses]
            continue
        for status, item in card.items(base):
            parts = [speaker.status_clause(base, status or "positive", item, with_location=True).text]
            if status in ("positive", "avail"):
                parts += [speaker.attribute_clause(base, status, item, a).text
                          for a in item if a not in ("value", "relation", "location")]
            out.append(". ".join(_cap(p) for p in parts) + ".")
    return out


PERSONA_PROMPT = (
    "You are role-playing a patient talking to a doctor who is taking your medical history. {persona}\n"
    "Everything true about you is listed below. Answer only from it: if the doctor asks about something not listed, "
    "you do not have it; if a detail is not listed, say you are not sure. Never invent symptoms, conditions, "
    "medicines, tests or other details. Answer as the patient, in everyday words, in one to three short sentences, "
    "with no name or label in front.\n\nAbout you:\n{facts}"
)
GUIDE = "\n\n(What is true about this question, from the list above: {plan})"
REMINDER = "Answer again, using only the facts listed about you."
JUDGE_PROMPT = (
    "Facts about a patient:\n{facts}\n\nThe patient said: \"{reply}\"\n\nList every medical fact the patient "
    "stated that the facts above do not say (an invented symptom, condition, medicine, test or detail). "
    'Answer with JSON: {{"invented": [..]}}; an empty list when everything stated is in the facts.'
)
JUDGE_SCHEMA = {"type": "object", "properties": {"invented": {"type": "array", "maxItems": 5,
                                                              "items": {"type": "string", "maxLength": 80}}},
                "required": ["invented"], "additionalProperties": False}


def tidy_reply(text: str) -> str:
    """A model's reply as a patient's utterance: the first paragraph, no speaker label, no quotes."""
    text = text.strip().split("\n\n")[0].strip()
    text = re.sub(r"^(patient|me|answer)\s*:\s*", "", text, flags=re.I).strip().strip('"').strip()
    return text.split("\n")[0].strip()


class Judge(Protocol):
    def invented(self, text: str, doctor: DoctorTurn, card: CaseCard) -> tuple[list[str], str | None]:
        """Facts of ``text`` the card does not support, and an error when the judge could not tell."""
        ...


class ClinicalJudge:
    """Reads the reply with the clinical NLU (given the doctor's question) and flags every stated item (slot type,
    status, value) the card does not support (:func:`eval.runs.cases.supported`)."""

    def __init__(self, vocab: Vocabulary | None = None):
        from policies.nlu.clinical import ClinicalNLU

        self.nlu = ClinicalNLU()
        self.vocab = vocab or default_vocabulary()
        self._lock = threading.Lock()

    def invented(self, text: str, doctor: DoctorTurn, card: CaseCard) -> tuple[list[str], str | None]:
        with self._lock:
            frames = self.nlu.frames(text, doctor.actions, {}, doctor.text)
        facts = state_facts(frames_state(frames))
        return [f.label() for f in facts if f.attribute is None and not supported(f, card.state, self.vocab)], None


class LLMJudge:
    """Asks the backend for the invented facts as JSON (schema-constrained where the backend supports it)."""

    def __init__(self, client: LLMClient, lexicon: LayLexicon):
        self.client, self.lexicon = client, lexicon

    def invented(self, text: str, doctor: DoctorTurn, card: CaseCard) -> tuple[list[str], str | None]:
        facts = "\n".join(f"- {s}" for s in card_sentences(card, self.lexicon))
        messages = [{"role": "user", "content": JUDGE_PROMPT.format(facts=facts, reply=text)}]
        raw = self.client.complete(messages, json_schema=JUDGE_SCHEMA, max_tokens=160)
        try:
            found = json.loads(raw)["invented"]
            return [str(x) for x in found if str(x).strip()], None
        except (ValueError, KeyError, TypeError):
            return [], f"judge answer is not the JSON asked for: {raw[:120]!r}"


class LLMSimulator:
    """A backend role-playing the card (see the module docstring); the agenda planner gives the gold frames."""

    def __init__(self, card: CaseCard, client: LLMClient, lexicon: LayLexicon | None = None, seed: int = 0,
                 guided: bool = True, judge: Judge | None = None, on_invention: str = "agenda", retries: int = 1,
                 persona: str | None = None, volunteer_p: float = 0.3, short_answer_p: float = 0.3):
        self.card, self.client = card, client
        self.lexicon = lexicon or load_lexicon()
        self.planner = AgendaSimulator(card, self.lexicon, seed, volunteer_p, short_answer_p)
        self.guided, self.judge, self.on_invention, self.retries = guided, judge, on_invention, retries
        facts = "\n".join(f"- {s}" for s in card_sentences(card, self.lexicon))
        self.system = PERSONA_PROMPT.format(persona=persona or card.persona, facts=facts)
        self.history: list[dict] = []

    def respond(self, doctor: DoctorTurn) -> PatientReply:
        plan = self.planner.respond(doctor)
        ask = doctor.text + (GUIDE.format(plan=plan.text) if self.guided else "")
        messages = [{"role": "system", "content": self.system}, *self.history, {"role": "user", "content": ask}]
        attempts: list[dict] = []
        text, flagged = "", []
        for _ in range(1 + self.retries):
            text = tidy_reply(self.client.complete(messages))
            flagged, error = self.judge.invented(text, doctor, self.card) if self.judge and text else ([], None)
            attempts.append({"text": text, **({"invented": flagged} if flagged else {}),
                             **({"judge_error": error} if error else {})})
            if text and not flagged:
                break
            messages = [*messages, {"role": "assistant", "content": text}, {"role": "user", "content": REMINDER}]
        meta: dict[str, Any] = {"simulator": "llm", "kind": plan.meta.get("kind"), "attempts": attempts,
                                "plan": plan.text}
        if flagged:
            meta["invented"] = flagged
        if (not text or flagged) and self.on_invention == "agenda":
            meta["fallback"] = "agenda (empty reply)" if not text else "agenda (the judge flagged invented facts)"
            text = plan.text
        self.history += [{"role": "user", "content": doctor.text}, {"role": "assistant", "content": text}]
        return PatientReply(text, plan.frames, meta)
