"""A server's life at an endpoint: reused or launched for clients (:func:`ensure_running`, :func:`ensure_server`),
started by an owner (:func:`start_server`), stopped (:func:`stop_server`). Each runs under the endpoint's lock."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from models.backends.base import BackendError
from models.serve.config import ServeConfig, check_serve_config, read_serve_config
from models.serve.endpoint import (
    API_KEY_ENV,
    Endpoint,
    ServerState,
    endpoint_lock,
    is_loopback,
    remove_state,
    write_state,
)
from models.serve.health import check_serves, responds, wait_ready
from models.serve.process import launch, live_state, tail, terminate


@dataclass
class ServerInfo:
    """A server a client may use: where, with which key, and whether this call launched it."""

    url: str
    api_key: str | None
    pid: int | None
    launched: bool


def ensure_running(config: ServeConfig, timeout_s: float | None = None, announce: bool = True) -> ServerInfo:
    """A ready server for ``config`` at its endpoint: reused when it serves the config, else launched.

    Under the endpoint lock, so concurrent callers launch one server. ``timeout_s`` (default the config's
    ``startup_timeout_s``) bounds the whole call; a server launched here that is not ready by then keeps
    starting in the background (the next caller waits for it) unless the startup timeout itself ran out.
    """
    endpoint = config.endpoint
    timeout = float(timeout_s if timeout_s is not None else config.startup_timeout_s)
    deadline = time.monotonic() + timeout
    with endpoint_lock(endpoint, timeout):
        state = live_state(endpoint)
        key = os.environ.get(API_KEY_ENV) or (state.api_key if state else None)
        if responds(endpoint.url):
            check_serves(endpoint.url, config, key)
            return ServerInfo(endpoint.url, key, state.pid if state else None, launched=False)
        launched = state is None
        if launched:  # else: launched by a client that went away before it was ready
            if announce:
                log_file = config.log_file or endpoint.default_log
                print(
                    f"starting a local vLLM server at {endpoint.url} in the background (about a minute on CPU; "
                    f"log: {log_file}; `medhx serve stop --port {endpoint.port}` stops it)",
                    file=sys.stderr,
                    flush=True,
                )
            state = launch(config)
        remaining = max(0.0, deadline - time.monotonic())
        try:
            wait_ready(endpoint.url, remaining, state.pid, state.log_file, state.api_key)
        except TimeoutError:
            if timeout >= config.startup_timeout_s:
                terminate(state.pid)
                remove_state(endpoint)
                raise BackendError(f"vLLM server at {endpoint.url} not ready after {timeout:.0f}s "
                                   f"(log: {state.log_file})\n{tail(state.log_file)}") from None
            raise BackendError(f"vLLM server at {endpoint.url} is starting (pid {state.pid}) and was not ready "
                               f"within {timeout:.0f}s; a later request will use it") from None
        except RuntimeError as exc:  # the server process exited
            remove_state(endpoint)
            raise BackendError(str(exc)) from None
        state.status = "ready"
        write_state(endpoint, state)
        check_serves(endpoint.url, config, state.api_key)
        return ServerInfo(endpoint.url, os.environ.get(API_KEY_ENV) or state.api_key, state.pid, launched)


def launch_config(launch_spec: str | Path | dict | ServeConfig, url: str) -> ServeConfig:
    """The serve config a client launches for ``url``: host and port come from the URL so both agree.

    The server binds to the URL's host; a non-loopback host must also be written as the serve config's
    ``host`` (a client URL alone never exposes a server beyond this machine).
    """
    config = read_serve_config(launch_spec) if isinstance(launch_spec, str | Path) else check_serve_config(launch_spec)
    endpoint = Endpoint.from_url(url)
    if is_loopback(endpoint.host):
        host = endpoint.host
    elif config.host in (endpoint.host, "0.0.0.0", "::"):
        host = config.host
    else:
        raise ValueError(f"launch: the backend url {url} is not a loopback address; a launched vLLM server binds to "
                         f"loopback unless its serve config says `host: {endpoint.host}` (or `host: 0.0.0.0`)")
    return config.model_copy(update={"host": host, "port": endpoint.port})


def ensure_server(launch_spec: str | Path | dict | ServeConfig, url: str, timeout_s: float | None = None) -> ServerInfo:
    """A ready server for a client's ``launch:`` spec at ``url`` (see :func:`ensure_running`). No client stops it."""
    return ensure_running(launch_config(launch_spec, url), timeout_s)


def start_server(config: ServeConfig, timeout_s: float | None = None, inherit_output: bool = False) -> ServerState:
    """Launch a server that its caller owns and stops (``medhx serve`` in the foreground, the tests' session server);
    its state once it is ready.

    Launched like any other (lock, state file, API key, own process group), so clients find its key; unlike
    :func:`ensure_running` it never reuses what answers at the endpoint, and a server not ready within ``timeout_s``
    (default the config's ``startup_timeout_s``) is stopped."""
    endpoint = config.endpoint
    with endpoint_lock(endpoint, 60):
        if responds(endpoint.url):
            raise RuntimeError(f"something already answers at {endpoint.url}; pick another port "
                               f"(`medhx serve status` lists the servers medhx launched)")
        live_state(endpoint)  # drops a stale file
        state = launch(config, inherit_output=inherit_output)
    try:
        wait_ready(endpoint.url, timeout_s or config.startup_timeout_s, state.pid, state.log_file, state.api_key)
    except BaseException:
        stop_server(endpoint)
        raise
    state.status = "ready"
    write_state(endpoint, state)
    return state


def stop_server(endpoint: Endpoint, timeout_s: float = 30.0) -> ServerState | None:
    """Stop the medhx-launched server of an endpoint (ready or still starting); its state, or None if none ran."""
    with endpoint_lock(endpoint, timeout_s + 30):
        state = live_state(endpoint)
        if state is None:
            return None
        terminate(state.pid, timeout_s)
        remove_state(endpoint)
        return state
