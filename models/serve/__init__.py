"""Serve the base model and the nlu/pol/nlg LoRA adapters with vLLM's OpenAI-compatible server.

The server is vLLM's own (``python -m vllm.entrypoints.openai.api_server``); this package turns a
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

The package, one module per job: ``config`` (the typed serve config), ``command`` (vLLM's command line and
environment), ``endpoint`` (where a server listens, its lock and its state file), ``process`` (launch, life,
termination), ``health`` (``/health`` and ``/v1/models``: ready, and serving what the config asks), ``lifecycle``
(reused or launched for clients, started and stopped by an owner), ``adapters`` (runtime swaps) and ``cli``
(``medhx serve``). The names below are its API; code outside the package imports them from here.
"""

from models.serve.adapters import load_adapter, unload_adapter
from models.serve.cli import add_parser
from models.serve.command import default_max_loras, detect_device, engine_flags, server_command, server_environment
from models.serve.config import DEFAULTS, ServeConfig, check_serve_config, load_serve_config, read_serve_config
from models.serve.endpoint import API_KEY_ENV, Endpoint, ServerState, api_key_for, endpoint_lock, read_state
from models.serve.health import ServerMismatch, check_serves, list_models, responds, wait_ready
from models.serve.lifecycle import ServerInfo, ensure_running, ensure_server, launch_config, start_server, stop_server
from models.serve.process import LAUNCH_MARKER, pid_alive, wait_exit

__all__ = [
    "API_KEY_ENV", "DEFAULTS", "LAUNCH_MARKER", "Endpoint", "ServeConfig", "ServerInfo", "ServerMismatch",
    "ServerState", "add_parser", "api_key_for", "check_serve_config", "check_serves", "default_max_loras",
    "detect_device", "endpoint_lock", "engine_flags", "ensure_running", "ensure_server", "launch_config",
    "list_models", "load_adapter", "load_serve_config", "pid_alive", "read_serve_config", "read_state", "responds",
    "server_command", "server_environment", "start_server", "stop_server", "unload_adapter", "wait_exit",
    "wait_ready",
]
