"""Exact resume: ``--resume`` trains every step as the uninterrupted run would have.

- TRL keeps a generation buffer (``steps_per_generation`` or ``num_iterations``
  above 1) and a micro-step counter that picks slices of it, and saves neither:
  resumed inside a buffer, a run would train one batch twice and shift the rest.
  A checkpoint inside a buffer also holds the buffered batches
  (``grpo_buffer-rank<N>.pt``, one per process), and the counter is set from the
  global step when training starts.
- grpo's own state (dynamic sampling's prompt stream) is saved with every
  checkpoint by the main process and loaded back by every process.
- A checkpoint records the settings that trained it (:mod:`grpo_core.run.resume`).
- The restored scheduler keeps the checkpoint's base learning rate, and the
  optimizer the rate of the checkpoint's schedule: the configured rate replaces
  the one, the configured schedule's rate at the checkpoint's step the other
  (:func:`take_learning_rate`).

The trainer hands over TRL's private values (the counter, the buffer); nothing
here touches TRL.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

SETTINGS = "grpo_settings.json"  # the run's settings, in every checkpoint (read by run/resume.py)


def write_settings(folder: Path, settings: dict) -> None:
    import json

    (Path(folder) / SETTINGS).write_text(json.dumps(settings, indent=2, default=str) + "\n")


BUFFER = "grpo_buffer-rank{rank}.pt"


class State(Protocol):
    """State of grpo's own that a checkpoint carries (dynamic sampling's prompt stream)."""

    def save(self, folder: Path) -> None: ...

    def load(self, folder: Path) -> bool: ...


@dataclass(frozen=True)
class ResumeSettings:
    """What each checkpoint records of the run's settings (``resume.settings_of``); None: nothing."""

    record: dict | None = None


class ExactResume:
    """A trainer's checkpoints made resumable exactly; see the module docstring.
    ``every``: micro-steps one generation buffer serves (``steps_per_generation x
    num_iterations``); ``rank``: the process's index."""

    def __init__(self, settings: ResumeSettings, *, every: int, rank: int = 0, states: Sequence[State] = ()):
        self.settings = settings
        self.every = every
        self.rank = rank
        self.states = list(states)
        self.resume_dir: Path | None = None

    def start(self, resume_from_checkpoint: Any) -> None:
        """``trainer.train``'s argument: a checkpoint folder, or anything else (no resume)."""
        self.resume_dir = Path(resume_from_checkpoint) if isinstance(resume_from_checkpoint, (str, os.PathLike)) else None

    def mid_buffer(self, micro_step: int) -> bool:
        """Does TRL's micro-step counter stand inside a generation buffer?"""
        return self.every > 1 and micro_step % self.every != 0

    def buffer_path(self, checkpoint: str | os.PathLike) -> Path:
        return Path(checkpoint) / BUFFER.format(rank=self.rank)

    def save(self, folder: Path, micro_step: int, buffered: Any, main: bool) -> None:
        """After TRL saved the checkpoint ``folder``: the buffer (inside one), and on the
        main process the settings record and grpo's own state."""
        if self.mid_buffer(micro_step) and buffered is not None:
            import torch

            torch.save(buffered, self.buffer_path(folder))
        if main and folder.is_dir():
            if self.settings.record is not None:
                write_settings(folder, self.settings.record)
            for state in self.states:
                state.save(folder)

    def restore(self, micro_step: int, device: Any = None) -> Any:
        """When training starts (``micro_step``: the counter set from the global step):
        grpo's own state loaded, and the buffered batches to put back (None: none)."""
        if self.resume_dir is None:
            return None
        for state in self.states:
            state.load(self.resume_dir)
        path = self.buffer_path(self.resume_dir)
        if not self.mid_buffer(micro_step) or not path.is_file():  # our own file, written by save
            return None
        import torch

        return torch.load(path, map_location=device, weights_only=False)


def take_learning_rate(scheduler: Any, optimizer: Any, lr: float) -> None:
    """The restored scheduler keeps the checkpoint's base rate: ``lr`` replaces it, on
    the schedule of the current step (a LambdaLR, as TRL's are). The restored optimizer
    keeps the rate the checkpoint's schedule set for the next step: it is set from the
    schedule now (another max_steps or warm-up moves it; TRL would train the next step
    at the old rate, 0 after a finished linear schedule)."""
    lambdas = getattr(scheduler, "lr_lambdas", None)
    if lambdas is None or optimizer is None:
        return
    scheduler.base_lrs = [lr] * len(scheduler.base_lrs)
    for group, fn in zip(optimizer.param_groups, lambdas):
        group["initial_lr"] = lr
        group["lr"] = lr * fn(scheduler.last_epoch)
    scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]


__all__ = ["ExactResume", "ResumeSettings", "State", "take_learning_rate", "BUFFER"]
