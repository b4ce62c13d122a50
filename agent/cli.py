"""The ``medhx`` command line: one subcommand per runnable thing, each in the module it belongs to.

Each module named here exposes ``add_parser(subparsers)``; heavy imports (torch,
vllm, gradio) stay inside the command functions so ``medhx --help`` is instant.

This module is the top layer (see ``[tool.importlinter]`` in pyproject.toml): the only one that may import every
package. Where a command below needs a layer above its own, it offers a parser default and :data:`PLUGS` fills it
here: ``medhx chat`` opens the console (ui), ``medhx config`` checks the console's settings (ui), ``medhx train``
scores the adapter with the MediTOD metrics (eval.metrics, which models/ may not import).

Exit codes: 0 done; 1 a runtime error (server down, timeout, database unreachable, a bad config key, a missing
file), reported as one line ``medhx COMMAND: error: ...`` on stderr, the traceback only with ``-v``; 2 a usage error
(argparse: unknown command, missing or bad argument); 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable
from pathlib import Path

COMMAND_MODULES = {
    "config": "agent.app.config",  # medhx config {check,show}
    "data": "agent.core.data",  # medhx data stats
    "track": "agent.core.tracker",  # medhx track
    "score": "eval.metrics.score",  # medhx score {nlu,pol,nlg}
    "models": "models.prepare",  # medhx models prepare
    "train": "models.train",  # medhx train
    "predict": "eval.runs.predict",  # medhx predict --task nlu|pol|nlg
    "silver": "policies.nlu.silver",  # medhx silver (clinical-NLU labels on the OSCE transcripts)
    "serve": "models.serve",  # medhx serve
    "bench": "eval.runs.bench",  # medhx bench (teacher-forced modules, official scores, report beside the paper)
    "bench-speed": "eval.runs.bench_speed",  # medhx bench-speed
    "chat": "agent.app.chat",  # medhx chat --cli
    "sessions": "agent.app.sessions_cli",  # medhx sessions {list,show,delete,export,purge}
    "simulate": "eval.runs.simulate",  # medhx simulate (whole interviews against patient simulators)
    "load-bench": "eval.runs.load_bench",  # medhx load-bench (concurrent scripted interviews, one server and store)
    "storage-bench": "eval.runs.storage_bench",  # medhx storage-bench (bytes a stored interview takes by length)
    "nlu-check": "eval.runs.nlu_check",  # medhx nlu-check (label-free NLU generalisation: dev and check slices)
    "generalisation": "eval.runs.generalisation",  # medhx generalisation (held-aside stories, statements, phrasings)
}
"""Subcommand -> the module whose ``add_parser`` registers it. A command line naming one imports that module only:
some modules import the clinical NLU (spaCy, torch) or LangGraph at their top, and every command paid for all of them
(about 4 s a ``medhx`` process, most of the test suite's subprocesses)."""


def _plug_console(chat: argparse.ArgumentParser) -> None:
    """``medhx chat`` without ``--cli``: the clinician console in the browser, with its options."""
    from ui.launch import add_arguments, run_console

    add_arguments(chat)
    chat.set_defaults(console=run_console)


def _ui_settings(path: Path) -> dict:
    from ui.settings import load_ui_settings

    return {"ui": load_ui_settings(path).model_dump()}


def _plug_ui_config(config: argparse.ArgumentParser) -> None:
    """``medhx config`` also checks the console's settings files (``ui:``)."""
    config.set_defaults(loaders={"ui": _ui_settings})


def _score_valid(task: str, examples: list, rows: list[dict], match: str) -> dict:
    from eval.metrics.score import score_rows  # imported when training scores, so --help stays instant

    return score_rows(task, examples, rows, match)


def _plug_train_scorer(train: argparse.ArgumentParser) -> None:
    """``medhx train`` scores the adapter on the valid split with MediTOD's metrics."""
    train.set_defaults(scorer=_score_valid)


PLUGS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "agent.app.config": _plug_ui_config,
    "models.train": _plug_train_scorer,
    "agent.app.chat": _plug_console,
}
"""Command module -> what the top adds to the parser its ``add_parser`` returns (a layer above the module's)."""


def _command_of(argv: list[str]) -> str | None:
    """The subcommand a command line names (its first word that is no option), None without one."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command (``argv`` None), or of the one ``argv`` names (:data:`COMMAND_MODULES`): ``--help``
    and a misspelt command still list them all."""
    parser = argparse.ArgumentParser(prog="medhx", description="Medical history-taking dialogue agent (MediTOD).")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    command = _command_of(argv) if argv is not None else None
    for name in [COMMAND_MODULES[command]] if command in COMMAND_MODULES else COMMAND_MODULES.values():
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        command = module.add_parser(sub)
        if name in PLUGS:
            PLUGS[name](command)
    return parser


EXPECTED = (ValueError, OSError, RuntimeError)
"""Errors a command raises with a message meant for the user (bad config or input, a file, a server, a database,
a session; ``ConnectionError`` and ``TimeoutError`` are ``OSError``s). Anything else is a bug: its type is named."""


def error_line(exc: BaseException) -> str:
    """One line for the user: the message with its line breaks folded (psycopg, pydantic and servers write several)."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    return message if isinstance(exc, EXPECTED) else f"{type(exc).__name__}: {message} (medhx -v shows the traceback)"


OWN_LOGGERS = ("agent", "models", "policies", "eval", "ui", "medhx", "__main__")


def _quiet_libraries(record: logging.LogRecord) -> bool:
    """Without ``-v``, other libraries speak only for errors: a database driver's retry warnings (several lines
    each) must not bury the one line that says what went wrong."""
    return record.levelno >= logging.ERROR or record.name.split(".")[0] in OWN_LOGGERS


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)  # a usage error exits 2 here, with argparse's usage line
    root = logging.getLogger()
    theirs = list(root.handlers)  # a host's handlers (pytest's, an application's) are left as they are
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    if not args.verbose:
        for handler in root.handlers:
            if handler not in theirs:
                handler.addFilter(_quiet_libraries)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if args.verbose:
            logging.getLogger("medhx").exception("medhx %s failed", args.command)
        print(f"medhx {args.command}: error: {error_line(exc)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
