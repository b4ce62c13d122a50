"""The module selectors' choices: agent config presets, and the LoRA adapters a vLLM server lists.

A preset is an agent config file (one with ``nlu`` / ``policy`` / ``nlg`` sections). A :class:`Variant` is a preset
with the clinician's choices applied: an adapter per LLM module (from the configured server's ``/v1/models``) and
review on or off. Every variant keeps its sessions in the console's one store, so switching applies to the next turn
of the same session.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml

from agent.app.config import config_type
from models.backends.base import BackendError
from models.serve import list_models
from policies.agent_config import load_config
from ui.settings import StoreSettings, UISettings

log = logging.getLogger(__name__)

ROLE_LABELS = {"nlu": "NLU", "policy": "policy", "nlg": "NLG"}
BASE_MODEL = "(base model)"  # the adapter choice meaning "no LoRA adapter"


@dataclass(frozen=True)
class Variant:
    """A preset with the clinician's choices; hashable, so it keys the console's caches."""

    preset: str
    adapters: tuple[tuple[str, str | None], ...] = ()  # (role, adapter or None for the base model), sorted
    review: bool = False

    @classmethod
    def of(cls, preset: str, adapters: dict[str, str | None] | None = None, review: bool = False) -> Variant:
        return cls(preset, tuple(sorted((adapters or {}).items())), review)

    def agent_key(self) -> tuple:
        """What the built modules depend on (review is an interview setting: the same modules serve both)."""
        return (self.preset, self.adapters)

    def describe(self) -> str:
        parts = [self.preset]
        parts += [f"{ROLE_LABELS.get(r, r)} adapter {a or 'none'}" for r, a in self.adapters]
        parts.append("review on" if self.review else "review off")
        return ", ".join(parts)


@dataclass
class ServerInfo:
    url: str
    launch: str | None  # serve config started when nothing answers at url


@dataclass
class Preset:
    name: str
    path: Path
    config: dict
    llm_roles: dict[str, str] = field(default_factory=dict)  # role -> backend name

    @property
    def review(self) -> bool:
        return bool((self.config.get("session") or {}).get("review"))

    def summary(self) -> str:
        """``clinical NLU · questionnaire policy · template NLG``."""
        parts = []
        for role in ("nlu", "policy", "nlg"):
            section = self.config.get(role) or {}
            kind = str(section.get("kind", "?"))
            adapter = f" ({section['adapter']})" if section.get("adapter") else ""
            parts.append(f"{kind}{adapter} {ROLE_LABELS[role]}")
        return " · ".join(parts)

    def configured_adapter(self, role: str) -> str | None:
        return (self.config.get(role) or {}).get("adapter")

    def server(self) -> ServerInfo | None:
        """The vLLM server this preset's LLM modules call (the first ``vllm-server`` backend they use)."""
        for backend in dict.fromkeys(self.llm_roles.values()):
            spec = (self.config.get("backends") or {}).get(backend) or {}
            if spec.get("kind") == "vllm-server" and spec.get("url"):
                return ServerInfo(str(spec["url"]).rstrip("/"), spec.get("launch"))
        return None

    def in_process_model(self) -> bool:
        return any(((self.config.get("backends") or {}).get(b) or {}).get("kind") in ("hf", "vllm-offline")
                   for b in self.llm_roles.values())

    def variant_config(self, variant: Variant, store: StoreSettings | None) -> dict:
        """The agent config of ``variant``: adapters chosen, review set, and the console's session store."""
        config = copy.deepcopy(self.config)
        for role, adapter in variant.adapters:
            if role not in self.llm_roles:
                raise ValueError(f"preset {self.name} has no LLM {role} module to put an adapter on")
            config[role]["adapter"] = adapter
        session = dict(config.get("session") or {})
        session["review"] = variant.review
        if store is not None:
            session.update(store.model_dump())
        config["session"] = session
        return config


def load_preset(path: str | Path) -> Preset:
    p = Path(path)
    config = load_config(p)
    roles = {r: str(s["backend"]) for r in ("nlu", "policy", "nlg")
             if isinstance(s := config.get(r), dict) and s.get("backend")}
    return Preset(p.stem, p, config, roles)


def is_agent_config(path: Path) -> bool:
    try:
        raw = yaml.safe_load(path.read_text())
        return isinstance(raw, dict) and config_type(raw) == "agent"
    except (OSError, yaml.YAMLError, ValueError):  # unreadable, or data (a lexicon, the rules): not a preset
        return False


def discover_presets(settings: UISettings) -> dict[str, Preset]:
    """The default agent config first, then ``ui.presets`` (or every agent config in ``ui.configs_dir``)."""
    default = Path(settings.agent_config)
    if settings.presets is not None:
        paths = [Path(p) for p in settings.presets]
    else:
        paths = sorted(p for p in Path(settings.configs_dir).glob("*.yaml") if is_agent_config(p))
    out: dict[str, Preset] = {}
    for path in [default, *paths]:
        if path.stem in out:
            continue
        try:
            out[path.stem] = load_preset(path)
        except (OSError, ValueError, yaml.YAMLError) as exc:
            if path == default or settings.presets is not None:
                raise ValueError(f"agent config {path}: {exc}") from None
            log.warning("skipping agent config %s: %s", path, exc)
    return out


# --------------------------------------------------------------------------- the served adapters


@dataclass
class Served:
    """What a vLLM server lists at ``/v1/models``: the base model(s) and the LoRA adapters."""

    url: str
    base: list[str] = field(default_factory=list)
    adapters: list[str] = field(default_factory=list)
    error: str | None = None
    answered: bool = False  # something answered at url (with an error status) though it listed no models

    @property
    def up(self) -> bool:
        return self.error is None


def served_models(url: str) -> Served:
    try:
        models = list_models(url)
    except (BackendError, httpx.HTTPError, ValueError, KeyError) as exc:
        answered = isinstance(exc.__cause__, httpx.HTTPStatusError)
        return Served(url, error=str(exc).splitlines()[0], answered=answered)
    base = [m["id"] for m in models if not m.get("parent")]
    adapters = [m["id"] for m in models if m.get("parent")]
    return Served(url, base, adapters)


def server_status(preset: Preset, served: Served | None) -> str:
    """What the adapter selector can offer, in words (markdown)."""
    server = preset.server()
    if not preset.llm_roles:
        return "This preset runs no language model: nothing to choose here."
    if server is None:
        where = "in this process, loaded on the first turn" if preset.in_process_model() else "by its backend"
        return f"This preset's model is served {where}; it lists no adapters to switch between."
    if served is not None and served.answered:
        return (f"The server at `{server.url}` answered but did not list its models ({served.error}): is it the "
                "vLLM server this preset expects?")
    if served is None or not served.up:
        if server.launch:
            return (f"No vLLM server answers at `{server.url}` yet. The first turn with this preset starts one "
                    f"(serve config `{Path(server.launch).name}`; a minute or more on CPU), with progress shown.")
        return (f"No vLLM server answers at `{server.url}` and this preset does not start one: "
                f"start it with `medhx serve`, then reopen this panel.")
    lines = [f"vLLM at `{server.url}` serves base model `{', '.join(served.base) or '?'}` and "
             f"{len(served.adapters)} adapter(s): {', '.join(f'`{a}`' for a in served.adapters) or 'none'}."]
    missing = [a for r in preset.llm_roles if (a := preset.configured_adapter(r)) and a not in served.adapters]
    if missing:
        lines.append(f"**Not served:** {', '.join(f'`{a}`' for a in missing)} (named in {preset.path.name}); "
                     "pick a served adapter or the base model below.")
    return "\n\n".join(lines)


def adapter_choices(preset: Preset, role: str, served: Served | None) -> list[str]:
    """The choices for one LLM module: the base model, the served adapters, and the configured one."""
    choices = [BASE_MODEL, *(served.adapters if served and served.up else [])]
    configured = preset.configured_adapter(role)
    if configured and configured not in choices:
        choices.append(configured)
    return choices
