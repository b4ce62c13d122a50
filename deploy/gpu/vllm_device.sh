#!/bin/bash
# Device side of deploy/gpu/vllm_carry.sh (third call): assemble vLLM from the carried parts, install the
# dependencies beside the image's torch, then run the vLLM part of eval/runs/gpu_check.py. Results under $OUT.
set -o pipefail
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export VLLM_USE_FLASHINFER_SAMPLER=0  # vLLM's V2 model runner imports flashinfer for its sampler unless told not to
R=$PWD
mkdir -p /tmp/ch /tmp/site && cp .whl/c/*.whl /tmp/ch/ || exit 1
t0=$(date +%s)
if [ ! -d /tmp/site/vllm ]; then cat /tmp/ch/vllm.part.aa /tmp/ch/vllm.part.ab | xz -d -T0 | tar x -C /tmp/site || exit 1; fi
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site /tmp/ch/*.whl 2>&1 \
  | grep -v WARNING | tail -3
echo "install $(( $(date +%s) - t0 )) s"
export PYTHONPATH=/tmp/site:$R
nvidia-smi -L
python3 -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)" || exit 1
extra=()
[ -n "${EAGER:-}" ] && extra+=(--eager)
timeout "${GPU_TIMEOUT:-470}" python3 -m eval.runs.gpu_check --out /tmp/g --only vllm --random-base .whl/c/smol \
  --gen-limit "${GEN_LIMIT:-32}" "${extra[@]}" 2>&1 | tr '\r' '\n' | grep -v 'it/s]$' | tee "$OUT/log"
cp /tmp/g/gpu_check.json /tmp/g/bench_speed/report.json /tmp/g/bench_speed/bench_speed.png "$OUT/" 2>/dev/null
tail -60 /tmp/g/serve.log > "$OUT/serve_tail.log" 2>/dev/null
exit 0
