"""A session's transcript as rows of medhx's ``medhx_turns`` table: one row per finished turn, appended once.

Why a table of its own: a LangGraph checkpoint holds the whole graph state, so a transcript kept in the state is
copied into every checkpoint, and an interview's storage grows with the square of its length. Here a turn is written
once, when it is final, and the graph's state keeps only the turns not yet written (``InterviewState.turns`` in a
checkpoint is that tail; :func:`agent.app.graph_state.with_record` joins the two).

What a row holds: the :class:`~agent.app.graph_state.Turn` as JSON, except a patient turn's ``state`` (the whole
patient state after that turn, which grows through the interview): the row has its JSON Patch (RFC 6902, the
``jsonpatch`` library) from the previous patient turn's state instead, so the transcript grows with what each turn
changed rather than with the state's size. :func:`decode` applies the patches in order and gives the full states
back.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import jsonpatch

from agent.app.graph_state import Turn

STATE_PATCH = "state_patch"


def encode(turns: Iterable[Turn], previous_state: dict | None) -> list[tuple[int, str, str]]:
    """``(index, speaker, body)`` rows for ``turns`` (in order); ``previous_state`` is the ``state`` of the last
    patient turn before them (None: there is none)."""
    rows = []
    before = previous_state or {}
    for turn in turns:
        body = turn.model_dump(mode="json")
        state = body.pop("state")
        if state is not None:
            body[STATE_PATCH] = jsonpatch.make_patch(before, state).patch
            before = state
        else:
            body["state"] = None
        rows.append((turn.index, turn.speaker, json.dumps(body, separators=(",", ":"))))
    return rows


def decode(rows: Iterable[tuple[int, str, str]], previous_state: dict | None = None) -> list[Turn]:
    """The turns of :func:`encode`'s rows (in order), patient states rebuilt; ``previous_state`` is the ``state`` of
    the last patient turn before the first row (None: the rows start the session), as in :func:`encode`."""
    turns = []
    state: dict = previous_state or {}
    for _, _, body in rows:
        data = json.loads(body)
        if STATE_PATCH in data:
            state = jsonpatch.apply_patch(state, data.pop(STATE_PATCH))
            data["state"] = state
        turns.append(Turn.model_validate(data))
    return turns


def last_patient_state(turns: list[Turn]) -> dict | None:
    """What the next patient turn's patch is taken from."""
    return next((t.state for t in reversed(turns) if t.speaker == "patient" and t.state is not None), None)
