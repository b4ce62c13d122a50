#!/bin/bash
# Prepares vLLM's CUDA build for a lent GPU machine that cannot reach a package index and takes 64 MiB a call
# (the `device` tool of this workplace). Run here, from the repository root:  bash deploy/gpu/vllm_carry.sh
# It writes .whl/a, .whl/b, .whl/c (ignored by git); then three device calls, back to back (a warm machine keeps
# /tmp for 30 s between calls):
#   run carry=[.whl/a]: mkdir -p /tmp/ch && cp .whl/a/* /tmp/ch/
#   run carry=[.whl/b]: cp .whl/b/* /tmp/ch/
#   run carry=[.whl/c]: bash deploy/gpu/vllm_device.sh        (env: GEN_LIMIT, GPU_TIMEOUT, EAGER=1)
# Why this shape: vllm 0.20-0.26 pin torch 2.11.0 and are built for CUDA 13, the image's torch 2.11.0+cu130, so
# nothing of torch has to travel. 0.26.0's wheel is 290 MiB; without FlashAttention 2 (Hopper runs FA3), the MoE
# kernels, the Rust frontend (used only with VLLM_USE_RUST_FRONTEND) and DeepGEMM's headers it is 68 MiB as xz.
# Its dependencies missing from the image add 50 MiB. GPU-kernel packages the run does not import stay behind
# (flashinfer: VLLM_USE_FLASHINFER_SAMPLER=0; tilelang, cutlass-dsl, quack, humming, torchcodec, ...).
set -euo pipefail
VLLM=${VLLM:-0.26.0}
W=$(mktemp -d)
PLAT=(--python-version 3.12 --implementation cp --only-binary=:all: --platform manylinux2014_x86_64)
for n in 17 24 26 27 28 31 34 35 36 38 39; do PLAT+=(--platform "manylinux_2_${n}_x86_64"); done
pip download -q --no-deps "${PLAT[@]}" -d "$W" "vllm==$VLLM"
mkdir -p "$W/x" && (cd "$W/x" && unzip -q "$W"/vllm-*.whl)
rm -f "$W"/x/vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so "$W"/x/vllm/_moe_C_stable_libtorch.abi3.so "$W"/x/vllm/vllm-rs
rm -rf "$W"/x/vllm/third_party/deep_gemm/include "$W"/x/vllm/third_party/fmha_sm100
(cd "$W/x" && tar cf - vllm vllm-*.dist-info | xz -T0 -9 > "$W/vllm.tar.xz")
# the pure-Python and small compiled dependencies, resolved for the device's Python; the image's own are dropped
unzip -p "$W"/vllm-*.whl '*/METADATA' | sed -n 's/^Requires-Dist: //p' | grep -v 'extra ==' \
  | grep -viE '^(torch|torchaudio|torchvision|torchcodec|PyNvVideoCodec|flashinfer|tilelang|nvidia-|nvtx|fastsafetensors|quack|tokenspeed|humming|numba|opentelemetry|mcp|anthropic)' \
  > "$W/req.txt"
echo "model-hosting-container-standards<1" >> "$W/req.txt"  # the LoRA routes import it
pip install -q --dry-run --ignore-installed --report "$W/report.json" "${PLAT[@]}" --target "$W/t" -r "$W/req.txt"
python3 - "$W" <<'PY'
import json, sys
w = sys.argv[1]
image = {  # packages of the device image (/work/.library/device/KINDS.md) that vLLM's resolution also lists
    "aiohappyeyeballs", "aiohttp", "aiosignal", "annotated-doc", "anyio", "attrs", "certifi", "charset-normalizer",
    "click", "cloudpickle", "cuda-bindings", "cuda-pathfinder", "einops", "filelock", "frozenlist", "fsspec", "h11",
    "hf-xet", "httpcore", "httpx", "huggingface-hub", "idna", "jinja2", "markdown-it-py", "markupsafe", "mdurl",
    "mpmath", "multidict", "networkx", "ninja", "numpy", "opencv-python-headless", "packaging", "pillow",
    "prometheus-client", "propcache", "protobuf", "psutil", "py-cpuinfo", "pygments", "pyyaml", "regex", "requests",
    "rich", "safetensors", "sentencepiece", "setuptools", "shellingham", "sympy", "tiktoken", "tokenizers", "torch",
    "tqdm", "triton", "typer", "typing-extensions", "urllib3", "uvloop", "yarl"}
skip = {"fastapi-cli", "fastapi-cloud-cli", "fastar", "rignore", "sentry-sdk", "agent-detector", "detect-installer",
        "truststore", "rich-toolkit"}  # fastapi[standard]'s command-line tools
rows = []
for item in json.load(open(f"{w}/report.json"))["install"]:
    name = item["metadata"]["name"].lower().replace("_", "-")
    if name not in image and name not in skip and not name.startswith("nvidia-"):
        rows.append(f"{name}=={item['metadata']['version']}")
open(f"{w}/deps.txt", "w").write("\n".join(rows + ["transformers==5.19.0", "peft==0.21.2"]) + "\n")
PY
pip download -q --no-deps "${PLAT[@]}" -d "$W/deps" -r "$W/deps.txt"
rm -rf .whl/a .whl/b .whl/c && mkdir -p .whl/a .whl/b .whl/c/smol
split -b 52M "$W/vllm.tar.xz" "$W/vllm.part."
mv "$W"/vllm.part.aa .whl/a/ && mv "$W"/vllm.part.ab .whl/b/
left=$((50 * 1048576 - $(stat -c %s .whl/b/vllm.part.ab)))
for f in $(ls -S "$W"/deps/*.whl); do
  s=$(stat -c %s "$f"); if [ "$s" -le "$left" ]; then cp "$f" .whl/b/; left=$((left - s)); else cp "$f" .whl/c/; fi
done
# SmolLM2-135M's config and tokenizer (the weights stay here: see eval/runs/gpu_check.py --random-base)
base=$(python3 -c "from models.prepare import resolve_base_model as r; print(r('smollm2'))")
cp "$base"/{chat_template.jinja,config.json,generation_config.json,tokenizer.json,tokenizer_config.json} .whl/c/smol/
du -sm .whl/*
rm -rf "$W"
