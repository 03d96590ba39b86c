"""What ``--resume`` does with settings changed since the checkpoint.

A checkpoint records the settings that trained it (``grpo_settings.json``). On
``--resume`` the new config is compared with them, setting by setting:

- settings that can change mid-run take effect from the checkpoint's step, each
  named in one line (``learning_rate 1e+30 -> 0.001 from step 3``): the learning
  rate and its schedule, ``max_grad_norm``, ``beta``, ``max_steps``, reward
  weights and the health settings. (Without this, the restored scheduler would
  keep training at the old learning rate, whatever the command line said.)
  Sampling settings (``temperature``, ``top_p``, ..., ``max_completion_length``,
  the ``sampling:`` section) and reward parameters are taken the same way.
- settings that cannot (the model, the LoRA shape, ``num_generations``, the batch
  shape, the ``seed``, the dataset: its name, parameters, split, prompt and row
  count) are an error naming each, old and new: the checkpoint's weights,
  optimizer state and data position only fit the run that wrote them (a data
  position on other data, or another seed's order, is another run's).

One pure function decides (:func:`compare`); its test is a table of cases.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from grpo_core.base.tables import number
from grpo_core.trainer.exact_resume import SETTINGS
from grpo_core.trainer.exact_resume import write_settings as write

# GRPOConfig fields that may change on --resume, and those that may not
CHANGEABLE = ("learning_rate", "lr_scheduler_type", "warmup_steps", "max_grad_norm", "beta", "max_steps",
              "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "max_completion_length")
FIXED = ("num_generations", "per_device_train_batch_size", "gradient_accumulation_steps", "steps_per_generation",
         "num_iterations", "seed")
# the dataset section's fields that define the data a checkpoint's position is in
DATASET = ("name", "params", "split", "system_prompt", "few_shot", "answer_template")


def settings_of(cfg, plan, rows: int | None = None) -> dict[str, Any]:
    """What a checkpoint records of the run that writes it (``rows``: the training
    split's row count)."""
    a = plan.args
    out: dict[str, Any] = {name: _plain(getattr(a, name, None)) for name in CHANGEABLE + FIXED}
    out["model"] = cfg.model.id
    out["lora"] = None if cfg.lora is None else {k: _plain(cfg.lora.get(k)) for k in ("r", "lora_alpha", "target_modules")}
    out["dataset"] = {k: _plain(getattr(cfg.dataset, k)) for k in DATASET} | {"rows": rows}
    out["reward_weights"] = {f.__name__: float(w) for f, w in zip(plan.funcs, plan.weights)}
    out["reward_params"] = {f.__name__: _plain(getattr(f, "params", None) or {}) for f in plan.funcs}
    out["health"] = asdict(cfg.health)
    out["sampling"] = asdict(cfg.sampling)
    return json.loads(json.dumps(out, default=str))  # as read back from the file: tuples are lists


def _plain(value: Any) -> Any:
    value = getattr(value, "value", value)  # enums (lr_scheduler_type)
    if isinstance(value, (list, tuple, set)):
        return sorted(map(str, value)) if isinstance(value, set) else [getattr(v, "value", v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
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
    old_d, new_d = saved.get("dataset"), now.get("dataset") or {}
    for name in sorted(set(old_d or {}) | set(new_d)) if old_d is not None else ():
        if old_d.get(name) != new_d.get(name):
            changes.refused.append(f"dataset.{name}: {_show(old_d.get(name))} in the checkpoint, "
                                   f"{_show(new_d.get(name))} now")
    for name in CHANGEABLE:
        if name in saved and saved[name] != now.get(name):
            changes.applied.append(f"{name} {_show(saved[name])} -> {_show(now.get(name))} from step {step}")
    for key, label in (("reward_weights", "reward weight "), ("reward_params", "reward parameters "),
                       ("health", "health."), ("sampling", "sampling.")):
        changes.applied += _changed(saved.get(key), now.get(key) or {}, label, step)
    return changes


def _changed(old: dict | None, new: dict, label: str, step: int) -> list[str]:
    """One line per key of a recorded section whose value differs (none when the
    checkpoint did not record the section)."""
    if old is None:
        return []
    return [f"{label}{name} {_show(old.get(name, 'absent'))} -> {_show(new.get(name, 'absent'))} from step {step}"
            for name in sorted(set(old) | set(new)) if old.get(name) != new.get(name)]


def _show(value: Any) -> str:
    return number(value, 6, missing=str(value))


def read(checkpoint: Path) -> dict | None:
    path = Path(checkpoint) / SETTINGS
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # a checkpoint from before grpo recorded its settings: nothing to compare


__all__ = ["compare", "settings_of", "read", "write", "Changes", "SETTINGS", "CHANGEABLE", "FIXED", "DATASET"]
