"""``repetition.ngram``: penalise repeated n-grams (degenerate, looping text)."""

from __future__ import annotations

from grpo_core import text_reward

from .length import aligned_ids


def repeated_fraction(items: list, n: int) -> float:
    """``1 - unique / total`` over the n-grams of ``items``; 0.0 when fewer than n."""
    total = len(items) - n + 1
    if total <= 0:
        return 0.0
    grams = set(items) if n == 1 else set(zip(*(items[i:] for i in range(n))))
    return 1.0 - len(grams) / total


@text_reward
def ngram(
    completions: list,
    n: int = 3,
    max_penalty: float = -1.0,
    completion_ids: list | None = None,
    **kwargs,
) -> list[float]:
    """Repeated n-gram penalty: (1 - unique/total n-grams) * max_penalty.

    reward = (1 - #unique n-grams / #n-grams) * max_penalty, and 0.0 when the
    completion has fewer than n items. Items are token ids when TRL passes
    completion_ids, else whitespace-separated words (case-sensitive).
    Range [max_penalty, 0.0] (max_penalty is only approached: a completion of
    one n-gram repeated k times scores (1 - 1/k) * max_penalty). Same formula as
    trl.rewards.get_repetition_penalty_reward.

    Parameters: n=3 (>= 1), max_penalty=-1.0 (<= 0).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}.")
    if max_penalty > 0:
        raise ValueError(f"max_penalty must be <= 0 (it is a penalty), got {max_penalty!r}.")
    out = []
    for text, ids in zip(completions, aligned_ids(completion_ids, len(completions))):
        scaling = repeated_fraction(ids if ids is not None else text.split(), n)
        out.append(scaling * max_penalty if scaling else 0.0)
    return out
