"""Each group's prompt computed once in the training pass.

The completions of a GRPO group share their prompt, and TRL's log-probability pass
(the loss's forward and backward, the reference model's and the old policy's
forwards) runs the whole ``prompt + completion`` row for every completion: a group
of 4 computes its prompt 4 times. On the quickstart the prompt is 47 of a row's ~95
tokens (rows padded to the batch's longest completion), so half that pass's work repeats.

:func:`shared_prompt` runs the backbone (the module TRL's fused LM head calls) twice
instead: once over each distinct prompt, keeping its key/value cache, and once over
every row's completion tokens, attending to its prompt's cache (copied to each row
by index, so gradients flow back to the prompt's one computation and add up there,
as they add up over its copies in the plain pass). Positions are the plain pass's
(TRL passes none: 0 .. length - 1 in both), and the prompt's hidden states are put
back in front, so TRL's head sees the tensor it would have seen; the log-probabilities
agree with the plain pass to float rounding (tested). (With dropout in training mode a
group's completions share one dropout mask on their prompt instead of one each: the same
expectation, another variance.)

It steps aside (the plain pass runs) where it cannot be the same computation or
cannot save anything: gradient checkpointing (no cache is kept), inputs other than
ids and a mask (images, MoE router logits), a sliding-window layer or a
vision-language config (:func:`full_attention`, decided before any work), no prompt
shared within the micro-batch. ``model.shared_prompt: auto`` uses it on a CPU, for the
architectures in :data:`CHECKED` (where it was measured: bench/shared_prompt.py);
``true`` anywhere.
"""

from __future__ import annotations

import inspect
from contextlib import contextmanager

import torch

# model_type values whose attention is plain causal attention over a DynamicCache,
# positions counted from the cache (the equality test runs on llama and qwen2 shapes)
CHECKED = frozenset({"llama", "qwen2", "qwen3", "mistral"})


def backbone_of(model):
    """The causal LM's backbone module TRL's fused head calls, or None."""
    inner = getattr(model, "module", model)  # DDP
    if hasattr(inner, "get_base_model"):  # PEFT
        inner = inner.get_base_model()
    backbone = getattr(inner, "base_model", None)
    return backbone if isinstance(backbone, torch.nn.Module) and backbone is not inner else None


def usable(model, setting: bool | str, device: str = "cpu") -> bool:
    """``model.shared_prompt`` for this model: false, true (any device) or auto (on a CPU,
    the architectures in :data:`CHECKED`); either way only where :func:`full_attention`."""
    config = getattr(getattr(model, "module", model), "config", None)
    if setting is False or setting == "false" or config is None or not full_attention(config):
        return False
    return setting is True or setting == "true" or (device == "cpu" and config.model_type in CHECKED)


@contextmanager
def shared_prompt(model, prompt_length: int, enabled: bool = True):
    """Inside it, the backbone of ``model`` computes rows' shared prompts (their first
    ``prompt_length`` tokens) once; outside, and where it steps aside, it is as it was."""
    backbone = backbone_of(model) if enabled and prompt_length > 0 else None
    if (backbone is None or (backbone.training and getattr(backbone, "gradient_checkpointing", False))
            or not full_attention(getattr(backbone, "config", None))):
        yield
        return
    saved = backbone.__dict__.get("forward")  # an instance forward (accelerate's hooks) is kept
    plain = backbone.forward
    cache_name = "cache" if "cache" in inspect.signature(type(backbone).forward).parameters else "past_key_values"

    def forward(*args, **kwargs):
        split = _split(prompt_length, args, kwargs)
        if split is None:
            return plain(*args, **kwargs)
        unique, inverse = split
        ids, mask = kwargs["input_ids"], kwargs["attention_mask"]
        first = plain(input_ids=unique[:, :prompt_length], attention_mask=unique[:, prompt_length:], use_cache=True)
        cache = getattr(first, "cache", None) or getattr(first, "past_key_values", None)
        if cache is None:
            return plain(*args, **kwargs)
        cache.reorder_cache(inverse)  # each row's own copy of its prompt's keys and values (index_select)
        rest = plain(input_ids=ids[:, prompt_length:], attention_mask=mask, use_cache=True, **{cache_name: cache})
        hidden = torch.cat([first.last_hidden_state.index_select(0, inverse), rest.last_hidden_state], dim=1)
        return type(rest)(last_hidden_state=hidden)

    backbone.forward = forward
    try:
        yield
    finally:
        if saved is None:
            del backbone.forward
        else:
            backbone.forward = saved


def full_attention(config) -> bool:
    """A text-only model whose cache keeps every position: no sliding-window layer (that
    cache drops positions), no vision-language config (Qwen2-VL and its kind count
    positions over the whole mask, prompt and completion together)."""
    if config is None or config.get_text_config() is not config:
        return False
    from transformers.cache_utils import DynamicCache

    return not any(DynamicCache(config=config).is_sliding)


def _split(prompt_length: int, args, kwargs):
    """(the distinct prompts with their masks, each row's index among them), or None:
    the plain pass (other inputs than ids and a mask, nothing shared, no completion)."""
    ids, mask = kwargs.get("input_ids"), kwargs.get("attention_mask")
    other = {k for k, v in kwargs.items() if v is not None and k not in ("input_ids", "attention_mask", "use_cache")}
    if args or other - {"return_dict"} or ids is None or mask is None:  # (PEFT passes the others as None)
        return None
    if mask.dim() != 2 or ids.size(1) <= prompt_length:
        return None
    heads = torch.cat([ids[:, :prompt_length], mask[:, :prompt_length].to(ids.dtype)], dim=1)
    unique, inverse = torch.unique(heads, dim=0, return_inverse=True)
    if unique.size(0) == ids.size(0):
        return None
    return unique, inverse


__all__ = ["CHECKED", "backbone_of", "full_attention", "shared_prompt", "usable"]
