"""Where a server listens, and what medhx keeps about it there: the endpoint's lock (one launch per endpoint,
across processes) and its state file (pid, port, model, adapters, config hash, API key; mode 0600) under
``<cache>/servers``."""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import logging
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from agent.core.paths import cache_root
from models.backends.base import BackendError

log = logging.getLogger(__name__)

API_KEY_ENV = "MEDHX_VLLM_API_KEY"  # overrides the key read from the state file
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


@dataclass(frozen=True)
class Endpoint:
    """Where a server listens; names its lock, state and log files."""

    host: str
    port: int

    @classmethod
    def from_url(cls, url: str) -> Endpoint:
        parsed = httpx.URL(url)
        return cls(parsed.host or "127.0.0.1", parsed.port or (443 if parsed.scheme == "https" else 80))

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def name(self) -> str:
        host = "127.0.0.1" if self.host == "localhost" else self.host
        return f"{host.replace(':', '_')}-{self.port}"

    @property
    def lock_path(self) -> Path:
        return servers_dir() / f"{self.name}.lock"

    @property
    def state_path(self) -> Path:
        return servers_dir() / f"{self.name}.json"

    @property
    def default_log(self) -> Path:
        return servers_dir() / f"{self.name}.log"


def servers_dir() -> Path:
    """``<cache>/servers`` (mode 0700: it holds API keys)."""
    d = cache_root() / "servers"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    return d


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def endpoint_lock(endpoint: Endpoint, timeout_s: float) -> Iterator[None]:
    """Exclusive lock on one endpoint, across processes (``fcntl.flock``), given up after ``timeout_s``."""
    fd = os.open(endpoint.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise BackendError(
                        f"another medhx process is starting or stopping the vLLM server at "
                        f"{endpoint.url} (lock {endpoint.lock_path}); gave up after {timeout_s:.0f}s"
                    ) from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)  # releases the lock


class ServerState(BaseModel):
    """The state file of a launched server (``<cache>/servers/<host>-<port>.json``, mode 0600)."""

    model_config = ConfigDict(extra="ignore")

    url: str
    host: str
    port: int
    pid: int  # also the process group: the server runs in its own session
    api_key: str
    config_hash: str
    model: str  # served name of the base model
    adapters: dict[str, str]
    started_at: float  # epoch seconds
    log_file: str | None
    launched_by: int  # pid of the medhx process that launched it
    status: Literal["starting", "ready"] = "starting"


def read_state(endpoint: Endpoint) -> ServerState | None:
    try:
        return ServerState.model_validate_json(endpoint.state_path.read_text())
    except FileNotFoundError:
        return None
    except (ValidationError, ValueError, OSError) as exc:
        log.warning("ignoring unreadable server state %s: %s", endpoint.state_path, exc)
        return None


def write_state(endpoint: Endpoint, state: ServerState) -> None:
    """Atomic, 0600 from creation (the file holds the API key)."""
    tmp = endpoint.state_path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(state.model_dump_json(indent=2))
    os.replace(tmp, endpoint.state_path)


def remove_state(endpoint: Endpoint) -> None:
    endpoint.state_path.unlink(missing_ok=True)


def all_states() -> list[ServerState]:
    out = []
    for path in sorted(servers_dir().glob("*.json")):
        try:
            out.append(ServerState.model_validate_json(path.read_text()))
        except (ValidationError, ValueError, OSError) as exc:
            log.warning("ignoring unreadable server state %s: %s", path, exc)
    return out


def api_key_for(url: str) -> str | None:
    """The API key for ``url``: ``$MEDHX_VLLM_API_KEY``, else the one in the endpoint's state file."""
    if key := os.environ.get(API_KEY_ENV):
        return key
    state = read_state(Endpoint.from_url(url))
    return state.api_key if state else None
