"""``GrpoTrainer``: ``trl.GRPOTrainer`` with what a real run on a GPU needs.

Three short overrides, nothing re-implemented:

- sampling runs under bf16 autocast where the weights are bf16 already (a LoRA
  base: the float32 adapters come along), with ``generation_threads`` torch threads
  on a CPU, and on CUDA with a static KV cache and compiled decoding (TRL builds its
  GenerationConfig with ``disable_compile=True``; decoding a small model eagerly is
  bound by kernel launches, not by the GPU);
- every optimizer step is checked for non-finite values (:mod:`.nonfinite`): the
  loss of each micro-batch, the gradient norm before the update, the trainable
  weights after it. ``stop`` saves a checkpoint of the last finite state at that
  step and ends training; ``skip`` drops the update and goes on;
- non-finite logits are replaced during sampling (``remove_invalid_values``)
  instead of tripping a device-side assert in ``torch.multinomial``; the loss
  computed from the same weights is then non-finite and the guard stops;
- an environment's ``get_reward`` column (TRL names it after the class and weighs
  it 1) is named after the registered environment and weighed as configured;
  tool-calling turns sample through the same ``_generate_single_turn``;
- resuming inside a generation buffer (``steps_per_generation`` or
  ``num_iterations`` above 1) is exact: a checkpoint there also holds the
  buffered batches (``grpo_buffer-rank<N>.pt``), and the step counter TRL picks
  buffer slices by is restored, so every step trains what it would have.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Callable
from pathlib import Path

import torch
from transformers import TrainerCallback
from trl import GRPOTrainer

from .generation import PROMPT_BUCKET, enable_fast_generation
from .nonfinite import Event, Guard, wants_snapshot
from .precision import Precision, sampling_autocast


class GrpoTrainer(GRPOTrainer):
    """``GRPOTrainer`` plus the keyword arguments below (all optional)."""

    def __init__(self, *args, precision: Precision | None = None, fast_generation: bool = False,
                 generation_threads: int | None = None, on_nonfinite: str = "stop",
                 snapshot: bool | str = "auto", max_skips: int = 10,
                 report: Callable[[Event], None] | None = None,
                 environment_rewards: dict | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        if environment_rewards:
            self._name_environment_rewards(environment_rewards)
        self.precision = precision
        self.generation_threads = generation_threads
        self.fast_generation = fast_generation and not self.use_vllm
        if not self.use_vllm:
            self.generation_config.remove_invalid_values = True
            if self.fast_generation:
                enable_fast_generation(self.generation_config)
        if precision is not None and precision.trainable != "float32":
            self._cast_trainable(getattr(torch, precision.trainable))
        params = list(self.model.parameters())
        self.guard = Guard(params, policy=on_nonfinite, max_skips=max_skips,
                           snapshot=wants_snapshot(snapshot, params, sum(p.numel() for p in params)))
        self._resume_dir: str | None = None
        self.add_callback(_Hooks(self, report))

    def _name_environment_rewards(self, rewards: dict) -> None:
        """``rewards``: {TRL's environment key (None, or the route): (logged name, weight)}.
        TRL appends one reward column per environment class with ``get_reward``, in
        the order of its factories, after the rewards passed in."""
        keyed: dict[type, list] = {}
        for key, pool in self._environment_pool.items():
            cls = type(pool[0])
            if "get_reward" in dict(inspect.getmembers(cls, predicate=inspect.isfunction)):
                keyed.setdefault(cls, []).append(key)
        own = len(self.reward_funcs) - len(keyed)
        for index, keys in enumerate(keyed.values(), start=own):
            for key in (k for k in keys if k in rewards):  # the first route that names it
                name, weight = rewards[key]
                self.reward_func_names[index] = name
                self.reward_weights[index] = float(weight)
                break

    def _cast_trainable(self, dtype: torch.dtype) -> None:
        """Pure low precision: adapters too (peft upcasts them to float32)."""
        for p in self.model.parameters():
            if p.requires_grad and p.dtype != dtype:
                p.data = p.data.to(dtype)

    # ---------------------------------------------------------------- sampling

    def _generate_single_turn(self, prompt_ids, *args, **kwargs):
        if self.fast_generation:
            self._size_static_cache(prompt_ids)
        with self._sampling_context():
            return super()._generate_single_turn(prompt_ids, *args, **kwargs)

    def _size_static_cache(self, prompt_ids) -> None:
        """One cache size for many steps: prompt lengths rounded up to a bucket, so
        the compiled decoder is rebuilt only when a longer bucket first appears."""
        longest = max((len(p) for p in prompt_ids), default=0)
        need = -(-longest // PROMPT_BUCKET) * PROMPT_BUCKET + self.max_completion_length
        if need > (self.generation_config.max_cache_len or 0):
            self.generation_config.max_cache_len = need

    def _sampling_context(self):
        stack = contextlib.ExitStack()
        device = self.accelerator.device.type
        if device == "cpu" and self.generation_threads:
            from .generation import torch_threads

            stack.enter_context(torch_threads(self.generation_threads))
        autocast = sampling_autocast(self.precision, device)
        if autocast:
            stack.enter_context(torch.autocast("cuda", dtype=getattr(torch, autocast)))
        return stack

    # ---------------------------------------------------------------- non-finite guard

    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        self.guard.observe_loss(loss)
        return loss

    def _get_grad_norm(self, model, grad_norm=None):
        grad_norm = super()._get_grad_norm(model, grad_norm=grad_norm)
        self.guard.before_update(grad_norm, self.state.global_step + 1, self._get_learning_rate())
        return grad_norm


    # ---------------------------------------------------------------- exact resume

    def train(self, resume_from_checkpoint=None, *args, **kwargs):
        self._resume_dir = resume_from_checkpoint if isinstance(resume_from_checkpoint, (str, os.PathLike)) else None
        return super().train(resume_from_checkpoint, *args, **kwargs)

    def _buffer_path(self, checkpoint: str | os.PathLike) -> Path:
        return Path(checkpoint) / f"grpo_buffer-rank{self.accelerator.process_index}.pt"

    def _mid_buffer(self) -> bool:
        every = self.args.steps_per_generation * self.num_iterations
        return every > 1 and self._step % every != 0

    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)
        if self._mid_buffer() and self._buffered_inputs is not None:
            folder = Path(self._get_output_dir(trial=trial)) / f"checkpoint-{self.state.global_step}"
            torch.save(self._buffered_inputs, self._buffer_path(folder))

    def _restore_buffer(self, global_step: int) -> None:
        """TRL does not save its generation buffer nor the micro-step counter that picks
        slices of it; without both a resumed run trains one batch twice and shifts the rest."""
        self._step = global_step * self.args.gradient_accumulation_steps
        if self._resume_dir is None or not self._mid_buffer():
            return
        path = self._buffer_path(self._resume_dir)
        if path.is_file():  # our own file, written by _save_checkpoint
            self._buffered_inputs = torch.load(path, map_location=self.accelerator.device, weights_only=False)


class _Hooks(TrainerCallback):
    """The trainer's hooks the Trainer offers as callbacks: the start of training
    (the resumed buffer), after the update (the weights check), and the step's end
    (where a non-finite stop becomes a checkpoint and the end of training)."""

    def __init__(self, trainer: GrpoTrainer, report: Callable[[Event], None] | None):
        self.trainer = trainer
        self.report = report
        self._reported = 0

    def on_train_begin(self, args, state, control, **kw):
        self.trainer._restore_buffer(state.global_step)

    def on_optimizer_step(self, args, state, control, **kw):
        self.trainer.guard.after_update(state.global_step + 1, self.trainer._get_learning_rate())

    def on_step_end(self, args, state, control, **kw):
        guard = self.trainer.guard
        for event in guard.events[self._reported:]:
            if self.report is not None:
                self.report(event)
        self._reported = len(guard.events)
        if guard.stop is not None:
            # a checkpoint of the last finite state; never one of non-finite weights
            control.should_save = guard.stop.metric != "weights" or guard.stop.restored
            control.should_training_stop = True


__all__ = ["GrpoTrainer"]
