"""``medhx sessions {list,show,delete,export,purge,compact}``: stored interviews from the command line.

``purge`` deletes idle sessions and then gives their space back (a deleted row only frees pages inside the store):
SQLite ``VACUUM``, PostgreSQL ``VACUUM FULL`` (:meth:`agent.app.checkpoints.CheckpointStore.reclaim`).
``compact`` brings sessions stored before the transcript table (a checkpoint per node, each with the whole
transcript) to today's layout, and gives the space back the same way. ``show``, ``export``, ``delete`` and
``purge`` write the access log the console keeps (actor ``cli:<login>``), so the owner sees who read or removed an
interview from the command line too."""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from agent.app.access_log import AccessLog
from agent.app.export import export_session
from agent.app.graph_state import InterviewState
from agent.app.sessions import Session, SessionBusy, SessionNotFound, SessionStore
from policies.agent_config import DEFAULT_CONFIG, config_for_cli


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sessions", help="list, show, delete and export stored interview sessions")
    p.add_argument("--config", default=None, help=f"config naming the session store (default {DEFAULT_CONFIG})")
    p.add_argument("--dir", default=None, help="SQLite session dir (overrides session.dir)")
    p.add_argument("--postgres-url", default=None, help="PostgreSQL URL (overrides session.postgres_url)")
    ssub = p.add_subparsers(dest="sessions_command", required=True)
    ssub.add_parser("list", help="one line per session, most recent first").set_defaults(func=_cmd_list)
    s = ssub.add_parser("show", help="transcript, patient state, red flags and review edits")
    s.add_argument("session_id")
    s.add_argument("--json", action="store_true", help="the whole session state as JSON")
    s.set_defaults(func=_cmd_show)
    d = ssub.add_parser("delete", help="delete a session and all its checkpoints")
    d.add_argument("session_id")
    d.set_defaults(func=_cmd_delete)
    e = ssub.add_parser("export", help="MediTOD-format JSON or a clinician-readable history note")
    e.add_argument("session_id")
    e.add_argument("--format", choices=("meditod", "note"), default="meditod")
    e.add_argument("--out", default=None, help="file to write (default stdout)")
    e.set_defaults(func=_cmd_export)
    pu = ssub.add_parser("purge", help="delete every session with no activity for DAYS days, and return the space")
    pu.add_argument("--older-than", type=float, required=True, metavar="DAYS")
    pu.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    pu.add_argument("--no-reclaim", action="store_true",
                    help="keep the freed space in the store (no SQLite VACUUM / PostgreSQL VACUUM FULL, which locks "
                         "the session tables while it rewrites them)")
    pu.set_defaults(func=_cmd_purge)
    co = ssub.add_parser("compact", help="sessions stored before the transcript table: keep their latest checkpoint "
                                         "only, and return the space")
    co.add_argument("--no-reclaim", action="store_true", help="keep the freed space in the store")
    co.set_defaults(func=_cmd_compact)


def _store(args: argparse.Namespace) -> SessionStore:
    config = config_for_cli(args.config)
    session_cfg = dict(config.get("session") or {})
    if args.dir:
        session_cfg.update(store="sqlite", dir=args.dir)
    if args.postgres_url:
        session_cfg.update(store="postgres", postgres_url=args.postgres_url)
    return SessionStore({**config, "session": session_cfg})


def _cmd_list(args: argparse.Namespace) -> int:
    with _store(args) as store:
        for info in store.list_sessions():
            print(json.dumps(asdict(info)))
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    with _store(args) as store:
        st = _read(store, args.session_id)
        _log(store, st.session_id, st.owner, "opened", "cli")
        if args.json:
            print(json.dumps(st.model_dump(mode="json"), indent=2))
            return 0
        print(f"session {st.session_id}  created {st.created_at}  status {st.status}")
        for t in st.turns:
            print(f"[{t.index}] {t.speaker}: {t.text}")
        print("patient state: " + json.dumps(st.patient_state))
        for f in st.red_flags:
            print("red flag: " + json.dumps(f))
        for e in st.review_edits:
            print(f"review edit: turn {e.turn} {e.kind} by {e.by} at {e.at}")
    return 0


def _read(store: SessionStore, session_id: str) -> InterviewState:
    if not store.exists(session_id):
        raise SessionNotFound(f"no session {session_id!r} in {store.describe()}")
    return Session(store, session_id).state()


def operator() -> str:
    """Who acts from the command line, as the access log names them: ``cli:<login>`` (the operating-system user;
    a console clinician is named by their console login, so the two cannot be confused)."""
    return f"cli:{getpass.getuser()}"


def _log(store: SessionStore, session_id: str, owner: str | None, action: str, detail: str = "") -> None:
    """What the command line did with an interview goes into the same access log the console keeps (its owner
    sees it there): opened (show), exported, deleted (delete, purge)."""
    AccessLog(store.checkpoints).record(session_id, owner, operator(), action, detail=detail)


def _cmd_delete(args: argparse.Namespace) -> int:
    with _store(args) as store:
        owner = _read(store, args.session_id).owner
        store.delete(args.session_id)
        _log(store, args.session_id, owner, "deleted", "cli")
        print(f"deleted {args.session_id}", file=sys.stderr)
    return 0


def _cmd_purge(args: argparse.Namespace) -> int:
    if args.older_than < 0:
        raise ValueError("--older-than must be a number of days >= 0")
    cutoff = datetime.now(UTC) - timedelta(days=args.older_than)
    with _store(args) as store:
        old = [i for i in store.list_sessions() if datetime.fromisoformat(i.updated_at) < cutoff]
        for info in old:
            if not args.dry_run:
                store.delete(info.session_id)
                _log(store, info.session_id, info.owner, "deleted", "purge")
            print(json.dumps({"session_id": info.session_id, "updated_at": info.updated_at,
                              "deleted": not args.dry_run}))
        print(f"{'would delete' if args.dry_run else 'deleted'} {len(old)} session(s) idle for more than "
              f"{args.older_than:g} days", file=sys.stderr)
        if old and not args.dry_run and not args.no_reclaim:
            before = store.checkpoints.stored_bytes()
            store.checkpoints.reclaim()  # deleted rows leave free pages behind: give them back
            print(f"store {store.describe()}: {before:,} -> {store.checkpoints.stored_bytes():,} bytes",
                  file=sys.stderr)
    return 0


def _cmd_compact(args: argparse.Namespace) -> int:
    with _store(args) as store:
        before = store.checkpoints.stored_bytes()
        for info in store.list_sessions():
            try:
                done = store.compact(info.session_id)
            except SessionBusy as exc:
                done, note = False, str(exc)
            else:
                note = None if done else "stopped inside a turn: its next resume finishes and compacts it"
            print(json.dumps({"session_id": info.session_id, "compacted": done} | ({"note": note} if note else {})))
        if not args.no_reclaim:
            store.checkpoints.reclaim()
        print(f"store {store.describe()}: {before:,} -> {store.checkpoints.stored_bytes():,} bytes", file=sys.stderr)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    with _store(args) as store:
        st = _read(store, args.session_id)
        _log(store, st.session_id, st.owner, "exported", args.format)
    text = export_session(st, args.format)
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
