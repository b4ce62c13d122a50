"""Several processes opening one new PostgreSQL session store at the same moment (console processes started together
by ``medhx chat --processes``, load-bench workers): each must open it, none may fail creating the tables another is
creating (PostgreSQL's catalog refuses two concurrent ``CREATE TABLE`` of one name with a UniqueViolation)."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest
from graph_fixtures import REPO, medhx_env

OPEN_AT = """
import sys, time
from agent.app.checkpoints import CheckpointStore, StoreSettings
time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
CheckpointStore(StoreSettings("postgres", url=sys.argv[1], pool_size=2)).close()
"""


@pytest.mark.postgres
def test_processes_opening_a_new_database_together_all_succeed(postgres_url):
    import psycopg

    for _ in range(3):  # three new databases: a race that is lost now and then shows
        name = f"medhx_startup_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        url = postgres_url.rsplit("/", 1)[0] + f"/{name}"
        at = time.time() + 4  # every process imports first, then all open the store at once
        procs = [subprocess.Popen([sys.executable, "-c", OPEN_AT, url, str(at)], cwd=REPO, env=medhx_env(),
                                  stderr=subprocess.PIPE, text=True) for _ in range(3)]
        failed = [p.stderr.read()[-2000:] for p in procs if p.wait(timeout=120) != 0]
        assert not failed, failed[0]
