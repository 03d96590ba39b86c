"""``grpo``: TRL's own advantages, unchanged (the default).

Each completion's weighted total reward minus its group's mean, divided by the group's
standard deviation (``scale_rewards``), as ``trl.GRPOTrainer`` computes it: a group whose
completions all score the same teaches nothing.
"""

from __future__ import annotations

from grpo_core.trainer.methods.base import Advantages, Scored
from grpo_core.trainer.methods.builtin import METHODS


class Grpo:
    def rows(self, scored: Scored) -> Advantages:
        return Advantages(scored.advantages)


@METHODS.add("grpo", description="TRL's group-relative advantage, unchanged (the default)")
def grpo() -> Grpo:
    """TRL's group-relative advantage, unchanged."""
    return Grpo()

