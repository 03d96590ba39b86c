"""Loading a trained policy (full checkpoint or LoRA adapter) and sampling from it
with the chat template, the way GRPOTrainer samples during training. Used by
``grpo generate``, ``grpo preflight`` and ``grpo eval``."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_core.base.errors import GrpoError
from grpo_core.config import models
from grpo_core.trainer.draws import cumulative_draws
from grpo_core.trainer.merged_lora import MergedLora
from grpo_core.trainer.sampling_copy import SamplingCopy, sampled_logprobs
from grpo_core.trainer.threads import CoreMeter, thread_independent_attention

# Static-cache decoding sizes its cache for the longest prompt rounded up to this many
# tokens, so the compiled decoder is rebuilt only when a longer bucket first appears.
PROMPT_BUCKET = 128


@dataclass
class Completion:
    text: str
    num_tokens: int
    truncated: bool  # stopped at max_new_tokens without an end-of-sequence token
    token_ids: list[int] | None = None


def is_adapter_dir(path: str | Path) -> bool:
    return (Path(path) / "adapter_config.json").is_file()


def run_weights(path: str | Path) -> Path:
    """The trained weights a path names: the path itself when it holds an adapter or a
    model, else the ones a ``grpo train`` output directory holds (``adapter``, ``model``,
    or a staged run's ``final``); unchanged when it holds none (the caller says so)."""
    path = Path(path).expanduser()
    if path.is_dir() and not is_adapter_dir(path) and not (path / "config.json").is_file():
        for name in ("adapter", "model", "final"):
            inner = path / name
            if is_adapter_dir(inner) or (inner / "config.json").is_file():
                return inner
    return path


def adapter_base(path: str | Path) -> str:
    """The base model an adapter was trained on (from its adapter_config.json)."""
    cfg = json.loads((Path(path) / "adapter_config.json").read_text())
    base = cfg.get("base_model_name_or_path")
    if not base:
        raise GrpoError(
            f"{path}/adapter_config.json does not name its base model "
            f"(base_model_name_or_path); pass --base MODEL."
        )
    return base


def check_matches_base(checkpoint: str | Path, base_path: str | Path) -> None:
    """A full checkpoint must have the base's architecture to be compared with it."""
    try:
        a = json.loads((Path(checkpoint) / "config.json").read_text())
        b = json.loads((Path(base_path) / "config.json").read_text())
    except (OSError, ValueError):
        return  # a hub id: transformers will say what is wrong
    keys = ("model_type", "vocab_size", "hidden_size", "num_hidden_layers")
    diff = [f"{k}: {a.get(k)!r} vs base {b.get(k)!r}" for k in keys if a.get(k) != b.get(k)]
    if diff:
        raise GrpoError(
            f"checkpoint {checkpoint} does not match the base model {base_path} "
            f"({'; '.join(diff)}). Point --checkpoint at a checkpoint trained from this base, "
            f"or set model.id to its base."
        )


def load_policy(path_or_id: str, *, base: str | None = None, dtype: str = "auto",
                device: str | None = None, chat_template: str | None = None, log=print):
    """``(model, tokenizer)`` for a model id/dir/.gguf/alias, a full checkpoint, or a
    LoRA adapter directory (loaded on top of its base). ``chat_template`` (the config's
    ``model.chat_template``) replaces the model's own, as training replaced it; an
    adapter's saved tokenizer already carries the one it was trained with."""

    device = device or default_device()
    path = run_weights(path_or_id)
    if path.is_dir() and not is_adapter_dir(path) and not (path / "config.json").is_file():
        raise GrpoError(
            f"{path} holds neither an adapter (adapter_config.json) nor a model (config.json); "
            f"point at a grpo train output directory or one of its checkpoint-N folders."
        )
    if path.is_dir() and is_adapter_dir(path):
        from peft import PeftModel

        base_id = base or adapter_base(path)
        model, tokenizer = models.load(base_id, dtype=dtype, device=device, chat_template=chat_template, log=log)
        if (path / "tokenizer_config.json").is_file():
            from transformers import AutoTokenizer

            tokenizer = models.prepare_tokenizer(AutoTokenizer.from_pretrained(str(path)), model)
        model = PeftModel.from_pretrained(model, str(path))
    else:
        model, tokenizer = models.load(str(path_or_id), dtype=dtype, device=device, chat_template=chat_template,
                                       log=log)
    model.to(device)
    model.eval()
    return model, tokenizer


def default_device() -> str:
    import torch

    if torch.cuda.is_available():
        return "cuda"
    return "cpu"


def render(tokenizer, prompt: Any, chat_template_kwargs: dict | None = None) -> str:
    """The text the model sees for one prompt (conversational or plain)."""
    if isinstance(prompt, str):
        return prompt
    return tokenizer.apply_chat_template(
        prompt, tokenize=False, add_generation_prompt=True, **(chat_template_kwargs or {})
    )


def generate(model, tokenizer, prompts: Sequence[Any], *, n: int = 1, max_new_tokens: int = 256,
             temperature: float = 1.0, top_p: float = 1.0, top_k: int | None = None,
             min_p: float | None = None, repetition_penalty: float = 1.0, do_sample: bool = True,
             batch_size: int = 8, seed: int | None = None,
             chat_template_kwargs: dict | None = None, threads: int | str | None = None,
             fast: bool | str | None = None, reproducible: bool = True) -> list[list[Completion]]:
    """``n`` completions per prompt (greedy when ``do_sample`` is False).

    ``threads``: torch threads while decoding on a CPU. Token-by-token decoding of a
    small model is dominated by thread synchronisation, so 1 thread is often faster,
    and far faster on a busy machine (None: leave torch's setting; "auto": the cores
    other processes leave idle, ``threads.CoreMeter``).
    ``fast``: static KV cache and compiled decoding, as in training (None: on CUDA
    only; a string: compile with that torch.compile backend on any device).
    ``reproducible``: on a CPU, attention whose results do not follow the thread count
    (``threads.thread_independent_attention``), as training samples.
    """
    sampling = dict(temperature=temperature, top_p=top_p, top_k=top_k, min_p=min_p,
                    repetition_penalty=repetition_penalty)
    if fast is None:
        fast = next(model.parameters()).device.type == "cuda"
    if threads == "auto":
        import torch

        threads = CoreMeter().threads(torch.get_num_threads())
    device = next(model.parameters()).device.type
    with torch_threads(threads), thread_independent_attention(device, reproducible):
        return _generate(model, tokenizer, prompts, n, max_new_tokens, do_sample, batch_size, seed,
                         chat_template_kwargs, sampling, fast)


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


def fast_failed_message(exc: BaseException) -> str:
    return (f"warning: fast generation (static cache, compiled decoding) failed ({type(exc).__name__}: "
            f"{str(exc).strip().splitlines()[0][:200] if str(exc).strip() else 'no message'}); sampling eagerly from "
            f"now on. Set model.fast_generation: false to skip it.")


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
                 log=print, model=None):
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
        if self.fast:
            self.size_cache(prompt_ids)
        with self.context(device), sampled_logprobs() if self.corrects else contextlib.nullcontext() as drawn:
            try:
                sampled = generate()
            except Exception as exc:  # noqa: BLE001 - a model or torch where compiling fails samples eagerly
                if not self.fast:
                    raise
                self.log(fast_failed_message(exc))
                self.fast = False
                disable_fast_generation(self.config)
                sampled = generate()
        if drawn is None:
            return sampled
        completion_ids, logprobs = sampled
        if logprobs is None:
            logprobs = drawn.rows([len(ids) for ids in completion_ids])
        return completion_ids, logprobs

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
            return int(self.settings.threads)
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
    if type(head) is not torch.nn.Linear or head.weight.dtype == kind or "forward" in vars(head):
        yield
        return
    weight = head.weight.detach().to(kind)
    bias = None if head.bias is None else head.bias.detach().to(kind)
    head.forward = lambda x: torch.nn.functional.linear(x.to(kind), weight, bias)
    try:
        yield
    finally:
        del head.forward


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


def _generate(model, tokenizer, prompts, n, max_new_tokens, do_sample, batch_size, seed,
              chat_template_kwargs, sampling: dict, fast: bool | str) -> list[list[Completion]]:
    import torch
    from transformers import GenerationConfig

    if seed is not None:
        torch.manual_seed(seed)
    tokenizer.padding_side = "left"
    eos = {tokenizer.eos_token_id} | set(_as_list(getattr(model.generation_config, "eos_token_id", None)))
    eos.discard(None)
    gen_kwargs: dict[str, Any] = dict(
        max_new_tokens=max_new_tokens, do_sample=do_sample, num_return_sequences=n if do_sample else 1,
        pad_token_id=tokenizer.pad_token_id,
    )
    if do_sample:
        gen_kwargs.update(temperature=sampling["temperature"], top_p=sampling["top_p"],
                          top_k=sampling["top_k"] or 0, repetition_penalty=sampling["repetition_penalty"])
        if sampling["min_p"]:
            gen_kwargs["min_p"] = sampling["min_p"]
    config = GenerationConfig(**gen_kwargs, eos_token_id=sorted(eos) or None, remove_invalid_values=True)
    if fast:
        enable_fast_generation(config, backend=fast if isinstance(fast, str) else None)
    device = next(model.parameters()).device
    out: list[list[Completion]] = []
    for start in range(0, len(prompts), batch_size):
        chunk = [render(tokenizer, p, chat_template_kwargs) for p in prompts[start : start + batch_size]]
        enc = tokenizer(chunk, return_tensors="pt", padding=True, add_special_tokens=False).to(device)
        if fast:
            longest = enc["input_ids"].shape[1]
            need = -(-longest // PROMPT_BUCKET) * PROMPT_BUCKET + max_new_tokens
            config.max_cache_len = max(need, config.max_cache_len or 0)
        with torch.no_grad():
            try:
                seqs = model.generate(**enc, generation_config=config)
            except Exception as exc:  # noqa: BLE001 - a model or torch where compiling fails samples eagerly
                if not fast:
                    raise
                print(fast_failed_message(exc), file=sys.stderr, flush=True)
                fast = False
                disable_fast_generation(config)
                seqs = model.generate(**enc, generation_config=config)
        new = seqs[:, enc["input_ids"].shape[1] :]
        per_prompt = config.num_return_sequences
        for i in range(len(chunk)):
            group = []
            for j in range(per_prompt):
                ids = new[i * per_prompt + j].tolist()
                ended = next((k for k, t in enumerate(ids) if t in eos), None)
                kept = ids if ended is None else ids[:ended]
                kept = [t for t in kept if t != tokenizer.pad_token_id]
                group.append(Completion(tokenizer.decode(kept, skip_special_tokens=True),
                                        len(kept), ended is None and len(ids) >= max_new_tokens, kept))
            if not do_sample and n > 1:
                group = group * n  # greedy: every sample is the same
            out.append(group)
    return out


def _as_list(x) -> list:
    if x is None:
        return []
    return list(x) if isinstance(x, (list, tuple)) else [x]
