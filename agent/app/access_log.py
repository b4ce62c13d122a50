"""Who looked at which interview, and when: the access log (table ``medhx_access_log`` in the session store).

Review decisions were already recorded with who and when, inside the interview; this log records the rest of what
a clinician does with an interview (started, opened, a patient turn, reviewed, exported, downloaded, deleted),
and every attempt that was refused (another clinician asking for an interview that is not theirs). It is kept
apart from the interview so that it outlives the interview's deletion, and it is shown to the interview's owner
only.

No patient text can enter it: an entry is a time, a session id, two usernames, an action and an outcome from fixed
vocabularies, and a ``detail`` that is a short token (an export format, a review kind, a turn number), checked here.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Literal, get_args

from agent.app.checkpoints import CheckpointStore
from agent.app.graph_state import utc_now

TABLE = "medhx_access_log"
Action = Literal["started", "opened", "turn", "reviewed", "exported", "downloaded", "deleted"]
Outcome = Literal["done", "refused"]
ACTIONS: tuple[str, ...] = get_args(Action)
OUTCOMES: tuple[str, ...] = get_args(Outcome)
DETAIL = re.compile(r"[a-z0-9_.-]{0,40}")
"""A detail is a token (``meditod``, ``edit``, ``3``), never free text: patient words cannot fit in it."""


@dataclass(frozen=True)
class AccessEntry:
    at: str  # UTC, ISO 8601
    session_id: str
    owner: str | None  # the interview's owner when it happened (who may read the entry)
    actor: str  # the clinician who did it (or tried)
    action: str
    outcome: str
    detail: str = ""


class AccessLog:
    """Append and read access entries on one store (SQLite or PostgreSQL: the console's own)."""

    def __init__(self, checkpoints: CheckpointStore):
        self.checkpoints = checkpoints
        key = "INTEGER PRIMARY KEY AUTOINCREMENT" if checkpoints.dialect == "sqlite" else "BIGSERIAL PRIMARY KEY"
        checkpoints.create_table(f"CREATE TABLE IF NOT EXISTS {TABLE} (id {key}, at TEXT NOT NULL, "
                                 "session_id TEXT NOT NULL, owner TEXT, actor TEXT NOT NULL, action TEXT NOT NULL, "
                                 "outcome TEXT NOT NULL, detail TEXT NOT NULL)", TABLE)
        checkpoints.create_table(f"CREATE INDEX IF NOT EXISTS {TABLE}_owner ON {TABLE} (owner, session_id)", TABLE)

    def record(self, session_id: str, owner: str | None, actor: str, action: str, outcome: str = "done",
               detail: str | int = "") -> AccessEntry:
        """Append one entry; a value outside the vocabularies is a ValueError (nothing is written)."""
        detail = str(detail)
        if action not in ACTIONS:
            raise ValueError(f"unknown access action {action!r}; one of {', '.join(ACTIONS)}")
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown access outcome {outcome!r}; one of {', '.join(OUTCOMES)}")
        if not DETAIL.fullmatch(detail):
            raise ValueError(f"an access detail is a short lower-case token, got {detail[:60]!r}")
        if not session_id or not actor:
            raise ValueError("an access entry needs a session id and an actor")
        entry = AccessEntry(utc_now(), session_id, owner, actor, action, outcome, detail)
        self.checkpoints.execute(f"INSERT INTO {TABLE} (at, session_id, owner, actor, action, outcome, detail) "
                                 "VALUES (?, ?, ?, ?, ?, ?, ?)",
                                 (entry.at, session_id, owner, actor, action, outcome, detail))
        return entry

    def entries(self, owner: str, session_id: str | None = None) -> list[AccessEntry]:
        """The entries of ``owner``'s interviews (of one interview with ``session_id``), oldest first; deleted
        interviews included."""
        sql = f"SELECT at, session_id, owner, actor, action, outcome, detail FROM {TABLE} WHERE owner = ?"
        params: tuple = (owner,)
        if session_id is not None:
            sql, params = sql + " AND session_id = ?", (*params, session_id)
        return [AccessEntry(*row) for row in self.checkpoints.execute(sql + " ORDER BY id", params)]


def access_log_json(entries: list[AccessEntry], owner: str, session_id: str | None = None) -> str:
    """The access log as its own file (JSON): for the owner's records, apart from the MediTOD export."""
    return json.dumps({"kind": "medhx access log", "owner": owner, "session_id": session_id,
                       "exported_at": utc_now(), "entries": [asdict(e) for e in entries]}, indent=2) + "\n"
