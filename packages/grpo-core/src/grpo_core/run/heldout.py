"""Held-out accuracy during training: is the model learning the task, or only the
rewards?

Every ``heldout.every`` steps (ten times over a run by default, and after the
first step), the model answers ``heldout.prompts`` held-out prompts the way
``grpo eval`` samples them (greedy, training's settings otherwise) and the
stage's correctness reward (one registered with ``correctness=True``) scores
them: ``eval/accuracy`` is the share at its maximum (None, "no opinion", left
out, as ``grpo eval`` leaves it out). With an environment the prompts are rolled
out as ``grpo eval`` rolls them out (tool calls, their results, the next turn).
It goes to ``metrics.jsonl``, the step line and ``rewards.png``.

Held-out prompts are the dataset's ``eval_split``, else its ``test`` split when
the adapter has one (``heldout.enabled: auto``), chosen by the preparer
(:func:`grpo_core.run.prepare.heldout_rows`) before any model loads. The cost is one greedy
generation of ``prompts`` completions per evaluation (on 2 CPU cores and the
quickstart's model: about the time of one training step, so about 10 % over a
run with ten evaluations every 10 steps or more; on a GPU a fraction of a step).

Every process evaluates (generation under ZeRO-3 or FSDP needs all of them); the
main process logs.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
from typing import Any

from transformers import TrainerCallback

from grpo_core.rewards.scoring import score_batch
from grpo_core.run.prepare import sampling_settings
from grpo_core.run.rollouts import sample
from grpo_core.trainer import generation

METRIC = "eval/accuracy"


def correctness_reward(funcs) -> Any:
    return next((f for f in funcs if getattr(f, "correctness", False)), None)


def every(setting: int, max_steps: int) -> int:
    """Steps between evaluations: as set, else ten evaluations over the run."""
    return setting if setting > 0 else max(1, max_steps // 10)


def full_marks(reward) -> float:
    """A correctness reward's full marks: the top of its declared range, else 1.0."""
    return reward.range[1] if getattr(reward, "range", None) else 1.0


def accuracy(scores: list, top: float) -> float:
    """Share of the scored completions at the reward's maximum: None ("no opinion") is
    left out, as ``grpo eval`` leaves it out (nan when nothing was scored)."""
    scored = [s for s in scores if s is not None]
    return sum(s >= top - 1e-9 for s in scored) / len(scored) if scored else float("nan")


class HeldoutCallback(TrainerCallback):
    """Measures ``eval/accuracy`` after the first step and every ``every`` steps."""

    def __init__(self, rows: list[dict], reward, sampling: dict, every_steps: int, offset: int = 0,
                 multi_turn: tuple | None = None):
        self.rows = rows
        self.reward = reward
        self.sampling = sampling
        self.every = every_steps
        self.offset = offset
        self.multi_turn = multi_turn  # (prepared, stage) with an environment: rolled out as grpo eval does
        self.trainer: Any = None  # the GRPOTrainer, once bound
        self.results: list[tuple[int, float]] = []  # (global step, accuracy)

    def bind(self, trainer) -> None:
        self.trainer = trainer

    def due(self, step: int, max_steps: int) -> bool:
        return step == 1 or step % self.every == 0 or step == max_steps

    def on_step_end(self, args, state, control, **kw):
        if self.trainer is None or not self.due(state.global_step, state.max_steps):
            return
        value = self.measure()
        self.results.append((self.offset + state.global_step, value))
        self.trainer.record_metric(METRIC, value)

    def measure(self) -> float:
        model = self.trainer.accelerator.unwrap_model(self.trainer.model)
        was_training = model.training
        model.eval()
        try:
            if self.multi_turn is not None:
                return accuracy(self._rolled_out(model, *self.multi_turn), full_marks(self.reward))
            with self._as_training_samples():
                groups = generation.generate(model, self.trainer.text_tokenizer, [r["prompt"] for r in self.rows],
                                             n=1, do_sample=False, **self.sampling)
        finally:
            model.train(was_training)
        texts = [g[0].text for g in groups]
        scored = score_batch([self.reward], [1.0], texts, self.rows, [r["prompt"] for r in self.rows])
        return accuracy(scored.per_reward[0], full_marks(self.reward))

    def _as_training_samples(self):
        """The sampler's weights: on a CPU its autocast and merged copy (a bf16 copy needs
        the autocast); elsewhere the merged copy only, as before (autocast there unmeasured)."""
        sampler = getattr(self.trainer, "sampler", None)
        if sampler is None:
            return contextlib.nullcontext()
        return sampler.policy(self.trainer.accelerator.device.type)

    def _rolled_out(self, model, prepared, stage) -> list:
        """The correctness reward's scores of greedy multi-turn rollouts (tool calls, their
        results, the next turn), made as ``grpo eval`` makes them (:func:`rollouts.sample`)."""
        with _rng_kept():  # building the rollouts' trainer reseeds; training's own sampling goes on unchanged
            done = sample(prepared, stage, self.rows, model, self.trainer.processing_class, 1, greedy=True)
        return done.per_reward[next(i for i, f in enumerate(stage.funcs) if f is self.reward)]


@contextlib.contextmanager
def _rng_kept():
    import random

    import numpy as np
    import torch

    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def callback(cfg, prepared, stage, rows: list[dict] | None, offset: int) -> HeldoutCallback | None:
    """The held-out callback of one stage, or None (no held-out rows, no correctness reward)."""
    reward = correctness_reward(stage.funcs)
    if not rows or reward is None:
        return None

    sampling = sampling_settings(cfg, stage.args, prepared.device)
    sampling["seed"] = None  # greedy needs no seed, and reseeding would change training's own sampling
    if cfg.heldout.max_completion_length:
        sampling["max_new_tokens"] = cfg.heldout.max_completion_length
    multi_turn = None
    if cfg.environment is not None:  # tools and turns: grpo eval's rollouts, training's settings
        multi_turn = (prepared, stage)
        if cfg.heldout.max_completion_length:
            args = copy.copy(stage.args)
            args.max_completion_length = cfg.heldout.max_completion_length
            multi_turn = (prepared, dataclasses.replace(stage, args=args))
    return HeldoutCallback(rows, reward, sampling, every(cfg.heldout.every, stage.args.max_steps), offset,
                           multi_turn=multi_turn)


__all__ = ["HeldoutCallback", "callback", "accuracy", "full_marks", "every", "METRIC"]
