"""Binding parameters by name to a function's signature, with type checks.

Shared by rewards (``length.ideal(target=300)``) and dataset loaders
(``load_dataset("gsm8k", limit=10)``).
"""

from __future__ import annotations

import difflib
import inspect
import types
import typing
from collections.abc import Callable
from typing import Any

from grpo_core.base.errors import RewardParamError

# Keyword arguments TRL itself passes to every reward function.
TRL_KWARGS = frozenset(
    {"prompts", "completions", "completion_ids", "trainer_state", "log_metric", "log_extra"}
)
# What a dataset column cannot be called: TRL's keywords and grpo's ``group_size`` (a reward
# gets every column as a keyword beside them, so it could never read such a column: Python
# refuses the call, "got multiple values for keyword argument 'log_metric'").
RESERVED_COLUMNS = TRL_KWARGS | {"group_size"}


def reserved_columns_problem(names) -> str | None:
    """Why the columns ``names`` cannot be handed to rewards, or None: naming each one
    that takes a reserved name (:data:`RESERVED_COLUMNS`) and the fix."""
    taken = sorted(str(n) for n in names if n in RESERVED_COLUMNS)
    if not taken:
        return None
    which = ", ".join(f"'{n}'" for n in taken)
    return (f"column {which} has the name of a keyword every reward is given by TRL or grpo "
            f"({', '.join(sorted(RESERVED_COLUMNS))}), so no reward could read it; rename the column "
            f"(e.g. '{taken[0]}_value').")


def signature_of(func: Callable) -> inspect.Signature:
    target = func.__call__ if not inspect.isroutine(func) and callable(func) else func  # type: ignore[operator]  # mypy#5079: a Callable's __call__
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):
        return inspect.Signature([inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD)])


def split_signature(
    func: Callable, skip: frozenset[str] = TRL_KWARGS
) -> tuple[dict[str, inspect.Parameter], tuple[str, ...], bool]:
    """(parameters with defaults, required names without defaults, takes **kwargs)."""
    params: dict[str, inspect.Parameter] = {}
    required: list[str] = []
    var_kw = False
    for p in signature_of(func).parameters.values():
        if p.kind is p.VAR_KEYWORD:
            var_kw = True
            continue
        if p.kind is p.VAR_POSITIONAL or p.name in skip:
            continue
        if p.default is p.empty:
            required.append(p.name)
        else:
            params[p.name] = p
    return params, tuple(required), var_kw


def _hints(func: Callable) -> dict[str, Any]:
    """Resolved annotations, one parameter at a time: one annotation that cannot be
    resolved (a type imported only for type checking) must not switch off the
    checks of the others."""
    target = getattr(func, "__wrapped__", func)
    if not inspect.isroutine(target) and callable(target):
        target = target.__call__  # type: ignore[operator]  # mypy#5079: a Callable's __call__
    try:
        return typing.get_type_hints(target)
    except Exception:
        pass
    out: dict[str, Any] = {}
    namespace = getattr(target, "__globals__", {})
    for name, ann in getattr(target, "__annotations__", {}).items():
        if not isinstance(ann, str):
            out[name] = ann
            continue
        try:  # the plugin's own source annotation, resolved as typing would
            out[name] = eval(ann, dict(namespace))  # noqa: S307
        except Exception:
            continue
    return out


_SIMPLE = (bool, int, float, str, list, dict, tuple)


def _accepts(expected: Any, value: Any) -> bool | None:
    """True/False when the annotation can be checked, None when it cannot."""
    if expected is Any or expected is inspect.Parameter.empty:
        return None
    origin = typing.get_origin(expected)
    if origin in (typing.Union, types.UnionType):
        verdicts = [_accepts(arg, value) for arg in typing.get_args(expected)]
        if any(v is True for v in verdicts):
            return True
        return None if any(v is None for v in verdicts) else False
    if origin is typing.Literal:
        return value in typing.get_args(expected)
    if expected is type(None):
        return value is None
    base = origin or expected
    if base in (list, tuple):
        return isinstance(value, (list, tuple))
    if base is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if base is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(base, type) and base in _SIMPLE:
        return isinstance(value, base)
    return None


def _type_name(expected: Any) -> str:
    if typing.get_origin(expected) is typing.Literal:
        return "one of " + ", ".join(repr(v) for v in typing.get_args(expected))
    return getattr(expected, "__name__", None) or str(expected).replace("typing.", "")


def bind_params(
    owner: str, func: Callable, given: dict[str, Any], *, columns: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Check ``given`` against ``func``'s defaulted keyword parameters; return them.

    ``owner`` names the reward or dataset in error messages.
    """
    params, required, var_kw = split_signature(func)
    hints = _hints(func)
    for name, value in given.items():
        if name in required or name in columns:
            raise RewardParamError(
                f"{owner}: '{name}' is a dataset column it reads, not a parameter; "
                f"put it in the dataset instead of passing {name}={value!r}."
            )
        if name in TRL_KWARGS:
            raise RewardParamError(f"{owner}: '{name}' is supplied by TRL and cannot be set.")
        param = params.get(name)
        if param is None:
            if var_kw and not params:
                continue  # a **kwargs-only function: nothing to check against
            accepted = ", ".join(f"{n}={p.default!r}" for n, p in params.items()) or "none"
            close = difflib.get_close_matches(name, list(params), n=1)
            raise RewardParamError(
                f"{owner} has no parameter '{name}'"
                + (f" (did you mean '{close[0]}'?)" if close else "")
                + f"; its parameters are: {accepted}."
            )
        expected = hints.get(name, param.annotation)
        if expected is inspect.Parameter.empty and param.default is not None:
            expected = type(param.default)
        ok = _accepts(expected, value)
        if ok is False:
            raise RewardParamError(
                f"{owner} parameter '{name}' expects {_type_name(expected)}, got "
                f"{type(value).__name__} {value!r} (default is {param.default!r})."
            )
    return dict(given)
