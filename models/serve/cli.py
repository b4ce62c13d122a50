"""``medhx serve`` (foreground, or ``--detach``), ``medhx serve status`` and ``medhx serve stop``."""

from __future__ import annotations

import argparse
import sys
import time

from models.backends.base import BackendError
from models.serve.config import ServeConfig, read_serve_config
from models.serve.endpoint import API_KEY_ENV, Endpoint, all_states, read_state
from models.serve.health import check_serves, list_models, responds
from models.serve.lifecycle import ensure_running, start_server, stop_server
from models.serve.process import live_state, wait_exit


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
    endpoint = config.endpoint
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
    state = start_server(
        config, inherit_output=True
    )  # the foreground server logs to this terminal unless log_file is set
    try:
        print(f"vLLM OpenAI-compatible endpoint: {state.url}/v1", flush=True)
        print(_describe(state.url, state.api_key), flush=True)
        print(f"API key: in {endpoint.state_path} (clients read it there; ${API_KEY_ENV} overrides)", flush=True)
        print("Ctrl-C to stop", flush=True)
        code = wait_exit(state.pid)
        print(f"vLLM server exited with code {code}", file=sys.stderr)
        return code or 0
    finally:
        stop_server(endpoint)


def _uptime(seconds: float) -> str:
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s"


def _cmd_status(args: argparse.Namespace) -> int:
    config = _config_from_args(args)
    if config is not None:
        endpoints = [config.endpoint]
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
        endpoints = [config.endpoint]
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
