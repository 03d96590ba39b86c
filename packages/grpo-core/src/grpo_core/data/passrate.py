"""A pass-rate filter before training (``grpo preflight --write FILE``).

A prompt the base model always solves, or never solves, gives a group whose
correctness reward is flat: it teaches nothing. Sample k completions per prompt,
take each prompt's pass rate p (the share at the correctness reward's maximum),
and keep the prompts inside a band (default 0 < p < 1) as a dataset
``grpo train`` reads (``dataset: {name: files, params: {path: FILE}}``), with the
pass rate as a column.

The predicted flat share of a training group of G completions is the chance that
all G pass or all fail, ``p**G + (1 - p)**G``, averaged over the prompts (for a
correctness reward alone; other rewards can only add spread).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

BINS = ((0.0, 0.0, "0"), (0.0, 0.25, "(0, 0.25]"), (0.25, 0.5, "(0.25, 0.5]"), (0.5, 0.75, "(0.5, 0.75]"),
        (0.75, 1.0, "(0.75, 1)"), (1.0, 1.0, "1"))


def pass_rates(scores: Sequence, n: int, top: float) -> list[float]:
    """Per prompt (``n`` consecutive completions), the share at ``top``; None fails."""
    out = []
    for i in range(0, len(scores), n):
        group = scores[i:i + n]
        out.append(sum(s is not None and s >= top - 1e-9 for s in group) / len(group))
    return out


def histogram(rates: Sequence[float]) -> list[tuple[str, int]]:
    """Prompts per pass-rate bin: never solved, (0, 0.25], ..., always solved."""
    counts = []
    for low, high, label in BINS:
        if low == high:
            counts.append((label, sum(r == low for r in rates)))
        elif high == 1.0:
            counts.append((label, sum(low < r < 1.0 for r in rates)))
        else:
            counts.append((label, sum(low < r <= high for r in rates)))
    return counts


def predicted_flat_share(rates: Sequence[float], group_size: int) -> float:
    """Mean over prompts of p**G + (1 - p)**G."""
    return sum(p ** group_size + (1 - p) ** group_size for p in rates) / len(rates) if rates else float("nan")


def inside(rate: float, band: tuple[float, float]) -> bool:
    """The band is open at both ends: (0, 1) keeps what is neither always nor never solved."""
    low, high = band
    return low < rate < high


def write(path: Path, rows: Sequence[dict], rates: Sequence[float], band: tuple[float, float]) -> int:
    """The rows whose pass rate is inside ``band``, as JSONL with a ``pass_rate`` column
    (their own columns kept, TRL's ``prompt`` left out: grpo builds it again)."""
    kept = 0
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        for row, rate in zip(rows, rates):
            if inside(rate, band):
                record = {k: v for k, v in row.items() if k != "prompt" and _plain(v)}
                fh.write(json.dumps({**record, "pass_rate": rate}) + "\n")
                kept += 1
    return kept


def _plain(value) -> bool:
    return value is None or isinstance(value, (str, int, float, bool, list, dict))


def format_lines(rates: Sequence[float], k: int, group_size: int) -> list[str]:
    lines = [f"pass rate over {len(rates)} prompts ({k} completions each):"]
    width = max(len(label) for _, _, label in BINS)
    for label, count in histogram(rates):
        bar = "#" * round(40 * count / max(len(rates), 1))
        lines.append(f"  {label:>{width}}  {count:4d}  {bar}")
    lines.append(f"predicted flat share of training groups (G={group_size}): "
                 f"{predicted_flat_share(rates, group_size):.0%}")
    return lines


__all__ = ["pass_rates", "histogram", "predicted_flat_share", "inside", "write", "format_lines"]
