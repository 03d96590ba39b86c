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
import dataclasses
import difflib
import importlib.util
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_core.base.errors import ConfigError, GrpoError, SpecError, UnknownNameError
from grpo_core.base.problems import Problems

SECTIONS = ("model", "lora", "dataset", "rewards", "stages", "health", "adaptive_weights", "environment", "tools",
            "log", "sampling", "heldout")

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


@dataclass
class ModelSection:
    id: str | None = None
    dtype: str = "auto"
    attn_implementation: str | None = None
    revision: str | None = None
    # CPU: torch threads while sampling completions (default: torch's own, as training;
    # bench/learning.py measured 1 thread 16 % slower per step than all of an idle 2-core
    # machine's). On a machine busy with other work, 1 can be faster: token-by-token
    # decoding of a small model then waits on thread synchronisation.
    generation_threads: int | None = None
    # static KV cache + compiled decoding while sampling: auto (on CUDA), true, false
    fast_generation: bool | str = "auto"
    # bitsandbytes quantization, TRL's ModelConfig fields (load_in_4bit, bnb_4bit_quant_type, ...)
    quantization: dict | None = None
    # a Jinja chat template put on the tokenizer in place of its own (open-r1's chat_template)
    chat_template: str | None = None


@dataclass
class DatasetSection:
    name: str | None = None
    params: dict = field(default_factory=dict)
    split: str = "train"
    system_prompt: str | None = None
    few_shot: int | list = 0
    answer_template: str | None = None
    eval_split: str | None = None
    eval_params: dict = field(default_factory=dict)


@dataclass
class HealthSection:
    enabled: bool = True
    window: int = 5  # consecutive logged steps a condition must hold
    zero_std_frac: float = 0.9  # frac_reward_zero_std at or above: no learning signal
    min_reward_std: float = 1e-3  # reward_std at or below: collapse
    max_kl: float = 0.5
    flat_window: int = 10  # logged steps over which the reward must move
    flat_delta: float = 0.02  # max - min of the mean reward over flat_window below this: flat
    # a non-finite loss, gradient norm or weight: stop (checkpoint of the last finite
    # state) or skip (drop that update and go on; stop after max_skips in a row)
    on_nonfinite: str = "stop"
    max_skips: int = 10
    # an update that grows the largest trainable weight more than this many times is a
    # blow-up, handled as a non-finite value (an absurd learning rate); 0: no check
    max_weight_jump: float = 100.0
    # share of a reward's items that may fail (raise, or return no number) over the
    # last `window` batches before the run stops; failed items score None
    max_reward_errors: float = 0.2
    # keep the trainable weights from before each update in memory to restore them:
    # auto (when they are at most 10 % of the model, e.g. LoRA), true, false
    snapshot: bool | str = "auto"
    # held-out accuracy falling while the training reward rises over `window` evaluations: warn or stop
    on_divergence: str = "warn"
    # seconds a reward may take per call (one batch) before its items score None
    # (counted in rewards/<name>/timeouts); per reward: time_limit: in its entry, or 'NAME within 30s'
    reward_time_limit: float = 120.0
    # a reward whose calls time out this many times in a row (a time-out in grpo check
    # counts) is not waited on again: stop (the run, with a checkpoint) or drop (train on
    # without it, said loudly)
    max_reward_timeouts: int = 3
    on_reward_timeout: str = "stop"


@dataclass
class LogSection:
    # the rollout log (rollouts/*.parquet): every scored completion of every step (all), of
    # every Nth step (an integer N), or none
    rollouts: Any = "all"

    @property
    def rollout_every(self) -> int:
        """Steps between logged steps; 0: no log."""
        return {"all": 1, "none": 0}.get(self.rollouts, self.rollouts) if isinstance(self.rollouts, str) \
            else int(self.rollouts)


@dataclass
class SamplingSection:
    # dynamic sampling (DAPO): groups whose completions all score the same are dropped and
    # replaced by groups for fresh prompts, up to max_rounds generations per batch
    dynamic: bool = False
    max_rounds: int = 3
    # what "flat" is judged on: the weighted total (TRL's advantage), or one reward's scores by
    # its logged name (verl's filter_groups.metric: acc), e.g. math.correctness
    metric: str = "total"


@dataclass
class HeldoutSection:
    # held-out accuracy during training (eval/accuracy): auto (when the dataset has a held-out
    # split: dataset.eval_split, else its "test" split), true, false
    enabled: bool | str = "auto"
    every: int = 0  # steps between evaluations; 0: ten evaluations over the run (and the first step)
    prompts: int = 32  # held-out prompts, the same each time
    max_completion_length: int = 0  # 0: training's


@dataclass
class AdaptiveSection:
    enabled: bool = True
    target: float = 0.5  # success rate the weights steer towards
    rate: float = 0.5  # multiplicative step per logged step
    threshold: float = 0.5  # a completion "succeeds" on a reward when it scores at least this
    min_factor: float = 0.25  # bounds, relative to the configured weight
    max_factor: float = 4.0


@dataclass
class StageSection:
    name: str
    rewards: list  # RewardSpec, parsed once
    training: dict  # GRPOConfig overrides for this stage (max_steps, learning_rate, ...)
    funcs: list = field(default_factory=list)  # the composed rewards, one per spec

    @property
    def weights(self) -> list[float]:
        return [spec.weight for spec in self.rewards]


@dataclass
class RunConfig:
    """A parsed, checked configuration. ``training`` holds the YAML's GRPOConfig
    values; ``cli`` the command line's, typed by GRPOConfig's fields (parsed once,
    here); command-line values apply to every stage, over the stage's own."""

    path: str | None
    model: ModelSection
    lora: dict | None
    merge: bool
    dataset: DatasetSection
    stages: list[StageSection]
    health: HealthSection
    adaptive: AdaptiveSection | None
    training: dict
    cli: dict
    explicit: set[str]  # GRPOConfig fields the user set (YAML or command line)
    env: dict = field(default_factory=dict)  # environment variables the config sets (apply_env)
    overrides: tuple[str, ...] = ()  # the command line's overrides, as typed (for the --resume line)
    environment: Any = None  # environments.EnvironmentSection: tools and multi-turn rollouts, or None
    log: LogSection = field(default_factory=LogSection)
    sampling: SamplingSection = field(default_factory=SamplingSection)
    heldout: HeldoutSection = field(default_factory=HeldoutSection)
    notes: list[str] = field(default_factory=list)  # what was read otherwise than written (removed, ignored fields)

    @property
    def multi_stage(self) -> bool:
        return len(self.stages) > 1 or self.stages[0].name != "main"

    def resume_command(self) -> str:
        """The command that continues this run: the same config and overrides, plus --resume."""
        import shlex

        return shlex.join(["grpo", "train", self.path or "CONFIG", *self.overrides, "--resume"])

    def value(self, stage: StageSection, name: str, default: Any = None) -> Any:
        """A GRPOConfig value as the user set it: the command line, the stage, the YAML."""
        for source in (self.cli, stage.training, self.training):
            if name in source:
                return source[name]
        return default


# --------------------------------------------------------------------------- parsing


def field_kinds(cls_path: str, *dists: str) -> dict[str, str]:
    """The init fields of the dataclass ``module:Class`` and the kind of value each takes
    (bool, int, float, list, text), kept per installed version of ``dists`` under the
    cache dir: importing TRL or peft takes seconds on 2 cores and a config check needs
    only these (``grpo check`` then imports neither)."""
    import importlib
    import json
    from importlib.metadata import version

    from grpo_core.config.models import cache_dir

    tag = "-".join(f"{d}{version(d)}" for d in dists)
    path = cache_dir("config") / f"{cls_path.replace(':', '.')}-{tag}.kinds.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    module, name = cls_path.split(":")
    kinds = {f.name: _kind(f.type) for f in dataclasses.fields(getattr(importlib.import_module(module), name))
             if f.init}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(kinds, sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass  # an unwritable cache only costs the import next time
    return kinds


def _kind(annotation: Any) -> str:
    text = str(annotation).replace("<class '", "").replace("'>", "")
    parts = {p.strip() for p in text.replace("typing.", "").replace("Optional[", "").rstrip("]").split("|")}
    parts.discard("None")
    if parts == {"bool"}:
        return "bool"
    if parts == {"int"}:
        return "int"
    if parts == {"float"}:
        return "float"
    if any(p.startswith("list[") for p in parts) and not parts & {"str", "dict"}:
        return "list"
    return "text"


def field_names(cls_path: str, *dists: str) -> list[str]:
    return sorted(field_kinds(cls_path, *dists))


def grpo_fields() -> list[str]:
    """GRPOConfig's field names."""
    return field_names("trl:GRPOConfig", "trl", "transformers")


def cli_values(flags: list[tuple[str, list[str]]], kinds: dict[str, str], problems: Problems | None = None
               ) -> dict[str, Any]:
    """Command-line values typed as GRPOConfig's fields take them (what HfArgumentParser
    does: ``--learning_rate 1e-5`` is a float, ``--bf16`` alone is true)."""
    own = problems is None
    problems = Problems() if own else problems
    out: dict[str, Any] = {}
    for key, values in flags:
        kind = kinds.get(key, "text")
        try:
            out[key] = _typed(kind, values)
        except ValueError:
            problems.add(f"command line: --{key} {' '.join(values)!r} is not {_NOUN_OF[kind]}.")
    if own:
        problems.raise_if_any("the command line")
    return out


_NOUN_OF = {"bool": "true or false", "int": "a whole number", "float": "a number", "list": "a list",
            "text": "a value"}


def _typed(kind: str, values: list[str]) -> Any:
    if kind == "bool":
        if not values:
            return True
        word = values[0].strip().lower()
        if len(values) != 1 or word not in ("true", "false", "yes", "no", "1", "0"):
            raise ValueError
        return word in ("true", "yes", "1")
    if kind in ("int", "float"):
        if len(values) != 1:
            raise ValueError
        if values[0].strip().lower() == "none":
            return None
        return int(values[0]) if kind == "int" else float(values[0])
    if kind == "list":
        items = [_yaml_value(v) for v in values]
        return [i for item in items for i in (item if isinstance(item, list) else [item])]
    if len(values) == 1:
        return values[0]  # as HfArgumentParser: text stays text ("none" in report_to means no integration)
    return list(values) if values else True


def _unknown_key(key: str, where: str, known: list[str]) -> ConfigError:
    if key in REMOVED:
        return ConfigError(f"{where}'{key}' is not a GRPOConfig field in TRL 1.16: {REMOVED[key]}.")
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.7)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return ConfigError(
        f"{where}unknown option '{key}': it is neither a GRPOConfig field nor one of grpo's "
        f"sections ({', '.join(SECTIONS)}).{hint}"
    )


def _read_yaml(path: str | os.PathLike) -> dict:
    import yaml

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {path} does not exist.")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must contain a YAML mapping of options, got {type(data).__name__}.")
    return data


def _yaml_value(text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def flag_values(tokens: list[str], command: str = "overrides") -> list[tuple[str, list[str]]]:
    """``--key value ...`` / ``--key=value`` / ``--flag`` tokens as ``(key, raw values)``,
    keys with ``-`` read as ``_``: the one command-line parser (config overrides,
    ``grpo rewards check`` and ``grpo datasets show`` parameters)."""
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("--") or len(tok) == 2:
            raise ConfigError(f"{command}: unexpected argument {tok!r}; write --key value.")
        key, eq, value = tok[2:].partition("=")
        values = [value] if eq else []
        j = i + 1
        if not eq:
            while j < len(tokens) and not (tokens[j].startswith("--") and len(tokens[j]) > 2):
                values.append(tokens[j])
                j += 1
        out.append((key.replace("-", "_"), values))
        i = j
    return out


def flag_value(values: list[str]) -> Any:
    """YAML's reading of a flag's values: none is true, one is a value, more a list."""
    if not values:
        return True
    return _yaml_value(values[0]) if len(values) == 1 else [_yaml_value(v) for v in values]


def split_overrides(tokens: list[str]) -> tuple[dict[str, Any], list[tuple[str, list[str]]]]:
    """``(our overrides {dotted key: value}, the other flags as (name, raw values))``."""
    ours: dict[str, Any] = {}
    others: list[tuple[str, list[str]]] = []
    for key, values in flag_values(tokens):
        if key.split(".", 1)[0] in SECTIONS or key.split(".", 1)[0] == "env":
            if key in ("rewards", "tools"):  # specs stay text (a list given as one YAML value aside)
                ours[key] = _yaml_value(values[0]) if len(values) == 1 and values[0].lstrip().startswith("[") else values
            else:
                ours[key] = flag_value(values)
        else:
            others.append((key, values))
    return ours, others


def _set_dotted(data: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        nxt = node.get(part)
        if nxt is None or nxt is True or nxt is False:
            nxt = {}
            node[part] = nxt
        if not isinstance(nxt, dict):
            raise ConfigError(f"cannot set --{dotted}: '{part}' is {nxt!r}, not a section.")
        node = nxt
    node[parts[-1]] = value


def _section(data: dict, name: str, cls, where: str, problems: Problems | None = None):
    """The section ``name`` of ``data`` as ``cls``; each unknown option and bad value is a
    problem (and takes its default, so later steps still see a sound section)."""
    own = problems is None
    problems = Problems() if own else problems
    raw = data.get(name)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        problems.add(f"{where}'{name}' must be a mapping, got {raw!r}.")
        raw = {}
    known = {f.name for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(str(key), sorted(known), n=1)
            problems.add(
                f"{where}'{name}' has no option '{key}'"
                + (f" (did you mean '{close[0]}'?)" if close else "")
                + f"; its options are: {', '.join(sorted(known))}."
            )
    section = cls(**{k: v for k, v in raw.items() if k in known})
    _check_values(section, name, problems)
    if own:
        problems.raise_if_any(f"'{name}'")
    return section


_CHOICES = {"on_nonfinite": ("stop", "skip"), "on_reward_timeout": ("stop", "drop"), "snapshot": (True, False, "auto"),
            "fast_generation": (True, False, "auto"), "on_divergence": ("warn", "stop"),
            "enabled": (True, False, "auto")}
_MINIMUM = {"window": 1, "flat_window": 1, "max_skips": 1, "reward_time_limit": 0.001, "max_reward_timeouts": 1}
_SIMPLE = {"int": int, "float": float, "bool": bool, "str": str}
_NOUN = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _check_values(section, name: str, problems: Problems) -> None:
    """Each value has its default's type (an int where a float is expected is fine)
    and numbers are not negative; fields with choices take one of them. A bad value
    is a problem and goes back to its default."""
    for f in dataclasses.fields(section):
        problem = _value_problem(f, getattr(section, f.name), f"{name}.{f.name}")
        if problem:
            problems.add(problem)
            setattr(section, f.name, f.default)


def _value_problem(f: dataclasses.Field, value: Any, where: str) -> str | None:
    default = f.default
    if f.name in _CHOICES:
        if value not in _CHOICES[f.name] or (isinstance(value, int) and not isinstance(value, bool)):
            choices = ", ".join(str(c).lower() if isinstance(c, bool) else c for c in _CHOICES[f.name])
            return f"{where} is {value!r}; use one of {choices}."
        return None
    kind = _SIMPLE.get(str(f.type))
    if kind is None or value is None:
        return None
    ok = isinstance(value, kind) or (kind is float and isinstance(value, int))
    if ok and kind is not bool and isinstance(value, bool):
        ok = False
    if not ok:
        return f"{where} is {value!r}; it takes {_NOUN[kind]} (default {default!r})."
    low = _MINIMUM.get(f.name, 0)
    if kind in (int, float) and value < low:
        return f"{where} is {value!r}; it must be at least {low} (default {default!r})."
    return None


def _lora(raw: Any, problems: Problems) -> tuple[dict | None, bool]:
    if raw is None or raw is False:
        return None, False
    if raw is True:
        raw = {}
    if not isinstance(raw, dict):
        problems.add(f"'lora' must be a mapping of peft LoraConfig fields or false, got {raw!r}.")
        return None, False
    raw = dict(raw)
    merge = raw.pop("merge", False)
    if raw.pop("enabled", True) is False:
        return None, bool(merge)
    known = set(field_names("peft:LoraConfig", "peft"))
    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            problems.add(
                f"lora has no option '{key}'" + (f" (did you mean '{close[0]}'?)" if close else "")
                + "; use peft LoraConfig fields (r, lora_alpha, lora_dropout, target_modules, ...) "
                "or merge: true."
            )
    lora = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.0, "target_modules": "all-linear",
            "task_type": "CAUSAL_LM", **raw}
    for problem in _lora_problems(lora):
        problems.add(problem)
    return lora, bool(merge)


def _lora_problems(lora: dict) -> list[str]:
    """peft checks few values before the model loads; a bad rank fails after."""
    r, alpha, dropout = lora.get("r"), lora.get("lora_alpha"), lora.get("lora_dropout")
    out = []
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        out.append(f"lora.r is {r!r}; it must be a whole number >= 1 (the adapter rank, e.g. 16).")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or alpha <= 0:
        out.append(f"lora.lora_alpha is {alpha!r}; it must be a number > 0 (often 2 x r).")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        out.append(f"lora.lora_dropout is {dropout!r}; it must be a number in [0, 1).")
    return out


def _take_trl_args(raw: dict, flags: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """`trl grpo`'s script/model/dataset flags on the command line (--model_name_or_path
    X, --reward_funcs a b) join the YAML's before translation; GRPOConfig's are returned."""
    from grpo_core.config.trl_compat import KEYS

    kept = []
    for name, values in flags:
        if name not in KEYS:
            kept.append((name, values))
            continue
        parsed = [_yaml_value(v) for v in values]
        raw[name] = parsed if name in ("reward_funcs", "lora_target_modules", "lora_modules_to_save") else (
            parsed[0] if len(parsed) == 1 else (True if not parsed else parsed))
    return kept


def _check_training(values: dict, where: str, known: dict, problems: Problems) -> None:
    for key in values:
        if key not in known:
            problems.add(_unknown_key(key, where, sorted(known)))


def load_config(path: str | os.PathLike | None, overrides: list[str] = (), data: dict | None = None, *,
                strict: bool = False) -> RunConfig:
    """Read ``path`` (or ``data``), apply ``overrides`` and check everything that
    can be checked without a model: option names, rewards, dataset name, values.
    Every problem found is reported at once (one ConfigError, numbered); ``strict``:
    removed settings are problems instead of being translated. Nothing is changed
    outside the returned config (``apply_env`` sets its ``env``)."""
    from grpo_core.config import openr1
    from grpo_core.config.grpo_args import check_config_shape
    from grpo_core.config.trl_compat import translate

    raw = copy.deepcopy(data) if data is not None else (_read_yaml(path) if path else {})
    problems = Problems(strict=strict)
    ours, flags = split_overrides(list(overrides))
    for dotted, value in ours.items():
        problems.attempt(_set_dotted, raw, dotted, value)
    flags = _take_trl_args(raw, flags)
    recipe = openr1.LAUNCH if openr1.is_recipe(raw) else None  # the processes it was written for
    translate(raw, problems)
    env = problems.attempt(_env, raw, default={})
    kinds = field_kinds("trl:GRPOConfig", "trl", "transformers")
    known = set(kinds)
    _translate_removed(raw, "", problems, env)
    flags = _translate_flags(flags, problems, env)
    training = {k: v for k, v in raw.items() if k not in SECTIONS}
    _check_top_level(training, {name for name, _ in flags}, known, problems)
    cli = cli_values(flags, kinds, problems)
    lora, merge = _lora(raw.get("lora"), problems)
    if merge and lora is None:
        problems.add("lora.merge is set but LoRA is off; merging needs a lora section.")
    model, dataset = _model(raw, problems), _dataset(raw, problems)
    environment = problems.attempt(_environment, raw)
    health = _health(raw, problems)
    stages = _stages(raw, known, environment, health.reward_time_limit, problems, env)
    _check_training_values([("", training), ("command line: ", cli)]
                           + [(f"stage '{st.name}': ", st.training) for st in stages], kinds, problems)
    cfg = RunConfig(
        path=str(path) if path else None, model=model, lora=lora, merge=merge, dataset=dataset,
        stages=stages, health=health, adaptive=_adaptive(raw.get("adaptive_weights"), problems), training=training,
        cli=cli, explicit=set(training) | set(cli), env=env, environment=environment, overrides=tuple(overrides),
        log=_log(raw, problems), sampling=_sampling(raw, problems),
        heldout=_section(raw, "heldout", HeldoutSection, "", problems), notes=problems.notes,
    )
    if stages:
        problems.attempt(check_sampling_metric, cfg)
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


def _check_top_level(training: dict, cli_names: set[str], known: set[str], problems: Problems) -> None:
    _check_training(training, "", known, problems)
    for name in sorted(cli_names):
        if name in REMOVED:
            problems.add(_removed_error(name, "command line: "))
        elif name not in known:
            problems.add(_unknown_key(name, "command line: ", sorted(known)))
    if "reward_weights" in training or "reward_weights" in cli_names:
        problems.add(
            "reward_weights is set from the rewards section; write the weight after the reward "
            "name ('math.correctness:2.0' or {name: ..., weight: 2.0}) instead."
        )


# ------------------------------------------------------------------ removed settings, translated


def _removed_error(name: str, where: str) -> ConfigError:
    shown = f"'--{name}'" if where == "command line: " else f"'{name}'"
    return ConfigError(f"{where}{shown} is not a GRPOConfig field in TRL 1.16: {REMOVED[name]}.")


def _show(value: Any) -> str:
    """A value as YAML writes it (true, null, 0.1)."""
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    return str(value)


def _translate_removed(values: dict, where: str, problems: Problems, env: dict) -> None:
    """Removed settings in ``values`` read as what replaced them (a note each; --strict: a problem each)."""
    for name in [k for k in values if k in TRANSLATED or k == "use_liger_kernel"]:
        target = _translated(name, values[name], where, problems, set(values), env)
        if target != name:
            value = values.pop(name)
            if target is not None:
                values[target] = value


def _translate_flags(flags: list[tuple[str, list[str]]], problems: Problems, env: dict) -> list:
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
        refusal = _removed_error(name, where)
    target, shown = TRANSLATED.get(name), _show(value)
    done = f"{name}: {shown} -> {target}: {shown}" if target else f"{name}: {shown} dropped"
    if target and target.startswith("env:"):
        done = f"{name}: {shown} -> env.{target[4:]}: {shown}"
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


# ------------------------------------------------------------------ GRPOConfig values


def _coerced(kind: str, value: Any) -> Any:
    """A YAML value as TRL's parser reads it into a field of ``kind`` (PyYAML leaves 1e-4 a string)."""
    if isinstance(value, str) and kind in ("int", "float"):
        try:
            return int(value) if kind == "int" else float(value)
        except ValueError:
            return value
    return value


def _kind_problem(name: str, value: Any, kind: str) -> str | None:
    if value is None or kind not in ("bool", "int", "float"):
        return None
    ok = {"bool": isinstance(value, bool),
          "int": isinstance(value, int) and not isinstance(value, bool),
          "float": isinstance(value, (int, float)) and not isinstance(value, bool)}[kind]
    return None if ok else f"{name} is {value!r}; it must be {_NOUN_OF[kind]}."


def _check_training_values(sources: list[tuple[str, dict]], kinds: dict[str, str], problems: Problems) -> None:
    """GRPOConfig values of the wrong kind, and those TRL takes but fails on mid-run
    (grpo_args' rules, vLLM, logging integrations): found with the config's other problems."""
    from types import SimpleNamespace

    from grpo_core.config.grpo_args import check_integrations, check_values, check_vllm

    merged: dict[str, Any] = {}
    for where, values in sources:
        for name, value in values.items():
            if name not in kinds:
                continue
            value = _coerced(kinds[name], value)
            before = len(problems)
            problems.attempt(check_values, SimpleNamespace(**{name: value}))
            problem = _kind_problem(name, value, kinds[name]) if len(problems) == before else None
            if problem:
                problems.add(f"{where}{problem}")
            if not where.startswith("stage"):
                merged[name] = value
    report_to = merged.get("report_to")
    if isinstance(report_to, str):
        merged["report_to"] = [report_to]
    problems.attempt(check_vllm, SimpleNamespace(**merged))
    problems.attempt(check_integrations, SimpleNamespace(**merged))
    if merged.get("push_to_hub") is True and os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        problems.add("push_to_hub: true needs the Hugging Face Hub, but HF_HUB_OFFLINE is set: unset it (and log in), "
                     "or set push_to_hub: false.")


# ------------------------------------------------------------------ our sections


def _model(raw: dict, problems: Problems) -> ModelSection:
    from grpo_core.config.models import check_model_id
    from grpo_core.config.precision import normalize_dtype

    if isinstance(raw.get("model"), str):  # shorthand: model: smollm2-135m
        raw["model"] = {"id": raw["model"]}
    model = _section(raw, "model", ModelSection, "", problems)
    model.dtype = problems.attempt(normalize_dtype, model.dtype, default="auto")
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
    from grpo_core.plugin import registry
    from grpo_core.base.params import bind_params

    if isinstance(raw.get("dataset"), str):
        raw["dataset"] = {"name": raw["dataset"]}
    dataset = _section(raw, "dataset", DatasetSection, "", problems)
    if not dataset.name:
        problems.add("dataset.name is required, e.g. dataset: {name: arithmetic}; list them with `grpo datasets list`.")
        return dataset
    if not isinstance(dataset.name, str):
        problems.add(f"dataset.name must be one dataset's name, got {dataset.name!r}; list them with "
                     "`grpo datasets list` (to mix datasets, use the files or trl dataset).")
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
    from grpo_core.rewards.environments import parse_section

    return parse_section(raw.get("environment"), raw.get("tools"))


def _health(raw: dict, problems: Problems) -> HealthSection:
    if raw.get("health") is False:
        raw["health"] = {"enabled": False}
    return _section(raw, "health", HealthSection, "", problems)


def _log(raw: dict, problems: Problems) -> LogSection:
    section = _section(raw, "log", LogSection, "", problems)
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


def _sampling(raw: dict, problems: Problems) -> SamplingSection:
    value = raw.get("sampling")
    if isinstance(value, dict) and isinstance(value.get("dynamic"), dict):  # sampling: {dynamic: {max_rounds: 3}}
        value = {**{k: v for k, v in value.items() if k != "dynamic"}, "dynamic": True, **value["dynamic"]}
        raw = {**raw, "sampling": value}
    section = _section(raw, "sampling", SamplingSection, "", problems)
    if section.max_rounds < 1:
        problems.add(f"sampling.max_rounds is {section.max_rounds}; it must be at least 1 (the first "
                     f"generation counts).")
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
    adaptive = _section({"adaptive_weights": value}, "adaptive_weights", AdaptiveSection, "", problems)
    if not adaptive.enabled:
        return None
    if not (0 < adaptive.min_factor <= 1 <= adaptive.max_factor):
        problems.add(
            f"adaptive_weights bounds must satisfy 0 < min_factor <= 1 <= max_factor, got "
            f"{adaptive.min_factor} and {adaptive.max_factor}."
        )
    return adaptive


def _stages(raw: dict, known: set[str], environment, time_limit: float | None, problems: Problems,
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
        _translate_removed(st, where, problems, env)
        _check_training(st, where, known, problems)
        if "reward_weights" in st:
            problems.add(f"{where}set weights in the stage's rewards list, not reward_weights.")
        stage = _stage(name, [] if st_rewards is None else st_rewards, st, where, scorers, time_limit, problems)
        if stage:
            stages.append(stage)
    return stages


def _stage(name: str, specs: Any, training: dict, where: str, scorers: list[str], time_limit: float | None,
           problems: Problems) -> StageSection | None:
    """``scorers``: environments whose get_reward TRL adds to the rewards (logged by name)."""
    from grpo_core.rewards.reward import compose_specs

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
    if funcs is None:
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
    from grpo_core.rewards.reward import parse_spec, resolve

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

    from grpo_core.plugin import registry
    from grpo_core.config.openr1 import REMOTE, reward_hint

    name = spec.get("name") if isinstance(spec, dict) else re.match(r"[^\s(:]*", str(spec).strip()).group(0)
    if not isinstance(name, str) or not isinstance(exc, (SpecError, UnknownNameError)):
        return exc
    if name in REMOTE:
        return ConfigError(reward_hint(name, []))
    ours = [] if isinstance(exc, UnknownNameError) else registry.rewards().names()  # the former lists ours
    hint = reward_hint(name, ours)
    return type(exc)(f"{exc} {hint}") if hint else exc


__all__ = ["RunConfig", "load_config", "apply_env", "REMOVED", "SECTIONS"]
