"""The console's typed settings: the ``ui:`` section of ``configs/ui.yaml`` (or any YAML with that section).

The console's own settings live apart from the agent configs because one console serves several agent configs
(the presets a clinician switches between), all on one session store. Every key is checked (unknown keys fail with
their path), and paths follow the project's one rule (:mod:`agent.core.paths`): relative to the YAML file's directory.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.core.paths import REPO_ROOT, ConfigPath, read_config_file, resolve_paths, validation_problems

DEFAULT_UI_CONFIG = REPO_ROOT / "configs" / "ui.yaml"


class StoreSettings(BaseModel):
    """Where every preset keeps its sessions (the same store for all, so switching presets keeps the session).
    ``dir: null`` is the per-user data directory (``$MEDHX_DATA``, else ``~/.local/share/medhx``)."""

    model_config = ConfigDict(extra="forbid")
    store: Literal["sqlite", "postgres"] = "sqlite"
    dir: ConfigPath | None = None
    postgres_url: str | None = None  # or $MEDHX_POSTGRES_URL


class UISettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"  # loopback: reachable from this machine only
    port: int = Field(default=7860, ge=0, le=65535)  # 0: any free port
    agent_config: ConfigPath = str(REPO_ROOT / "configs" / "default.yaml")  # the preset a new tab starts with
    presets: list[ConfigPath] | None = None  # agent configs to offer; None: every agent config in configs_dir
    configs_dir: ConfigPath = str(REPO_ROOT / "configs")
    session: StoreSettings | None = None  # None: the store that agent_config names
    users: dict[str, str] = {}  # username -> password hash (python -m ui.auth), never a plain password
    users_file: ConfigPath | None = None  # YAML mapping username -> hash, kept outside the repository
    share_sessions: bool = False  # every clinician sees every session (else only those they started)
    concurrency_limit: int = Field(default=4, ge=1)  # turns running at once (Gradio's queue)
    login_ttl_hours: float = Field(default=12.0, gt=0)  # a login (kept in the session store) expires after this
    export_dir: ConfigPath | None = None  # exported files (0700/0600); None: "exports" in the private data directory
    export_keep_minutes: float = Field(default=60.0, gt=0)  # exported files are deleted after this (made again)
    cookie_secure: bool = False  # set true behind HTTPS
    anonymous_user: str = "local"  # the owner recorded when no credentials are configured (loopback only)

    def is_loopback(self) -> bool:
        return host_is_loopback(self.host)


def host_is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def load_ui_settings(path: str | Path | None = None) -> UISettings:
    """The ``ui:`` section of ``path`` (default ``configs/ui.yaml``; built-in defaults when that file is absent)."""
    if path is None and not DEFAULT_UI_CONFIG.exists():
        return UISettings()
    p = path or DEFAULT_UI_CONFIG
    raw, base = read_config_file(p)
    if set(raw) - {"ui"}:
        raise ValueError(f"{p}: a console config is a YAML mapping with one key, 'ui'")
    section = raw.get("ui") or {}
    if not isinstance(section, dict):
        raise ValueError(f"{p}: 'ui' must be a mapping")
    resolved = resolve_paths(UISettings, section, base)
    try:
        return UISettings.model_validate(resolved)
    except ValidationError as exc:
        raise ValueError(f"{p}: {validation_problems(exc, 'ui')} (allowed keys: {sorted(UISettings.model_fields)})"
                         ) from None
