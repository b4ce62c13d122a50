"""How many CPU threads the model code (torch, BLAS) of one serving process uses: one, unless the environment says.

Why one: a process that serves interviews (a console process, a load-bench worker) runs many turns at once, each in
a thread of its own, and the model code releases the GIL, so turns already use every core. torch's default, a pool of
every core per call, makes those concurrent calls take turns on the same cores (and with several processes on one
machine, several such pools): on the 2-core development machine, 20 interviews back to back ran at 10-12 turns/s
with torch's default and 13-23 turns/s with one thread per call, in one process and in two (noisy, shared machine).
``OMP_NUM_THREADS`` set in the environment wins.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

THREADS_ENV = "OMP_NUM_THREADS"


def limit_model_threads(environ: dict[str, str] | None = None) -> int:
    """Set ``OMP_NUM_THREADS`` to 1 in ``environ`` (default: this process's) unless it is set, and apply it to torch
    if this process has imported it already; returns the thread count. Call it before the models load."""
    env = os.environ if environ is None else environ
    threads = max(1, int(env.setdefault(THREADS_ENV, "1")))
    if environ is None and (torch := sys.modules.get("torch")) is not None:
        torch.set_num_threads(threads)
    return threads


@contextmanager
def serving_threads() -> Iterator[int]:
    """torch at the thread count a serving process uses (:func:`limit_model_threads`, this process's environment left
    as it is) inside the block, restored after: a benchmark that times the live agent times it as it is served."""
    import torch

    before = torch.get_num_threads()
    threads = limit_model_threads(dict(os.environ))
    torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        torch.set_num_threads(before)
