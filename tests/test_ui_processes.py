"""Two console processes on one session store, in a real browser, directly and behind nginx.

``medhx chat --processes 2`` starts two consoles (``python -m ui``, ports P and P+1) on one SQLite store, without
credentials on loopback (each process would otherwise ask the browser to sign in on its own unless logins are kept
in the store). nginx runs ``deploy/nginx/medhx.conf`` as shipped, with only its ports and log path replaced.

1. Each process on its own port: an interview started on the first is continued on the second, from its sidebar.
2. Behind nginx: a browser stays with one process (every request it made went to the same upstream); that process
   is stopped (SIGTERM); the page reloads, nginx sends it to the other process, the interview reopens by itself and
   goes on. The store then holds every patient turn once, in order, each answered.

Needs Debian's ``chromium`` and ``nginx`` and the ``playwright`` package (``bash .ci/install.sh --test``); under CI a
missing one fails the test.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from browser_fixtures import TIMEOUT_MS, require, send, status_says
from graph_fixtures import REPO, medhx_env
from ui_fixtures import RED_FLAG_LINE, SCRIPT

from agent.app.sessions import Session, SessionStore

pytestmark = pytest.mark.browser

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
SHIPPED = REPO / "deploy" / "nginx" / "medhx.conf"
START_TIMEOUT_S = 180  # two consoles importing Gradio and building the default agent on a busy 2-core machine
LINES = [*SCRIPT[:2], RED_FLAG_LINE, "I get short of breath when I climb stairs"]


def free_ports(n: int, start: int = 18500, stop: int = 18700) -> int:
    """The first of ``n`` consecutive free ports on 127.0.0.1."""
    for base in range(start, stop - n):
        socks = []
        try:
            for port in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no {n} consecutive free ports in {start}-{stop}")


def nginx_config(tmp: Path, proxy: int, first: int) -> Path:
    """A minimal nginx main config (pid, logs and temp files under ``tmp``) including the shipped file with its ports
    and log path replaced; each replacement must hit, so the test follows the file."""
    shipped = SHIPPED.read_text()
    replacements = {"listen 127.0.0.1:8080;": f"listen 127.0.0.1:{proxy};",
                    "server 127.0.0.1:7861 ": f"server 127.0.0.1:{first} ",
                    "server 127.0.0.1:7862 ": f"server 127.0.0.1:{first + 1} ",
                    "/var/log/nginx/medhx.access.log": str(tmp / "access.log")}
    for old, new in replacements.items():
        assert shipped.count(old) == 1, f"{SHIPPED} no longer has {old!r} once"
        shipped = shipped.replace(old, new)
    (tmp / "medhx.conf").write_text(shipped)
    temp = " ".join(f"{kind}_temp_path {tmp / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    main = tmp / "nginx.conf"
    main.write_text(("user root;\n" if os.geteuid() == 0 else "") +
                    f"worker_processes 1;\npid {tmp / 'nginx.pid'};\nerror_log {tmp / 'error.log'};\nevents {{}}\n"
                    f"http {{\n  {temp}\n  include {tmp / 'medhx.conf'};\n}}\n")
    return main


def wait_http(url: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{proc.args} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if requests.get(url, timeout=5).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.5)
    pytest.fail(f"nothing answered at {url} within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


def upstreams(access_log: Path, route: str) -> list[str]:
    """The upstream of each request of the browser with ``route`` (its medhx_route cookie), in order (``a, b`` when
    the first was down and the second answered)."""
    return re.findall(rf"upstream=(\S+(?:, \S+)*) route={route}$", access_log.read_text(), re.MULTILINE)


def ready(page, url: str) -> None:
    page.goto(url)
    status_says(page, "Ready.", timeout_ms=START_TIMEOUT_S * 1000)


@pytest.fixture
def consoles(tmp_path):
    """Two console processes (``medhx chat --processes 2``) on one SQLite store: ``(first port, pids by port)``."""
    require([] if Path(NGINX).exists() else ["nginx (apt)"])
    first = free_ports(2)
    (tmp_path / "ui.yaml").write_text(
        f"ui:\n  host: 127.0.0.1\n  agent_config: {REPO / 'configs' / 'default.yaml'}\n"
        f"  presets: [{REPO / 'configs' / 'default.yaml'}]\n  session: {{store: sqlite, dir: {tmp_path / 'store'}}}\n")
    log = tmp_path / "consoles.log"
    with log.open("w") as out:
        launcher = subprocess.Popen(
            [sys.executable, "-m", "agent.cli", "chat", "--ui-config", str(tmp_path / "ui.yaml"), "--port",
             str(first), "--processes", "2"], stdout=out, stderr=subprocess.STDOUT, env=medhx_env(), cwd=REPO)
    try:
        for port in (first, first + 1):
            wait_http(f"http://127.0.0.1:{port}/", launcher, log)
        pids = {int(port): int(pid) for pid, port in re.findall(r"pid (\d+), port (\d+)", log.read_text())}
        assert sorted(pids) == [first, first + 1], log.read_text()
        yield first, pids
    finally:
        launcher.send_signal(signal.SIGTERM)  # the launcher stops both of its consoles
        try:
            launcher.wait(timeout=60)
        except subprocess.TimeoutExpired:
            launcher.kill()
            launcher.wait()


@pytest.fixture
def nginx(tmp_path, consoles):
    """nginx on the shipped config in front of both consoles: ``(url, access log)``."""
    first, _ = consoles
    proxy = free_ports(1, 18700, 18800)
    main = nginx_config(tmp_path, proxy, first)
    check = subprocess.run([NGINX, "-t", "-p", str(tmp_path), "-c", str(main)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    proc = subprocess.Popen([NGINX, "-p", str(tmp_path), "-c", str(main), "-g", "daemon off;"],
                            stderr=subprocess.PIPE)
    try:
        wait_http(f"http://127.0.0.1:{proxy}/", proc, tmp_path / "error.log")
        yield f"http://127.0.0.1:{proxy}", tmp_path / "access.log"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_an_interview_goes_on_in_the_other_process(browser, consoles, nginx, tmp_path):
    _, chromium = browser
    first, pids = consoles
    proxy_url, access_log = nginx

    # 1. each process on its own port: started on the first, continued on the second from its sidebar
    direct = chromium.new_context(viewport={"width": 1500, "height": 1000})
    try:
        a = direct.new_page()
        ready(a, f"http://127.0.0.1:{first}")
        a.locator("#mhx-new").click()
        status_says(a, "started")
        sid = a.locator("#mhx-sessions input:checked").get_attribute("value")
        send(a, LINES[0], "Doctor turn 2 sent")
        b = direct.new_page()
        ready(b, f"http://127.0.0.1:{first + 1}")
        b.locator("#mhx-sessions label", has_text=sid).click()
        status_says(b, f"Resumed interview {sid}")
        assert b.locator("#mhx-chat").get_by_text(LINES[0]).first.is_visible()
        send(b, LINES[1], "Doctor turn 4 sent")
    finally:
        direct.close()

    # 2. behind nginx: the browser stays with one process
    proxied = chromium.new_context(viewport={"width": 1500, "height": 1000})
    try:
        page = proxied.new_page()
        ready(page, proxy_url)
        page.locator("#mhx-sessions label", has_text=sid).click()
        status_says(page, f"Resumed interview {sid}")
        send(page, LINES[2], "Doctor turn 6 sent")
        page.locator("#mhx-red-flags").wait_for(timeout=TIMEOUT_MS)
        route = next(c["value"] for c in proxied.cookies() if c["name"] == "medhx_route")
        served = set(upstreams(access_log, route))
        assert len(served) == 1, served  # sticky: every request of this browser went to one process
        gone = int(served.pop().rsplit(":", 1)[1])
        other = first + 1 if gone == first else first

        # its process stops; the reloaded page lands on the other one and reopens the interview by itself
        before = len(upstreams(access_log, route))
        os.kill(pids[gone], signal.SIGTERM)
        _wait_gone(gone)
        page.reload()
        status_says(page, f"Resumed interview {sid}", timeout_ms=START_TIMEOUT_S * 1000)
        assert page.locator("#mhx-chat").get_by_text(LINES[2]).first.is_visible()
        send(page, LINES[3], "Doctor turn 8 sent")
        after = upstreams(access_log, route)[before:]
        # nginx logs a request when it ends: first the old page's open event streams, closed by the stop
        rest = list(itertools.dropwhile(lambda u: u == f"127.0.0.1:{gone}", after))
        assert rest and all(u.endswith(f":{other}") for u in rest), after
    finally:
        proxied.close()

    # the store holds each patient turn once, in order, each answered
    cfg = {"session": {"store": "sqlite", "dir": str(tmp_path / "store")}}
    with SessionStore(cfg) as store:
        st = Session(store, sid).state()
    assert [t.text for t in st.patient_turns()] == LINES
    assert [t.speaker for t in st.turns] == ["doctor", "patient"] * 4 + ["doctor"]


def _wait_gone(port: int) -> None:
    """Until nothing accepts connections on ``port`` (the stopped console has let go of it)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return
        time.sleep(0.2)
    pytest.fail(f"the console on port {port} did not stop")
