"""Settings TRL or transformers removed: read as what replaced them when the intent is
plain (``warmup_ratio`` -> ``warmup_steps``), each with a note; otherwise an error naming
the replacement. ``--strict`` refuses them all."""

from __future__ import annotations

import difflib
import importlib.util
from typing import Any

from grpo_core.base.errors import ConfigError
from grpo_core.base.flags import flag_value, yaml_value
from grpo_core.base.problems import Problems
from grpo_core.config.schema import SECTIONS
from grpo_core.config.trl_compat import KEYS
from grpo_core.config.values import shown

# Names from older TRL / transformers versions and from `trl grpo` script flags,
# with what replaced them. Only reported when the name is not a GRPOConfig field.
REMOVED: dict[str, str] = {
    "max_prompt_length": (
        "TRL 1.16 removed max_prompt_length: GRPOTrainer no longer truncates prompts. Keep prompts "
        "short in the dataset (fewer few-shot examples, a shorter system prompt) and bound "
        "completions with max_completion_length"
    ),
    "num_generation": "renamed: use num_generations (completions sampled per prompt)",
    "max_new_tokens": "use max_completion_length (tokens generated per completion)",
    "max_completion_len": "use max_completion_length",
    "max_length": "use max_completion_length (prompts are not truncated in TRL 1.16)",
    "evaluation_strategy": "renamed in transformers: use eval_strategy",
    "no_cuda": "removed in transformers 5: use use_cpu (grpo picks CPU automatically when there is no GPU)",
    "overwrite_output_dir": "removed in transformers 5: grpo train moves an earlier run in output_dir aside (DIR.1); pass --overwrite to replace it, or --resume to continue it",
    "logging_dir": "removed in transformers 5: TensorBoard logs go under output_dir (or set TENSORBOARD_LOGGING_DIR)",
    "per_gpu_train_batch_size": "use per_device_train_batch_size",
    "warmup_ratio": "removed in transformers 5: warmup_steps takes a ratio when below 1 (warmup_steps: 0.05)",
    "vllm_guided_decoding_regex": "renamed: use vllm_structured_outputs_regex",
    "wandb_log_unique_prompts": "renamed: use log_unique_prompts",
    "system_prompt": "use dataset.system_prompt",
    "vllm_device": "removed in TRL: vLLM's place is vllm_mode (colocate: on the training GPUs; server: "
    "`trl vllm-serve` on others)",
}


# Removed settings whose intent is plain, read as what replaced them (a GRPOConfig field,
# an environment variable "env:VAR", or None: dropped), each with a note; --strict refuses them.
TRANSLATED: dict[str, str | None] = {
    "warmup_ratio": "warmup_steps", "evaluation_strategy": "eval_strategy", "no_cuda": "use_cpu",
    "per_gpu_train_batch_size": "per_device_train_batch_size", "wandb_log_unique_prompts": "log_unique_prompts",
    "vllm_guided_decoding_regex": "vllm_structured_outputs_regex", "logging_dir": "env:TENSORBOARD_LOGGING_DIR",
    "max_prompt_length": None, "overwrite_output_dir": None, "vllm_device": None,
}


DROPPED = {
    "max_prompt_length": "TRL 1.16 no longer truncates prompts; keep prompts short in the dataset, completions are "
    "bounded by max_completion_length",
    "overwrite_output_dir": "an earlier run in output_dir is moved aside (DIR.1), as grpo always does; pass "
    "--overwrite to replace it, or --resume to continue it",
    "vllm_device": "TRL 1.16 places vLLM itself (vllm_mode: colocate on the training GPUs, or server)",
    "use_liger_kernel": "liger-kernel is not installed and it only speeds training up; TRL 1.16 deprecates it for "
    "the Hub kernels (model_init_kwargs: {use_kernels: true})",
}


def unknown_key(key: str, where: str, known: list[str]) -> ConfigError:
    if key in REMOVED:
        return ConfigError(f"{where}'{key}' is not a GRPOConfig field in TRL 1.16: {REMOVED[key]}.")
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.7)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return ConfigError(
        f"{where}unknown option '{key}': it is neither a GRPOConfig field nor one of grpo's "
        f"sections ({', '.join(SECTIONS)}).{hint}"
    )


def take_trl_args(raw: dict, flags: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """`trl grpo`'s script/model/dataset flags on the command line (--model_name_or_path
    X, --reward_funcs a b) join the YAML's before translation; GRPOConfig's are returned."""

    kept = []
    for name, values in flags:
        if name not in KEYS:
            kept.append((name, values))
            continue
        parsed = [yaml_value(v) for v in values]
        raw[name] = parsed if name in ("reward_funcs", "lora_target_modules", "lora_modules_to_save") else (
            parsed[0] if len(parsed) == 1 else (True if not parsed else parsed))
    return kept


def removed_error(name: str, where: str) -> ConfigError:
    flag = f"'--{name}'" if where == "command line: " else f"'{name}'"
    return ConfigError(f"{where}{flag} is not a GRPOConfig field in TRL 1.16: {REMOVED[name]}.")


def translate_removed(values: dict, where: str, problems: Problems, env: dict) -> None:
    """Removed settings in ``values`` read as what replaced them (a note each; --strict: a problem each)."""
    for name in [k for k in values if k in TRANSLATED or k == "use_liger_kernel"]:
        target = _translated(name, values[name], where, problems, set(values), env)
        if target != name:
            value = values.pop(name)
            if target is not None:
                values[target] = value


def translate_flags(flags: list[tuple[str, list[str]]], problems: Problems, env: dict) -> list:
    """The same for command-line flags (``--warmup_ratio 0.1`` is ``--warmup_steps 0.1``)."""
    taken = {name for name, _ in flags}
    out = []
    for name, values in flags:
        if name in TRANSLATED or name == "use_liger_kernel":
            target = _translated(name, flag_value(values), "command line: ", problems, taken, env)
            if target is not None:
                out.append((target, values))
        else:
            out.append((name, values))
    return out


def _translated(name: str, value: Any, where: str, problems: Problems, taken: set[str], env: dict) -> str | None:
    """The field a removed setting is read as: its name (kept), another, or None (dropped,
    set as an environment variable, or refused: then a problem says why)."""
    if name == "use_liger_kernel":
        if value is not True or importlib.util.find_spec("liger_kernel") is not None:
            return name
        refusal = ConfigError(f"{where}use_liger_kernel: true needs liger-kernel, which is not installed: pip "
                              f"install liger-kernel, or drop it ({DROPPED[name]})")
    else:
        refusal = removed_error(name, where)
    target, text = TRANSLATED.get(name), shown(value)
    done = f"{name}: {text} -> {target}: {text}" if target else f"{name}: {text} dropped"
    if target and target.startswith("env:"):
        done = f"{name}: {text} -> env.{target[4:]}: {text}"
    if problems.strict or (name == "warmup_ratio" and not _is_ratio(value)):
        problems.add(str(refusal).rstrip(".") + (f" (--strict; without it: {done})." if problems.strict else "."))
        return None
    if target and target.startswith("env:"):
        if target[4:] in env:
            problems.add(f"{where}'{name}' (removed) and 'env.{target[4:]}' both set the same thing; keep the env one.")
        else:
            env[target[4:]] = str(value)
            problems.note(f"{where}{done}; {REMOVED[name]}.")
        return None
    if target in taken:
        problems.add(f"{where}'{name}' (removed) and '{target}' both set the same thing; keep {target}.")
        return None
    problems.note(f"{where}{done}; {DROPPED[name] if target is None else REMOVED[name]}.")
    return target


def _is_ratio(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1
