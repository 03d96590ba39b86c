"""The settings schema: grpo's config sections as typed dataclasses, every field with its
help text (``help``), allowed values (``choices``) and bounds (``minimum``, ``maximum``)
in the field's metadata. The parser, the value checks (:mod:`grpo_core.config.values`),
``docs/config.md`` and ``grpo train --help-config`` all read it from here."""

from __future__ import annotations

import dataclasses
import difflib
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from grpo_core.base.problems import Problems
from grpo_core.config.values import section_range, section_type, value_problem

SECTIONS = ("model", "lora", "dataset", "rewards", "stages", "health", "adaptive_weights", "environment", "tools",
            "log", "sampling", "heldout", "learning")


def setting(default: Any = None, help: str = "", *, choices: tuple | None = None, minimum: float | None = None,
            maximum: float | None = None, factory: Any = None) -> Any:
    """A section field with its one-line help text, allowed values and bounds (a number is
    never negative unless its minimum says so): what the checks and the generated docs
    (docs/config.md) read."""
    meta = {"help": help, "choices": choices, "minimum": minimum, "maximum": maximum}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


AUTO = (True, False, "auto")


@dataclass
class ModelSection:
    id: str | None = setting(None, "The model: a Hub id, a local folder, a .gguf file, or an alias (smollm2-135m; "
                             "grpo models list).")
    dtype: str = setting("auto", "auto: float32 trainable weights (a LoRA base in bf16 when bf16 autocast is "
                         "on); bfloat16 or float16: every weight in it (pure low precision); float32.")
    attn_implementation: str | None = setting(None, "transformers' attention implementation (sdpa, eager, "
                                              "flash_attention_2); unset: transformers' default.")
    revision: str | None = setting(None, "The Hub revision (branch, tag or commit) of model.id.")
    generation_threads: int | Literal["auto"] | None = setting(
        "auto", "CPU only: torch threads while sampling; auto: the cores other processes leave idle, read before "
        "each generation (at most torch's own; OMP_NUM_THREADS set: that); null: torch's own.", minimum=1)
    reproducible: bool = setting(True, "CPU: attention in torch's math kernel while decoding, whose results do not "
                                 "depend on the thread count, so a seed repeats its run whatever "
                                 "generation_threads picks; false: torch's flash kernel (its one-token path sums "
                                 "in an order that follows the thread count).")
    fast_generation: bool | str = setting("auto", "Static KV cache and compiled decoding while sampling: auto "
                                          "(on CUDA), true, false.", choices=AUTO)
    decode_loop: str = setting("transformers", "How sampling decodes in training: transformers (generate, as TRL "
                               "calls it) or grpo (grpo's own loop: one compiled step per token, the draw "
                               "included, CUDA graphs with fast_generation, no wait for the device per token; "
                               "settings it does not do, such as repetition_penalty, go to generate).",
                               choices=("transformers", "grpo"))
    merged_sampling: bool | str = setting("auto", "Sample from a LoRA model with its adapters merged into a copy "
                                          "of the weights they adapt (no per-layer LoRA products while decoding): "
                                          "auto (on a CPU, when the copy fits in 1 GiB), true, false.",
                                          choices=AUTO)
    shared_prompt: bool | str = setting("auto", "Training pass: compute each group's shared prompt once (its "
                                        "completions attend to one copy) instead of once per completion; the "
                                        "same log-probabilities. auto (on a CPU: llama, qwen2, qwen3, mistral "
                                        "models), true (any device; text-only models without sliding windows), "
                                        "false. Steps aside under gradient checkpointing.",
                                        choices=AUTO)
    cudnn_attention: bool = setting(False, "CUDA: let sdpa attention use cuDNN's kernel while training. Off by "
                                    "default: its backward returns NaN on H100/H200 with an attention mask when the "
                                    "batch is 64 tokens long (mod 128), torch 2.11 on (pytorch#196678); torch's other "
                                    "sdpa kernels run instead.")
    quantization: dict | None = setting(None, "bitsandbytes quantization as TRL's ModelConfig writes it "
                                        "({load_in_4bit: true, bnb_4bit_quant_type: nf4}); needs a CUDA GPU.")
    chat_template: str | None = setting(None, "A Jinja chat template put on the tokenizer in place of its own "
                                        "(open-r1's chat_template).")


@dataclass
class DatasetSection:
    name: str | None = setting(None, "A registered dataset adapter (grpo datasets list): gsm8k, math, files, hub, "
                               "arithmetic, ...")
    params: dict = setting(help="The adapter's parameters ({path: data.jsonl}, {level: 2}); grpo datasets show "
                           "NAME lists them.", factory=dict)
    split: str = setting("train", "The training split, with an optional slice (train[:1000]).")
    system_prompt: str | None = setting(None, "A registered system prompt (grpo prompts list) or the text itself.")
    few_shot: int | list = setting(0, "Worked examples put before each question: a count taken from the split, "
                                   "or a list of {question, answer}.")
    answer_template: str | None = setting(None, "How a few-shot example's answer is written (\"Answer: {answer}\"); "
                                          "unset: the system prompt's own.")
    eval_split: str | None = setting(None, "The held-out split for eval/accuracy and grpo eval; unset: the "
                                     "adapter's \"test\" split where it has one.")
    eval_params: dict = setting(help="Adapter parameters that differ for the held-out split.", factory=dict)


@dataclass
class HealthSection:
    enabled: bool = setting(True, "Watch the run and warn (health.jsonl): no signal, collapse, KL, a flat reward.",
                            choices=AUTO)
    window: int = setting(5, "Consecutive logged steps a condition must hold before it is reported.", minimum=1)
    zero_std_frac: float = setting(0.9, "frac_reward_zero_std at or above this: no learning signal.", maximum=1)
    min_reward_std: float = setting(1e-3, "reward_std at or below this: the rewards collapsed.")
    max_kl: float = setting(0.5, "KL to the reference model above this: a warning.")
    max_sampler_kl: float = setting(0.02, "sampling.precision below the trainer's: the sampler's KL to the "
                                    "trainer (sampling/kl, nat a token) above this: a warning.")
    flat_window: int = setting(10, "Logged steps over which the mean reward must move.", minimum=1)
    flat_delta: float = setting(0.02, "The mean reward's max - min over flat_window below this: flat.")
    on_nonfinite: str = setting("stop", "A non-finite loss, gradient norm or weight, or a blown-up update: stop "
                                "(checkpoint of the last sound state) or skip (drop that update and go on).",
                                choices=("stop", "skip"))
    max_skips: int = setting(10, "skip: updates dropped in a row before the run stops anyway.", minimum=1)
    max_weight_jump: float = setting(100.0, "An update growing the largest trainable weight more than this many "
                                     "times is a blow-up (an absurd learning rate); 0: no check.")
    max_reward_errors: float = setting(0.2, "Share of a reward's items that may fail (raise, or return no number) "
                                       "over the last `window` batches before the run stops.", maximum=1)
    snapshot: bool | str = setting("auto", "Keep the trainable weights from before each update to restore them: "
                                   "auto (at most 10 % of the model or 1 GiB), true, false.", choices=AUTO)
    on_divergence: str = setting("warn", "Held-out accuracy falling while the training reward rises over `window` "
                                 "evaluations: warn or stop.", choices=("warn", "stop"))
    reward_time_limit: float = setting(120.0, "Seconds a reward may take per call (one batch) before its items "
                                       "score None; per reward: time_limit: in its entry, or 'NAME within 30s'.",
                                       minimum=0.001)
    max_reward_timeouts: int = setting(3, "Calls in a row a reward may time out (one in grpo check counts) "
                                       "before on_reward_timeout acts.", minimum=1)
    on_reward_timeout: str = setting("stop", "A reward past max_reward_timeouts: stop (the run, with a "
                                     "checkpoint) or drop (train on without it, said loudly).",
                                     choices=("stop", "drop"))


@dataclass
class LogSection:
    rollouts: Any = setting("all", "The rollout log (rollouts/*.parquet): every scored completion of every step "
                            "(all), of every Nth step (an integer N), or none.")

    @property
    def rollout_every(self) -> int:
        """Steps between logged steps; 0: no log (a text is all or none: the config check saw to it)."""
        return {"all": 1, "none": 0}[self.rollouts] if isinstance(self.rollouts, str) else int(self.rollouts)


@dataclass
class SamplingSection:
    dynamic: bool = setting(False, "Dynamic sampling (DAPO): groups whose completions all score the same are "
                            "replaced by groups for fresh prompts.")
    max_rounds: int = setting(3, "Generations per batch at most, with dynamic sampling (the first counts).",
                              minimum=1)
    oversample: int = setting(1, "Groups generated per place the batch has, in each round's one generate call "
                              "(verl's gen_batch_size over train_batch_size): 3 generates three times the "
                              "groups needed at once and trains on the first with a spread.", minimum=1)
    metric: str = setting("total", "What \"flat\" is judged on: total (the weighted sum, TRL's advantage) or one "
                          "reward's logged name (math.correctness).")
    precision: str = setting("auto", "The precision completions are sampled in, the trainer staying as it is: "
                             "bf16 (a bfloat16 copy of the weights, LoRA merged into it before each generation; "
                             "TRL's importance-sampling correction, vllm_importance_sampling_*, corrects the "
                             "mismatch), float32 (as the model is), auto (bf16 on a CPU with bfloat16 "
                             "instructions, else as the model is). int8 and fp8: refused, with the reason.",
                             choices=("auto", "float32", "bf16", "int8", "fp8"))
    prompts: str = setting("trl", "Which training prompts each generation batch draws: trl (TRL's own sampler, "
                           "unchanged), frontier (prompts whose expected pass rate is nearest a target: the "
                           "dataset's difficulty knob and per-prompt estimates from scored rollouts), or a "
                           "plugin's sampler; parameters as in a reward spec: frontier(target=0.5).")


@dataclass
class LearningSection:
    method: str = setting("grpo", "How a scored batch becomes advantages: grpo (TRL's, unchanged), zvp (RL-ZVP: flat "
                          "correctness groups teach through entropy-shaped token advantages), sign (a control), or a "
                          "plugin's method; parameters as in a reward spec: zvp(alpha=0.1).")
    metric: str = setting("auto", "The correctness reward zvp and sign judge flat groups on: a reward's logged name, "
                          "or auto (the stages' one reward registered as correctness).")


@dataclass
class HeldoutSection:
    enabled: bool | str = setting("auto", "Held-out accuracy during training (eval/accuracy): auto (when the "
                                  "dataset has a held-out split), true, false.", choices=AUTO)
    every: int = setting(0, "Steps between evaluations; 0: ten over the run, and after the first step.")
    prompts: int = setting(32, "Held-out prompts evaluated, the same each time.", minimum=1)
    max_completion_length: int = setting(0, "Tokens per held-out answer; 0: training's max_completion_length.")


@dataclass
class AdaptiveSection:
    enabled: bool = setting(True, "Steer the reward weights towards `target` success rates while training.")
    target: float = setting(0.5, "The success rate the weights steer towards.", maximum=1)
    rate: float = setting(0.5, "Multiplicative step per logged step.")
    threshold: float = setting(0.5, "A completion succeeds on a reward when it scores at least this.")
    min_factor: float = setting(0.25, "Lowest weight, relative to the configured one.")
    max_factor: float = setting(4.0, "Highest weight, relative to the configured one.")


# each section's dataclass, by its key in the config ("adaptive_weights" is AdaptiveSection)
SECTION_TYPES = {"model": ModelSection, "dataset": DatasetSection, "health": HealthSection, "log": LogSection,
                 "sampling": SamplingSection, "heldout": HeldoutSection, "learning": LearningSection,
                 "adaptive_weights": AdaptiveSection}
# the keys that are not a dataclass section: what each takes
OTHER_KEYS = {
    "rewards": "The rewards, each a spec: name, name:weight, name(key=value):weight, a local file's function "
               "(file.py:func), 'NAME when OTHER >= 1' (a gate), 'NAME within 30s' (a time limit), or a mapping "
               "{name, weight, params, as, when, time_limit}.",
    "stages": "Training in stages (a curriculum): a list of {name, rewards, and GRPOConfig fields for that stage}.",
    "lora": "peft LoraConfig fields (r: 16, lora_alpha: 32, lora_dropout: 0, target_modules: all-linear by default), "
            "plus merge: true (also save the merged model) and enabled: false; false or absent: full fine-tuning.",
    "environment": "A registered environment for tool calls and multi-turn rollouts (grpo envs list), with "
                   "parameters, or routes by a dataset column.",
    "tools": "Functions the model may call, each a registered tool or a local file's function (file.py:func).",
    "env": "Environment variables set before training starts ({WANDB_PROJECT: x}).",
}


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
    learning: LearningSection = field(default_factory=LearningSection)
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
    problems = Problems() if problems is None else problems
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


def check_section_values(section, name: str, problems: Problems) -> None:
    """Each value against its field's type, choices and bounds (:mod:`grpo_core.config.values`);
    a bad value is a problem and goes back to its default."""
    hints = typing.get_type_hints(type(section))
    for f in dataclasses.fields(section):
        vtype = section_type(f, hints[f.name])
        value = getattr(section, f.name)
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        problem = value_problem(f"{name}.{f.name}", value, vtype, section_range(f, vtype), default)
        if problem:
            problems.add(problem)
            problems.failed.add(f"{name}.{f.name}")  # later steps need not report its default
            setattr(section, f.name, default)
