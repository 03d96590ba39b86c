"""Rewards by name: ``get_reward``, ``compose_rewards`` and the spec syntax.

A spec is ``"name"``, ``"name:weight"`` or ``"name(key=value, ...):weight"``;
values are Python literals read with ``ast.literal_eval`` (never evaluated).
"""

from __future__ import annotations

import ast
import inspect
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from . import registry
from .errors import RewardParamError, SpecError
from .params import TRL_KWARGS, bind_params, split_signature

MAX_SPEC_CHARS = 10_000


class Reward:
    """A registered reward bound to its parameters: a TRL reward function.

    ``__name__`` is the registered name, so TRL logs ``rewards/<name>/mean``.
    Picklable when the underlying function is (module-level functions are).
    """

    def __new__(cls, name: str, func: Callable, *args, **kwargs):
        if cls is Reward and inspect.iscoroutinefunction(_target(func)):
            cls = AsyncReward  # TRL runs async rewards concurrently; keep them async
        return super().__new__(cls)

    def __init__(self, name: str, func: Callable, params: dict | None = None, description: str = ""):
        self.__name__ = name
        self.__qualname__ = name
        self.name = name
        self.func = func
        self.description = description
        _, required, var_kw = split_signature(func)
        self.required_columns: tuple[str, ...] = required
        self._var_kw = var_kw
        self._accepted = frozenset(inspect.signature(_target(func)).parameters) if not var_kw else None
        self.params = bind_params(f"reward '{name}'", func, dict(params or {}), columns=required)
        self.__doc__ = getattr(func, "__doc__", None)

    def _bind(self, kwargs: dict) -> dict:
        """TRL's keywords plus the bound parameters, cut to what the function takes."""
        kwargs.update(self.params)
        if self._accepted is not None:
            kwargs = {k: v for k, v in kwargs.items() if k in self._accepted}
        return kwargs

    def __call__(self, completions=None, **kwargs):
        return self.func(completions, **self._bind(kwargs))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"Reward({self.name}({args}))" if args else f"Reward({self.name})"

    def __reduce__(self):
        return (Reward, (self.name, self.func, self.params, self.description))


class AsyncReward(Reward):
    """A :class:`Reward` around an ``async def`` reward function."""

    async def __call__(self, completions=None, **kwargs):
        return await self.func(completions, **self._bind(kwargs))


def _target(func: Callable) -> Callable:
    return func if inspect.isroutine(func) or not callable(func) else func.__call__


@dataclass(frozen=True)
class RewardSpec:
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    weight: float = 1.0

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name}({args}):{self.weight:g}" if args else f"{self.name}:{self.weight:g}"


_WEIGHT_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def _parse_weight(text: str, spec: str) -> float:
    text = text.strip()
    if not _WEIGHT_RE.match(text):
        raise SpecError(
            f"weight {text!r} in reward spec {spec!r} is not a number; "
            f"write e.g. 'math.correctness:2.0'."
        )
    return float(text)


def _close_paren(spec: str, start: int) -> int:
    """Index of the ')' matching the '(' at ``start``, skipping quoted strings."""
    depth, quote, i = 0, None, start
    while i < len(spec):
        ch = spec[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise SpecError(f"reward spec {spec!r} has an unclosed '('; write name(key=value, ...).")


def parse_spec(spec: str | dict | RewardSpec) -> RewardSpec:
    """Parse ``"name"``, ``"name:w"``, ``"name(k=v, ...):w"`` or a dict
    ``{"name": ..., "weight": ..., "params": {...}}``."""
    if isinstance(spec, RewardSpec):
        return spec
    if isinstance(spec, dict):
        return _from_dict(spec)
    if not isinstance(spec, str):
        raise SpecError(f"reward spec must be a string or a mapping, got {type(spec).__name__} {spec!r}.")
    text = spec.strip()
    if not text:
        raise SpecError("empty reward spec; write a reward name such as 'math.correctness'.")
    if len(text) > MAX_SPEC_CHARS:
        raise SpecError(f"reward spec of {len(text)} characters is longer than {MAX_SPEC_CHARS}.")
    weight = 1.0
    params: dict[str, Any] = {}
    paren = text.find("(")
    if paren >= 0:
        end = _close_paren(text, paren)
        name, tail = text[:paren].strip(), text[end + 1 :].strip()
        params = _parse_args(text[paren : end + 1], text)
        if tail:
            if not tail.startswith(":"):
                raise SpecError(f"unexpected {tail!r} after ')' in reward spec {spec!r}; only ':weight' may follow.")
            weight = _parse_weight(tail[1:], spec)
    else:
        name, sep, w = text.partition(":")
        name = name.strip()
        if sep:
            weight = _parse_weight(w, spec)
    _check_name(name, spec)
    return RewardSpec(name, params, weight)


def _check_name(name: str, spec: str) -> None:
    if not registry.DOTTED_NAME_RE.match(name):
        raise SpecError(
            f"reward name {name!r} in spec {spec!r} is not of the form <namespace>.<name> in "
            f"lower case (e.g. 'format.xml_strict')."
        )


def _parse_args(args: str, spec: str) -> dict[str, Any]:
    try:
        tree = ast.parse("f" + args, mode="eval")
    except SyntaxError as exc:
        raise SpecError(f"cannot parse the parameters {args!r} of reward spec {spec!r}: {exc.msg}.") from None
    call = tree.body
    if not isinstance(call, ast.Call) or call.args:
        raise SpecError(f"parameters in reward spec {spec!r} must be key=value pairs, e.g. name(target=300).")
    params: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise SpecError(f"'**' is not allowed in reward spec {spec!r}.")
        try:
            params[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise SpecError(
                f"value of '{kw.arg}' in reward spec {spec!r} is not a Python literal "
                f"(numbers, strings in quotes, True/False/None, lists, dicts): "
                f"{ast.get_source_segment('f' + args, kw.value)!r}."
            ) from None
    return params


def _from_dict(spec: dict) -> RewardSpec:
    unknown = set(spec) - {"name", "weight", "params"}
    if "name" not in spec or unknown:
        raise SpecError(
            f"reward entry {spec!r} must have 'name' and may have 'weight' and 'params'"
            + (f"; unknown keys: {', '.join(sorted(unknown))}" if unknown else "")
            + "."
        )
    base = parse_spec(str(spec["name"]))
    params = dict(base.params)
    extra = spec.get("params") or {}
    if not isinstance(extra, dict):
        raise SpecError(f"'params' of reward '{base.name}' must be a mapping, got {extra!r}.")
    params.update(extra)
    weight = spec.get("weight", base.weight)
    if isinstance(weight, str):
        weight = _parse_weight(weight, str(spec))
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise SpecError(f"weight {weight!r} of reward '{base.name}' is not a number.")
    return RewardSpec(base.name, params, float(weight))


def validate(reward: Reward) -> Reward:
    """Call ``reward`` on an empty batch so parameter checks inside the function
    (``target=0``, a bad schema) fail now, before any model loads."""
    if isinstance(reward, AsyncReward):
        return reward
    columns = {c: [] for c in reward.required_columns}
    try:
        reward(prompts=[], completions=[], completion_ids=[], trainer_state=None,
               log_metric=lambda *a, **k: None, log_extra=lambda *a, **k: None, **columns)
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
    entry = registry.rewards().get(name)
    return validate(Reward(entry.name, entry.obj, params, entry.description))


def compose_rewards(specs: Iterable[str | dict | RewardSpec] | str) -> tuple[list[Reward], list[float]]:
    """``(reward_funcs, reward_weights)`` for ``GRPOConfig`` / ``GRPOTrainer``."""
    if isinstance(specs, (str, dict, RewardSpec)):
        specs = [specs]
    parsed = [parse_spec(s) for s in specs]
    if not parsed:
        raise SpecError("no rewards given; name at least one, e.g. ['math.correctness:2.0'].")
    seen: dict[str, RewardSpec] = {}
    for p in parsed:
        if p.name in seen:
            raise SpecError(
                f"reward '{p.name}' is listed twice ({seen[p.name]} and {p}); TRL logs rewards "
                f"by name, so give it once with the summed weight."
            )
        if not math.isfinite(p.weight):
            raise SpecError(f"weight of reward '{p.name}' must be finite, got {p.weight}.")
        seen[p.name] = p
    reg = registry.rewards()
    funcs = []
    for p in parsed:
        entry = reg.get(p.name)
        funcs.append(validate(Reward(entry.name, entry.obj, p.params, entry.description)))
    return funcs, [p.weight for p in parsed]


__all__ = ["Reward", "RewardSpec", "parse_spec", "list_rewards", "get_reward", "compose_rewards", "TRL_KWARGS"]
