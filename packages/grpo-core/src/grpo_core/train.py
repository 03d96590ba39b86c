"""``grpo train``: config -> rewards -> dataset -> model -> ``trl.GRPOTrainer`` -> outputs.

Everything that can fail without a model (names, weights, parameters, dataset
columns, GRPOConfig values) fails before the model loads. Stages run in order
on one model (LoRA adapter or full weights carried over); each stage has its own
rewards, optimizer and schedule, and its own checkpoints under
``output_dir/<stage>/`` (a single-stage run checkpoints in ``output_dir``).

Outputs in ``output_dir``: ``checkpoint-N/`` (TRL's schedule), ``adapter/``
(LoRA) or ``model/`` (full fine-tune), ``merged/`` (``lora.merge: true``),
``config.yaml`` (resolved, re-runnable), ``metrics.jsonl``, ``health.jsonl``,
``rewards.png``, ``progress.json`` (what ``--resume`` reads).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .config import RunConfig, StageSection, detect_device, training_args, training_values
from .errors import ConfigError, GrpoError

METRICS = "metrics.jsonl"
HEALTH = "health.jsonl"
PLOT = "rewards.png"
PROGRESS = "progress.json"
RESOLVED = "config.yaml"


@dataclass
class StagePlan:
    section: StageSection
    funcs: list
    weights: list[float]
    args: Any  # GRPOConfig
    output_dir: Path


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


# ------------------------------------------------------------------ data


def build_datasets(cfg: RunConfig):
    """``(train, eval or None)`` with TRL's conversational ``prompt`` column."""
    from .data import build_prompts, load_dataset

    d = cfg.dataset
    train = load_dataset(d.name, split=d.split, **d.params)
    few_shot = d.few_shot
    if isinstance(few_shot, int) and not isinstance(few_shot, bool) and few_shot > 0:
        few_shot = [dict(train[i]) for i in range(min(few_shot, len(train) - 1))]
        train = train.select(range(len(few_shot), len(train)))  # never train on a shown example
    train = build_prompts(train, d.system_prompt, few_shot or 0, d.answer_template)
    eval_ds = None
    if d.eval_split:
        eval_ds = load_dataset(d.name, split=d.eval_split, **{**d.params, **d.eval_params})
        eval_ds = build_prompts(eval_ds, d.system_prompt, few_shot or 0, d.answer_template)
    return train, eval_ds


# ------------------------------------------------------------------ planning


def plan(cfg: RunConfig, train_columns: list[str], *, device: str) -> list[StagePlan]:
    """Rewards composed and checked against the dataset, GRPOConfig built, per stage."""
    from .data import check_columns
    from .rewards import compose_rewards

    plans = []
    root = None
    for stage in cfg.stages:
        funcs, weights = compose_rewards(stage.rewards)
        check_columns(train_columns, funcs, f"dataset '{cfg.dataset.name}'")
        if root is None:
            root = Path(training_args(cfg, stage, device=device, reward_weights=weights).output_dir)
        out = root / stage.name if cfg.multi_stage else root
        args = training_args(cfg, stage, device=device, output_dir=str(out), reward_weights=weights)
        if args.max_steps is None or args.max_steps <= 0:
            if cfg.multi_stage:
                raise ConfigError(f"stage '{stage.name}': set max_steps (steps of this stage).")
        plans.append(StagePlan(stage, funcs, weights, args, out))
    return plans


def root_dir(cfg: RunConfig, plans: list[StagePlan]) -> Path:
    return plans[0].output_dir.parent if cfg.multi_stage else plans[0].output_dir


# ------------------------------------------------------------------ progress / resume


def _read_progress(root: Path) -> dict:
    p = root / PROGRESS
    if p.is_file():
        try:
            return json.loads(p.read_text())
        except json.JSONDecodeError:
            pass
    return {"stages": {}}


def _write_progress(root: Path, progress: dict) -> None:
    tmp = root / (PROGRESS + ".tmp")
    tmp.write_text(json.dumps(progress, indent=2) + "\n")
    tmp.replace(root / PROGRESS)


def last_checkpoint(path: Path) -> Path | None:
    if not path.is_dir():
        return None
    best = None
    for d in path.iterdir():
        if d.is_dir() and d.name.startswith("checkpoint-") and d.name[11:].isdigit():
            if (d / "trainer_state.json").is_file() and (best is None or int(d.name[11:]) > int(best.name[11:])):
                best = d
    return best


def _truncate_jsonl(path: Path, max_step: int) -> None:
    if not path.is_file():
        return
    keep = []
    for line in path.read_text().splitlines():
        try:
            if json.loads(line).get("step", 0) <= max_step:
                keep.append(line)
        except json.JSONDecodeError:
            continue
    path.write_text("".join(line + "\n" for line in keep))


def _start_fresh(root: Path, plans: list[StagePlan], log: Callable) -> None:
    removed = 0
    for p in plans:
        if p.output_dir.is_dir():
            for d in p.output_dir.glob("checkpoint-*"):
                if d.is_dir():
                    shutil.rmtree(d)
                    removed += 1
    for name in (METRICS, HEALTH, PROGRESS, PLOT):
        (root / name).unlink(missing_ok=True)
    if removed:
        log(f"Starting over in {root}: removed {removed} checkpoint(s) of an earlier run "
            f"(pass --resume to continue one instead).")


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


def is_main_process() -> bool:
    """Rank 0 under accelerate/torchrun (files are written once), else True."""
    import os

    return int(os.environ.get("RANK", "0")) == 0


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


def _write_resolved(cfg: RunConfig, plans: list[StagePlan], root: Path, device: str) -> Path:
    import yaml

    data: dict[str, Any] = {}
    data.update(training_values(cfg, plans[0].args))
    data["output_dir"] = str(root)
    data["model"] = {k: v for k, v in asdict(cfg.model).items() if v is not None}
    if cfg.lora is not None:
        data["lora"] = {**cfg.lora, **({"merge": True} if cfg.merge else {})}
    data["dataset"] = {k: v for k, v in asdict(cfg.dataset).items() if v not in (None, {}, 0) or k == "name"}
    if cfg.multi_stage:
        data["stages"] = [{"name": p.section.name, "rewards": [str(s) for s in _specs(p.section.rewards)],
                           **p.section.training} for p in plans]
    else:
        data["rewards"] = [str(s) for s in _specs(plans[0].section.rewards)]
    data["health"] = asdict(cfg.health)
    if cfg.adaptive is not None:
        data["adaptive_weights"] = asdict(cfg.adaptive)
    header = f"# grpo train: resolved configuration (device: {device}); re-run with grpo train {root / RESOLVED}\n"
    path = root / RESOLVED
    path.write_text(header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None))
    return path


def _specs(rewards):
    from .rewards import parse_spec

    return [parse_spec(s) for s in (rewards if isinstance(rewards, list) else [rewards])]


# ------------------------------------------------------------------ run


def lora_config(cfg: RunConfig):
    """peft's ``LoraConfig`` (its own value checks run here, before the model), or None."""
    if cfg.lora is None:
        return None
    from peft import LoraConfig

    try:
        return LoraConfig(**cfg.lora)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"lora: {exc}") from None


def _quiet() -> None:
    """Progress bars of dataset mapping and weight loading would bury the step lines."""
    import warnings

    import datasets
    import transformers

    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()
    # transformers warns about its gradient_checkpointing rename on every step: show it
    # once ("ignore" filters are re-matched on every call, which costs per step)
    warnings.filterwarnings("once", message=r".*(gradient|is_gradient)_checkpointing.*deprecated", category=FutureWarning)


def _limit_generation_threads(trainer, threads: int) -> None:
    """Run TRL's sampling with ``threads`` torch threads, the rest with the default."""
    import torch

    generate = trainer._generate_single_turn

    def wrapped(*args, **kwargs):
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return generate(*args, **kwargs)
        finally:
            torch.set_num_threads(before)

    trainer._generate_single_turn = wrapped


def run(cfg: RunConfig, *, resume: bool | str = False, log: Callable[[str], None] = print,
        stream=None, extra_callbacks: list | None = None) -> TrainResult:
    """Train as ``cfg`` says; see the module docstring for the outputs."""
    stream = stream or sys.stdout
    main = is_main_process()
    if not main:
        log = lambda message: None  # noqa: E731 - one process speaks
    device = detect_device()
    _quiet()

    # 1. everything that needs no model
    train_ds, eval_ds = build_datasets(cfg)
    plans = plan(cfg, train_ds.column_names, device=device)
    root = root_dir(cfg, plans)
    peft_config = lora_config(cfg)
    root.mkdir(parents=True, exist_ok=True)

    if not resume and plans[0].args.resume_from_checkpoint:
        resume = plans[0].args.resume_from_checkpoint  # TRL's own field works too
    progress = _read_progress(root) if resume else {"stages": {}}
    if resume and isinstance(resume, str) and resume not in ("true", "True"):
        resume_path = Path(resume)
        if not resume_path.is_dir():
            raise ConfigError(f"--resume {resume}: no such checkpoint directory.")
    if resume:
        has_any = progress["stages"] or any(last_checkpoint(p.output_dir) for p in plans)
        if not has_any:
            log(f"--resume: nothing to resume in {root}; starting from the beginning.")
    elif main:
        _start_fresh(root, plans, log)
    if main:
        if cfg.health.enabled:
            (root / HEALTH).touch()  # empty: no warnings
        _write_resolved(cfg, plans, root, device)

    # 2. the model
    from .models import load as load_model

    t0 = time.perf_counter()
    model_kwargs = plans[0].args.model_init_kwargs or {}
    model, tokenizer = load_model(
        cfg.model.id, dtype=cfg.model.dtype, attn_implementation=cfg.model.attn_implementation,
        revision=cfg.model.revision, trust_remote_code=plans[0].args.trust_remote_code,
        device=device, extra=model_kwargs, log=log,
    )
    log(f"Loaded {cfg.model.id} ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters, "
        f"{model.dtype}) on {device} in {time.perf_counter() - t0:.1f}s.")

    from transformers.trainer_callback import PrinterCallback, ProgressCallback
    from trl import GRPOTrainer

    from .callbacks import make_callbacks

    cb = make_callbacks()
    result = TrainResult(output_dir=root, global_step=0)
    offset = 0
    metrics_path, health_path = root / METRICS, root / HEALTH
    trainer = None
    carried = None  # weights a finished stage left, to load before the next one runs
    for i, p in enumerate(plans):
        name = p.section.name
        done = progress["stages"].get(name, {})
        if resume and done.get("done"):
            offset += int(done.get("steps", 0))
            carried = done.get("final")
            result.stages.append({"name": name, "steps": int(done.get("steps", 0)), "skipped": True})
            log(f"Stage '{name}' already finished ({done.get('steps')} steps); skipping.")
            continue
        if carried:
            model = _load_stage_weights(cfg, model, Path(carried))
            carried = None

        ckpt = None
        if resume:
            ckpt = Path(resume) if isinstance(resume, str) and i == _stage_of(resume, plans) else last_checkpoint(p.output_dir)
            if ckpt is not None:
                step = json.loads((ckpt / "trainer_state.json").read_text()).get("global_step", 0)
                _truncate_jsonl(metrics_path, offset + step)
                _truncate_jsonl(health_path, offset + step)
                log(f"Resuming{f' stage {name!r}' if cfg.multi_stage else ''} from {ckpt} (step {step}).")
            else:
                _truncate_jsonl(metrics_path, offset)
                _truncate_jsonl(health_path, offset)

        metrics_cb = cb["MetricsCallback"](metrics_path, name, offset, stream=stream)
        callbacks = [metrics_cb]
        health_cb = None
        if cfg.health.enabled:
            health_cb = cb["HealthCallback"](cfg.health, health_path, name, offset, warn=lambda m: log(f"warning: {m}"))
            callbacks.append(health_cb)
        adaptive_cb = None
        if cfg.adaptive is not None:
            adaptive_cb = cb["AdaptiveWeightsCallback"](cfg.adaptive, [f.__name__ for f in p.funcs], p.weights)
            callbacks.append(adaptive_cb)
        interrupt_cb = cb["InterruptCallback"]()
        callbacks.append(interrupt_cb)
        callbacks.extend(extra_callbacks or [])

        from peft import PeftModel

        trainer = GRPOTrainer(
            model=model,
            reward_funcs=p.funcs,
            args=p.args,
            train_dataset=train_ds,
            eval_dataset=eval_ds,
            processing_class=tokenizer,
            callbacks=callbacks,
            peft_config=peft_config if not isinstance(model, PeftModel) else None,
        )
        trainer.remove_callback(ProgressCallback)
        trainer.remove_callback(PrinterCallback)
        if adaptive_cb is not None:
            adaptive_cb.bind(trainer)
        if device == "cpu":  # as grpo preflight and eval: 1 thread unless set
            _limit_generation_threads(trainer, int(cfg.model.generation_threads or 1))
        if cfg.multi_stage:
            rw = ", ".join(f"{f.__name__}:{w:g}" for f, w in zip(p.funcs, p.weights))
            log(f"Stage {i + 1}/{len(plans)} '{name}': {p.args.max_steps} steps, rewards {rw}.")
        interrupt_cb.install()
        try:
            trainer.train(resume_from_checkpoint=str(ckpt) if ckpt else None)
        finally:
            interrupt_cb.uninstall()
        model = _unwrap(trainer)
        steps = trainer.state.global_step
        if health_cb is not None:
            result.health_events.extend(health_cb.events)
        if interrupt_cb.requested:
            result.interrupted = True
            result.global_step = offset + steps
            ck = last_checkpoint(p.output_dir)
            log(f"Saved {ck} at step {offset + steps}. Continue with: grpo train "
                f"{cfg.path or 'CONFIG'} --resume")
            break
        offset += steps
        result.stages.append({"name": name, "steps": steps})
        final = p.output_dir / "final" if cfg.multi_stage else root / ("adapter" if cfg.lora is not None else "model")
        _save_final(model, tokenizer, final, trainer)
        progress["stages"][name] = {"done": True, "steps": steps, "final": str(final)}
        if main:
            _write_progress(root, progress)
        result.global_step = offset

    if carried:
        model = _load_stage_weights(cfg, model, Path(carried))
    result.plot = plot_safely(root, log) if main else None
    if result.interrupted:
        return result

    # 3. final outputs
    final = root / ("adapter" if cfg.lora is not None else "model")
    if cfg.multi_stage or not final.is_dir():
        _save_final(model, tokenizer, final, trainer)
    result.final_dir = final
    if trainer is not None and plans[-1].args.push_to_hub:
        trainer.push_to_hub()
    if cfg.merge and main:
        merged = model.merge_and_unload()
        _save_final(merged, tokenizer, root / "merged")
        result.merged_dir = root / "merged"
    log(f"Done: {result.global_step} steps. Outputs in {root}: {final.name}/"
        + (", merged/" if result.merged_dir else "")
        + f", {METRICS}, {PLOT}, {RESOLVED}"
        + (f", {HEALTH} ({len(result.health_events)} warnings)" if result.health_events else "") + ".")
    return result


def _stage_of(checkpoint: str, plans: list[StagePlan]) -> int:
    path = Path(checkpoint).resolve()
    for i, p in enumerate(plans):
        if path.parent == p.output_dir.resolve():
            return i
    return -1


def plot_safely(root: Path, log: Callable) -> Path | None:
    from .plotting import plot_rewards

    try:
        return plot_rewards(root / METRICS, root / PLOT, title=f"GRPO rewards: {root.name}")
    except Exception as exc:  # a plotting problem must never cost the trained model
        log(f"warning: could not draw {PLOT}: {type(exc).__name__}: {exc}")
        return None


__all__ = ["run", "build_datasets", "plan", "TrainResult", "GrpoError"]
