"""The ``grpo train`` configuration: a YAML file plus command-line overrides.

Top-level keys are ``GRPOConfig`` fields, read by TRL's own argument machinery
(``TrlParser.set_defaults_with_config`` + ``HfArgumentParser``), exactly as in
``trl grpo --config``. Our sections sit beside them: ``model``, ``lora``,
``dataset``, ``rewards``, ``stages``, ``health``, ``adaptive_weights`` (and
TRL's ``env``), and ``environment`` / ``tools`` (tool-using, multi-turn rollouts;
see :mod:`grpo_core.environments`). On the command line, ``--key value`` sets a ``GRPOConfig`` field
and ``--section.key value`` one of ours (``--model.id``, ``--lora.r 8``,
``--dataset.params.level 2``); ``--rewards SPEC [SPEC ...]`` replaces the
reward list. Command-line values apply to every stage.

Loading a config checks everything it can without a model: names, weights,
parameters, removed TRL fields. Heavy imports happen in the functions that need
them (``training_args``).
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

from .errors import ConfigError

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
}


@dataclass
class ModelSection:
    id: str | None = None
    dtype: str = "auto"
    attn_implementation: str | None = None
    revision: str | None = None
    # CPU: torch threads while sampling completions (default 1; training keeps all
    # cores). Token-by-token decoding of a small model is dominated by thread
    # synchronisation: 1 thread is faster there, and far faster on a busy machine.
    generation_threads: int | None = None
    # static KV cache + compiled decoding while sampling: auto (on CUDA), true, false
    fast_generation: bool | str = "auto"
    # bitsandbytes quantization, TRL's ModelConfig fields (load_in_4bit, bnb_4bit_quant_type, ...)
    quantization: dict | None = None


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

    from .models import cache_dir

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


def cli_values(flags: list[tuple[str, list[str]]], kinds: dict[str, str]) -> dict[str, Any]:
    """Command-line values typed as GRPOConfig's fields take them (what HfArgumentParser
    does: ``--learning_rate 1e-5`` is a float, ``--bf16`` alone is true)."""
    out: dict[str, Any] = {}
    for key, values in flags:
        kind = kinds.get(key, "text")
        try:
            out[key] = _typed(kind, values)
        except ValueError:
            raise ConfigError(f"command line: --{key} {' '.join(values)!r} is not {_NOUN_OF[kind]}.") from None
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


def _section(data: dict, name: str, cls, where: str):
    raw = data.get(name)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}'{name}' must be a mapping, got {raw!r}.")
    known = {f.name for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(str(key), sorted(known), n=1)
            raise ConfigError(
                f"{where}'{name}' has no option '{key}'"
                + (f" (did you mean '{close[0]}'?)" if close else "")
                + f"; its options are: {', '.join(sorted(known))}."
            )
    section = cls(**raw)
    _check_values(section, name)
    return section


_CHOICES = {"on_nonfinite": ("stop", "skip"), "snapshot": (True, False, "auto"),
            "fast_generation": (True, False, "auto"), "on_divergence": ("warn", "stop"),
            "enabled": (True, False, "auto")}
_MINIMUM = {"window": 1, "flat_window": 1, "max_skips": 1, "reward_time_limit": 0.001}
_SIMPLE = {"int": int, "float": float, "bool": bool, "str": str}
_NOUN = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def _check_values(section, name: str) -> None:
    """Each value has its default's type (an int where a float is expected is fine)
    and numbers are not negative; fields with choices take one of them."""
    for f in dataclasses.fields(section):
        value, default = getattr(section, f.name), f.default
        where = f"{name}.{f.name}"
        if f.name in _CHOICES:
            if value not in _CHOICES[f.name] or (isinstance(value, int) and not isinstance(value, bool)):
                choices = ", ".join(str(c).lower() if isinstance(c, bool) else c for c in _CHOICES[f.name])
                raise ConfigError(f"{where} is {value!r}; use one of {choices}.")
            continue
        kind = _SIMPLE.get(str(f.type))
        if kind is None or value is None:
            continue
        ok = isinstance(value, kind) or (kind is float and isinstance(value, int))
        if ok and kind is not bool and isinstance(value, bool):
            ok = False
        if not ok:
            raise ConfigError(f"{where} is {value!r}; it takes {_NOUN[kind]} (default {default!r}).")
        low = _MINIMUM.get(f.name, 0)
        if kind in (int, float) and value < low:
            raise ConfigError(f"{where} is {value!r}; it must be at least {low} (default {default!r}).")


def _lora(raw: Any) -> tuple[dict | None, bool]:
    if raw is None or raw is False:
        return None, False
    if raw is True:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"'lora' must be a mapping of peft LoraConfig fields or false, got {raw!r}.")
    raw = dict(raw)
    merge = raw.pop("merge", False)
    if raw.pop("enabled", True) is False:
        return None, bool(merge)
    known = set(field_names("peft:LoraConfig", "peft"))
    for key in raw:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            raise ConfigError(
                f"lora has no option '{key}'" + (f" (did you mean '{close[0]}'?)" if close else "")
                + "; use peft LoraConfig fields (r, lora_alpha, lora_dropout, target_modules, ...) "
                "or merge: true."
            )
    lora = {"r": 16, "lora_alpha": 32, "lora_dropout": 0.0, "target_modules": "all-linear",
            "task_type": "CAUSAL_LM", **raw}
    _check_lora(lora)
    return lora, bool(merge)


def _check_lora(lora: dict) -> None:
    """peft checks few values before the model loads; a bad rank fails after."""
    r, alpha, dropout = lora.get("r"), lora.get("lora_alpha"), lora.get("lora_dropout")
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise ConfigError(f"lora.r is {r!r}; it must be a whole number >= 1 (the adapter rank, e.g. 16).")
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or alpha <= 0:
        raise ConfigError(f"lora.lora_alpha is {alpha!r}; it must be a number > 0 (often 2 x r).")
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        raise ConfigError(f"lora.lora_dropout is {dropout!r}; it must be a number in [0, 1).")


def _take_trl_args(raw: dict, flags: list[tuple[str, list[str]]]) -> list[tuple[str, list[str]]]:
    """`trl grpo`'s script/model/dataset flags on the command line (--model_name_or_path
    X, --reward_funcs a b) join the YAML's before translation; GRPOConfig's are returned."""
    from .trl_compat import KEYS

    kept = []
    for name, values in flags:
        if name not in KEYS:
            kept.append((name, values))
            continue
        parsed = [_yaml_value(v) for v in values]
        raw[name] = parsed if name in ("reward_funcs", "lora_target_modules", "lora_modules_to_save") else (
            parsed[0] if len(parsed) == 1 else (True if not parsed else parsed))
    return kept


def _check_training(values: dict, where: str, known: dict) -> None:
    for key in values:
        if key not in known:
            raise _unknown_key(key, where, sorted(known))


def load_config(path: str | os.PathLike | None, overrides: list[str] = (), data: dict | None = None) -> RunConfig:
    """Read ``path`` (or ``data``), apply ``overrides`` and check everything that
    can be checked without a model: option names, rewards, dataset name. Nothing
    is changed outside the returned config (``apply_env`` sets its ``env``)."""
    raw = copy.deepcopy(data) if data is not None else (_read_yaml(path) if path else {})
    ours, flags = split_overrides(list(overrides))
    for dotted, value in ours.items():
        _set_dotted(raw, dotted, value)
    env = _env(raw)
    from .trl_compat import translate

    flags = _take_trl_args(raw, flags)
    translate(raw)
    kinds = field_kinds("trl:GRPOConfig", "trl", "transformers")
    known = set(kinds)
    training = {k: v for k, v in raw.items() if k not in SECTIONS}
    cli_names = {name for name, _ in flags}
    _check_top_level(training, cli_names, known)
    cli = cli_values(flags, kinds)
    lora, merge = _lora(raw.get("lora"))
    if merge and lora is None:
        raise ConfigError("lora.merge is set but LoRA is off; merging needs a lora section.")
    model, dataset = _model(raw), _dataset(raw)
    environment = _environment(raw)
    health = _health(raw)
    stages = _stages(raw, known, environment, health.reward_time_limit)
    cfg = RunConfig(
        path=str(path) if path else None, model=model, lora=lora, merge=merge, dataset=dataset,
        stages=stages, health=health, adaptive=_adaptive(raw.get("adaptive_weights")), training=training,
        cli=cli, explicit=set(training) | set(cli), env=env, environment=environment, overrides=tuple(overrides),
        log=_log(raw), sampling=_sampling(raw), heldout=_section(raw, "heldout", HeldoutSection, ""),
    )
    check_sampling_metric(cfg)
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


def _check_top_level(training: dict, cli_names: set[str], known: set[str]) -> None:
    _check_training(training, "", known)
    for name in cli_names:
        if name in REMOVED:
            raise ConfigError(f"command line: '--{name}' is not a GRPOConfig field in TRL 1.16: {REMOVED[name]}.")
        if name not in known:
            raise _unknown_key(name, "command line: ", sorted(known))
    if "reward_weights" in training or "reward_weights" in cli_names:
        raise ConfigError(
            "reward_weights is set from the rewards section; write the weight after the reward "
            "name ('math.correctness:2.0' or {name: ..., weight: 2.0}) instead."
        )


def _model(raw: dict) -> ModelSection:
    from .models import check_model_id
    from .precision import normalize_dtype

    if isinstance(raw.get("model"), str):  # shorthand: model: smollm2-135m
        raw["model"] = {"id": raw["model"]}
    model = _section(raw, "model", ModelSection, "")
    model.dtype = normalize_dtype(model.dtype)
    check_model_id(model.id)
    if model.quantization and importlib.util.find_spec("bitsandbytes") is None:
        raise ConfigError(
            f"model.quantization {model.quantization} (load_in_4bit / load_in_8bit) needs bitsandbytes and a CUDA "
            "GPU: pip install bitsandbytes, or drop load_in_4bit / load_in_8bit."
        )
    return model


def _dataset(raw: dict) -> DatasetSection:
    from . import registry
    from .params import bind_params

    if isinstance(raw.get("dataset"), str):
        raw["dataset"] = {"name": raw["dataset"]}
    dataset = _section(raw, "dataset", DatasetSection, "")
    if not dataset.name:
        raise ConfigError("dataset.name is required, e.g. dataset: {name: arithmetic}; list them with `grpo datasets list`.")
    if not isinstance(dataset.name, str):
        raise ConfigError(f"dataset.name must be one dataset's name, got {dataset.name!r}; list them with "
                          "`grpo datasets list` (to mix datasets, use the files or trl dataset).")
    entry = registry.datasets().get(dataset.name)  # unknown names fail here, with suggestions
    if not isinstance(dataset.params, dict) or not isinstance(dataset.eval_params, dict):
        raise ConfigError("dataset.params and dataset.eval_params must be mappings.")
    bind_params(f"dataset '{dataset.name}'", entry.obj, dataset.params)
    return dataset


def _environment(raw: dict):
    from .environments import parse_section

    return parse_section(raw.get("environment"), raw.get("tools"))


def _health(raw: dict) -> HealthSection:
    if raw.get("health") is False:
        raw["health"] = {"enabled": False}
    return _section(raw, "health", HealthSection, "")


def _log(raw: dict) -> LogSection:
    section = _section(raw, "log", LogSection, "")
    value = section.rollouts
    if isinstance(value, str) and value.startswith("every "):
        value = value[6:].split()[0]
        section.rollouts = int(value) if value.isdigit() else value
    ok = section.rollouts in ("all", "none") or (isinstance(section.rollouts, int) and not isinstance(
        section.rollouts, bool) and section.rollouts >= 1)
    if not ok:
        raise ConfigError(f"log.rollouts is {section.rollouts!r}; use all, none, or a number of steps N "
                          f"(every N steps), e.g. log: {{rollouts: 10}}.")
    return section


def _sampling(raw: dict) -> SamplingSection:
    value = raw.get("sampling")
    if isinstance(value, dict) and isinstance(value.get("dynamic"), dict):  # sampling: {dynamic: {max_rounds: 3}}
        value = {**{k: v for k, v in value.items() if k != "dynamic"}, "dynamic": True, **value["dynamic"]}
        raw = {**raw, "sampling": value}
    section = _section(raw, "sampling", SamplingSection, "")
    if section.max_rounds < 1:
        raise ConfigError(f"sampling.max_rounds is {section.max_rounds}; it must be at least 1 (the first "
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


def _adaptive(value: Any) -> AdaptiveSection | None:
    if value in (None, False):
        return None
    if value is True:
        value = {}
    if not isinstance(value, dict):
        raise ConfigError(f"'adaptive_weights' must be a mapping or true/false, got {value!r}.")
    adaptive = _section({"adaptive_weights": value}, "adaptive_weights", AdaptiveSection, "")
    if not adaptive.enabled:
        return None
    if not (0 < adaptive.min_factor <= 1 <= adaptive.max_factor):
        raise ConfigError(
            f"adaptive_weights bounds must satisfy 0 < min_factor <= 1 <= max_factor, got "
            f"{adaptive.min_factor} and {adaptive.max_factor}."
        )
    return adaptive


def _stages(raw: dict, known: set[str], environment=None, time_limit: float | None = None) -> list[StageSection]:
    """The stages (one, 'main', without a stages list), each with its rewards parsed
    and composed once. An environment that scores rollouts (``get_reward``) may be
    the only reward."""
    rewards, stages_raw = raw.get("rewards"), raw.get("stages")
    scorers = [e.name for e in environment.rewarded] if environment is not None else []
    if not stages_raw:
        if rewards is None and not scorers:
            raise ConfigError("no rewards: add a rewards list, e.g. rewards: ['math.correctness:2.0'].")
        return [_stage("main", [] if rewards is None else rewards, {}, "", scorers, time_limit)]
    if not isinstance(stages_raw, list):
        raise ConfigError(f"'stages' must be a list of stages, got {stages_raw!r}.")
    stages: list[StageSection] = []
    for i, st in enumerate(stages_raw):
        if not isinstance(st, dict):
            raise ConfigError(f"stage {i + 1} must be a mapping with rewards (and name, max_steps, ...), got {st!r}.")
        st = dict(st)
        name = str(st.pop("name", f"stage{i + 1}"))
        if name in {s.name for s in stages} or not name.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(f"stage name {name!r} must be unique and made of letters, digits, - and _.")
        where = f"stage '{name}': "
        st_rewards = st.pop("rewards", rewards)
        if st_rewards is None and not scorers:
            raise ConfigError(f"{where}no rewards: give the stage a rewards list (or set top-level rewards).")
        _check_training(st, where, known)
        if "reward_weights" in st:
            raise ConfigError(f"{where}set weights in the stage's rewards list, not reward_weights.")
        stages.append(_stage(name, [] if st_rewards is None else st_rewards, st, where, scorers, time_limit))
    return stages


def _stage(name: str, specs: Any, training: dict, where: str, scorers: list[str] = (),
           time_limit: float | None = None) -> StageSection:
    """``scorers``: environments whose get_reward TRL adds to the rewards (logged by name)."""
    from .rewards import compose_specs, parse_spec

    if isinstance(specs, (str, dict)):
        specs = [specs]
    if scorers and specs == []:
        return StageSection(name, [], training, [])
    if not isinstance(specs, list) or not specs:
        raise ConfigError(
            f"{where}rewards must be a non-empty list of reward specs, e.g. "
            f"['math.correctness:2.0', {{name: length.ideal, weight: 0.1, params: {{target: 300}}}}]; "
            f"got {specs!r}."
        )
    parsed = [parse_spec(s) for s in specs]
    funcs = compose_specs(parsed, time_limit)  # unknown names, bad params and weights fail here
    clash = sorted({f.__name__ for f in funcs} & set(scorers))
    if clash:
        raise ConfigError(f"{where}'{clash[0]}' names both a reward and the environment that scores rollouts; TRL "
                          f"logs both as rewards/{clash[0]}/mean: give the reward another name with `as:`.")
    if all(p.weight == 0 for p in parsed) and not scorers:
        raise ConfigError(f"{where}every reward weight is 0: the model would get no learning signal.")
    return StageSection(name, parsed, training, funcs)


__all__ = ["RunConfig", "load_config", "apply_env", "REMOVED", "SECTIONS"]
