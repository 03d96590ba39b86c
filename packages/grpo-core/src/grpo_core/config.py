"""The ``grpo train`` configuration: a YAML file plus command-line overrides.

Top-level keys are ``GRPOConfig`` fields, read by TRL's own argument machinery
(``TrlParser.set_defaults_with_config`` + ``HfArgumentParser``), exactly as in
``trl grpo --config``. Our sections sit beside them: ``model``, ``lora``,
``dataset``, ``rewards``, ``stages``, ``health``, ``adaptive_weights`` (and
TRL's ``env``). On the command line, ``--key value`` sets a ``GRPOConfig`` field
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

SECTIONS = ("model", "lora", "dataset", "rewards", "stages", "health", "adaptive_weights")

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
    rewards: list
    training: dict  # GRPOConfig overrides for this stage (max_steps, learning_rate, ...)


@dataclass
class RunConfig:
    """A parsed, checked configuration. ``training`` holds the YAML's GRPOConfig
    values; ``cli_args`` the command-line ones, parsed by HfArgumentParser later."""

    path: str | None
    model: ModelSection
    lora: dict | None
    merge: bool
    dataset: DatasetSection
    rewards: list
    stages: list[StageSection]
    health: HealthSection
    adaptive: AdaptiveSection | None
    training: dict
    cli_args: list[str]
    explicit: set[str]  # GRPOConfig fields the user set (YAML or command line)
    raw: dict  # the merged YAML + overrides, for the resolved config

    @property
    def multi_stage(self) -> bool:
        return len(self.stages) > 1 or self.stages[0].name != "main"


# --------------------------------------------------------------------------- parsing


def field_names(cls_path: str, *dists: str) -> list[str]:
    """The init fields of the dataclass ``module:Class``, kept per installed version of
    ``dists`` under the cache dir: importing TRL or peft takes seconds on 2 cores and a
    config check needs only the names (``grpo check`` then imports neither)."""
    import importlib
    import json
    from importlib.metadata import version

    from .models import cache_dir

    tag = "-".join(f"{d}{version(d)}" for d in dists)
    path = cache_dir("config") / f"{cls_path.replace(':', '.')}-{tag}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    module, name = cls_path.split(":")
    names = sorted(f.name for f in dataclasses.fields(getattr(importlib.import_module(module), name)) if f.init)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(names))
        tmp.replace(path)
    except OSError:
        pass  # an unwritable cache only costs the import next time
    return names


def grpo_fields() -> list[str]:
    """GRPOConfig's field names."""
    return field_names("trl:GRPOConfig", "trl", "transformers")


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


def split_overrides(tokens: list[str]) -> tuple[dict[str, Any], list[str], set[str]]:
    """``(our overrides {dotted key: value}, GRPOConfig args for HfArgumentParser, their names)``."""
    ours: dict[str, Any] = {}
    trl_args: list[str] = []
    trl_names: set[str] = set()
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("--") or len(tok) == 2:
            raise ConfigError(f"unexpected argument {tok!r}; overrides are --key value.")
        key, eq, value = tok[2:].partition("=")
        values = [value] if eq else []
        j = i + 1
        if not eq:
            while j < len(tokens) and not (tokens[j].startswith("--") and len(tokens[j]) > 2):
                values.append(tokens[j])
                j += 1
        head = key.split(".", 1)[0].replace("-", "_")
        if head in SECTIONS or head == "env":
            dotted = key.replace("-", "_")
            if dotted == "rewards":
                parsed: Any = [v for v in values]
                if len(values) == 1 and values[0].lstrip().startswith("["):
                    parsed = _yaml_value(values[0])
            elif not values:
                parsed = True
            elif len(values) == 1:
                parsed = _yaml_value(values[0])
            else:
                parsed = [_yaml_value(v) for v in values]
            ours[dotted] = parsed
        else:
            name = key.replace("-", "_")
            trl_names.add(name)
            trl_args.append(f"--{name}")
            trl_args.extend(values)
        i = j
    return ours, trl_args, trl_names


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
            "fast_generation": (True, False, "auto")}
_MINIMUM = {"window": 1, "flat_window": 1, "max_skips": 1}
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


def _check_rewards(specs: Any, where: str) -> list:
    from .rewards import compose_rewards

    if isinstance(specs, (str, dict)):
        specs = [specs]
    if not isinstance(specs, list) or not specs:
        raise ConfigError(
            f"{where}rewards must be a non-empty list of reward specs, e.g. "
            f"['math.correctness:2.0', {{name: length.ideal, weight: 0.1, params: {{target: 300}}}}]; "
            f"got {specs!r}."
        )
    _, weights = compose_rewards(specs)  # unknown names, bad params and weights fail here
    if all(w == 0 for w in weights):
        raise ConfigError(f"{where}every reward weight is 0: the model would get no learning signal.")
    return specs


def _take_trl_args(raw: dict, cli_args: list[str], cli_names: set[str]) -> None:
    """`trl grpo`'s script/model/dataset flags on the command line (--model_name_or_path
    X, --reward_funcs a b) join the YAML's before translation; GRPOConfig's stay."""
    from .trl_compat import KEYS

    if not cli_names & set(KEYS):
        return
    kept, i = [], 0
    while i < len(cli_args):
        name = cli_args[i][2:]
        j = i + 1
        while j < len(cli_args) and not cli_args[j].startswith("--"):
            j += 1
        values = [_yaml_value(v) for v in cli_args[i + 1:j]]
        if name in KEYS:
            raw[name] = values if name in ("reward_funcs", "lora_target_modules", "lora_modules_to_save") else (
                values[0] if len(values) == 1 else (True if not values else values))
            cli_names.discard(name)
        else:
            kept += cli_args[i:j]
        i = j
    cli_args[:] = kept


def _check_training(values: dict, where: str, known: dict) -> None:
    for key in values:
        if key not in known:
            raise _unknown_key(key, where, sorted(known))


def load_config(path: str | os.PathLike | None, overrides: list[str] = (), data: dict | None = None) -> RunConfig:
    """Read ``path`` (or ``data``), apply ``overrides`` and check everything that
    can be checked without a model: option names, rewards, dataset name."""
    raw = copy.deepcopy(data) if data is not None else (_read_yaml(path) if path else {})
    ours, cli_args, cli_names = split_overrides(list(overrides))
    for dotted, value in ours.items():
        _set_dotted(raw, dotted, value)

    env = raw.pop("env", None) or {}
    if not isinstance(env, dict):
        raise ConfigError(f"'env' must be a mapping of environment variables, got {env!r}.")
    for key, value in env.items():
        os.environ[str(key)] = str(value)

    from .trl_compat import translate

    _take_trl_args(raw, cli_args, cli_names)
    translate(raw)
    known = set(grpo_fields())
    training = {k: v for k, v in raw.items() if k not in SECTIONS}
    _check_training(training, "", known)
    for name in cli_names:
        if name not in known and name not in REMOVED:
            raise _unknown_key(name, "command line: ", sorted(known))
        if name in REMOVED:
            raise ConfigError(f"command line: '--{name}' is not a GRPOConfig field in TRL 1.16: {REMOVED[name]}.")
    if "reward_weights" in training or "reward_weights" in cli_names:
        raise ConfigError(
            "reward_weights is set from the rewards section; write the weight after the reward "
            "name ('math.correctness:2.0' or {name: ..., weight: 2.0}) instead."
        )

    model = raw.get("model")
    if isinstance(model, str):  # shorthand: model: smollm2-135m
        raw["model"] = {"id": model}
    model = _section(raw, "model", ModelSection, "")
    from .models import check_model_id
    from .precision import normalize_dtype

    model.dtype = normalize_dtype(model.dtype)

    check_model_id(model.id)
    if model.quantization and importlib.util.find_spec("bitsandbytes") is None:
        raise ConfigError(
            f"model.quantization {model.quantization} (load_in_4bit / load_in_8bit) needs bitsandbytes and a CUDA "
            "GPU: pip install bitsandbytes, or drop load_in_4bit / load_in_8bit."
        )

    lora, merge = _lora(raw.get("lora"))
    if merge and lora is None:
        raise ConfigError("lora.merge is set but LoRA is off; merging needs a lora section.")

    dataset = raw.get("dataset")
    if isinstance(dataset, str):
        raw["dataset"] = {"name": dataset}
    dataset = _section(raw, "dataset", DatasetSection, "")
    if not dataset.name:
        raise ConfigError("dataset.name is required, e.g. dataset: {name: arithmetic}; list them with `grpo datasets list`.")
    from . import registry

    registry.datasets().get(dataset.name)  # unknown names fail here, with suggestions
    if not isinstance(dataset.params, dict) or not isinstance(dataset.eval_params, dict):
        raise ConfigError("dataset.params and dataset.eval_params must be mappings.")
    from .params import bind_params

    bind_params(f"dataset '{dataset.name}'", registry.datasets().get(dataset.name).obj, dataset.params)

    health = raw.get("health")
    if health is False:
        raw["health"] = {"enabled": False}
    health = _section(raw, "health", HealthSection, "")

    adaptive_raw = raw.get("adaptive_weights")
    adaptive = None
    if adaptive_raw is True:
        adaptive_raw = {}
    if isinstance(adaptive_raw, dict):
        adaptive = _section({"adaptive_weights": adaptive_raw}, "adaptive_weights", AdaptiveSection, "")
        if not adaptive.enabled:
            adaptive = None
        elif not (0 < adaptive.min_factor <= 1 <= adaptive.max_factor):
            raise ConfigError(
                f"adaptive_weights bounds must satisfy 0 < min_factor <= 1 <= max_factor, got "
                f"{adaptive.min_factor} and {adaptive.max_factor}."
            )
    elif adaptive_raw not in (None, False):
        raise ConfigError(f"'adaptive_weights' must be a mapping or true/false, got {adaptive_raw!r}.")

    rewards = raw.get("rewards")
    stages_raw = raw.get("stages")
    stages: list[StageSection] = []
    if stages_raw:
        if not isinstance(stages_raw, list):
            raise ConfigError(f"'stages' must be a list of stages, got {stages_raw!r}.")
        seen = set()
        for i, st in enumerate(stages_raw):
            if not isinstance(st, dict):
                raise ConfigError(f"stage {i + 1} must be a mapping with rewards (and name, max_steps, ...), got {st!r}.")
            st = dict(st)
            name = str(st.pop("name", f"stage{i + 1}"))
            if name in seen or not name.replace("-", "").replace("_", "").isalnum():
                raise ConfigError(f"stage name {name!r} must be unique and made of letters, digits, - and _.")
            seen.add(name)
            where = f"stage '{name}': "
            st_rewards = st.pop("rewards", rewards)
            if st_rewards is None:
                raise ConfigError(f"{where}no rewards: give the stage a rewards list (or set top-level rewards).")
            _check_training(st, where, known)
            if "reward_weights" in st:
                raise ConfigError(f"{where}set weights in the stage's rewards list, not reward_weights.")
            stages.append(StageSection(name, _check_rewards(st_rewards, where), st))
    else:
        if rewards is None:
            raise ConfigError("no rewards: add a rewards list, e.g. rewards: ['math.correctness:2.0'].")
        stages.append(StageSection("main", _check_rewards(rewards, ""), {}))

    explicit = set(training) | set(cli_names)
    return RunConfig(
        path=str(path) if path else None, model=model, lora=lora, merge=merge, dataset=dataset,
        rewards=stages[0].rewards, stages=stages, health=health, adaptive=adaptive,
        training=training, cli_args=cli_args, explicit=explicit, raw=raw,
    )


# ----------------------------------------------------------------- GRPOConfig


def detect_device() -> str:
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def default_output_dir(cfg: RunConfig) -> str:
    stem = Path(cfg.path).stem if cfg.path else "run"
    return str(Path("outputs") / stem)


def training_args(cfg: RunConfig, stage: StageSection, *, device: str | None = None,
                  output_dir: str | None = None, reward_weights: list[float] | None = None):
    """The ``GRPOConfig`` for one stage: YAML values, then the stage's, then the
    command line, parsed by TRL's ``TrlParser``; devices and logging chosen
    automatically where the user did not set them."""
    from trl import GRPOConfig, TrlParser

    device = device or detect_device()
    explicit = cfg.explicit | set(stage.training)
    values: dict[str, Any] = {}
    if "output_dir" not in explicit:
        values["output_dir"] = default_output_dir(cfg)
    if "logging_steps" not in explicit:
        values["logging_steps"] = 1  # the console summary is one line per step
    if device == "cpu":
        if "use_cpu" not in explicit:
            values["use_cpu"] = True
        if "bf16" not in explicit:
            values["bf16"] = False
    elif device == "cuda" and "bf16" not in explicit:
        import torch

        values["bf16"] = bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
    elif device == "mps" and "bf16" not in explicit:
        values["bf16"] = False
    values.update(cfg.training)
    values.update(stage.training)
    if output_dir is not None:
        values["output_dir"] = output_dir
    if reward_weights is None:
        from .rewards import parse_spec

        specs = stage.rewards if isinstance(stage.rewards, list) else [stage.rewards]
        reward_weights = [parse_spec(s).weight for s in specs]
    values["reward_weights"] = list(reward_weights)

    parser = TrlParser([GRPOConfig])
    unused = parser.set_defaults_with_config(**values)
    if unused:
        raise _unknown_key(unused[0], "", sorted(grpo_fields()))
    try:
        (args,) = parser.parse_args_into_dataclasses(args=list(cfg.cli_args))
    except SystemExit:
        raise ConfigError(
            f"could not parse the command-line overrides {' '.join(cfg.cli_args)!r} (see the message above)."
        ) from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"invalid training options: {exc}") from None
    if output_dir is not None:
        args.output_dir = output_dir
    args.reward_weights = list(reward_weights)
    check_values(args)
    check_vllm(args)
    return args


# GRPOConfig values TRL takes without complaint and fails on mid-run: (test, what is allowed)
_RULES: dict[str, tuple] = {
    "temperature": (lambda v: v > 0, "a number > 0 (1.0 samples as the model is)"),
    "top_p": (lambda v: 0 < v <= 1, "a number in (0, 1]"),
    "min_p": (lambda v: v is None or 0 <= v <= 1, "a number in [0, 1] or null"),
    "learning_rate": (lambda v: v >= 0, "a number >= 0"),
    "max_completion_length": (lambda v: v is None or v >= 1, "a whole number >= 1"),
    "per_device_train_batch_size": (lambda v: v >= 1, "a whole number >= 1"),
    "gradient_accumulation_steps": (lambda v: v >= 1, "a whole number >= 1"),
    "max_grad_norm": (lambda v: v is None or v >= 0, "a number >= 0 (0: no clipping)"),
    "beta": (lambda v: v >= 0, "a number >= 0 (0: no KL penalty)"),
    "repetition_penalty": (lambda v: v > 0, "a number > 0 (1.0: none)"),
    "seed": (lambda v: isinstance(v, int) and not isinstance(v, bool), "a whole number"),
}
_INTEGERS = {"max_completion_length", "per_device_train_batch_size", "gradient_accumulation_steps", "seed"}


def check_values(args) -> None:
    """Values TRL accepts here but fails on later (at the first generation, mid-run)."""
    import math

    for name, (ok, allowed) in _RULES.items():
        if not hasattr(args, name):
            continue
        value = getattr(args, name)
        numeric = value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)
                                    and (not isinstance(value, float) or math.isfinite(value)))
        if name in _INTEGERS and value is not None and not (isinstance(value, int) and not isinstance(value, bool)):
            numeric = False
        try:
            good = numeric and ok(value)
        except TypeError:
            good = False
        if not good:
            raise ConfigError(f"{name} is {value!r}; it must be {allowed}.")


def check_vllm(args) -> None:
    """vLLM is optional: say how to get it, and what the modes are, before any model loads."""
    if not getattr(args, "use_vllm", False):
        return
    mode = getattr(args, "vllm_mode", "colocate")
    if mode not in ("colocate", "server"):
        raise ConfigError(f"vllm_mode {mode!r} is not one of colocate, server.")
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        raise ConfigError(
            "use_vllm: true needs vLLM, which is not installed: pip install \"grpo-core[vllm]\" "
            "(a GPU is required). Or set use_vllm: false to generate with transformers."
        )
    if mode == "server":
        port = getattr(args, "vllm_server_port", 8000)
        if not isinstance(port, int) or not 0 < port < 65536:
            raise ConfigError(f"vllm_server_port {port!r} is not a TCP port.")


def training_values(cfg: RunConfig, args) -> dict:
    """The GRPOConfig values worth writing into a resolved config: the ones the user
    set plus the ones chosen automatically."""
    auto = {"output_dir", "logging_steps", "use_cpu", "bf16"}
    out = {}
    for name in sorted(cfg.explicit | auto):
        if name == "reward_weights" or not hasattr(args, name):
            continue
        value = getattr(args, name)
        if hasattr(value, "value"):  # enums (save_strategy, lr_scheduler_type, ...)
            value = value.value
        if isinstance(value, (list, tuple)):
            value = [getattr(v, "value", v) for v in value]
        out[name] = value
    return out


__all__ = ["RunConfig", "load_config", "training_args", "training_values", "detect_device", "REMOVED", "SECTIONS"]
