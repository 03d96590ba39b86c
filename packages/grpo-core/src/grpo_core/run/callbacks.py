"""Trainer callbacks of ``grpo train``: metrics file and console line (the line's
text: :mod:`grpo_core.run.step_line`, its names re-exported here), health monitor, adaptive reward weights, and Ctrl-C that stops at a step boundary
with a checkpoint.

Importing this module imports transformers (only training needs it). Each callback does O(1) work per logged step, so ``grpo train`` adds nothing
measurable over the same TRL run.
"""

from __future__ import annotations

import json
import math
import signal
import sys
import time
from collections import deque
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from grpo_core.config.schema import AdaptiveSection, HealthSection
from grpo_core.run.step_line import clock_text, finite, reward_names, summary_line


class MetricsCallback(TrainerCallback):
    """Appends each log to ``metrics.jsonl`` (global step, stage) and prints the
    one-line summary. Replaces transformers' progress printer, which would print
    the whole log dict every step."""

    def __init__(self, path: Path, stage: str, step_offset: int = 0, console: bool = True,
                 stream=None):
        self.path = Path(path)
        self.stage = stage
        self.offset = step_offset
        self.console = console
        self.stream = stream or sys.stdout
        self._last = None
        self._start = None
        self._first_step = 0
        self._first_line = None  # (steps, seconds) at this process's first step line (clock_text)

    def on_train_begin(self, args, state, control, **kw):
        self._last = self._start = time.perf_counter()
        self._first_step = state.global_step  # a resumed run times only the steps it runs

    def on_log(self, args, state, control, logs=None, **kw):
        if not state.is_world_process_zero or not logs:
            return
        now = time.perf_counter()
        elapsed = None if self._last is None else now - self._last
        self._last = now
        step = self.offset + state.global_step
        record = {"step": step, "stage": self.stage, "stage_step": state.global_step, **logs,
                  "time": round(time.time(), 3)}
        with open(self.path, "a") as f:
            f.write(json.dumps(record, default=_json_default) + "\n")
        # a step that generated (its rewards), or one that trained a reused batch (num_iterations > 1)
        # after which held-out accuracy was measured
        if self.console and ("reward" in logs or "eval/accuracy" in logs):
            clock = None
            if self._start is not None:
                done = state.global_step - self._first_step
                if self._first_line is None and done > 0:
                    self._first_line = (done, now - self._start)
                clock = clock_text(now - self._start, done, state.max_steps - state.global_step, self._first_line)
            line = summary_line(step, self.offset + state.max_steps, logs,
                                self.stage if self.stage != "main" else None, elapsed, clock)
            print(line, file=self.stream, flush=True)
        elif self.console and "train_runtime" in logs:
            print(f"{self.stage if self.stage != 'main' else 'training'}: "
                  f"{state.global_step} steps in {logs['train_runtime']:.1f}s", file=self.stream, flush=True)

class HealthCallback(TrainerCallback):
    """Warns (log + ``health.jsonl``) when training stops learning."""

    def __init__(self, cfg: HealthSection, path: Path, stage: str = "main", step_offset: int = 0,
                 warn=None):
        self.cfg = cfg
        self.path = Path(path)
        self.stage = stage
        self.offset = step_offset
        self.warn = warn or (lambda msg: print(f"warning: {msg}", file=sys.stderr, flush=True))
        n = max(cfg.window, cfg.flat_window, 1)
        self.zero_std: deque = deque(maxlen=cfg.window)
        self.std: deque = deque(maxlen=cfg.window)
        self.kl: deque = deque(maxlen=cfg.window)
        self.sampler_kl: deque = deque(maxlen=cfg.window)
        self.rewards: deque = deque(maxlen=cfg.flat_window)
        self.n = n
        self.active: set[str] = set()
        self.events: list[dict] = []
        # held-out evaluations: (step, mean training reward since the previous one, accuracy)
        self.evals: deque[tuple[int, float, float]] = deque(maxlen=max(cfg.window, 2))
        self._since: list[float] = []
        self.stop: dict | None = None  # the divergence event that stops training (on_divergence: stop)
        self.main = True  # the main process writes health.jsonl and warns

    def _emit(self, step: int, check: str, message: str, value: float, threshold: float) -> None:
        if check in self.active:
            return  # already reported; report again only after it cleared
        self.active.add(check)
        event = {"step": step, "stage": self.stage, "check": check, "value": value,
                 "threshold": threshold, "message": message}
        self.events.append(event)
        if not self.main:
            return
        with open(self.path, "a") as f:
            f.write(json.dumps(event) + "\n")
        self.warn(f"step {step}: {message}")

    def _clear(self, check: str) -> None:
        self.active.discard(check)

    def on_log(self, args, state, control, logs=None, **kw):
        if not logs or ("reward" not in logs and "eval/accuracy" not in logs):
            return
        self.main = state.is_world_process_zero
        step = self.offset + state.global_step
        if "reward" in logs:
            self.check(step, logs)  # every process (TRL's logs are gathered): one decision
        else:  # a step that trained a reused batch (num_iterations > 1), held-out accuracy measured after it
            self._check_divergence(step, logs)
        if self.stop is not None:
            control.should_save = True
            control.should_training_stop = True

    def check(self, step: int, logs: dict) -> None:
        self._check_signal(step, logs)
        self._check_divergence(step, logs)

    def _check_divergence(self, step: int, logs: dict) -> None:
        """The training reward rose over the last ``window`` held-out evaluations while
        held-out accuracy fell: the model may be learning the rewards, not the task."""
        c = self.cfg
        r, acc = finite(logs.get("reward")), finite(logs.get("eval/accuracy"))
        if r is not None:
            self._since.append(r)
        if acc is None or not self._since:
            return
        self.evals.append((step, sum(self._since) / len(self._since), acc))
        self._since = []
        if len(self.evals) != self.evals.maxlen:  # (not full yet)
            return
        (s0, r0, a0), (s1, r1, a1) = self.evals[0], self.evals[-1]
        if r1 > r0 + 1e-6 and a1 < a0 - 1e-6:
            self._emit(step, "divergence",
                       f"the training reward rose {r0:.3f} -> {r1:.3f} while held-out accuracy fell {a0:.2f} -> "
                       f"{a1:.2f} (steps {s0}-{s1}, {len(self.evals)} evaluations): the model may be learning the "
                       f"rewards, not the task. Read what it wrote: grpo rollouts OUTPUT_DIR --suspect.",
                       a1 - a0, 0.0)
            if c.on_divergence == "stop" and self.events and self.events[-1]["check"] == "divergence":
                self.stop = self.events[-1]
        else:
            self._clear("divergence")

    def _check_signal(self, step: int, logs: dict) -> None:
        c = self.cfg
        z = finite(logs.get("frac_reward_zero_std"))
        if z is not None:
            self.zero_std.append(z)
            if len(self.zero_std) == c.window and min(self.zero_std) >= c.zero_std_frac:
                self._emit(step, "no_signal",
                           f"frac_reward_zero_std >= {c.zero_std_frac} for {c.window} steps "
                           f"(now {z:.2f}): most groups score all completions alike, so there "
                           f"is no learning signal. Give partial credit, loosen answer "
                           f"extraction, or raise temperature/num_generations "
                           f"(check with `grpo preflight`).", z, c.zero_std_frac)
            elif z < c.zero_std_frac:
                self._clear("no_signal")
        s = finite(logs.get("reward_std"))
        if s is not None:
            self.std.append(s)
            if len(self.std) == c.window and max(self.std) <= c.min_reward_std:
                self._emit(step, "collapse",
                           f"reward_std <= {c.min_reward_std} for {c.window} steps (now {s:.2g}): "
                           f"every completion gets the same reward (collapse or saturation).",
                           s, c.min_reward_std)
            elif s > c.min_reward_std:
                self._clear("collapse")
        kl = finite(logs.get("kl"))
        if kl is not None:  # averaged over the window: single-step spikes are noise
            self.kl.append(kl)
            mean_kl = sum(self.kl) / len(self.kl)
            if len(self.kl) == c.window and mean_kl > c.max_kl:
                self._emit(step, "kl", f"kl averaged {mean_kl:.3f} over {c.window} steps (> {c.max_kl}): "
                           f"the policy is drifting far from the reference; lower learning_rate "
                           f"or raise beta.", mean_kl, c.max_kl)
            elif mean_kl <= c.max_kl:
                self._clear("kl")
        self._check_sampler(step, logs)
        r = finite(logs.get("reward"))
        if r is not None and c.flat_window > 1:
            self.rewards.append(r)
            if len(self.rewards) == c.flat_window:
                spread = max(self.rewards) - min(self.rewards)
                if spread < c.flat_delta:
                    self._emit(step, "flat",
                               f"mean reward moved by {spread:.3g} (< {c.flat_delta}) over the "
                               f"last {c.flat_window} steps: training is not improving it.",
                               spread, c.flat_delta)
                else:
                    self._clear("flat")

    def _check_sampler(self, step: int, logs: dict) -> None:
        """The low-precision sampler drifting from the trainer (``sampling/kl``, averaged over
        the window): the gap grows as the policy concentrates (arXiv 2605.13907)."""
        c, kl = self.cfg, finite(logs.get("sampling/kl"))
        if kl is None:
            return
        self.sampler_kl.append(kl)
        mean_kl = sum(self.sampler_kl) / len(self.sampler_kl)
        if len(self.sampler_kl) == c.window and mean_kl > c.max_sampler_kl:
            self._emit(step, "sampler_kl", f"the sampler and the trainer differ by {mean_kl:.4f} nat a token "
                       f"over {c.window} steps (> {c.max_sampler_kl}): the lower-precision sampling copy no longer "
                       f"samples the policy trained. Set sampling.precision: float32, or keep TRL's correction on "
                       f"(vllm_importance_sampling_correction) and watch sampling/importance_sampling_ratio.",
                       mean_kl, c.max_sampler_kl)
        elif mean_kl <= c.max_sampler_kl:
            self._clear("sampler_kl")


class AdaptiveWeightsCallback(TrainerCallback):
    """Raises the weight of a reward the model rarely succeeds on and lowers it
    when it mostly does, within bounds; writes ``trainer.reward_weights`` (the
    tensor TRL multiplies rewards with) and logs ``weights/<name>``."""

    def __init__(self, cfg: AdaptiveSection, names: list[str], weights: list[float]):
        self.cfg = cfg
        self.names = list(names)
        self.base = [float(w) for w in weights]
        self.factors = [1.0] * len(weights)
        self.trainer: Any = None  # the GRPOTrainer, once bound
        self._seen = 0  # the trainer's generation batches already steered by

    def bind(self, trainer) -> None:
        self.trainer = trainer

    def success_rates(self) -> list[float | None]:
        per = self.trainer.batch_rewards()
        out = []
        for name in self.names:
            vals = [v for v in per.get(name, ()) if v is not None and not math.isnan(v)]
            out.append(sum(v >= self.cfg.threshold for v in vals) / len(vals) if vals else None)
        return out

    def update(self, rates: list[float | None]) -> list[float]:
        c = self.cfg
        for i, rate in enumerate(rates):
            if rate is None:
                continue
            f = self.factors[i] * math.exp(c.rate * (c.target - rate))
            self.factors[i] = min(max(f, c.min_factor), c.max_factor)
        return [b * f for b, f in zip(self.base, self.factors)]

    def on_step_end(self, args, state, control, **kw):
        if self.trainer is None or self.trainer.generations == self._seen:
            return  # no new generation batch since the last update (steps_per_generation, num_iterations)
        self._seen = self.trainer.generations
        rates = self.success_rates()
        weights = self.update(rates)
        tw = self.trainer.reward_weights
        for i, w in enumerate(weights):
            tw[i] = w
        for name, w, rate in zip(self.names, weights, rates):
            self.trainer.record_metric(f"weights/{name}", w)
            if rate is not None:
                self.trainer.record_metric(f"success/{name}", rate)

class InterruptCallback(TrainerCallback):
    """Ctrl-C or SIGTERM (a cluster's preemption): finish the current step, save a
    checkpoint, stop. A second signal quits at once."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.requested = False
        self.signum: int | None = None
        self._previous: dict = {}

    def install(self) -> None:
        for sig in self.SIGNALS:
            try:
                self._previous[sig] = signal.signal(sig, self._handler)
            except ValueError:  # not the main thread: leave signals alone
                return

    def uninstall(self) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}

    def _handler(self, signum, frame):
        if self.requested:
            if signum == signal.SIGTERM:
                raise SystemExit(128 + signum)
            raise KeyboardInterrupt
        self.requested = True
        self.signum = signum
        name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        print(f"\nInterrupted ({name}): finishing this step and saving a checkpoint "
              f"(send it again to quit without saving).", file=sys.stderr, flush=True)

    def on_step_end(self, args, state, control, **kw):
        if self.requested:
            control.should_save = True
            control.should_training_stop = True

    @property
    def exit_code(self) -> int:
        """The shell's code for death by that signal: 130 for Ctrl-C, 143 for SIGTERM."""
        return 128 + (self.signum or signal.SIGINT)


def _json_default(x):
    if hasattr(x, "item"):
        return x.item()
    return str(x)


__all__ = ["MetricsCallback", "HealthCallback", "AdaptiveWeightsCallback", "InterruptCallback", "summary_line",
           "reward_names"]
