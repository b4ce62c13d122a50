"""``medhx load-bench``'s config (:class:`LoadBenchConfig`) and its loader (see :mod:`eval.runs.load_bench`).

Two ways of loading the agent, each a section (``null`` skips it):

- ``clinic``: how a clinic loads it. Each simulated clinician runs interviews of ``turns`` patient turns one after
  another, thinking ``think_s`` (drawn uniformly per turn) before each; clinicians join evenly over ``ramp_s`` and
  latency is measured over the ``window_s`` after the ramp, once per level of ``concurrency`` (clinicians, i.e.
  interviews open at once).
- ``stress``: the closed loop. ``interviews`` interviews at once, each sending its ``turns`` lines back to back.

Each runs once per store in ``stores`` and per process count in ``processes`` (that many processes on one store,
as that many console processes behind a proxy run). Every section rejects unknown keys, so a misspelt setting fails
instead of silently measuring something else.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agent.core.data import DEFAULT_DATA_DIR
from agent.core.paths import REPO_ROOT, ConfigPath, load_typed

POSTGRES_ENV = "MEDHX_POSTGRES_URL"
Store = Literal["sqlite", "postgres"]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ClinicSettings(_Section):
    """Clinic pace: clinicians thinking between turns, joining over a ramp, measured over a window."""

    concurrency: list[int] = Field(default_factory=lambda: [25, 50, 100], min_length=1)  # interviews at once, per run
    turns: int = Field(default=20, ge=1)  # patient turns per interview (then the clinician starts another)
    think_s: tuple[float, float] = (5.0, 20.0)  # seconds before each patient turn, uniform in [low, high]
    ramp_s: float = Field(default=60.0, ge=0)  # clinicians join evenly over this; not measured
    window_s: float = Field(default=300.0, gt=0)  # turns sent in this window after the ramp are measured
    seed: int = 0  # think times are drawn from it (per clinician), so runs are comparable

    @model_validator(mode="after")
    def _check(self) -> ClinicSettings:
        low, high = self.think_s
        if not 0 <= low <= high:
            raise ValueError(f"think_s must be [low, high] with 0 <= low <= high, got {list(self.think_s)}")
        if any(n < 1 for n in self.concurrency):
            raise ValueError(f"concurrency levels must be >= 1, got {self.concurrency}")
        return self


class StressSettings(_Section):
    """The closed loop: every interview at once, turns back to back (the machine's ceiling, not a clinic)."""

    interviews: int = Field(default=50, ge=1)
    turns: int = Field(default=4, ge=1)


class LoadBenchConfig(_Section):
    """Paths relative to the config file's directory (:mod:`agent.core.paths`)."""

    agent: ConfigPath = str(REPO_ROOT / "configs" / "default.yaml")  # its session section is replaced per store
    stores: list[Store] = Field(default_factory=lambda: ["sqlite", "postgres"], min_length=1)
    processes: list[int] = Field(default_factory=lambda: [1, 2], min_length=1)  # processes on one store, per run
    clinic: ClinicSettings | None = Field(default_factory=ClinicSettings)
    stress: StressSettings | None = Field(default_factory=StressSettings)
    postgres_url: str | None = None  # default $MEDHX_POSTGRES_URL; postgres is required when listed
    data: ConfigPath = str(DEFAULT_DATA_DIR)  # whose patient lines the interviews send
    output_dir: ConfigPath = str(REPO_ROOT / "runs" / "load_bench")

    @model_validator(mode="after")
    def _check(self) -> LoadBenchConfig:
        if any(n < 1 for n in self.processes):
            raise ValueError(f"processes must be >= 1, got {self.processes}")
        if self.clinic is None and self.stress is None:
            raise ValueError("nothing to run: clinic and stress are both null")
        return self

    def store_url(self) -> str:
        """The PostgreSQL URL (the config's, else ``$MEDHX_POSTGRES_URL``); an error when there is none."""
        url = self.postgres_url or os.environ.get(POSTGRES_ENV)
        if not url:
            raise ValueError(f"store postgres is listed but no postgres_url (or ${POSTGRES_ENV}) is set")
        return url


def load_config(path: str | Path) -> LoadBenchConfig:
    """The load-bench config file, validated; an error names every failing key and the keys of each section."""
    return load_typed(LoadBenchConfig, path)[0]
