"""Loading a trained policy (full checkpoint or LoRA adapter) and sampling from it
with the chat template, the way GRPOTrainer samples during training. Used by
``grpo generate``, ``grpo preflight`` and ``grpo eval``."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_core.base.errors import GrpoError
from grpo_core.config import models
from grpo_core.trainer.decoding import (
    PROMPT_BUCKET,
    disable_fast_generation,
    enable_fast_generation,
    fast_failed_message,
    torch_threads,
)
from grpo_core.trainer.threads import CoreMeter, thread_independent_attention


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
    count = None if threads is None else int(threads) if threads != "auto" else None
    if threads == "auto":
        import torch

        count = CoreMeter().threads(torch.get_num_threads())
    device = next(model.parameters()).device.type
    with torch_threads(count), thread_independent_attention(device, reproducible):
        return _generate(model, tokenizer, prompts, n, max_new_tokens, do_sample, batch_size, seed,
                         chat_template_kwargs, sampling, fast)


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
