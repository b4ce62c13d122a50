"""Helpers for the console tests: console settings on a temporary store, and the real app served on loopback.

The console runs in the test process (uvicorn in a thread) with the embedded default agent (clinical NLU,
questionnaire policy, template NLG: no model server), so these tests are quick and need nothing but the package.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import yaml
from graph_fixtures import REPO
from vllm_fixtures import free_port

from ui.auth import Credentials, hash_password
from ui.server import BackgroundServer, ConsoleApp, create_app
from ui.settings import UISettings

PASSWORDS = {"dr_a": "correct horse a", "dr_b": "battery staple b"}
HASHES = {user: hash_password(pw) for user, pw in PASSWORDS.items()}
DEFAULT_AGENT = REPO / "configs" / "default.yaml"
RED_FLAG_LINE = "I have been coughing up blood"
SCRIPT = ["I have had a cough for two weeks, worse at night", RED_FLAG_LINE, "I smoke a pack a day"]


def write_preset(path: Path, **changes: object) -> Path:
    """The default agent config with ``changes`` (top-level sections replaced), written to ``path``; its relative
    paths made absolute so the copy works from anywhere."""
    from policies.agent_config import load_config

    cfg = load_config(DEFAULT_AGENT)
    cfg.update(changes)
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def console_settings(tmp_path: Path, presets: list[Path] | None = None, **changes: object) -> UISettings:
    values: dict = {"host": "127.0.0.1", "port": free_port(18300, 18400), "agent_config": str(DEFAULT_AGENT),
                    "presets": [str(p) for p in presets] if presets is not None else [str(DEFAULT_AGENT)],
                    "session": {"store": "sqlite", "dir": str(tmp_path / "store")}, "users": HASHES}
    values.update(changes)
    return UISettings.model_validate(values)


@contextlib.contextmanager
def running_console(settings: UISettings, environ: dict | None = None) -> Iterator[tuple[str, ConsoleApp]]:
    """The console app served at ``http://127.0.0.1:PORT`` until the block ends."""
    console_app = create_app(settings, Credentials.from_settings(settings, environ={} if environ is None else environ))
    try:
        with BackgroundServer(console_app.app, settings.host, settings.port) as url:
            yield url, console_app
    finally:
        console_app.console.close()
