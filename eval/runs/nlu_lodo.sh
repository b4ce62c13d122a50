#!/usr/bin/env bash
# The README's NLU table, leave-one-dialogue-out on the two shared dialogues (115, 317), end to end:
#   bash eval/runs/nlu_lodo.sh [OUT]          (OUT defaults to runs/nlu_lodo; about 2 h on a 2-core CPU)
# Steps a finished run left behind are reused (delete OUT to start over).
#   clinical: no training. base SmolLM2: no adapter. gold-only adapters: fitted on one dialogue with the
#   paper's settings (configs/train/nlu.yaml), scored on the other. silver adapter: fitted on clinical-NLU labels
#   of the OSCE transcripts (holdout and both shared dialogues' sources excluded; configs/train/nlu_silver.yaml),
#   scored on both. Every model answer comes from a real vLLM CPU server: the silver adapter served as the `nlu`
#   LoRA module (concurrency 4: LoRA decoding on 2 cores runs at a few tokens/s, and more concurrent requests
#   only time out); the gold-only adapters merged into the base weights (`medhx models merge`), for speed.
#   Ensemble rows replay those recorded answers through EnsembleNLU (eval/runs/ensemble_replay.py), so each model runs once.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-runs/nlu_lodo}
mkdir -p "$OUT/pred" "$OUT/cfg"
split_of() { [[ $1 == 115 ]] && echo train || echo valid; }

agent_cfg() {  # NAME ADAPTER_DIR|none PORT HISTORY: a vLLM serve config + an agent config with kind: model
  python3 - "$OUT/cfg" "$@" <<'PY'
import sys, yaml
d, name, adapter, port, history = sys.argv[1:]
serve = yaml.safe_load(open("configs/serve.yaml"))
serve.update(port=int(port), adapters={"nlu": None if adapter == "none" else adapter, "pol": None, "nlg": None})
yaml.safe_dump(serve, open(f"{d}/serve_{name}.yaml", "w"))
agent = yaml.safe_load(open("configs/ensemble.yaml"))
agent["backends"]["local"].update(url=f"http://127.0.0.1:{port}", launch=f"{d}/serve_{name}.yaml",
                                  concurrency=4, timeout_s=900)
agent["nlu"].update(kind="model", adapter=None if adapter == "none" else "nlu", max_tokens=128, history=int(history))
yaml.safe_dump(agent, open(f"{d}/agent_{name}_model.yaml", "w"))
PY
}
predict() {  # CONFIG SPLIT OUTFILE
  [[ -s $3 ]] || medhx predict --config "$1" --task nlu --split "$2" --out "$3" --no-progress
}
ensemble() {  # MODEL_PRED SPLIT OUTFILE
  [[ -s $3 ]] || python3 -m eval.runs.ensemble_replay --model-pred "$1" --split "$2" --out "$3"
}

predict configs/default.yaml all "$OUT/pred/clinical_all.jsonl"
agent_cfg base none 8101 4
predict "$OUT/cfg/agent_base_model.yaml" all "$OUT/pred/base_all.jsonl"
ensemble "$OUT/pred/base_all.jsonl" all "$OUT/pred/ensemble_base_all.jsonl"

# silver adapter: never sees 115/317 (their source transcripts are excluded), so it is scored on both
[[ -f runs/silver/all/dialogs.json ]] || medhx silver --out runs/silver/all --no-progress
[[ -f runs/nlu-silver/adapter_config.json ]] || medhx train --config configs/train/nlu_silver.yaml
agent_cfg silver runs/nlu-silver 8103 2
predict "$OUT/cfg/agent_silver_model.yaml" all "$OUT/pred/silver_all.jsonl"
ensemble "$OUT/pred/silver_all.jsonl" all "$OUT/pred/ensemble_silver_all.jsonl"

# gold-only adapters: fit on one dialogue (the paper's settings), score on the other
for fit in 115 317; do
  held=$([[ $fit == 115 ]] && echo 317 || echo 115); data="$OUT/data/fit$fit"
  mkdir -p "$data"
  cp data/meditod/dialogs.json "$data/"; echo "[\"$fit\"]" > "$data/train_ids.json"
  echo "[\"$held\"]" > "$data/valid_ids.json"; echo "[]" > "$data/test_ids.json"
  [[ -f $OUT/gold_fit$fit/adapter_config.json ]] || medhx train --config configs/train/nlu.yaml \
      --set data="$data" --set output_dir="$OUT/gold_fit$fit" --set eval.enabled=false
  # served merged into the base weights (medhx models merge): same outputs, base-model speed on vLLM CPU
  [[ -f $OUT/merged_fit$fit/config.json ]] || medhx models merge --adapter "$OUT/gold_fit$fit" --out "$OUT/merged_fit$fit"
  agent_cfg gold$fit none 8102 4
  python3 - "$OUT/cfg/serve_gold$fit.yaml" "$OUT/merged_fit$fit" <<'PY'
import sys, yaml
cfg = yaml.safe_load(open(sys.argv[1])); cfg["model"] = sys.argv[2]; yaml.safe_dump(cfg, open(sys.argv[1], "w"))
PY
  predict "$OUT/cfg/agent_gold${fit}_model.yaml" "$(split_of "$held")" "$OUT/pred/gold_only_$held.jsonl"
  ensemble "$OUT/pred/gold_only_$held.jsonl" "$(split_of "$held")" "$OUT/pred/ensemble_gold_$held.jsonl"
done

python3 -m eval.metrics.nlu_table \
  --row "clinical (default)=$OUT/pred/clinical_all.jsonl" \
  --row "base SmolLM2=$OUT/pred/base_all.jsonl" \
  --row "adapter, gold only=$OUT/pred/gold_only_{dialog}.jsonl" \
  --row "adapter, silver=$OUT/pred/silver_all.jsonl" \
  --row "ensemble: clinical + base=$OUT/pred/ensemble_base_all.jsonl" \
  --row "ensemble: clinical + gold-only adapter=$OUT/pred/ensemble_gold_{dialog}.jsonl" \
  --row "ensemble: clinical + silver adapter=$OUT/pred/ensemble_silver_all.jsonl" | tee "$OUT/table.md"
