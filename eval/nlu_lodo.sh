#!/usr/bin/env bash
# The README's NLU table, leave-one-dialogue-out on the two shared dialogues (115, 317), end to end:
#   bash eval/nlu_lodo.sh [OUT]          (OUT defaults to runs/nlu_lodo; about 2 h on a 2-core CPU)
# Steps a finished run left behind are reused (delete OUT to start over). Stages:
#   clinical, base SmolLM2 and ensemble(base) need no training; gold-only adapters are fitted on one dialogue
#   and scored on the other; the silver adapter is fitted on clinical-NLU labels of the OSCE transcripts
#   (holdout and both shared dialogues' sources excluded) and scored on both; each adapter is also scored
#   inside the ensemble.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/nlu_lodo}
mkdir -p "$OUT/pred" "$OUT/cfg"
split_of() { [[ $1 == 115 ]] && echo train || echo valid; }
other_of() { [[ $1 == 115 ]] && echo 317 || echo 115; }

# agent config for NAME: nlu KIND, serving ADAPTER (a directory, or none) on its own PORT
agent_cfg() {  # NAME KIND ADAPTER PORT
  python3 - "$OUT/cfg" "$@" <<'PY'
import sys, yaml
d, name, kind, adapter, port = sys.argv[1:]
serve = yaml.safe_load(open("configs/serve.yaml"))
serve.update(port=int(port), adapters={"nlu": None if adapter == "none" else adapter, "pol": None, "nlg": None})
yaml.safe_dump(serve, open(f"{d}/serve_{name}.yaml", "w"))
agent = yaml.safe_load(open("configs/ensemble.yaml"))
agent["backends"]["local"].update(url=f"http://127.0.0.1:{port}", launch=f"{d}/serve_{name}.yaml")
agent["nlu"].update(kind=kind, adapter=None if adapter == "none" else "nlu")
yaml.safe_dump(agent, open(f"{d}/agent_{name}_{kind}.yaml", "w"))
PY
}
predict() {  # CONFIG DIALOG OUTNAME
  local f="$OUT/pred/$3_$2.jsonl"
  [[ -s $f ]] || medhx predict --config "$1" --task nlu --split "$(split_of "$2")" --out "$f" --no-progress
}

for d in 115 317; do predict configs/default.yaml $d clinical; done
agent_cfg base model none 8101; agent_cfg base ensemble none 8101
for d in 115 317; do predict "$OUT/cfg/agent_base_model.yaml" $d base; done

# gold-only adapters: fit on one dialogue (the paper's settings), score on the other
for fit in 115 317; do
  held=$(other_of $fit); data="$OUT/data/fit$fit"
  mkdir -p "$data"
  cp data/meditod/dialogs.json "$data/"; echo "[\"$fit\"]" > "$data/train_ids.json"
  echo "[\"$held\"]" > "$data/valid_ids.json"; echo "[]" > "$data/test_ids.json"
  [[ -f $OUT/gold_fit$fit/adapter_config.json ]] || medhx train --config configs/train/nlu.yaml \
      --set data="$data" --set output_dir="$OUT/gold_fit$fit" --set eval.enabled=false
  agent_cfg gold$fit model "$OUT/gold_fit$fit" 8102; agent_cfg gold$fit ensemble "$OUT/gold_fit$fit" 8102
  predict "$OUT/cfg/agent_gold${fit}_model.yaml" "$held" gold_only
  predict "$OUT/cfg/agent_gold${fit}_ensemble.yaml" "$held" ensemble_gold
done

# silver adapter: never sees 115/317 (their source transcripts are excluded), so it is scored on both
[[ -f runs/silver/all/dialogs.json ]] || medhx silver --out runs/silver/all --no-progress
[[ -f runs/nlu-silver/adapter_config.json ]] || medhx train --config configs/train/nlu_silver.yaml
agent_cfg silver model runs/nlu-silver 8103; agent_cfg silver ensemble runs/nlu-silver 8103
for d in 115 317; do predict "$OUT/cfg/agent_silver_model.yaml" $d silver; predict "$OUT/cfg/agent_silver_ensemble.yaml" $d ensemble_silver; done

for d in 115 317; do predict "$OUT/cfg/agent_base_ensemble.yaml" $d ensemble_base; done

python3 -m eval.nlu_table --batched "base SmolLM2" --batched "adapter, gold only" --batched "adapter, silver" \
  --row "clinical (default)=$OUT/pred/clinical_{dialog}.jsonl" \
  --row "base SmolLM2=$OUT/pred/base_{dialog}.jsonl" \
  --row "adapter, gold only=$OUT/pred/gold_only_{dialog}.jsonl" \
  --row "adapter, silver=$OUT/pred/silver_{dialog}.jsonl" \
  --row "ensemble: clinical + base=$OUT/pred/ensemble_base_{dialog}.jsonl" \
  --row "ensemble: clinical + gold-only adapter=$OUT/pred/ensemble_gold_{dialog}.jsonl" \
  --row "ensemble: clinical + silver adapter=$OUT/pred/ensemble_silver_{dialog}.jsonl" | tee "$OUT/table.md"
