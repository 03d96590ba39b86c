"""Length rewards: ``length.ideal`` and DAPO's ``length.soft_overlong``.

Lengths are in tokens when TRL passes ``completion_ids`` (it always does during
training). Without them (``grpo score`` on plain text, a direct call) a token
count is estimated as ``ceil(characters / 4)``, a common rule of thumb for
English BPE vocabularies.
"""

from __future__ import annotations

from typing import Any, Literal

from grpo_core import text_reward

CHARS_PER_TOKEN = 4
UNITS = ("auto", "tokens", "chars", "words")


def aligned_ids(completion_ids: Any, n: int) -> list:
    """``completion_ids`` as a list aligned with ``n`` completions (``None`` items when absent)."""
    if completion_ids is None:
        return [None] * n
    if len(completion_ids) != n:
        raise ValueError(
            f"completion_ids has {len(completion_ids)} items but there are {n} completions; "
            f"pass one list of token ids per completion."
        )
    return [ids.tolist() if hasattr(ids, "tolist") else ids for ids in completion_ids]


def token_count(text: str, ids: Any) -> int:
    if ids is not None:
        return len(ids)
    return -(-len(text) // CHARS_PER_TOKEN)


def measure(text: str, ids: Any, unit: str) -> int:
    if unit == "auto":
        unit = "tokens" if ids is not None else "chars"
    if unit == "tokens":
        return token_count(text, ids)
    if unit == "words":
        return len(text.split())
    return len(text)


@text_reward
def ideal(
    completions: list,
    target: int = 200,
    unit: Literal["auto", "tokens", "chars", "words"] = "auto",
    completion_ids: list | None = None,
    **kwargs,
) -> list[float]:
    """Closeness to a target length: 0 at the target, down to -1 at twice it (or 0 length).

    reward = max(-1, -|target - L| / target)        Range [-1.0, 0.0]
    L is the completion length in `unit`:
      "auto" (default): tokens (len of completion_ids) when TRL passes
                        completion_ids, else characters;
      "tokens": len(completion_ids), or ceil(chars / 4) when ids are absent;
      "chars": characters of the completion text; "words": whitespace-split words.
    Conversational completions are measured on their assistant text.

    Parameters: target=200 (> 0), unit="auto".
    """
    if isinstance(target, bool) or not isinstance(target, int) or target <= 0:
        raise ValueError(f"target must be a positive integer length, got {target!r}.")
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {unit!r}.")
    ids_list = aligned_ids(completion_ids, len(completions))
    return [
        max(-1.0, -abs(target - measure(text, ids, unit)) / target)
        for text, ids in zip(completions, ids_list, strict=True)
    ]


@text_reward
def soft_overlong(
    completions: list,
    max_length: int = 512,
    cache: int = 128,
    completion_ids: list | None = None,
    **kwargs,
) -> list[float]:
    """DAPO soft overlong punishment: 0 up to max_length - cache, linear to -1 at max_length.

    With L the length in tokens, M = max_length and C = cache (DAPO Eq. 13,
    same as trl.rewards.get_soft_overlong_punishment(M, C)):
      reward = 0                  if L <= M - C
               (M - C - L) / C    if M - C < L <= M
               -1                 if L > M
    Range [-1.0, 0.0]. L = len(completion_ids); when TRL does not pass them,
    L = ceil(characters / 4) (an estimate). Set max_length to GRPOConfig's
    max_completion_length (default 512); cache=0 is a hard cut at max_length.

    Parameters: max_length=512 (> 0), cache=128 (0 <= cache <= max_length).
    """
    if max_length <= 0:
        raise ValueError(f"max_length must be > 0, got {max_length!r}.")
    if not 0 <= cache <= max_length:
        raise ValueError(f"cache must be between 0 and max_length={max_length}, got {cache!r}.")
    start = max_length - cache
    out = []
    for text, ids in zip(completions, aligned_ids(completion_ids, len(completions)), strict=True):
        length = token_count(text, ids)
        if length <= start:
            out.append(0.0)
        elif length <= max_length:
            out.append((start - length) / cache)
        else:
            out.append(-1.0)
    return out


@text_reward
def relative(
    completions: list,
    unit: Literal["auto", "tokens", "chars", "words"] = "auto",
    completion_ids: list | None = None,
    **kwargs,
) -> list[float]:
    """Kimi k1.5's length reward, within each group: 0.5 for its shortest completion, -0.5 for its longest.

    reward = 0.5 - (L - min L) / (max L - min L)        Range [-0.5, 0.5]
    min and max over the completions of one prompt (a group reward: it sees TRL's
    num_generations completions of a prompt together); 0.0 for each completion of a
    group whose lengths are all equal. L as in length.ideal (unit="auto": tokens when
    TRL passes completion_ids, else characters).

    Kimi k1.5 (arXiv:2501.12599, section 2.3.3) pays it to right answers and
    min(0, reward) to wrong ones, so a model learns to be brief without learning to
    give up. Gate it on a correctness reward: `length.relative:0.2 when
    math.correctness >= 1` pays right answers for being shorter than their group and
    wrong ones 0. Alone it pays the shortest answer, right or wrong.

    Parameters: unit="auto".
    """
    if unit not in UNITS:
        raise ValueError(f"unit must be one of {', '.join(UNITS)}; got {unit!r}.")
    lengths = [measure(text, ids, unit) for text, ids in
               zip(completions, aligned_ids(completion_ids, len(completions)), strict=True)]
    if not lengths or max(lengths) == min(lengths):
        return [0.0] * len(lengths)
    low, spread = min(lengths), max(lengths) - min(lengths)
    return [0.5 - (n - low) / spread for n in lengths]
