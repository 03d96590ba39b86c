"""``model.classifier``: a sequence-classification reward model as a reward.

What TRL does with ``reward_funcs=["org/reward-model"]`` (and `trl grpo`'s
``reward_model_name_or_path``): the prompt and completion, rendered with the
reward model's chat template when they are messages, are scored in batches by
``AutoModelForSequenceClassification``; the reward is logit 0. The model loads
once per process, on that process's training device, in eval mode.
"""

from __future__ import annotations

import os
from pathlib import Path

_LOADED: dict = {}


def classifier(completions, prompts=None, id: str | None = None, batch_size: int = 16, max_length: int = 2048,
               **kwargs) -> list[float]:
    """Logit 0 of the sequence-classification model ``id`` (a hub id or a local
    folder) on prompt + completion, in batches of ``batch_size`` (each truncated to
    ``max_length`` tokens), on the training device."""
    if not id:
        raise ValueError("model.classifier needs id= (a hub id or a local folder of a sequence-classification model)")
    if not completions:
        if not Path(id).expanduser().is_dir() and os.environ.get("HF_HUB_OFFLINE") == "1":
            raise ValueError(f"id={id!r} is not a local folder and HF_HUB_OFFLINE=1 forbids downloading it")
        if batch_size < 1 or max_length < 1:
            raise ValueError(f"batch_size and max_length must be positive, got {batch_size} and {max_length}")
        return []
    import torch

    model, tokenizer, device = _load(id)
    texts = [_text(tokenizer, p, c) for p, c in zip(prompts or [None] * len(completions), completions)]
    scores: list[float] = []
    with torch.inference_mode():
        for i in range(0, len(texts), batch_size):
            batch = tokenizer(texts[i:i + batch_size], return_tensors="pt", padding=True, truncation=True,
                              max_length=max_length, add_special_tokens=False).to(device)
            scores += model(**batch).logits[:, 0].float().tolist()
    return scores


# grpo check does not load it (a function attribute, which mypy does not model)
classifier.grpo_needs_model = True  # type: ignore[attr-defined]


def _load(model_id: str):
    if model_id not in _LOADED:
        from accelerate import PartialState
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        device = PartialState().device
        tokenizer = AutoTokenizer.from_pretrained(model_id)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "right"
        model = AutoModelForSequenceClassification.from_pretrained(model_id, num_labels=1).to(device).eval()
        model.config.pad_token_id = tokenizer.pad_token_id
        _LOADED[model_id] = (model, tokenizer, device)
    return _LOADED[model_id]


def _text(tokenizer, prompt, completion) -> str:
    if isinstance(completion, list):  # messages
        messages = (prompt if isinstance(prompt, list) else []) + completion
        if getattr(tokenizer, "chat_template", None):
            return tokenizer.apply_chat_template(messages, tokenize=False)
        return "\n".join(str(m.get("content", "")) for m in messages)
    return (prompt if isinstance(prompt, str) else "") + str(completion)


__all__ = ["classifier"]
