"""``python -m ui``: the clinician console, as ``medhx chat`` starts it."""

from __future__ import annotations

import argparse
import sys

from ui.launch import add_arguments, run_console


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ui", description="medhx clinician console (Gradio)")
    p.add_argument("--config", default=None, help="agent config the console starts with (default configs/default.yaml)")
    add_arguments(p)
    args = p.parse_args(argv)
    try:
        return run_console(args)
    except (ValueError, OSError, RuntimeError) as exc:  # the same exit code as `medhx chat` for these
        print(f"medhx console: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
