"""``sampling.prompts``: the prompt sampler, checked before any model loads: its name is
registered (``register_samplers``), its parameters bind to its factory and pass its checks
(``frontier(target=1)`` is refused there), and a sampler that reads pass rates finds the
correctness reward it reads them on (``learning.metric``) in every stage."""

from __future__ import annotations

from typing import Any

from grpo_core.base.errors import ConfigError, GrpoError
from grpo_core.base.params import bind_params
from grpo_core.config.learning import judges_correctness, metric_of, parse_named
from grpo_core.plugin import registry

DEFAULT = "trl"  # TRL's own sampler: the trainer does not step in


def parse_prompts(spec: Any) -> tuple[str, dict]:
    """``(name, params)`` of ``sampling.prompts``: ``frontier`` or ``frontier(target=0.5)``."""
    return parse_named(spec, "sampling.prompts", "sampler", "frontier or frontier(target=0.5)")


def build_sampler(spec: Any) -> Any:
    """The sampler object ``spec`` names (its factory called with its parameters)."""
    name, params = parse_prompts(spec)
    factory = registry.samplers().get(name).obj
    bind_params(f"prompt sampler '{name}'", factory, params)
    try:
        return factory(**params)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"sampling.prompts {spec!r}: {exc}") from None


def check_prompts(cfg) -> None:
    """The sampler builds; one that reads pass rates (``judges_correctness = True``) finds
    the correctness reward in every stage (``learning.metric``, or auto's one)."""
    spec = cfg.sampling.prompts
    try:
        sampler = build_sampler(spec)
    except GrpoError as exc:
        raise ConfigError(str(exc) if "sampling.prompts" in str(exc) else f"sampling.prompts: {exc}") from None
    if not judges_correctness(sampler):
        return
    for stage in cfg.stages:
        if metric_of(stage.funcs, cfg.learning.metric) is None:
            names = ", ".join(f.__name__ for f in stage.funcs)
            raise ConfigError(f"sampling.prompts {spec!r} reads pass rates on a correctness reward, but stage "
                              f"'{stage.name}' has none that learning.metric ({cfg.learning.metric}) picks (its "
                              f"rewards: {names}); set learning.metric to the one that says an answer is right.")


__all__ = ["parse_prompts", "build_sampler", "check_prompts", "DEFAULT"]
