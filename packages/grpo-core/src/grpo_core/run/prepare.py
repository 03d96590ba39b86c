"""One place that prepares a run: config -> plugins -> datasets -> rewards ->
checks, everything that needs no model. ``grpo train``, its ``--dry-run``,
``grpo check``, ``grpo preflight`` and ``grpo eval`` all start here, so they see
the same prompts, rewards, sampling settings and checks.

The walk of a config from the command line to TRL enters each module once:

1. ``cli`` -> ``commands.train``: the arguments;
2. ``config.load_config``: YAML and command line read and typed once; reward and
   environment specs parsed (``specs``), resolved through the registries
   (``registry``, ``plugins``; ``rewards``, ``local_rewards``, ``environments``)
   and composed with their weights, gates and time limits; `trl grpo` and
   open-r1 fields translated (``trl_compat``);
3. ``prepare.prepare`` (here): the datasets and prompts (``data``), each
   stage's GRPOConfig (``grpo_args``, the one TRL import before training), the
   dataset's columns against the rewards, ``grpo check`` (``checks``, which
   scores through ``scoring``), the tokenizer's tool support;
4. ``outputs.prepare``: output_dir, on the main process only;
5. ``models.load``: the model and tokenizer;
6. ``builder.build_trainer``: the trainer, complete when built (``trainer``:
   the one module that touches TRL's private names; ``reward_policy`` guards
   each reward; ``callbacks``), then ``train`` runs the stages.

Two returns to a module already left, on purpose: ``checks`` reads the system
prompt's answer template from ``data``, and ``train`` writes ``config.yaml``
through ``outputs`` after the model loaded (it records the device's choices).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpo_core.base.errors import ConfigError
from grpo_core.checks.checks import check_plans
from grpo_core.config import models
from grpo_core.config.grpo_args import detect_device, training_args
from grpo_core.config.load import apply_env
from grpo_core.config.precision import choose, sampling_precision
from grpo_core.config.schema import RunConfig, StageSection
from grpo_core.data.datasets import build_prompts, check_columns, load_dataset, take_few_shot
from grpo_core.rewards import environments
from grpo_core.rewards.environments import COLUMN
from grpo_core.rewards.tool_support import check_support
from grpo_core.run.versions import TESTED, check_versions  # noqa: F401 - TESTED: where it was read before
from grpo_core.trainer import threads


@dataclass
class StagePlan:
    section: StageSection
    funcs: list
    weights: list[float]
    args: Any  # GRPOConfig
    output_dir: Path


@dataclass
class Prepared:
    """A run, ready but for the model."""

    cfg: RunConfig
    device: str
    train_ds: Any
    eval_ds: Any
    plans: list[StagePlan]
    heldout: list[dict] | None = None  # the prompts held-out accuracy is measured on (training), or None

    @property
    def root(self) -> Path:
        return self.plans[0].output_dir.parent if self.cfg.multi_stage else self.plans[0].output_dir

    def stage(self, name: str | None = None) -> StagePlan:
        names = [p.section.name for p in self.plans]
        if name is None:
            return self.plans[0]
        if name not in names:
            raise ConfigError(f"--stage {name!r}: the config's stages are {', '.join(names)}.")
        return self.plans[names.index(name)]


def prepare(cfg: RunConfig, *, check: bool = True, log: Callable[[str], None] = print,
            eval_split: str | None = None, device: str | None = None, tools: bool = True,
            verbose: bool = False, heldout: bool = False) -> Prepared:
    """Datasets, plans and checks of ``cfg``: everything that can fail without a model
    fails here. ``check``: ``grpo check`` first (a failure is a ConfigError after its
    table); ``eval_split``: the held-out split to build (default ``dataset.eval_split``);
    ``heldout``: choose the prompts held-out accuracy is measured on (training)."""
    check_versions()
    apply_env(cfg)
    quiet(verbose)
    device = device or detect_device()
    train_ds, few_shot = _train_split(cfg)
    split = eval_split or cfg.dataset.eval_split
    eval_ds = _held_out_split(cfg, split, few_shot) if split else None
    plans = plan(cfg, train_ds.column_names, device=device)
    lora = lora_config(cfg)  # peft's own value checks
    for note in models.check_settings(cfg.model, lora, plans[0].args.trust_remote_code):  # (meta device: no weights)
        log(f"note: {note}")
    for p in plans:
        sampling_precision_of(cfg, p.args, device)
    if tools:
        check_tool_support(cfg, plans[0].args.trust_remote_code)
    if check:
        check_or_stop(cfg, train_ds, plans, log)
    rows = heldout_rows(cfg, plans, eval_ds, few_shot, log) if heldout else None
    return Prepared(cfg, device, train_ds, eval_ds, plans, rows)




# ------------------------------------------------------------------ data


def build_datasets(cfg: RunConfig, eval_split: str | None = None):
    """``(train, eval or None)`` with TRL's conversational ``prompt`` column, built the
    one way training, eval, preflight and check see them: the system prompt, and the
    few-shot examples taken from the start of the training split (never trained on)
    in every split's prompts. ``eval_split`` overrides ``dataset.eval_split``."""
    train, few_shot = _train_split(cfg)
    split = eval_split or cfg.dataset.eval_split
    return train, (_held_out_split(cfg, split, few_shot) if split else None)


def _train_split(cfg: RunConfig):
    """The training split with its prompts, and the few-shot examples taken from it."""
    d = cfg.dataset
    assert d.name is not None  # (load_config requires dataset.name to train)
    train = load_dataset(d.name, split=d.split, **d.params)
    few_shot = d.few_shot
    if few_shot and "question" in train.column_names:
        few_shot, train = take_few_shot(train, few_shot)
    train = build_prompts(train, d.system_prompt, few_shot or 0, d.answer_template)
    _check_environment_columns(cfg, train, f"dataset '{d.name}' (split {d.split})")
    return train, few_shot


def _held_out_split(cfg: RunConfig, split: str, few_shot):
    d = cfg.dataset
    assert d.name is not None  # (load_config requires dataset.name to train)
    eval_ds = load_dataset(d.name, split=split, **{**d.params, **d.eval_params})
    eval_ds = build_prompts(eval_ds, d.system_prompt, few_shot or 0, d.answer_template)
    _check_environment_columns(cfg, eval_ds, f"dataset '{d.name}' (split {split})")
    return eval_ds


def heldout_rows(cfg: RunConfig, plans: list[StagePlan], eval_ds, few_shot,
                 log: Callable[[str], None] = print) -> list[dict] | None:
    """The prompts held-out accuracy (:mod:`grpo_core.run.heldout`) is measured on, or
    None when it is off: the dataset's ``eval_split``, else its ``test`` split when the
    adapter has one. Chosen before any model loads; the training split is not reloaded."""
    setting = cfg.heldout.enabled
    if setting is False or not any(getattr(f, "correctness", False) for p in plans for f in p.funcs):
        if setting is True:
            raise ConfigError("heldout.enabled is true but no reward is a correctness reward (registered with "
                              "correctness=True, e.g. math.correctness): there is nothing to measure accuracy with.")
        return None
    ds = eval_ds
    if ds is None:
        try:
            ds = _held_out_split(cfg, "test", few_shot)
        except Exception as exc:  # noqa: BLE001 - an adapter without a test split: no held-out set
            if setting is True:
                raise ConfigError(f"heldout.enabled is true but dataset '{cfg.dataset.name}' has no held-out split "
                                  f"(dataset.eval_split, or 'test': {type(exc).__name__}: {exc}).") from None
            return None
    n = min(cfg.heldout.prompts, len(ds))
    log(f"Held-out accuracy: {n} prompts of the '{cfg.dataset.eval_split or 'test'}' split, "
        f"greedy, every {cfg.heldout.every or 'tenth of the run'} steps.")
    return [ds[i] for i in range(n)]


def _check_environment_columns(cfg: RunConfig, ds, where: str) -> None:
    environments.check_columns(ds.column_names, cfg.environment, where, values=lambda: ds.unique(COLUMN))


def check_tool_support(cfg: RunConfig, trust_remote_code: bool = False) -> None:
    """Environments and tools need transformers recent enough and a chat template that
    renders tool calls and that TRL can parse them from: checked on the tokenizer,
    before any model loads (TRL would only fail after)."""
    if cfg.environment is None:
        return
    from transformers import AutoTokenizer

    assert cfg.model.id is not None  # (load_config requires model.id to train)
    path = models.resolve(cfg.model.id)
    tokenizer = AutoTokenizer.from_pretrained(path, revision=cfg.model.revision, trust_remote_code=trust_remote_code)
    check_support(cfg.environment, models.prepare_tokenizer(tokenizer), cfg.model.id)


# ------------------------------------------------------------------ plans and checks


def plan(cfg: RunConfig, train_columns: list[str], *, device: str) -> list[StagePlan]:
    """Rewards checked against the dataset, GRPOConfig built, per stage."""

    plans = []
    root = None
    for stage in cfg.stages:
        funcs, weights = stage.funcs, stage.weights  # composed once, when the config was read
        check_columns(train_columns, funcs, f"dataset '{cfg.dataset.name}'")
        if root is None:
            root = Path(training_args(cfg, stage, device=device, reward_weights=weights).output_dir)
        out = root / stage.name if cfg.multi_stage else root
        args = training_args(cfg, stage, device=device, output_dir=str(out), reward_weights=weights)
        if (args.max_steps is None or args.max_steps <= 0) and cfg.multi_stage:
            raise ConfigError(f"stage '{stage.name}': set max_steps (steps of this stage).")
        plans.append(StagePlan(stage, funcs, weights, args, out))
    return plans


def check_or_stop(cfg: RunConfig, train_ds, plans: list[StagePlan] | None, log: Callable) -> None:
    """``grpo check`` before any model loads; a failure is a ConfigError after its table."""

    if not all(rep.ok for rep in check_plans(cfg, train_ds, plans, log=log, brief=True)):
        raise ConfigError(
            "grpo check failed (table above): a reward does not pay the gold answer, pays a hack, or gives no "
            "signal. Fix the reward or the dataset's answer column; --no-check skips the check."
        )


def lora_config(cfg: RunConfig):
    """peft's ``LoraConfig`` (its own value checks run here, before the model), or None."""
    if cfg.lora is None:
        return None
    from peft import LoraConfig

    try:
        return LoraConfig(**cfg.lora)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"lora: {exc}") from None


def cudnn_attention(cfg: RunConfig, device: str) -> bool:
    """``model.cudnn_attention`` false (the default) turns torch's cuDNN kernel for sdpa
    off on CUDA, for the process: with an attention mask, a batch 64 tokens long (mod
    128) and a row of very negative scores, its backward returns NaN gradients
    (pytorch#196678, torch 2.11 on, H100/H200). GRPO batches are prompts plus completions
    that shorten as training goes, so such a length comes: with it on, three of four runs
    of examples/quickstart-gpu.yaml stopped on NaN gradients on an H200 (torch 2.11) once
    their completions had shortened (docs/gpu.md; the cause inferred from the upstream
    report's conditions, not seen). Returns whether it was turned off."""
    if device != "cuda" or cfg.model.cudnn_attention:
        return False
    import torch

    torch.backends.cuda.enable_cudnn_sdp(False)
    return True


# ------------------------------------------------------------------ sampling


def fast_generation(cfg: RunConfig, args, device: str) -> bool:
    """``model.fast_generation``: auto (on CUDA), true or false; a user's own
    ``cache_implementation`` other than static turns it off, as does vLLM."""
    setting = cfg.model.fast_generation
    on = device == "cuda" if setting == "auto" else bool(setting)
    return on and not args.use_vllm and args.cache_implementation in (None, "static")


def merged_sampling(cfg: RunConfig, device: str) -> bool | str:
    """``model.merged_sampling``: auto (on a CPU; the trainer weighs the copy's size), true or false."""
    setting = cfg.model.merged_sampling
    if setting == "auto":
        return "auto" if device == "cpu" else False
    return setting is True or setting == "true"


def cpu_bf16(cpuinfo: str = "/proc/cpuinfo") -> bool:
    """Whether this CPU multiplies bfloat16 matrices natively (AVX-512 BF16 or AMX), where a
    bf16 product is 2-4x a float32 one; False where it cannot tell."""
    try:
        with open(cpuinfo) as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except (OSError, IndexError):
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def sampling_precision_of(cfg: RunConfig, args, device: str) -> str | None:
    """``sampling.precision`` resolved for ``device`` (the dtype sampled in, None: as the
    model is); a ConfigError for a precision that device is not sampled in. With fast
    generation the copy is sampled by the compiled decoder too: its tensors are allocated
    once and refilled in place before each generation, so the captured graph reads this
    step's weights (tests/train/test_sampling_precision.py)."""
    on_cpu_bf16 = device == "cpu" and cfg.sampling.precision == "auto" and cpu_bf16()
    return sampling_precision(cfg.sampling.precision, device, cpu_bf16=on_cpu_bf16, vllm=args.use_vllm)


def generation_threads(cfg: RunConfig, device: str) -> int | str | None:
    """Torch threads while sampling on a CPU (``model.generation_threads``): a number,
    "auto" (the cores other processes leave idle) or None (torch's own)."""
    return threads.auto_threads(cfg.model.generation_threads) if device == "cpu" else None


def sampling_settings(cfg: RunConfig, args, device: str) -> dict:
    """How training samples completions (GRPOConfig and the model section), as
    ``generation.generate`` keywords: preflight and eval sample the same way."""
    return dict(max_new_tokens=args.max_completion_length, temperature=args.temperature, top_p=args.top_p,
                top_k=args.top_k, min_p=args.min_p, repetition_penalty=args.repetition_penalty, seed=args.seed,
                chat_template_kwargs=getattr(args, "chat_template_kwargs", None),
                threads=generation_threads(cfg, device), fast=fast_generation(cfg, args, device),
                reproducible=cfg.model.reproducible)


def quiet(verbose: bool = False) -> None:
    """Progress bars of dataset mapping and weight loading would bury the step lines;
    ``--verbose`` keeps them. transformers' deprecation of the gradient_checkpointing
    names, which TRL and peft still call on every step, is not ours to show."""
    import warnings

    warnings.filterwarnings("ignore", message=r"`(is_)?gradient_checkpointing(_enable|_disable|_kwargs)?` is "
                            r"deprecated", category=FutureWarning)
    if verbose:
        return
    import datasets
    import transformers

    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()


def load_model(p: Prepared, log: Callable[[str], None] = print):
    """The model and tokenizer the config names, with the precision the device calls for."""

    cfg, a = p.cfg, p.plans[0].args
    precision = choose(p.device, dtype=cfg.model.dtype, bf16=a.bf16, fp16=a.fp16, lora=cfg.lora is not None)
    t0 = time.perf_counter()
    assert cfg.model.id is not None  # (load_config requires model.id to train)
    model, tokenizer = models.load(
        cfg.model.id, dtype=precision.load, attn_implementation=cfg.model.attn_implementation,
        revision=cfg.model.revision, trust_remote_code=a.trust_remote_code, device=p.device,
        extra={**_quantization(cfg.model.quantization), **(a.model_init_kwargs or {})},
        chat_template=cfg.model.chat_template, log=log)
    if cfg.lora is not None:  # peft would say it inside the trainer's set-up, as a traceback
        models.check_target_modules(lora_config(cfg), *models.modules_of(model), cfg.model.id)
    no_cudnn = cudnn_attention(cfg, p.device)
    from grpo_core.trainer.shared_prompt import usable  # (torch)

    shared = usable(model, cfg.model.shared_prompt, p.device) and not a.gradient_checkpointing
    log(f"Loaded {cfg.model.id} ({sum(x.numel() for x in model.parameters()) / 1e6:.1f}M parameters) "
        f"on {p.device} in {time.perf_counter() - t0:.1f}s: {precision.describe(cfg.lora is not None)}"
        + (", fast generation (static cache, compiled decoding)" if fast_generation(cfg, a, p.device) else "")
        + (", attention without cuDNN's kernel (model.cudnn_attention)" if no_cudnn else "")
        + (", each group's prompt computed once in the training pass (model.shared_prompt)" if shared else "")
        + (f", sampling in {sampled} (sampling.precision)" if (sampled := sampling_precision_of(cfg, a, p.device))
           else "")
        + ".")
    return model, tokenizer, precision


def _quantization(quantization: dict | None) -> dict:
    """bitsandbytes loading as `trl grpo` does it (TRL's ModelConfig fields)."""
    if not quantization:
        return {}
    from trl import ModelConfig, get_kbit_device_map, get_quantization_config

    return {"quantization_config": get_quantization_config(ModelConfig(**quantization)),
            "device_map": get_kbit_device_map()}


__all__ = ["prepare", "check_versions", "TESTED", "Prepared", "StagePlan", "build_datasets", "plan", "check_or_stop", "check_tool_support",
           "lora_config", "fast_generation", "merged_sampling", "sampling_precision_of", "cpu_bf16", "sampling_settings", "load_model", "quiet"]
