"""The server process: launched in its own process group with its log file and state recorded, checked for
life, waited for and terminated (with its engine workers)."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import signal
import subprocess
import time
from collections import deque
from pathlib import Path
from typing import Any

from models.serve.command import server_command, server_environment
from models.serve.config import ServeConfig
from models.serve.endpoint import Endpoint, ServerState, read_state, remove_state, write_state

log = logging.getLogger(__name__)

LAUNCH_MARKER = "[medhx] launching vLLM"  # first line of every launch in the server log


_children: dict[int, subprocess.Popen] = {}  # servers this process launched (reaped through poll)


def pid_alive(pid: int) -> bool:
    """The process exists and is not a zombie (a server whose launching client still runs is its child)."""
    if pid in _children:
        return _children[pid].poll() is None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rpartition(")")[2].split()[0] != "Z":
            return True
        # a zombie leader whose other threads are still exiting is not gone yet: a multi-threaded server's main thread
        # shows "Z" while its engine threads tear down, and its parent cannot reap it until they have
        threads = re.search(r"^Threads:\s+(\d+)", Path(f"/proc/{pid}/status").read_text(), re.M)
        return threads is not None and int(threads.group(1)) > 1
    except (OSError, IndexError):
        return True


def _is_vllm(pid: int) -> bool:
    """The process runs vLLM's server (guards against a recycled pid); True where /proc cannot tell."""
    try:
        return b"vllm" in Path(f"/proc/{pid}/cmdline").read_bytes().lower()  # vLLM retitles some: VLLM::...
    except OSError:
        return True


def live_state(endpoint: Endpoint) -> ServerState | None:
    """The endpoint's state if its server process still runs; a stale file is removed."""
    state = read_state(endpoint)
    if state is not None and not (pid_alive(state.pid) and _is_vllm(state.pid)):
        log.info("removing stale server state %s (pid %d is gone)", endpoint.state_path, state.pid)
        remove_state(endpoint)
        return None
    return state


def launch(config: ServeConfig, inherit_output: bool = False) -> ServerState:
    """Start vLLM in its own process group and record its state; does not wait. Call under the endpoint lock.

    The server logs to the config's ``log_file`` (default ``<cache>/servers/<host>-<port>.log``); with
    ``inherit_output`` and no ``log_file``, to this process's terminal (``medhx serve`` in the foreground)."""
    endpoint = config.endpoint
    api_key = secrets.token_urlsafe(32)
    cmd = server_command(config)
    log_path = None if inherit_output and config.log_file is None else Path(config.log_file or endpoint.default_log)
    stdout: Any = None
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        stdout = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.write(stdout, (f"{LAUNCH_MARKER} at {endpoint.url} by pid {os.getpid()} on "
                          f"{time.strftime('%Y-%m-%d %H:%M:%S')} (config {config.config_hash()})\n").encode())
    log.info("starting: %s", " ".join(cmd))
    try:
        # Own session: no client's Ctrl-C or exit reaches it; stop_server signals the whole group.
        proc = subprocess.Popen(cmd, env=server_environment(config, api_key), stdin=subprocess.DEVNULL,
                                stdout=stdout, stderr=subprocess.STDOUT if stdout is not None else None,
                                start_new_session=True)
    finally:
        if stdout is not None:
            os.close(stdout)
    _children[proc.pid] = proc
    state = ServerState(url=endpoint.url, host=config.host, port=config.port, pid=proc.pid, api_key=api_key,
                        config_hash=config.config_hash(), model=config.served_name(), adapters=config.adapter_paths,
                        started_at=time.time(), log_file=str(log_path) if log_path else None, launched_by=os.getpid())
    write_state(endpoint, state)
    return state


def terminate(pid: int, timeout_s: float = 30.0) -> None:
    """SIGTERM the server's process group, SIGKILL what is left after ``timeout_s`` (engine workers included), and
    return only once the server is gone.

    A killed process does not vanish at once: the kernel first tears down its memory (gigabytes for a vLLM server), so
    after SIGKILL we wait again (up to ``_KILL_GRACE_S``); returning earlier let ``serve stop`` report a server stopped
    that a check a moment later still found alive. A server that outlives even that is an error, never a success."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    if _wait_gone(pid, timeout_s):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)  # engine workers left behind by a leader that exited
    else:
        log.warning("the vLLM server (pid %d) did not exit within %.0f s of SIGTERM; killing it", pid, timeout_s)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    if pid in _children:
        with contextlib.suppress(subprocess.TimeoutExpired):
            _children.pop(pid).wait(_KILL_GRACE_S)
    if not _wait_gone(pid, _KILL_GRACE_S):
        raise RuntimeError(f"the vLLM server (pid {pid}) is still alive {_KILL_GRACE_S:.0f} s after SIGKILL")


_KILL_GRACE_S = 30.0  # how long a SIGKILLed server may take to release its memory and exit


def _wait_gone(pid: int, timeout_s: float) -> bool:
    """Poll until ``pid`` is gone (or a zombie); whether it went within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def returncode(pid: int) -> int | str:
    """The exit code of a server this process launched that has exited; ``?`` for any other."""
    return _children[pid].returncode if pid in _children else "?"


def wait_exit(pid: int) -> int:
    """Block until the server ``pid`` exits (foreground serving); its exit code (0 when it is not our child)."""
    proc = _children.get(pid)
    if proc is not None:
        return proc.wait()
    while pid_alive(pid):
        time.sleep(1.0)
    return 0


def tail(path: str | Path | None, n: int = 30) -> str:
    """The last ``n`` lines of a server log (for an error message)."""
    if not path or not Path(path).exists():
        return ""
    with open(path, errors="replace") as f:
        return "".join(deque(f, maxlen=n))
