"""A run command's options over its config: ``medhx bench --limit 8`` runs the bench config with ``limit: 8``.

Every run command (bench, bench-speed, load-bench, storage-bench) loads its config file, then lets the options the
user gave replace the settings they name, through :func:`overrides`. A path given on the command line is relative
to the working directory (:func:`absolute_path`), unlike a path inside a config (relative to the config file).
Its own module, not ``agent.app.config``: that one imports the run commands to validate their configs.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def overrides(args: argparse.Namespace, options: Mapping[str, str]) -> dict[str, Any]:
    """``{config key: value}`` of each command-line option in ``options`` (``{option dest: config key}``) that was
    given: an option left out (None) or given empty keeps the config's setting. Conversions (a comma list, a path
    made absolute) are the options' argparse ``type``, so every run command overrides its config the same way."""
    return {key: value for dest, key in options.items() if (value := getattr(args, dest))}


def absolute_path(text: str) -> str:
    """An argparse ``type`` for a path option: relative to the working directory, made absolute so it means the same
    once it is in a config whose relative paths are relative to the config file."""
    return str(Path(text).resolve())
