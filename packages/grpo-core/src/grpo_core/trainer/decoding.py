"""How the trainer samples completions: :class:`FastSampling` (NaN logits replaced, on CUDA a
static KV cache and compiled decoding, a CPU's threads, autocast, the merged LoRA copy or the
lower-precision sampling copy, each drawn token's log-probability for TRL's correction) and
the pieces ``grpo generate``, ``grpo preflight`` and ``grpo eval`` share with it
(:mod:`grpo_core.trainer.generation` samples through them)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from grpo_core.trainer.decode_loop import DecodeLoop, replacing_generate
from grpo_core.trainer.draws import cumulative_draws
from grpo_core.trainer.merged_lora import MergedLora
from grpo_core.trainer.sampling_copy import SamplingCopy, per_row, sampled_logprobs
from grpo_core.trainer.threads import CoreMeter, thread_independent_attention

# Static-cache decoding sizes its cache for the longest prompt rounded up to this many
# tokens, so the compiled decoder is rebuilt only when a longer bucket first appears.
PROMPT_BUCKET = 128


def enable_fast_generation(generation_config, *, backend: str | None = None) -> None:
    """Static KV cache and ``torch.compile``d decoding steps on ``generation_config``.

    transformers compiles the one-token decoding step (not the prefill) when the
    cache is static and ``disable_compile`` is off; on CUDA it uses CUDA graphs
    ("reduce-overhead"), which removes the per-kernel launch cost that bounds eager
    decoding of small models. ``backend`` (tests): compile with that backend on
    any device, e.g. "aot_eager" on a CPU.
    """
    generation_config.cache_implementation = "static"
    generation_config.disable_compile = False
    if backend is not None:
        from transformers.generation.configuration_utils import CompileConfig

        compile_config = CompileConfig(backend=backend, mode=None if backend != "inductor" else "default")
        compile_config._compile_all_devices = True
        generation_config.compile_config = compile_config


def disable_fast_generation(generation_config) -> None:
    """Back to eager decoding with a dynamic cache (TRL's own settings)."""
    generation_config.cache_implementation = None
    generation_config.disable_compile = True
    generation_config.max_cache_len = None


def fast_failed_message(exc: BaseException, *, loop: bool = False) -> str:
    """The one warning when compiled decoding (or grpo's loop, ``loop``) fails and sampling goes on eagerly."""
    what = "grpo's loop" if loop else "fast generation (static cache, compiled decoding)"
    fix = "Set model.decode_loop: transformers" if loop else "Set model.fast_generation: false"
    return (f"warning: {what} failed ({type(exc).__name__}: "
            f"{str(exc).strip().splitlines()[0][:200] if str(exc).strip() else 'no message'}); sampling eagerly from "
            f"now on. {fix} to skip it.")


@dataclass(frozen=True)
class Sampling:
    """How the trainer samples (``model.fast_generation``, ``model.generation_threads``,
    the precision the model was loaded in)."""

    fast: bool = False  # static KV cache and compiled decoding (never with vLLM)
    threads: int | str | None = None  # torch threads while sampling on a CPU; None: torch's own; "auto": idle cores
    autocast: str | None = None  # sample under autocast to this dtype (config.precision.sampling_autocast)
    merged: bool | str = False  # LoRA adapters merged into a copy of the weights while sampling (.merged_lora)
    precision: str | None = None  # sample from a copy of every weight in this dtype (.sampling_copy); None: as is
    logprobs: bool = False  # with ``precision``: return each sampled token's log-probability (TRL's correction)
    reproducible: bool = True  # CPU: attention kernels whose results do not follow the thread count
    loop: bool = False  # grpo's decoding loop (.decode_loop) in place of transformers' generate


class FastSampling:
    """The trainer's sampling: NaN logits replaced (never a device assert), on CUDA a
    static KV cache sized by prompt bucket and compiled decoding (TRL builds its
    GenerationConfig with ``disable_compile=True``; decoding a small model eagerly is
    bound by kernel launches), ``threads`` torch threads on a CPU (``auto``: the cores
    other processes left idle since the last generation), autocast as
    ``config.precision.sampling_autocast`` decides (on CUDA where the weights are in
    that dtype already, on a CPU under bf16), on a CPU each sampled token drawn from
    one uniform number per row (``draws.cumulative_draws``: torch's multinomial draws one
    per vocabulary entry). If compiling or the static cache fails, sampling goes on
    eagerly with one warning."""

    def __init__(self, settings: Sampling, generation_config, max_completion_length: int, *, vllm: bool = False,
                 log=print, model=None, eos: list[int] | None = None, pad: int | None = None):
        self.settings = settings
        self.config = generation_config
        self.max_completion_length = max_completion_length
        self.fast = settings.fast and not vllm
        self.log = log
        merged = settings.merged
        if self.fast and merged is True:
            log("warning: model.merged_sampling: true is not used with fast generation (compiled decoding keeps the "
                "weights it captured); set model.fast_generation: false to sample from merged weights.")
        self.merge = self.copy = None
        # the copy's tensors are allocated once and refilled in place before each generation, so
        # compiled decoding (CUDA graphs included) reads the same addresses with this step's weights
        if settings.precision and not (vllm or model is None):
            self.copy = SamplingCopy(model, settings.precision, MergedLora.of(model, merged, log,
                                                                              dtype=settings.precision))
        elif not (vllm or model is None or self.fast):
            self.merge = MergedLora.of(model, merged, log, dtype=settings.autocast)
        self.model = model
        # grpo's loop: on CUDA with fast generation its step is captured in CUDA graphs
        self.loop = DecodeLoop(model, compile="reduce-overhead" if self.fast else None) \
            if settings.loop and not (vllm or model is None) else None
        self.ends = (list(eos or []), 0 if pad is None else pad)
        self.meter = CoreMeter() if settings.threads == "auto" else None
        self.told = False  # auto's first generation on fewer threads than torch's, said once
        self.chosen: int | None = None  # auto's threads for the training step under way (step_threads)
        if not vllm:
            generation_config.remove_invalid_values = True
            if self.fast:
                enable_fast_generation(generation_config)

    @property
    def corrects(self) -> bool:
        """Whether sampling returns the sampled tokens' log-probabilities for TRL's correction."""
        return self.copy is not None and self.settings.logprobs

    def sample(self, generate, prompt_ids, device: str):
        """``generate()`` (TRL's sampling of ``prompt_ids`` on ``device``, "cuda", "cpu", ...:
        the completions' token ids and their log-probabilities or None), with each sampled
        token's log-probability filled in where :attr:`corrects`."""
        if self.fast:  # (an eager loop sizes its cache for this batch: attention over no more than it needs)
            self.size_cache(prompt_ids)
        record: list = []  # the loop's drawn log-probabilities (rows x tokens), when it sampled
        try:
            sampled, drawn = self._sampled(generate, device, record)
        except Exception as exc:  # noqa: BLE001 - a model or torch where compiling fails samples eagerly
            if not (self.fast or self.loop is not None):
                raise
            self.log(fast_failed_message(exc, loop=self.loop is not None))
            self.fast, self.loop = False, None
            disable_fast_generation(self.config)
            record.clear()
            sampled, drawn = self._sampled(generate, device, record)  # now through transformers' generate
        if drawn is None:
            return sampled
        completion_ids, logprobs = sampled
        if logprobs is None:
            lengths = [len(ids) for ids in completion_ids]
            logprobs = per_row(list(record[-1].unbind(1)), lengths) if record else drawn.rows(lengths)
        return completion_ids, logprobs

    def _sampled(self, generate, device: str, record: list):
        """``generate()`` inside this sampler's contexts: (what it returned, the drawn log-probabilities' recorder)."""
        with self.context(device), self.looping(record), \
                sampled_logprobs() if self.corrects else contextlib.nullcontext() as drawn:
            return generate(), drawn

    def looping(self, record: list):
        """Inside, the model's ``generate`` samples through grpo's loop (when it is on)."""
        if self.loop is None:
            return contextlib.nullcontext()
        eos, pad = self.ends
        return replacing_generate(self.model, self.loop, eos=eos, pad=pad, record=record, log=self.log)

    def size_cache(self, prompt_ids) -> None:
        """One cache size for many steps: prompt lengths rounded up to a bucket, so
        the compiled decoder is rebuilt only when a longer bucket first appears."""
        longest = max((len(p) for p in prompt_ids), default=0)
        need = -(-longest // PROMPT_BUCKET) * PROMPT_BUCKET + self.max_completion_length
        if need > (self.config.max_cache_len or 0):
            self.config.max_cache_len = need

    def context(self, device: str) -> contextlib.ExitStack:
        stack = contextlib.ExitStack()
        if device == "cpu":
            stack.enter_context(cumulative_draws())
            stack.enter_context(invalid_values_in_one_pass())
            stack.enter_context(thread_independent_attention(device, self.settings.reproducible))
            if self.settings.threads:
                stack.enter_context(torch_threads(self.cpu_threads()))
        stack.enter_context(self.weights(device))
        return stack

    def weights(self, device: str) -> contextlib.ExitStack:
        """The model as training samples it: under the sampling autocast, from the merged
        copy (a bf16 copy needs the autocast). Held-out evaluation samples inside it too."""
        import torch

        stack = contextlib.ExitStack()
        if self.copy is not None:  # every weight in the sampling dtype: no autocast
            stack.enter_context(self.copy.swapped())
            return stack
        if device in ("cuda", "cpu") and self.settings.autocast:
            stack.enter_context(torch.autocast(device, dtype=getattr(torch, self.settings.autocast)))
            if device == "cpu":
                stack.enter_context(head_in(self.model, self.settings.autocast))
        if self.merge is not None:
            stack.enter_context(self.merge.merged())
        return stack

    def policy(self, device: str):
        """The model as held-out evaluation reads it: the trained policy in the trainer's own
        precision (never the lower-precision sampling copy, so every arm is graded alike); on
        a CPU under the sampling autocast and from the merged copy, as it samples."""
        if self.copy is not None:
            return contextlib.nullcontext()
        if device == "cpu":
            return self.weights("cpu")
        return self.merge.merged() if self.merge is not None else contextlib.nullcontext()

    def cpu_threads(self) -> int:
        """Torch threads for this generation on a CPU: the setting's number, or for
        ``auto`` the cores other processes left idle, at most torch's own threads."""
        import torch

        if self.meter is None:
            assert isinstance(self.settings.threads, int)  # a number ("auto" has a meter; None: not asked)
            return self.settings.threads
        if self.chosen is not None:
            return self.chosen
        ceiling = torch.get_num_threads()
        threads = self.meter.threads(ceiling)
        if threads < ceiling and not self.told:
            self.told = True
            self.log(f"note: other processes keep this machine's cores busy: training on {threads} of torch's "
                     f"{ceiling} threads while they do (model.generation_threads: auto; a number fixes it).")
        return threads

    @contextlib.contextmanager
    def step_threads(self, device: str):
        """A training step on a CPU with ``auto``: all of it (sampling, loss, backward) on the
        threads chosen once at its start, the cores other processes leave idle. Beside a
        busy process two threads wait on each other in every parallel region, the
        backward pass's as much as the sampling's; alone, torch's own threads."""
        if device != "cpu" or self.meter is None:
            yield
            return
        self.chosen = self.cpu_threads()
        try:
            with torch_threads(self.chosen):
                yield
        finally:
            self.chosen = None


@contextlib.contextmanager
def head_in(model, dtype: str):
    """Inside, the model's output projection reads a copy of its weight in ``dtype``, made
    once: under autocast to ``dtype`` the same numbers it would otherwise cast from the
    float32 weight at every decoded token (SmolLM2-135M's tied 49152 x 576 head: ~25 ms
    of a ~117 ms decoding step on 2 CPU cores). A head that is not a plain Linear (peft's),
    already in ``dtype`` or already replaced is left as it is."""
    import torch

    head = model.get_output_embeddings() if model is not None else None
    kind = getattr(torch, dtype)
    if head is None or type(head) is not torch.nn.Linear or head.weight.dtype == kind or "forward" in vars(head):
        yield
        return
    weight = head.weight.detach().to(kind)
    bias = None if head.bias is None else head.bias.detach().to(kind)
    head.forward = lambda x: torch.nn.functional.linear(x.to(kind), weight, bias)
    try:
        yield
    finally:
        del head.forward


def replace_invalid(self, input_ids, scores):
    """transformers' ``InfNanRemoveLogitsProcessor`` (NaN to 0, infinities to the dtype's
    largest and smallest numbers) in one pass over the scores, not six: the same numbers."""
    import torch

    info = torch.finfo(scores.dtype)
    return torch.nan_to_num(scores, nan=0.0, posinf=info.max, neginf=info.min)


@contextlib.contextmanager
def invalid_values_in_one_pass():
    """Inside, ``remove_invalid_values`` (which the trainer's sampling sets) costs one pass
    over each step's rows x vocabulary scores: on 2 CPU cores its six passes took ~30 ms of a
    ~165 ms decoding step of 32 rows of SmolLM2-135M (each pass reads 6 MB)."""
    from transformers.generation.logits_process import InfNanRemoveLogitsProcessor

    original = InfNanRemoveLogitsProcessor.__call__
    InfNanRemoveLogitsProcessor.__call__ = replace_invalid
    try:
        yield
    finally:
        InfNanRemoveLogitsProcessor.__call__ = original


@contextlib.contextmanager
def torch_threads(threads: int | None):
    import torch

    previous = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
