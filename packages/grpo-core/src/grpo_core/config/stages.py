"""The config's stages, each with its rewards: the ``stages`` list (or one stage,
'main', from the top-level ``rewards``), each stage's GRPOConfig settings checked, its
reward specs parsed, their rewards found and composed once. An unknown or malformed
reward name is a problem with what it may have meant (grpo's, TRL's and open-r1's
names). Read by :func:`grpo_core.config.load.load_config`."""

from __future__ import annotations

from typing import Any

from grpo_core.base.errors import ConfigError, GrpoError, SpecError, UnknownNameError
from grpo_core.base.problems import Problems
from grpo_core.config.openr1 import REMOTE
from grpo_core.config.removed import translate_removed
from grpo_core.config.schema import StageSection
from grpo_core.config.training import check_training
from grpo_core.config.trl_compat import reward_hint
from grpo_core.plugin import registry
from grpo_core.rewards.reward import compose_specs, parse_spec, resolve


def read_stages(raw: dict, known: set[str], environment, time_limit: float | None, problems: Problems,
                env: dict) -> list[StageSection]:
    """The stages (one, 'main', without a stages list), each with its rewards parsed
    and composed once. An environment that scores rollouts (``get_reward``) may be
    the only reward. A stage with a problem is left out (its problems are kept)."""
    rewards, stages_raw = raw.get("rewards"), raw.get("stages")
    scorers = [e.name for e in environment.rewarded] if environment is not None else []
    if not stages_raw:
        if rewards is None and not scorers:
            if "rewards" not in problems.failed:  # reward_funcs said something: its problem is reported
                problems.add("no rewards: add a rewards list, e.g. rewards: ['math.correctness:2.0'].")
            return []
        stage = _stage("main", [] if rewards is None else rewards, {}, "", scorers, time_limit, problems)
        return [stage] if stage else []
    if not isinstance(stages_raw, list):
        problems.add(f"'stages' must be a list of stages, got {stages_raw!r}.")
        return []
    stages: list[StageSection] = []
    names: set[str] = set()
    for i, st in enumerate(stages_raw):
        if not isinstance(st, dict):
            problems.add(f"stage {i + 1} must be a mapping with rewards (and name, max_steps, ...), got {st!r}.")
            continue
        st = dict(st)
        name = str(st.pop("name", f"stage{i + 1}"))
        if name in names or not name.replace("-", "").replace("_", "").isalnum():
            problems.add(f"stage name {name!r} must be unique and made of letters, digits, - and _.")
        names.add(name)
        where = f"stage '{name}': "
        st_rewards = st.pop("rewards", rewards)
        if st_rewards is None and not scorers:
            problems.add(f"{where}no rewards: give the stage a rewards list (or set top-level rewards).")
            continue
        translate_removed(st, where, problems, env)
        check_training(st, where, known, problems)
        if "reward_weights" in st:
            problems.add(f"{where}set weights in the stage's rewards list, not reward_weights.")
        stage = _stage(name, [] if st_rewards is None else st_rewards, st, where, scorers, time_limit, problems)
        if stage:
            stages.append(stage)
    return stages


def _stage(name: str, specs: Any, training: dict, where: str, scorers: list[str], time_limit: float | None,
           problems: Problems) -> StageSection | None:
    """``scorers``: environments whose get_reward TRL adds to the rewards (logged by name)."""

    if isinstance(specs, (str, dict)):
        specs = [specs]
    if scorers and specs == []:
        return StageSection(name, [], training, [])
    if not isinstance(specs, list) or not specs:
        problems.add(
            f"{where}rewards must be a non-empty list of reward specs, e.g. "
            f"['math.correctness:2.0', {{name: length.ideal, weight: 0.1, params: {{target: 300}}}}]; "
            f"got {specs!r}."
        )
        return None
    parsed = _parsed_specs(specs, problems)
    funcs = problems.attempt(compose_specs, parsed, time_limit) if parsed else None  # params, weights, gates
    if funcs is None or not parsed:
        return None
    clash = sorted({f.__name__ for f in funcs} & set(scorers))
    if clash:
        problems.add(f"{where}'{clash[0]}' names both a reward and the environment that scores rollouts; TRL "
                     f"logs both as rewards/{clash[0]}/mean: give the reward another name with `as:`.")
        return None
    if all(p.weight == 0 for p in parsed) and not scorers:
        problems.add(f"{where}every reward weight is 0: the model would get no learning signal.")
        return None
    return StageSection(name, parsed, training, funcs)


def _parsed_specs(specs: list, problems: Problems) -> list | None:
    """Each spec parsed and its reward found: each bad one is a problem of its own
    (an unknown name with the nearest of grpo's, TRL's and open-r1's names)."""

    parsed, bad = [], False
    for spec in specs:
        try:
            p = parse_spec(spec)
            resolve(p.name)
            parsed.append(p)
        except GrpoError as exc:
            problems.add(_reward_problem(exc, spec))
            bad = True
    return None if bad else parsed


def _reward_problem(exc: GrpoError, spec: Any) -> GrpoError:
    """An unknown or malformed reward name, with what it may have meant (TRL's and open-r1's names map to ours)."""
    import re

    name = spec.get("name") if isinstance(spec, dict) else re.split(r"[\s(:]", str(spec).strip(), maxsplit=1)[0]
    if not isinstance(name, str) or not isinstance(exc, (SpecError, UnknownNameError)):
        return exc
    if name in REMOTE:
        return ConfigError(reward_hint(name, []))
    ours = [] if isinstance(exc, UnknownNameError) else registry.rewards().names()  # the former lists ours
    hint = reward_hint(name, ours)
    return type(exc)(f"{exc} {hint}") if hint else exc


__all__ = ["read_stages"]
