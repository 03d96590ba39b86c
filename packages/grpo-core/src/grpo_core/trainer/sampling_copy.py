"""Sampling in a lower precision than training (``sampling.precision``), and the sampled
tokens' log-probabilities that TRL's importance-sampling correction needs.

:class:`SamplingCopy` keeps every weight of the model in the sampling dtype: the frozen
ones converted once, the adapted ones of a LoRA model merged into a buffer of that dtype
before each generation (:class:`~grpo_core.trainer.merged_lora.MergedLora`), trainable
ones (a full fine-tune, or adapters that cannot merge) converted before each generation.
Inside :meth:`SamplingCopy.swapped` each parameter reads its copy, so the whole decoding
runs in that dtype: the embedding's output, every product, the KV cache and the logits
(transformers casts the last to float32 before sampling); on a CPU the attention's own
products and softmax run in float32 (:func:`float32_attention`: torch's math kernel's
arithmetic, without its slow conversions) and the output head reads a contiguous input
(:func:`contiguous_head`). Not float32 activations under autocast: on a 2-core AVX-512 CPU
a bfloat16 ``generate`` of SmolLM2-135M took 0.55-0.61 of float32's time where autocast over
float32 weights gained little (issue 56). Outside, the model is exactly as it was: the optimizer's float32
weights are never rounded.

:func:`sampled_logprobs` records, while the model samples, the log-probability of each
drawn token under the distribution it was drawn from (after temperature and the other
logits processors), by wrapping ``torch.multinomial`` (transformers draws every sampled
token with it). :func:`per_row` cuts those columns to each completion's length. TRL then
compares them with the trainer's own log-probabilities of the same tokens
(``sampling_per_token_logps`` against ``old_per_token_logps``) and corrects the loss with
its own importance-sampling code (``vllm_importance_sampling_correction`` and its modes;
:mod:`grpo_core.trainer.trainer` says how that switch, named for vLLM, is reached).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

# sampling.precision: the dtype each name samples in ("float32": as the model is)
PRECISIONS = {"float32": None, "bf16": "bfloat16", "bfloat16": "bfloat16"}


class SamplingCopy:
    """``model``'s parameters in ``dtype`` while sampling; ``merge``: its LoRA adapters
    merged into buffers of ``dtype`` (None: no LoRA, or adapters that cannot merge: then
    they sample unmerged, converted)."""

    def __init__(self, model, dtype: str, merge=None):
        import torch

        self.model, self.merge = model, merge
        kind = getattr(torch, dtype)
        # the merged layers' base weights (their merged buffers stand in) and adapters (disabled)
        merged = {id(p) for layer in merge.layers for p in (layer.base_layer.weight, *layer.lora_A.parameters(),
                                                             *layer.lora_B.parameters())} if merge else set()
        self.frozen: list = []  # (parameter, copy): converted once
        self.live: list = []  # (parameter, buffer): converted before each generation
        for p in model.parameters():  # (tied weights come once)
            if id(p) in merged or not p.is_floating_point() or p.dtype == kind:
                continue
            if p.requires_grad:
                self.live.append((p, torch.empty_like(p, dtype=kind)))
            else:
                self.frozen.append((p, p.detach().to(kind)))

    def copy_bytes(self) -> int:
        """Bytes the copy holds beside the model (the merged buffers included)."""
        own = sum(c.numel() * c.element_size() for _, c in self.frozen + self.live)
        return own + (sum(b.numel() * b.element_size() for b in self.merge.buffers) if self.merge else 0)

    @contextlib.contextmanager
    def swapped(self) -> Iterator[None]:
        """Inside, every parameter reads its copy in the sampling dtype; outside, its own."""
        import torch

        saved = []
        try:
            with torch.no_grad():
                for p, buffer in self.live:
                    buffer.copy_(p)
                for p, copy in self.frozen + self.live:
                    saved.append((p, p.data))
                    p.data = copy
            with self.merge.merged() if self.merge is not None else contextlib.nullcontext(), \
                    float32_attention(), contiguous_head(self.model):
                yield
        finally:
            for p, data in saved:
                p.data = data


def attention_in_float32(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                         enable_gqa=False):
    """``scaled_dot_product_attention`` of bfloat16 (or float16) tensors computed in float32
    by two products and a softmax, the result in the inputs' dtype: what torch's math kernel
    computes, without its slow conversions (on a 2-core AVX-512 BF16 CPU the kernel took 1.1
    ms a layer at each decoding step of 32 rows, this 0.3 ms), and like it a result that does
    not follow the thread count. A row
    every key is masked from (left padding in a prompt) gets zeros, as torch's own kernels
    give it, not NaN."""
    import torch

    q, k, v = query.float(), key.float(), value.float()
    if enable_gqa and k.shape[-3] != q.shape[-3]:
        k = k.repeat_interleave(q.shape[-3] // k.shape[-3], dim=-3)
        v = v.repeat_interleave(q.shape[-3] // v.shape[-3], dim=-3)
    scores = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5 if scale is None else scale)
    if is_causal:  # torch's convention: the top-left triangle of (queries, keys)
        scores = scores.masked_fill(torch.ones(scores.shape[-2:], dtype=torch.bool).tril().logical_not(), -torch.inf)
    if attn_mask is not None:
        scores = scores.masked_fill(attn_mask.logical_not(), -torch.inf) if attn_mask.dtype == torch.bool \
            else scores + attn_mask.float()
    weights = scores.softmax(-1).nan_to_num(0.0)
    return torch.matmul(weights, v).to(query.dtype)


@contextlib.contextmanager
def float32_attention() -> Iterator[None]:
    """Inside, ``torch.nn.functional.scaled_dot_product_attention`` of bfloat16 or float16
    tensors on a CPU (the lower-precision copy's decoding) runs :func:`attention_in_float32`;
    any other call (float32, CUDA, dropout) goes to torch's own."""
    import torch

    original = torch.nn.functional.scaled_dot_product_attention

    def attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kwargs):
        if query.device.type != "cpu" or query.dtype not in (torch.bfloat16, torch.float16) or dropout_p \
                or set(kwargs) - {"enable_gqa"}:
            return original(query, key, value, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                            scale=scale, **kwargs)
        return attention_in_float32(query, key, value, attn_mask, dropout_p, is_causal, scale, **kwargs)

    torch.nn.functional.scaled_dot_product_attention = attention
    try:
        yield
    finally:
        torch.nn.functional.scaled_dot_product_attention = original


@contextlib.contextmanager
def contiguous_head(model) -> Iterator[None]:
    """Inside, the model's output projection reads its input made contiguous. The first
    decoding step projects the prompt's last position, a strided slice of the hidden states:
    torch multiplies a strided bfloat16 input by a copy of the 49,152 x 576 head per row (1.7
    s for 32 rows on 2 AVX-512 cores; contiguous, 9 ms, the same numbers). A head that is not a
    plain Linear, or already replaced, is left as it is."""
    import torch

    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None or type(head) is not torch.nn.Linear or "forward" in vars(head):
        yield
        return
    head.forward = lambda x: torch.nn.functional.linear(x.contiguous(), head.weight, head.bias)
    try:
        yield
    finally:
        del head.forward


class SampledLogprobs:
    """The columns :func:`sampled_logprobs` records: one (rows,) tensor per draw."""

    def __init__(self):
        self.columns: list = []

    def rows(self, lengths: list[int]) -> list[list[float]] | None:
        """Each row's log-probabilities, cut to its completion's length; None where the
        draws do not cover every completion (a generation that drew nothing: greedy)."""
        return per_row(self.columns, lengths)


@contextlib.contextmanager
def sampled_logprobs() -> Iterator[SampledLogprobs]:
    """Inside, each ``torch.multinomial(probs, 1)`` of a 2-D ``probs`` also records
    ``log(probs[row, drawn] / sum(probs[row]))`` for every row: the drawn token's
    log-probability under the distribution drawn from. Whatever ``torch.multinomial`` is
    on entry (torch's own, or :func:`~grpo_core.trainer.draws.cumulative_draws`') draws."""
    import torch

    original, record = torch.multinomial, SampledLogprobs()

    def multinomial(input, num_samples, *args, **kwargs):  # noqa: A002 - torch's name
        picked = original(input, num_samples, *args, **kwargs)
        if num_samples == 1 and isinstance(input, torch.Tensor) and input.dim() == 2 and picked.dim() == 2:
            probs = input.float()
            record.columns.append((probs.gather(1, picked) / probs.sum(-1, keepdim=True)).log().squeeze(1))
        return picked

    torch.multinomial = multinomial
    try:
        yield record
    finally:
        torch.multinomial = original


def per_row(columns: list, lengths: list[int]) -> list[list[float]] | None:
    """Row ``i``'s first ``lengths[i]`` recorded values; None where a row is longer than
    the columns recorded or the rows are not the columns' rows."""
    if not columns:
        return None
    import torch

    table = torch.stack(columns, dim=1).tolist()  # rows x draws
    if len(table) != len(lengths) or any(n > len(table[0]) for n in lengths):
        return None
    return [row[:n] for row, n in zip(table, lengths)]


__all__ = ["PRECISIONS", "SamplingCopy", "attention_in_float32", "contiguous_head", "float32_attention",
           "SampledLogprobs", "sampled_logprobs", "per_row"]
