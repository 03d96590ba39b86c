"""`trl grpo` configs as they are.

TRL's script reads four argument dataclasses from one YAML: ``GRPOConfig`` and
``ScriptArguments`` / ``GRPOScriptArguments``, ``ModelConfig`` and
``DatasetMixtureConfig``. :func:`translate` maps every field of the last three
onto grpo's sections with TRL's meaning (GRPOConfig fields pass through as they
always did); a config that sets one thing both ways is an error naming both.

TRL's four reward names resolve to TRL's own functions (``trl.rewards.accuracy_reward``;
``get_soft_overlong_punishment`` with `trl grpo`'s values), a reward model id to the
registered ``model.classifier``, and ``dataset_name`` (a hub id or a local path) or
a ``datasets:`` mixture to the core's ``trl`` dataset.
"""

from __future__ import annotations

from typing import Any

from .errors import ConfigError

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
KEYS = (*MODEL, *LORA, "use_peft", *QUANT, *DATASET, *SPLITS, *IGNORED, "reward_funcs", "reward_model_name_or_path")


def translate(raw: dict) -> dict:
    """``raw`` with TRL's script/model/dataset fields moved into grpo's sections."""
    trl = {k: raw.pop(k) for k in list(raw) if k in KEYS}
    if not trl:
        return raw
    for k in IGNORED:
        trl.pop(k, None)
    _model(raw, trl)
    _lora(raw, trl)
    _dataset(raw, trl)
    _rewards(raw, trl)
    return raw


def _both(trl_key: str, ours: str) -> ConfigError:
    return ConfigError(f"'{trl_key}' (TRL's name) and '{ours}' (grpo's) both set the same thing; keep one of them.")


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


def _model(raw: dict, trl: dict) -> None:
    keys = [k for k in MODEL if k in trl] + [k for k in QUANT if k in trl]
    if not keys:
        return
    model = _section(raw, "model")
    for key in [k for k in MODEL if k in trl]:
        if MODEL[key] in model:
            raise _both(key, f"model.{MODEL[key]}")
        model[MODEL[key]] = trl.pop(key)
    quant = {k: trl.pop(k) for k in QUANT if k in trl}
    if quant.get("load_in_4bit") or quant.get("load_in_8bit"):
        if "quantization" in model:
            raise _both("load_in_4bit", "model.quantization")
        model["quantization"] = quant


def _lora(raw: dict, trl: dict) -> None:
    use_peft = trl.pop("use_peft", None)
    lora_keys = {LORA[k]: trl.pop(k) for k in list(LORA) if k in trl}
    if use_peft is None and not lora_keys:
        return
    if "lora" in raw:
        raise _both("use_peft" if use_peft is not None else next(k for k in LORA if LORA[k] in lora_keys), "lora")
    # TRL's meaning: lora_* count only with use_peft: true (get_peft_config returns None otherwise)
    raw["lora"] = {**LORA_DEFAULTS, **lora_keys} if use_peft else False


def _dataset(raw: dict, trl: dict) -> None:
    params = {DATASET[k]: trl.pop(k) for k in list(DATASET) if k in trl}
    splits = {SPLITS[k]: trl.pop(k) for k in list(SPLITS) if k in trl}
    if not params and not splits:
        return
    if params:
        if "dataset" in raw:
            raise _both(next(iter(k for k in DATASET if DATASET[k] in params)), "dataset")
        raw["dataset"] = {"name": "trl", "params": params}
    dataset = _section(raw, "dataset")
    dataset["split"] = splits.get("split", "train")
    # `trl grpo` evaluates on dataset_test_split ("test") when eval_strategy is not "no"
    if raw.get("eval_strategy", "no") != "no":
        dataset.setdefault("eval_split", splits.get("eval_split", "test"))


def _rewards(raw: dict, trl: dict) -> None:
    funcs = trl.pop("reward_funcs", None)
    model_id = trl.pop("reward_model_name_or_path", None)
    if funcs is None and model_id is None:
        return
    if "rewards" in raw or "stages" in raw:
        raise _both("reward_funcs" if funcs is not None else "reward_model_name_or_path", "rewards")
    if isinstance(funcs, str):
        funcs = [funcs]
    specs = ([f"model.classifier(id={model_id!r})"] if model_id else []) + [_trl_reward(f) for f in funcs or []]
    weights = raw.pop("reward_weights", None)
    if weights is not None:
        if not isinstance(weights, list) or len(weights) != len(specs):
            raise ConfigError(f"reward_weights {weights!r} must be a list of {len(specs)} numbers, one per reward "
                              f"({', '.join(specs)}).")
        specs = [{"name": s, "weight": w} for s, w in zip(specs, weights)]
    raw["rewards"] = specs


def _trl_reward(name: Any) -> str:
    """TRL's four names as import paths of TRL's functions (so they log as
    ``rewards/accuracy_reward/mean``, as in `trl grpo`); anything else is a dotted
    import path, as `trl grpo` reads it."""
    if not isinstance(name, str):
        raise ConfigError(f"reward_funcs entries must be names or import paths, got {name!r}.")
    if name == "get_soft_overlong_punishment":
        return "grpo_core.trl_compat.soft_overlong_punishment"
    return f"trl.rewards.{name}" if name in TRL_REWARDS else name


# ------------------------------------------------------------------ TRL's rewards, by name


def soft_overlong_punishment(completion_ids, max_completion_len: int = 1280, soft_punish_cache: int = 256, **kwargs):
    """TRL's ``get_soft_overlong_punishment`` (DAPO): 0 up to max_completion_len -
    soft_punish_cache tokens, then linearly down to -1 at max_completion_len (the
    values `trl grpo` uses by default: 1280 and 256)."""
    from trl.rewards import get_soft_overlong_punishment

    return get_soft_overlong_punishment(max_completion_len, soft_punish_cache)(completion_ids=completion_ids, **kwargs)


# ------------------------------------------------------------------ the `trl` dataset


def trl_dataset(split: str = "train", dataset_name: str | None = None, dataset_config: str | None = None,
                streaming: bool = False, datasets: list | None = None, test_split_size: float | None = None):
    """A dataset as `trl grpo` loads it: ``dataset_name`` (a hub id, a local folder,
    or a .jsonl/.json/.csv/.parquet file) with ``dataset_config``, or a ``datasets``
    mixture (TRL's DatasetMixtureConfig). Rows keep TRL's ``prompt`` column."""
    import datasets as hf

    if streaming:
        raise ConfigError("dataset_streaming / streaming: grpo needs a map-style dataset (it checks rows before "
                          "training); set it to false.")
    if datasets:
        from trl import DatasetMixtureConfig, get_dataset
        from trl.scripts.utils import DatasetConfig

        mixture = DatasetMixtureConfig(datasets=[DatasetConfig(**d) for d in datasets],
                                       test_split_size=test_split_size)
        return _split(get_dataset(mixture), split, "datasets mixture")
    if not dataset_name:
        raise ConfigError("the trl dataset needs dataset_name (a hub id or a local path) or datasets: [...].")
    from pathlib import Path

    path = Path(dataset_name).expanduser()
    builders = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
    if path.is_file() and path.suffix in builders:  # one file: the train split
        return _split(hf.load_dataset(builders[path.suffix], data_files=str(path)), split, dataset_name)
    if path.is_dir() and ((path / "dataset_info.json").is_file() or (path / "dataset_dict.json").is_file()):
        return _split(hf.load_from_disk(str(path)), split, dataset_name)  # save_to_disk's layout
    return hf.load_dataset(dataset_name, name=dataset_config, split=split)


def _split(data, split: str, what: str):
    if not hasattr(data, "keys"):
        return data
    if split not in data:
        raise ConfigError(f"{what} has no split '{split}'; its splits: {', '.join(data)}. Set dataset_train_split.")
    return data[split]


__all__ = ["translate", "KEYS", "soft_overlong_punishment", "trl_dataset"]
