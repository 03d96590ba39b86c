"""Scoring completions with composed rewards outside training, as TRL would call
them, plus the statistics that tell whether rewards give a learning signal
(used by ``grpo score``, ``grpo preflight`` and ``grpo eval``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from grpo_core.base.timelimit import RewardTimeout, call_within, report_once


@dataclass
class RewardStats:
    """Running statistics of one reward's values (``None`` counted apart)."""

    name: str
    n: int = 0
    none: int = 0
    zeros: int = 0
    total: float = 0.0
    total_sq: float = 0.0
    low: float = math.inf
    high: float = -math.inf

    def add(self, values: Sequence[float | None]) -> None:
        for v in values:
            self.n += 1
            if v is None or (isinstance(v, float) and math.isnan(v)):
                self.none += 1
                continue
            v = float(v)
            self.total += v
            self.total_sq += v * v
            self.low = min(self.low, v)
            self.high = max(self.high, v)
            if v == 0.0:
                self.zeros += 1

    @property
    def scored(self) -> int:
        return self.n - self.none

    @property
    def mean(self) -> float:
        return self.total / self.scored if self.scored else math.nan

    @property
    def std(self) -> float:
        """Population standard deviation of the scored values."""
        if not self.scored:
            return math.nan
        var = self.total_sq / self.scored - self.mean**2
        return math.sqrt(max(var, 0.0))

    def as_dict(self) -> dict[str, Any]:
        scored = self.scored
        return {
            "reward": self.name,
            "n": self.n,
            "mean": self.mean,
            "std": self.std,
            "min": self.low if scored else math.nan,
            "max": self.high if scored else math.nan,
            "none_share": self.none / self.n if self.n else math.nan,
            "zero_share": self.zeros / self.n if self.n else math.nan,
        }


@dataclass
class GroupStats:
    """Share of groups of G consecutive completions whose total reward has zero
    spread: GRPO's advantage is 0 for every member, so they teach nothing."""

    size: int
    groups: int = 0
    flat: int = 0
    _pending: list = field(default_factory=list)

    def add(self, totals: Sequence[float]) -> None:
        self._pending.extend(totals)
        while len(self._pending) >= self.size:
            group, self._pending = self._pending[: self.size], self._pending[self.size :]
            self.groups += 1
            if max(group) - min(group) <= 1e-9:
                self.flat += 1

    @property
    def leftover(self) -> int:
        return len(self._pending)

    @property
    def flat_share(self) -> float:
        return self.flat / self.groups if self.groups else math.nan


def _ignore(*args, **kwargs) -> None:
    return None


def call_reward(reward, completions: list, columns: dict[str, list], prompts: list | None = None,
                completion_ids: list | None = None, log_extra=_ignore, log_metric=_ignore,
                group_size: int | list[int] | None = None) -> list[float | None]:
    """Call ``reward`` exactly as TRL does (keywords only, every column), within its
    time limit: past it, :class:`~grpo_core.base.timelimit.RewardTimeout` is raised, the
    reward is reported once and marked ``timed_out`` (callers then skip it). A reward
    under the failure policy (``rewards/policy.py``, ``guarded``) keeps its own limit.
    ``group_size``: the groups of the batch, for a group reward (``rewards/groups.py``)."""
    grouping = {} if group_size is None else {"group_size": group_size}

    def call():
        values = reward(
            prompts=prompts if prompts is not None else [None] * len(completions),
            completions=completions,
            completion_ids=completion_ids,
            trainer_state=None,
            log_metric=log_metric,
            log_extra=log_extra,
            **grouping,
            **columns,
        )
        if hasattr(values, "__await__"):
            import asyncio

            values = asyncio.run(values)
        return values

    name = getattr(reward, "__name__", "reward")
    try:
        limit = None if getattr(reward, "guarded", False) else getattr(reward, "time_limit", None)
        values = call_within(limit, call, f"reward '{name}'")
    except RewardTimeout as exc:
        if hasattr(reward, "timed_out"):
            reward.timed_out = True
        report_once(name, getattr(reward, "source", ""), exc)
        raise
    values = list(values)
    if len(values) != len(completions):
        raise ValueError(
            f"reward '{getattr(reward, '__name__', reward)}' returned {len(values)} values for "
            f"{len(completions)} completions"
        )
    return values


@dataclass
class ScoredBatch:
    """One batch scored by every reward: per-reward values, TRL's weighted totals,
    and what the rewards logged (``log_extra`` columns, ``log_metric`` values)."""

    per_reward: list[list[float | None]]
    totals: list[float]
    extras: dict[str, list] = field(default_factory=dict)
    metrics: dict[str, list] = field(default_factory=dict)


ROW_ONLY = ("prompt", "completion", "completion_ids")


def score_batch(funcs: Sequence, weights: Sequence[float], completions: list, rows: Sequence[dict] = (),
                prompts: list | None = None, completion_ids: list | None = None,
                columns: dict[str, list] | None = None, skip_model_rewards: bool = False,
                group_size: int | list[int] | None = None) -> ScoredBatch:
    """Score a batch the way TRL does: each reward called once, with every dataset
    column of ``rows`` (one row per completion) or ``columns``, the prompts and the
    token ids. ``skip_model_rewards``: a reward that needs a model (a reward model)
    scores None instead of loading it. A reward past its time limit scores None here, and
    in every later batch (it is reported once; training calls it every step).
    ``group_size``: the groups of the batch (an int, or each group's size in turn), handed
    to every reward: a group reward is called once per group, the others ignore it."""

    if columns is None:
        keys = [k for k in (rows[0] if rows else {}) if k not in ROW_ONLY]
        columns = {k: [r.get(k) for r in rows] for k in keys}
    extras: dict[str, list] = {}
    metrics: dict[str, list] = {}

    def log_extra(name: str, values: list) -> None:
        extras.setdefault(name, []).extend(values)

    def log_metric(name: str, value: float) -> None:
        metrics.setdefault(name, []).append(float(value))

    per_reward: list[list[float | None]] = []
    for f in funcs:
        if (skip_model_rewards and needs_model(f)) or getattr(f, "timed_out", False):
            per_reward.append([None] * len(completions))
            continue
        try:
            per_reward.append(call_reward(f, completions, columns, prompts, completion_ids, log_extra, log_metric,
                                          group_size))
        except RewardTimeout:
            per_reward.append([None] * len(completions))
    return ScoredBatch(per_reward, weighted_totals(per_reward, weights), extras, metrics)


def needs_model(reward) -> bool:
    """A reward that loads a model to score (``model.classifier``), guarded or not."""
    reward = getattr(reward, "reward", reward) if getattr(reward, "guarded", False) else reward
    return bool(getattr(getattr(reward, "func", reward), "grpo_needs_model", False))


def weighted_totals(per_reward: list[list[float | None]], weights: Sequence[float]) -> list[float]:
    """TRL's total: the weighted sum with ``None`` treated as missing (nansum)."""
    n = len(per_reward[0]) if per_reward else 0
    totals = []
    for i in range(n):
        s = 0.0
        for values, w in zip(per_reward, weights):
            v = values[i]
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                s += w * float(v)
        totals.append(s)
    return totals


def group_advantages(totals: Sequence[float]) -> list[float]:
    """TRL's default advantage for one group: (r - mean) / (std + 1e-4), with the
    unbiased std as ``torch.std`` computes it (``scale_rewards="group"``)."""
    n = len(totals)
    mean = sum(totals) / n
    std = math.sqrt(sum((t - mean) ** 2 for t in totals) / (n - 1)) if n > 1 else 0.0
    return [(t - mean) / (std + 1e-4) for t in totals]


def _best(totals: Sequence[float]) -> set[int]:
    top = max(totals)
    return {i for i, t in enumerate(totals) if t >= top - 1e-9}


@dataclass
class Comparison:
    """Two reward sets over the same groups of completions (``grpo score --against``).

    Per group: the best completion *changes* when no completion is top-scoring under
    both sets (a flat group is all top-scoring, so it never changes); a completion's
    advantage *flips* when it is positive under one set and negative under the other.
    ``rows`` keeps the ``top`` completions whose advantage moves most."""

    top: int = 5
    groups: int = 0
    best_changed: int = 0
    completions: int = 0
    flipped: int = 0
    rows: list = field(default_factory=list)  # (|moved|, line, total A, total B, adv A, adv B, excerpt)

    def add_group(self, lines: Sequence, a: Sequence[float], b: Sequence[float], excerpts: Sequence[str]) -> None:
        import heapq

        adv_a, adv_b = group_advantages(a), group_advantages(b)
        self.groups += 1
        self.best_changed += not (_best(a) & _best(b))
        self.completions += len(a)
        self.flipped += sum(x * y < 0 for x, y in zip(adv_a, adv_b))
        for i, line in enumerate(lines if self.top > 0 else ()):
            item = (abs(adv_b[i] - adv_a[i]), line, a[i], b[i], adv_a[i], adv_b[i], excerpts[i])
            if len(self.rows) < self.top:
                heapq.heappush(self.rows, item)
            elif item[0] > self.rows[0][0]:
                heapq.heapreplace(self.rows, item)

    def as_dict(self) -> dict[str, Any]:
        keys = ("moved", "line", "total", "against_total", "advantage", "against_advantage", "completion")
        return {
            "groups": self.groups,
            "best_changed": self.best_changed,
            "best_changed_share": self.best_changed / self.groups if self.groups else math.nan,
            "completions": self.completions,
            "advantage_flipped": self.flipped,
            "advantage_flipped_share": self.flipped / self.completions if self.completions else math.nan,
            "most_different": [dict(zip(keys, r)) for r in sorted(self.rows, key=lambda r: (-r[0], r[1]))],
        }


class Grouper:
    """Cuts a stream of scored lines into GRPO groups: ``size`` consecutive lines, or,
    without a size, runs of consecutive lines with the same prompt. ``add`` returns
    the groups it completed; ``finish`` the last prompt run (a partial sized group is
    left over, not a group)."""

    def __init__(self, size: int | None):
        self.size, self.key = size, None
        self.pending: list = []

    def add(self, items: Sequence, keys: Sequence) -> list[list]:
        done = []
        for item, key in zip(items, keys):
            if self.pending and ((self.size is None and key != self.key) or len(self.pending) == self.size):
                done.append(self.pending)
                self.pending = []
            self.pending.append(item)
            self.key = key
        if self.size is not None and len(self.pending) == self.size:
            done.append(self.pending)
            self.pending = []
        return done

    def finish(self) -> list[list]:
        last, self.pending = self.pending, []
        return [last] if last and self.size is None else []
