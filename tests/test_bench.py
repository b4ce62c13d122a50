"""``medhx bench`` through a real vLLM CPU server (tiny random Llama + LoRA adapters): every artifact is written,
a run killed mid-way resumes without recomputing finished turns, and a corrupted cache line is reported and
recomputed, never used."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from eval.runs.bench import BenchConfig, load_config

REPO = Path(__file__).resolve().parents[1]


def bench_config(tmp_path: Path, url: str, model_dir: Path, out: Path, tasks: list[str], limit: int,
                 chunk: int = 2) -> Path:
    module = {"kind": "model", "backend": "tiny", "mode": "supervised", "max_tokens": 24, "constrained": True}
    cfg = {
        "agent": {
            "base_model": str(model_dir),
            "backends": {"tiny": {"kind": "vllm-server", "url": url, "concurrency": 4, "timeout_s": 600,
                                  "tokenizer": str(model_dir)}},
            "nlu": {**module, "adapter": "nlu"},
            "policy": {**module, "adapter": "pol"},
            "nlg": {**module, "adapter": "nlg", "constrained": False, "fallback": False},
        },
        "split": "valid", "tasks": tasks, "limit": limit, "chunk": chunk, "match": ["exact"],
        "output_dir": str(out),
    }
    path = tmp_path / f"{out.name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def bench(config: Path, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "agent.cli", "bench", "--config", str(config), "--no-progress"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def finish(proc: subprocess.Popen) -> str:
    out, _ = proc.communicate(timeout=900)
    assert proc.returncode == 0, out
    return out


@pytest.mark.vllm
@pytest.mark.slow
def test_bench_writes_every_artifact(vllm_server, tiny_model_dir, tmp_path):
    out = tmp_path / "run"
    text = finish(bench(bench_config(tmp_path, vllm_server, tiny_model_dir, out, ["nlu", "pol", "nlg"], 4)))
    assert "nlu: F1" in text and "pol: F1" in text and "nlg: BLEU-4" in text
    for name in ("metrics.json", "report.md", "provenance.json", "metrics_vs_paper.png", "nlu_f1_per_group.png",
                 "latency.png", "predictions/nlu.jsonl", "predictions/pol.jsonl", "predictions/nlg.jsonl"):
        assert (out / name).stat().st_size > 0, name
    metrics = json.loads((out / "metrics.json").read_text())
    for task in ("nlu", "pol", "nlg"):
        m = metrics["tasks"][task]
        assert m["module"] in ("LLMNLU", "ModelPolicy", "LLMNLG") and m["run"]["computed"] == 4
        assert m["stats"]["turns"] == 4
        assert m["stats"]["tokens_in"] > 0 and m["stats"]["latency_p50_s"] > 0
    assert metrics["tasks"]["nlu"]["scores"]["definition"] == "official"
    assert "exact" in metrics["tasks"]["pol"]["scores"]["soft_match"]
    assert "facts" in metrics["tasks"]["nlg"]["scores"]
    # the predictions file is medhx score's input: scoring it again gives the bench's headline
    from agent.cli import main

    assert main(["score", "pol", "--split", "valid", "--pred", str(out / "predictions" / "pol.jsonl"),
                 "--out", str(tmp_path / "pol_score.json")]) == 0
    rescored = json.loads((tmp_path / "pol_score.json").read_text())
    assert rescored["turns"] == 53  # the whole split: turns beyond the limit score as missing
    provenance = json.loads((out / "provenance.json").read_text())
    assert provenance["data_hash"] and provenance["models"]["base_model"]["sha256_16"]
    assert provenance["versions"]["transformers"]
    report = (out / "report.md").read_text()
    assert "Table 4" in report and "medhx (this run)" in report and "full MediTOD test set" in report


@pytest.mark.vllm
@pytest.mark.slow
def test_killed_bench_resumes_and_a_corrupted_cache_line_is_recomputed(vllm_server, tiny_model_dir, tmp_path):
    out = tmp_path / "resume"
    config = bench_config(tmp_path, vllm_server, tiny_model_dir, out, ["nlu"], 8, chunk=1)
    proc = bench(config, start_new_session=True)
    cache_dir = out / "cache"
    deadline = time.time() + 600
    while time.time() < deadline:  # kill it once some turns, but not all, are cached
        lines = [p.read_text().count("\n") for p in cache_dir.glob("nlu-*.jsonl")] if cache_dir.exists() else []
        if lines and lines[0] >= 2:
            break
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    cache = next(cache_dir.glob("nlu-*.jsonl"))
    before = [json.loads(line) for line in cache.read_text().splitlines() if line.strip()]
    assert 2 <= len(before) < 8

    finish(bench(config))
    first = json.loads((out / "metrics.json").read_text())["tasks"]["nlu"]
    assert first["run"]["reused"] == len(before) and first["run"]["computed"] == 8 - len(before)
    rows = [json.loads(line) for line in (out / "predictions" / "nlu.jsonl").read_text().splitlines()]
    assert len(rows) == 8 and rows[: len(before)] == before  # finished turns kept as they were, not recomputed

    # a line garbled on disk (a torn write, a bad edit): reported, set aside, its turn recomputed
    kept = cache.read_text().splitlines()
    cache.write_text("\n".join([kept[0][:25], *kept[1:]]) + "\n")
    finish(bench(config))
    second = json.loads((out / "metrics.json").read_text())["tasks"]["nlu"]
    assert second["run"]["computed"] == 1 and second["run"]["reused"] == 7
    assert second["run"]["corrupted_lines"][0]["line"] == 1
    assert "corrupted cache lines" in (out / "report.md").read_text()
    assert second["scores"] == first["scores"]  # recomputed greedily: the same predictions, the same metrics

    finish(bench(config))  # nothing left to do: identical metrics, nothing recomputed, nothing reported
    third = json.loads((out / "metrics.json").read_text())["tasks"]["nlu"]
    assert third["run"]["computed"] == 0 and third["run"]["corrupted_lines"] == []
    assert third["scores"] == first["scores"]


def test_bench_config_rejects_unknown_keys(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("agent: configs/default.yaml\noutput_dir: x\nlimt: 3\n")
    with pytest.raises(ValueError, match="limt"):
        load_config(path)
    for name in ("smoke", "default", "paper_supervised", "paper_icl"):
        assert isinstance(load_config(REPO / "configs" / "bench" / f"{name}.yaml"), BenchConfig)


@pytest.mark.vllm
@pytest.mark.slow
def test_smoke_bench_on_the_embedded_model(tmp_path):
    """configs/bench/smoke.yaml as shipped (embedded SmolLM2, in-context prompts, a vLLM CPU server the bench starts
    and leaves running), two turns a task on a free port: every artifact is written."""
    from vllm_fixtures import free_port

    from models.serve import Endpoint, stop_server

    cfg = load_config(REPO / "configs" / "bench" / "smoke.yaml").model_dump()  # its paths resolved: copied elsewhere
    url = cfg["agent"]["backends"]["local"]["url"] = f"http://127.0.0.1:{free_port()}"
    cfg["limit"] = 2
    cfg["match"] = ["exact", "synonym"]
    cfg["output_dir"] = str(tmp_path / "smoke")
    path = tmp_path / "smoke.yaml"
    path.write_text(yaml.safe_dump(cfg))
    try:
        text = finish(bench(path))
    finally:  # the launched server outlives the bench (no client stops it): `medhx serve stop` does
        stop_server(Endpoint.from_url(url))
    out = tmp_path / "smoke"
    for name in ("metrics.json", "report.md", "provenance.json", "metrics_vs_paper.png", "latency.png",
                 "predictions/nlu.jsonl", "predictions/pol.jsonl", "predictions/nlg.jsonl"):
        assert (out / name).stat().st_size > 0, name
    metrics = json.loads((out / "metrics.json").read_text())
    assert {t: m["run"]["computed"] for t, m in metrics["tasks"].items()} == {"nlu": 2, "pol": 2, "nlg": 2}
    assert all(m["stats"]["tokens_out"] > 0 for m in metrics["tasks"].values())
    assert json.loads((out / "provenance.json").read_text())["models"]["base_model"]["name"] == "smollm2"
    assert "nlg: BLEU-4" in text
