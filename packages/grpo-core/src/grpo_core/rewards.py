"""Rewards by name: ``get_reward``, ``compose_rewards`` and the spec syntax.

A spec is ``REF``, ``REF:weight`` or ``REF(key=value, ...):weight``, optionally
followed by ``when <reward> <op> <number>`` (see :mod:`grpo_core.gating`). REF is
a registered name (``math.correctness``), a function in a file
(``my_rewards.py:has_digit``) or in a module (TRL's ``my_lib.rewards.has_digit``,
when no plugin registered that name); see
:mod:`grpo_core.local_rewards`. Values are Python literals read with
``ast.literal_eval`` (never evaluated).
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

    def __init__(self, name: str, func: Callable, params: dict | None = None, description: str = "",
                 logged_name: str | None = None, *, correctness: bool = False, value_range=None, source: str = ""):
        self.__name__ = logged_name or name
        self.__qualname__ = self.__name__
        self.name = name
        self.correctness = bool(correctness)  # full marks mean "the answer is right" (declared when registered)
        self.source = source  # "plugin 'x' (distribution y)", or "" for a function of one's own
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
            from .gating import gate_values

            values = gate_values(list(values), self.gate.memo.scores(completions, kwargs), self.condition)
        return values

    def call_unmemoized(self, completions=None, **kwargs):
        return self.func(completions, **self._bind(dict(kwargs)))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"Reward({self.name}({args}))" if args else f"Reward({self.name})"

    def __reduce__(self):
        return (_rebuild, (self.name, self.func, self.params, self.description, self.__name__, self.correctness,
                           self._declared_range, self.source))


def _rebuild(name, func, params, description, logged, correctness, value_range, source) -> Reward:
    return Reward(name, func, params, description, logged, correctness=correctness, value_range=value_range,
                  source=source)


def _bound_range(name: str, declared, params: dict) -> tuple[float, float] | None:
    """The declared range for these parameters: ``(low, high)``, or what a declared
    function of the parameters returns."""
    if declared is None:
        return None
    value = declared(**params) if callable(declared) else declared
    from .registry import check_range

    if callable(value) or check_range(value):
        raise RewardParamError(f"reward '{name}': its declared range for {params} is {value!r}, not (low, high).")
    return float(value[0]), float(value[1])


class AsyncReward(Reward):
    """A :class:`Reward` around an ``async def`` reward function."""

    async def __call__(self, completions=None, **kwargs):
        return await self.func(completions, **self._bind(kwargs))


def _target(func: Callable) -> Callable:
    return func if inspect.isroutine(func) or not callable(func) else func.__call__


@dataclass(frozen=True)
class RewardSpec:
    name: str  # as written: a registered name, file.py:func or module.func
    params: dict[str, Any] = field(default_factory=dict)
    weight: float = 1.0
    when: Any = None  # a gating.Condition
    alias: str | None = None  # the logged name, when given (YAML 'as:')

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        text = f"{self.name}({args}):{self.weight:g}" if args else f"{self.name}:{self.weight:g}"
        return text + (f" when {self.when}" if self.when is not None else "")

    def as_config(self) -> str | dict:
        """What config.yaml records: the string form, or a mapping when it has an alias."""
        if self.alias is None:
            return str(self)
        out: dict[str, Any] = {"name": self.name, "weight": self.weight, "as": self.alias}
        if self.params:
            out["params"] = dict(self.params)
        if self.when is not None:
            out["when"] = str(self.when)
        return out


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
    """Parse ``"REF"``, ``"REF:w"``, ``"REF(k=v, ...):w"``, each optionally followed by
    ``when <reward> <op> <number>``, or a mapping ``{"name": ..., "weight": ...,
    "params": {...}, "when": ..., "as": ...}``."""
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
    name, rest = _split_name(text)
    params: dict[str, Any] = {}
    if rest.startswith("("):
        end = _close_paren(rest, 0)
        params = _parse_args(rest[: end + 1], text)
        rest = rest[end + 1 :]
    head, *cond = _WHEN_SPLIT_RE.split(rest, maxsplit=1)
    head = head.strip()
    weight = 1.0
    if head:
        if not head.startswith(":"):
            raise SpecError(f"unexpected {head!r} in reward spec {spec!r}; only ':weight' may follow the name "
                            f"(and then 'when <reward> >= <number>').")
        weight = _parse_weight(head[1:], spec)
    _check_name(name, spec)
    return RewardSpec(name, params, weight, _condition(cond[0], text) if cond else None)


_WHEN_SPLIT_RE = re.compile(r"(?:^|\s+)when\s+")


def _split_name(text: str) -> tuple[str, str]:
    """(the reference, the rest): ``file.py:func`` keeps its colon."""
    from .local_rewards import LOCAL_REF_RE

    m = LOCAL_REF_RE.match(text)
    if m:
        return m["ref"].strip(), text[m.end():].strip()
    m = re.match(r"[^\s(:]*", text)
    return m.group(0), text[m.end():].strip()


def _condition(text: str, spec: str):
    from .gating import parse_condition

    return parse_condition(text, spec)


def _check_name(name: str, spec: str) -> None:
    from .local_rewards import IMPORT_PATH_RE, is_local_ref

    if not (registry.DOTTED_NAME_RE.match(name) or IMPORT_PATH_RE.match(name) or is_local_ref(name)):
        raise SpecError(
            f"reward {name!r} in spec {spec!r} is not of the form <namespace>.<name> in lower case "
            f"(a registered reward, e.g. 'format.xml_strict'), nor a function of your own "
            f"(my_rewards.py:has_digit or my_lib.rewards.has_digit)."
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
    unknown = set(spec) - {"name", "weight", "params", "when", "as"}
    if "name" not in spec or unknown:
        raise SpecError(
            f"reward entry {spec!r} must have 'name' and may have 'weight', 'params', 'when' and 'as'"
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
    when = _condition(str(spec["when"]), str(spec)) if spec.get("when") is not None else base.when
    alias = spec.get("as")
    if alias is not None and not (isinstance(alias, str) and re.fullmatch(r"[\w.\-()=, ]{1,100}", alias)):
        raise SpecError(f"'as' of reward '{base.name}' must be a short name (letters, digits, . _ -), got {alias!r}.")
    return RewardSpec(base.name, params, float(weight), when, alias)


def validate(reward: Reward) -> Reward:
    """Call ``reward`` on an empty batch so parameter checks inside the function
    (``target=0``, a bad schema) fail now, before any model loads."""
    if isinstance(reward, AsyncReward):
        return reward
    from .scoring import call_reward

    try:
        call_reward(reward, [], {c: [] for c in reward.required_columns}, [], [])
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


def compose_specs(parsed: list[RewardSpec]) -> list[Reward]:
    """The rewards of parsed specs: resolved, bound, checked, named for logging, gated."""
    from .gating import link

    if not parsed:
        raise SpecError("no rewards given; name at least one, e.g. ['math.correctness:2.0'].")
    for p in parsed:
        if not math.isfinite(p.weight):
            raise SpecError(f"weight of reward '{p.name}' must be finite, got {p.weight}.")
    resolved = [resolve(p.name) for p in parsed]
    logged = logged_names(parsed, [r.name for r in resolved])
    funcs = [validate(r.bind(p.params, logged_name=log)) for p, r, log in zip(parsed, resolved, logged)]
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

    def bind(self, params: dict | None = None, logged_name: str | None = None) -> Reward:
        return Reward(self.name, self.func, params, self.description, logged_name, correctness=self.correctness,
                      value_range=self.range, source=self.source)


# TRL's own answer-checking rewards, as `trl grpo` names them (import paths here)
TRL_CORRECTNESS = ("trl.rewards.accuracy_reward", "trl.rewards.reasoning_accuracy_reward")


def resolve(ref: str) -> Resolved:
    """A registered name, or a function of the user's own (a file or module path; see
    :mod:`grpo_core.local_rewards`) with what it declares as attributes
    (``correctness = True``, ``range = (0, 1)``)."""
    from . import local_rewards
    from .errors import UnknownNameError

    if local_rewards.is_local_ref(ref):
        return _own(ref, local_rewards.load(ref), ":")
    reg = registry.rewards()
    try:
        entry = reg.get(ref)
    except UnknownNameError as unknown:
        if ref.split(".", 1)[0] in registry.KNOWN_NAMESPACES or not local_rewards.IMPORT_PATH_RE.match(ref):
            raise
        try:
            func = local_rewards.load(ref)
        except SpecError as exc:
            raise UnknownNameError(f"{unknown} Nor is it a function to import: {exc}") from None
        return _own(ref, func, ".")
    return Resolved(entry.name, entry.obj, entry.description, bool(entry.extra.get("correctness", False)),
                    entry.extra.get("range"), entry.source)


def _own(ref: str, func: Callable, sep: str) -> Resolved:
    declared = getattr(func, "range", None)
    if declared is not None:
        from .registry import check_range

        problem = check_range(declared)
        if problem:
            raise SpecError(f"reward {ref}: its range attribute {declared!r} is not usable: {problem}.")
    return Resolved(getattr(func, "__name__", ref.rsplit(sep, 1)[1]), func, inspect.getdoc(func) or "",
                    bool(getattr(func, "correctness", False)) or ref in TRL_CORRECTNESS, declared)


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
