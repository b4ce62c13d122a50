"""Prompts for the three MediTOD tasks: one builder for training and inference.

Two formats:
- ``supervised``: a short task instruction (system) + dialogue history, last exchange and,
  for POL the patient state / for NLG the doctor's actions (user). The target is compact
  CMAS JSON in prefix form (NLU, POL) or the doctor's utterance (NLG). Training
  (:func:`render_training_text`) and inference (:func:`render_prompt`) both call
  :func:`build_messages`, so they cannot drift apart.
- ``icl``: the paper's Appendix F prompts: schema definitions (generated from
  ``agent.core.cmas``), top-k exemplars and the query. NLU outputs use the
  status-as-attribute form there, as the paper's prompts do.

The live agent builds its examples with :func:`example_from_context`, which goes
through ``agent.core.data``'s own example builders so windows match the training data.
"""

from __future__ import annotations

from typing import Any, Literal

from agent.core import cmas, cmas_wording
from agent.core.data import Example, Task, doctor_window, nlu_window
from agent.core.protocol import TurnContext

Mode = Literal["supervised", "icl"]
MODES: tuple[str, ...] = ("supervised", "icl")
TASKS: tuple[str, ...] = ("nlu", "pol", "nlg")

PROMPT_VERSION = "medhx-prompts-1"
"""Recorded in adapter cards: an adapter is only meaningful with the prompt format it was trained on."""

# --------------------------------------------------------------------------- supervised format

SUPERVISED_INSTRUCTIONS: dict[str, str] = {
    "nlu": (
        "You are a medical scribe. Read the doctor-patient dialogue and extract the patient's intents, slots and "
        "attributes from the patient's last utterance. Answer with a JSON list of CMAS frames "
        '[{"intent": ..., "slots": {...}}], slot names in status-prefix form (e.g. positive_symptom).'
    ),
    "pol": (
        "You are a doctor taking a medical history. Given the patient state, the dialogue history and the last turn, "
        'predict the doctor\'s next actions. Answer with a JSON list of CMAS actions [{"action": ..., '
        '"<slot>": [{"value": ..., "checks": [{"type": ...}]}]}].'
    ),
    "nlg": (
        "You are a doctor taking a medical history. Given the dialogue history, the last turn and the doctor's "
        "actions, write the doctor's next utterance: fluent, natural and faithful to the actions."
    ),
}


def _turns_text(turns: list[tuple[str, str]]) -> str:
    return "\n".join(f"{speaker}: {text}" for speaker, text in turns) if turns else "(none)"


def _supervised_user(example: Example) -> str:
    parts = [
        f"[dialogue history]\n{_turns_text(example.history)}",
        f"[last turn]\n{_turns_text(example.last_exchange)}",
    ]
    if example.task == "pol":
        parts.append(f"[patient state]\n{cmas.dumps(example.state or {})}")
    elif example.task == "nlg":
        parts.append(f"[actions]\n{cmas.dumps(example.actions or [])}")
    return "\n\n".join(parts)


def target_text(example: Example) -> str:
    """The supervised target: compact CMAS JSON (prefix form) for NLU/POL, the utterance for NLG."""
    if example.task == "nlg":
        return str(example.target)
    return cmas.dumps(example.target)


def build_messages(example: Example, mode: Mode = "supervised", exemplars: list[Example] | None = None) -> list[dict]:
    """Chat messages (system + user) for ``example``; ``exemplars`` only in ``icl`` mode."""
    if example.task not in TASKS:
        raise ValueError(f"unknown task {example.task!r}; use one of {TASKS}")
    if mode == "supervised":
        if exemplars:
            raise ValueError("exemplars are only used in icl mode")
        return [
            {"role": "system", "content": SUPERVISED_INSTRUCTIONS[example.task]},
            {"role": "user", "content": _supervised_user(example)},
        ]
    if mode == "icl":
        return build_icl_messages(example, exemplars or [])
    raise ValueError(f"unknown prompt mode {mode!r}; use one of {MODES}")


def render_prompt(messages: list[dict], tokenizer: Any) -> str:
    """The prompt string every backend receives (chat template with the generation prompt)."""
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def render_training_text(example: Example, tokenizer: Any, mode: Mode = "supervised") -> tuple[str, str]:
    """``(prompt, completion)``: ``prompt`` is exactly what inference sends; ``completion`` is the
    target plus the template's end-of-turn marker, so a trained model learns to stop.

    The completion is read off the rendered full conversation when the template renders
    the prompt as its prefix (ChatML, Llama 3); otherwise target + EOS token.
    """
    messages = build_messages(example, mode)
    prompt = render_prompt(messages, tokenizer)
    target = target_text(example)
    full = tokenizer.apply_chat_template(
        [*messages, {"role": "assistant", "content": target}], tokenize=False, add_generation_prompt=False
    )
    if full.startswith(prompt) and target in full[len(prompt):]:
        completion = full[len(prompt):]
        # Keep the end-of-turn marker, drop the template's trailing newline after it: generation stops at the marker.
        end = completion.index(target) + len(target)
        marker = completion[end:].rstrip("\n")
        return prompt, completion[:end] + marker
    return prompt, target + (tokenizer.eos_token or "")


def encode_prompt(prompt: str, tokenizer: Any) -> list[int]:
    """Token ids of a rendered prompt. The chat template already wrote the special tokens, so none are added."""
    return tokenizer(prompt, add_special_tokens=False)["input_ids"]


# --------------------------------------------------------------------------- live agent


def example_from_context(
    task: Task, ctx: TurnContext, actions: list[dict] | None = None, history: int | None = 4
) -> Example:
    """The example the live agent predicts on, windowed exactly as ``agent.core.data`` windows training data.

    NLU: the patient's latest utterance is ``ctx.turns[-1]``. POL/NLG: the doctor's next
    turn is about to be produced; the patient state is ``ctx.state``.
    """
    turns = list(ctx.turns)
    if task == "nlu":
        if not turns or turns[-1][0] != "patient":
            raise ValueError("NLU needs a context whose last turn is the patient's")
        hist, last = nlu_window(turns, len(turns) - 1, history)
        return Example("nlu", "live", len(turns) - 1, hist, last, [])
    if task not in ("pol", "nlg"):
        raise ValueError(f"unknown task {task!r}; use one of {TASKS}")
    if task == "nlg" and actions is None:
        raise ValueError("NLG needs the doctor's actions")
    nlg_actions = (actions if actions is not None else []) if task == "nlg" else None
    if not turns:  # the doctor opens the dialogue: nothing to condition on
        return Example(task, "live", 0, [], [], None, state=dict(ctx.state), actions=nlg_actions)
    hist, last, p = doctor_window([*turns, ("doctor", "")], len(turns), history)
    return Example(task, "live", len(turns), hist, last, None, state=dict(ctx.state) if p is not None else {},
                   actions=nlg_actions)


# --------------------------------------------------------------------------- in-context format (Appendix F)

ICL_INTRO: dict[str, str] = {
    "nlu": (
        "You are a professional medical scribe who is an expert in understanding doctor-patient dialogues. The user "
        "will show you a dialogue history between a doctor and a patient and the last turn in their dialogue. Your "
        "task is to identify the patient's intent, slots, and related attributes (if applicable) from the given "
        "dialogue history and the last turn. Definitions for intent, slots, and related attributes are given below "
        "as Python dictionaries."
    ),
    "pol": (
        "You are a professional medical assistant who is an expert in understanding doctor-patient dialogues. The "
        "user will show you current state of the dialogue between a doctor and a patient and the last turn in their "
        "dialogue. Your task is to suggest the doctor's action as a continuation of the dialogue. Doctor's action "
        "consists of intents, slots and related attributes (if applicable). Definitions for intent, slots, and "
        "related attributes are given below as Python dictionaries."
    ),
    "nlg": (
        "You are a professional medical assistant who is an expert in understanding doctor-patient dialogues. The "
        "user will show you the last turn of the dialogue between a doctor and a patient and the doctor's action. "
        "Your task is to suggest the doctor's response as a continuation of the dialogue."
    ),
}

ICL_INSTRUCTIONS: dict[str, list[str]] = {
    "nlu": [
        "Read the given definitions carefully.",
        "For a given dialogue history and last turn, only some of the intents, slots and related attributes are "
        "applicable.",
        "Related attribute 'value' of the slots {medical} must be a standard medical concept.",
        "Expected output should contain intent, slot and related values from the last turn. dialogue history is "
        "given as an additional context.",
    ],
    "pol": [
        "Read the given definitions carefully.",
        "For a given dialogue state and last turn, only some of the intents, slots and related attributes are "
        "applicable.",
        "Related attribute 'value' of the slots {medical} must be a standard medical concept.",
        "Make sure that the doctor's action is a continuation of the dialogue. dialogue state is given as an "
        "additional context.",
        'An action lists slots with the attributes the doctor asks about as checks: {{"action": "inquire", '
        '"symptom": [{{"value": "coughing", "checks": [{{"type": "onset"}}]}}]}}.',
    ],
    "nlg": [
        "Your suggested response must reflect the doctor's actions and form a natural continuation of the dialogue.",
        "Your suggested response must be fluent, grammatically correct and empathetic.",
        "Your suggested response must satisfy any queries made by the user.",
    ],
}







def _status_description(slot: str, spec: cmas.SlotSpec) -> str:
    values = spec.statuses or spec.status_values
    meaning = cmas_wording.STATUS_MEANINGS.get(slot, f"the {slot.replace('_', ' ')} applies")
    text = f"The status is '{values[0]}' if {meaning} or '{values[1]}' if not"
    return text + (f"; otherwise, it is '{values[2]}'." if len(values) > 2 else ".")


def _attribute_entry(slot: str, attr: str, spec: cmas.SlotSpec) -> dict:
    if attr == "status":
        return {"name": "status", "description": _status_description(slot, spec)}
    desc, examples = cmas_wording.ATTRIBUTE_DESCRIPTIONS.get(slot, {}).get(attr, (None, None))
    entry: dict[str, Any] = {
        "name": attr,
        "description": desc or f"The {attr.replace('_', ' ')} of the {slot.replace('_', ' ')}.",
    }
    if examples:
        entry["examples"] = examples
    return entry


def schema_definitions(task: Task) -> str:
    """``intents = [...]`` and ``slots = [...]`` as in Appendix F, generated from ``agent.core.cmas``.

    NLU lists the attributes a patient frame carries in attribute form (``status`` included);
    POL lists what a doctor can ask about (the check types of each slot).
    """
    intents = cmas.PATIENT_INTENTS if task == "nlu" else cmas.DOCTOR_ACTIONS
    intent_lines = [cmas.dumps({"name": i, "description": cmas_wording.INTENT_DESCRIPTIONS[i]}) for i in intents]
    slot_lines = []
    for slot, spec in cmas.SLOTS.items():
        if task == "nlu":
            attrs = [a for a in spec.attributes if a != "status"]
            has_status = bool(spec.statuses or spec.status_values)
            names = attrs[:1] + (["status"] if has_status else []) + attrs[1:]
        else:
            names = [a for a in spec.check_types if a != "status"]
        entry = {
            "slot": slot,
            "description": cmas_wording.SLOT_DESCRIPTIONS[slot],
            "related_attributes": [_attribute_entry(slot, a, spec) for a in names],
        }
        slot_lines.append(cmas.dumps(entry))
    return "intents = [\n" + ",\n".join(intent_lines) + "\n]\n\nslots = [\n" + ",\n".join(slot_lines) + "\n]"


def _icl_system(task: Task) -> str:
    medical = ", ".join(name for name, spec in cmas.SLOTS.items() if spec.medical and name != "disease")
    lines = [ICL_INTRO[task]]
    if task != "nlg":
        lines.append("```\n" + schema_definitions(task) + "\n```")
    steps = [s.format(medical=medical) for s in ICL_INSTRUCTIONS[task]]
    lines.append("IMPORTANT INSTRUCTIONS:\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)))
    return "\n\n".join(lines)


def icl_target(example: Example) -> str:
    """An exemplar's answer as the paper's prompts write it: NLU slots in status-as-attribute form."""
    if example.task == "nlu":
        frames = [
            {**f, "slots": cmas.to_status_attribute(f["slots"])} if f.get("slots") else f for f in example.target
        ]
        return cmas.dumps(frames)
    return target_text(example)


def _icl_query(example: Example) -> str:
    last = f"[last turn]\n{_turns_text(example.last_exchange)}"
    if example.task == "nlu":
        body = f"[dialogue history]\n{_turns_text(example.history)}\n\n{last}"
    elif example.task == "pol":
        body = f"[dialogue state]\n```\n{cmas.dumps(example.state or {})}\n```\n\n{last}"
    else:
        body = f"[actions]\n```\n{cmas.dumps(example.actions or [])}\n```\n\n{last}"
    return body + "\n\n[output]"


def build_icl_messages(example: Example, exemplars: list[Example]) -> list[dict]:
    """Appendix F: definitions + exemplars (most similar last, nearest the query) + the query."""
    for ex in exemplars:
        if ex.task != example.task:
            raise ValueError(f"exemplar task {ex.task!r} differs from query task {example.task!r}")
    blocks = [f"{_icl_query(ex)}\n{icl_target(ex)}" for ex in exemplars]
    blocks.append(_icl_query(example))
    return [{"role": "system", "content": _icl_system(example.task)}, {"role": "user", "content": "\n\n".join(blocks)}]
