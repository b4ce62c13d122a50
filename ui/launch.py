"""Starting the console from the command line: ``medhx chat [--config FILE] [--host H] [--port N] [--processes K]``
and ``python -m ui`` (the same options). ``--processes K`` runs K console processes on one store, on ports N to
N+K-1 (:mod:`ui.processes`)."""

from __future__ import annotations

import argparse

from agent.core.paths import resolve_path
from ui.settings import UISettings, load_ui_settings


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The console's options (``--config`` is shared with ``medhx chat --cli``, so it is added there)."""
    p.add_argument("--ui-config", default=None, help="console settings: a YAML file with a 'ui:' section "
                                                     "(default configs/ui.yaml)")
    p.add_argument("--host", default=None, help="address to bind (default 127.0.0.1; any other needs credentials)")
    p.add_argument("--port", type=int, default=None, help="port (default 7860)")
    p.add_argument("--processes", type=int, default=1, metavar="K",
                   help="K console processes on one session store, on ports PORT .. PORT+K-1, for a reverse proxy "
                        "that keeps each browser with one of them (deploy/nginx/medhx.conf)")


def settings_from_args(args: argparse.Namespace) -> UISettings:
    settings = load_ui_settings(args.ui_config)
    updates: dict = {}
    if getattr(args, "config", None):
        updates["agent_config"] = str(resolve_path(args.config).resolve())
    if args.host:
        updates["host"] = args.host
    if args.port is not None:
        updates["port"] = args.port
    return UISettings.model_validate({**settings.model_dump(), **updates})


def run_console(args: argparse.Namespace) -> int:
    from ui.auth import Credentials, check_can_start

    settings = settings_from_args(args)
    credentials = Credentials.from_settings(settings)
    check_can_start(settings, credentials)  # before Gradio is imported: a refused start is quick
    if getattr(args, "processes", 1) != 1:
        if args.processes < 1 or settings.port == 0:
            raise ValueError("--processes needs K >= 1 and a fixed --port (the first of K consecutive ports)")
        from ui.processes import run_processes

        return run_processes(args, settings.port)

    from agent.app.cpu_threads import limit_model_threads
    from ui.server import serve

    limit_model_threads()  # before the models load: turns run in threads of their own already
    return serve(settings, credentials)
