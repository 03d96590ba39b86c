"""The settings schema: grpo's config sections as typed dataclasses, every field with its
help text (``help``), allowed values (``choices``) and lower bound (``minimum``) in the
field's metadata. The parser, the value checks, ``docs/config.md`` and
``grpo train --help-config`` all read it from here."""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from typing import Any

from grpo_core.base.problems import Problems

SECTIONS = ("model", "lora", "dataset", "rewards", "stages", "health", "adaptive_weights", "environment", "tools",
            "log", "sampling", "heldout")


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


def read_section(data: dict, name: str, cls, where: str, problems: Problems | None = None):
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
    check_section_values(section, name, problems)
    if own:
        problems.raise_if_any(f"'{name}'")
    return section


_CHOICES = {"on_nonfinite": ("stop", "skip"), "on_reward_timeout": ("stop", "drop"), "snapshot": (True, False, "auto"),
            "fast_generation": (True, False, "auto"), "on_divergence": ("warn", "stop"),
            "enabled": (True, False, "auto")}


_MINIMUM = {"window": 1, "flat_window": 1, "max_skips": 1, "reward_time_limit": 0.001, "max_reward_timeouts": 1}


_SIMPLE = {"int": int, "float": float, "bool": bool, "str": str}


_NOUN = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}


def check_section_values(section, name: str, problems: Problems) -> None:
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
