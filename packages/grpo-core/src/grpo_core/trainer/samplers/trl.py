"""``trl``: TRL's own sampler, unchanged (the default).

``trl.GRPOTrainer``'s ``RepeatSampler``: the training set in a seeded shuffle, each prompt
once per pass, repeated for its group. With this sampler the trainer does not step in at
all (no prompt is swapped, nothing extra is logged): a run gives the numbers it gave before
samplers existed.
"""

from __future__ import annotations

from grpo_core.trainer.samplers.builtin import SAMPLERS


class Trl:
    def choose(self, pool, n, proposed):
        return list(proposed)


@SAMPLERS.add("trl", description="TRL's own sampler: a seeded shuffle of the training set, unchanged (the default)")
def trl() -> Trl:
    """TRL's own sampler, unchanged."""
    return Trl()

