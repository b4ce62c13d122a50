"""Tiny random Llama + LoRA adapters for tests: real architectures, seconds to build, no hub.

The tokenizer is SmolLM2's (from the prepared embedded model) so prompts tokenize as
they do in production. head_dim is 64 because vLLM's CPU attention needs >= 32.
"""

from __future__ import annotations

import os
from pathlib import Path

from models.prepare import prepare

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def build_tiny_llama(directory: str | Path, seed: int = 0, tokenizer_dir: str | Path | None = None) -> Path:
    """Save a 2-layer LlamaForCausalLM (hidden 128, 2 heads of 64) with random fp32 weights + tokenizer."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

    out = Path(directory)
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir or prepare()))
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        dtype="float32",
    )
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    GenerationConfig(bos_token_id=config.bos_token_id, eos_token_id=config.eos_token_id,
                     pad_token_id=config.pad_token_id).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def build_tiny_lora(base_dir: str | Path, out_dir: str | Path, seed: int = 0, rank: int = 8) -> Path:
    """Save a LoRA adapter for ``base_dir`` whose A and B are random and non-zero (peft zeroes B by
    default, which would make every adapter identical to the base model)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(base_dir), dtype=torch.float32)
    config = LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=list(LORA_TARGETS), lora_dropout=0.0,
                        bias="none", task_type="CAUSAL_LM", init_lora_weights=False)
    model = get_peft_model(base, config)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_A" in name or "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.1)
    out = Path(out_dir)
    model.save_pretrained(out)
    return out
