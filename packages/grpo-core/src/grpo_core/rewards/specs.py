"""The spec grammar, one place for rewards and environments.

A reward spec is ``REF``, ``REF:weight`` or ``REF(key=value, ...):weight``,
optionally followed by ``when <reward> <op> <number>`` (a gate, see
:mod:`grpo_core.rewards.gating`) and ``within <seconds>s`` (its time limit, see
:mod:`grpo_core.base.timelimit`), or a mapping ``{name, weight, params, when, as,
time_limit}``. REF is a registered name (``math.correctness``), a function in a
file (``my_rewards.py:has_digit``) or in a module (``my_lib.rewards.has_digit``).
An environment spec is ``name``, ``name(key=value, ...)`` or ``name(...):weight``,
or a mapping ``{name, params, weight}``.

Values are Python literals read with ``ast.literal_eval`` on single nodes, never
evaluated. The time limit is a clause of its own, not a parameter, so it never
collides with a reward's own ``timeout=``.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from typing import Any

from grpo_core.base.errors import ConfigError, SpecError
from grpo_core.plugin import registry
from grpo_core.rewards.gating import parse_condition
from grpo_core.rewards.local_rewards import IMPORT_PATH_RE, LOCAL_REF_RE, is_local_ref

MAX_SPEC_CHARS = 10_000
REWARD_KEYS = ("name", "weight", "params", "when", "as", "time_limit")
ENVIRONMENT_KEYS = ("name", "params", "weight")


@dataclass(frozen=True)
class RewardSpec:
    name: str  # as written: a registered name, file.py:func or module.func
    params: dict[str, Any] = field(default_factory=dict)
    weight: float = 1.0
    when: Any = None  # a gating.Condition
    alias: str | None = None  # the logged name, when given (YAML 'as:')
    time_limit: float | None = None  # seconds per call; None: health.reward_time_limit

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        text = f"{self.name}({args}):{self.weight:g}" if args else f"{self.name}:{self.weight:g}"
        return (text + (f" when {self.when}" if self.when is not None else "")
                + (f" within {self.time_limit:g}s" if self.time_limit is not None else ""))

    def as_config(self) -> str | dict:
        """What config.yaml records: the string form, or a mapping when it has an alias."""
        if self.alias is None:
            return str(self)
        out: dict[str, Any] = {"name": self.name, "weight": self.weight, "as": self.alias}
        if self.params:
            out["params"] = dict(self.params)
        if self.when is not None:
            out["when"] = str(self.when)
        if self.time_limit is not None:
            out["time_limit"] = self.time_limit
        return out


_WEIGHT_RE = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def parse_weight(text: str, spec: str) -> float:
    text = text.strip()
    if not _WEIGHT_RE.match(text):
        raise SpecError(
            f"weight {text!r} in reward spec {spec!r} is not a number; "
            f"write e.g. 'math.correctness:2.0'."
        )
    return float(text)


def close_paren(spec: str, start: int) -> int:
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
        end = close_paren(rest, 0)
        params = parse_args(rest[: end + 1], text)
        rest = rest[end + 1 :]
    rest, limit = _take_within(rest, spec)
    head, *cond = _WHEN_SPLIT_RE.split(rest, maxsplit=1)
    head = head.strip()
    weight = 1.0
    if head:
        if not head.startswith(":"):
            raise SpecError(f"unexpected {head!r} in reward spec {spec!r}; only ':weight' may follow the name "
                            f"(then 'when <reward> >= <number>', then 'within <seconds>s').")
        weight = parse_weight(head[1:], spec)
    _check_name(name, spec)
    return RewardSpec(name, params, weight, _condition(cond[0], text) if cond else None, None, limit)


_WITHIN_RE = re.compile(r"(?:^|\s+)within\s+(?P<value>\S+?)\s*s?\s*$")


def _take_within(rest: str, spec: str) -> tuple[str, float | None]:
    """``... within 30s`` at the end of a spec: the reward's time limit per call."""
    m = _WITHIN_RE.search(rest)
    if not m:
        return rest, None
    return rest[:m.start()], check_time_limit(m["value"], spec)


def check_time_limit(value: Any, spec: Any) -> float:
    """Seconds > 0 (``30``, ``"30s"``, ``2.5``)."""
    text = str(value).strip().removesuffix("s").strip() if isinstance(value, str) else value
    try:
        seconds = float(text) if not isinstance(text, bool) else math.nan
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise SpecError(f"time limit {value!r} of reward {spec!r} is not a number of seconds > 0; write e.g. "
                        f"'within 30s' or time_limit: 30.")
    return seconds


_WHEN_SPLIT_RE = re.compile(r"(?:^|\s+)when\s+")


def _split_name(text: str) -> tuple[str, str]:
    """(the reference, the rest): ``file.py:func`` keeps its colon."""

    m = LOCAL_REF_RE.match(text)
    if m:
        return m["ref"].strip(), text[m.end():].strip()
    name = re.split(r"[\s(:]", text, maxsplit=1)[0]
    return name, text[len(name):].strip()


def _condition(text: str, spec: str):
    return parse_condition(text, spec)


def _check_name(name: str, spec: str) -> None:
    if not (registry.DOTTED_NAME_RE.match(name) or IMPORT_PATH_RE.match(name) or is_local_ref(name)):
        raise SpecError(
            f"reward {name!r} in spec {spec!r} is not of the form <namespace>.<name> in lower case "
            f"(a registered reward, e.g. 'format.xml_strict'), nor a function of your own "
            f"(my_rewards.py:has_digit or my_lib.rewards.has_digit)."
        )


def parse_args(args: str, spec: str, what: str = "reward spec") -> dict[str, Any]:
    """``(key=value, ...)`` of ``spec`` as a dict of Python literals; ``what`` names the
    setting in messages."""
    try:
        tree = ast.parse("f" + args, mode="eval")
    except SyntaxError as exc:
        raise SpecError(f"cannot parse the parameters {args!r} of {what} {spec!r}: {exc.msg}.") from None
    call = tree.body
    if not isinstance(call, ast.Call) or call.args or not isinstance(call.func, ast.Name):  # not f(a=1)(b=2)
        raise SpecError(f"parameters in {what} {spec!r} must be key=value pairs, e.g. name(target=300).")
    params: dict[str, Any] = {}
    for kw in call.keywords:
        if kw.arg is None:
            raise SpecError(f"'**' is not allowed in {what} {spec!r}.")
        try:
            params[kw.arg] = ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise SpecError(
                f"value of '{kw.arg}' in {what} {spec!r} is not a Python literal "
                f"(numbers, strings in quotes, True/False/None, lists, dicts): "
                f"{ast.get_source_segment('f' + args, kw.value)!r}."
            ) from None
    return params


def _from_dict(spec: dict) -> RewardSpec:
    unknown = set(spec) - set(REWARD_KEYS)
    if "name" not in spec or unknown:
        raise SpecError(
            f"reward entry {spec!r} must have 'name' and may have 'weight', 'params', 'when', 'as' and 'time_limit'"
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
        weight = parse_weight(weight, str(spec))
    if isinstance(weight, bool) or not isinstance(weight, (int, float)):
        raise SpecError(f"weight {weight!r} of reward '{base.name}' is not a number.")
    when = _condition(str(spec["when"]), str(spec)) if spec.get("when") is not None else base.when
    alias = spec.get("as")
    if alias is not None and not (isinstance(alias, str) and re.fullmatch(r"[\w.\-()=, ]{1,100}", alias)):
        raise SpecError(f"'as' of reward '{base.name}' must be a short name (letters, digits, . _ -), got {alias!r}.")
    limit = check_time_limit(spec["time_limit"], base.name) if spec.get("time_limit") is not None else base.time_limit
    return RewardSpec(base.name, params, float(weight), when, alias, limit)


# --------------------------------------------------------------------------- environments


@dataclass(frozen=True)
class EnvironmentSpec:
    """``name(key=value, ...):weight`` as written; ``weight`` scales its ``get_reward``."""

    name: str
    params: dict = field(default_factory=dict)
    weight: float | None = None

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        text = f"{self.name}({args})" if args else self.name
        return text if self.weight is None else f"{text}:{self.weight:g}"


def parse_environment(value: Any, where: str = "environment") -> EnvironmentSpec:
    """``"name"``, ``"name(k=v, ...)"``, ``"name(...):weight"`` or ``{name, params, weight}``."""
    if isinstance(value, EnvironmentSpec):
        return value
    if isinstance(value, dict):
        return _environment_from_dict(value, where)
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where} must be an environment name such as 'python' or 'guess_number(max_guesses=5)', "
                          f"got {value!r}; list them with `grpo envs list`.")
    text = value.strip()
    cut = min((i for i in (text.find("("), text.find(":")) if i >= 0), default=len(text))
    name, rest, params = text[:cut].strip(), text[cut:], {}
    try:
        if rest.startswith("("):
            end = close_paren(rest, 0)
            params, rest = parse_args(rest[: end + 1], text), rest[end + 1:].strip()
        if rest and not rest.startswith(":"):
            raise SpecError(f"unexpected {rest!r} after the environment in {text!r}; write name(key=value):weight")
        weight = parse_weight(rest[1:], text) if rest else None
    except SpecError as exc:
        raise ConfigError(f"{where}: {str(exc).replace('reward spec', 'environment')}") from None
    if not registry.NAME_RE.match(name):
        raise ConfigError(f"{where}: {name!r} is not an environment name (lower case, e.g. 'python' or "
                          f"'acme.chess'); list them with `grpo envs list`.")
    return EnvironmentSpec(name, params, weight)


def _environment_from_dict(value: dict, where: str) -> EnvironmentSpec:
    unknown = set(value) - set(ENVIRONMENT_KEYS)
    if "name" not in value or unknown:
        raise ConfigError(f"{where} {value!r} must have 'name' and may have 'params' and 'weight'"
                          + (f"; unknown keys: {', '.join(map(str, sorted(unknown)))}" if unknown else "") + ".")
    base = parse_environment(str(value["name"]), where)
    params = value.get("params") or {}
    if not isinstance(params, dict):
        raise ConfigError(f"{where}: 'params' of environment '{base.name}' must be a mapping, got {params!r}.")
    weight = value.get("weight", base.weight)
    if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float))):
        raise ConfigError(f"{where}: weight {weight!r} of environment '{base.name}' is not a number.")
    return EnvironmentSpec(base.name, {**base.params, **params}, None if weight is None else float(weight))


__all__ = ["RewardSpec", "parse_spec", "EnvironmentSpec", "parse_environment", "parse_weight", "parse_args",
           "close_paren", "check_time_limit", "MAX_SPEC_CHARS", "REWARD_KEYS"]
