"""Clinicians' login sessions, kept in the session store (table ``medhx_logins``), so a restart keeps everyone
signed in and every console process on the same store accepts the same login.

A login is a random token (256 bits) given to the browser once, as a cookie; the store keeps only its SHA-256, so
whoever reads the database (a backup, a replica's disk) cannot sign in with what they find there. A plain hash is
enough for a random token of that size (a password needs a slow hash because people choose it; nobody chooses
this). Expiry is the store's: a row whose ``expires_at`` has passed is no login, whatever the cookie says, and
signing out deletes the row.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from datetime import UTC, datetime

from agent.app.checkpoints import CheckpointStore

TABLE = "medhx_logins"
TOKEN_BYTES = 32


def token_hash(token: str) -> str:
    """What the store keeps of a token: its SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class LoginStore:
    """Issue, look up and revoke login tokens on one store (SQLite or PostgreSQL: the console's own)."""

    def __init__(self, checkpoints: CheckpointStore, ttl_s: float):
        if ttl_s <= 0:
            raise ValueError(f"a login lasts a positive time, got {ttl_s} s")
        self.checkpoints = checkpoints
        self.ttl_s = ttl_s
        checkpoints.create_table(f"CREATE TABLE IF NOT EXISTS {TABLE} (token_hash TEXT PRIMARY KEY, "
                                 "username TEXT NOT NULL, created_at TEXT NOT NULL, "
                                 "expires_at DOUBLE PRECISION NOT NULL)", TABLE)
        checkpoints.create_table(f"CREATE INDEX IF NOT EXISTS {TABLE}_expiry ON {TABLE} (expires_at)", TABLE)

    def issue(self, username: str) -> str:
        """A new login for ``username``: the token for the cookie (the store keeps its hash). Expired rows of
        everyone are deleted on the way, so the table holds live logins only."""
        if not username:
            raise ValueError("a login needs a username")
        now = time.time()
        self.checkpoints.execute(f"DELETE FROM {TABLE} WHERE expires_at <= ?", (now,))
        token = secrets.token_urlsafe(TOKEN_BYTES)
        created = datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds")
        self.checkpoints.execute(f"INSERT INTO {TABLE} (token_hash, username, created_at, expires_at) "
                                 "VALUES (?, ?, ?, ?)", (token_hash(token), username, created, now + self.ttl_s))
        return token

    def user_for(self, token: str | None) -> str | None:
        """The clinician a token signs in, or None (unknown, signed out or expired)."""
        if not token or len(token) > 256:
            return None
        rows = self.checkpoints.execute(f"SELECT username FROM {TABLE} WHERE token_hash = ? AND expires_at > ?",
                                        (token_hash(token), time.time()))
        return str(rows[0][0]) if rows else None

    def revoke(self, token: str | None) -> None:
        """Sign out: the token's row is deleted (in every process on this store at once)."""
        if token:
            self.checkpoints.execute(f"DELETE FROM {TABLE} WHERE token_hash = ?", (token_hash(token),))

    def count(self, username: str | None = None) -> int:
        """Live logins (of ``username``, or everyone's)."""
        sql, params = f"SELECT COUNT(*) FROM {TABLE} WHERE expires_at > ?", (time.time(),)
        if username is not None:
            sql, params = sql + " AND username = ?", (*params, username)
        return int(self.checkpoints.execute(sql, params)[0][0])
