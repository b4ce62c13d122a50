"""Gold NLU: the dataset's own annotation of a patient utterance (MediTOD's oracle-NLU setting).

Replaying a MediTOD dialogue's patient turns through the live agent with this NLU isolates
the policy, NLG and state tracking from NLU errors. An utterance is looked up by the
preceding doctor utterance and its own text (short answers such as "Yes." recur with
different meanings); an utterance the annotations do not hold is a format error with no
frames, never a guess.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

from agent.core.data import DEFAULT_DATA_DIR, Dialogue, load_dialogues
from agent.core.protocol import ModuleOutput, TurnContext


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


class GoldNLU:
    def __init__(self, dialogues: list[Dialogue]):
        self.by_exchange: dict[tuple[str, str], list[dict]] = {}
        by_text: dict[str, list[list[dict]]] = {}
        for d in dialogues:
            prev = ""
            for u in d.utterances:
                if u.speaker == "doctor":
                    prev = u.text
                elif u.nlu is not None:
                    self.by_exchange.setdefault((_norm(prev), _norm(u.text)), u.nlu)
                    by_text.setdefault(_norm(u.text), []).append(u.nlu)
        # text alone identifies an utterance only when every occurrence is annotated alike
        self.by_text = {t: v[0] for t, v in by_text.items() if all(x == v[0] for x in v)}

    @classmethod
    def from_dir(cls, data_dir: str | Path = DEFAULT_DATA_DIR) -> GoldNLU:
        return cls(load_dialogues(data_dir, "all"))

    def understand(self, ctx: TurnContext) -> ModuleOutput:
        speaker, text = ctx.turns[-1]
        if speaker != "patient":
            raise ValueError("GoldNLU: the last turn is not the patient's")
        prev = next((t for s, t in reversed(ctx.turns[:-1]) if s == "doctor"), "")
        frames = self.by_exchange.get((_norm(prev), _norm(text)))
        if frames is None:
            frames = self.by_text.get(_norm(text))
        if frames is None:
            return ModuleOutput(value=[], format_error="utterance not in the gold annotations", meta={"nlu": "gold"})
        return ModuleOutput(value=copy.deepcopy(frames), meta={"nlu": "gold"})
