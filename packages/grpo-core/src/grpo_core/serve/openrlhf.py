"""The answer to OpenRLHF's ``POST /get_reward``, as OpenRLHF 0.11 reads it.

Its ``SingleTurnAgentExecutor`` keeps the answer's ``rewards``, ``scores`` and
``extra_logs``, and its experience builder turns each into a tensor
(``torch.tensor([value])``): a ``null`` anywhere fails the rollout ("Could not infer
dtype of NoneType"). So every value is a number:

- ``rewards``: the weighted total, as ``grpo score`` gives it (None left out);
- ``scores``: what OpenRLHF's dynamic filtering averages per prompt and keeps inside
  ``--algo.dynamic_filtering_range`` (default ``0 1``): ``grpo serve --scores``
  (:class:`ScoresScale`), by default the total scaled into [0, 1] by the rewards'
  declared ranges;
- ``extra_logs``: each reward's value, 0.0 where it gave none, and ``unscored``: how many
  of the item's rewards gave none (0.0 when every reward scored it), which OpenRLHF
  logs beside the rewards;
- ``notes``: why an item scored None or was read differently (OpenRLHF ignores it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grpo_core.base.errors import GrpoError

SCORE_CHOICES = ("auto", "normalized", "total")


@dataclass(frozen=True)
class ScoresScale:
    """What ``scores`` holds: the weighted total (``reward`` None) or one reward's value,
    mapped from ``[low, high]`` onto [0, 1] (``low`` 0 and ``high`` 1: as it is)."""

    reward: str | None = None
    low: float = 0.0
    high: float = 1.0

    @classmethod
    def choose(cls, choice: str, names: list[str], weights: list[float], ranges: list) -> ScoresScale:
        """``auto``: ``normalized`` when every reward declares its range, else ``total``;
        ``normalized``: the total scaled by the ranges; ``total``; or a reward's name: its
        value, scaled by its range when it declares one."""
        if choice in names:
            r = ranges[names.index(choice)]
            return cls(choice, *(r if r is not None and r[1] > r[0] else (0.0, 1.0)))
        if choice not in SCORE_CHOICES:
            raise GrpoError(f"--scores {choice}: give auto, normalized, total or one of the served rewards "
                            f"({', '.join(names)}).")
        unknown = [n for n, r in zip(names, ranges) if r is None]
        if choice == "total" or (choice == "auto" and unknown):
            return cls()
        if unknown:
            raise GrpoError(f"--scores normalized: {', '.join(unknown)} declare(s) no value range, so the total "
                            f"cannot be put in [0, 1]; use --scores total or --scores REWARD.")
        low = sum(min(w * a, w * b) for w, (a, b) in zip(weights, ranges))
        high = sum(max(w * a, w * b) for w, (a, b) in zip(weights, ranges))
        return cls(None, low, high) if high > low else cls()

    @property
    def scaled(self) -> bool:
        return (self.low, self.high) != (0.0, 1.0)

    def describe(self) -> str:
        what = f"'{self.reward}'" if self.reward else "the weighted total"
        return f"{what} scaled from [{self.low:g}, {self.high:g}] to [0, 1]" if self.scaled else f"{what} as it is"

    def of(self, totals: list[float], per_reward: dict[str, list]) -> list[float]:
        values = totals if self.reward is None else [0.0 if v is None else float(v) for v in per_reward[self.reward]]
        if not self.scaled:
            return [float(v) for v in values]
        span = self.high - self.low
        return [min(1.0, max(0.0, (v - self.low) / span)) for v in values]


def answer(out: dict, scale: ScoresScale) -> dict:
    """``/get_reward``'s answer for a scored batch (``scoring.Slot.score``'s dict)."""
    per = out["scores"]
    n = len(out["total"])
    logs = {name: [0.0 if v is None or not math.isfinite(v) else float(v) for v in values]
            for name, values in per.items()}
    logs["unscored"] = [float(sum(values[i] is None for values in per.values())) for i in range(n)]
    return {"rewards": [float(t) for t in out["total"]], "scores": scale.of(out["total"], per),
            "extra_logs": logs, "notes": out["notes"]}


__all__ = ["ScoresScale", "SCORE_CHOICES", "answer"]
