"""Training data for ``medhx train``: tokenised examples, the completion-only collator, the valid token loss.

Prompts are rendered by ``models.prompts`` and encoded exactly as inference encodes them; the target is
appended and is the only part that carries labels (-100 on the prompt). The collator left-pads, so every
target sits in the last columns of the batch: it cuts the labels to those columns and asks the model for
logits there only (``logits_to_keep``), so the model's own loss (the one ``transformers.Trainer`` uses, and
peft's AdaLoRA adds its regulariser to) never projects the prompt onto the vocabulary.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from agent.core.data import Example
from models import prompts

log = logging.getLogger(__name__)


def tokenize_example(example: Example, tokenizer: Any) -> tuple[list[int], list[int]]:
    """``(input_ids, labels)``: prompt tokens exactly as inference encodes them, labels -100 there."""
    prompt, completion = prompts.render_training_text(example, tokenizer)
    prompt_ids = prompts.encode_prompt(prompt, tokenizer)
    target_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    return prompt_ids + target_ids, [-100] * len(prompt_ids) + target_ids


def build_features(examples: list[Example], tokenizer: Any, max_length: int) -> tuple[list[dict], int]:
    """Tokenised examples and how many were skipped for exceeding ``max_length``."""
    features, skipped = [], 0
    for ex in examples:
        ids, labels = tokenize_example(ex, tokenizer)
        if len(ids) > max_length:
            skipped += 1
            log.warning("skipping %s example %s/%s: %d tokens > max_length %d", ex.task, ex.dialog_id, ex.uttr_id,
                        len(ids), max_length)
            continue
        features.append({"input_ids": ids, "labels": labels, "task": ex.task})
    return features, skipped


def collate(batch: list[dict], pad_id: int) -> dict[str, Any]:
    """Left-padded batch: every sequence ends at the last column, so the targets sit in the last columns and
    only those need logits (``logits_to_keep``). Position ids restart at 0 after the padding, as at inference."""
    import torch

    width = max(len(f["input_ids"]) for f in batch)
    ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    labels = torch.full((len(batch), width), -100, dtype=torch.long)
    mask = torch.zeros((len(batch), width), dtype=torch.long)
    for i, f in enumerate(batch):
        n = len(f["input_ids"])
        ids[i, width - n:] = torch.tensor(f["input_ids"])
        labels[i, width - n:] = torch.tensor(f["labels"])
        mask[i, width - n:] = 1
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    return {"input_ids": ids, "labels": labels, "attention_mask": mask, "position_ids": positions}


def n_target_tokens(feature: dict) -> int:
    """Tokens that carry a loss: the label of position t is predicted from position t-1, so the first never does."""
    return sum(1 for x in feature["labels"][1:] if x != -100)


def target_span(feature: dict) -> int:
    """How many trailing positions hold targets (from the first target token to the end)."""
    labels = feature["labels"]
    first = next((i for i, x in enumerate(labels) if x != -100), len(labels))
    return len(labels) - first


@dataclass
class CompletionCollator:
    """The Trainer's ``data_collator``: left-padded batches whose labels cover the target columns only.

    With ``trim`` the batch carries ``logits_to_keep = span + 1`` (the longest target span in the batch plus
    the last prompt position, which predicts the first target token) and the labels cut to those columns, so
    the model's causal-LM loss (shifted inside the model) sees exactly the target tokens. Prompt learning
    (prompt tuning) prepends virtual tokens to the labels inside peft, so it gets the full-width batch and no
    position ids (peft numbers the positions itself)."""

    pad_id: int
    trim: bool = True

    def __call__(self, batch: list[dict]) -> dict[str, Any]:
        out = collate(batch, self.pad_id)
        if not self.trim:
            out.pop("position_ids")
            return out
        keep = min(max(target_span(f) for f in batch) + 1, out["input_ids"].shape[1])
        out["labels"] = out["labels"][:, -keep:]
        out["logits_to_keep"] = keep
        return out


class FeatureDataset:
    """A map-style dataset over tokenised features (what ``Trainer`` samples from)."""

    def __init__(self, features: list[dict]):
        self.features = features

    def __len__(self) -> int:
        return len(self.features)

    def __getitem__(self, i: int) -> dict:
        return self.features[i]


# --------------------------------------------------------------------------- plain token loss (valid split)


def summed_target_loss(model: Any, batch: dict[str, Any], keep: int) -> Any:
    """Sum of target-token cross-entropies, computing logits for the last ``keep`` + 1 positions only.
    Plain cross-entropy from the logits: no regulariser a peft method adds to the model's own loss."""
    import torch.nn.functional as F

    labels = batch["labels"]
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    peft_cfg = getattr(model, "active_peft_config", None)
    if peft_cfg is not None and peft_cfg.is_prompt_learning:
        inputs.pop("position_ids")  # peft prepends virtual tokens and numbers positions itself
    logits = model(**inputs, logits_to_keep=keep + 1).logits  # positions W-keep-1 .. W-1
    pred = logits[:, :-1, :].float()  # position t predicts token t+1
    gold = labels[:, -keep:]
    return F.cross_entropy(pred.reshape(-1, pred.size(-1)), gold.reshape(-1), ignore_index=-100, reduction="sum")


def group_loss(model: Any, group: list[dict], micro: int, pad_id: int, device: Any, backward: bool = False
               ) -> tuple[float, int]:
    """Target-token loss summed over ``group`` (in micro-batches) and divided by the group's target tokens,
    as one big batch would give. Returns ``(mean token loss, target tokens)``."""
    import torch

    tokens = sum(n_target_tokens(f) for f in group)
    if tokens == 0:
        return 0.0, 0
    total = 0.0
    for start in range(0, len(group), micro):
        chunk = group[start:start + micro]
        if not any(n_target_tokens(f) for f in chunk):
            continue
        batch = {k: v.to(device) for k, v in collate(chunk, pad_id).items()}
        keep = max(target_span(f) for f in chunk)
        with torch.set_grad_enabled(backward):
            loss = summed_target_loss(model, batch, keep) / tokens
        if backward:
            loss.backward()
        total += float(loss.detach())
    return total, tokens


def token_loss(model: Any, features: list[dict], micro: int, pad_id: int, device: Any) -> float | None:
    """Mean target-token cross-entropy over ``features`` (no gradient; the model is left in eval mode)."""
    if not features:
        return None
    model.eval()
    loss_sum, tokens = 0.0, 0
    for start in range(0, len(features), 16):
        loss, n = group_loss(model, features[start:start + 16], micro, pad_id, device)
        loss_sum += loss * n
        tokens += n
    return loss_sum / tokens if tokens else None
