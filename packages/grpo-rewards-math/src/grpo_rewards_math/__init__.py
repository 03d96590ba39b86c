"""grpo_rewards_math: answer-checking rewards for verifiable tasks.

``math.correctness``, ``math.numeric``, ``math.exact``, ``math.cosine`` and
``math.kimi_length``, each registered with its value range.
Importing this module is cheap (no sympy or math-verify): they load in
the checker processes on the first call that needs them.
"""

from __future__ import annotations

from grpo_core import hookimpl

from .rewards import RANGES, REWARDS, correctness, cosine, exact, kimi_length, numeric

GRPO_PLUGIN_API = "1.0"  # the grpo plugin API this plugin is written for (docs/plugin-api.md)

__version__ = "0.1.0"


# full marks mean "the answer is right": grpo check's gold self-test and eval's accuracy
CORRECTNESS = {"math.correctness", "math.numeric", "math.exact"}


@hookimpl
def register_rewards(register):
    for name, func in REWARDS.items():
        register(
            name,
            func,
            description=func.__doc__.strip().splitlines()[0],
            correctness=name in CORRECTNESS,
            range=RANGES[name],
        )


__all__ = ["correctness", "numeric", "exact", "cosine", "kimi_length", "register_rewards", "__version__"]
