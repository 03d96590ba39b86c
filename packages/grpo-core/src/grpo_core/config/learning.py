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


def parse_method(spec: Any) -> Method:
    """``zvp`` or ``zvp(alpha=0.1)`` (the reward spec's parameter grammar)."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"learning.method must be a method's name, e.g. zvp or zvp(alpha=0.1), got {spec!r}.")
    text = spec.strip()
    name, _, rest = text.partition("(")
    params = parse_args("(" + rest, text) if rest else {}
    return Method(name.strip(), params)


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
    """The method builds; a method that judges correctness finds its reward in every stage."""
    try:
        method = parse_method(cfg.learning.method)
        built = method.build()
    except GrpoError as exc:
        raise ConfigError(str(exc) if "learning" in str(exc) else f"learning.method: {exc}") from None
    if not judges_correctness(built):
        return
    for stage in cfg.stages:
        if metric_of(stage.funcs, cfg.learning.metric) is None:
            names = ", ".join(f.__name__ for f in stage.funcs)
            what = ("no single correctness reward" if cfg.learning.metric == "auto"
                    else f"no reward {cfg.learning.metric!r}")
            raise ConfigError(f"learning.method {method.spec!r} judges flat groups on a correctness reward, but stage "
                              f"'{stage.name}' has {what} (its rewards: {names}); set learning.metric to one of them.")


__all__ = ["Method", "parse_method", "metric_of", "check_learning", "judges_correctness"]
