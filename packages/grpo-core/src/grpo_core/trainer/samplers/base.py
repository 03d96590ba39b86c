"""What a prompt sampler sees and returns: which training prompts a generation batch draws.

A sampler is registered by name (``register_samplers``; the built-ins are one file each in
this folder) as a factory of its parameters, ``factory(**params) -> sampler``. The sampler
object has

- ``choose(pool, n, proposed) -> list[int]``: the rows of the training set (indices into
  ``pool``) whose prompts the next generation batch samples, ``n`` of them, one group of
  completions each, for every process (each process takes its share, as TRL lays them out).
  ``proposed``: the rows TRL's own sampler drew for this batch (its seeded shuffle), or
  dynamic sampling's fresh draw for a refill round;
- optionally ``start(pool)``: once, before training; raise ``ValueError`` (its text is shown,
  naming ``sampling.prompts``) for a pool it cannot work with;
- optionally ``observe(rows, passed)``: after every generation batch is scored (each of
  dynamic sampling's rounds too): per group, its row and its completions' pass scores in
  [0, 1] on the correctness reward (``learning.metric``; NaN where it gave none);
- optionally ``metrics() -> dict[str, float]``: logged as ``prompts/<key>`` after each
  observation (metrics.jsonl, the step line, ``grpo view``);
- optionally ``state() -> dict`` (JSON) and ``load(state)``: saved in every checkpoint, so
  ``--resume`` continues where the run stopped.

The choice is made before anything is generated and only from what was already scored: a
sampler spends no tokens of its own. Held-out accuracy never reads it (it is measured on the
dataset's held-out split as configured).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from grpo_core.data.difficulty import Difficulty


@dataclass(frozen=True)
class Pool:
    """The training prompts a sampler chooses among, fixed for the run.

    ``keys``: per row, the first row with the same prompt (rows that repeat a prompt share
    it: one prompt, one pass-rate estimate); ``difficulty``: per row, the dataset's declared
    difficulty (None when it declares none, or its rows lack the column); ``knob``: that
    declaration; ``say``: a line to the user (warnings start with ``warning:``)."""

    keys: Sequence[int]
    difficulty: Sequence[float] | None = None
    knob: Difficulty | None = None
    dataset: str = "the dataset"
    seed: int = 0
    group_size: int = 1
    say: Callable[[str], None] = print

    def __len__(self) -> int:
        return len(self.keys)


class Sampler(Protocol):
    """``judges_correctness = True``: it reads pass rates (the config must have a correctness
    reward, ``learning.metric``; checked before any model loads)."""

    def choose(self, pool: Pool, n: int, proposed: Sequence[int] | None) -> list[int]: ...


def pass_scores(values: Sequence[Any], right: float = 1.0, wrong: float = 0.0) -> list[float]:
    """A correctness reward's scores as pass scores in [0, 1] (``wrong`` -> 0, ``right`` -> 1);
    None and non-finite scores become NaN."""
    span = right - wrong
    out = []
    for v in values:
        x = math.nan if v is None else float(v)
        out.append(min(1.0, max(0.0, (x - wrong) / span)) if math.isfinite(x) and span else math.nan)
    return out


def flat(passed: Sequence[float]) -> bool:
    """Is a group flat on correctness: every scored completion the same (all right, all
    wrong)? A group with fewer than two scored completions is."""
    got = [p for p in passed if math.isfinite(p)]
    return len(got) < 2 or max(got) - min(got) <= 1e-6


__all__ = ["Pool", "Sampler", "pass_scores", "flat"]
