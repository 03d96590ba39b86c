"""``zvp``: RL-ZVP (arXiv 2509.21880), flat groups that still teach.

In a group whose correctness is flat, each completion token t gets an advantage shaped
by the policy's (detached) entropy H_t there:

- every completion right: ``alpha * H_t`` (more where the model was unsure);
- every completion wrong: ``-alpha * (max_k H_k - H_t)``, the max over the completion's
  own tokens (the most confident tokens of a wrong answer are pushed down most);

added to TRL's advantage (0 for a flat group with one reward; the spread of the other
rewards, a length reward's, is kept). Other groups keep TRL's advantage. The entropies
are those TRL computes in its loss anyway: no extra forward pass. The paper's best alpha
is 0.1 (0.05 and 0.3 fell back to plain GRPO).
"""

from __future__ import annotations

from grpo_core.trainer.methods.base import Advantages, Scored, finite
from grpo_core.trainer.methods.builtin import METHODS


class Zvp:
    judges_correctness = True  # flat groups are judged on learning.metric

    def __init__(self, alpha: float):
        self.alpha = alpha

    def rows(self, scored: Scored) -> Advantages:
        verdicts = scored.verdicts()
        return Advantages(scored.advantages, shaped=verdicts != 0, extra={"verdict": verdicts})

    def tokens(self, rows, extra, entropies, mask):
        import torch

        h = entropies.detach().to(torch.float32)
        verdict = extra["verdict"].to(h.device).unsqueeze(1)
        peak = h.masked_fill(mask == 0, float("-inf")).amax(dim=1, keepdim=True)
        peak = torch.where(torch.isfinite(peak), peak, torch.zeros_like(peak))  # a row with no token
        shaped = torch.where(verdict > 0, h, torch.where(verdict < 0, h - peak, torch.zeros_like(h)))
        return rows.to(h.device).unsqueeze(1) + self.alpha * shaped


@METHODS.add("zvp", description="RL-ZVP: flat correctness groups teach through entropy-shaped token advantages (alpha)")
def zvp(alpha: float = 0.1) -> Zvp:
    """RL-ZVP's entropy-shaped advantages for flat correctness groups."""
    if finite(alpha, "zvp's alpha") <= 0:
        raise ValueError(f"zvp's alpha must be above 0, got {alpha!r} (the paper's best: 0.1).")
    return Zvp(float(alpha))

