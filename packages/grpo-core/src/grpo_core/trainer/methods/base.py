"""What a learning method sees and returns: the advantages of one scored batch.

A method is registered by name (``register_advantages``; the built-ins are one file
each in this folder) as a factory of its parameters, ``factory(**params) -> method``.
The method object has

- ``rows(scored: Scored) -> Advantages``: one advantage per completion, for every
  process's rows of the batch trained (TRL gathers them alike, so every process computes
  the same values and keeps its own slice);
- optionally ``tokens(rows, extra, entropies, mask) -> Tensor[B, T]``: the advantage of
  each completion token, at loss time, from the policy's (detached) entropies there.
  ``rows`` and ``extra`` are the local rows' values from :meth:`rows`.

as verl's ``register_adv_est`` does for its estimators. The default, ``grpo``, returns
TRL's own advantages unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Scored:
    """One scored batch, every process's rows, in groups of ``group_size`` consecutive rows.

    ``rewards``: each reward's scores (NaN where it had no opinion); ``advantages``: TRL's
    own (its group normalisation of the weighted total); ``metric``: the correctness reward
    flat groups are judged on (``learning.metric``), with the scores that mean a right
    (``right``) and a wrong (``wrong``) answer."""

    rewards: Mapping[str, Any]  # name -> Tensor[N]
    weights: Sequence[float]
    advantages: Any  # Tensor[N]
    group_size: int
    metric: str | None = None
    right: float = 1.0
    wrong: float = 0.0

    def correctness(self):
        """The metric's scores, Tensor[N]."""
        if self.metric is None:
            raise ValueError("this learning method judges groups on a correctness reward: set learning.metric "
                             "to one of the config's rewards (math.correctness).")
        return self.rewards[self.metric]

    def verdicts(self):
        """Per row, its whole group's verdict on the metric: +1 when every completion of the
        group is right, -1 when every one is wrong, 0 otherwise (a spread, a partial score,
        or a completion the metric did not score)."""
        import torch

        c = self.correctness().view(-1, self.group_size)
        tol = 1e-6 * max(1.0, abs(self.right), abs(self.wrong))
        right = (c >= self.right - tol).all(dim=1)
        wrong = (c <= self.wrong + tol).all(dim=1)  # NaN compares False: an unscored row is neither
        per_group = right.to(torch.float32) - wrong.to(torch.float32)
        return per_group.repeat_interleave(self.group_size)


@dataclass
class Advantages:
    """A method's answer: ``rows`` (Tensor[N]) is what TRL's loss multiplies by; ``shaped``
    (Tensor[N] of bool, or None) marks rows whose tokens the method's ``tokens`` step gives
    their own advantages (they teach even when their row advantage is 0); ``extra``: per-row
    tensors the ``tokens`` step reads."""

    rows: Any
    shaped: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def teaching(self):
        """Per row: do its tokens carry a non-zero advantage?"""
        moving = self.rows != 0
        return moving if self.shaped is None else moving | self.shaped


class Method(Protocol):
    """``judges_correctness = True``: the method reads ``scored.verdicts()`` (the config must
    name a correctness reward, ``learning.metric``; checked before any model loads)."""

    def rows(self, scored: Scored) -> Advantages: ...


def finite(value: float, name: str) -> float:
    """A method parameter that must be a finite number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}.")
    return float(value)


__all__ = ["Scored", "Advantages", "Method", "finite"]
