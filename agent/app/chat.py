"""``medhx chat``: the clinician console in the browser (:mod:`ui`); ``medhx chat --cli``: an interview in the terminal.

Patient lines on stdin, doctor turns on stdout, so it can be scripted::

    printf 'I have a cough\\n/quit\\n' | medhx chat --cli

``/quit`` (or end of input) leaves; every turn is already checkpointed, so
``medhx chat --cli --session ID`` continues the interview later. With clinician review
on (``session.review: true``) each planned doctor turn is shown on stderr and the next
line is the clinician's decision: empty or ``/approve``, ``/edit TEXT``,
``/actions JSON``, ``/state JSON`` (a state patch).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TextIO

from agent.app.cpu_threads import limit_model_threads
from agent.app.graph_nodes import FALLBACK_NOTICE
from agent.app.sessions import Session, SessionStore
from policies.agent_config import DEFAULT_CONFIG, config_for_cli

QUIT = "/quit"


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """``medhx chat``. Without ``--cli`` it runs ``args.console``, the browser console, which the top (``agent.cli``)
    plugs in with the console's options: the application imports no ui."""
    p = sub.add_parser("chat", help="run interviews: the clinician console in the browser (--cli: in the terminal)")
    p.add_argument("--cli", action="store_true", help="terminal mode: patient lines on stdin, doctor turns on stdout")
    p.add_argument("--config", default=None, help=f"agent config (default {DEFAULT_CONFIG})")
    p.add_argument("--session", default=None, help="--cli: session id, resumed if it exists, else started with this id")
    p.add_argument("--clinician", default="clinician", help="--cli: name recorded with review edits")
    p.set_defaults(func=_cmd_chat, console=None)
    return p


def _cmd_chat(args: argparse.Namespace) -> int:
    if not args.cli:
        if args.console is None:
            raise RuntimeError("no console plugged in (medhx chat runs it); use --cli for the terminal")
        return int(args.console(args))
    config = config_for_cli(args.config)
    if not config:
        raise FileNotFoundError(f"no config given and {DEFAULT_CONFIG} not found")
    limit_model_threads()  # as the console: on 2 cores one thread per call cut the turn p95 by a fifth
    with SessionStore(config) as store:
        return run_cli(store, args.session, sys.stdin, sys.stdout, clinician=args.clinician)


def run_cli(
    store: SessionStore, session_id: str | None, stdin: TextIO, stdout: TextIO, clinician: str = "clinician"
) -> int:
    interactive = stdin.isatty()
    resumed = bool(session_id) and store.exists(session_id)
    session = store.open(session_id)
    print(f"session {session.id} ({'resumed' if resumed else 'new'}; {store.describe()})", file=stdout, flush=True)
    st = session.state()
    if resumed:
        for turn in st.turns:
            print(f"{turn.speaker}: {turn.text}", file=stdout)
    elif st.doctor_turns():  # with review on, the greeting waits for the clinician first
        _print_doctor(st.doctor_turns()[-1].text, stdout)
    while True:
        waiting = session.waiting_for()
        if waiting is None:
            print(f"(interview ended: {session.state().status})", file=stdout, flush=True)
            return 0
        if waiting == "review":
            _show_review(session)
        if interactive:
            print("clinician> " if waiting == "review" else "you> ", end="", file=sys.stderr, flush=True)
        line = stdin.readline()
        if not line:
            break
        line = line.strip()
        if line == QUIT:
            break
        if waiting == "review":
            try:
                turn = session.review(_review_decision(line), by=clinician)
            except ValueError as exc:
                print(f"review not applied: {exc}", file=sys.stderr, flush=True)
                continue
        elif not line:
            continue
        else:
            turn = session.send(line)
        if turn is not None and session.waiting_for() != "review":
            if turn.meta.get("fallback"):  # said on stderr: stdout stays the transcript
                fb = turn.meta["fallback"]
                reasons = "; ".join(f"{m}: {r}" for m, r in fb.items()) if isinstance(fb, dict) else str(fb)
                print(f"({FALLBACK_NOTICE} {reasons})", file=sys.stderr, flush=True)
            _print_doctor(turn.text, stdout)
    print(
        f"(saved session {session.id}; continue with: medhx chat --cli --session {session.id})", file=stdout, flush=True
    )
    return 0


def _print_doctor(text: str, stdout: TextIO) -> None:
    print(f"doctor: {text}", file=stdout, flush=True)


def _show_review(session: Session) -> None:
    review = session.pending_review() or {}
    print(f"[review] planned actions: {json.dumps(review.get('actions'))}", file=sys.stderr)
    print(f"[review] planned text: {review.get('text')}", file=sys.stderr)
    print("[review] enter or /approve, /edit TEXT, /actions JSON, /state JSON", file=sys.stderr, flush=True)


def _review_decision(line: str) -> dict:
    if line in ("", "/approve"):
        return {"approve": True}
    command, _, rest = line.partition(" ")
    if command == "/edit":
        return {"edit": rest}
    try:
        if command == "/actions":
            return {"replace_actions": json.loads(rest)}
        if command == "/state":
            return {"state_patch": json.loads(rest)}
    except json.JSONDecodeError as exc:
        raise ValueError(f"{command}: invalid JSON: {exc}") from None
    raise ValueError(f"unknown review command {command!r}")
