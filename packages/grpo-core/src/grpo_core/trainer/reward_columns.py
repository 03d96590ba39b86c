"""The reward columns TRL adds: an environment's ``get_reward``.

TRL appends one reward column per environment class with ``get_reward``, in the
order of its factories, after the rewards passed in, named after the class and
weighed 1. Here it is named after the registered environment and weighed as
configured (:func:`name_columns`); the trainer gives it our rewards' failure policy and
time limit too (``PolicySettings.guard_added``, :mod:`grpo_core.rewards.policy`): an item
it fails on scores None, counted and logged once.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping


def name_columns(pool: Mapping, funcs: list, names: list[str], weights, rewards: Mapping) -> None:
    """``rewards``: {TRL's environment key (None, or the route): (logged name, weight)};
    ``pool``: TRL's environment pool ({key: [instances]}); ``names`` and ``weights``
    (a tensor or a list) are changed in place."""
    keyed: dict[type, list] = {}
    for key, instances in pool.items():
        cls = type(instances[0])
        if "get_reward" in dict(inspect.getmembers(cls, predicate=inspect.isfunction)):
            keyed.setdefault(cls, []).append(key)
    own = len(funcs) - len(keyed)
    for index, keys in enumerate(keyed.values(), start=own):
        for key in (k for k in keys if k in rewards):  # the first route that names it
            name, weight = rewards[key]
            names[index] = name
            weights[index] = float(weight)
            break


__all__ = ["name_columns"]
