"""The thread count of the model code in a serving process (agent/app/cpu_threads.py): one unless the environment
says, and a benchmark that times the live agent times it at that count and gives torch its own back after."""

from __future__ import annotations

import torch

from agent.app.cpu_threads import THREADS_ENV, limit_model_threads, serving_threads


def test_one_thread_unless_the_environment_says():
    assert limit_model_threads({}) == 1
    assert limit_model_threads({THREADS_ENV: "3"}) == 3


def test_serving_threads_is_the_serving_count_inside_and_restores_after(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with serving_threads() as threads:
            assert threads == 1 == torch.get_num_threads()
        assert torch.get_num_threads() == 2
        monkeypatch.setenv(THREADS_ENV, "2")
        with serving_threads() as threads:
            assert threads == 2 == torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
