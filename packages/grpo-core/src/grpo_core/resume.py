"""What ``--resume`` does with settings changed since the checkpoint.

A checkpoint records the settings that trained it (``grpo_settings.json``). On
``--resume`` the new config is compared with them, setting by setting:

- settings that can change mid-run take effect from the checkpoint's step, each
  named in one line (``learning_rate 1e+30 -> 0.001 from step 3``): the learning
  rate and its schedule, ``max_grad_norm``, ``beta``, ``max_steps``, reward
  weights and the health settings. (Without this, the restored scheduler would
  keep training at the old learning rate, whatever the command line said.)
- settings that cannot (the model, the LoRA shape, ``num_generations``, the batch
  shape) are an error naming each, old and new: the checkpoint's weights,
  optimizer state and data position only fit the run that wrote them.

One pure function decides (:func:`compare`); its test is a table of cases.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SETTINGS = "grpo_settings.json"

# GRPOConfig fields that may change on --resume, and those that may not
CHANGEABLE = ("learning_rate", "lr_scheduler_type", "warmup_steps", "max_grad_norm", "beta", "max_steps")
FIXED = ("num_generations", "per_device_train_batch_size", "gradient_accumulation_steps", "steps_per_generation",
         "num_iterations")


def settings_of(cfg, plan) -> dict[str, Any]:
    """What a checkpoint records of the run that writes it."""
    from dataclasses import asdict

    a = plan.args
    out: dict[str, Any] = {name: _plain(getattr(a, name, None)) for name in CHANGEABLE + FIXED}
    out["model"] = cfg.model.id
    out["lora"] = None if cfg.lora is None else {k: _plain(cfg.lora.get(k)) for k in ("r", "lora_alpha", "target_modules")}
    out["reward_weights"] = {f.__name__: float(w) for f, w in zip(plan.funcs, plan.weights)}
    out["health"] = asdict(cfg.health)
    return out


def _plain(value: Any) -> Any:
    value = getattr(value, "value", value)  # enums (lr_scheduler_type)
    if isinstance(value, (list, tuple, set)):
        return sorted(map(str, value)) if isinstance(value, set) else [getattr(v, "value", v) for v in value]
    return value


@dataclass
class Changes:
    applied: list[str] = field(default_factory=list)  # one line each, for the log
    refused: list[str] = field(default_factory=list)  # settings a resume cannot change

    def error(self, checkpoint: Path) -> str:
        lines = "\n".join(f"  - {r}" for r in self.refused)
        return (f"--resume from {checkpoint}: these settings differ from the run that wrote the checkpoint and "
                f"cannot change mid-run:\n{lines}\nPut them back, or start a new run (without --resume).")


def compare(saved: dict, now: dict, step: int) -> Changes:
    """The settings of ``now`` against those ``saved`` with the checkpoint of ``step``."""
    changes = Changes()
    for name in ("model", "lora", *FIXED):
        if name in saved and saved[name] != now.get(name):
            changes.refused.append(f"{name}: {_show(saved[name])} in the checkpoint, {_show(now.get(name))} now")
    for name in CHANGEABLE:
        if name in saved and saved[name] != now.get(name):
            changes.applied.append(f"{name} {_show(saved[name])} -> {_show(now.get(name))} from step {step}")
    old_w, new_w = saved.get("reward_weights") or {}, now.get("reward_weights") or {}
    for name in sorted(set(old_w) | set(new_w)):
        if old_w.get(name) != new_w.get(name):
            changes.applied.append(f"reward weight {name} {_show(old_w.get(name, 'absent'))} -> "
                                   f"{_show(new_w.get(name, 'absent'))} from step {step}")
    old_h, new_h = saved.get("health") or {}, now.get("health") or {}
    for name in sorted(set(old_h) | set(new_h)):
        if old_h.get(name) != new_h.get(name):
            changes.applied.append(f"health.{name} {_show(old_h.get(name))} -> {_show(new_h.get(name))} "
                                   f"from step {step}")
    return changes


def _show(value: Any) -> str:
    from .tables import number

    return number(value, 6, missing=str(value))


def read(checkpoint: Path) -> dict | None:
    path = Path(checkpoint) / SETTINGS
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # a checkpoint from before grpo recorded its settings: nothing to compare


def write(folder: Path, settings: dict) -> None:
    (Path(folder) / SETTINGS).write_text(json.dumps(settings, indent=2, default=str) + "\n")


__all__ = ["compare", "settings_of", "read", "write", "Changes", "SETTINGS", "CHANGEABLE", "FIXED"]
