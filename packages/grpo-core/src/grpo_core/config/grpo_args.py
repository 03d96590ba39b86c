"""The GRPOConfig of a stage, built from a parsed :class:`~grpo_core.config.schema.RunConfig`:
TRL's own ``TrlParser`` over the YAML's values, the stage's and the command line's
(typed when the config was read);
the device and logging chosen where the user did not; values TRL would only fail on
mid-run, vLLM and logging integrations checked before any model loads."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from grpo_core.base.errors import ConfigError
from grpo_core.config.overrides import grpo_fields
from grpo_core.config.removed import unknown_key
from grpo_core.config.schema import RunConfig, StageSection


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
    values.update(cfg.cli)
    _current_names(values)
    if output_dir is not None:
        values["output_dir"] = output_dir
    if reward_weights is None:
        reward_weights = [spec.weight for spec in stage.rewards]
    values["reward_weights"] = list(reward_weights)

    parser = TrlParser([GRPOConfig])
    unused = parser.set_defaults_with_config(**values)
    if unused:
        raise unknown_key(unused[0], "", sorted(grpo_fields()))
    try:
        (args,) = parser.parse_args_into_dataclasses(args=[])
    except SystemExit:
        raise ConfigError("could not read the training options (see the message above).") from None
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"invalid training options: {exc}") from None
    if output_dir is not None:
        args.output_dir = output_dir
    args.reward_weights = list(reward_weights)
    check_values(args)
    check_vllm(args)
    check_integrations(args)
    return args


# transformers 5 renamed these; TRL still defaults the old name (gradient_checkpointing: true), which
# warns on every run: the value goes under the current name (set both: the current one wins)
_RENAMED = {"gradient_checkpointing": "activation_checkpointing",
            "gradient_checkpointing_kwargs": "activation_checkpointing_kwargs"}


def _current_names(values: dict) -> None:
    from trl import GRPOConfig

    defaults = {f.name: f.default for f in __import__("dataclasses").fields(GRPOConfig)}
    for old, new in _RENAMED.items():
        if new not in defaults:
            continue  # a transformers before the rename
        value = values.pop(old, defaults.get(old))
        if values.get(new) is None and value is not None:
            values[new] = value


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
    "num_generations": (lambda v: v >= 2, "a whole number >= 2 (GRPO compares the completions of a prompt)"),
    "num_generations_eval": (lambda v: v is None or v >= 1, "a whole number >= 1, or null (num_generations)"),
    "per_device_eval_batch_size": (lambda v: v >= 1, "a whole number >= 1"),
    "generation_batch_size": (lambda v: v is None or v >= 1, "a whole number >= 1, or null"),
    "steps_per_generation": (lambda v: v is None or v >= 1, "a whole number >= 1, or null"),
}
_INTEGERS = {"max_completion_length", "per_device_train_batch_size", "gradient_accumulation_steps", "seed",
             "num_generations", "num_generations_eval", "per_device_eval_batch_size", "generation_batch_size",
             "steps_per_generation"}


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
    if importlib.util.find_spec("vllm") is None:
        raise ConfigError(
            "use_vllm: true needs vLLM, which is not installed: pip install vllm "
            "(a GPU is required). Or set use_vllm: false to generate with transformers."
        )
    if mode == "server":
        port = getattr(args, "vllm_server_port", 8000)
        if not isinstance(port, int) or not 0 < port < 65536:
            raise ConfigError(f"vllm_server_port {port!r} is not a TCP port.")


# report_to integrations and the module each needs
_INTEGRATIONS = {"tensorboard": "tensorboard", "wandb": "wandb", "mlflow": "mlflow", "trackio": "trackio",
                 "comet_ml": "comet_ml", "clearml": "clearml", "swanlab": "swanlab", "dvclive": "dvclive",
                 "neptune": "neptune", "codecarbon": "codecarbon", "azure_ml": "azureml"}


def check_integrations(args) -> None:
    """``report_to: tensorboard`` without tensorboard installed fails after the model
    loads; say so now."""
    for name in getattr(args, "report_to", None) or []:
        module = _INTEGRATIONS.get(name)
        if module and importlib.util.find_spec(module) is None:
            raise ConfigError(f"report_to {name} needs the {module} package, which is not installed: "
                              f"pip install {module.replace('_', '-')}, or leave {name} out of report_to.")


# ------------------------------------------------------------------ the batch shape

# GRPOConfig's defaults (TRL 1.16) for the values that shape a batch; a test holds them to TRL's
SHAPE_DEFAULTS = {"per_device_train_batch_size": 8, "gradient_accumulation_steps": 1, "num_generations": 8,
                  "num_generations_eval": None, "per_device_eval_batch_size": 8, "eval_strategy": "no",
                  "generation_batch_size": None, "steps_per_generation": None}
_OPTIONAL = ("num_generations_eval", "generation_batch_size", "steps_per_generation")


def process_count() -> int:
    """The processes of this run: accelerate launch and torchrun set WORLD_SIZE; 1 without them."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def shape_values(*sources: dict) -> dict | None:
    """The batch-shape values of ``sources`` (later ones win) over GRPOConfig's defaults;
    None when one is not a whole number (check_values reports that one)."""
    values = dict(SHAPE_DEFAULTS)
    for source in sources:
        values.update({k: v for k, v in source.items() if k in values})
    if str(getattr(values["eval_strategy"], "value", values["eval_strategy"])) not in ("no", "steps", "epoch"):
        return None
    whole = [k for k in values if k != "eval_strategy" and not (k in _OPTIONAL and values[k] is None)]
    return values if all(_whole(values[k]) for k in whole) and values["num_generations"] >= 2 else None


def generation_batch(v: dict, procs: int) -> tuple[int, int]:
    """(generation_batch_size, steps_per_generation) as TRL derives them (the latter 0 when
    an explicit generation_batch_size is no multiple of the global batch)."""
    per_step = v["per_device_train_batch_size"] * procs
    if v["generation_batch_size"] is None:
        steps = v["steps_per_generation"] or v["gradient_accumulation_steps"]
        return per_step * steps, steps
    size = v["generation_batch_size"]
    return size, size // per_step if size % per_step == 0 else 0


def shape_faults(v: dict, procs: int, dynamic: bool = False) -> list[str]:
    """The rules of TRL 1.16's GRPOConfig.__post_init__ on the batch shape that ``v`` breaks on
    ``procs`` processes, in TRL's order ("both", "global", "eval", "groups"), and grpo's
    sampling.dynamic rule ("dynamic": each process's generation batch holds whole groups)."""
    if v["generation_batch_size"] is not None and v["steps_per_generation"] is not None:
        return ["both"]
    size, steps = generation_batch(v, procs)
    g = v["num_generations"]
    faults = []
    if not steps:
        faults.append("global")
    if str(getattr(v["eval_strategy"], "value", v["eval_strategy"])) != "no" and \
            (v["per_device_eval_batch_size"] * procs) % (v["num_generations_eval"] or g):
        faults.append("eval")
    if size % g:
        faults.append("groups")
    if dynamic and steps and (v["per_device_train_batch_size"] * steps) % g:
        faults.append("dynamic")
    return faults


def _processes(n: int) -> str:
    return f"{n} process" + ("" if n == 1 else "es")


def _generation_text(v: dict, procs: int) -> str:
    """What the generation batch of ``v`` is made of."""
    if v["generation_batch_size"] is not None:
        return "as set"
    steps = "steps_per_generation" if v["steps_per_generation"] is not None else "gradient_accumulation_steps"
    return (f"per_device_train_batch_size {v['per_device_train_batch_size']} x {_processes(procs)} x {steps} "
            f"{generation_batch(v, procs)[1]}")


def _fault_text(fault: str, v: dict, procs: int) -> str:
    """TRL's rule that ``v`` breaks on ``procs`` processes, with the values it is made of."""
    size, steps = generation_batch(v, procs)
    g, b = v["num_generations"], v["per_device_train_batch_size"]
    if fault == "both":
        return ("generation_batch_size and steps_per_generation are both set; TRL takes one of them "
                "(generation_batch_size = per_device_train_batch_size x processes x steps_per_generation): drop one.")
    if fault == "global":
        return (f"generation_batch_size {size} must be divisible by the global batch size {b * procs} "
                f"(per_device_train_batch_size {b} x {_processes(procs)}).")
    if fault == "eval":
        n, name = (v["num_generations_eval"], "num_generations_eval") if v["num_generations_eval"] else (g, "num_generations")
        return (f"the global eval batch size {v['per_device_eval_batch_size'] * procs} (per_device_eval_batch_size "
                f"{v['per_device_eval_batch_size']} x {_processes(procs)}) must be divisible by {name} {n} "
                f"(evaluation samples whole groups).")
    if fault == "groups":
        return (f"generation_batch_size {size} ({_generation_text(v, procs)}) must be divisible by num_generations "
                f"{g} (TRL samples whole groups of {g} completions, one group per prompt).")
    return (f"sampling.dynamic needs each process's generation batch (per_device_train_batch_size {b} x "
            f"steps_per_generation {steps} = {b * steps}) to hold whole groups of num_generations {g}.")


def _state(fault: str, v: dict, procs: int) -> str:
    """The batch a rule divides, and how many whole groups it holds (if it does)."""
    size, steps = generation_batch(v, procs)
    g = v["num_generations"]
    if fault == "eval":
        size, g = v["per_device_eval_batch_size"] * procs, v["num_generations_eval"] or g
        what = "eval batch"
    elif fault == "dynamic":
        size, what = v["per_device_train_batch_size"] * steps, "per-process generation batch"
    else:
        what = "generation batch"
    return f"{what} {size}" + (f" = {size // g} group{'s' * (size // g > 1)} of {g}" if size % g == 0 else "")


def _knobs(fault: str, v: dict) -> tuple[str, ...]:
    """The values whose change can mend ``fault``, most direct first."""
    steps = next((k for k in ("steps_per_generation", "generation_batch_size") if v[k] is not None),
                 "gradient_accumulation_steps")
    return {"groups": ("num_generations", "per_device_train_batch_size", steps),
            "global": ("generation_batch_size", "per_device_train_batch_size"),
            "eval": ("per_device_eval_batch_size", "num_generations_eval"),
            "dynamic": ("per_device_train_batch_size", steps, "num_generations")}.get(fault, ())


def _nearest(fault: str, v: dict, name: str, procs: int, dynamic: bool) -> int | None:
    """The value of ``name`` nearest its own (the smaller on a tie) with which the shape fits;
    None if none does (another rule broken beside ``fault`` needs another change)."""
    current = v[name] if v[name] is not None else (
        v["num_generations"] if name == "num_generations_eval" else generation_batch(v, procs)[0])
    low = 2 if name.startswith("num_generations") else 1
    fits = [n for n in range(low, 4 * max(current, 16) + 1)
            if n != current and not shape_faults({**v, name: n}, procs, dynamic)]
    return min(fits, key=lambda n: (abs(n - current), n)) if fits else None


def _launches(fault: str, v: dict, procs: int, dynamic: bool, launch: tuple | None) -> str:
    """Where else ``v`` fits as it is: the process counts a recipe was written for (``launch``:
    (who, ((processes, how), ...)), e.g. open-r1's), or the nearest count that fits."""
    fit = [p for p in range(1, 257) if p != procs and not shape_faults(v, p, dynamic)]
    if launch:
        who, counts = launch
        parts = [f"{p} processes ({how}) " + ("fit as they are" if p in fit else "do not") + f": {_state(fault, v, p)}"
                 for p, how in counts]
        text = f" As {who} launches its recipes, " + "; ".join(parts) + "."
        if any(p in fit for p, _ in counts) or not fit:
            return text
        return text + f" It fits on {fit[0]} processes: {_state(fault, v, fit[0])}."
    if not fit:
        return ""
    nearest = min(fit, key=lambda p: (abs(p - procs), p))
    return f" Or run on {nearest} processes (accelerate launch --num_processes {nearest}): {_state(fault, v, nearest)}."


def shape_problem(fault: str, v: dict, procs: int, dynamic: bool = False, launch: tuple | None = None) -> str:
    """``fault`` of ``v`` on ``procs`` processes, with the values that fit: each of the knobs
    changed alone, and the process counts (the recipe's, if it was written for some)."""
    text = _fault_text(fault, v, procs)
    if fault == "both":
        return text
    fits = []
    for name in _knobs(fault, v):
        value = _nearest(fault, v, name, procs, dynamic)
        if value is not None:
            fits.append(f"{name} {value} ({_state(fault, {**v, name: value}, procs)})")
    if fits:
        text += f" Values that fit on {_processes(procs)}: " + ", or ".join(fits) + "."
    else:
        text += f" No one of {', '.join(_knobs(fault, v))} fits alone on {_processes(procs)}: change two of them."
    return text + _launches(fault, v, procs, dynamic, launch)


def check_batch_shape(sources: list[tuple[str, list[dict]]], problems, *, procs: int | None = None,
                      dynamic: bool = False, launch: tuple | None = None) -> None:
    """Each batch-shape rule TRL's GRPOConfig (and grpo's sampling.dynamic) would refuse,
    for each ``(where, [values, ...])`` (a stage's prefix and its values, later ones winning),
    added to ``problems`` with the values that fit, before any model loads."""
    procs = procs or process_count()
    for where, layers in sources:
        values = shape_values(*layers)
        if values is None:
            continue
        for fault in shape_faults(values, procs, dynamic):
            problems.add(where + shape_problem(fault, values, procs, dynamic, launch))


def check_config_shape(cfg: RunConfig, problems, launch: tuple | None = None) -> None:
    """:func:`check_batch_shape` on each stage of ``cfg`` (the YAML's values, the stage's,
    the command line's), on the processes at hand; ``launch``: the ones its recipe was written for."""
    stages = cfg.stages or [StageSection("main", [], {})]
    sources = [(f"stage '{st.name}': " if set(st.training) & set(SHAPE_DEFAULTS) else "",
                [cfg.training, st.training, cfg.cli]) for st in stages]
    check_batch_shape(sources, problems, dynamic=bool(cfg.sampling.dynamic), launch=launch)


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


__all__ = ["training_args", "training_values", "detect_device", "default_output_dir", "check_values",
           "check_vllm", "check_integrations", "check_batch_shape", "check_config_shape", "shape_faults", "shape_problem", "shape_values",
           "process_count", "SHAPE_DEFAULTS"]
