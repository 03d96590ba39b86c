"""One builder for the trainer: ``grpo train`` and the rollouts of ``grpo
preflight`` and ``grpo eval`` get the same :class:`~grpo_core.run.trainer.GrpoTrainer`,
complete when built: rewards guarded (an environment's too), callbacks bound,
transformers' console printers gone."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grpo_core.rewards.environments import trainer_kwargs
from grpo_core.rewards.policy import Stalls, guard_rewards
from grpo_core.run.prepare import fast_generation, generation_threads


def build_trainer(cfg, stage, model, tokenizer, *, device: str, train_ds, eval_ds=None, precision=None,
                  peft_config=None, callbacks: list = (), log: Callable[[str], None] = print, report=None,
                  settings: dict | None = None, rollouts_only: bool = False, rollout_log: dict | None = None):
    """The trainer of one stage (a :class:`~grpo_core.run.prepare.StagePlan`).
    ``rollouts_only``: training's arguments without reporting, a reference model or
    vLLM, for sampling and scoring only (preflight and eval sample with transformers)."""
    from peft import PeftModel
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    from grpo_core.run.trainer import GrpoTrainer

    args, funcs = stage.args, list(stage.funcs)
    h = cfg.health
    guard: dict[str, Any] = dict(window=h.window, max_share=h.max_reward_errors, log=log,
                                 stalls=Stalls(h.max_reward_timeouts, h.on_reward_timeout))
    if rollouts_only:
        args = copy.copy(args)
        args.report_to, args.beta, args.use_vllm, args.push_to_hub = [], 0.0, False, False
        args.log_completions = False
    else:
        funcs = guard_rewards(funcs, **guard)
    missing = _missing_folders(args.output_dir) if rollouts_only else []
    trainer = GrpoTrainer(
        model=model, reward_funcs=funcs, args=args, train_dataset=train_ds, eval_dataset=eval_ds,
        processing_class=tokenizer, callbacks=list(callbacks),
        peft_config=peft_config if not isinstance(model, PeftModel) else None,
        precision=precision, fast_generation=fast_generation(cfg, args, device),
        generation_threads=generation_threads(cfg, device), on_nonfinite=h.on_nonfinite, snapshot=h.snapshot,
        max_skips=h.max_skips, max_jump=h.max_weight_jump, report=report, settings=settings, log=log, rollout_log=rollout_log,
        dynamic={"max_rounds": cfg.sampling.max_rounds, "metric": cfg.sampling.metric}
        if cfg.sampling.dynamic and not rollouts_only else None,
        guard_rewards=None if rollouts_only else {**guard, "time_limit": h.reward_time_limit},
        **trainer_kwargs(cfg.environment),
    )
    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    _remove_empty(missing)  # transformers' Trainer makes output_dir; sampling and scoring write nothing there
    return trainer


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


__all__ = ["build_trainer"]
