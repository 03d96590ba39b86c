"""``learning``: the learning method that turns a scored batch into advantages, checked
before any model loads: its name is registered (``register_advantages``), its parameters
bind to its factory, and the correctness reward it judges flat groups on (``metric``) is a
reward of every stage."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grpo_core.base.errors import ConfigError, GrpoError
from grpo_core.base.params import bind_params
from grpo_core.plugin import registry
from grpo_core.rewards.specs import parse_args


@dataclass(frozen=True)
class Method:
    """``learning.method`` read: the registered name and its parameters."""

    name: str
    params: dict

    def build(self) -> Any:
        """The method object (its factory called with the parameters)."""
        factory = registry.advantages().get(self.name).obj
        bind_params(f"learning method '{self.name}'", factory, self.params)
        try:
            return factory(**self.params)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"learning.method {self.spec!r}: {exc}") from None

    @property
    def spec(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{self.name}({args})" if args else self.name


def parse_named(spec: Any, key: str, noun: str, example: str) -> tuple[str, dict]:
    """``(name, params)`` of a setting naming a registered factory, ``zvp`` or
    ``zvp(alpha=0.1)`` (the reward spec's parameter grammar); anything else (``zvp(``,
    ``zvp(alpha=0.1) x``, ``(alpha=1)``) is refused, naming ``key`` and the value."""
    form = f"write a {noun}'s name, or its name and parameters: {example}"
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"{key} is {spec!r}; {form}.")
    text = spec.strip()
    name, paren, rest = text.partition("(")
    name = name.strip()
    if not name or (paren and not rest.rstrip().endswith(")")):
        why = "has no name" if not name else "does not end with the ')' closing its parameters"
        raise ConfigError(f"{key} {spec!r} {why}; {form}.")
    return name, (parse_args(paren + rest, text, what=key) if paren else {})


def parse_method(spec: Any) -> Method:
    """``learning.method`` read (:func:`parse_named`)."""
    return Method(*parse_named(spec, "learning.method", "method", "zvp or zvp(alpha=0.1)"))


def judges_correctness(method: Any) -> bool:
    """Does the method judge groups on a correctness reward (``judges_correctness = True``)?"""
    return bool(getattr(method, "judges_correctness", False))


def metric_of(stage_funcs: list, metric: str) -> tuple[str, float, float] | None:
    """The correctness reward a method judges on, with the scores meaning right and wrong:
    ``metric`` by its logged name, or (``auto``) the stage's one reward registered as
    correctness. None when ``auto`` finds none or several."""
    if metric == "auto":
        found = [f for f in stage_funcs if getattr(f, "correctness", False)]
        if len(found) != 1:
            return None
        func = found[0]
    else:
        func = next((f for f in stage_funcs if f.__name__ == metric), None)
        if func is None:
            return None
    low, high = getattr(func, "range", None) or (0.0, 1.0)
    return func.__name__, float(high), float(low)


def check_learning(cfg) -> None:
    """The method builds; a metric named is a reward of every stage (whatever the method:
    a misspelt name is never ignored); a method that judges correctness finds its reward
    in every stage, and ``auto`` one correctness reward there (two: which one is not guessed)."""
    try:
        method = parse_method(cfg.learning.method)
        built = method.build()
    except GrpoError as exc:
        raise ConfigError(str(exc) if "learning" in str(exc) else f"learning.method: {exc}") from None
    metric, judges = cfg.learning.metric, judges_correctness(built)
    for stage in cfg.stages:
        names = ", ".join(f.__name__ for f in stage.funcs)
        if metric != "auto" and not any(f.__name__ == metric for f in stage.funcs):
            unused = "" if judges else f" (learning.method {method.spec!r} judges no groups on it: leave it out)"
            raise ConfigError(f"learning.metric {metric!r} is not a reward of stage '{stage.name}' (its rewards: "
                              f"{names}); name one of them, or auto{unused}.")
        if judges and metric_of(stage.funcs, metric) is None:
            found = [f.__name__ for f in stage.funcs if getattr(f, "correctness", False)]
            what = (f"{len(found)} rewards registered as correctness ({', '.join(found)}), and auto does not pick one"
                    if found else "no reward registered as correctness")
            raise ConfigError(f"learning.method {method.spec!r} judges flat groups on a correctness reward, but stage "
                              f"'{stage.name}' has {what} (its rewards: {names}); set learning.metric to one of them.")


__all__ = ["Method", "parse_method", "parse_named", "metric_of", "check_learning", "judges_correctness"]
