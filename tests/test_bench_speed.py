"""``medhx bench-speed``'s pure parts: target lengths, batching, summary and ratio maths, the constrained-decoding
overhead, the length-forcing schema, config validation, the live-latency percentiles. No model, no vLLM."""

from __future__ import annotations

import argparse
import math

import pytest
import yaml
from graph_fixtures import REPO

from eval.runs import bench_speed as bs
from eval.runs import bench_speed_engines as engines
from eval.runs import live_latency as live


class WordTokenizer:
    """One token per whitespace-separated word."""

    def __call__(self, text: str, add_special_tokens: bool = False) -> dict:
        assert add_special_tokens is False
        return {"input_ids": list(range(len(text.split())))}


class FakeExample:
    def __init__(self, target: str):
        self.task = "nlg"  # target_text returns the target as written
        self.target = target


def test_target_lengths_count_the_gold_target_tokens_at_least_one():
    examples = [FakeExample("a b c"), FakeExample("one"), FakeExample("")]
    assert bs.target_lengths(examples, WordTokenizer()) == [3, 1, 1]


def test_target_lengths_use_the_compact_cmas_json_for_nlu():
    from agent.core.data import load_dialogues, nlu_examples
    from models import prompts

    class CharTokenizer:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": list(text)}

    ex = nlu_examples(load_dialogues(REPO / "data" / "meditod", "all"))[:3]
    assert bs.target_lengths(ex, CharTokenizer()) == [len(prompts.target_text(e)) for e in ex]


def test_forced_batches_sort_by_length_and_keep_every_index_once():
    lengths = [5, 1, 4, 1, 3]
    batches = bs.forced_batches(lengths, 2, sort_by_length=True)
    assert batches == [[1, 3], [4, 2], [0]]
    assert bs.forced_batches(lengths, 2, sort_by_length=False) == [[0, 1], [2, 3], [4]]
    assert sorted(i for b in bs.forced_batches(lengths, 3) for i in b) == list(range(5))
    # a static batch runs every row to its batch's longest target
    assert bs.batch_steps(lengths, batches) == 2 * 1 + 2 * 4 + 5
    assert bs.batch_steps(lengths, bs.forced_batches(lengths, 1)) == sum(lengths)


def test_summary_counts_target_tokens_and_ratios_divide_turn_rates():
    lengths = [10, 20, 30]
    paper = bs.summarize(6.0, lengths)
    batched = bs.summarize(2.0, lengths, generated=80)
    fast = bs.summarize(0.5, lengths, generated=60, prompt_tokens=300, dtype="float32")
    assert paper["turns_per_s"] == pytest.approx(0.5) and paper["tokens_per_s"] == pytest.approx(10.0)
    assert batched["completion_tokens"] == 60 and batched["generated_tokens"] == 80
    assert fast["prompt_tokens"] == 300 and fast["dtype"] == "float32"
    r = bs.ratios({"hf": paper, "hf_batched": batched, "vllm_constrained": fast})
    assert r["hf"]["vs_hf"] == pytest.approx(1.0)
    assert r["hf_batched"] == {"vs_hf": pytest.approx(3.0), "vs_hf_batched": pytest.approx(1.0)}
    assert r["vllm_constrained"]["vs_hf"] == pytest.approx(12.0)
    assert r["vllm_constrained"]["vs_hf_batched"] == pytest.approx(4.0)
    assert "vllm" not in r
    assert bs.aim(r) == {"engine": "vllm_constrained", "vs_hf_wanted": 15.0, "vs_hf": pytest.approx(12.0),
                         "reached": False}
    # equal tokens per engine: the tokens/s ratio is the turns/s ratio
    assert fast["tokens_per_s"] / paper["tokens_per_s"] == pytest.approx(r["vllm_constrained"]["vs_hf"])


def test_ratios_without_the_batched_baseline():
    runs = {"hf": bs.summarize(4.0, [8, 8]), "vllm": bs.summarize(1.0, [8, 8])}
    assert bs.ratios(runs) == {"hf": {"vs_hf": 1.0}, "vllm": {"vs_hf": 4.0}}


def test_decode_overhead_subtracts_prefill_and_each_turns_first_token():
    free = bs.summarize(12.0, [21] * 10)  # 210 tokens, 200 after the first
    constrained = bs.summarize(14.0, [21] * 10)
    out = bs.decode_overhead(2.0, free, constrained)
    assert out["decode_s_per_token"]["vllm"] == pytest.approx(10.0 / 200)
    assert out["decode_s_per_token"]["vllm_constrained"] == pytest.approx(12.0 / 200)
    assert out["constrained_overhead_per_token"] == pytest.approx(0.2)
    assert "note" not in out


def test_decode_overhead_is_not_reported_for_short_outputs():
    short = bs.summarize(2.1, [3] * 10)  # `[]` answers: 3 tokens a turn
    free = bs.summarize(12.0, [21] * 10)
    out = bs.decode_overhead(2.0, free, short)
    assert out["decode_s_per_token"]["vllm_constrained"] is None
    assert out["constrained_overhead_per_token"] is None and "too little" in out["note"]
    # a run no longer than its prefill is not timed either
    assert bs.decode_overhead(20.0, free, free)["constrained_overhead_per_token"] is None


def test_long_schema_forces_the_frame_count_and_leaves_the_nlu_schema_alone():
    from agent.core import cmas

    schema = cmas.nlu_json_schema()
    long = bs.long_schema(schema, 32)
    assert long["minItems"] == long["maxItems"] == 32
    assert schema["maxItems"] == 8 and "minItems" not in schema
    assert long["$defs"] == schema["$defs"] and long["items"] == schema["items"]


def test_pick_fastest_and_dtype_choice_record_why():
    assert bs.pick_fastest({"bfloat16": 3.0, "float32": 1.5}) == "float32"
    c = engines._choice("float32", {"bfloat16": 3.0, "float32": 1.5}, 4, 16, 1)
    assert c["dtype"] == "float32" and c["why"].startswith("fastest") and "bfloat16 3.00 s" in c["why"]
    assert "no probe" in engines._choice("float32", {}, 4, 16, 1)["why"]


def test_omp_bind_all_means_every_core():
    assert bs.omp_bind("all", 2) == "0-1"
    assert bs.omp_bind("all", 1) == "0"
    assert bs.omp_bind("auto", 8) == "auto" and bs.omp_bind("0,2", 8) == "0,2"
    assert bs.omp_bind(None, 2) is None
    assert bs.machine_threads({"threads": 3}) == 3 and bs.machine_threads({"threads": None}) >= 1


def test_contention_shares_take_out_this_process_tree():
    out = bs.contention_shares(wall=10.0, cores=2, busy_s=15.0, own_s=10.0, steal_s=1.0)
    assert out == {"others_cpu_share": 0.25, "own_cpu_share": 0.5, "steal_share": 0.05}
    assert bs.contention_shares(1.0, 2, busy_s=1.0, own_s=3.0)["others_cpu_share"] == 0.0


# --------------------------------------------------------------------------- config


def test_shipped_config_loads_with_every_section():
    config = bs.load_bench_config(REPO / "configs" / "bench_speed.yaml")
    assert config["base_model"] == "smollm2" and config["vllm"]["enable_prefix_caching"] is True
    assert config["vllm"]["cpu_omp_threads_bind"] == "all" and config["constrained"]["enabled"]
    assert config["live"]["config"] == str(REPO / "configs" / "default.yaml")  # relative to the config's directory
    assert config["data"] == str(REPO / "data" / "meditod")
    # every key the file sets is one the bench knows, and the file documents every default
    raw = yaml.safe_load((REPO / "configs" / "bench_speed.yaml").read_text())
    assert set(raw) == set(bs.DEFAULTS)
    for section, default in bs.DEFAULTS.items():
        if isinstance(default, dict):
            assert set(raw[section]) == set(default), section


def test_the_gpu_config_compares_gpu_against_gpu():
    """bench_speed_gpu.yaml (eval.runs.gpu_check --only vllm) differs from the CPU one only where a GPU needs it."""
    config = bs.load_bench_config(REPO / "configs" / "bench_speed_gpu.yaml")
    assert config["device"] == "auto" and config["live"]["enabled"] is False
    assert bs.dtype_candidates(config["vllm"]["dtype"]) == ["bfloat16"]  # FlashAttention 3 has no float32
    assert config["vllm"]["engine_args"] == {"gpu_memory_utilization": 0.4}
    assert config["data"] == str(REPO / "data" / "meditod")
    # auto follows what torch sees: this machine's transformers engines run where its vLLM build does
    import torch

    assert bs.hf_device(config) == ("cuda" if torch.cuda.is_available() else "cpu")
    assert bs.hf_device({**config, "device": "cpu"}) == "cpu"
    with pytest.raises(bs.ConfigError, match="device"):
        bs.bench_config_from({"device": "tpu"})


@pytest.mark.parametrize("raw, where", [
    ({"max_tokens": 64}, "top level"),
    ({"hf": {"dtype": "float32", "num_threads": 1}}, "hf"),
    ({"vllm": {"dtyp": "float32"}}, "vllm"),
    ({"live": {"config": "configs/default.yaml", "runs": 3}}, "live"),
    ({"bench_speed": {"probe": {"turn": 4}}}, "bench_speed.probe"),
])
def test_unknown_keys_are_rejected_with_where_they_are(raw, where):
    with pytest.raises(bs.ConfigError, match=rf"unknown key\(s\).*at {where}"):
        bs.bench_config_from(raw, "bench.yaml")


def test_free_mappings_pass_through_and_bad_values_are_rejected():
    config = bs.bench_config_from({"vllm": {"engine_args": {"enforce_eager": False}, "dtype": "float32"}})
    assert config["vllm"]["engine_args"] == {"enforce_eager": False}
    assert config["vllm"]["cpu_kvcache_space_gib"] == bs.DEFAULTS["vllm"]["cpu_kvcache_space_gib"]
    assert bs.dtype_candidates(config["vllm"]["dtype"]) == ["float32"]
    with pytest.raises(bs.ConfigError, match="dtype"):
        bs.bench_config_from({"hf": {"dtype": ["float32", "int8"]}})
    with pytest.raises(bs.ConfigError, match="batch_size"):
        bs.bench_config_from({"hf_batched": {"batch_size": 0}})
    with pytest.raises(bs.ConfigError, match="mapping"):
        bs.bench_config_from({"hf": "float32"})
    with pytest.raises(bs.ConfigError, match="mapping"):
        bs.bench_config_from(["not", "a", "mapping"])


def test_defaults_are_not_shared_between_configs():
    a = bs.bench_config_from({})
    a["vllm"]["engine_args"]["x"] = 1
    a["hf"]["dtype"].append("float16")
    b = bs.bench_config_from({})
    assert b["vllm"]["engine_args"] == {} and b["hf"]["dtype"] == ["bfloat16", "float32"]


def test_an_agent_config_gives_only_its_base_model():
    config = bs.load_bench_config(REPO / "configs" / "default.yaml")
    assert config["base_model"] == "smollm2" and config["limit"] is None
    assert bs.bench_config_from({"nlu": {"kind": "clinical"}, "base_model": "other"})["base_model"] == "other"


def test_cli_flags_override_the_config(tmp_path, monkeypatch):
    cfg = tmp_path / "b.yaml"
    cfg.write_text(yaml.safe_dump({"limit": 5, "live": {"enabled": False}}))
    seen = {}

    def fake_run(config):
        seen.update(config)
        return {"runs": {"hf": bs.summarize(2.0, [4, 4], dtype="float32")}, "ratios": {"hf": {"vs_hf": 1.0}}}

    monkeypatch.setattr(bs, "run_bench", fake_run)
    sub = argparse.ArgumentParser().add_subparsers()
    bs.add_parser(sub)
    parser = sub.choices["bench-speed"]
    args = parser.parse_args(["--config", str(cfg), "--limit", "3", "--output-dir", str(tmp_path / "o")])
    assert args.func(args) == 0
    assert seen["limit"] == 3 and seen["output_dir"] == str(tmp_path / "o") and seen["live"]["enabled"] is False


def test_summary_line_names_engines_ratios_overhead_and_live():
    lengths = [10] * 4
    runs = {
        "hf": bs.summarize(8.0, lengths, dtype="float32"),
        "hf_batched": bs.summarize(2.0, lengths, dtype="float32"),
        "vllm": bs.summarize(1.0, lengths, dtype="float32"),
        "vllm_constrained": bs.summarize(1.0, lengths, dtype="float32", contention={"others_cpu_share": 0.1}),
    }
    report = {"runs": runs, "ratios": bs.ratios(runs),
              "constrained_overhead": {"constrained_overhead_per_token": 0.05},
              "live": {"turn": {"p50_ms": 30.0, "p95_ms": 90.0}, "first_turn": {"cold_s": 1.3, "warm_s": 0.012}}}
    line = bs.summary_line(report)
    assert "hf[float32]=0.50 turns/s" in line and "vllm_constrained: 8.0x paper, 2.0x hf batched" in line
    assert "+5%" in line and "p50 30 ms p95 90 ms" in line and "cold 1.30 s" in line and "vllm_constrained 10%" in line


def test_plot_writes_a_png(tmp_path):
    lengths = [10] * 4
    runs = {"hf": bs.summarize(8.0, lengths), "vllm_constrained": bs.summarize(1.0, lengths)}
    report = {"runs": runs, "ratios": bs.ratios(runs), "turns": 4, "completion_tokens_per_turn": 10.0,
              "model_name": "m", "machine": {"threads": 2},
              "live": {"turn_seconds": [0.01, 0.02, 0.5], "turn": {"n": 3, "p50_ms": 20.0, "p95_ms": 450.0},
                       "first_turn": {"cold_s": 1.0, "warm_s": 0.01}}}
    bs.plot(report, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


# --------------------------------------------------------------------------- live latency (pure parts)


def test_percentiles_interpolate_like_numpy():
    xs = [float(x) for x in range(1, 11)]
    assert live.percentile(xs, 50) == pytest.approx(5.5)
    assert live.percentile(xs, 95) == pytest.approx(9.55)
    assert live.percentile([3.0], 95) == 3.0 and live.percentile([], 50) is None
    s = live.latency_summary([0.010, 0.020, 0.030])
    assert s["p50_ms"] == pytest.approx(20.0) and s["n"] == 3 and math.isclose(s["mean_ms"], 20.0)
    assert live.latency_summary([])["p95_ms"] is None


def test_patient_lines_are_the_patient_turns_in_order():
    from agent.core.data import load_dialogues

    lines = live.patient_lines(REPO / "data" / "meditod")
    dialogues = load_dialogues(REPO / "data" / "meditod", "all")
    assert [len(d) for d in lines] == [sum(u.speaker == "patient" for u in d.utterances) for d in dialogues]
    assert lines[0][0] == next(u.text for u in dialogues[0].utterances if u.speaker == "patient")
