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

- the data is compared by its content too: a fingerprint of the training rows as
  training sees them (:func:`fingerprint`), so a data file edited in place (same
  path, same row count) is refused, not trained on silently.

Which stage starts where is one decision (:func:`decide`), made before any model
loads: a finished stage is skipped, or extended when its ``max_steps`` grew (as
TRL's ``resume_from_checkpoint`` with a larger ``max_steps`` continues); an
unfinished one continues from its last checkpoint (or the one given), or starts.
Two pure functions decide (:func:`compare`, :func:`starts_of`); their tests are
tables of cases.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from grpo_core.base.errors import ConfigError
from grpo_core.base.tables import number
from grpo_core.runfiles.progress import checkpoint_step, last_checkpoint
from grpo_core.trainer.exact_resume import SETTINGS
from grpo_core.trainer.exact_resume import write_settings as write

# GRPOConfig fields that may change on --resume, and those that may not
CHANGEABLE = ("learning_rate", "lr_scheduler_type", "warmup_steps", "max_grad_norm", "beta", "max_steps",
              "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "max_completion_length")
FIXED = ("num_generations", "per_device_train_batch_size", "gradient_accumulation_steps", "steps_per_generation",
         "num_iterations", "seed")
# the dataset section's fields that define the data a checkpoint's position is in
DATASET = ("name", "params", "split", "system_prompt", "few_shot", "answer_template")
# learning-rate schedules whose rate at a step does not depend on max_steps
FLAT = ("constant", "constant_with_warmup", "reduce_lr_on_plateau")


def settings_of(cfg, plan, rows: int | None = None, fingerprint: str | None = None) -> dict[str, Any]:
    """What a checkpoint records of the run that writes it (``rows``: the training
    split's row count; ``fingerprint``: :func:`fingerprint` of its rows)."""
    a = plan.args
    out: dict[str, Any] = {name: _plain(getattr(a, name, None)) for name in CHANGEABLE + FIXED}
    out["model"] = cfg.model.id
    out["lora"] = None if cfg.lora is None else {k: _plain(cfg.lora.get(k)) for k in ("r", "lora_alpha", "target_modules")}
    out["dataset"] = {k: _plain(getattr(cfg.dataset, k)) for k in DATASET} | {"rows": rows}
    if fingerprint is not None:
        out["dataset"]["fingerprint"] = fingerprint
    out["reward_weights"] = {f.__name__: float(w) for f, w in zip(plan.funcs, plan.weights)}
    out["reward_params"] = {f.__name__: _plain(getattr(f, "params", None) or {}) for f in plan.funcs}
    out["health"] = asdict(cfg.health)
    out["sampling"] = asdict(cfg.sampling)
    return json.loads(json.dumps(out, default=str))  # as read back from the file: tuples are lists


def fingerprint(ds) -> str:
    """A hash of the training rows as training sees them (every column, prompts built):
    another file's rows, or a file edited in place, give another one. One pass over the
    rows (measured: 7,473 GSM8K rows in about 0.1 s)."""
    h = hashlib.sha256(json.dumps(sorted(ds.column_names)).encode())
    for batch in ds.with_format(None).iter(batch_size=1024):
        h.update(json.dumps(batch, sort_keys=True, ensure_ascii=False, default=_value).encode())
    return h.hexdigest()[:16]


def _value(value: Any) -> str:
    """A cell JSON cannot write, by its content (never its address)."""
    data = value if isinstance(value, (bytes, bytearray)) else getattr(value, "tobytes", lambda: None)()
    if data is not None:
        return f"{type(value).__name__}:{hashlib.sha256(data).hexdigest()}"
    return f"{type(value).__name__}:{value}"


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
    """The settings of ``now`` against those ``saved`` with the checkpoint of ``step``.
    What the checkpoint did not record (an older grpo's) is not compared."""
    changes = Changes()
    for name in ("model", "lora", *FIXED):
        if name in saved and saved[name] != now.get(name):
            changes.refused.append(f"{name}: {_show(saved[name])} in the checkpoint, {_show(now.get(name))} now")
    changes.refused += _data_changes(saved.get("dataset"), now.get("dataset") or {})
    for name in CHANGEABLE:
        if name in saved and saved[name] != now.get(name):
            changes.applied.append(f"{name} {_show(saved[name])} -> {_show(now.get(name))} from step {step}"
                                   + _schedule_note(name, now))
    for key, label in (("reward_weights", "reward weight "), ("reward_params", "reward parameters "),
                       ("health", "health."), ("sampling", "sampling.")):
        changes.applied += _changed(saved.get(key), now.get(key) or {}, label, step)
    return changes


def _data_changes(old: dict | None, new: dict) -> list[str]:
    """The dataset settings that differ, each by name; the rows' fingerprint only when
    none of them does (the same settings giving other rows: a file edited in place)."""
    old = old or {}
    names = [k for k in old if k != "fingerprint" and old[k] != new.get(k)]
    out = [f"dataset.{k}: {_show(old[k])} in the checkpoint, {_show(new.get(k))} now" for k in names]
    if not out and "fingerprint" in old and old["fingerprint"] != new.get("fingerprint"):
        out.append(f"dataset content: the rows' fingerprint is {old['fingerprint']} in the checkpoint, "
                   f"{new.get('fingerprint')} now, with the same dataset settings and {new.get('rows')} rows "
                   f"(a data file edited in place, or a hub dataset's new revision)")
    return out


def _schedule_note(name: str, now: dict) -> str:
    """What a new max_steps does to a schedule that decays over the steps."""
    schedule = now.get("lr_scheduler_type")
    if name != "max_steps" or schedule in FLAT:
        return ""
    return (f" (the {schedule} learning-rate schedule is now that of a run of {_show(now.get(name))} steps, as "
            f"with TRL's resume_from_checkpoint; lr_scheduler_type: constant keeps one rate)")


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


# ------------------------------------------------------------------ which stage starts where


@dataclass(frozen=True)
class Found:
    """What output_dir holds of one stage, and its max_steps now."""

    name: str
    max_steps: int
    finished: int | None = None  # the steps it finished with (progress.json), or None
    final: str | None = None  # a finished stage's weights
    checkpoint: Path | None = None  # its last checkpoint, or the one given with --resume
    step: int = 0  # that checkpoint's step
    given: bool = False  # the checkpoint was named on the command line

    @property
    def began(self) -> bool:
        return self.finished is not None or self.checkpoint is not None


@dataclass
class Start:
    """How one stage starts: skipped (``finished``: kept as it is), from ``checkpoint``
    (at ``step``), or from the beginning; ``record``: the settings its checkpoints record."""

    name: str
    record: dict = field(default_factory=dict)
    checkpoint: Path | None = None
    step: int = 0
    finished: int | None = None
    final: str | None = None
    lines: list[str] = field(default_factory=list)  # said when it starts


def starts_of(found: list[Found]) -> list[Start]:
    """Where each stage starts, or a ConfigError (one pure function; see the module
    docstring). A finished stage grows only while no later stage has trained on its
    weights: otherwise the later stage's training would no longer follow from it."""
    out = []
    for i, f in enumerate(found):
        later = next((g.name for g in found[i + 1:] if g.began), None)
        if f.finished is None:
            stage = f" stage {f.name!r}" if len(found) > 1 else ""
            lines = [f"Resuming{stage} from {f.checkpoint} (step {f.step})."] if f.checkpoint is not None else []
            out.append(Start(f.name, checkpoint=f.checkpoint, step=f.step, lines=lines))
        elif (f.given and (f.max_steps <= 0 or f.step < f.max_steps)) or 0 < f.finished < f.max_steps:
            out.append(_extend(f, f.finished, later))
        else:
            out.append(Start(f.name, finished=f.finished, final=f.final, lines=[_skipping(f, f.finished)]))
    return out


def _extend(f: Found, finished: int, later: str | None) -> Start:
    """A finished stage (``finished``: its steps) trained on: from the checkpoint given, or
    its last one to a larger max_steps."""
    what = f"--resume {f.checkpoint}" if f.given else f"max_steps {f.max_steps}"
    if later is not None:
        raise ConfigError(
            f"Stage {f.name!r} finished with {_steps(finished)} and stage {later!r} has trained on from its "
            f"weights since, so it cannot train again ({what}). Keep its max_steps at {finished} (--max_steps on the "
            f"command line sets every stage: set the last stage's in the config instead), or start a new run.")
    if f.checkpoint is None:
        raise ConfigError(
            f"Stage {f.name!r} finished with {_steps(finished)} and left no checkpoint to continue from "
            f"(save_strategy: no), so it cannot train to {what}. Start a new run (without --resume); with "
            f"save_strategy: steps (the default) a finished run can be extended.")
    why = "the checkpoint named with --resume" if f.given else f"max_steps {f.max_steps}"
    again = ("" if f.step >= finished else f"; step {finished} trains again" if f.step + 1 == finished
             else f"; steps {f.step + 1}-{finished} train again")
    return Start(f.name, checkpoint=f.checkpoint, step=f.step,
                 lines=[f"Stage {f.name!r} finished with {_steps(finished)}; {why}: resuming from {f.checkpoint} "
                        f"(step {f.step}){again}."])


def _steps(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"


def _skipping(f: Found, finished: int) -> str:
    if f.max_steps > 0 and f.max_steps < finished:
        return f"Stage {f.name!r} already finished ({_steps(finished)}; max_steps {f.max_steps} now); skipping."
    return (f"Stage {f.name!r} already finished ({_steps(finished)}); skipping. To train it longer, raise max_steps "
            f"(--resume --max_steps N).")


def decide(cfg, plans: list, progress: dict, resume: bool | str, data) -> list[Start]:
    """Where each stage of ``plans`` starts, before any model loads: a ConfigError for a
    refused resume (a setting a checkpoint cannot take, another dataset or its rows
    changed, a finished stage that cannot grow), each named. ``data``: the training split."""
    rows, prints = len(data), fingerprint(data)
    records = [settings_of(cfg, p, rows, prints) for p in plans]
    if not resume:
        return [Start(p.section.name, record) for p, record in zip(plans, records)]
    given = given_checkpoint(resume, plans)
    found = [_found(p, progress, given[1] if given and given[0] == i else None) for i, p in enumerate(plans)]
    starts = starts_of(found)
    refused = []
    for start, record in zip(starts, records):
        start.record = record
        if start.checkpoint is None or start.finished is not None:
            continue
        saved = read(start.checkpoint)
        if saved is not None:
            changes = compare(saved, record, start.step)
            if changes.refused:
                refused.append(changes.error(start.checkpoint))
            start.lines += [f"  {line}" for line in changes.applied]
    if refused:
        raise ConfigError("\n".join(refused))
    return starts


def _found(plan, progress: dict, given: Path | None) -> Found:
    name = plan.section.name
    done = progress.get("stages", {}).get(name, {})
    finished = int(done.get("steps", 0)) if done.get("done") else None
    ckpt = given or last_checkpoint(plan.output_dir)
    return Found(name, int(plan.args.max_steps), finished, done.get("final"), ckpt,
                 checkpoint_step(ckpt) if ckpt is not None else 0, given is not None)


def given_checkpoint(resume: bool | str, plans: list) -> tuple[int, Path] | None:
    """The checkpoint ``--resume PATH`` names, and the index of the stage it is of (None:
    the last one of each stage). A relative name is looked up in output_dir too."""
    if not isinstance(resume, str) or resume in ("true", "True"):
        return None
    path = next((c for c in (Path(resume), *(p.output_dir / resume for p in plans)) if c.is_dir()), None)
    if path is None:
        raise ConfigError(f"--resume {resume}: no such checkpoint directory (looked here and in "
                          f"{plans[0].output_dir}).")
    if not (path / "trainer_state.json").is_file():
        raise ConfigError(f"--resume {resume}: {path} is not a checkpoint (no trainer_state.json); the checkpoints "
                          f"are the checkpoint-N folders in output_dir.")
    for i, p in enumerate(plans):
        if path.resolve().parent == p.output_dir.resolve():
            return i, path
    if len(plans) == 1:
        return 0, path  # a checkpoint from elsewhere, as TRL's resume_from_checkpoint takes it
    raise ConfigError(f"--resume {resume}: not a checkpoint of a stage of this config (their folders: "
                      f"{', '.join(str(p.output_dir) for p in plans)}).")


__all__ = ["compare", "settings_of", "fingerprint", "read", "write", "decide", "starts_of", "given_checkpoint",
           "Changes", "Found", "Start", "SETTINGS", "CHANGEABLE", "FIXED", "DATASET"]
