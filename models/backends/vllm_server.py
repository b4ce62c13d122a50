"""Client of an OpenAI-compatible completions server (vLLM's own, or any compatible endpoint).

Prompts are sent already rendered to ``/v1/completions``; the module's LoRA adapter is
chosen with ``model=<adapter name>``. NLU/POL requests carry their JSON Schema as a
structured-output constraint. Requests of a batch go out concurrently (a thread pool
of ``concurrency`` workers) so vLLM's continuous batching sees them together.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

import httpx

from models.backends.base import BackendError, GenerationRequest, GenerationResult

log = logging.getLogger(__name__)

DEFAULTS: dict[str, Any] = {
    "url": "http://127.0.0.1:8000",
    "model": None,  # name of the base model on the server; None = ask /v1/models
    "api_key": None,
    "timeout_s": 120.0,
    "connect_timeout_s": 5.0,
    "retries": 4,  # attempts after the first, on connection errors, timeouts and 5xx
    "backoff_s": 0.5,  # first wait; doubles each retry
    "max_backoff_s": 8.0,
    "concurrency": 16,
    "structured_output": "structured_outputs",  # structured_outputs (vLLM) | response_format (OpenAI style) | none
    # vLLM extensions; set to null for other servers that reject unknown fields.
    "return_token_ids": True,
    "add_special_tokens": False,  # the chat template already wrote them (as models.prompts.encode_prompt)
}

RETRY_STATUS = {500, 502, 503, 504}


class VLLMServerBackend:
    name = "vllm-server"

    def __init__(self, **config: Any):
        unknown = set(config) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"vllm-server backend: unknown config keys {sorted(unknown)} (known: {sorted(DEFAULTS)})")
        self.config = {**DEFAULTS, **config}
        self.url = str(self.config["url"]).rstrip("/")
        if self.url.endswith("/v1"):
            self.url = self.url[: -len("/v1")]
        headers = {"Authorization": f"Bearer {self.config['api_key']}"} if self.config["api_key"] else {}
        concurrency = int(self.config["concurrency"])
        timeout = httpx.Timeout(float(self.config["timeout_s"]), connect=float(self.config["connect_timeout_s"]))
        self.client = httpx.Client(timeout=timeout, headers=headers,
                                   limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency))
        self.pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="vllm-client")
        self._base_model: str | None = self.config["model"]
        self._lock = threading.Lock()
        self.owned_server: Any = None  # a models.serve.VLLMServer this backend started (``launch:``) and stops

    # ------------------------------------------------------------------ public

    def generate(self, requests: list[GenerationRequest], progress: bool = False) -> list[GenerationResult]:
        if not requests:
            return []
        futures = [self.pool.submit(self._generate_one, r) for r in requests]
        if progress:
            from tqdm import tqdm

            for _ in tqdm(as_completed(futures), total=len(futures), desc="vllm-server", unit="req"):
                pass
        return [f.result() for f in futures]

    def models(self) -> list[dict]:
        """``/v1/models``: the base model (``parent`` null) and the LoRA adapters."""
        return self._request("GET", "/v1/models").json()["data"]

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        self.client.close()
        if self.owned_server is not None:
            self.owned_server.stop()
            self.owned_server = None

    def __enter__(self) -> VLLMServerBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def base_model(self) -> str:
        with self._lock:
            if self._base_model is None:
                roots = [m["id"] for m in self.models() if m.get("parent") is None]
                if not roots:
                    raise BackendError(f"{self.url}/v1/models lists no base model")
                self._base_model = roots[0]
            return self._base_model

    def body(self, req: GenerationRequest) -> dict:
        body: dict[str, Any] = {
            "model": req.adapter or self.base_model(),
            "prompt": req.prompt,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
        }
        if req.stop:
            body["stop"] = req.stop
        if req.min_tokens:  # vLLM's extra sampling parameters, sent only when set
            body["min_tokens"] = req.min_tokens
        if req.ignore_eos:
            body["ignore_eos"] = True
        if self.config["return_token_ids"]:
            body["return_token_ids"] = True
        if self.config["add_special_tokens"] is not None:
            body["add_special_tokens"] = bool(self.config["add_special_tokens"])
        mode = self.config["structured_output"]
        if req.json_schema is not None and mode == "structured_outputs":
            body["structured_outputs"] = {"json": req.json_schema}
        elif req.json_schema is not None and mode == "response_format":
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "output", "schema": req.json_schema}}
        elif req.json_schema is not None and mode != "none":
            raise ValueError(f"structured_output must be structured_outputs, response_format or none, not {mode!r}")
        return body

    def _generate_one(self, req: GenerationRequest) -> GenerationResult:
        start = time.perf_counter()
        data = self._request("POST", "/v1/completions", json=self.body(req)).json()
        latency = time.perf_counter() - start
        try:
            choice = data["choices"][0]
            usage = data.get("usage") or {}
            token_ids = choice.get("token_ids") or []
            return GenerationResult(
                text=choice["text"],
                prompt_tokens=int(usage.get("prompt_tokens", len(choice.get("prompt_token_ids") or []))),
                completion_tokens=int(usage.get("completion_tokens", len(token_ids))),
                latency_s=latency,
                token_ids=list(token_ids),
                finish_reason=choice.get("finish_reason"),
            )
        except (KeyError, IndexError, TypeError) as exc:
            raise BackendError(f"{self.url}: malformed completion response: {str(data)[:300]}") from exc

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One HTTP call with bounded retries and exponential backoff (connection errors, timeouts, 5xx)."""
        attempts = int(self.config["retries"]) + 1
        last = ""
        for attempt in range(attempts):
            if attempt:
                delay = min(float(self.config["backoff_s"]) * 2 ** (attempt - 1), float(self.config["max_backoff_s"]))
                time.sleep(delay * (0.8 + 0.4 * random.random()))
            try:
                response = self.client.request(method, self.url + path, **kwargs)
            except (httpx.TransportError, httpx.TimeoutException) as exc:
                last = f"{type(exc).__name__}: {exc}"
                log.warning("%s %s%s attempt %d/%d failed: %s", method, self.url, path, attempt + 1, attempts, last)
                continue
            if response.status_code in RETRY_STATUS:
                last = f"HTTP {response.status_code}: {response.text[:300]}"
                log.warning("%s %s%s attempt %d/%d failed: %s", method, self.url, path, attempt + 1, attempts, last)
                continue
            if response.status_code == 404 and path == "/v1/completions":
                model = (kwargs.get("json") or {}).get("model")
                raise BackendError(f"{self.url}: unknown model or adapter {model!r} "
                                   f"(served: {', '.join(self._served_names())}): {_message(response)}")
            if response.status_code >= 400:
                raise BackendError(f"{method} {self.url}{path} failed with HTTP {response.status_code}: {_message(response)}")
            return response
        raise BackendError(f"vLLM server at {self.url} unreachable or failing after {attempts} attempts: {last}")

    def _served_names(self) -> list[str]:
        try:
            return [m["id"] for m in self.client.get(self.url + "/v1/models").json()["data"]]
        except (httpx.HTTPError, ValueError, KeyError):
            return ["?"]


def _message(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text[:300]

