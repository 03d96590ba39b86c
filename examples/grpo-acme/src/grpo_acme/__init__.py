"""An example third-party reward plugin for grpo: ``acme.brevity``."""

from __future__ import annotations

from grpo_core import hookimpl, text_reward


@text_reward
def brevity(completions: list[str], max_chars: int = 200, **kwargs) -> list[float]:
    """Reward short answers: 1 - min(len(completion) / max_chars, 1).

    1.0 for an empty completion, 0.5 at half of ``max_chars``, 0.0 at or beyond it.
    """
    if max_chars <= 0:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    return [1.0 - min(len(c) / max_chars, 1.0) for c in completions]


@hookimpl
def register_rewards(register):
    register("acme.brevity", brevity)
