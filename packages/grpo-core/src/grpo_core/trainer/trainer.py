"""``GrpoTrainer``: ``trl.GRPOTrainer`` with what a real run needs, and the one module
that touches TRL's and transformers' private names.

It overrides TRL where it must and hands each override to a feature, a module of
its own with a typed settings object (:class:`~grpo_core.trainer.features.Features`):
fast sampling (:mod:`.generation`), dynamic sampling (:mod:`.dynamic`), the rollout
log (:mod:`.rollout_log`), the non-finite guard (:mod:`.nonfinite`), exact resume
(:mod:`.exact_resume`), environments' reward columns (:mod:`.reward_columns`), each
group's prompt computed once in the training pass (:mod:`.shared_prompt`).
One generation batch goes down :class:`~grpo_core.trainer.chain.Chain` as a typed value
(:class:`~grpo_core.trainer.batch.Batch`): the features see the batch and their settings,
never the trainer, which lends the chain TRL's own steps as functions (:meth:`score_round`,
:meth:`reference_logps`). TRL's private names are used here only: every one is in
:data:`PRIVATE`, and a test checks each against the installed TRL (the versions tested are
``grpo_core.run.prepare.TESTED``, checked at start-up).
"""

from __future__ import annotations

import time
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback
from trl import GRPOTrainer
from trl.trainer.utils import use_adapter

from grpo_core.trainer import reward_columns
from grpo_core.trainer.batch import Batch, Round
from grpo_core.trainer.chain import Chain
from grpo_core.trainer.decoding import FastSampling
from grpo_core.trainer.dynamic import DynamicSampling
from grpo_core.trainer.exact_resume import ExactResume, take_learning_rate
from grpo_core.trainer.features import Features
from grpo_core.trainer.nonfinite import Event, Guard
from grpo_core.trainer.prompts import Prompts
from grpo_core.trainer.rollout_log import RolloutLog
from grpo_core.trainer.shared_prompt import shared_prompt, usable

# every private name of TRL's GRPOTrainer (and transformers' Trainer) used here:
# methods overridden or called, attributes read or set
PRIVATE = ("_generate_single_turn", "_generate", "_generate_and_score_completions", "_get_grad_norm", "_save_checkpoint",
           "_get_output_dir", "_load_optimizer_and_scheduler", "_get_learning_rate", "_prepare_inputs",
           "_buffered_inputs", "_step", "_logs", "_metrics", "_environment_pool", "_tokenizer",
           "_get_per_token_logps_and_entropies", "_compute_loss", "_clip_grad_norm")


class GrpoTrainer(GRPOTrainer):
    """``GRPOTrainer`` plus ``features`` (their settings), ``report`` (called with each
    non-finite :class:`~grpo_core.trainer.nonfinite.Event`) and ``log`` (one line of text)."""

    # TRL applies its importance-sampling correction (vllm_importance_sampling_correction, its
    # mode and caps) where ``use_vllm`` is true: while one batch is scored after a sampler that
    # returned its tokens' log-probabilities (sampling.precision), and while the loss of such a
    # batch is computed, ``use_vllm`` reads true (:attr:`use_vllm`); never while generating.
    _correcting = False
    beta: float  # TRL's KL coefficient (set in its __init__)

    @property
    def use_vllm(self) -> bool:
        return self._vllm or self._correcting

    @use_vllm.setter
    def use_vllm(self, value: bool) -> None:
        self._vllm = value

    def __init__(self, *args, features: Features = Features(), report: Callable[[Event], None] | None = None,
                 log: Callable[[str], None] = print, **kwargs):
        super().__init__(*args, **kwargs)
        self.features = features
        self.say = log  # (not `log`: that is the Trainer's own method)
        self._batch_rewards: Mapping | None = None  # each reward's scores on the last batch trained
        own = len(kwargs.get("reward_funcs") or [])  # (the builder passes them by keyword, as a list)
        if features.environment_rewards:  # each environment's reward column, named and weighed as configured
            reward_columns.name_columns(self._environment_pool, self.reward_funcs, self.reward_func_names,
                                        self.reward_weights, features.environment_rewards)
        if features.rewards is not None:  # the failure policy, for the rewards TRL adds too
            features.rewards.guard_added(self.reward_funcs, self.reward_func_names, own, log)
        for callback in self.callback_handler.callbacks:
            if hasattr(callback, "bind"):  # callbacks that steer the trainer (adaptive weights)
                callback.bind(self)
        self.sampler = FastSampling(features.sampling, self.generation_config, self.max_completion_length,
                                    vllm=self.use_vllm, log=log, model=self.model, eos=list(self.eos_token_ids),
                                    pad=self._tokenizer.pad_token_id)
        if features.trainable is not None:
            _cast_trainable(self.model, getattr(torch, features.trainable))
        named = list(self.model.named_parameters())
        self.guard = Guard.of(features.guard, [p for _, p in named], names=[n for n, _ in named])
        self.generations = 0  # generation rounds scored in training so far
        self.chain = self._chain(features, log)
        self.shares_prompt = usable(self.model, features.shared_prompt, self.accelerator.device.type)
        self._loss_batch: dict | None = None  # the micro-batch whose token advantages the method shapes (loss time)
        self.resume = ExactResume(features.resume, every=self.args.steps_per_generation * self.num_iterations,
                                  rank=self.accelerator.process_index, states=self.chain.states())
        self.add_callback(_Hooks(self, report))

    def _chain(self, features: Features, log: Callable[[str], None]) -> Chain:
        """The chain of one batch, each feature given its settings and the run's shape, and
        TRL's two steps it calls (:meth:`score_round`, :meth:`reference_logps`)."""
        g, args, pad = self.num_generations, self.args, self._tokenizer.pad_token_id
        rollout_log = None if features.rollout_log is None else RolloutLog(
            features.rollout_log, group_size=g, ends={*self.eos_token_ids, pad})
        dynamic = None if features.dynamic is None else DynamicSampling(
            features.dynamic, self.train_dataset, group_size=g, seed=args.seed + 1, pad_id=pad,
            local_batch=args.per_device_train_batch_size * args.steps_per_generation)
        prompts = None if features.prompts is None else Prompts(  # sampling.prompts (None: TRL's own)
            features.prompts, self.train_dataset, group_size=g, seed=args.seed, log=log)
        if dynamic is not None and prompts is not None:
            dynamic.choose = prompts.draw  # refill rounds' prompts: the sampler's too
        return Chain(features.learning, score=self.score_round, reference=self.reference_logps,
                     processes=self.accelerator, prompts=prompts, dynamic=dynamic, rollout_log=rollout_log,
                     vllm=self._vllm)

    # ---------------------------------------------------------------- TRL's methods, overridden

    def _generate_single_turn(self, prompt_ids, *args, **kwargs):
        sample = partial(super()._generate_single_turn, prompt_ids, *args, **kwargs)
        start = time.perf_counter()
        completion_ids, logprobs = self.sampler.sample(sample, prompt_ids, self.accelerator.device.type)
        if self.model.training:  # what a generated token costs, as the trainer samples (sampling.precision)
            seconds, tokens = time.perf_counter() - start, sum(len(ids) for ids in completion_ids)
            self.record_metric("sampling/seconds", seconds)
            self.record_metric("sampling/seconds_per_token", seconds / max(tokens, 1))
        return completion_ids, logprobs

    def _generate(self, prompts):
        out = super()._generate(prompts)
        # the sampled tokens' log-probabilities came back (sampling_per_token_logps): TRL corrects
        self._correcting = not self._vllm and self.sampler.corrects and out[4] is not None \
            and self.args.vllm_importance_sampling_correction
        return out

    def _generate_and_score_completions(self, inputs):
        if not self.model.training:
            return self._scored(inputs)
        batch = Batch(self.state.global_step, inputs, list(self.reward_func_names), self.reward_weights.tolist(),
                      self.num_generations)
        batch = self.chain.batch(batch, self._metrics["train"])  # sample, score, merge, advantages, log
        self._batch_rewards = batch.scores()
        return batch.tensors  # the loss inputs

    def _compute_loss(self, model, inputs):
        self._correcting = "importance_sampling_ratio" in inputs and not self._vllm
        try:
            return self._method_loss(model, inputs)
        finally:
            self._correcting = False

    def _method_loss(self, model, inputs):
        if not (self.chain.shapes_tokens and self.model.training):
            return super()._compute_loss(model, inputs)
        # a copy: TRL's buffer keeps the per-row advantages (num_iterations > 1 reuses them)
        self._loss_batch = dict(inputs)
        try:
            return super()._compute_loss(model, self._loss_batch)
        finally:
            self._loss_batch = None

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs):
        with shared_prompt(model, input_ids.size(1) - logits_to_keep, self.shares_prompt):
            logps, entropies, aux = super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, *args, **kwargs)
        batch = self._loss_batch
        if batch is not None and entropies is not None:  # the loss's own call: TRL reads the advantages next
            self._loss_batch = None
            mask = batch["completion_mask"] * batch["tool_mask"] if "tool_mask" in batch else batch["completion_mask"]
            batch["advantages"] = self.chain.token_advantages(batch, entropies, mask)
        return logps, entropies, aux

    def training_step(self, model, inputs, num_items_in_batch=None):
        with self.sampler.step_threads(self.accelerator.device.type):  # (generation_threads: auto)
            loss = super().training_step(model, inputs, num_items_in_batch)
        self.guard.observe_loss(loss)
        return loss

    def _clip_grad_norm(self, model):
        self.guard.observe_gradients()  # before clipping by a non-finite norm turns every gradient NaN
        return super()._clip_grad_norm(model)

    def _get_grad_norm(self, model, grad_norm=None):
        if grad_norm is None:  # max_grad_norm 0: the norm is taken here, by clipping with an infinite bound
            self.guard.observe_gradients()
        grad_norm = super()._get_grad_norm(model, grad_norm=grad_norm)
        self.guard.before_update(grad_norm, self.state.global_step + 1, self.learning_rate())
        return grad_norm

    def train(self, resume_from_checkpoint=None, *args, **kwargs):
        self.resume.start(resume_from_checkpoint)
        return super().train(resume_from_checkpoint, *args, **kwargs)

    def _save_checkpoint(self, model, trial):
        super()._save_checkpoint(model, trial)
        folder = Path(self._get_output_dir(trial=trial)) / f"checkpoint-{self.state.global_step}"
        self.resume.save(folder, self._step, self._buffered_inputs, self.accelerator.is_main_process)

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is not None:
            take_learning_rate(self.lr_scheduler, self.optimizer, self.args.learning_rate)

    def _restore_buffer(self, global_step: int) -> None:
        """TRL saves neither its generation buffer nor the micro-step counter that picks
        slices of it: both put back (:mod:`.exact_resume`)."""
        self._step = global_step * self.args.gradient_accumulation_steps
        buffered = self.resume.restore(self._step, self.accelerator.device)
        if buffered is not None:
            self._buffered_inputs = buffered

    # ---------------------------------------------------------------- TRL's steps lent to the chain

    def score_round(self, inputs: list[dict], round_: int = 0, reference: bool = True) -> Round:
        """TRL's generation and scoring of one round of a training batch (the chain's score
        step; ``round_``: dynamic sampling's refill rounds). ``reference=False`` leaves out the
        reference model's log-probs (beta > 0): dynamic sampling's chain computes them once,
        for the rows it trains (:meth:`reference_logps`), not for groups it drops."""
        self.clear_batch_logs()  # TRL's batch logs then hold this round only
        tensors = self._scored(inputs, reference)
        self.generations += 1
        return Round(round_, inputs, tensors, self._logs)

    def _scored(self, inputs: list[dict], reference: bool = True) -> dict:
        """TRL's generate-and-score of ``inputs`` (out of training: all there is to it)."""
        beta = self.beta
        if not reference:
            self.beta = 0.0  # TRL's one use of it while scoring: whether to run the reference model
        try:
            return super()._generate_and_score_completions(inputs)
        finally:
            self.beta = beta
            self._correcting = False

    @torch.no_grad()
    def reference_logps(self, batch: dict) -> torch.Tensor | None:
        """The reference model's per-token log-probs of a text batch of TRL's shape, as TRL
        computes them while scoring (the reference model, else the adapters disabled or the
        ``ref`` adapter); None when beta is 0 (TRL uses none)."""
        if self.beta == 0.0:
            return None
        ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
        mask = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
        args = (ids, mask, batch["completion_ids"].size(1))
        size = self.args.per_device_train_batch_size
        if self.ref_model is not None:
            return self._get_per_token_logps_and_entropies(self.ref_model, *args, batch_size=size)[0]
        model = self.accelerator.unwrap_model(self.model)
        with use_adapter(model, adapter_name="ref" if "ref" in model.peft_config else None):
            return self._get_per_token_logps_and_entropies(self.model, *args, batch_size=size)[0]

    # ---------------------------------------------------------------- what the rest of grpo calls

    def learning_rate(self) -> float:
        return self._get_learning_rate()

    def save_checkpoint_now(self) -> None:
        """A checkpoint of the last completed step, now (after a crash inside a step)."""
        self._save_checkpoint(self.model, trial=None)

    def rollout_batch(self, inputs: list[dict]) -> dict:
        """Generate and score one batch as training does, nothing trained (preflight, eval)."""
        return self._generate_and_score_completions(inputs)

    def last_batch_logs(self) -> dict:
        """What TRL logged of the batches since :meth:`clear_batch_logs`: prompts,
        completions, per-reward scores, advantages, ``log_extra`` columns."""
        return self._logs

    def batch_rewards(self) -> Mapping:
        """Each reward's scores on the last batch trained (``Batch.scores``: dynamic
        sampling's picks over its rounds), else on the last batch scored."""
        return self._batch_rewards if self._batch_rewards is not None else self._logs["rewards"]

    def clear_batch_logs(self) -> None:
        self._logs: dict[str, Any] = {"images": deque(), "prompt": deque(), "completion": deque(), "advantages": deque(),
                      "rewards": defaultdict(deque), "extra": defaultdict(deque)}

    def metrics(self, mode: str = "train") -> dict:
        """The metrics TRL collects until its next log (name -> values)."""
        return self._metrics[mode]

    def record_metric(self, name: str, value: float, mode: str = "train") -> None:
        self._metrics[mode][name].append(value)

    @property
    def text_tokenizer(self):
        return self._tokenizer


def _cast_trainable(model, dtype: torch.dtype) -> None:
    """Pure low precision: adapters too (peft upcasts them to float32)."""
    for p in model.parameters():
        if p.requires_grad and p.dtype != dtype:
            p.data = p.data.to(dtype)


class _Hooks(TrainerCallback):
    """The trainer's hooks the Trainer offers as callbacks: the start of training
    (the resumed buffer), after the update (the weights check), and the step's end
    (where a non-finite stop becomes a checkpoint and the end of training)."""

    def __init__(self, trainer: GrpoTrainer, report: Callable[[Event], None] | None):
        self.trainer = trainer
        self.report = report

    def on_train_begin(self, args, state, control, **kw):
        self.trainer._restore_buffer(state.global_step)

    def on_optimizer_step(self, args, state, control, **kw):
        self.trainer.guard.after_update(state.global_step + 1, self.trainer.learning_rate())

    def on_step_end(self, args, state, control, **kw):
        guard = self.trainer.guard
        for event in guard.unreported():
            if self.report is not None:
                self.report(event)
        if guard.stop is not None:
            # a checkpoint of the last finite state; never one of non-finite weights
            control.should_save = guard.stop.saves_checkpoint
            control.should_training_stop = True


__all__ = ["GrpoTrainer", "PRIVATE"]
