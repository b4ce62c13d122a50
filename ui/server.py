"""Serving the console: the FastAPI app (login gate in front, the Gradio Blocks mounted behind it) and uvicorn.

``medhx chat`` (without ``--cli``) and ``python -m ui`` call :func:`serve`. The console refuses to start on an
address other than loopback without credentials, so an open console is never reachable from the network.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import gradio as gr
import uvicorn
from fastapi import FastAPI

from agent.app.checkpoints import default_data_dir
from agent.app.logins import LoginStore
from ui.app import build_blocks
from ui.auth import Credentials, LoginSessions, check_can_start, install_login
from ui.console import Console
from ui.exports import install_export_route
from ui.layout import APP_CSS
from ui.settings import UISettings

SHUTDOWN_GRACE_S = 3


@dataclass
class ConsoleApp:
    app: FastAPI
    console: Console
    blocks: gr.Blocks
    logins: LoginSessions | None


def create_app(settings: UISettings, credentials: Credentials) -> ConsoleApp:
    """The console's ASGI app. With credentials, every route but ``/login`` and ``/logout`` needs a login (kept in
    the console's session store, so it survives a restart and is valid in every console process on the store)."""
    check_can_start(settings, credentials)
    console = Console(settings)
    console.prepare(console.default_variant())  # start building the default agent now: the page waits less
    blocks = build_blocks(console)
    blocks.queue(default_concurrency_limit=settings.concurrency_limit)
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)
    logins = None
    if credentials:
        logins = LoginSessions(LoginStore(console.reader.checkpoints, settings.login_ttl_hours * 3600))
        install_login(app, credentials, logins, settings)
    # before Gradio's mount at "/", which would answer every path
    install_export_route(app, console.download, settings.anonymous_user)
    store_path = console.reader.checkpoints.settings.path
    private = [str(p.resolve()) for p in (console.files.root, store_path.parent if store_path else default_data_dir())]
    gr.mount_gradio_app(
        app, blocks, path="/", auth_dependency=logins.user_of if logins else None, ssr_mode=False,
        blocked_paths=private,  # Gradio's file route never serves the store or the exports, whatever it is asked
        css=APP_CSS, theme=gr.themes.Default(primary_hue="blue", neutral_hue="slate"),
        footer_links=["api", "settings"], run_history=False, max_file_size="1mb", enable_monitoring=False,
        app_kwargs={"docs_url": None, "redoc_url": None, "openapi_url": None},
    )
    app.router.add_event_handler("shutdown", console.close)
    return ConsoleApp(app, console, blocks, logins)


class BackgroundServer:
    """uvicorn in a thread (tests, notebooks): ``with BackgroundServer(app, host, port) as url: ...``."""

    def __init__(self, app: Any, host: str, port: int):
        self.server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on",
                                                   timeout_graceful_shutdown=SHUTDOWN_GRACE_S))
        self.thread = threading.Thread(target=self.server.run, name="medhx-console", daemon=True)
        self.host, self.port = host, port

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the console did not start on {self.host}:{self.port}")
            time.sleep(0.05)
        return f"http://{self.host}:{self.port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def serve(settings: UISettings, credentials: Credentials) -> int:
    """Run the console until interrupted."""
    console_app = create_app(settings, credentials)
    url = f"http://{settings.host}:{settings.port}"
    who = f"sign in as {', '.join(credentials.users)}" if credentials else "no login (loopback only)"
    print(f"medhx console at {url} ({who}; sessions: {console_app.console.reader.describe()})",
          file=sys.stderr, flush=True)
    # open pages keep event streams open: give them a few seconds on Ctrl-C / SIGTERM, not forever
    uvicorn.run(console_app.app, host=settings.host, port=settings.port, log_level="warning",
                timeout_graceful_shutdown=SHUTDOWN_GRACE_S)
    return 0
