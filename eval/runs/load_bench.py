"""``medhx load-bench``: many interviews at once through one agent (one model server) and one session store.

What a clinic deployment does when several clinicians interview at the same time, measured rather than asserted:
``interviews`` scripted interviews (default 50) run concurrently, each in its own thread of one process, as the
console's request queue runs them: one compiled graph, one set of modules (so one vLLM server when the agent config
has LLM modules), one session store. Each store named in the config (SQLite, PostgreSQL) gets its own run.

Each interview sends the patient lines of a shared MediTOD dialogue (cycled, so interviews differ), each ``send``
with an idempotency key. Afterwards every session is read back from the store and compared with what was sent:

- ``lost`` turns: a line whose ``send`` returned but that is not in the stored session;
- ``duplicated`` turns: a line stored more often than it was sent;
- ``errors``: any exception a ``send`` raised (a busy session, a backend error, a database error), by type;
- ``fallbacks_by_module``: answers in which a module missed the turn deadline or failed and a simpler one answered
  (``agent.app.graph_nodes``): not errors, but the share of turns the configured models did not serve under this load.

Reported per store: turns/s (accepted patient turns over the wall time of the run), turn latency p50/p95/p99 (one
``send``: NLU, tracking, red flags, policy, NLG and the checkpoint writes), errors, lost, duplicated, and the agent
config and machine. ``errors``, ``lost`` and ``duplicated`` must be 0; the exit code is 1 when they are not.
Outputs: ``report.json``, ``report.md`` and ``latency.png`` in ``output_dir``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent.app.sessions import SessionStore
from agent.core.data import DEFAULT_DATA_DIR, load_dialogues
from agent.core.paths import REPO_ROOT, ConfigPath, read_config_file, resolve_paths
from eval.metrics.stats import percentile
from policies.agent_config import load_config as load_agent_config

POSTGRES_ENV = "MEDHX_POSTGRES_URL"


class LoadBenchConfig(BaseModel):
    """Paths relative to the config file's directory (:mod:`agent.core.paths`)."""

    model_config = ConfigDict(extra="forbid")
    agent: ConfigPath = str(REPO_ROOT / "configs" / "ensemble.yaml")  # its session section is replaced per store
    interviews: int = Field(default=50, ge=1)
    turns: int = Field(default=4, ge=1)  # patient lines per interview
    stores: list[Literal["sqlite", "postgres"]] = ["sqlite", "postgres"]
    postgres_url: str | None = None  # default $MEDHX_POSTGRES_URL; postgres is required when listed
    data: ConfigPath = str(DEFAULT_DATA_DIR)
    output_dir: ConfigPath = str(REPO_ROOT / "runs" / "load_bench")


def load_config(path: str | Path) -> LoadBenchConfig:
    raw, base = read_config_file(path)
    try:
        return LoadBenchConfig.model_validate(resolve_paths(LoadBenchConfig, raw, base))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"{path}: {problems} (allowed keys: {sorted(LoadBenchConfig.model_fields)})") from None


def scripts(data: str | Path, interviews: int, turns: int) -> list[list[str]]:
    """Per interview, its patient lines: the shared dialogues' patient turns, each interview starting elsewhere."""
    lines = [u.text for d in load_dialogues(data) for u in d.utterances if u.speaker == "patient" and u.text.strip()]
    if not lines:
        raise ValueError(f"{data}: no patient utterances to replay")
    return [[lines[(i * 3 + j) % len(lines)] for j in range(turns)] for i in range(interviews)]


def store_session(agent_cfg: dict, store: str, cfg: LoadBenchConfig, tmp: str) -> dict:
    """The agent's session section for one store's run: that store, a temporary SQLite directory, room for every
    line of an interview, and for PostgreSQL a pool as large as the interviews (up to 32)."""
    session = {**(agent_cfg.get("session") or {}), "store": store, "dir": tmp, "max_turns": 4 * cfg.turns + 4}
    if store == "postgres":
        url = cfg.postgres_url or os.environ.get(POSTGRES_ENV)
        if not url:
            raise ValueError(f"store postgres is listed but no postgres_url (or ${POSTGRES_ENV}) is set")
        session["postgres_url"] = url
        session["pool_size"] = min(cfg.interviews + 2, 32)
    return session


@dataclass
class Tally:
    """What the concurrent interviews of one run sent and measured; every field is written under ``lock``."""

    bar: Any  # tqdm progress bar, one step per line
    latencies: list[float] = field(default_factory=list)  # seconds per accepted send
    errors: Counter[str] = field(default_factory=Counter)
    sent: dict[str, list[str]] = field(default_factory=dict)  # per session, the lines whose send returned
    attempted: dict[str, list[str]] = field(default_factory=dict)  # per session, every line sent, answered or not
    lock: threading.Lock = field(default_factory=threading.Lock)


def interview(sessions: SessionStore, lines: list[str], tally: Tally) -> None:
    """One scripted interview: each line sent with its own idempotency key; errors are counted, never raised."""
    try:
        s = sessions.start(f"load-{uuid.uuid4().hex[:10]}")
    except Exception as exc:  # counted, never raised: the run goes on
        with tally.lock:
            tally.errors[f"start: {type(exc).__name__}"] += 1
            tally.bar.update(len(lines))
        return
    accepted: list[str] = []
    tried: list[str] = []
    for line in lines:
        tried.append(line)
        t0 = time.perf_counter()
        try:
            s.send(line, key=uuid.uuid4().hex)
            took = time.perf_counter() - t0
            accepted.append(line)
            with tally.lock:
                tally.latencies.append(took)
        except Exception as exc:
            with tally.lock:
                tally.errors[type(exc).__name__] += 1
        finally:
            with tally.lock:
                tally.bar.update(1)
        if s.waiting_for() is None:  # the interview closed early: nothing more to send
            with tally.lock:
                tally.bar.update(len(lines) - len(accepted))
            break
    with tally.lock:
        tally.sent[s.id] = accepted
        tally.attempted[s.id] = tried


def read_back(sessions: SessionStore, tally: Tally) -> tuple[int, int, Counter[str]]:
    """Every session read back from the store: lost and duplicated patient lines, and fallbacks per module."""
    lost = duplicated = 0
    fallbacks: Counter[str] = Counter()
    for sid, accepted in tally.sent.items():
        st = sessions.resume(sid).state()
        for t in st.doctor_turns()[1:]:  # answers to patient turns
            for module in (t.meta.get("fallback") or {}) if isinstance(t.meta.get("fallback"), dict) else ():
                fallbacks[module] += 1
        stored = Counter(t.text for t in st.patient_turns())
        lost += sum((Counter(accepted) - stored).values())
        duplicated += sum((stored - Counter(tally.attempted[sid])).values())
    return lost, duplicated, fallbacks


def run_store(agent_cfg: dict, store: str, cfg: LoadBenchConfig, progress: bool = True) -> dict:
    """One store's run: every interview at once, then every session read back and checked."""
    from tqdm import tqdm

    with tempfile.TemporaryDirectory(prefix="medhx-load-") as tmp:
        run_cfg = {**agent_cfg, "session": store_session(agent_cfg, store, cfg, tmp)}
        plans = scripts(cfg.data, cfg.interviews, cfg.turns)
        with SessionStore(run_cfg) as sessions:
            sessions.agent()  # build the modules (and reach the model server) before the clock starts
            tally = Tally(bar=tqdm(total=cfg.interviews * cfg.turns, desc=f"load-bench {store}", unit="turn",
                                   disable=not progress))
            t0 = time.perf_counter()
            with ThreadPoolExecutor(max_workers=cfg.interviews) as pool:
                for fut in as_completed([pool.submit(interview, sessions, plan, tally) for plan in plans]):
                    fut.result()
            wall = time.perf_counter() - t0
            tally.bar.close()
            lost, duplicated, fallbacks = read_back(sessions, tally)
            where = sessions.describe().split("@")[-1] if store == "postgres" else "sqlite (temporary directory)"
    latencies, errors = tally.latencies, tally.errors
    turns = len(latencies)
    return {
        "store": store, "where": where, "interviews": cfg.interviews, "turns_sent": cfg.interviews * cfg.turns,
        "turns_accepted": turns, "wall_s": round(wall, 3), "turns_per_s": round(turns / wall, 3) if wall else None,
        "latency_ms": {f"p{q}": _ms(percentile(latencies, q)) for q in (50, 95, 99)} | {"max": _ms(max(latencies,
                                                                                                       default=None))},
        "errors": sum(errors.values()), "errors_by_type": dict(errors), "lost": lost, "duplicated": duplicated,
        "fallbacks_by_module": dict(fallbacks),
        "latencies_s": latencies,
    }


def _ms(s: float | None) -> float | None:
    return None if s is None else round(1000 * s, 1)


def run(cfg: LoadBenchConfig, progress: bool = True) -> dict:
    agent_cfg = load_agent_config(cfg.agent)
    runs = [run_store(agent_cfg, store, cfg, progress) for store in cfg.stores]
    report = {"config": json.loads(cfg.model_dump_json()),
              "agent": {role: agent_cfg.get(role, {}).get("kind") for role in ("nlu", "policy", "nlg")},
              "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform()},
              "runs": runs, "ok": all(r["errors"] == r["lost"] == r["duplicated"] == 0 for r in runs)}
    write_outputs(report, Path(cfg.output_dir))
    return report


def write_outputs(report: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    slim = {**report, "runs": [{k: v for k, v in r.items() if k != "latencies_s"} for r in report["runs"]]}
    (out / "report.json").write_text(json.dumps(slim, indent=2) + "\n")
    rows = [
        "| store | interviews | turns | turns/s | p50 ms | p95 ms | p99 ms | errors | lost | duplicated | fallbacks |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["runs"]:
        lat = r["latency_ms"]
        rows.append(
            f"| {r['store']} | {r['interviews']} | {r['turns_accepted']}/{r['turns_sent']} | {r['turns_per_s']} "
            f"| {lat['p50']} | {lat['p95']} | {lat['p99']} | {r['errors']} | {r['lost']} | {r['duplicated']} "
            f"| {r['fallbacks_by_module'] or 0} |"
        )
    agent = ", ".join(f"{k}: {v}" for k, v in report["agent"].items())
    (out / "report.md").write_text(f"# Load benchmark\n\nAgent: {agent} ({report['config']['agent']}); "
                                   f"{report['machine']['cpu_count']} cores.\n\n" + "\n".join(rows) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for r in report["runs"]:
        if r["latencies_s"]:
            ax.hist([1000 * x for x in r["latencies_s"]], bins=30, alpha=0.6, label=f"{r['store']} "
                    f"(p95 {r['latency_ms']['p95']} ms)")
    ax.set_xlabel("turn latency (ms)")
    ax.set_ylabel("turns")
    ax.set_title(f"{report['config']['interviews']} concurrent interviews, one server, one store")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "latency.png", dpi=120)
    plt.close(fig)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("load-bench", help="N concurrent scripted interviews through one agent and one session store")
    p.add_argument("--config", default=str(REPO_ROOT / "configs" / "load_bench.yaml"))
    p.add_argument("--interviews", type=int, help="override the config's interviews")
    p.add_argument("--store", action="append", choices=("sqlite", "postgres"), help="only these stores")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cmd_load_bench)


def _cmd_load_bench(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    if args.interviews:
        cfg = cfg.model_copy(update={"interviews": args.interviews})
    if args.store:
        cfg = cfg.model_copy(update={"stores": args.store})
    report = run(cfg, progress=not args.no_progress)
    slim = {**report, "runs": [{k: v for k, v in r.items() if k != "latencies_s"} for r in report["runs"]]}
    print(json.dumps(slim, indent=2))
    return 0 if report["ok"] else 1
