"""Sampling from a LoRA model with its adapters merged into copies of the weights
they adapt (``model.merged_sampling``).

Decoding with peft's unmerged LoRA layers runs two more small matrix products per
adapted layer and token (420 for SmolLM2-135M with ``all-linear``); on a CPU, where
decoding a small model is bound by reading its weights, they cost 12-18 % of the
sampling time. Before each generation this computes ``W + scale * B @ A`` into a
buffer per adapted layer (allocated once: one more copy of the adapted weights),
points the layer's weight at it and samples with the adapters disabled; afterwards
the original tensors are put back, untouched (no merge and unmerge in place: that
leaves rounding drift in the frozen weights). What is sampled is what vLLM would
sample from the merged weights; LoRA dropout does not apply while sampling.

Only plain LoRA ``Linear`` layers merge (over ``nn.Linear`` or GPT-2's ``Conv1D``): DoRA, LoRA bias, other variants, adapted
embeddings, ``modules_to_save`` or quantized base weights leave sampling as it was
(``auto``), or are named in one warning (``true``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

# "auto" merges when the copy of the adapted weights fits in this many bytes
AUTO_BYTES = 1 << 30


@dataclass
class MergedLora:
    """The adapted layers of a peft LoRA model and their merged-weight buffers."""

    model: Any  # the PeftModel
    layers: list  # peft LoRA Linear layers with active adapters
    buffers: list  # one tensor per layer, the shape of its base weight

    @classmethod
    def of(cls, model, setting: bool | str, log: Callable[[str], None] = print,
           dtype: str | None = None) -> MergedLora | None:
        """The merge for ``model`` under ``model.merged_sampling`` (``auto``, True, False),
        or None where it does not apply (``auto``: quietly; True: with one warning).
        ``dtype`` ("bfloat16"): the merged copy in that dtype, for sampling under autocast
        to it (a CPU under bf16): half the bytes each decoded token reads, no cast per
        product; None: the dtype of the weights."""
        if setting is False or setting == "false":
            return None
        layers, why = lora_layers(model)
        if why is None and setting == "auto" and copy_bytes(layers, dtype) > AUTO_BYTES:
            why = f"the merged copy would take {copy_bytes(layers, dtype) / 2**30:.1f} GiB (auto merges up to 1 GiB)"
        if why is not None:
            if setting is True or setting == "true":
                log(f"warning: model.merged_sampling: sampling with the adapters unmerged, as {why}.")
            return None
        import torch

        kind = getattr(torch, dtype) if dtype else None
        return cls(model, layers, [torch.empty_like(m.base_layer.weight, dtype=kind) for m in layers])

    @contextlib.contextmanager
    def merged(self) -> Iterator[None]:
        """The model samples from the merged weights inside, from its own outside."""
        import torch

        saved = []
        try:
            with torch.no_grad():
                for layer, buffer in zip(self.layers, self.buffers):
                    weight = layer.base_layer.weight
                    _fill(buffer, layer)
                    saved.append((weight, weight.data))
                    weight.data = buffer
            with self.model.disable_adapter():
                yield
        finally:
            for weight, data in saved:
                weight.data = data


def _fill(buffer, layer) -> None:
    """``buffer`` = the layer's weight plus its active adapters' deltas. A buffer in a
    lower precision than the weight gets the sum taken in the weight's dtype (``B @ A``
    too, whatever autocast is on around it), rounded once."""
    import torch

    weight = layer.base_layer.weight
    exact = buffer.dtype == weight.dtype
    total = buffer.copy_(weight) if exact else weight.detach().clone()
    with contextlib.nullcontext() if exact else torch.autocast(weight.device.type, enabled=False):
        for name in layer.active_adapters:
            if name in layer.lora_A:
                total.add_(layer.get_delta_weight(name).to(total.dtype))
    if not exact:
        buffer.copy_(total)


def lora_layers(model) -> tuple[list, str | None]:
    """The LoRA layers of ``model`` that merge, or why it cannot merge as a whole."""
    try:
        from peft import PeftModel
        from peft.tuners.lora import LoraLayer
        from peft.tuners.lora.layer import Linear
    except ImportError:
        return [], "peft is not installed"
    if not isinstance(model, PeftModel):
        return [], "the model has no LoRA adapters"
    config = model.peft_config.get(model.active_adapter)
    if getattr(config, "modules_to_save", None):
        return [], "lora.modules_to_save is set (disabling the adapters would disable those modules too)"
    layers = [m for m in model.modules() if isinstance(m, LoraLayer)]
    for m in layers:
        why = _unsupported(m, Linear)
        if why is not None:
            return [], why
    layers = [m for m in layers if any(a in m.lora_A for a in m.active_adapters) and not m.merged]
    if not layers:
        return [], "no LoRA layer is active"
    return layers, None


def _unsupported(layer, linear_type) -> str | None:
    import torch

    if type(layer) is not linear_type:
        return f"{type(layer).__name__} layers (only plain LoRA Linear layers merge)"
    base = layer.base_layer
    weight = getattr(base, "weight", None)
    if not isinstance(weight, torch.Tensor) or not weight.is_floating_point():
        return "the base weights are quantized"
    if not isinstance(base, torch.nn.Linear) and type(base).__name__ != "Conv1D":  # GPT-2's (fan_in_fan_out)
        return f"the adapted layers are {type(base).__name__} (only Linear and Conv1D layers merge)"
    for name in layer.active_adapters:
        if getattr(layer, "use_dora", {}).get(name) or getattr(layer, "lora_bias", {}).get(name) \
                or name in getattr(layer, "lora_variant", {}):
            return "an adapter uses DoRA, a LoRA bias or another variant"
    return None


def copy_bytes(layers: list, dtype: str | None = None) -> int:
    """Bytes of the merged copy of ``layers``' weights, in ``dtype`` (None: theirs)."""
    import torch

    itemsize = getattr(torch, dtype).itemsize if dtype else None
    return sum(m.base_layer.weight.numel() * (itemsize or m.base_layer.weight.itemsize) for m in layers)


__all__ = ["MergedLora", "lora_layers", "copy_bytes", "AUTO_BYTES"]
