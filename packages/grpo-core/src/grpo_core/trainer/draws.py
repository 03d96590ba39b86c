"""Drawing each sampled token on a CPU from one uniform number per row.

transformers' sampling draws the next token with ``torch.multinomial(probs, 1)``. On a
CPU torch draws that as an exponential race: one exponential random number per
vocabulary entry, per row and decoding step. For SmolLM2's 49,152 entries on 2 cores
that is 15 ms a decoding step for 8 rows and 49 ms for 32, about a sixth of the step
(a whole decoding step of 8 rows took ~84 ms: 32 tokens in 2.69 s). The same distribution comes from one
uniform number per row placed in the row's running sum (inverse transform sampling):
0.6 ms and 1.9 ms there. ``cumulative_draws()`` makes ``torch.multinomial`` draw so for
the calls it can take (one sample from each row of a 2-D float tensor on a CPU, running
sums in float64, 8 rows at a time) while the trainer samples; any other call, and any row that is not a
distribution (negative, NaN, infinite, summing to 0), goes to torch's own, with its own
errors. What changes is which random numbers are used, not the probabilities: a run's
completions for a given seed differ from those drawn before, as they would on another
torch version.
"""

from __future__ import annotations

import contextlib

ROWS = 8  # rows summed at a time: a float64 running sum of 8 x 49,152 stays small enough to be quick


def draw(probs, generator=None, scratch: dict | None = None):
    """One index per row of ``probs`` (rows x vocabulary), row ``i`` giving index ``j``
    with probability ``probs[i, j] / sum(probs[i])``: what ``torch.multinomial(probs, 1)``
    returns, shape (rows, 1), int64; or None where a row is not a distribution
    (a negative, NaN or infinite entry, or a sum of 0). A uniform number in ``[0, total)``
    falls in index ``j``'s interval ``[sum(p[:j]), sum(p[:j+1]))``; an entry with
    probability 0 has an empty interval and is never drawn (``right=True``). ``scratch``
    keeps the running sums' buffer from call to call (a fresh 3 MB buffer a call costs
    more in page faults than the sums)."""
    import torch

    if not bool(probs.min() >= 0):
        return None
    width = probs.shape[1]
    scratch = {} if scratch is None else scratch
    if (buffer := scratch.get("running")) is None or buffer.shape[1] != width:
        buffer = scratch["running"] = torch.empty((ROWS, width), dtype=torch.float64)
    picks = []
    for rows in probs.split(ROWS):
        running = torch.cumsum(rows, -1, dtype=torch.float64, out=buffer[: len(rows)])
        total = running[:, -1:].clone()
        if not bool((torch.isfinite(total) & (total > 0)).all()):
            return None
        points = torch.rand(total.shape, dtype=torch.float64, generator=generator) * total
        picks.append(torch.searchsorted(running, points, right=True).clamp_(max=width - 1))
    return torch.cat(picks)


def _takes(probs, num_samples, out) -> bool:
    import torch

    return (num_samples == 1 and out is None and isinstance(probs, torch.Tensor) and probs.dim() == 2
            and probs.device.type == "cpu" and probs.is_floating_point() and probs.numel() > 0)


@contextlib.contextmanager
def cumulative_draws():
    """Inside, ``torch.multinomial`` draws one sample per row on a CPU with :func:`draw`."""
    import torch

    original, scratch = torch.multinomial, {}

    def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):  # noqa: A002 - torch's name
        picked = draw(input, generator, scratch) if _takes(input, num_samples, out) else None
        if picked is not None:
            return picked
        return original(input, num_samples, replacement, generator=generator, out=out)

    torch.multinomial = multinomial
    try:
        yield
    finally:
        torch.multinomial = original


__all__ = ["cumulative_draws", "draw"]
