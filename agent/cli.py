"""The ``medhx`` command line: one subcommand per runnable thing, each in the module it belongs to.

Each module named here exposes ``add_parser(subparsers)``; heavy imports (torch,
vllm, gradio) stay inside the command functions so ``medhx --help`` is instant.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

COMMAND_MODULES = (
    "agent.config",  # medhx config {check,show}
    "agent.data",  # medhx data stats
    "agent.tracker",  # medhx track
    "eval.score",  # medhx score {nlu,pol,nlg}
    "models.prepare",  # medhx models prepare
    "models.train",  # medhx train
    "eval.predict",  # medhx predict --task nlu|pol|nlg
    "policies.nlu.silver",  # medhx silver (clinical-NLU labels on the OSCE transcripts)
    "models.serve",  # medhx serve
    "eval.bench",  # medhx bench (teacher-forced modules, official scores, report beside the paper)
    "eval.bench_speed",  # medhx bench-speed
    "agent.chat",  # medhx chat --cli
    "agent.sessions_cli",  # medhx sessions {list,show,delete,export,purge}
    "eval.simulate",  # medhx simulate (whole interviews against patient simulators)
    "eval.load_bench",  # medhx load-bench (concurrent scripted interviews through one server and one store)
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="medhx", description="Medical history-taking dialogue agent (MediTOD).")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        module.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (ValueError, FileNotFoundError, ConnectionError, RuntimeError) as exc:
        print(f"medhx {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
