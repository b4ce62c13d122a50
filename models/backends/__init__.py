"""Generation backends, chosen per module in YAML: ``{kind: vllm-server | vllm-offline | hf, ...}``.

The remaining keys of the mapping are the chosen backend's own settings (see each
module's constructor / ``DEFAULTS``). Heavy libraries load only when a backend is made.
"""

from __future__ import annotations

from models.backends.base import Backend, BackendError, GenerationRequest, GenerationResult

KINDS = ("vllm-server", "vllm-offline", "hf")

__all__ = ["KINDS", "Backend", "BackendError", "GenerationRequest", "GenerationResult", "make_backend"]


def make_backend(cfg: dict) -> Backend:
    cfg = dict(cfg)
    kind = cfg.pop("kind", None)
    if kind == "vllm-server":
        from models.backends.vllm_server import VLLMServerBackend

        return VLLMServerBackend(**cfg)  # a ``launch:`` serve config is the backend's own setting
    if kind == "vllm-offline":
        from models.backends.vllm_offline import VLLMOfflineBackend

        return VLLMOfflineBackend(**cfg)
    if kind == "hf":
        from models.backends.hf import HFBackend

        return HFBackend(**cfg)
    raise ValueError(f"backend kind must be one of {KINDS}, got {kind!r}")
