"""The GRPOConfig of a stage, built from a parsed :class:`~grpo_core.config.schema.RunConfig`:
TRL's own ``TrlParser`` over the YAML's values, the stage's and the command line's
(typed when the config was read);
the device and logging chosen where the user did not; values TRL would only fail on
mid-run, vLLM and logging integrations checked before any model loads."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from grpo_core.base.errors import ConfigError
from grpo_core.config.overrides import grpo_fields
from grpo_core.config.removed import unknown_key
from grpo_core.config.schema import RunConfig, StageSection
from grpo_core.config.values import RANGES


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


def check_values(args) -> None:
    """A built GRPOConfig's values against the ranges TRL checks only late (after the
    config's own check, for values a stage and the command line combine into)."""
    for name, rng in RANGES.items():
        value = getattr(args, name, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not rng.holds(value):
            raise ConfigError(f"{name} is {value!r}; it must be {rng.text('a number')}"
                              + (f" ({rng.note})." if rng.note else "."))


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


__all__ = ["training_args", "training_values", "detect_device", "default_output_dir", "check_values", "check_vllm", "check_integrations"]
