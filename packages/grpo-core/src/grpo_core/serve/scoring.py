"""What the reward server scores with: a config's rewards or a list of specs, composed
once per worker slot (a gate's memo and a reward's state are never shared between two
requests at once), each call guarded as in training (``rewards/policy.py``: a time limit
per call, an item that raises scores None alone), and scored by
``rewards/scoring.py:score_batch`` exactly as ``grpo score`` scores."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from grpo_core.base.errors import GrpoError
from grpo_core.base.timelimit import DEFAULT_SECONDS
from grpo_core.checks import manifest
from grpo_core.config.load import load_config
from grpo_core.rewards.policy import AsyncScoringGuard, ScoringGuard
from grpo_core.rewards.reward import AsyncReward, compose_specs
from grpo_core.rewards.scoring import score_batch
from grpo_core.rewards.specs import parse_spec


class Busy(GrpoError):
    """Every slot is scoring and the queue is full (HTTP 429)."""


@dataclass
class RewardSet:
    """Parsed specs, their weights and the per-call time limit."""

    specs: list
    time_limit: float | None = DEFAULT_SECONDS

    @classmethod
    def from_specs(cls, specs: list[str], time_limit: float | None = DEFAULT_SECONDS) -> RewardSet:
        return cls([parse_spec(s) for s in specs], time_limit)

    @classmethod
    def from_config(cls, path: str, stage: str | None = None) -> RewardSet:
        cfg = load_config(path)
        stages = {s.name: s for s in cfg.stages}
        if stage is not None and stage not in stages:
            raise GrpoError(f"--stage {stage}: {path} has the stages {', '.join(stages)}.")
        chosen = stages[stage] if stage else cfg.stages[0]
        return cls(list(chosen.rewards), cfg.health.reward_time_limit)

    @property
    def weights(self) -> list[float]:
        return [p.weight for p in self.specs]

    def compose(self) -> list:
        return compose_specs(self.specs, self.time_limit)


@dataclass
class Slot:
    """One worker's own composition of the rewards."""

    funcs: list
    weights: list[float]
    log: Callable[[str], None] = print

    def score(self, completions: list, prompts: list | None, columns: dict[str, list],
              group_size: int | list[int] | None = None) -> dict:
        """Each reward's scores, the weighted totals, per-item notes and what rewards logged;
        ``group_size``: the batch's groups, for group rewards."""
        # the training guard, per request (its failures named per request too): nothing to stop
        guards = [(AsyncScoringGuard if isinstance(f, AsyncReward) else ScoringGuard)(
            f, source=getattr(f, "source", ""), log=self.log, seen=set()) for f in self.funcs]
        scored = score_batch(guards, self.weights, completions, prompts=prompts, columns=columns,
                             group_size=group_size)
        notes: list[dict] = [{} for _ in completions]
        for g in guards:
            for i, why in enumerate(g.why[: len(completions)]):
                if why:
                    notes[i][g.__name__] = why
        return {"scores": {f.__name__: v for f, v in zip(self.funcs, scored.per_reward)},
                "total": scored.totals, "notes": notes,
                "extras": {k: v for k, v in scored.extras.items() if len(v) == len(completions)},
                "metrics": scored.metrics}


@dataclass
class Pool:
    """``workers`` slots and at most ``queue_size`` requests waiting for one; past that
    a request is turned away at once (:class:`Busy`) rather than wait unbounded."""

    rewards: RewardSet
    workers: int = 4
    queue_size: int = 64
    wait: float = 30.0  # seconds a queued request waits for a slot before it is turned away
    log: Callable[[str], None] = print
    _free: queue.Queue = field(init=False)
    _waiting: int = field(init=False, default=0)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)

    def __post_init__(self):
        self._free = queue.Queue()
        for _ in range(max(1, self.workers)):
            self._free.put(Slot(self.rewards.compose(), self.rewards.weights, self.log))
        first = self._free.get()
        self.names = [f.__name__ for f in first.funcs]
        self.required = sorted({c for f in first.funcs for c in f.required_columns})
        self.manifest = manifest.of_rewards(first.funcs)
        self.ranges = [getattr(f, "range", None) for f in first.funcs]  # each reward's declared (low, high)
        self._free.put(first)

    def score(self, completions: list, prompts: list | None, columns: dict[str, list],
              group_size: int | list[int] | None = None) -> dict:
        with self._lock:
            if self._waiting >= self.queue_size + self.workers:
                raise Busy(f"the server is full: {self.workers} requests scoring and {self.queue_size} "
                           f"waiting (--workers, --queue); retry later.")
            self._waiting += 1
        try:
            try:
                slot = self._free.get(timeout=self.wait)
            except queue.Empty:
                raise Busy(f"no worker was free within {self.wait:g}s; retry later.") from None
            try:
                return slot.score(completions, prompts, columns, group_size)
            finally:
                self._free.put(slot)
        finally:
            with self._lock:
                self._waiting -= 1

    def describe(self) -> list[dict]:
        """The rewards with their weights, versions and source hashes."""
        return [{"name": n, "weight": w, "time_limit": getattr(p, "time_limit", None) or self.rewards.time_limit,
                 **self.manifest.get(n, {})} for n, w, p in zip(self.names, self.rewards.weights, self.rewards.specs)]
