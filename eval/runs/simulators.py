"""Simulated patients for whole interviews (``medhx simulate``): one small protocol, three kinds, one oracle NLU.

A simulator answers one doctor turn at a time (:class:`PatientSimulator`: ``respond(DoctorTurn) -> PatientReply``).
Every reply carries the text a patient says *and* its gold NLU frame (what the text states, in CMAS), so the same
interview can be run end to end (the agent's NLU reads the text) or with the oracle NLU (:class:`OracleNLU` hands
the agent the gold frame), judging policy and NLU apart.

- ``agenda`` (:class:`AgendaSimulator`): a user simulator in the agenda tradition. It reads the doctor's CMAS
  actions (a dialogue-act-level patient, like agenda-based user simulators in task-oriented dialogue; the doctor's
  wording is not needed) and answers from its case card: a positive fact with its attributes, a denial for what the
  card marks negative, "not sure" for unknown, a denial for what the card does not hold (the card is the whole
  truth). Wording comes from a lay lexicon (``configs/simulate/lay_phrases.yaml``) through a seeded generator, with
  multi-fact answers (two questions, one reply), short answers ("No."), a volunteered related fact now and then
  (another attribute of the item just discussed) and a reply to "anything else?" that mentions what was never
  asked; so its text is not the template NLG read backwards.
- ``llm`` (:class:`LLMSimulator`): any configured backend (``models.backends.make_backend``) role-plays the card
  from a persona prompt that lists the card's facts in lay words, answering the doctor's *text*. The agenda planner
  supplies the gold frame and, when ``guided``, a note of what is true about the question. A judge pass reads each
  reply back (``clinical``: the clinical NLU; ``llm``: the backend asked for a JSON list) and flags facts the card
  does not support; a flagged reply is regenerated, then replaced by the agenda's answer (``on_invention: agenda``)
  or kept and reported (``keep``).
- a researcher's own class by dotted path (``kind: pkg.mod:Class``, called with ``card``, ``seed`` and ``options``).

Where each part lives (this module re-exports their public names):

- :mod:`eval.runs.patient_protocol`: the protocol (:class:`DoctorTurn`, :class:`PatientReply`,
  :class:`PatientSimulator`);
- :mod:`eval.runs.lay_lexicon`: the lay lexicon, typed, and its loader;
- :mod:`eval.runs.agenda_simulator`: the agenda simulator and its lay wording;
- :mod:`eval.runs.llm_simulator`: the LLM simulator, its client and its judges;
- :mod:`eval.runs.oracle_nlu`: the oracle NLU and its channels;
- :mod:`eval.runs.simulator_factory`: the ``simulator:`` settings and the factory.
"""

from eval.runs.agenda_simulator import AgendaSimulator, Clause, merge_slots
from eval.runs.lay_lexicon import DEFAULT_LEXICON, Answers, LayLexicon, Opening, ValuePhrases, load_lexicon
from eval.runs.llm_simulator import (
    GUIDE,
    JUDGE_PROMPT,
    JUDGE_SCHEMA,
    PERSONA_PROMPT,
    REMINDER,
    ClinicalJudge,
    Judge,
    LLMClient,
    LLMJudge,
    LLMSimulator,
    card_sentences,
    tidy_reply,
)
from eval.runs.oracle_nlu import OracleChannel, OracleNLU, close_channel, open_channel
from eval.runs.patient_protocol import SILENCE, DoctorTurn, PatientReply, PatientSimulator
from eval.runs.simulator_factory import (
    AgendaSettings,
    CustomSimulatorSettings,
    LLMSimulatorSettings,
    SimulatorFactory,
    SimulatorSettings,
    parse_simulator_settings,
)

__all__ = [
    "DEFAULT_LEXICON", "GUIDE", "JUDGE_PROMPT", "JUDGE_SCHEMA", "PERSONA_PROMPT", "REMINDER", "SILENCE",
    "AgendaSettings", "AgendaSimulator", "Answers", "Clause", "ClinicalJudge", "CustomSimulatorSettings",
    "DoctorTurn", "Judge", "LLMClient", "LLMJudge", "LLMSimulator", "LLMSimulatorSettings", "LayLexicon", "Opening",
    "OracleChannel", "OracleNLU", "PatientReply", "PatientSimulator", "SimulatorFactory", "SimulatorSettings",
    "ValuePhrases", "card_sentences", "close_channel", "load_lexicon", "merge_slots", "open_channel",
    "parse_simulator_settings", "tidy_reply",
]
