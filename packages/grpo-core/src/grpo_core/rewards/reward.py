"""Rewards by name: ``get_reward``, ``compose_rewards``, and :class:`Reward`, a
registered function bound to its parameters and what its registration declared.

Specs (``name(key=value):weight when ... within 30s``) are parsed by
:mod:`grpo_core.rewards.specs`; a reference is a registered name (``math.correctness``),
a function in a file (``my_rewards.py:has_digit``) or in a module (TRL's
``my_lib.rewards.has_digit``, when no plugin registered that name; see
:mod:`grpo_core.rewards.local_rewards`).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from grpo_core.base.errors import RewardParamError, SpecError, UnknownNameError
from grpo_core.base.params import TRL_KWARGS, bind_params, split_signature
from grpo_core.base.timelimit import DEFAULT_SECONDS as DEFAULT_TIME_LIMIT
from grpo_core.base.timelimit import RewardTimeout
from grpo_core.plugin import registry
from grpo_core.plugin.hints import KNOWN_NAMESPACES
from grpo_core.plugin.registry import check_range
from grpo_core.rewards import groups, local_rewards
from grpo_core.rewards.gating import gate_values, link
from grpo_core.rewards.scoring import call_reward
from grpo_core.rewards.specs import RewardSpec, parse_spec


class Reward:
    """A registered reward bound to its parameters: a TRL reward function.

    ``__name__`` is the registered name, so TRL logs ``rewards/<name>/mean``.
    Picklable when the underlying function is (module-level functions are). A group
    reward (``group=True``) calls its function once per group of the batch
    (:mod:`grpo_core.rewards.groups`); a ``group_size`` keyword gives the groups.
    """

    def __new__(cls, name: str, func: Callable, *args, **kwargs):
        if cls is Reward and inspect.iscoroutinefunction(_target(func)):
            cls = AsyncReward  # TRL runs async rewards concurrently; keep them async
        return super().__new__(cls)

    def __init__(self, name: str, func: Callable, params: dict | None = None, description: str = "",
                 logged_name: str | None = None, *, correctness: bool = False, value_range=None, source: str = "",
                 time_limit: float | None = DEFAULT_TIME_LIMIT, group: bool = False):
        self.__name__ = logged_name or name
        self.__qualname__ = self.__name__
        self.name = name
        self.correctness = bool(correctness)  # full marks mean "the answer is right" (declared when registered)
        self.group = bool(group)  # called once per group of completions (declared when registered)
        self.source = source  # "plugin 'x' (distribution y)", or "" for a function of one's own
        self.time_limit = time_limit  # seconds per call (grpo_core.base.timelimit); None: no limit
        self.timed_out = False  # outside training (checks, scoring), a reward that timed out is not called again
        self.condition = None  # gating: counts only where condition holds on self.gate's score
        self.gate = None
        self.memo = None  # set when another reward is gated on this one
        self.func = func
        self.description = description
        _, required, var_kw = split_signature(func)
        self.required_columns: tuple[str, ...] = required
        self._var_kw = var_kw
        self._accepted = frozenset(inspect.signature(_target(func)).parameters) if not var_kw else None
        self.params = bind_params(f"reward '{name}'", func, dict(params or {}), columns=required)
        self._declared_range = value_range
        self.range: tuple[float, float] | None = _bound_range(name, value_range, self.params)
        self.__doc__ = getattr(func, "__doc__", None)

    def _bind(self, kwargs: dict) -> dict:
        """TRL's keywords plus the bound parameters, cut to what the function takes."""
        kwargs.update(self.params)
        if self._accepted is not None:
            kwargs = {k: v for k, v in kwargs.items() if k in self._accepted}
        return kwargs

    def __call__(self, completions=None, **kwargs):
        if self.memo is not None:  # a gate: scored once per batch
            return self.memo.scores(completions, kwargs)
        values = self.call_unmemoized(completions, **kwargs)
        if self.condition is not None:

            values = gate_values(list(values), self.gate.memo.scores(completions, kwargs), self.condition)
        return values

    def call_unmemoized(self, completions=None, **kwargs):
        if self.group:
            return groups.call(self.name, self._call_group, completions, kwargs)
        kwargs.pop(groups.SIZE_KEYWORD, None)
        return self.func(completions, **self._bind(kwargs))

    def _call_group(self, completions: list, kwargs: dict):
        return self.func(completions, **self._bind(kwargs))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"Reward({self.name}({args}))" if args else f"Reward({self.name})"

    def __reduce__(self):
        return (_rebuild, (self.name, self.func, self.params, self.description, self.__name__, self.correctness,
                           self._declared_range, self.source, self.time_limit, self.group))


def _rebuild(name, func, params, description, logged, correctness, value_range, source, time_limit,
             group=False) -> Reward:
    return Reward(name, func, params, description, logged, correctness=correctness, value_range=value_range,
                  source=source, time_limit=time_limit, group=group)


def _bound_range(name: str, declared, params: dict) -> tuple[float, float] | None:
    """The declared range for these parameters: ``(low, high)``, or what a declared
    function of the parameters returns."""
    if declared is None:
        return None
    value = declared(**params) if callable(declared) else declared

    if callable(value) or check_range(value):
        raise RewardParamError(f"reward '{name}': its declared range for {params} is {value!r}, not (low, high).")
    return float(value[0]), float(value[1])


class AsyncReward(Reward):
    """A :class:`Reward` around an ``async def`` reward function."""

    async def __call__(self, completions=None, **kwargs):
        if self.group:
            return await groups.call_async(self.name, self._call_group, completions, kwargs)
        kwargs.pop(groups.SIZE_KEYWORD, None)
        return await self.func(completions, **self._bind(kwargs))


def _target(func: Callable) -> Callable:
    return func if inspect.isroutine(func) or not callable(func) else func.__call__  # type: ignore[operator]  # mypy#5079: a Callable's __call__


def validate(reward: Reward) -> Reward:
    """Call ``reward`` on an empty batch so parameter checks inside the function
    (``target=0``, a bad schema) fail now, before any model loads. A reward that
    runs past its time limit here is reported once and not called again outside
    training."""
    if isinstance(reward, AsyncReward):
        return reward

    try:
        call_reward(reward, [], {c: [] for c in reward.required_columns}, [], [])
    except RewardTimeout:
        pass  # call_reward reported it and marked the reward
    except (ValueError, TypeError) as exc:
        args = ", ".join(f"{k}={v!r}" for k, v in reward.params.items())
        raise RewardParamError(f"reward '{reward.name}({args})' rejects its parameters: {exc}") from None
    return reward


def list_rewards() -> list[registry.Entry]:
    """Every registered reward, sorted by name (``entry.name``, ``entry.description``...)."""
    reg = registry.rewards()
    return [reg.entries[n] for n in reg.names()]


def get_reward(name: str, **params: Any) -> Reward:
    """The reward registered as ``name``, bound to ``params``."""
    return validate(resolve(name).bind(params))


def compose_rewards(specs: Iterable[str | dict | RewardSpec] | str) -> tuple[list[Reward], list[float]]:
    """``(reward_funcs, reward_weights)`` for ``GRPOConfig`` / ``GRPOTrainer``."""
    if isinstance(specs, (str, dict, RewardSpec)):
        specs = [specs]
    parsed = [parse_spec(s) for s in specs]
    return compose_specs(parsed), [p.weight for p in parsed]


def compose_specs(parsed: list[RewardSpec], time_limit: float | None = DEFAULT_TIME_LIMIT) -> list[Reward]:
    """The rewards of parsed specs: resolved, bound, checked, named for logging, gated.
    ``time_limit``: seconds per call for a spec that sets none (``health.reward_time_limit``)."""

    if not parsed:
        raise SpecError("no rewards given; name at least one, e.g. ['math.correctness:2.0'].")
    for p in parsed:
        if not math.isfinite(p.weight):
            raise SpecError(f"weight of reward '{p.name}' must be finite, got {p.weight}.")
    resolved = [resolve(p.name) for p in parsed]
    logged = logged_names(parsed, [r.name for r in resolved])
    funcs = [validate(r.bind(p.params, log, time_limit if p.time_limit is None else p.time_limit))
             for p, r, log in zip(parsed, resolved, logged)]
    link(funcs, [p.when for p in parsed], [p.name for p in parsed])
    if any(isinstance(f, AsyncReward) and (f.memo or f.condition) for f in funcs):
        raise SpecError("an async reward cannot gate or be gated yet; use plain (def) rewards there.")
    return funcs


@dataclass(frozen=True)
class Resolved:
    """What a reference names: the function and what its registration declared."""

    name: str
    func: Callable
    description: str = ""
    correctness: bool = False
    range: Any = None  # (low, high), or a function of the parameters returning one
    source: str = ""  # the plugin and distribution; "" for a function of one's own
    group: bool = False  # called once per group (rewards/groups.py)

    def bind(self, params: dict | None = None, logged_name: str | None = None,
             time_limit: float | None = DEFAULT_TIME_LIMIT) -> Reward:
        return Reward(self.name, self.func, params, self.description, logged_name, correctness=self.correctness,
                      value_range=self.range, source=self.source, time_limit=time_limit, group=self.group)


# TRL's own answer-checking rewards, as `trl grpo` names them (import paths here)
TRL_CORRECTNESS = ("trl.rewards.accuracy_reward", "trl.rewards.reasoning_accuracy_reward")


def resolve(ref: str) -> Resolved:
    """A registered name, or a function of the user's own (a file or module path; see
    :mod:`grpo_core.rewards.local_rewards`) with what it declares as attributes
    (``correctness = True``, ``range = (0, 1)``)."""

    if local_rewards.is_local_ref(ref):
        return _own(ref, local_rewards.load(ref), ":")
    reg = registry.rewards()
    try:
        entry = reg.get(ref)
    except UnknownNameError as unknown:
        if ref.split(".", 1)[0] in KNOWN_NAMESPACES or not local_rewards.IMPORT_PATH_RE.match(ref):
            raise
        try:
            func = local_rewards.load(ref)
        except SpecError as exc:
            raise UnknownNameError(f"{unknown} Nor is it a function to import: {exc}") from None
        return _own(ref, func, ".")
    return Resolved(entry.name, entry.obj, entry.description, bool(entry.extra.get("correctness", False)),
                    entry.extra.get("range"), entry.source, bool(entry.extra.get("group", False)))


def _own(ref: str, func: Callable, sep: str) -> Resolved:
    declared = getattr(func, "range", None)
    if declared is not None:

        problem = check_range(declared)
        if problem:
            raise SpecError(f"reward {ref}: its range attribute {declared!r} is not usable: {problem}.")
    return Resolved(getattr(func, "__name__", ref.rsplit(sep, 1)[1]), func, inspect.getdoc(func) or "",
                    bool(getattr(func, "correctness", False)) or ref in TRL_CORRECTNESS, declared,
                    group=groups.is_group_reward(func))


def logged_names(parsed: list[RewardSpec], names: list[str]) -> list[str]:
    """TRL logs each reward as ``rewards/<__name__>/mean``: the name, its ``as:``
    alias, or, for a reward listed more than once, the name with its parameters."""
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    out = []
    for p, n in zip(parsed, names):
        args = ", ".join(f"{k}={v!r}" for k, v in p.params.items())
        out.append(p.alias or (f"{n}({args})" if counts[n] > 1 and args else n))
    seen: dict[str, RewardSpec] = {}
    for p, log in zip(parsed, out):
        if log in seen:
            raise SpecError(
                f"reward '{log}' is listed twice ({seen[log]} and {p}); TRL logs rewards by name, so give it "
                f"once with the summed weight, or tell them apart with different parameters or `as:`."
            )
        seen[log] = p
    return out


__all__ = ["Reward", "Resolved", "RewardSpec", "parse_spec", "list_rewards", "get_reward", "compose_rewards", "compose_specs", "resolve",
           "logged_names", "TRL_KWARGS"]
