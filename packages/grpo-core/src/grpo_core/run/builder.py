"""One builder for the trainer: ``grpo train`` and the rollouts of ``grpo
preflight``, ``grpo eval`` and held-out accuracy get the same
:class:`~grpo_core.trainer.trainer.GrpoTrainer`, complete when built: rewards guarded
(an environment's too), callbacks bound, transformers' console printers gone.

:func:`features_of` is the one place the trainer's feature settings
(:class:`~grpo_core.trainer.features.Features`) are read from the config."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from pathlib import Path

from grpo_core.config.learning import metric_of, parse_method
from grpo_core.config.precision import Precision, sampling_autocast
from grpo_core.config.prompts import DEFAULT, parse_prompts
from grpo_core.data.difficulty import of_dataset
from grpo_core.rewards.environments import trainer_kwargs
from grpo_core.rewards.policy import PolicySettings, Stalls
from grpo_core.run.prepare import (
    Prepared,
    StagePlan,
    fast_generation,
    generation_threads,
    lora_config,
    merged_sampling,
    sampling_precision_of,
)
from grpo_core.run.resume import settings_of
from grpo_core.trainer.chain import LearningSettings
from grpo_core.trainer.decoding import Sampling
from grpo_core.trainer.dynamic import DynamicSettings
from grpo_core.trainer.exact_resume import ResumeSettings
from grpo_core.trainer.features import Features
from grpo_core.trainer.nonfinite import GuardSettings
from grpo_core.trainer.prompts import PromptSettings
from grpo_core.trainer.rollout_log import FOLDER, RolloutLogSettings, prompt_index


def features_of(prepared: Prepared, plan: StagePlan, *, precision: Precision | None = None, offset: int = 0,
                rollouts_only: bool = False, record: dict | None = None) -> Features:
    """The trainer's features for one stage, from the config. ``precision``: how the
    model was loaded (``prepare.load_model``); ``offset``: global steps of the stages
    before this one; ``rollouts_only``: sampling and scoring only (no dynamic sampling,
    rollout log, settings record, reward guard, autocast or cast); ``record``: the settings
    each checkpoint records (the resume decision's, with the data's fingerprint; default
    the config's, without it)."""
    cfg, device, h = prepared.cfg, prepared.device, prepared.cfg.health
    fast = fast_generation(cfg, _args(plan, rollouts_only), device)
    args = _args(plan, rollouts_only)
    sampled = None if rollouts_only else sampling_precision_of(cfg, args, device)
    sampling = Sampling(fast=fast, threads=generation_threads(cfg, device),
                        autocast=sampling_autocast(precision, device, static_cache=fast),
                        merged=merged_sampling(cfg, device), precision=sampled,
                        logprobs=sampled is not None and args.vllm_importance_sampling_correction,
                        reproducible=cfg.model.reproducible, loop=cfg.model.decode_loop == "grpo")
    guard = GuardSettings(h.on_nonfinite, h.snapshot, h.max_skips, h.max_weight_jump)
    environment_rewards = trainer_kwargs(cfg.environment).get("environment_rewards", {})
    if rollouts_only:
        return Features(sampling=sampling, guard=guard, environment_rewards=environment_rewards)
    every = cfg.log.rollout_every
    return Features(
        sampling=sampling, guard=guard, environment_rewards=environment_rewards,
        rewards=PolicySettings(h.window, h.max_reward_errors, Stalls(h.max_reward_timeouts, h.on_reward_timeout),
                               h.reward_time_limit),
        dynamic=DynamicSettings(cfg.sampling.max_rounds, cfg.sampling.metric, cfg.sampling.oversample)
        if cfg.sampling.dynamic else None,
        rollout_log=RolloutLogSettings(prepared.root / FOLDER, every, plan.section.name, offset,
                                       prompt_index(prepared.train_ds)) if every else None,
        resume=ResumeSettings(record if record is not None else settings_of(cfg, plan, len(prepared.train_ds))),
        trainable=precision.trainable if precision is not None and precision.trainable != "float32" else None,
        learning=learning_of(cfg, plan), shared_prompt=cfg.model.shared_prompt, prompts=prompts_of(cfg, plan))


def learning_of(cfg, plan: StagePlan) -> LearningSettings:
    """``learning`` for one stage: the method (checked when the config loaded) and the
    stage's correctness reward it judges groups on, with its right and wrong scores."""
    method = parse_method(cfg.learning.method)
    found = metric_of(list(plan.funcs), cfg.learning.metric)
    metric, right, wrong = found if found is not None else (None, 1.0, 0.0)
    return LearningSettings(method.name, method.params, metric, right, wrong)


def prompts_of(cfg, plan: StagePlan) -> PromptSettings | None:
    """``sampling.prompts`` for one stage (checked when the config loaded), with the
    correctness reward it reads pass rates on and the difficulty the dataset declares;
    None for TRL's own sampler (the trainer then does not step in)."""
    name, params = parse_prompts(cfg.sampling.prompts)
    if name == DEFAULT:
        return None
    found = metric_of(list(plan.funcs), cfg.learning.metric)
    metric, right, wrong = found if found is not None else (None, 1.0, 0.0)
    d = cfg.dataset.name
    return PromptSettings(name, params, metric, right, wrong, d or "the dataset", of_dataset(d) if d else None)


def build_trainer(prepared: Prepared, plan: StagePlan, model, tokenizer, *, callbacks: Sequence = (),
                  log: Callable[[str], None] = print, report=None, rollouts_only: bool = False, dataset=None,
                  features: Features | None = None):
    """The trainer of one stage (``plan``, one of ``prepared.plans``). ``features``:
    default :func:`features_of` (no precision, the first stage). ``rollouts_only``:
    training's arguments without reporting, a reference model, vLLM or LoRA, for
    sampling and scoring ``dataset`` only (preflight and eval sample with
    transformers). ``dataset``: the prompts sampled from (default the training split)."""
    from peft import PeftModel
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    from grpo_core.trainer.trainer import GrpoTrainer

    features = features if features is not None else features_of(prepared, plan, rollouts_only=rollouts_only)
    args, funcs = _args(plan, rollouts_only), list(plan.funcs)
    if features.rewards is not None:
        funcs = features.rewards.guard(funcs, log)
    peft_config = None if rollouts_only or isinstance(model, PeftModel) else lora_config(prepared.cfg)
    env = {k: v for k, v in trainer_kwargs(prepared.cfg.environment).items() if k != "environment_rewards"}
    missing = _missing_folders(args.output_dir) if rollouts_only else []
    trainer = GrpoTrainer(
        model=model, reward_funcs=funcs, args=args, processing_class=tokenizer, peft_config=peft_config,
        train_dataset=prepared.train_ds if dataset is None else dataset,
        eval_dataset=None if rollouts_only else prepared.eval_ds, callbacks=list(callbacks),
        features=features, report=report, log=log, **env)
    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    _remove_empty(missing)  # transformers' Trainer makes output_dir; sampling and scoring write nothing there
    return trainer


def _args(plan: StagePlan, rollouts_only: bool):
    """The stage's GRPOConfig; for rollouts only, a copy without reporting, a reference
    model, vLLM or pushing."""
    if not rollouts_only:
        return plan.args
    args = copy.copy(plan.args)
    args.report_to, args.beta, args.use_vllm, args.push_to_hub = [], 0.0, False, False
    args.log_completions = False
    return args


def _missing_folders(path) -> list:
    """``path`` and each of its parents that does not exist yet, deepest first."""
    out, path = [], Path(path).absolute()
    while not path.exists():
        out.append(path)
        path = path.parent
    return out


def _remove_empty(folders: list) -> None:
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not there, or something was written into it
            return


__all__ = ["build_trainer", "features_of"]
