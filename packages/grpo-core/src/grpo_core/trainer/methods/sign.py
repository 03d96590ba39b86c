"""``sign``: flat groups get a fixed-reference advantage, ``scale * (2r - 1)``.

A control for ``zvp``: in a group whose correctness is flat (every completion right, or
every one wrong), each completion gets ``+scale`` (right) or ``-scale`` (wrong) on every
token, added to TRL's advantage; other groups keep TRL's. Against a fixed reference
(r = 1/2) instead of the group's mean, and with no entropy shaping.
"""

from __future__ import annotations

from grpo_core.trainer.methods.base import Advantages, Scored, finite
from grpo_core.trainer.methods.builtin import METHODS


class Sign:
    judges_correctness = True  # flat groups are judged on learning.metric

    def __init__(self, scale: float):
        self.scale = scale

    def rows(self, scored: Scored) -> Advantages:
        verdicts = scored.verdicts()
        return Advantages(scored.advantages + self.scale * verdicts, shaped=verdicts != 0)


@METHODS.add("sign", description="Flat correctness groups: +scale when all right, -scale when all wrong (a control for zvp)")
def sign(scale: float = 0.1) -> Sign:
    """Flat correctness groups: +scale when all right, -scale when all wrong."""
    return Sign(finite(scale, "sign's scale"))

