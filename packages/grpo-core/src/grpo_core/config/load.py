"""The ``grpo train`` configuration: a YAML file plus command-line overrides.

Top-level keys are ``GRPOConfig`` fields, read by TRL's own argument machinery
(``TrlParser.set_defaults_with_config`` + ``HfArgumentParser``), exactly as in
``trl grpo --config``. Our sections sit beside them: ``model``, ``lora``,
``dataset``, ``rewards``, ``stages``, ``health``, ``adaptive_weights`` (and
TRL's ``env``), and ``environment`` / ``tools`` (tool-using, multi-turn rollouts;
see :mod:`grpo_core.rewards.environments`). On the command line, ``--key value`` sets a ``GRPOConfig`` field
and ``--section.key value`` one of ours (``--model.id``, ``--lora.r 8``,
``--dataset.params.level 2``); ``--rewards SPEC [SPEC ...]`` replaces the
reward list. Command-line values apply to every stage.

`trl grpo` and open-r1 recipes are read as they are (:mod:`grpo_core.config.trl_compat`,
:mod:`grpo_core.config.openr1`); settings TRL removed whose intent is plain
(``warmup_ratio``, ``max_prompt_length``, ...) are read as what replaced them, each
with a note (``--strict``: an error).

Loading a config checks everything it can without a model: names, weights,
parameters, removed TRL fields, values TRL would fail on. Its problems are
gathered (:mod:`grpo_core.base.problems`) and reported together, numbered. Heavy imports
happen in the functions that need them (``training_args``).
"""

from __future__ import annotations

import copy
import difflib
import importlib.util
import os
from typing import Any

from grpo_core.base.errors import ConfigError
from grpo_core.base.params import bind_params
from grpo_core.base.problems import Problems
from grpo_core.config import openr1
from grpo_core.config.batch_shape import check_config_shape
from grpo_core.config.learning import check_learning
from grpo_core.config.models import check_model_id
from grpo_core.config.overrides import (
    cli_values,
    field_types,
    read_yaml,
    set_dotted,
    split_overrides,
)
from grpo_core.config.precision import normalize_dtype
from grpo_core.config.prompts import check_prompts
from grpo_core.config.removed import take_trl_args, translate_flags, translate_removed
from grpo_core.config.schema import (
    SECTIONS,
    AdaptiveSection,
    DatasetSection,
    HealthSection,
    HeldoutSection,
    LearningSection,
    LogSection,
    ModelSection,
    RunConfig,
    SamplingSection,
    read_section,
)
from grpo_core.config.stages import read_stages
from grpo_core.config.training import check_top_level, check_training_values
from grpo_core.config.trl_compat import translate
from grpo_core.config.values import LORA_RANGES, ValueType, check_fields, value_problem
from grpo_core.plugin import registry
from grpo_core.rewards.environments import parse_section


def _lora(raw: Any, problems: Problems) -> tuple[dict | None, bool]:
    if raw is None or raw is False:
        return None, False
    if raw is True:
        raw = {}
    if not isinstance(raw, dict):
        problems.add(f"'lora' must be a mapping of peft LoraConfig fields or false, got {raw!r}.")
        return None, False
    raw = dict(raw)
    merge, enabled = raw.pop("merge", False), raw.pop("enabled", True)
    for key, value in (("merge", merge), ("enabled", enabled)):  # a string is not a switch: 'abc' is neither
        problem = value_problem(f"lora.{key}", value, SWITCH)
        if problem:
            problems.add(problem)
    if enabled is False:
        return None, merge is True
    types = field_types("peft:LoraConfig", "peft")
    for key in raw:
        if key not in types:
            close = difflib.get_close_matches(key, sorted(types), n=1)
            problems.add(
                f"lora has no option '{key}'" + (f" (did you mean '{close[0]}'?)" if close else "")
                + "; use peft LoraConfig fields (r, lora_alpha, lora_dropout, target_modules, ...) "
                "or merge: true."
            )
    lora = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.0, "target_modules": "all-linear",
            "task_type": "CAUSAL_LM", **raw}
    for problem in check_fields(lora, types, LORA_RANGES, "lora."):  # peft checks few values before the model
        problems.add(problem)
    return lora, merge is True


SWITCH = ValueType(frozenset({"bool"}), kind="bool")


def load_config(path: str | os.PathLike | None, overrides: list[str] | tuple[str, ...] = (), data: dict | None = None, *,
                strict: bool = False) -> RunConfig:
    """Read ``path`` (or ``data``), apply ``overrides`` and check everything that
    can be checked without a model: option names, rewards, dataset name, values.
    Every problem found is reported at once (one ConfigError, numbered); ``strict``:
    removed settings are problems instead of being translated. Nothing is changed
    outside the returned config (``apply_env`` sets its ``env``)."""

    raw = copy.deepcopy(data) if data is not None else (read_yaml(path) if path else {})
    problems = Problems(strict=strict)
    ours, flags = split_overrides(list(overrides))
    for dotted, value in ours.items():
        problems.attempt(set_dotted, raw, dotted, value)
    flags = take_trl_args(raw, flags)
    recipe = openr1.LAUNCH if openr1.is_recipe(raw) else None  # the processes it was written for
    translate(raw, problems)
    env = problems.attempt(_env, raw, default={})
    types = field_types("trl:GRPOConfig", "trl", "transformers")
    known = set(types)
    translate_removed(raw, "", problems, env)
    flags = translate_flags(flags, problems, env)
    training = {k: v for k, v in raw.items() if k not in SECTIONS}
    check_top_level(training, {name for name, _ in flags}, known, problems)
    cli = cli_values(flags, types, problems)
    lora, merge = _lora(raw.get("lora"), problems)
    if merge and lora is None:
        problems.add("lora.merge is set but LoRA is off; merging needs a lora section.")
    model, dataset = _model(raw, problems), _dataset(raw, problems)
    environment = problems.attempt(_environment, raw)
    health = _health(raw, problems)
    stages = read_stages(raw, known, environment, health.reward_time_limit, problems, env)
    check_training_values([("", training), ("command line: ", cli)]
                           + [(f"stage '{st.name}': ", st.training) for st in stages], types, problems)
    cfg = RunConfig(
        path=str(path) if path else None, model=model, lora=lora, merge=merge, dataset=dataset,
        stages=stages, health=health, adaptive=_adaptive(raw.get("adaptive_weights"), problems), training=training,
        cli=cli, explicit=set(training) | set(cli), env=env, environment=environment, overrides=tuple(overrides),
        log=_log(raw, problems), sampling=_sampling(raw, problems),
        heldout=read_section(raw, "heldout", HeldoutSection, "", problems), notes=problems.notes,
        learning=read_section(raw, "learning", LearningSection, "", problems),
    )
    if stages:
        problems.attempt(check_sampling_metric, cfg)
        problems.attempt(check_learning, cfg)
        problems.attempt(check_prompts, cfg)
    check_config_shape(cfg, problems, recipe)
    problems.raise_if_any(str(path) if path else "the config")
    return cfg


def apply_env(cfg: RunConfig) -> None:
    """Set the config's ``env`` variables in this process (before torch starts CUDA)."""
    for key, value in cfg.env.items():
        os.environ[key] = value


def _env(raw: dict) -> dict[str, str]:
    env = raw.pop("env", None) or {}
    if not isinstance(env, dict):
        raise ConfigError(f"'env' must be a mapping of environment variables, got {env!r}.")
    return {str(k): str(v) for k, v in env.items()}


def _model(raw: dict, problems: Problems) -> ModelSection:
    if isinstance(raw.get("model"), str):  # shorthand: model: smollm2-135m
        raw["model"] = {"id": raw["model"]}
    model = read_section(raw, "model", ModelSection, "", problems)
    model.dtype = problems.attempt(normalize_dtype, model.dtype, default="auto")
    if "model.id" not in problems.failed:  # a value that is not text: reported with its value, not also "required"
        problems.attempt(check_model_id, model.id)
    if model.quantization and importlib.util.find_spec("bitsandbytes") is None:
        problems.add(
            f"model.quantization {model.quantization} (load_in_4bit / load_in_8bit) needs bitsandbytes and a CUDA "
            "GPU: pip install bitsandbytes, or drop load_in_4bit / load_in_8bit."
        )
    if model.chat_template is not None:
        problems.attempt(_check_chat_template, model.chat_template)
    attn = model.attn_implementation
    if isinstance(attn, str) and attn.startswith("flash_attention") and not any(
            importlib.util.find_spec(m) for m in ("flash_attn", "kernels")):
        problems.add(f"model.attn_implementation {attn} needs the flash-attn package and a CUDA GPU: pip install "
                     f"flash-attn, or use sdpa (or eager).")
    return model


def _check_chat_template(template: Any) -> None:
    """A template that does not parse fails when the tokenizer first renders a prompt:
    say so now (parsed as transformers renders it, in a sandbox with loop controls)."""
    if not isinstance(template, str) or not template.strip():
        raise ConfigError(f"model.chat_template must be a Jinja template (text), got {template!r}.")
    from jinja2 import TemplateSyntaxError
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    try:
        ImmutableSandboxedEnvironment(extensions=["jinja2.ext.loopcontrols"]).parse(template)
    except TemplateSyntaxError as exc:
        raise ConfigError(f"model.chat_template (chat_template) is not a valid Jinja template: {exc.message} "
                          f"(line {exc.lineno}); fix it, or drop it to keep the tokenizer's own.") from None


def _dataset(raw: dict, problems: Problems) -> DatasetSection:
    if isinstance(raw.get("dataset"), str):
        raw["dataset"] = {"name": raw["dataset"]}
    dataset = read_section(raw, "dataset", DatasetSection, "", problems)
    if not dataset.name:
        if "dataset.name" not in problems.failed:  # a name that is not text: reported with its value
            problems.add("dataset.name is required, e.g. dataset: {name: arithmetic}; list them with "
                         "`grpo datasets list`.")
        return dataset
    entry = problems.attempt(registry.datasets().get, dataset.name)  # unknown names fail here, with suggestions
    if entry is None:
        return dataset
    if not isinstance(dataset.params, dict) or not isinstance(dataset.eval_params, dict):
        problems.add("dataset.params and dataset.eval_params must be mappings.")
        return dataset
    problems.attempt(bind_params, f"dataset '{dataset.name}'", entry.obj, dataset.params)
    return dataset


def _environment(raw: dict):
    return parse_section(raw.get("environment"), raw.get("tools"))


def _health(raw: dict, problems: Problems) -> HealthSection:
    if raw.get("health") is False:
        raw["health"] = {"enabled": False}
    return read_section(raw, "health", HealthSection, "", problems)


def _log(raw: dict, problems: Problems) -> LogSection:
    section = read_section(raw, "log", LogSection, "", problems)
    value = section.rollouts
    if isinstance(value, str) and value.startswith("every "):
        value = value[6:].split()[0]
        section.rollouts = int(value) if value.isdigit() else value
    ok = section.rollouts in ("all", "none") or (isinstance(section.rollouts, int) and not isinstance(
        section.rollouts, bool) and section.rollouts >= 1)
    if not ok:
        problems.add(f"log.rollouts is {section.rollouts!r}; use all, none, or a number of steps N "
                     f"(every N steps), e.g. log: {{rollouts: 10}}.")
        section.rollouts = "all"
    return section


DYNAMIC_ONLY = ("max_rounds", "oversample", "metric")  # the sampling options only dynamic sampling reads


def _sampling(raw: dict, problems: Problems) -> SamplingSection:
    value = raw.get("sampling", {})
    if isinstance(value, dict) and isinstance(value.get("dynamic"), dict):  # sampling: {dynamic: {max_rounds: 3}}
        value = {**{k: v for k, v in value.items() if k != "dynamic"}, "dynamic": True, **value["dynamic"]}
        raw = {**raw, "sampling": value}
    section = read_section(raw, "sampling", SamplingSection, "", problems)
    unused = [k for k in DYNAMIC_ONLY if k in value] if isinstance(value, dict) and not section.dynamic else []
    if unused:
        it = "it" if len(unused) == 1 else "them"
        problems.note(f"{', '.join(f'sampling.{k}: {value[k]}' for k in unused)} ignored: dynamic sampling is off; "
                      f"set sampling.dynamic: true to use {it}.")
    return section


def check_sampling_metric(cfg: RunConfig) -> None:
    """``sampling.metric`` names a reward of every stage (by its logged name)."""
    metric = cfg.sampling.metric
    if not cfg.sampling.dynamic or metric == "total":
        return
    for stage in cfg.stages:
        names = [f.__name__ for f in stage.funcs]
        if metric not in names:
            raise ConfigError(f"sampling.metric is {metric!r}, which is not a reward of stage '{stage.name}' "
                              f"({', '.join(names)}); use one of them, or total.")


def _adaptive(value: Any, problems: Problems) -> AdaptiveSection | None:
    if value in (None, False):
        return None
    if value is True:
        value = {}
    if not isinstance(value, dict):
        problems.add(f"'adaptive_weights' must be a mapping or true/false, got {value!r}.")
        return None
    adaptive = read_section({"adaptive_weights": value}, "adaptive_weights", AdaptiveSection, "", problems)
    if not adaptive.enabled:
        return None
    if not (0 < adaptive.min_factor <= 1 <= adaptive.max_factor):
        problems.add(
            f"adaptive_weights bounds must satisfy 0 < min_factor <= 1 <= max_factor, got "
            f"{adaptive.min_factor} and {adaptive.max_factor}."
        )
    return adaptive


__all__ = ["RunConfig", "load_config", "apply_env", "SECTIONS"]
