"""grpo's own decoding loop (``model.decode_loop: grpo``): one decoding step, the draw included,
as one function that can be captured whole (``torch.compile``, CUDA graphs on a GPU), and no
host synchronisation per token.

transformers' ``generate`` runs, around its compiled forward, a 4-D mask built on the host
side, each logits processor, ``torch.multinomial``, the stopping criteria and a
``unfinished_sequences.max() == 0`` check that waits for the GPU at every token: on an H200 a
0.5B model decoded 16 rows at 9.5 ms a token where reading its weights takes 0.23 ms (issue
56). Here one step is: the model's forward on the last token over a static cache (the 2-D
mask and positions kept as fixed-shape tensors), the logits processors TRL's sampling sets
(temperature, top-k, top-p, min-p; invalid values replaced), the draw by inverse transform
from one uniform number per row drawn before the loop (so the step holds no random-number
state a graph would freeze), the drawn token's log-probability (what TRL's importance-sampling
correction reads), and the finished rows' padding. Whether every row has finished is asked
every ``check_every`` tokens, not at each.

Settings it does not do (repetition penalty, beam search, constraints, stop strings) return
None from :meth:`DecodeLoop.reason` and sampling goes through ``generate`` as before.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

CHECK_EVERY = 8  # tokens decoded between two checks of whether every row has finished


@dataclass(frozen=True)
class Draw:
    """The sampling settings the loop applies to each step's logits (TRL's generation config's)."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    greedy: bool = False

    @classmethod
    def of(cls, config) -> Draw:
        return cls(temperature=float(1.0 if config.temperature is None else config.temperature),
                   top_k=int(config.top_k or 0),
                   top_p=float(1.0 if config.top_p is None else config.top_p), min_p=float(config.min_p or 0.0),
                   greedy=not config.do_sample)


# Settings whose processor or mode the loop does not have, each with its neutral value: any
# other value sends sampling to generate (None, False and an empty list are neutral too)
NEUTRAL = (("num_beams", 1), ("num_beam_groups", 1), ("num_return_sequences", 1), ("penalty_alpha", None),
           ("repetition_penalty", 1.0), ("encoder_repetition_penalty", 1.0), ("no_repeat_ngram_size", 0),
           ("encoder_no_repeat_ngram_size", 0), ("bad_words_ids", None), ("force_words_ids", None),
           ("constraints", None), ("sequence_bias", None), ("suppress_tokens", None),
           ("begin_suppress_tokens", None), ("forced_bos_token_id", None), ("forced_eos_token_id", None),
           ("exponential_decay_length_penalty", None), ("min_length", 0), ("min_new_tokens", 0),
           ("typical_p", 1.0), ("epsilon_cutoff", 0.0), ("eta_cutoff", 0.0), ("top_h", None),
           ("guidance_scale", 1.0), ("watermarking_config", None), ("stop_strings", None), ("max_time", None),
           ("dola_layers", None), ("diversity_penalty", 0.0), ("low_memory", None))


def effective(model, config):
    """``config`` as ``generate`` completes it: unset fields from the model's own generation
    config (a model may ship min_p or no_repeat_ngram_size there), then transformers' defaults."""
    import copy

    config = copy.deepcopy(config)
    own = getattr(model, "generation_config", None)
    if own is not None:
        config.update(**own.to_dict(), defaults_only=True, allow_custom_entries=True)
        defaults = getattr(own, "_get_default_generation_params", None)
        if defaults is not None:
            config.update(**defaults(), defaults_only=True)
    return config


def unsupported(config) -> str | None:
    """Why the loop cannot sample as ``config`` (as :func:`effective` completes it) asks; None: it can."""
    for name, neutral in NEUTRAL:
        value = getattr(config, name, None)
        if value is not None and value is not False and value != [] and value != neutral:
            return f"{name} {value!r}"
    if config.do_sample and config.temperature is not None and config.temperature <= 0:
        return f"temperature {config.temperature!r}"
    if not config.max_new_tokens:
        return "max_new_tokens unset"
    return None


def uncompilable(model) -> str | None:
    """Why the loop's step should not be compiled for ``model`` (None: it can be): what
    ``generate`` itself does not compile, and what would recompile at every token."""
    config = getattr(model, "config", None)
    attention = str(getattr(config, "_attn_implementation", None) or "")
    quantizer = getattr(model, "hf_quantizer", None) or getattr(getattr(model, "base_model", None), "hf_quantizer",
                                                                 None)
    if attention.startswith("flash_attention"):
        return f"attention {attention}"
    if quantizer is not None and not getattr(quantizer, "is_compileable", False):
        return "a quantization that does not compile"
    layers = getattr(config, "layer_types", None) or []
    if "sliding_attention" in layers or (getattr(config, "use_sliding_window", False)
                                         and getattr(config, "sliding_window", None)):
        return "sliding-window attention"
    return None


def filtered(logits, draw: Draw):
    """Float32 logits after the processors, as transformers applies them when sampling:
    invalid values replaced, temperature, top-k, top-p, min-p (removed entries at -inf)."""
    import torch

    logits = logits.float()
    logits = torch.where(torch.isnan(logits), torch.zeros_like(logits), logits)
    logits = logits.clamp(min=torch.finfo(logits.dtype).min, max=torch.finfo(logits.dtype).max)
    if draw.greedy:
        return logits
    if draw.temperature != 1.0:
        logits = logits / draw.temperature
    if 0 < draw.top_k < logits.shape[-1]:
        kth = torch.topk(logits, draw.top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, -float("inf"))
    if draw.top_p < 1.0:
        ordered, order = torch.sort(logits, descending=False, dim=-1)
        cumulative = ordered.softmax(dim=-1).cumsum(dim=-1)
        remove = cumulative <= (1 - draw.top_p)
        remove[..., -1:] = False  # keep at least one
        logits = logits.masked_fill(remove.scatter(1, order, remove), -float("inf"))
    if draw.min_p > 0.0:
        probs = logits.softmax(dim=-1)
        remove = probs < draw.min_p * probs.amax(dim=-1, keepdim=True)
        logits = logits.masked_fill(remove, -float("inf"))
    return logits


def pick(logits, uniform, draw: Draw):
    """Each row's token and its log-probability under the distribution it was drawn from:
    the token whose interval of the running sum holds ``uniform`` (rows,), in ``[0, 1)``."""
    import torch

    logits = filtered(logits, draw)
    logprobs = logits.log_softmax(dim=-1)
    if draw.greedy:
        token = logits.argmax(dim=-1, keepdim=True)
    else:
        running = logprobs.exp().cumsum(dim=-1)
        point = uniform.to(running.dtype).unsqueeze(1) * running[:, -1:]
        token = torch.searchsorted(running, point, right=True).clamp_(max=logits.shape[-1] - 1)
        # a float32 running sum need not rise to the last bit: a filtered-out entry (-inf) must
        # never be drawn (its -inf log-probability would make TRL's correction NaN)
        token = torch.where(logprobs.gather(1, token).isfinite(), token, logits.argmax(dim=-1, keepdim=True))
    return token, logprobs.gather(1, token)


class DecodeLoop:
    """Samples ``max_new_tokens`` for a left-padded batch over a static cache, one compiled
    step per token. ``compile``: None decodes eagerly; a ``torch.compile`` mode
    ("reduce-overhead": CUDA graphs) or a backend name for tests ("aot_eager")."""

    def __init__(self, model, *, compile: str | None = None, check_every: int = CHECK_EVERY):
        self.model = model
        self.compile = compile
        self.check_every = max(1, int(check_every))
        self.steps_run = 0  # decoding steps the last call ran (tests, benchmarks)
        self._compiled: dict = {}
        self._kept: dict = {}  # the static cache and the step's buffers, kept from call to call
        self.said: set[str] = set()  # reasons for sampling through generate, said once each

    def declines(self, config) -> str | None:
        """Why this loop does not sample as ``config`` asks (None: it does)."""
        why = unsupported(config)
        if why is None and self.compile is not None:
            why = uncompilable(self.model)
        return why

    def generate(self, input_ids, attention_mask, config, *, eos: list[int], pad: int, uniforms=None,
                 logprobs_out: list | None = None):
        """``input_ids`` (rows x prompt, left-padded) followed by up to ``config.max_new_tokens``
        sampled tokens, ``pad`` after each row's end-of-sequence token (what ``generate``
        returns). ``uniforms`` (new tokens x rows; tests): the draws' uniform numbers.
        ``logprobs_out``: receives the (rows x new tokens) drawn tokens' log-probabilities."""
        import torch

        draw = Draw.of(config)
        rows, prompt = input_ids.shape
        limit = int(config.max_new_tokens)
        length = max(int(getattr(config, "max_cache_len", 0) or 0), prompt + limit)
        cache, b = self._buffers(rows, length, limit, input_ids.device, attention_mask.dtype)
        positions = b.fill(input_ids, attention_mask, eos, pad, uniforms)
        with torch.no_grad():
            logits = self.model(input_ids=input_ids, attention_mask=b.mask, position_ids=positions, cache=cache,
                                use_cache=True, logits_to_keep=1).logits[:, -1]
            keep(b, *pick(logits, b.uniforms[0], draw))
            step = self._step(draw, cache, b)
            t = 1
            while t < limit:
                if t % self.check_every == 0 and bool(b.done.all()):
                    break
                step()
                t += 1
        self.steps_run = t
        if logprobs_out is not None:
            logprobs_out.append(b.drawn[:, :t].clone())
        return torch.cat([input_ids, b.out[:, :t]], dim=1)

    def _buffers(self, rows: int, length: int, limit: int, device, mask_dtype):
        """The static cache and the step's buffers for this shape, allocated once and reused
        (emptied), so a captured step reads and writes the same addresses each call."""
        from transformers import StaticCache

        key = (rows, length, limit, str(device), mask_dtype)
        if self._kept.get("key") != key:
            self._kept.clear()
            self._compiled.clear()
            self._kept.update(key=key, cache=StaticCache(config=self.model.config, max_cache_len=length),
                              buffers=_Buffers(rows, length, limit, device, mask_dtype))
        cache = self._kept["cache"]
        cache.reset()
        return cache, self._kept["buffers"]

    def _step(self, draw: Draw, cache, b: _Buffers):
        """One decoding step: forward on the last token, filter, draw, keep; every tensor it
        reads or writes is one of ``b``'s or the cache's. Compiled once per shape."""
        def step():
            logits = self.model(input_ids=b.token, attention_mask=b.mask, position_ids=b.position, cache=cache,
                                use_cache=True).logits[:, -1]
            keep(b, *pick(logits, b.uniforms.index_select(0, b.t).squeeze(0), draw))

        if self.compile is None:
            return step
        import torch

        key = (draw, id(cache), id(b))
        if key not in self._compiled:
            if self.compile in ("reduce-overhead", "default", "max-autotune"):
                self._compiled[key] = torch.compile(step, mode=self.compile, fullgraph=False, dynamic=False)
            else:
                self._compiled[key] = torch.compile(step, backend=self.compile, dynamic=False)
        return self._compiled[key]


def keep(b: _Buffers, token, logp) -> None:
    """Token ``b.t`` into the output (``pad`` for rows already ended) and the next step's
    inputs: the token, its position, the mask over it; then ``t`` moves on. All in place on
    device tensors: nothing waits for the device."""
    import torch

    token = torch.where(b.done.unsqueeze(1), b.pad, token)
    b.out.index_copy_(1, b.t, token)
    b.drawn.index_copy_(1, b.t, logp)
    b.done.logical_or_(torch.isin(token.squeeze(1), b.ends))
    b.token.copy_(token)
    b.position.add_(1)
    b.mask.index_fill_(1, b.slot, 1)
    b.t.add_(1)
    b.slot.add_(1)


class _Buffers:
    """What a step reads and writes: the last token, its position, the mask, the rows ended,
    the step's index ``t`` and cache slot, the output, the drawn log-probabilities, the
    uniform numbers, the end tokens and the pad token."""

    def __init__(self, rows: int, length: int, limit: int, device, mask_dtype):
        import torch

        self.rows, self.length, self.limit = rows, length, limit
        self.token = torch.zeros((rows, 1), dtype=torch.long, device=device)
        self.position = torch.zeros((rows, 1), dtype=torch.long, device=device)
        self.mask = torch.zeros((rows, length), dtype=mask_dtype, device=device)
        self.done = torch.zeros((rows,), dtype=torch.bool, device=device)
        self.t = torch.zeros((1,), dtype=torch.long, device=device)
        self.slot = torch.zeros((1,), dtype=torch.long, device=device)
        self.out = torch.zeros((rows, limit), dtype=torch.long, device=device)
        self.drawn = torch.zeros((rows, limit), dtype=torch.float32, device=device)
        self.uniforms = torch.zeros((limit, rows), dtype=torch.float64 if torch.device(device).type == "cpu"
                                    else torch.float32, device=device)
        self.pad = torch.zeros((), dtype=torch.long, device=device)
        self.ends = torch.zeros((0,), dtype=torch.long, device=device)
        for tensor in vars(self).values():  # fixed addresses: a CUDA graph writes them in place
            if isinstance(tensor, torch.Tensor):
                torch._dynamo.mark_static_address(tensor)

    def fill(self, input_ids, attention_mask, eos: list[int], pad: int, uniforms=None):
        """Ready for a new batch: the prompt's mask, nothing drawn, no row ended, the uniform
        numbers (``uniforms``, or fresh ones); returns the prompt's positions (left padding
        counted out), the last of which ``keep`` moves on to the first new token's."""
        import torch

        prompt = input_ids.shape[1]
        self.mask.zero_()
        self.mask[:, :prompt] = attention_mask
        positions = (attention_mask.long().cumsum(-1) - 1).clamp_(min=0)
        self.position.copy_(positions[:, -1:])
        self.done.zero_()
        self.t.zero_()
        self.slot.fill_(prompt)
        self.out.fill_(pad)
        self.drawn.zero_()
        self.pad.fill_(pad)
        if uniforms is None:
            self.uniforms.uniform_()
        else:
            self.uniforms.copy_(uniforms)
        ends = sorted(set(eos))
        if self.ends.numel() != len(ends) or self.ends.tolist() != ends:
            self.ends = torch.tensor(ends, dtype=torch.long, device=self.ends.device)
            torch._dynamo.mark_static_address(self.ends)
        return positions


@contextlib.contextmanager
def replacing_generate(model, loop: DecodeLoop, *, eos: list[int], pad: int, record: list | None = None, log=None):
    """Inside, ``model.generate(input_ids=..., attention_mask=..., generation_config=...)`` (TRL's
    call) samples through ``loop`` when it can sample as that config (completed as ``generate``
    completes it) asks; otherwise through ``generate``, saying why once (``log``)."""
    original = model.generate

    def generate(input_ids=None, attention_mask=None, generation_config=None, **kwargs):
        config = None if kwargs or generation_config is None else effective(model, generation_config)
        why = "arguments besides the prompt and the config" if config is None else loop.declines(config)
        if why is not None:
            if log is not None and why not in loop.said:
                loop.said.add(why)
                log(f"note: model.decode_loop: grpo samples through generate here ({why}).")
            return original(input_ids=input_ids, attention_mask=attention_mask,
                            generation_config=generation_config, **kwargs)
        need = input_ids.shape[1] + int(config.max_new_tokens)
        if generation_config.max_cache_len is not None and need > generation_config.max_cache_len:
            generation_config.max_cache_len = config.max_cache_len = need  # kept for the calls after: one shape
        return loop.generate(input_ids, attention_mask, config, eos=eos, pad=pad, logprobs_out=record)

    model.generate = generate
    try:
        yield
    finally:
        del model.generate
