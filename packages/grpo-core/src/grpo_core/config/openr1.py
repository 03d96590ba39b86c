"""open-r1 recipes as they are: the fields open-r1 adds to TRL's, with open-r1's meaning.

open-r1's GRPO script reads ``GRPOScriptArguments`` (TRL's plus ``reward_funcs`` by
its 13 names, their parameters as top-level fields, ``dataset_prompt_column``,
``dataset_mixture``, the code providers) and its own ``GRPOConfig`` (TRL's plus
``system_prompt``, ``chat_template``, ``callbacks``, ``benchmarks``, the Hub
revision and wandb fields). :mod:`grpo_core.config.trl_compat` is the one translation
place; it calls :func:`take` and :func:`translate` here for these fields. Reward
names go through :mod:`grpo_core.rewards.openr1_rewards`; the dataset is the ``openr1``
loader below (open-r1's ``get_dataset`` and ``make_conversation``). Fields only
open-r1's own scripts use are noted once as ignored, by name. Read against open-r1
at commit 1416fa0 (``src/open_r1/configs.py``, ``grpo.py``, ``utils/data.py``).
"""

from __future__ import annotations

import difflib
from typing import Any

from grpo_core.base.errors import ConfigError
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


def reward_hint(name: str, ours: list[str]) -> str:
    """What an unknown reward name may have meant: TRL's and open-r1's names map to ours;
    otherwise the nearest names across the three."""
    from grpo_core.config.trl_compat import TRL_REWARDS

    if name in OPENR1_REWARDS:
        spec = OPENR1_REWARDS[name].spec
        return (f"'{name}' is open-r1's name: it maps to {spec} (reward_funcs: [{name}] in an open-r1 recipe is "
                f"read so; under rewards: write {spec}).")
    if name in REMOTE:
        return f"'{name}' is open-r1's remote judge: it needs {REMOTE[name]}. {LOCAL_INSTEAD}."
    if name in TRL_REWARDS:
        return f"'{name}' is TRL's name: write trl.rewards.{name} (or reward_funcs: [{name}], as `trl grpo` reads it)."
    theirs = [n for n, e in OPENR1_REWARDS.items() if e.spec == name]
    if theirs:  # an open-r1 name mapped here, and the plugin that registers it is not loaded
        from grpo_core.plugin.registry import KNOWN_NAMESPACES

        dist = KNOWN_NAMESPACES.get(name.split(".", 1)[0], "the plugin that registers it")
        return (f"open-r1's {' and '.join(theirs)} map{'s' if len(theirs) == 1 else ''} to {name}, from {dist}: "
                f"pip install {dist} (and, if GRPO_PLUGINS is set, add it there).")
    labelled = {n: n for n in ours}
    labelled.update({n: f"{n} (open-r1's: {e.spec})" for n, e in OPENR1_REWARDS.items()})
    labelled.update({n: f"{n} (TRL's: trl.rewards.{n})" for n in TRL_REWARDS})
    close = difflib.get_close_matches(name, list(labelled), n=4, cutoff=0.6)
    return f"Nearest across grpo's, TRL's and open-r1's names: {', '.join(labelled[c] for c in close)}." if close else ""


# ------------------------------------------------------------------ the `openr1` dataset


def _gold(batch: dict) -> dict:
    from grpo_core.base.text import last_boxed

    return {"answer": [None if s is None else (last_boxed(str(s)) or str(s)) for s in batch["answer"]]}

MIXTURE_KEYS = ("datasets", "seed", "test_split_size")
MIXTURE_ENTRY_KEYS = ("id", "config", "split", "columns", "weight")


def check_mixture(mixture: Any) -> list[str]:
    """Problems of an open-r1 ``dataset_mixture``, found before anything loads."""
    example = "dataset_mixture: {datasets: [{id: data.jsonl, weight: 0.5}], seed: 0}"
    if not isinstance(mixture, dict) or not isinstance(mixture.get("datasets"), list) or not mixture["datasets"]:
        return [f"dataset_mixture must be a mapping with a non-empty 'datasets' list, got {mixture!r}; e.g. {example}."]
    out = [f"dataset_mixture has no option '{k}'; its options are: {', '.join(MIXTURE_KEYS)}."
           for k in mixture if k not in MIXTURE_KEYS]
    columns = []
    for i, entry in enumerate(mixture["datasets"], 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            out.append(f"dataset_mixture.datasets entry {i} needs an id (a hub id or a local path), got {entry!r}.")
            continue
        out += [f"dataset_mixture.datasets entry {i} has no option '{k}'; use {', '.join(MIXTURE_ENTRY_KEYS)}."
                for k in entry if k not in MIXTURE_ENTRY_KEYS]
        weight = entry.get("weight")
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0):
            out.append(f"dataset_mixture.datasets entry {i} ({entry['id']}): weight {weight!r} must be a number > 0 "
                       f"(the share of its rows kept, 1.0 for all).")
        if entry.get("columns") is not None:
            columns.append(sorted(entry["columns"]))
    if any(c != columns[0] for c in columns):
        out.append(f"dataset_mixture: every entry's columns must be the same (as open-r1 requires), got {columns}.")
    return out


def openr1_dataset(split: str = "train", dataset_name: str | None = None, dataset_config: str | None = None,
                   dataset_mixture: dict | None = None, prompt_column: str = "prompt", columns: dict | None = None,
                   streaming: bool = False, datasets: list | None = None, test_split_size: float | None = None):
    """A dataset as open-r1's GRPO script loads it: ``dataset_name`` (or ``dataset_mixture``,
    open-r1's: a ``weight`` keeps that share of an entry's rows), and ``prompt_column``'s
    text as the user turn (it becomes ``question``, so the system prompt goes first, as in
    open-r1's make_conversation). ``columns`` renames what open-r1's rewards read under
    another name (``solution`` becomes ``answer``)."""
    from grpo_core.config.trl_compat import trl_dataset

    if dataset_mixture is not None:
        problems = check_mixture(dataset_mixture)
        if problems:
            raise ConfigError(problems[0])
        ds = _mixture(dataset_mixture, split)
    else:
        ds = trl_dataset(split, dataset_name, dataset_config, streaming, datasets, test_split_size)
    what = dataset_name or "the dataset mixture"
    return _renamed(_prompt(ds, prompt_column, what), columns or {}, what)


def _mixture(mixture: dict, split: str):
    """open-r1's get_dataset for a mixture: each entry's split, its columns, a seeded
    share of its rows; all shuffled together; a seeded test split when asked."""
    import datasets as hf

    from grpo_core.config.trl_compat import _split, trl_dataset

    seed = mixture.get("seed", 0)
    parts = []
    for entry in mixture["datasets"]:
        ds = trl_dataset(entry.get("split", "train"), entry["id"], entry.get("config"))
        if entry.get("columns") is not None:
            ds = ds.select_columns(entry["columns"])
        if entry.get("weight") is not None:
            ds = ds.shuffle(seed=seed).select(range(int(len(ds) * entry["weight"])))
        parts.append(ds)
    combined = hf.concatenate_datasets(parts).shuffle(seed=seed)
    size = mixture.get("test_split_size")
    splits = combined.train_test_split(test_size=size, seed=seed) if size is not None else {"train": combined}
    return _split(splits, split, "dataset_mixture")


def _prompt(ds, column: str, what: str):
    """``column``'s text becomes ``question`` (TRL's conversational prompts stay as they are)."""
    if column not in ds.column_names:
        raise ConfigError(f"dataset_prompt_column '{column}' is not a column of {what}; it has: "
                          f"{', '.join(ds.column_names)}. Set dataset_prompt_column to the column holding the prompt.")
    if column == "prompt" and len(ds) and isinstance(ds[0]["prompt"], list):
        return ds
    drop = [c for c in ("question", "prompt") if c in ds.column_names and c != column]
    return ds.remove_columns(drop).rename_column(column, "question") if column != "question" else ds.remove_columns(drop)


def _renamed(ds, columns: dict, what: str):
    """open-r1's reward columns under our names; a ``solution`` becomes the gold ``answer``
    as open-r1's math_verify reads it: its last ``\\boxed{}``, else the whole text."""
    for theirs, ours in columns.items():
        if theirs in ds.column_names:
            ds = ds.remove_columns([ours] if ours in ds.column_names else []).rename_column(theirs, ours)
            if ours == "answer":
                ds = ds.map(_gold, batched=True, desc="Reading the gold answers")
        elif ours not in ds.column_names:
            raise ConfigError(f"{what} has neither '{theirs}' (open-r1's name) nor '{ours}' (grpo's), the column its "
                              f"rewards read as the gold answer; it has: {', '.join(ds.column_names)}.")
    return ds


__all__ = ["take", "translate", "reward_spec", "reward_names", "dataset_params", "reward_columns", "reward_hint", "openr1_dataset",
           "check_mixture", "is_recipe", "KEYS", "DEFAULT_REWARDS", "REMOTE", "IGNORED", "LAUNCH"]
