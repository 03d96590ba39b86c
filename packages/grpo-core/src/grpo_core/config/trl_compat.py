"""`trl grpo` and open-r1 configs as they are: the one translation place.

TRL's script reads four argument dataclasses from one YAML: ``GRPOConfig`` and
``ScriptArguments`` / ``GRPOScriptArguments``, ``ModelConfig`` and
``DatasetMixtureConfig``. :func:`translate` maps every field of the last three
onto grpo's sections with TRL's meaning (GRPOConfig fields pass through as they
always did), and open-r1's additions through :mod:`grpo_core.config.openr1`; a config
that sets one thing both ways is an error naming both.

TRL's four reward names resolve to TRL's own functions (``trl.rewards.accuracy_reward``;
``get_soft_overlong_punishment`` with `trl grpo`'s values), open-r1's 13 names to
ours (:mod:`grpo_core.rewards.openr1_rewards`), a reward model id to the registered
``model.classifier``, and ``dataset_name`` (a hub id or a local path) or a
``datasets:`` mixture to the core's ``trl`` dataset (``openr1`` for an open-r1 recipe).
"""

from __future__ import annotations

import difflib
from typing import Any

from grpo_core.base.errors import ConfigError
from grpo_core.base.problems import Problems
from grpo_core.config import openr1
from grpo_core.plugin.hints import KNOWN_NAMESPACES

MODEL = {"model_name_or_path": "id", "model_revision": "revision", "dtype": "dtype", "torch_dtype": "dtype",
         "attn_implementation": "attn_implementation"}
LORA = {"lora_r": "r", "lora_alpha": "lora_alpha", "lora_dropout": "lora_dropout",
        "lora_target_modules": "target_modules", "lora_target_parameters": "target_parameters",
        "lora_modules_to_save": "modules_to_save", "lora_task_type": "task_type", "use_rslora": "use_rslora",
        "use_dora": "use_dora"}
LORA_DEFAULTS = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "target_modules": None, "task_type": "CAUSAL_LM"}
QUANT = ("load_in_8bit", "load_in_4bit", "bnb_4bit_quant_type", "use_bnb_nested_quant", "bnb_4bit_quant_storage")
DATASET = {"dataset_name": "dataset_name", "dataset_config": "dataset_config", "dataset_streaming": "streaming",
           "datasets": "datasets", "streaming": "streaming", "test_split_size": "test_split_size"}
SPLITS = {"dataset_train_split": "split", "dataset_test_split": "eval_split"}
IGNORED = ("ignore_bias_buffers",)  # a DPO/DDP flag `trl grpo` accepts and does not use
TRL_REWARDS = ("accuracy_reward", "reasoning_accuracy_reward", "think_format_reward", "get_soft_overlong_punishment")
KEYS = (*MODEL, *LORA, "use_peft", *QUANT, *DATASET, *SPLITS, *IGNORED, "reward_funcs", "reward_model_name_or_path",
        "dataset_configs", *openr1.KEYS)


def translate(raw: dict, problems=None) -> dict:
    """``raw`` with TRL's script/model/dataset fields and open-r1's moved into grpo's
    sections. ``problems`` (a :class:`~grpo_core.base.problems.Problems`) gathers every
    problem and note; without it the first problem is raised."""

    own = problems is None
    problems = Problems() if own else problems
    if "dataset_configs" in raw:
        _dataset_configs(raw, problems)
    r1 = openr1.take(raw)
    trl = {k: raw.pop(k) for k in list(raw) if k in KEYS}
    if trl or r1:
        for k in IGNORED:
            trl.pop(k, None)
        if r1 and trl.get("reward_funcs") is None and not ({"rewards", "stages"} & set(raw)):
            trl["reward_funcs"] = list(openr1.DEFAULT_REWARDS)
            problems.note(f"reward_funcs not set: open-r1's default {list(openr1.DEFAULT_REWARDS)}.")
        names = openr1.reward_names(trl.get("reward_funcs"))
        problems.attempt(_model, raw, trl, problems)
        problems.attempt(_lora, raw, trl)
        problems.attempt(_dataset, raw, trl, r1, names)
        problems.attempt(_rewards, raw, trl, r1, subject="rewards")
        openr1.translate(raw, r1, names, problems)
    if own:
        problems.raise_if_any("the config")
    return raw


def _dataset_configs(raw: dict, problems) -> None:
    """Older open-r1 recipes' ``dataset_configs: [NAME]``: one config name is TRL's dataset_config."""
    value = raw.pop("dataset_configs")
    names = [value] if isinstance(value, str) else value
    plain = isinstance(names, list) and len(names) == 1 and "dataset_config" not in raw
    if problems.strict or not plain:
        problems.add(f"'dataset_configs' ({value!r}) is not a field of TRL or open-r1 any more: use dataset_config "
                     f"(one config name of dataset_name)" + (" (--strict)." if problems.strict and plain else "."))
        return
    raw["dataset_config"] = names[0]
    problems.note(f"dataset_configs: {names} -> dataset_config: {names[0]}; older open-r1 recipes' name for it.")


def _both(trl_key: str, ours: str) -> ConfigError:
    return openr1.both(trl_key, ours, "TRL's")


def _section(raw: dict, name: str) -> dict:
    value = raw.get(name)
    if isinstance(value, str) and name == "model":
        value = {"id": value}
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise ConfigError(f"'{name}' must be a mapping, got {value!r}.")
    raw[name] = value
    return value


def _model(raw: dict, trl: dict, problems) -> None:
    keys = [k for k in MODEL if k in trl] + [k for k in QUANT if k in trl]
    if not keys:
        return
    model = _section(raw, "model")
    for key in [k for k in MODEL if k in trl]:
        if MODEL[key] in model:
            raise _both(key, f"model.{MODEL[key]}")
        if key == "torch_dtype":  # ModelConfig's name before transformers 5
            _renamed_dtype(trl[key], problems)
        model[MODEL[key]] = trl.pop(key)
    quant = {k: trl.pop(k) for k in QUANT if k in trl}
    if quant.get("load_in_4bit") or quant.get("load_in_8bit"):
        if "quantization" in model:
            raise _both("load_in_4bit", "model.quantization")
        model["quantization"] = quant


def _renamed_dtype(value: Any, problems) -> None:
    message = "transformers 5 renamed torch_dtype to dtype"
    if problems.strict:
        problems.add(f"'torch_dtype' is not a ModelConfig field in transformers 5: use dtype "
                     f"(--strict; without it grpo reads torch_dtype: {value} as model.dtype: {value}).")
    else:
        problems.note(f"torch_dtype: {value} -> model.dtype: {value}; {message}.")


def _lora(raw: dict, trl: dict) -> None:
    use_peft = trl.pop("use_peft", None)
    lora_keys = {LORA[k]: trl.pop(k) for k in list(LORA) if k in trl}
    if use_peft is None and not lora_keys:
        return
    if "lora" in raw:
        raise _both("use_peft" if use_peft is not None else next(k for k in LORA if LORA[k] in lora_keys), "lora")
    # TRL's meaning: lora_* count only with use_peft: true (get_peft_config returns None otherwise)
    raw["lora"] = {**LORA_DEFAULTS, **lora_keys} if use_peft else False


def _dataset(raw: dict, trl: dict, r1: dict, names: list[str]) -> None:
    first = next((k for k in (*DATASET, *openr1.DATASET) if k in trl or k in r1), None)
    params = {DATASET[k]: trl.pop(k) for k in list(DATASET) if k in trl}
    params.update(openr1.dataset_params(r1))
    splits = {SPLITS[k]: trl.pop(k) for k in list(SPLITS) if k in trl}
    if not params and not splits:
        return
    if params:
        if "dataset" in raw:
            assert first is not None  # params came from one of those keys
            raise openr1.both(first, "dataset", "open-r1's" if first in openr1.DATASET else "TRL's")
        if r1 or names:  # an open-r1 recipe: its prompt column, mixture and reward columns
            params.update({"columns": openr1.reward_columns(names)} if openr1.reward_columns(names) else {})
        raw["dataset"] = {"name": "openr1" if r1 or names else "trl", "params": params}
    dataset = _section(raw, "dataset")
    dataset["split"] = splits.get("split", "train")
    # `trl grpo` evaluates on dataset_test_split ("test") when eval_strategy is not "no"
    if raw.get("eval_strategy", "no") != "no":
        dataset.setdefault("eval_split", splits.get("eval_split", "test"))


def _rewards(raw: dict, trl: dict, r1: dict) -> None:
    funcs = trl.pop("reward_funcs", None)
    model_id = trl.pop("reward_model_name_or_path", None)
    if funcs is None and model_id is None:
        return
    if "rewards" in raw or "stages" in raw:
        raise _both("reward_funcs" if funcs is not None else "reward_model_name_or_path", "rewards")
    if isinstance(funcs, str):
        funcs = [funcs]
    if funcs is not None and not isinstance(funcs, list):
        raise ConfigError(f"reward_funcs must be a list of reward names or import paths, got {funcs!r}.")
    specs = ([f"model.classifier(id={model_id!r})"] if model_id else []) + [_reward(f, r1) for f in funcs or []]
    weights = raw.pop("reward_weights", None)
    if weights is not None:
        if not isinstance(weights, list) or len(weights) != len(specs):
            shown = ", ".join(str(s.get("name") if isinstance(s, dict) else s) for s in specs)
            raise ConfigError(f"reward_weights {weights!r} must be a list of {len(specs)} numbers, one per reward "
                              f"({shown}).")
        specs = [{**(s if isinstance(s, dict) else {"name": s}), "weight": w} for s, w in zip(specs, weights)]
    raw["rewards"] = specs


def _reward(name: Any, r1: dict) -> str | dict:
    """TRL's four names as import paths of TRL's functions (so they log as
    ``rewards/accuracy_reward/mean``, as in `trl grpo`), open-r1's names as our
    rewards with the recipe's fields; anything else is a dotted import path, as
    `trl grpo` reads it."""
    if not isinstance(name, str):
        raise ConfigError(f"reward_funcs entries must be names or import paths, got {name!r}.")
    if name in openr1.OPENR1_REWARDS:  # a remote judge's name stays: the reward check explains it
        return openr1.reward_spec(name, r1)
    if name == "get_soft_overlong_punishment":
        return "grpo_core.config.trl_compat.soft_overlong_punishment"
    return f"trl.rewards.{name}" if name in TRL_REWARDS else name


# ------------------------------------------------------------------ TRL's rewards, by name


def soft_overlong_punishment(completion_ids, max_completion_len: int = 1280, soft_punish_cache: int = 256, **kwargs):
    """TRL's ``get_soft_overlong_punishment`` (DAPO): 0 up to max_completion_len -
    soft_punish_cache tokens, then linearly down to -1 at max_completion_len (the
    values `trl grpo` uses by default: 1280 and 256)."""
    from trl.rewards import get_soft_overlong_punishment

    return get_soft_overlong_punishment(max_completion_len, soft_punish_cache)(completion_ids=completion_ids, **kwargs)


def reward_hint(name: str, ours: list[str]) -> str:
    """What an unknown reward name may have meant: TRL's and open-r1's names map to ours;
    otherwise the nearest names across the three."""
    if name in openr1.OPENR1_REWARDS:
        spec = openr1.OPENR1_REWARDS[name].spec
        return (f"'{name}' is open-r1's name: it maps to {spec} (reward_funcs: [{name}] in an open-r1 recipe is "
                f"read so; under rewards: write {spec}).")
    if name in openr1.REMOTE:
        return f"'{name}' is open-r1's remote judge: it needs {openr1.REMOTE[name]}. {openr1.LOCAL_INSTEAD}."
    if name in TRL_REWARDS:
        return f"'{name}' is TRL's name: write trl.rewards.{name} (or reward_funcs: [{name}], as `trl grpo` reads it)."
    theirs = [n for n, e in openr1.OPENR1_REWARDS.items() if e.spec == name]
    if theirs:  # an open-r1 name mapped here, and the plugin that registers it is not loaded
        dist = KNOWN_NAMESPACES.get(name.split(".", 1)[0], "the plugin that registers it")
        return (f"open-r1's {' and '.join(theirs)} map{'s' if len(theirs) == 1 else ''} to {name}, from {dist}: "
                f"pip install {dist} (and, if GRPO_PLUGINS is set, add it there).")
    labelled = {n: n for n in ours}
    labelled.update({n: f"{n} (open-r1's: {e.spec})" for n, e in openr1.OPENR1_REWARDS.items()})
    labelled.update({n: f"{n} (TRL's: trl.rewards.{n})" for n in TRL_REWARDS})
    close = difflib.get_close_matches(name, list(labelled), n=4, cutoff=0.6)
    return f"Nearest across grpo's, TRL's and open-r1's names: {', '.join(labelled[c] for c in close)}." if close else ""


__all__ = ["translate", "KEYS", "soft_overlong_punishment", "reward_hint", "TRL_REWARDS"]
