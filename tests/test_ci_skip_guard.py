"""The suite cannot silently skip what it claims: tests/conftest.py's hook and .ci/check_skips.py, each run for real
on a small generated test file (a pytest subprocess with this suite's conftest loaded as a plugin).

Under CI a ``vllm`` / ``postgres`` / ``browser`` test that skips (in the test, in a fixture, or by ``skipif``) fails
the run; an ordinary skip stays a skip. Without CI the same skips are skips, and the runner's check of the JUnit
report still fails the run and says which tests claimed a component.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from graph_fixtures import REPO

TINY = '''
import pytest

@pytest.fixture
def database():
    pytest.skip("PostgreSQL is not installed")

@pytest.mark.vllm
def test_needs_vllm():
    pytest.skip("vllm is not importable")

@pytest.mark.postgres
def test_needs_postgres(database):
    pass

@pytest.mark.browser
@pytest.mark.skipif(True, reason="no Chromium")
def test_needs_a_browser():
    pass

def test_ordinary_skip():
    pytest.skip("nothing to check on this platform")

@pytest.mark.vllm
def test_runs():
    assert True
'''

INI = """[pytest]
markers =
    vllm: real vLLM
    postgres: real PostgreSQL
    browser: real browser
"""

CLAIMING = ["test_needs_vllm", "test_needs_postgres", "test_needs_a_browser"]


def _pytest(tmp_path: Path, ci: bool, body: str = TINY) -> tuple[subprocess.CompletedProcess, Path]:
    (tmp_path / "pytest.ini").write_text(INI)
    (tmp_path / "test_tiny.py").write_text(body)
    report = tmp_path / "junit.xml"
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "tests"), str(REPO), env.get("PYTHONPATH", "")])
    if ci:
        env["CI"] = "1"
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-q", "-rs", "-p", "no:cacheprovider",
                        f"--junitxml={report}", "test_tiny.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    return r, report


def _check_skips(report: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / ".ci" / "check_skips.py"), str(report)],
                          capture_output=True, text=True, timeout=60)


def test_under_ci_a_skipped_real_component_test_fails_the_run(tmp_path):
    r, report = _pytest(tmp_path, ci=True)
    assert r.returncode == 1, r.stdout
    # a skip in the test fails it; a skip in setup (a fixture, skipif) makes it an error: either fails the run
    assert "1 failed, 1 passed, 1 skipped, 2 errors" in r.stdout, r.stdout
    assert "_ test_needs_vllm _" in r.stdout
    assert "ERROR at setup of test_needs_postgres" in r.stdout and "ERROR at setup of test_needs_a_browser" in r.stdout
    for component, reason in [("vllm", "vllm is not importable"), ("postgres", "PostgreSQL is not installed"),
                              ("browser", "no Chromium")]:
        assert f"CI is set: this test needs a real {component} and may not skip (Skipped: {reason})" in r.stdout
    check = _check_skips(report)  # the failures are failures in the report too: one ordinary skip left
    assert check.returncode == 0 and check.stdout.startswith("1 tests skipped"), check.stdout


def test_without_ci_they_skip_and_the_runner_check_still_fails(tmp_path):
    r, report = _pytest(tmp_path, ci=False)
    assert r.returncode == 0 and "1 passed, 4 skipped" in r.stdout, r.stdout
    check = _check_skips(report)
    assert check.returncode == 1
    assert check.stdout.startswith("4 tests skipped")
    assert "3 skipped tests claim a real component" in check.stderr
    for name, component in zip(CLAIMING, ["vllm", "postgres", "browser"], strict=True):
        assert f"test_tiny::{name} needs {component}" in check.stderr

