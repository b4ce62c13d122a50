"""Client of an OpenAI-compatible completions server (vLLM's own, or any compatible endpoint).

Prompts are sent already rendered to ``/v1/completions``; the module's LoRA adapter is
chosen with ``model=<adapter name>``. NLU/POL requests carry their JSON Schema as a
structured-output constraint. Requests of a batch go out concurrently (a thread pool
of ``concurrency`` workers) so vLLM's continuous batching sees them together.

A request ends within ``deadline_s`` of being sent whatever the server does: connection errors,
429 and 502-504 are retried with exponential backoff and jitter (honouring ``Retry-After``)
while time remains, and when one request of a batch fails for good its siblings are cancelled
and one :class:`BackendError` is raised. A ``generate`` call of up to ``concurrency`` requests
(a live turn sends one) therefore ends within ``deadline_s``; a larger batch (``medhx predict``
over a split) within ``deadline_s`` per wave of ``concurrency`` requests. With a ``launch:`` serve config the backend
starts the local server when nothing answers (once per endpoint, under a lock, see :mod:`models.serve`) and
starts it again if it disappears mid-interview; it never stops it.

Errors and logs carry status codes, request indexes and lengths, never prompts or model output
(patient text): those appear only in DEBUG logging.
"""

from __future__ import annotations

import email.utils
import logging
import random
import re
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.core.paths import unknown_keys, validation_problems
from models.backends.base import BackendError, GenerationRequest, GenerationResult
from models.serve import ServerInfo, api_key_for, ensure_server

log = logging.getLogger(__name__)

RETRY_STATUS = {429, 502, 503, 504}  # busy or restarting; any other status is an answer


class VLLMServerSettings(BaseModel):
    """A ``vllm-server`` backend section (everything but ``kind``)."""

    model_config = ConfigDict(extra="forbid")

    url: str = "http://127.0.0.1:8000"
    model: str | None = None  # name of the base model on the server; None = ask /v1/models
    api_key: str | None = None  # default: $MEDHX_VLLM_API_KEY, else the key medhx recorded when it launched the server
    launch: str | dict[str, Any] | None = None  # serve config: start a local vLLM when nothing answers at url
    deadline_s: float = Field(default=60.0, gt=0)  # one request from when it is sent, retries included
    timeout_s: float = Field(default=120.0, gt=0)  # one HTTP attempt (never past the deadline)
    connect_timeout_s: float = Field(default=5.0, gt=0)
    retries: int | None = Field(default=None, ge=0)  # cap on attempts after the first; None: while the deadline allows
    backoff_s: float = Field(default=0.5, ge=0)  # first wait; doubles each retry, with jitter
    max_backoff_s: float = Field(default=8.0, ge=0)
    concurrency: int = Field(default=16, ge=1)
    structured_output: Literal["structured_outputs", "response_format", "none"] = "structured_outputs"
    # vLLM extensions; set to null for other servers that reject unknown fields.
    return_token_ids: bool | None = True
    add_special_tokens: bool | None = False  # the chat template already wrote them (as models.prompts.encode_prompt)


DEFAULTS: dict[str, Any] = VLLMServerSettings().model_dump()


class _Cancelled(Exception):
    """A sibling request of the batch failed: this one stops (never reaches the caller)."""


class VLLMServerBackend:
    name = "vllm-server"

    def __init__(self, **config: Any):
        try:
            self.settings = VLLMServerSettings.model_validate(config)
        except ValidationError as exc:
            if unknown := unknown_keys(exc):
                raise ValueError(f"vllm-server backend: unknown config keys {unknown} "
                                 f"(known: {sorted(VLLMServerSettings.model_fields)})") from None
            raise ValueError(f"vllm-server backend: {validation_problems(exc)}") from None
        self.url = self.settings.url.rstrip("/")
        if self.url.endswith("/v1"):
            self.url = self.url[: -len("/v1")]
        concurrency = self.settings.concurrency
        self.client = httpx.Client(
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        )
        self.pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="vllm-client")
        self._base_model: str | None = self.settings.model
        self._lock = threading.Lock()
        self._launch_lock = threading.Lock()
        self.server: ServerInfo | None = None  # set when a ``launch:`` spec found or started the server
        if self.settings.launch:
            self.server = ensure_server(self.settings.launch, self.url)

    # ------------------------------------------------------------------ public

    def generate(self, requests: list[GenerationRequest], progress: bool = False) -> list[GenerationResult]:
        """One result per request, or one BackendError (siblings of a failure cancelled).

        Within ``deadline_s`` for up to ``concurrency`` requests, ``deadline_s`` per wave of them beyond.
        """
        if not requests:
            return []
        n = len(requests)
        waves = -(-n // self.settings.concurrency)
        deadline = time.monotonic() + self.settings.deadline_s * waves
        cancel = threading.Event()
        futures = [self.pool.submit(self._generate_one, r, cancel) for r in requests]
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=n, desc="vllm-server", unit="req")
        pending: set[Future] = set(futures)
        try:
            while pending:
                # a little grace past the deadline: a request's own deadline ends it first, with the better message
                done, pending = wait(pending, timeout=max(0.0, deadline - time.monotonic()) + 0.5,
                                     return_when=FIRST_EXCEPTION)
                if bar is not None:
                    bar.update(len(done))
                failed = sorted(futures.index(f) for f in done if f.exception() is not None)
                if failed or not done:
                    cancel.set()
                    for f in pending:
                        f.cancel()
                    answered = sum(1 for f in futures if f.done() and not f.cancelled() and f.exception() is None)
                    raise self._batch_error(futures, requests, failed, n - answered - len(failed[:1]), len(pending))
        finally:
            if bar is not None:
                bar.close()
        return [f.result() for f in futures]

    def models(self) -> list[dict]:
        """``/v1/models``: the base model (``parent`` null) and the LoRA adapters."""
        deadline = time.monotonic() + self.settings.deadline_s
        return self._request("GET", "/v1/models", deadline).json()["data"]

    def close(self) -> None:
        """Stops this client's requests; never the server (it belongs to no client: ``medhx serve stop``)."""
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.client.close()

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
        if self.settings.return_token_ids:
            body["return_token_ids"] = True
        if self.settings.add_special_tokens is not None:
            body["add_special_tokens"] = bool(self.settings.add_special_tokens)
        mode = self.settings.structured_output
        if req.json_schema is not None and mode == "structured_outputs":
            body["structured_outputs"] = {"json": req.json_schema}
        elif req.json_schema is not None and mode == "response_format":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": req.json_schema},
            }
        return body

    def _batch_error(self, futures: list[Future], requests: list[GenerationRequest], failed: list[int],
                     cancelled: int, unfinished: int) -> BaseException:
        n = len(requests)
        if not failed:
            return BackendError(f"vLLM server at {self.url}: {unfinished} of {n} request(s) unanswered within "
                                f"the deadline ({self.settings.deadline_s:g}s per wave of {self.settings.concurrency})")
        first = next((i for i in failed if not isinstance(futures[i].exception(), _Cancelled)), failed[0])
        exc = futures[first].exception()
        if not isinstance(exc, BackendError):
            return exc  # a bug, not the server: raised as it is
        where = "" if n == 1 else (f" [request {first + 1} of {n}, prompt {len(requests[first].prompt)} chars; "
                                   f"{cancelled} other request(s) cancelled]")
        error = BackendError(f"{exc}{where}")
        error.__cause__ = exc
        return error

    def _generate_one(self, req: GenerationRequest, cancel: threading.Event) -> GenerationResult:
        try:
            if cancel.is_set():
                raise _Cancelled()
            deadline = time.monotonic() + self.settings.deadline_s
            start = time.perf_counter()
            response = self._request("POST", "/v1/completions", deadline, cancel, json=self.body(req))
            latency = time.perf_counter() - start
            return self._result(response, latency)
        except BaseException:
            cancel.set()  # before this worker picks up the next request of the batch
            raise

    def _result(self, response: httpx.Response, latency: float) -> GenerationResult:
        try:
            data = response.json()
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
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            log.debug("malformed completion response from %s: %r", self.url, response.text)
            raise BackendError(f"{self.url}: malformed completion response ({len(response.content)} bytes, "
                               f"{type(exc).__name__})") from None

    def _api_key(self) -> str | None:
        """Read per attempt: a relaunched server (by this client or another) has a new key in its state file."""
        return self.settings.api_key or api_key_for(self.url)

    def _backoff(self, attempt: int) -> float:
        cap = min(self.settings.backoff_s * 2**attempt, self.settings.max_backoff_s)
        return cap * (0.5 + 0.5 * random.random())

    def _relaunch(self, deadline: float) -> None:
        """The server is gone: start it again (or find another client's relaunch), within the deadline."""
        with self._launch_lock:  # one thread of this process waits on the endpoint lock, the others on this one
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            log.warning("vLLM server at %s is gone; starting it again (launch: in the backend config)", self.url)
            self.server = ensure_server(self.settings.launch, self.url, timeout_s=remaining)

    def _request(self, method: str, path: str, deadline: float, cancel: threading.Event | None = None,
                 **kwargs: Any) -> httpx.Response:
        """One HTTP call, retried on connection errors, timeouts, 429 and 502-504 until ``deadline``."""
        attempts = 0
        last = "no attempt made"
        started = time.monotonic()
        s = self.settings
        while True:
            if cancel is not None and cancel.is_set():
                raise _Cancelled()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BackendError(f"vLLM server at {self.url} unreachable or failing after {attempts} attempts in "
                                   f"{time.monotonic() - started:.1f}s (deadline {s.deadline_s:g}s): {last}")
            key = self._api_key()
            headers = {"Authorization": f"Bearer {key}"} if key else {}
            timeout = httpx.Timeout(min(s.timeout_s, remaining), connect=min(s.connect_timeout_s, remaining))
            attempts += 1
            delay = self._backoff(attempts - 1)
            try:
                response = self.client.request(method, self.url + path, headers=headers, timeout=timeout, **kwargs)
            except httpx.UnsupportedProtocol as exc:  # a misconfigured url: no retry can help
                raise BackendError(f"vllm-server backend: bad url {self.url!r}: {exc}") from None
            except httpx.TransportError as exc:  # connection refused/reset, timeouts, a server that died mid-answer
                last = f"{type(exc).__name__}: {exc}"
                if isinstance(exc, httpx.ConnectError) and s.launch:
                    self._relaunch(deadline)
                    delay = 0.0
            else:
                status = response.status_code
                if status in RETRY_STATUS:
                    last = f"HTTP {status}"
                    wait_s = retry_after(response)
                    if wait_s is not None:
                        if wait_s > deadline - time.monotonic():
                            raise BackendError(f"vLLM server at {self.url} answered HTTP {status} and asked to retry "
                                               f"after {wait_s:g}s, past the {s.deadline_s:g}s deadline")
                        delay = wait_s
                elif status == 401:
                    if self._api_key() != key:  # the server was relaunched with a new key meanwhile
                        last = "HTTP 401 (API key changed)"
                        delay = 0.0
                    else:
                        raise BackendError(f"vLLM server at {self.url} rejected the request (HTTP 401): "
                                           f"{'the API key was not accepted' if key else 'it requires an API key'} "
                                           f"(medhx reads the key of a server it launched from its state file; "
                                           f"set $MEDHX_VLLM_API_KEY or the backend's api_key otherwise)")
                elif status == 404 and path == "/v1/completions":
                    model = (kwargs.get("json") or {}).get("model")
                    raise BackendError(f"{self.url}: unknown model or adapter {model!r} "
                                       f"(served: {', '.join(self._served_names(headers))})")
                elif status >= 400:
                    log.debug("%s %s%s: HTTP %d: %s", method, self.url, path, status, response.text)
                    raise BackendError(
                        f"{method} {self.url}{path} failed with HTTP {status}: {_safe_message(response)}"
                    )
                else:
                    return response
            if s.retries is not None and attempts > s.retries:
                raise BackendError(
                    f"vLLM server at {self.url} unreachable or failing after {attempts} attempts: {last}"
                )
            log.warning("%s %s%s attempt %d failed (%s); retrying within the %gs deadline",
                        method, self.url, path, attempts, last, s.deadline_s)
            delay = min(delay, max(0.0, deadline - time.monotonic()))
            if cancel is not None:
                cancel.wait(delay)  # a failing sibling wakes this request up
            elif delay:
                time.sleep(delay)

    def _served_names(self, headers: dict[str, str]) -> list[str]:
        try:
            return [
                m["id"] for m in self.client.get(self.url + "/v1/models", headers=headers, timeout=10.0).json()["data"]
            ]
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return ["?"]


def retry_after(response: httpx.Response) -> float | None:
    """``Retry-After`` in seconds (delta-seconds or an HTTP date), None when absent or unreadable."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")


def _safe_message(response: httpx.Response) -> str:
    """The server's error type and message with quoted values blanked and length capped.

    vLLM's validation messages can quote the request (patient text); what remains (the kind of error,
    token counts, limits) is what a user needs. The full text goes to DEBUG logging only.
    """
    try:
        error = response.json()["error"]
        kind, message = str(error.get("type") or ""), str(error.get("message") or "")
    except (ValueError, KeyError, TypeError, AttributeError):
        return f"{len(response.content)}-byte non-JSON body"
    message = _QUOTED.sub("'…'", message)
    if len(message) > 200:
        message = message[:200] + "…"
    return f"{kind}: {message}" if kind else message
