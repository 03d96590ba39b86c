"""``grpo train``: the stages of a prepared run, on one model, with ``trl.GRPOTrainer``.

:mod:`grpo_core.run.prepare` checks everything that needs no model (its docstring
walks a config from the command line to TRL); :mod:`grpo_core.run.outputs` readies
output_dir on the main process; :mod:`grpo_core.run.builder` makes each stage's
trainer. Stages run in order on one model (LoRA adapter or full weights carried
over); each has its own rewards, optimizer and schedule, and its own checkpoints
under ``output_dir/<stage>/`` (a single-stage run checkpoints in ``output_dir``).

Outputs in ``output_dir``: ``checkpoint-N/`` (TRL's schedule), ``adapter/``
(LoRA) or ``model/`` (full fine-tune), ``merged/`` (``lora.merge: true``),
``config.yaml`` (resolved, re-runnable), ``metrics.jsonl``, ``health.jsonl``,
``rewards.png``, ``progress.json`` (what ``--resume`` reads), ``README.md`` (the
model card: :mod:`grpo_core.run.model_card`).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpo_core.base.errors import GrpoError
from grpo_core.checks import manifest
from grpo_core.config.schema import RunConfig
from grpo_core.run import failure, model_card, outputs
from grpo_core.run import resume as rules
from grpo_core.run.builder import build_trainer, features_of
from grpo_core.run.outputs import is_main_process
from grpo_core.run.plotting import plot_rewards
from grpo_core.run.prepare import (  # noqa: F401 - re-exported, as before
    Prepared,
    StagePlan,
    build_datasets,
    load_model,
    lora_config,
    plan,
    prepare,
)
from grpo_core.run.resume import Start
from grpo_core.runfiles import HEALTH, METRICS, PLOT, RESOLVED
from grpo_core.runfiles import rollouts as rollout_log
from grpo_core.runfiles.jsonl import read_jsonl, truncate_jsonl
from grpo_core.runfiles.metrics import run_tokens, summary
from grpo_core.runfiles.progress import last_checkpoint, write_progress


@dataclass
class TrainResult:
    output_dir: Path
    global_step: int
    interrupted: bool = False
    stages: list[dict] = field(default_factory=list)
    final_dir: Path | None = None
    merged_dir: Path | None = None
    plot: Path | None = None
    health_events: list[dict] = field(default_factory=list)
    stopped: str | None = None  # why training stopped early (non-finite values), with advice
    exit_code: int = 0  # 130 after Ctrl-C, 143 after SIGTERM, 1 after a non-finite stop


# ------------------------------------------------------------------ model helpers


def _unwrap(trainer):
    return trainer.accelerator.unwrap_model(trainer.model)


def _save_final(model, tokenizer, path: Path, trainer=None) -> None:
    """Adapter or weights + tokenizer at ``path``; through the trainer when there is
    one (it gathers sharded weights and writes on the main process only)."""
    if trainer is not None:
        trainer.save_model(str(path))
        return
    if not is_main_process():
        return
    if path.exists():
        shutil.rmtree(path)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)


def final_to_save(multi_stage: bool, trained: bool, final: Path) -> bool:
    """Whether the end of a run saves its final weights at ``final``. Every process must
    decide alike: under ZeRO-3 or FSDP saving gathers the weights from all of them, and
    one that saves alone waits for the others for ever. So the file system decides only
    where nothing trained this time (then only the main process writes): a single stage
    that trained saved them already, in every process; a multi-stage run copies its last
    stage's weights to the run's root."""
    if multi_stage:
        return True
    return not trained and not final.is_dir()


def _load_stage_weights(cfg: RunConfig, model, path: Path):
    """The model as a finished stage left it (its saved adapter or weights)."""
    if cfg.lora is not None:
        from peft import PeftModel

        if isinstance(model, PeftModel):
            model.load_adapter(str(path), adapter_name="default", is_trainable=True)
            return model
        return PeftModel.from_pretrained(model, str(path), is_trainable=True)
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(path), dtype=model.dtype)


# ------------------------------------------------------------------ run


@dataclass
class Run:
    """What the steps of :func:`run` share: the prepared run, where it writes, how it speaks."""

    p: Prepared
    precision: Any  # precision.Precision
    starts: list[Start]  # where each stage starts (grpo_core.run.resume.decide)
    progress: dict
    log: Callable[[str], None]
    stream: Any
    extra_callbacks: list
    main: bool = True
    offset: int = 0  # global steps of the stages before the current one
    carried: str | None = None  # weights a finished stage left, to load before the next one
    trainer: Any = None
    heldout: list | None = None  # held-out rows for eval/accuracy (grpo_core.run.heldout), or None

    @property
    def cfg(self) -> RunConfig:
        return self.p.cfg

    @property
    def root(self) -> Path:
        return self.p.root

    @property
    def plans(self) -> list[StagePlan]:
        return self.p.plans


def run(cfg: RunConfig, *, resume: bool | str = False, overwrite: bool = False, check: bool = True,
        log: Callable[[str], None] = print, stream=None, extra_callbacks: list | None = None,
        verbose: bool = False) -> TrainResult:
    """Train as ``cfg`` says; see the module docstring for the outputs. ``check``: run
    ``grpo check`` (gold self-test, reward-hacking probes) first and stop on a failure;
    ``verbose``: keep the libraries' progress bars."""

    main = is_main_process()
    if not main:
        log = lambda message: None  # noqa: E731 - one process speaks
    p = prepare(cfg, check=check, log=log, verbose=verbose, heldout=True)
    resume = resume or p.plans[0].args.resume_from_checkpoint or False
    dirs = [x.output_dir for x in p.plans]
    moved: list[Path] = []  # moved: where a fresh start put an earlier run
    progress = outputs.prepare(p.root, dirs, resume=resume, overwrite=overwrite, health=cfg.health.enabled, log=log,
                               moved=moved)
    try:
        result = _run(p, resume, progress, log, stream, extra_callbacks, main)
    except BaseException:
        outputs.put_back(p.root, dirs, moved, log)  # when this run left nothing --resume continues
        raise
    if result.interrupted or result.stopped:
        outputs.put_back(p.root, dirs, moved, log)
    return result


def _run(p: Prepared, resume, progress: dict, log, stream, extra_callbacks, main: bool) -> TrainResult:
    cfg = p.cfg
    # refused here, before any model loads and before config.yaml is written
    starts = outputs.on_main(lambda: rules.decide(cfg, p.plans, progress, resume, p.train_ds))
    if main and any(s.finished is None for s in starts):  # a run with nothing left to train keeps its config.yaml

        outputs.write_resolved(cfg, p.plans, p.root, p.device)
        manifest.write(p.root, manifest.build(cfg))
    model, tokenizer, precision = load_model(p, log)
    r = Run(p, precision, starts, progress, log, stream or sys.stdout, list(extra_callbacks or []), main)
    r.heldout = p.heldout
    result = TrainResult(output_dir=r.root, global_step=0)
    for i, stage in enumerate(r.plans):
        model = _run_stage(r, i, stage, model, tokenizer, result)
        if result.interrupted or result.stopped:
            break
    if r.carried:
        model = _load_stage_weights(cfg, model, Path(r.carried))
    result.plot = plot_safely(r.root, r.log) if r.main else None
    if result.interrupted or result.stopped:
        return result
    return _finish(r, model, tokenizer, result)


def _begin(r: Run, start: Start) -> None:
    """A stage as it starts: what the resume decision said (where it resumes, the settings
    changed since its checkpoint), and the logs cut back to its checkpoint (a resumed run
    writes the rest again)."""
    for line in start.lines:
        r.log(line)
    if r.main and start.checkpoint is not None:

        for name in (METRICS, HEALTH):
            truncate_jsonl(r.root / name, r.offset + start.step)
        rollout_log.truncate(r.root / rollout_log.FOLDER, r.offset + start.step)


def _stage_callbacks(r: Run, p: StagePlan) -> dict:
    from grpo_core.run import heldout, trackers

    out = _monitors(r, p)
    held = heldout.callback(r.cfg, r.p, p, r.heldout, r.offset)
    if held is not None:
        out["heldout"] = held
    tracked = trackers.callback(p.args.report_to, r.root, r.offset, warn=r.log)  # after the monitors: their events
    if tracked is not None:
        out["trackers"] = tracked
    return out


def _monitors(r: Run, p: StagePlan) -> dict:
    from grpo_core.run.callbacks import (
        AdaptiveWeightsCallback,
        HealthCallback,
        InterruptCallback,
        MetricsCallback,
    )

    name, cfg = p.section.name, r.cfg
    out = {"metrics": MetricsCallback(r.root / METRICS, name, r.offset, stream=r.stream),
           "interrupt": InterruptCallback()}
    if cfg.health.enabled:
        out["health"] = HealthCallback(cfg.health, r.root / HEALTH, name, r.offset,
                                             warn=lambda m: r.log(f"warning: {m}"))
    if cfg.adaptive is not None:
        out["adaptive"] = AdaptiveWeightsCallback(cfg.adaptive, [f.__name__ for f in p.funcs], p.weights)
    return out


def _make_trainer(r: Run, p: StagePlan, model, tokenizer, callbacks: dict, record: dict):
    """The stage's trainer; its checkpoints record ``record`` (the resume decision's, with
    the data's fingerprint)."""
    features = features_of(r.p, p, precision=r.precision, offset=r.offset, record=record)
    return build_trainer(r.p, p, model, tokenizer, callbacks=[*callbacks.values(), *r.extra_callbacks], log=r.log,
                         report=lambda event: _report_nonfinite(r, p, event), features=features)


def _report_nonfinite(r: Run, p: StagePlan, event) -> None:
    """One line in health.jsonl and a warning, for every dropped update."""
    trainer = r.trainer
    action = "stopping" if trainer is not None and trainer.guard.stop is event else "update dropped, going on"
    message = f"{event.describe()}; {action}" + (" (weights from before the last update restored)" if event.restored else "")
    r.log(f"warning: {message}")
    if r.main and r.cfg.health.enabled:
        record = {"step": r.offset + event.step, "stage": p.section.name, "check": "nonfinite",
                  "metric": event.metric, "value": None if event.value != event.value else event.value,
                  "learning_rate": event.learning_rate, "restored": event.restored,
                  "weights_of": r.offset + event.weights_of, "message": message}
        with open(r.root / HEALTH, "a") as f:
            f.write(json.dumps(record) + "\n")


def _run_stage(r: Run, i: int, p: StagePlan, model, tokenizer, result: TrainResult):
    """Train one stage (or skip it when a resumed run already finished it); the model after it."""
    name, start = p.section.name, r.starts[i]
    if start.finished is not None:
        r.offset += start.finished
        r.carried = start.final
        result.global_step = r.offset
        result.stages.append({"name": name, "steps": start.finished, "skipped": True})
        for line in start.lines:
            r.log(line)
        return model
    if r.carried:
        model = _load_stage_weights(r.cfg, model, Path(r.carried))
        r.carried = None
    _begin(r, start)
    callbacks = _stage_callbacks(r, p)
    r.trainer = trainer = _make_trainer(r, p, model, tokenizer, callbacks, start.record)
    trainer.create_model_card = lambda *args, **kwargs: None  # TRL's generic card: grpo writes its own (_finish)
    if r.cfg.multi_stage:
        rw = ", ".join(f"{f.__name__}:{w:g}" for f, w in zip(p.funcs, p.weights))
        r.log(f"Stage {i + 1}/{len(r.plans)} '{name}': {p.args.max_steps} steps, rewards {rw}.")
    _train(r, trainer, start.checkpoint, callbacks["interrupt"])
    model = _unwrap(trainer)
    steps = trainer.state.global_step
    if "health" in callbacks:
        result.health_events.extend(callbacks["health"].events)
    result.global_step = r.offset + steps
    diverged = callbacks["health"].stop if "health" in callbacks else None
    if callbacks["interrupt"].requested or trainer.guard.stop is not None or diverged:
        _report_stop(r, p, trainer, callbacks["interrupt"], result, diverged)
        return model
    r.offset += steps
    result.stages.append({"name": name, "steps": steps})
    final = p.output_dir / "final" if r.cfg.multi_stage else r.root / ("adapter" if r.cfg.lora is not None else "model")
    _save_final(model, tokenizer, final, trainer)
    r.progress["stages"][name] = {"done": True, "steps": steps, "final": str(final)}
    if r.main:
        write_progress(r.root, r.progress)
    return model


def _train(r: Run, trainer, ckpt: Path | None, interrupt) -> None:
    """``trainer.train`` with Ctrl-C handled at step boundaries; a crash inside a
    step leaves a checkpoint of the last completed step."""
    interrupt.install()
    try:
        trainer.train(resume_from_checkpoint=str(ckpt) if ckpt else None)
    except Exception as exc:
        saved = failure.after_crash(trainer, exc, r.cfg.resume_command())
        if isinstance(exc, GrpoError):
            raise type(exc)(f"{exc}\n{saved}") from None
        r.log(saved)
        raise
    finally:
        interrupt.uninstall()


def _report_stop(r: Run, p: StagePlan, trainer, interrupt, result: TrainResult, diverged: dict | None = None) -> None:
    """The message for a run that ended before its last step, with what to do next."""
    ck = last_checkpoint(p.output_dir)
    again = r.cfg.resume_command()
    if interrupt.requested:
        result.interrupted = True
        result.exit_code = interrupt.exit_code
        r.log(f"Saved {ck} at step {result.global_step}. Continue with: {again}")
        return
    if diverged is not None and trainer.guard.stop is None:
        result.exit_code = 1
        result.stopped = (f"Training stopped (health.on_divergence: stop) at step {diverged['step']}: "
                          f"{diverged['message']} Saved {ck}. Continue with: {again}")
        r.log(result.stopped)
        return
    event = trainer.guard.stop
    if event.saves_checkpoint:
        how = ("restored from before the update" if event.restored else f"step {event.step}'s update dropped")
        of = "the starting weights" if event.weights_of == 0 else f"the weights as step {r.offset + event.weights_of} left them"
        saved = f"Saved {ck}: the last sound state, {of} ({how}). Continue with: {again}"
    else:
        bad = "blown up" if event.metric == "jump" else "non-finite"
        keep = "" if r.cfg.health.snapshot is True else " (health.snapshot: true keeps a copy to restore)"
        saved = (f"The weights are {bad} and were not saved{keep}; the last checkpoint is {ck}: {again}"
                 if ck is not None else
                 f"The weights are {bad} and were not saved{keep}; no earlier checkpoint exists (save_steps): "
                 f"start over.")
    result.exit_code = 1
    result.stopped = f"Training stopped: {event.describe()}. {saved}\n{_nonfinite_advice(r, p)}"
    r.log(result.stopped)


def _nonfinite_advice(r: Run, p: StagePlan) -> str:
    a, prec = p.args, r.precision
    tips = [f"a lower learning_rate (now {a.learning_rate:g})"]
    if prec.trainable != "float32":
        tips.append(f"float32 trainable weights (model.dtype: auto; now {prec.trainable})")
    if not a.max_grad_norm or a.max_grad_norm <= 0 or a.max_grad_norm > 1:
        tips.append(f"max_grad_norm: 1.0 (now {a.max_grad_norm})")
    tips.append("health.on_nonfinite: skip, to drop such updates and go on")
    return "Try: " + "; ".join(tips) + "."


def _finish(r: Run, model, tokenizer, result: TrainResult) -> TrainResult:
    """The final adapter or model, optionally merged and pushed; the closing line."""
    cfg, root, trainer = r.cfg, r.root, r.trainer
    final = root / ("adapter" if cfg.lora is not None else "model")
    if final_to_save(cfg.multi_stage, trainer is not None, final):
        _save_final(model, tokenizer, final, trainer)
    result.final_dir = final
    if r.main:
        model_card.write(root, r.p, result.global_step, r.log)
    if trainer is not None and r.plans[-1].args.push_to_hub:
        trainer.push_to_hub()
    if cfg.merge and r.main:
        merged = model.merge_and_unload()
        _save_final(merged, tokenizer, root / "merged")
        result.merged_dir = root / "merged"
    r.log(f"Done: {result.global_step} steps. Outputs in {root}: {final.name}/"
          + (", merged/" if result.merged_dir else "")
          + f", {METRICS}, {PLOT}, {RESOLVED}"
          + (f", {HEALTH} ({len(result.health_events)} warnings)" if result.health_events else "") + ".")
    tokens = summary(*run_tokens(read_jsonl(root / METRICS)))
    if tokens:
        r.log(tokens)
    r.log(f"See it in the browser (curves, every completion with its rewards and advantage): grpo view {root}")
    return result


def plot_safely(root: Path, log: Callable) -> Path | None:
    try:
        return plot_rewards(root / METRICS, root / PLOT, title=f"GRPO rewards: {root.name}")
    except Exception as exc:  # a plotting problem must never cost the trained model
        log(f"warning: could not draw {PLOT}: {type(exc).__name__}: {exc}")
        return None


__all__ = ["run", "TrainResult", "GrpoError", "final_to_save"]
