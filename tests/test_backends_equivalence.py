"""Same adapter, same prompt, greedy, fp32: hf, vllm-offline and vllm-server produce identical token ids."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from vllm_fixtures import LORA_RANK

from models.backends import GenerationRequest, make_backend

pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parent.parent
TEXTS = ["I have had a dry cough for two weeks.", "It gets worse at night when I lie down, and I feel tired."]
ADAPTERS = (None, "nlu", "pol", "nlg")


@pytest.fixture(scope="module")
def requests_(tiny_model_dir) -> list[GenerationRequest]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    rendered = [tok.apply_chat_template([{"role": "user", "content": t}], tokenize=False, add_generation_prompt=True)
                for t in TEXTS]
    return [GenerationRequest(p, adapter=a, max_tokens=24) for p in rendered for a in ADAPTERS]


@pytest.fixture(scope="module")
def offline_token_ids(tiny_model_dir, tiny_adapters, requests_, tmp_path_factory) -> list[list[int]]:
    """vllm-offline in a child process (``python -m models.backends.vllm_offline``), so its engine is
    gone before the test session's server starts: one vLLM engine at a time on a small machine.
    Requested before ``vllm_server`` in the test's signature for that reason."""
    pytest.importorskip("vllm", reason="vllm is not importable")
    work = tmp_path_factory.mktemp("offline")
    config = {"model": str(tiny_model_dir), "adapters": tiny_adapters, "dtype": "float32", "max_model_len": 1024,
              "max_lora_rank": LORA_RANK, "cpu_kvcache_space_gib": 1, "cpu_omp_threads_bind": "auto"}
    job = {"config": config, "requests": [r.__dict__ for r in requests_]}
    (work / "job.json").write_text(json.dumps(job))
    proc = subprocess.run([sys.executable, "-m", "models.backends.vllm_offline", str(work / "job.json"),
                           str(work / "out.json")], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [r["token_ids"] for r in json.loads((work / "out.json").read_text())]


def test_hf_vllm_offline_and_vllm_server_agree_token_for_token(offline_token_ids, vllm_server, requests_,
                                                                tiny_model_dir, tiny_adapters):
    hf = make_backend({"kind": "hf", "model": str(tiny_model_dir), "adapters": tiny_adapters, "dtype": "float32"})
    hf_ids = [r.token_ids for r in hf.generate(requests_)]
    hf.close()
    with make_backend({"kind": "vllm-server", "url": vllm_server}) as server:
        server_ids = [r.token_ids for r in server.generate(requests_)]
    assert all(len(ids) == 24 for ids in hf_ids)
    assert offline_token_ids == hf_ids
    assert server_ids == hf_ids
