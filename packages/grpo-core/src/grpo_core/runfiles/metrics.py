"""Figures read back from ``metrics.jsonl``'s records: what a run's generated tokens bought
(``tokens/generated``, ``tokens/teaching_share``, logged by the trainer each batch)."""

from __future__ import annotations


def run_tokens(rows: list[dict]) -> tuple[int, int]:
    """(generated, teaching) completion tokens over a run's logged steps (``metrics.jsonl``'s
    rows; a step that reused an earlier generation batch logs none)."""
    generated = teaching = 0.0
    for row in rows:
        n, share = row.get("tokens/generated"), row.get("tokens/teaching_share")
        if isinstance(n, (int, float)) and isinstance(share, (int, float)):
            generated += n
            teaching += n * share
    return round(generated), round(teaching)


def summary(generated: int, teaching: int) -> str | None:
    """The end-of-run sentence ('41 % of 12,400 generated completion tokens trained nothing:
    their advantage was 0.'); None when nothing was counted."""
    if generated <= 0:
        return None
    idle = (generated - teaching) / generated
    return (f"{idle:.0%} of {generated:,} generated completion tokens trained nothing (their advantage was 0); "
            f"{teaching:,} taught.")


__all__ = ["run_tokens", "summary"]
