"""``GrpoTrainer``: ``trl.GRPOTrainer`` with what a real run on a GPU needs, and
the one module that touches TRL's and transformers' private names.

Every private name used (methods overridden or called, attributes read) is in
:data:`PRIVATE`; a test checks each against the installed TRL and names the
version and the name when one disappears. The rest of grpo calls the public
methods below (``learning_rate``, ``save_checkpoint_now``, ``rollout_batch``,
``last_batch_logs``, ``record_metric``, ...). The TRL versions tested are
``grpo_core.run.prepare.TESTED``, checked at start-up (the packaging bounds them the
same way).

Short overrides, nothing re-implemented:

- sampling runs under bf16 autocast where the weights are bf16 already (a LoRA
  base: the float32 adapters come along), with ``generation_threads`` torch threads
  on a CPU, and on CUDA with a static KV cache and compiled decoding (TRL builds its
  GenerationConfig with ``disable_compile=True``; decoding a small model eagerly is
  bound by kernel launches, not by the GPU);
- every optimizer step is checked for non-finite values (:mod:`.nonfinite`): the
  loss of each micro-batch, the gradient norm before the update, the trainable
  weights after it (finite, and not blown up by orders of magnitude). ``stop`` saves a checkpoint of the last finite state at that
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
  buffer slices by is restored, so every step trains what it would have;
- a checkpoint records the settings that trained it (:mod:`.resume`), and on
  ``--resume`` the configured learning rate replaces the one the restored
  scheduler carries;
- if compiling or the static cache fails, sampling goes on eagerly with one
  warning.
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

from grpo_core.base.errors import ConfigError
from grpo_core.config.precision import Precision, sampling_autocast
from grpo_core.rewards.policy import guard_added
from grpo_core.run import rollout_log
from grpo_core.run.dynamic import PromptStream, choose, flat_groups, merge
from grpo_core.run.generation import (
    PROMPT_BUCKET,
    disable_fast_generation,
    enable_fast_generation,
    fast_failed_message,
    torch_threads,
)
from grpo_core.run.nonfinite import Event, Guard, wants_snapshot
from grpo_core.run.resume import write

# every private name of TRL's GRPOTrainer (and transformers' Trainer) used here:
# methods overridden or called, attributes read or set
PRIVATE = ("_generate_single_turn", "_generate_and_score_completions", "_get_grad_norm", "_save_checkpoint",
           "_get_output_dir", "_load_optimizer_and_scheduler", "_get_learning_rate", "_prepare_inputs",
           "_buffered_inputs", "_step", "_logs", "_metrics", "_environment_pool", "_tokenizer")


class GrpoTrainer(GRPOTrainer):
    """``GRPOTrainer`` plus the keyword arguments below (all optional)."""

    def __init__(self, *args, precision: Precision | None = None, fast_generation: bool = False,
                 generation_threads: int | None = None, on_nonfinite: str = "stop",
                 snapshot: bool | str = "auto", max_skips: int = 10, max_jump: float = 100.0,
                 report: Callable[[Event], None] | None = None,
                 environment_rewards: dict | None = None, settings: dict | None = None, log=print,
                 guard_rewards: dict | None = None, rollout_log: dict | None = None, dynamic: dict | None = None,
                 **kwargs):
        super().__init__(*args, **kwargs)
        self.settings = settings  # what a checkpoint records (grpo_core.run.resume)
        # {folder, every, stage, offset, index}: where and which steps the rollout log keeps
        self.rollout_log = rollout_log
        self.generation_round = 0  # generations made for the current step (dynamic sampling makes more)
        self.generations = 0  # generation batches scored in training so far
        self.dynamic = dynamic  # {"max_rounds": N}: grpo_core.run.dynamic
        self.prompt_stream = self._prompt_stream() if dynamic else None
        self._pending_records: list = []  # dynamic sampling: a step's rounds, logged once chosen
        self.say = log  # (not `log`: that is the Trainer's own method)
        own = len(kwargs.get("reward_funcs") or [])  # (the builder passes them by keyword, as a list)
        if environment_rewards:
            self._name_environment_rewards(environment_rewards)
        if guard_rewards is not None:  # an environment's get_reward, which TRL adds, gets our rewards' policy

            guard_added(self.reward_funcs, self.reward_func_names, own, **guard_rewards)
        for callback in self.callback_handler.callbacks:
            if hasattr(callback, "bind"):  # callbacks that steer the trainer (adaptive weights)
                callback.bind(self)
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
        self.guard = Guard(params, policy=on_nonfinite, max_skips=max_skips, max_jump=max_jump,
                           snapshot=wants_snapshot(snapshot, params, sum(p.numel() for p in params)))
        self._resume_dir: str | None = None
        self.add_callback(_Hooks(self, report))

    def _name_environment_rewards(self, rewards: dict) -> None:
        """``rewards``: {TRL's environment key (None, or the route): (logged name, weight)}.
        TRL appends one reward column per environment class with ``get_reward``, in
        the order of its factories, after the rewards passed in."""
        keyed: dict[type, list] = {}
        for key, pool in self.environment_pool().items():
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
            try:
                return super()._generate_single_turn(prompt_ids, *args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - a model or torch where compiling fails samples eagerly
                if not self.fast_generation:
                    raise
                self.say(fast_failed_message(exc))
                self.fast_generation = False
                disable_fast_generation(self.generation_config)
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

            stack.enter_context(torch_threads(self.generation_threads))
        autocast = sampling_autocast(self.precision, device)
        if autocast:
            stack.enter_context(torch.autocast("cuda", dtype=getattr(torch, autocast)))
        return stack

    # ---------------------------------------------------------------- scoring and the rollout log

    def _generate_and_score_completions(self, inputs):
        if self.model.training and self.dynamic:
            return self._generate_dynamic(inputs)
        return self._score_round(inputs, 0)

    def _score_round(self, inputs, round_: int):
        training = self.model.training
        if training:
            self.clear_batch_logs()  # TRL's batch logs then hold this batch only
        self.generation_round = round_
        out = super()._generate_and_score_completions(inputs)
        if training:
            self.generations += 1
        if training and self.rollout_log is not None:
            records = self._rollout_records(inputs, out)
            if records is not None:
                if self.dynamic:
                    self._pending_records.append(records)  # written once the rounds' groups are chosen
                else:
                    self._write_records(records)
        return out

    # ---------------------------------------------------------------- dynamic sampling

    def _prompt_stream(self):
        local = self.args.per_device_train_batch_size * self.args.steps_per_generation
        if local % self.num_generations:
            raise ConfigError(
                f"sampling.dynamic needs each process's generation batch (per_device_train_batch_size x "
                f"steps_per_generation = {local}) to hold whole groups of num_generations = {self.num_generations}: "
                f"make it a multiple of {self.num_generations}.")
        return PromptStream(len(self.train_dataset), seed=self.args.seed + 1)

    def _generate_dynamic(self, inputs):
        """Rounds of generation until each process has its groups with a spread (or the
        rounds run out); see :mod:`grpo_core.run.dynamic`."""

        g, local, procs = self.num_generations, len(inputs) // self.num_generations, self.accelerator.num_processes
        outputs, flags = [], []
        self._pending_records = []
        for round_ in range(self.dynamic["max_rounds"]):
            batch = inputs if round_ == 0 else self._fresh_inputs(local)
            outputs.append(self._score_round(batch, round_))
            flags.append(self._flat_flags(g))
            if all(sum(not f for fl in flags for f in fl[p * local:(p + 1) * local]) >= local for p in range(procs)):
                break
        chosen = [choose([fl[p * local:(p + 1) * local] for fl in flags], local) for p in range(procs)]
        picks, _ = chosen[self.accelerator.process_index]
        self._write_chosen(chosen, local)
        generated = sum(len(fl) for fl in flags)
        for name, value in (("rounds", len(outputs)), ("groups_generated", generated),
                            ("groups_dropped", generated - local * procs),
                            ("flat_share_trained", sum(flat for _, flat in chosen) / (local * procs))):
            self.record_metric(f"sampling/{name}", float(value))
        if len(outputs) == 1:
            return outputs[0]
        out = merge(outputs, picks, g, self._tokenizer.pad_token_id)
        mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
        out["num_items_in_batch"] = self.accelerator.gather(mask.sum()).sum()
        return out

    def _write_chosen(self, chosen: list, local: int) -> None:
        """The rounds' log records, each group marked trained or dropped (the main process)."""
        trained = {(r, p * local + g) for p, (picks, _) in enumerate(chosen) for r, g in picks}
        for records in self._pending_records:
            for rec in records:
                rec["trained"] = (rec["round"], rec["group"]) in trained
            self._write_records(records)
        self._pending_records = []

    def _flat_flags(self, group_size: int) -> list[bool]:
        """Per group of the batch just scored: flat on the total, or on the reward ``metric``
        names. TRL's logs are gathered, the same on every process: so is the decision."""

        rewards = self._logs["rewards"]
        metric = self.dynamic.get("metric", "total")
        if metric == "total":
            return flat_groups([list(rewards[n]) for n in self.reward_func_names], self.reward_weights.tolist(),
                               group_size)
        return flat_groups([list(rewards[metric])], [1.0], group_size)

    def _fresh_inputs(self, local: int) -> list[dict]:
        """``local`` fresh prompts for this process (every process draws the same ones and
        takes its share), each repeated for its group."""
        drawn = self.prompt_stream.take(local * self.accelerator.num_processes)
        me = self.accelerator.process_index
        return [self.train_dataset[i] for i in drawn[me * local:(me + 1) * local] for _ in range(self.num_generations)]

    def _write_records(self, records: list[dict]) -> None:
        rollout_log.write(Path(self.rollout_log["folder"]), records[0]["step"], records, records[0]["round"])

    def _rollout_records(self, inputs: list[dict], out: dict) -> list[dict] | None:
        """The batch's log records on the main process (None elsewhere, or when the step is
        not one log.rollouts keeps); every process takes part in the gathers."""
        from accelerate.utils import gather_object

        cfg = self.rollout_log
        step = cfg["offset"] + self.state.global_step + 1
        if not rollout_log.logged(step, cfg["every"]):
            return None
        mask = out["completion_mask"] * out["tool_mask"] if "tool_mask" in out else out["completion_mask"]
        eos = {*self.eos_token_ids, self._tokenizer.pad_token_id}
        ends = [[t for t, m in zip(ids, kept) if m] for ids, kept in
                zip(out["completion_ids"].tolist(), out["completion_mask"].tolist())]
        truncated = torch.tensor([not real or real[-1] not in eos for real in ends], device=mask.device)
        tokens = self.accelerator.gather(mask.sum(dim=1)).tolist()
        truncated = self.accelerator.gather(truncated).tolist()
        rows = gather_object(inputs)
        if not self.accelerator.is_main_process or not rows:
            return None
        logs = self._logs
        return rollout_log.rows(
            step, cfg["stage"], self.generation_round, self.num_generations, rows, list(logs["completion"]),
            {name: list(logs["rewards"][name]) for name in self.reward_func_names}, self.reward_weights.tolist(),
            list(logs["advantages"]), {k: list(v) for k, v in logs["extra"].items()}, tokens, truncated,
            cfg["index"])

    # ---------------------------------------------------------------- non-finite guard

    def training_step(self, model, inputs, num_items_in_batch=None):
        loss = super().training_step(model, inputs, num_items_in_batch)
        self.guard.observe_loss(loss)
        return loss

    def _get_grad_norm(self, model, grad_norm=None):
        grad_norm = super()._get_grad_norm(model, grad_norm=grad_norm)
        self.guard.before_update(grad_norm, self.state.global_step + 1, self.learning_rate())
        return grad_norm

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

    def clear_batch_logs(self) -> None:
        from collections import defaultdict, deque

        self._logs = {"images": deque(), "prompt": deque(), "completion": deque(), "advantages": deque(),
                      "rewards": defaultdict(deque), "extra": defaultdict(deque)}

    def metrics(self, mode: str = "train") -> dict:
        """The metrics TRL collects until its next log (name -> values)."""
        return self._metrics[mode]

    def record_metric(self, name: str, value: float, mode: str = "train") -> None:
        self._metrics[mode][name].append(value)

    def environment_pool(self) -> dict:
        return self._environment_pool

    @property
    def text_tokenizer(self):
        return self._tokenizer

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
        folder = Path(self._get_output_dir(trial=trial)) / f"checkpoint-{self.state.global_step}"
        if self._mid_buffer() and self._buffered_inputs is not None:
            torch.save(self._buffered_inputs, self._buffer_path(folder))
        if self.accelerator.is_main_process and folder.is_dir():
            if self.settings is not None:

                write(folder, self.settings)
            if self.prompt_stream is not None:
                self.prompt_stream.save(folder)

    def _load_optimizer_and_scheduler(self, checkpoint):
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is not None:
            self._take_learning_rate(self.args.learning_rate)

    def _take_learning_rate(self, lr: float) -> None:
        """The restored scheduler keeps the checkpoint's base rate: the configured one
        replaces it, on the schedule of the current step (a LambdaLR, as TRL's are)."""
        sched, opt = self.lr_scheduler, self.optimizer
        lambdas = getattr(sched, "lr_lambdas", None)
        if lambdas is None or opt is None or all(b == lr for b in sched.base_lrs):
            return
        sched.base_lrs = [lr] * len(sched.base_lrs)
        for group, fn in zip(opt.param_groups, lambdas):
            group["initial_lr"] = lr
            group["lr"] = lr * fn(sched.last_epoch)
        sched._last_lr = [group["lr"] for group in opt.param_groups]

    def _restore_buffer(self, global_step: int) -> None:
        """TRL does not save its generation buffer nor the micro-step counter that picks
        slices of it; without both a resumed run trains one batch twice and shifts the rest."""
        self._step = global_step * self.args.gradient_accumulation_steps
        if self._resume_dir is not None and self.prompt_stream is not None:
            self.prompt_stream.load(self._resume_dir)
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
        self.trainer.guard.after_update(state.global_step + 1, self.trainer.learning_rate())

    def on_step_end(self, args, state, control, **kw):
        guard = self.trainer.guard
        for event in guard.events[self._reported:]:
            if self.report is not None:
                self.report(event)
        self._reported = len(guard.events)
        if guard.stop is not None:
            # a checkpoint of the last finite state; never one of non-finite weights
            control.should_save = guard.stop.saves_checkpoint
            control.should_training_stop = True


__all__ = ["GrpoTrainer", "PRIVATE"]
