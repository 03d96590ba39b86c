"""Group rewards: a reward that sees the completions of one prompt together.

TRL calls a reward once per batch, flat: each prompt's ``num_generations`` completions
follow one another (a group), and the reward returns one value per completion. A group
reward (``register(name, func, group=True)``, or ``group = True`` on a function of one's
own) is called once per group instead: ``func(completions, **kwargs)`` gets that group's
completions, with ``prompts``, ``completion_ids`` and every dataset column cut to the
group, and returns one value per completion of the group. Wrapped in a
:class:`~grpo_core.rewards.reward.Reward` it is an ordinary TRL reward function to
everything else (weights, gates, the failure policy, ``grpo score``, ``check``, ``serve``,
dynamic sampling's rounds, the rollout log).

The groups of a batch of ``n`` completions, from the first of these that says:

1. a ``group_size`` keyword: an int (groups of that size, one after another, as TRL
   makes them) or a list of ints (the size of each group in turn; ``grpo score`` with a
   group column). ``grpo score``, ``grpo check`` and ``grpo serve`` pass it;
2. the trainer: TRL passes its own bound method as ``log_metric``, and the trainer's
   ``num_generations`` (``num_generations_eval`` while the model is not training) is the
   group size TRL made the batch with;
3. the prompts: each run of one prompt is a group (a batch without prompts, or with one
   prompt, is one group).

A group is never empty: an empty batch (``validate`` calls every reward with one)
returns ``[]`` without a call.

A batch that is not whole groups is an error naming the sizes: with several processes,
each scores ``per_device_train_batch_size x steps_per_generation`` completions, which must
be a multiple of ``num_generations`` for a group reward to see whole groups.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

# the keyword a caller gives the group sizes with; never passed on to the reward function
SIZE_KEYWORD = "group_size"


def is_group_reward(func: Any) -> bool:
    """A function of one's own declares it with a ``group = True`` attribute."""
    return getattr(func, "group", False) is True


def sizes(name: str, n: int, kwargs: dict) -> list[int]:
    """The size of each group of a batch of ``n`` completions (see the module docstring)."""
    given = kwargs.get(SIZE_KEYWORD)
    if given is not None:
        return _given(name, n, given)
    size = trainer_group_size(kwargs)
    if size is not None:
        return _whole(name, n, size, "num_generations")
    return _prompt_runs(name, n, kwargs.get("prompts"))


def trainer_group_size(kwargs: dict) -> int | None:
    """The group size of the TRL trainer whose ``log_metric`` this batch came with."""
    trainer = getattr(kwargs.get("log_metric"), "__self__", None)
    size = getattr(trainer, "num_generations", None)
    if isinstance(size, bool) or not isinstance(size, int):
        return None
    model = getattr(trainer, "model", None)
    if model is not None and getattr(model, "training", True) is False:  # TRL's eval mode
        evaluated = getattr(trainer, "num_generations_eval", None)
        size = evaluated if isinstance(evaluated, int) and evaluated > 0 else size
    return size


def _given(name: str, n: int, given: Any) -> list[int]:
    if isinstance(given, int) and not isinstance(given, bool):
        return _whole(name, n, given, "group_size")
    if isinstance(given, (list, tuple)) and all(isinstance(s, int) and not isinstance(s, bool) and s > 0
                                                for s in given):
        if sum(given) != n:
            raise ValueError(f"group reward '{name}': the group sizes {_show(given)} add up to {sum(given)}, "
                             f"but the batch has {n} completions.")
        return list(given)
    raise ValueError(f"group reward '{name}': group_size={given!r:.60} is neither a positive whole number nor a "
                     f"list of them (the size of each group in turn).")


def _whole(name: str, n: int, size: int, what: str) -> list[int]:
    if size <= 0:
        raise ValueError(f"group reward '{name}': {what} = {size}; a group has at least one completion.")
    if n % size:
        raise ValueError(
            f"group reward '{name}': the batch of {n} completions is not whole groups of {what} = {size} "
            f"({n // size} groups and {n % size} completions over). Each process must score whole groups: "
            f"make per_device_train_batch_size x steps_per_generation a multiple of num_generations.")
    return [size] * (n // size)


def _prompt_runs(name: str, n: int, prompts: Any) -> list[int]:
    if not isinstance(prompts, (list, tuple)) or len(prompts) != n or n == 0:
        return [n]
    runs, start = [], 0
    for i in range(1, n + 1):
        if i == n or prompts[i] != prompts[start]:
            runs.append(i - start)
            start = i
    return runs


def _show(values: Sequence[int]) -> str:
    shown = ", ".join(str(v) for v in values[:8])
    return f"[{shown}{', ...' if len(values) > 8 else ''}]"


def cut(kwargs: dict, n: int, start: int, stop: int) -> dict:
    """The keywords of one group: every list aligned with the batch cut to ``start:stop``."""
    return {k: (v[start:stop] if isinstance(v, (list, tuple)) and len(v) == n else v)
            for k, v in kwargs.items() if k != SIZE_KEYWORD}


class Extras:
    """``log_extra`` for the groups of one batch: each group's values in its own rows,
    handed on once per column for the whole batch (what TRL's table expects)."""

    def __init__(self, n: int):
        self.n = n
        self.columns: dict[str, list] = {}

    def of_group(self, start: int, size: int) -> Callable[[str, list], None]:
        def log_extra(column: str, values: list) -> None:
            row = self.columns.setdefault(column, [None] * self.n)
            row[start:start + size] = list(values)[:size] + [None] * max(0, size - len(values))
        return log_extra

    def hand_on(self, log_extra: Any) -> None:
        if callable(log_extra):
            for column, values in self.columns.items():
                log_extra(column, values)


def plan(name: str, completions: Any, kwargs: dict) -> tuple[list[tuple[list, dict]], Extras]:
    """Each group's (completions, keywords), and the ``log_extra`` that gathers their extras."""
    completions = list(completions or [])
    n = len(completions)
    extras = Extras(n)
    out, start = [], 0
    for size in sizes(name, n, kwargs) if n else []:  # an empty batch has no group: never an empty one
        group = cut(kwargs, n, start, start + size)
        if callable(kwargs.get("log_extra")):
            group["log_extra"] = extras.of_group(start, size)
        out.append((completions[start:start + size], group))
        start += size
    return out, extras


def checked(name: str, values: Any, size: int, start: int) -> list:
    """One group's values: one per completion of the group."""
    values = list(values)
    if len(values) != size:
        raise ValueError(f"group reward '{name}' returned {len(values)} values for a group of {size} completions "
                         f"(completions {start}-{start + size - 1} of the batch); return one per completion.")
    return values


def call(name: str, func: Callable, completions: Any, kwargs: dict) -> list:
    """``func`` once per group; the batch's values, in order."""
    groups, extras = plan(name, completions, kwargs)
    out: list = []
    for group, keywords in groups:
        out.extend(checked(name, func(group, keywords), len(group), len(out)))
    extras.hand_on(kwargs.get("log_extra"))
    return out


async def call_async(name: str, func: Callable, completions: Any, kwargs: dict) -> list:
    """:func:`call` for an ``async def`` group reward: the groups awaited together."""
    import asyncio  # (a listing command does not load it)

    groups, extras = plan(name, completions, kwargs)
    results = await asyncio.gather(*(func(group, keywords) for group, keywords in groups))
    out: list = []
    for (group, _), values in zip(groups, results):
        out.extend(checked(name, values, len(group), len(out)))
    extras.hand_on(kwargs.get("log_extra"))
    return out


__all__ = ["is_group_reward", "sizes", "trainer_group_size", "cut", "plan", "call", "call_async", "SIZE_KEYWORD"]
