"""Several console processes on one session store: ``medhx chat --processes N [--port P]``.

Why processes, and why each browser must stay with one: Gradio's queue (the page's event stream, its pending events,
the files it serves for download) lives in the process that served the page, while the interviews live in the
session store every process shares. So N processes on ports ``P .. P+N-1`` serve one clinic together, behind a
reverse proxy that keeps each browser with one process (``deploy/nginx/medhx.conf``); when a process stops, the
proxy sends its browsers to another one, and a reloaded page reopens its interview from the store there. Two
processes never run a turn of one interview at once: a turn holds the session's lock in the store
(:mod:`agent.app.checkpoints`), so the second is told the session is busy.

The launcher starts the processes (each ``python -m ui`` with the same options and its own port), says where they
are, and stops them all on Ctrl-C or SIGTERM. A process that exits is reported and not restarted (the proxy routes
around it; a service manager that restarts it is the deployment's choice). Each process runs its model code on one
CPU thread unless ``OMP_NUM_THREADS`` says otherwise (:mod:`agent.app.cpu_threads`).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from types import FrameType

from agent.app.cpu_threads import limit_model_threads

STOP_GRACE_S = 15  # a process has this long to finish after SIGTERM (a running turn is checkpointed node by node)


def child_command(args: argparse.Namespace, port: int) -> list[str]:
    """``python -m ui`` with the launcher's own options and ``port``."""
    cmd = [sys.executable, "-m", "ui", "--port", str(port)]
    for flag, value in (("--config", getattr(args, "config", None)), ("--ui-config", args.ui_config),
                        ("--host", args.host)):
        if value:
            cmd += [flag, str(value)]
    return cmd


def run_processes(args: argparse.Namespace, base_port: int) -> int:
    """Start ``args.processes`` consoles on ``base_port`` onwards; return when all have exited (1 if any failed)."""
    n = args.processes
    env = {**os.environ}
    limit_model_threads(env)
    children = [subprocess.Popen(child_command(args, base_port + i), env=env) for i in range(n)]
    for i, child in enumerate(children):
        print(f"medhx console process {i + 1}/{n}: pid {child.pid}, port {base_port + i}", file=sys.stderr, flush=True)
    print(f"behind a proxy: deploy/nginx/medhx.conf with servers 127.0.0.1:{base_port} .. :{base_port + n - 1}",
          file=sys.stderr, flush=True)

    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        running = dict(enumerate(children))
        while running and not stopping:
            for i, child in list(running.items()):
                if (code := child.poll()) is not None:
                    print(f"medhx console process {i + 1}/{n} (port {base_port + i}) exited with {code}",
                          file=sys.stderr, flush=True)
                    del running[i]
            time.sleep(0.5)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _stop_all(children)
    return 0 if all(c.returncode in (0, -signal.SIGTERM) for c in children) else 1


def _stop_all(children: list[subprocess.Popen]) -> None:
    for child in children:
        if child.poll() is None:
            child.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
