"""grpo_rewards_judge: rewards from a language-model judge over any OpenAI-compatible server
(grpo plugin).

Registers ``judge.score``, ``judge.yesno``, ``judge.rubric`` and the group reward
``judge.pairwise`` (each 0..1), the judge-hacking probes ``judge.*`` for ``grpo check``, and
the command ``grpo judge calibrate``. Importing this module is cheap: the client, the cache
and the command load when first used. docs/judge.md has a worked example.
"""

from __future__ import annotations

from grpo_core import hookimpl

GRPO_PLUGIN_API = "1.0"  # the grpo plugin API this plugin is written for (docs/plugin-api.md)

__version__ = "0.1.0"

RANGE = (0.0, 1.0)
GROUP = {"judge.pairwise"}


@hookimpl
def register_rewards(register):
    from .rewards import REWARDS

    for name, func in REWARDS.items():
        register(name, func, description=func.__doc__.split("\n", 1)[0], range=RANGE, group=name in GROUP)


@hookimpl
def register_probes(register):
    from .probes import PROBES

    for name, description, build, right in PROBES:
        register(name, build, description=description, right=right)


@hookimpl
def register_commands(register):
    from .calibrate import setup

    register("judge", setup, description="judge rewards' tools: grpo judge calibrate (agreement with your labels)")


__all__ = ["register_rewards", "register_probes", "register_commands", "RANGE", "GROUP"]
