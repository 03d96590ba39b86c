"""open-r1 recipes as they are: the fields open-r1 adds to TRL's, with open-r1's meaning.

open-r1's GRPO script reads ``GRPOScriptArguments`` (TRL's plus ``reward_funcs`` by
its 13 names, their parameters as top-level fields, ``dataset_prompt_column``,
``dataset_mixture``, the code providers) and its own ``GRPOConfig`` (TRL's plus
``system_prompt``, ``chat_template``, ``callbacks``, ``benchmarks``, the Hub
revision and wandb fields). :mod:`grpo_core.config.trl_compat` is the one translation
place; it calls :func:`take` and :func:`translate` here for these fields. Reward
names go through :mod:`grpo_core.rewards.openr1_rewards`; the dataset is the ``openr1``
loader (:mod:`grpo_core.data.recipe_datasets`) (open-r1's ``get_dataset`` and ``make_conversation``). Fields only
open-r1's own scripts use are noted once as ignored, by name. Read against open-r1
at commit 1416fa0 (``src/open_r1/configs.py``, ``grpo.py``, ``utils/data.py``).
"""

from __future__ import annotations

from typing import Any

from grpo_core.base.errors import ConfigError
from grpo_core.data.recipe_datasets import check_mixture
from grpo_core.rewards.openr1_rewards import OPENR1_REWARDS

# open-r1's reward_funcs when a recipe sets none (GRPOScriptArguments' default)
DEFAULT_REWARDS = ("accuracy", "format", "tag_count")
# open-r1 rewards that send code to a remote judge, and what each needs there
REMOTE = {
    "ioi_code": "IOI problems judged by a Piston or Morph server (ioi_provider; PISTON_ENDPOINTS or MORPH_API_KEY)",
    "cf_code": "Codeforces problems judged by a Piston server (PISTON_ENDPOINTS), with its checkers",
}
REMOTE_SETTINGS = {
    "code_provider": "E2B or Morph sandboxes (an E2B_API_KEY or MORPH_API_KEY and the e2b/morph packages)",
    "e2b_router_url": "an E2B router (scripts/e2b_router.py) and an E2B_API_KEY",
    "morph_router_url": "a MorphCloud router (scripts/morph_router.py) and a MORPH_API_KEY",
    "ioi_provider": "a Piston or Morph server for open-r1's ioi_code",
}
LOCAL_INSTEAD = ("grpo runs code locally in its sandbox instead: code.tests runs a row's stdin/stdout cases "
                 "(verification_info) and assert tests; reward_funcs: [code] maps to it")
# fields of open-r1's GRPOConfig that only its own scripts read, and why grpo does not need them
IGNORED = {
    "callbacks": "open-r1's own callbacks (push_to_hub_revision pushes each checkpoint to a Hub branch); grpo "
    "pushes as TRL does (push_to_hub, hub_strategy)",
    "benchmarks": "open-r1 runs these after training with its own scripts; evaluate with grpo eval",
    "hub_model_revision": "read by open-r1's push_to_hub_revision callback; TRL pushes to hub_revision",
    "overwrite_hub_revision": "read by open-r1's push_to_hub_revision callback",
    "push_to_hub_revision": "open-r1's callback switch; grpo pushes as TRL does (push_to_hub)",
}
WANDB = {"wandb_entity": "WANDB_ENTITY", "wandb_project": "WANDB_PROJECT", "wandb_run_group": "WANDB_RUN_GROUP"}
DATASET = ("dataset_prompt_column", "dataset_mixture")
# the layout open-r1's system prompts ask for and its format and tag_count rewards check: the
# answer template grpo check fills in (the gold answer in it) for an open-r1 recipe using them
R1_TEMPLATE = "<think>\n{rationale}\n</think>\n<answer>\n{answer}\n</answer>"
LAYOUT_REWARDS = ("format", "tag_count")
# how open-r1 launches its recipes, on 8-GPU nodes: 8 processes a node (recipes/accelerate_configs/*.yaml,
# slurm/train.slurm), or 7 beside a vLLM server on the eighth GPU (its README's command for the code
# recipes, which are sized for it: 16 x 7 x 4 = 448 completions, 32 groups of 14); grpo's batch-shape
# problems say which of them fits a recipe that does not fit the processes at hand
LAUNCH = ("open-r1", ((8, "recipes/accelerate_configs: num_processes: 8"),
                      (7, "a vLLM server on the eighth GPU, accelerate launch --num_processes=7, as open-r1's README "
                          "runs its code recipes")))


def _param_fields() -> dict[str, list[str]]:
    """Every reward parameter field of the table, and the open-r1 rewards that read it."""
    out: dict[str, list[str]] = {}
    for name, entry in OPENR1_REWARDS.items():
        for key in entry.params:
            out.setdefault(key, []).append(name)
    return out


PARAM_FIELDS = _param_fields()
# fields no grpo reward takes (the remote judges' settings; code_language: grpo's code rewards read Python only)
UNUSED_PARAMS = {"code_eval_test_batch_size": ["ioi_code", "cf_code"], "code_eval_scoring_mode": ["cf_code"],
                 "code_language": ["code_format", "ioi_code"]}
KEYS = (*DATASET, "system_prompt", "chat_template", "wandb_log_unique_prompts", *WANDB, *IGNORED,
        *REMOTE_SETTINGS, *PARAM_FIELDS, *[k for k in UNUSED_PARAMS if k not in PARAM_FIELDS])


def is_recipe(raw: dict) -> bool:
    """``raw`` (before translation) has open-r1's own fields or reward names: an open-r1 recipe."""
    return any(k in raw for k in KEYS) or bool(reward_names(raw.get("reward_funcs")))


def take(raw: dict) -> dict:
    """open-r1's own fields, removed from ``raw``."""
    return {k: raw.pop(k) for k in list(raw) if k in KEYS}


def both(theirs: str, ours: str, who: str = "open-r1's") -> ConfigError:
    return ConfigError(f"'{theirs}' ({who} name) and '{ours}' (grpo's) both set the same thing; keep one of them.")


def reward_names(funcs: Any) -> list[str]:
    """The open-r1 names among ``reward_funcs``."""
    funcs = [funcs] if isinstance(funcs, str) else funcs
    funcs = funcs if isinstance(funcs, list) else []
    return [f for f in funcs if isinstance(f, str) and (f in OPENR1_REWARDS or f in REMOTE)]


def reward_spec(name: str, r1: dict) -> dict:
    """Our spec for an open-r1 reward name, its fields taken from the recipe (open-r1's defaults otherwise)."""
    entry = OPENR1_REWARDS[name]
    params = entry.params_for(r1)
    return {"name": entry.spec, "params": params} if params else {"name": entry.spec}


def dataset_params(r1: dict) -> dict:
    """The ``openr1`` dataset's parameters the recipe sets: the prompt column and a mixture."""
    names = {"dataset_prompt_column": "prompt_column", "dataset_mixture": "dataset_mixture"}
    return {ours: r1.pop(key) for key, ours in names.items() if key in r1}


def reward_columns(names: list[str]) -> dict:
    """The columns open-r1's rewards read under another name (``solution`` is our ``answer``)."""
    return {k: v for n in names if n in OPENR1_REWARDS for k, v in OPENR1_REWARDS[n].columns.items()}


def translate(raw: dict, r1: dict, names: list[str], problems) -> None:
    """open-r1's GRPOConfig additions and its remaining script fields: onto grpo's
    sections, into ``env``, refused (remote judges) or noted as ignored."""
    _move(raw, r1, "system_prompt", "dataset", "system_prompt", problems)
    _move(raw, r1, "chat_template", "model", "chat_template", problems)
    _check_dataset(raw, problems)
    dataset = raw.get("dataset")
    if set(LAYOUT_REWARDS) & set(names) and isinstance(dataset, dict):
        dataset.setdefault("answer_template", R1_TEMPLATE)
    if "wandb_log_unique_prompts" in r1:
        if "log_unique_prompts" in raw:
            problems.add(both("wandb_log_unique_prompts", "log_unique_prompts"))
        else:
            raw["log_unique_prompts"] = r1["wandb_log_unique_prompts"]
    for key, var in WANDB.items():
        if key in r1:
            _env(raw, key, var, r1[key], problems)
    if r1.get("code_language", "python") != "python" and "code_format" in names:
        problems.add(f"code_language: {r1['code_language']!r}: grpo's code rewards (code_format is code.format) read "
                     f"Python only; use code_language: python, or drop code_format.")
    for key, needs in REMOTE_SETTINGS.items():
        if key in r1 and not (key == "code_provider" and r1[key] == "local"):
            problems.add(f"{key}: {r1[key]!r} needs {needs}. {LOCAL_INSTEAD}; drop {key}.")
    for key, why in IGNORED.items():
        if key in r1:
            problems.note(f"{key} ignored ({why}).")
    for key, readers in _readers().items():
        if key not in r1 or set(readers) & set(names):
            continue
        if key == "max_completion_len":  # also an old name of max_completion_length: ambiguous
            problems.add("'max_completion_len' is open-r1's soft_overlong_punishment length, which reward_funcs "
                         "does not list; for the completion length use max_completion_length.")
        else:
            problems.note(f"{key} ignored: only open-r1's {' and '.join(readers)} read it, and reward_funcs does "
                          f"not list {'it' if len(readers) == 1 else 'them'}.")


def _readers() -> dict[str, list[str]]:
    """Each reward parameter field and the open-r1 rewards that read it."""
    readers = {k: list(v) for k, v in PARAM_FIELDS.items()}
    for key, names in UNUSED_PARAMS.items():
        readers[key] = readers.get(key, []) + [n for n in names if n not in readers.get(key, [])]
    return readers


def _check_dataset(raw: dict, problems) -> None:
    dataset = raw.get("dataset")
    params = dataset.get("params") if isinstance(dataset, dict) else None
    if not isinstance(params, dict) or "dataset_mixture" not in params:
        return
    if params.get("dataset_name") is not None:
        problems.add("'dataset_name' and 'dataset_mixture' both name the training data (open-r1 would take the "
                     "mixture and ignore dataset_name); keep one of them.")
    for problem in check_mixture(params["dataset_mixture"]):
        problems.add(problem)


def _move(raw: dict, r1: dict, key: str, section: str, option: str, problems) -> None:
    if key not in r1:
        return
    value = raw.get(section)
    if isinstance(value, str):  # the shorthands model: ID, dataset: NAME
        value = {"id" if section == "model" else "name": value}
    if value is None:
        value = {}
    if not isinstance(value, dict):
        return  # the section's own check reports it
    if option in value:
        problems.add(both(key, f"{section}.{option}"))
        return
    value[option] = r1[key]
    raw[section] = value


def _env(raw: dict, key: str, var: str, value: Any, problems) -> None:
    if raw.get("env") is None:
        raw["env"] = {}
    env = raw["env"]
    if not isinstance(env, dict):
        return  # the env check reports it
    if var in env:
        problems.add(both(key, f"env.{var}"))
    elif value is not None:
        env[var] = str(value)


__all__ = ["take", "translate", "reward_spec", "reward_names", "dataset_params", "reward_columns",
           "is_recipe", "KEYS", "DEFAULT_REWARDS", "REMOTE", "IGNORED", "LAUNCH"]
