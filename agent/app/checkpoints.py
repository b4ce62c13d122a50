"""Where sessions are kept: the LangGraph checkpoint saver, medhx's own session index, and per-session locks.

Two stores, one interface (:class:`CheckpointStore`):

- **SQLite** (the default): ``<dir>/sessions.sqlite``, ``dir`` defaulting to a per-user data directory
  (``$MEDHX_DATA``, else ``$XDG_DATA_HOME/medhx``, else ``~/.local/share/medhx``), never the working directory:
  a history is health data, so the directory is created 0700 and the file 0600.
- **PostgreSQL**: several app replicas share one database; connections come from a ``psycopg_pool`` pool.

LangGraph's tables are LangGraph's: medhx reads and writes them only through the saver's public API (``prune``
included, which medhx implements for SQLite: :mod:`agent.app.sqlite_saver`). What medhx needs beyond it lives in its
own tables: ``medhx_sessions`` (one row per session: owner, created, last activity), so listing sessions never scans
checkpoints; ``medhx_turns`` (the transcript, a row per finished turn, appended once) and ``medhx_utterances`` (each
patient utterance as received, stored before the graph runs), so a checkpoint never carries the transcript and a
session needs only its latest checkpoint (:mod:`agent.app.transcript` says what the rows hold).

A turn holds the session's lock for as long as it runs, so two processes (two app replicas, two browser tabs)
driving one session cannot both run a turn: the second gets :class:`SessionBusy` at once. SQLite sessions lock
with ``flock`` on a file per session (released by the kernel if the process dies); PostgreSQL sessions with an
advisory lock on one connection per process kept for locks alone (released by the server when that connection
goes), so a running turn holds no pooled connection.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SQLITE_FILE = "sessions.sqlite"
OWN_TABLES = {
    "medhx_sessions": "session_id TEXT PRIMARY KEY, owner TEXT, created_at TEXT NOT NULL, updated_at TEXT NOT NULL",
    "medhx_turns": "session_id TEXT NOT NULL, idx INTEGER NOT NULL, speaker TEXT NOT NULL, body TEXT NOT NULL, "
                   "PRIMARY KEY (session_id, idx)",
    "medhx_utterances": "session_id TEXT NOT NULL, idx INTEGER NOT NULL, body TEXT NOT NULL, "
                        "PRIMARY KEY (session_id, idx)",
}
"""medhx's own tables, the same SQL on SQLite and PostgreSQL."""
SAVER_TABLES = {"sqlite": ("checkpoints", "writes"),
                "postgres": ("checkpoints", "checkpoint_blobs", "checkpoint_writes")}
"""The saver's tables, named only to give their freed space back (:meth:`CheckpointStore.reclaim`)."""
POSTGRES_ENV = "MEDHX_POSTGRES_URL"
DATA_ENV = "MEDHX_DATA"
SCHEMA_LOCK = (0x6D656468, 0x78)  # "medh", "x": the PostgreSQL advisory lock held while the tables are set up
SCHEMA_LOCK_TIMEOUT_S = 120


class SessionError(RuntimeError):
    """A session operation that cannot be done in the session's current state."""


class SessionNotFound(SessionError):
    pass


class SessionBusy(SessionError):
    """Another process or tab is running a turn of this session right now."""


def default_data_dir() -> Path:
    """The per-user directory sessions live in when the config names none."""
    if env := os.environ.get(DATA_ENV):
        return Path(env).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "medhx"


@dataclass(frozen=True)
class StoreSettings:
    store: str  # sqlite | postgres
    path: Path | None = None  # sqlite file
    url: str | None = None  # postgres
    pool_size: int = 8

    @classmethod
    def from_config(cls, session_cfg: dict | None) -> StoreSettings:
        """From an agent config's ``session`` section; PostgreSQL when a URL is set there or in
        ``$MEDHX_POSTGRES_URL``."""
        cfg = dict(session_cfg or {})
        url = cfg.get("postgres_url") or os.environ.get(POSTGRES_ENV)
        store = cfg.get("store") or ("postgres" if url else "sqlite")
        if store == "postgres":
            if not url:
                raise ValueError(f"session.store is postgres but no session.postgres_url (or ${POSTGRES_ENV}) is set")
            return cls("postgres", url=url, pool_size=int(cfg.get("pool_size") or 8))
        if store != "sqlite":
            raise ValueError(f"session.store must be sqlite or postgres, got {store!r}")
        directory = Path(cfg["dir"]).expanduser() if cfg.get("dir") else default_data_dir()
        return cls("sqlite", path=directory / SQLITE_FILE)

    def describe(self) -> str:
        """Where the sessions are, without a password."""
        if self.store == "sqlite":
            return f"sqlite {self.path}"
        return "postgres " + str(self.url).split("@")[-1]


@dataclass
class SessionRow:
    session_id: str
    owner: str | None
    created_at: str
    updated_at: str


class CheckpointStore:
    """The saver, the session index and the locks of one store. Close it when done."""

    def __init__(self, settings: StoreSettings):
        self.settings = settings
        self._local = threading.Lock()
        self.new_index = False  # the session index was created just now (index_unlisted fills it)
        if settings.store == "postgres":
            self._open_postgres()
        else:
            self._open_sqlite()

    # -- opening

    def _open_sqlite(self) -> None:
        from agent.app.sqlite_saver import SqliteSaver

        path = self.settings.path
        assert path is not None
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.exists():
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        os.chmod(path, 0o600)
        self._lock_dir = path.parent / "locks"
        self._lock_dir.mkdir(exist_ok=True, mode=0o700)
        self._saver_conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self.saver = SqliteSaver(self._saver_conn)
        self.saver.setup()
        # medhx's own table on its own connection: the saver's connection is the saver's (it serialises it with a
        # lock of its own; sharing it from another lock let two threads into one connection at once)
        self._conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        with self._local:
            self.new_index = not self._conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'medhx_sessions'").fetchall()
            for table, columns in OWN_TABLES.items():
                self._conn.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")
            self._conn.commit()
        self.pool = None

    def _open_postgres(self) -> None:
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        try:  # one direct connection first: a down server fails fast, with the server's own reason
            self._connect_locks(connect_timeout=5).close()
        except Exception as exc:  # psycopg.OperationalError: its first line names host and port, never the password
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConnectionError(f"cannot connect to the PostgreSQL session store {self.settings.describe()}: "
                                  f"{reason}") from None
        kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
        self.pool = ConnectionPool(self.settings.url, min_size=1, max_size=self.settings.pool_size, kwargs=kwargs,
                                   open=False)
        try:
            self.pool.open(wait=True, timeout=10)
        except Exception as exc:  # PoolTimeout / OperationalError: say where, never the password
            self.pool.close()
            raise ConnectionError(f"cannot connect to the PostgreSQL session store {self.settings.describe()}: "
                                  f"{type(exc).__name__}") from None
        self.saver = PostgresSaver(self.pool)
        # One connection holds every session lock this process takes (advisory locks are per connection, many keys
        # at once): a running turn does not tie up a pooled connection, and if the process dies the server drops
        # the connection and with it the locks.
        self._lock_conn = self._connect_locks()
        self._held: set[str] = set()
        # Processes starting together on a new database would create the tables at once and collide in the catalog
        # (UniqueViolation): one process at a time, under a lock of its own (the two-key advisory lock space, apart
        # from the sessions' one-key locks). Polled, never waited on: LangGraph's migrations build indexes
        # CONCURRENTLY, which waits for every open transaction, a blocked pg_advisory_lock call included.
        deadline = time.monotonic() + SCHEMA_LOCK_TIMEOUT_S
        while not self._lock_conn.execute("SELECT pg_try_advisory_lock(%s, %s) AS got", SCHEMA_LOCK).fetchone()["got"]:
            if time.monotonic() > deadline:
                raise SessionError(f"the session store's tables were still being set up by another process after "
                                   f"{SCHEMA_LOCK_TIMEOUT_S} s ({self.settings.describe()})")
            time.sleep(0.1)
        try:
            self.saver.setup()
            with self.pool.connection() as conn:
                self.new_index = conn.execute("SELECT to_regclass('medhx_sessions') AS t").fetchone()["t"] is None
                for table, columns in OWN_TABLES.items():
                    conn.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")
        finally:
            self._lock_conn.execute("SELECT pg_advisory_unlock(%s, %s)", SCHEMA_LOCK)

    def _connect_locks(self, **kwargs: Any) -> Any:
        from psycopg import Connection
        from psycopg.rows import dict_row

        return Connection.connect(self.settings.url, autocommit=True, row_factory=dict_row, **kwargs)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            with self._local:
                self._lock_conn.close()
        else:
            self._conn.close()
            self._saver_conn.close()

    def describe(self) -> str:
        return self.settings.describe()

    # -- medhx's other tables on this store (logins: agent.app.logins; access log: agent.app.access_log)

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgres``: which SQL a table of medhx's own is created with."""
        return self.settings.store

    def execute(self, sql: str, params: tuple = ()) -> list[tuple]:
        """One statement on a table of medhx's own (``?`` placeholders), committed at once; never LangGraph's."""
        return self._execute(sql, params)

    def create_table(self, ddl: str, table: str) -> None:
        """``CREATE TABLE IF NOT EXISTS`` (or an index) that tolerates another process creating it at the same
        moment (PostgreSQL can then raise a unique violation on its catalogue): the table existing is success."""
        try:
            self._execute(ddl)
        except Exception:
            self._execute(f"SELECT 1 FROM {table} WHERE 1 = 0")  # raises the real problem if it is not there

    # -- the session index (medhx's own table)

    def _execute(self, sql: str, params: tuple = ()) -> list[tuple]:
        """One statement on medhx's table; ``?`` placeholders, rewritten for psycopg."""
        if self.pool is not None:
            with self.pool.connection() as conn:
                cur = conn.execute(sql.replace("?", "%s"), params)
                return [tuple(r.values()) for r in cur.fetchall()] if cur.description else []
        with self._local:
            rows = self._conn.execute(sql, params).fetchall()
            self._conn.commit()
            return rows

    def add_session(self, session_id: str, owner: str | None, at: str) -> None:
        """Index a new session; a row left by a start that died before its first checkpoint is taken over."""
        self._execute("INSERT INTO medhx_sessions (session_id, owner, created_at, updated_at) VALUES (?, ?, ?, ?) "
                      "ON CONFLICT (session_id) DO UPDATE SET owner = excluded.owner, "
                      "created_at = excluded.created_at, updated_at = excluded.updated_at", (session_id, owner, at, at))

    def touch(self, session_id: str, at: str) -> None:
        self._execute("UPDATE medhx_sessions SET updated_at = ? WHERE session_id = ?", (at, session_id))

    def remove_session(self, session_id: str) -> None:
        """Everything of one session: its transcript first, the index row last (a delete cut short leaves the session
        listed, so it can be deleted again)."""
        self._execute("DELETE FROM medhx_utterances WHERE session_id = ?", (session_id,))
        self._execute("DELETE FROM medhx_turns WHERE session_id = ?", (session_id,))
        self.saver.delete_thread(session_id)
        self._execute("DELETE FROM medhx_sessions WHERE session_id = ?", (session_id,))

    def sessions(self) -> list[SessionRow]:
        """Every indexed session, most recent activity first."""
        rows = self._execute("SELECT session_id, owner, created_at, updated_at FROM medhx_sessions "
                             "ORDER BY updated_at DESC")
        return [SessionRow(*r) for r in rows]

    def index_unlisted(self, describe: Any) -> int:
        """Add to the index any session the saver holds but the index does not (a store written before the index
        existed); ``describe(thread_id) -> (owner, created_at, updated_at)``. Uses the saver's public ``list``."""
        known = {r.session_id for r in self.sessions()}
        found: list[str] = []
        for tup in self.saver.list(None):
            tid = tup.config["configurable"]["thread_id"]
            if tid not in known and tid not in found and not tup.config["configurable"].get("checkpoint_ns"):
                found.append(tid)
        for tid in found:
            owner, created, updated = describe(tid)
            self._execute("INSERT INTO medhx_sessions (session_id, owner, created_at, updated_at) VALUES (?, ?, ?, ?)",
                          (tid, owner, created, updated))
        return len(found)

    # -- the transcript (medhx's own tables; what a row's body holds is agent.app.transcript's)

    def append_turns(self, session_id: str, rows: list[tuple[int, str, str]]) -> None:
        """Append ``(index, speaker, body)`` rows; a row already there is kept as it is (appending twice is safe)."""
        for idx, speaker, body in rows:
            self._execute("INSERT INTO medhx_turns (session_id, idx, speaker, body) VALUES (?, ?, ?, ?) "
                          "ON CONFLICT (session_id, idx) DO NOTHING", (session_id, idx, speaker, body))

    def turn_rows(self, session_id: str, since: int = 0) -> list[tuple[int, str, str]]:
        """``(index, speaker, body)`` of the stored turns from index ``since`` on, in order."""
        return [(int(i), sp, b) for i, sp, b in self._execute(
            "SELECT idx, speaker, body FROM medhx_turns WHERE session_id = ? AND idx >= ? ORDER BY idx",
            (session_id, since))]

    def turn_count(self, session_id: str) -> int:
        return int(self._execute("SELECT count(*) FROM medhx_turns WHERE session_id = ?", (session_id,))[0][0])

    def receive(self, session_id: str, index: int, body: str) -> None:
        """Store a patient utterance, before the graph runs, as the turn ``index`` it is to become."""
        self._execute("INSERT INTO medhx_utterances (session_id, idx, body) VALUES (?, ?, ?) "
                      "ON CONFLICT (session_id, idx) DO UPDATE SET body = excluded.body", (session_id, index, body))

    def received(self, session_id: str, index: int) -> str | None:
        rows = self._execute("SELECT body FROM medhx_utterances WHERE session_id = ? AND idx = ?", (session_id, index))
        return rows[0][0] if rows else None

    def forget_received(self, session_id: str, below: int) -> None:
        """Drop the stored utterances the transcript now holds (turn index below ``below``)."""
        self._execute("DELETE FROM medhx_utterances WHERE session_id = ? AND idx < ?", (session_id, below))

    def prune(self, session_id: str) -> None:
        """Keep only the session's latest checkpoint (the saver's ``prune``, strategy ``keep_latest``)."""
        self.saver.prune([session_id], strategy="keep_latest")

    def reclaim(self) -> None:
        """Give the space of deleted rows back: SQLite ``VACUUM`` (the file shrinks), PostgreSQL ``VACUUM FULL`` of
        medhx's and the saver's tables (each rewritten, and locked while it is: seconds for a clinic's store)."""
        tables = [*OWN_TABLES, *SAVER_TABLES[self.settings.store]]
        if self.pool is not None:
            with self.pool.connection() as conn:  # autocommit: VACUUM runs outside a transaction
                conn.execute("VACUUM FULL " + ", ".join(tables))
            return
        with self._local, self.saver.lock:  # no statement of this process between the two
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the WAL's pages back into the file, the file cut

    def stored_bytes(self) -> int:
        """What the store takes: the SQLite file and its write-ahead log, or the PostgreSQL relations (indexes and
        TOAST included) of medhx's and the saver's tables."""
        if self.pool is not None:
            tables = [*OWN_TABLES, *SAVER_TABLES["postgres"]]
            return int(self._execute("SELECT sum(pg_total_relation_size(to_regclass(t))) FROM unnest(?::text[]) AS t",
                                     (tables,))[0][0] or 0)
        path = self.settings.path
        assert path is not None
        wal = path.with_name(path.name + "-wal")
        return path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)

    # -- locks

    @contextlib.contextmanager
    def lock(self, session_id: str) -> Iterator[None]:
        """Hold the session for one turn; :class:`SessionBusy` at once if another holder has it."""
        if self.pool is not None:
            key = int.from_bytes(hashlib.sha256(session_id.encode()).digest()[:8], "big", signed=True)
            with self._local:
                if session_id in self._held:  # advisory locks are re-entrant per connection: refuse here
                    raise SessionBusy(_busy(session_id))
                if self._lock_conn.closed:
                    self._lock_conn = self._connect_locks()
                if not self._lock_conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (key,)).fetchone()["got"]:
                    raise SessionBusy(_busy(session_id))
                self._held.add(session_id)
            try:
                yield
            finally:
                with self._local:
                    self._held.discard(session_id)
                    try:
                        self._lock_conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
                    except Exception:  # the connection is gone, and the server released its locks with it
                        self._lock_conn.close()
            return
        name = hashlib.sha256(session_id.encode()).hexdigest()[:32] + ".lock"
        fd = os.open(self._lock_dir / name, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise SessionBusy(_busy(session_id)) from None
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock


def _busy(session_id: str) -> str:
    return (f"session {session_id} is busy: another tab or process is running a turn of it right now; "
            "try again when that turn has finished")
