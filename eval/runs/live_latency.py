"""Live latency of the default agent: one whole turn (NLU + tracking + red flags + policy + NLG, checkpointed)
and the time to the first doctor turn, cold (a fresh process) and warm (a second session in that process).

The patient turns of the shared dialogues are replayed as patient input through the real compiled graph and a
SQLite session store in a temporary directory (as ``tests/test_nlu_interview.py`` drives it). A session that ends
(``session.max_turns`` reached, or the questionnaire closes) is followed by a new one for the remaining lines.
Used by ``medhx bench-speed`` (the ``live`` section of configs/bench_speed.yaml).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent.app.cpu_threads import serving_threads
from agent.app.sessions import SessionStore
from eval.metrics.stats import percentile
from policies.agent_config import load_config

REPO = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: build the agent, greet (first session), then greet again (second session).
COLD_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
from policies.agent_config import load_config
from agent.app.sessions import SessionStore
cfg = load_config(sys.argv[1])
cfg["session"] = {**(cfg.get("session") or {}), "store": "sqlite", "dir": sys.argv[2]}
with SessionStore(cfg) as store:
    first = store.start().state().doctor_turns()[0].text
    t1 = time.perf_counter()
    print(json.dumps({"event": "greeting", "in_process_s": t1 - t0, "chars": len(first)}), flush=True)
    second = store.start().state().doctor_turns()[0].text
    print(json.dumps({"event": "warm", "warm_s": time.perf_counter() - t1, "chars": len(second)}), flush=True)
"""


def latency_summary(seconds: list[float]) -> dict:
    return {"n": len(seconds), "p50_ms": _ms(percentile(seconds, 50)), "p95_ms": _ms(percentile(seconds, 95)),
            "mean_ms": _ms(sum(seconds) / len(seconds)) if seconds else None, "max_ms": _ms(max(seconds, default=None))}


def _ms(s: float | None) -> float | None:
    return None if s is None else round(1000 * s, 3)


def patient_lines(data: str | Path, split: str = "all") -> list[list[str]]:
    """Per dialogue, its patient utterances in order."""
    from agent.core.data import load_dialogues

    return [[u.text for u in d.utterances if u.speaker == "patient" and u.text.strip()]
            for d in load_dialogues(data, split)]


def replay(config_path: str | Path, dialogues: list[list[str]], limit: int | None = None,
           progress: bool = True) -> dict:
    """Send every line as a patient turn; the wall time of each ``send`` is one agent turn."""
    cfg = load_config(config_path)
    lines = [(i, line) for i, d in enumerate(dialogues) for line in d]
    if limit:
        lines = lines[: int(limit)]
    turn_s: list[float] = []
    nodes: dict[str, list[float]] = {}
    sessions = 0
    # torch as the console serves it (one thread a call unless OMP_NUM_THREADS says): the agent that is timed is
    # the agent that is served, and on 2 cores torch's all-core pool only lengthened the tail
    with tempfile.TemporaryDirectory(prefix="medhx-live-") as tmp, serving_threads() as threads:
        cfg["session"] = {**(cfg.get("session") or {}), "store": "sqlite", "dir": tmp}
        with SessionStore(cfg) as store:
            t0 = time.perf_counter()
            session, current = store.start(), None
            first_session_s = time.perf_counter() - t0  # builds the agent: not a turn
            sessions = 1
            bar = _bar(len(lines), "live turns (default agent)", progress)
            for dialogue, line in lines:
                if session.waiting_for() != "patient" or (current is not None and dialogue != current):
                    session, sessions = store.start(), sessions + 1
                current = dialogue
                start = time.perf_counter()
                for event in session.stream_send(line):
                    if event.get("type") == "custom" and event.get("event") == "latency":
                        nodes.setdefault(event["node"], []).append(float(event["seconds"]))
                turn_s.append(time.perf_counter() - start)
                if bar is not None:
                    bar.update(1)
            if bar is not None:
                bar.close()
    return {"config": str(config_path), "turns": len(turn_s), "sessions": sessions, "torch_threads": threads,
            "first_session_s": round(first_session_s, 3), "turn": latency_summary(turn_s),
            # the first turn of a process also loads the NLU (lazily): shown apart, and counted in "turn"
            "first_patient_turn_ms": _ms(turn_s[0]) if turn_s else None,
            "turn_after_first": latency_summary(turn_s[1:]),
            "nodes": {name: latency_summary(v) for name, v in sorted(nodes.items())},
            "turn_seconds": [round(s, 6) for s in turn_s]}


def cold_start(config_path: str | Path, runs: int = 3, timeout_s: float = 300) -> dict:
    """Time to the first doctor turn in a fresh ``python -c`` (from spawn to the greeting on its stdout),
    and to a second session's greeting in that process (warm)."""
    cold, in_process, warm = [], [], []
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    for _ in range(max(1, int(runs))):
        with tempfile.TemporaryDirectory(prefix="medhx-cold-") as tmp, \
                tempfile.TemporaryFile(mode="w+") as err:
            start = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-c", COLD_SCRIPT, str(config_path), tmp], cwd=REPO, env=env,
                                    stdout=subprocess.PIPE, stderr=err, text=True)
            try:
                for raw in proc.stdout:  # type: ignore[union-attr]
                    event = _event(raw)
                    if event.get("event") == "greeting":
                        cold.append(time.perf_counter() - start)
                        in_process.append(float(event["in_process_s"]))
                    elif event.get("event") == "warm":
                        warm.append(float(event["warm_s"]))
                proc.wait(timeout=timeout_s)
            finally:
                if proc.poll() is None:
                    proc.kill()
            if proc.returncode != 0:
                err.seek(0)
                raise RuntimeError(f"cold-start process failed (exit {proc.returncode}):\n{err.read()[-2000:]}")
    return {"runs": len(cold), "cold_s": _median(cold), "cold_in_process_s": _median(in_process),
            "warm_s": _median(warm), "cold_all_s": [round(s, 3) for s in cold],
            "warm_all_s": [round(s, 4) for s in warm]}


def _event(line: str) -> dict:
    try:
        obj = json.loads(line)
    except ValueError:
        return {}
    return obj if isinstance(obj, dict) else {}


def _median(values: list[float]) -> float | None:
    m = percentile(values, 50)
    return None if m is None else round(m, 4)


def _bar(total: int, desc: str, progress: bool) -> Any:
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="turn")


def run_live(live: dict, data: str | Path, split: str = "all", progress: bool = True) -> dict:
    """The ``live`` section of the bench report."""
    out = replay(live["config"], patient_lines(data, split), limit=live.get("limit"), progress=progress)
    out["first_turn"] = cold_start(live["config"], runs=int(live.get("cold_runs", 3)))
    return out
