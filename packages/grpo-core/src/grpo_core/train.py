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

from .config import RunConfig, StageSection
from .errors import ConfigError, GrpoError
from .grpo_args import detect_device, training_args, training_values

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
    stopped: str | None = None  # why training stopped early (non-finite values), with advice
    exit_code: int = 0  # 130 after Ctrl-C, 143 after SIGTERM, 1 after a non-finite stop


# ------------------------------------------------------------------ data


def build_datasets(cfg: RunConfig, eval_split: str | None = None):
    """``(train, eval or None)`` with TRL's conversational ``prompt`` column, built the
    one way training, eval, preflight and check see them: the system prompt, and the
    few-shot examples taken from the start of the training split (never trained on)
    in every split's prompts. ``eval_split`` overrides ``dataset.eval_split``."""
    from .data import build_prompts, load_dataset, take_few_shot

    d = cfg.dataset
    train = load_dataset(d.name, split=d.split, **d.params)
    few_shot = d.few_shot
    if few_shot and "question" in train.column_names:
        few_shot, train = take_few_shot(train, few_shot)
    train = build_prompts(train, d.system_prompt, few_shot or 0, d.answer_template)
    _check_environment_columns(cfg, train, f"dataset '{d.name}' (split {d.split})")
    eval_ds = None
    if eval_split or d.eval_split:
        split = eval_split or d.eval_split
        eval_ds = load_dataset(d.name, split=split, **{**d.params, **d.eval_params})
        eval_ds = build_prompts(eval_ds, d.system_prompt, few_shot or 0, d.answer_template)
        _check_environment_columns(cfg, eval_ds, f"dataset '{d.name}' (split {split})")
    return train, eval_ds


def _check_environment_columns(cfg: RunConfig, ds, where: str) -> None:
    from .environments import COLUMN, check_columns

    check_columns(ds.column_names, cfg.environment, where, values=lambda: ds.unique(COLUMN))


def check_tool_support(cfg: RunConfig, trust_remote_code: bool = False) -> None:
    """Environments and tools need transformers recent enough and a chat template that
    renders tool calls and that TRL can parse them from: checked on the tokenizer,
    before any model loads (TRL would only fail after)."""
    if cfg.environment is None:
        return
    from transformers import AutoTokenizer

    from .environments import check_support
    from .models import prepare_tokenizer, resolve

    path = resolve(cfg.model.id)
    tokenizer = AutoTokenizer.from_pretrained(path, revision=cfg.model.revision, trust_remote_code=trust_remote_code)
    check_support(cfg.environment, prepare_tokenizer(tokenizer), cfg.model.id)


def sampling_settings(cfg: RunConfig, args, device: str) -> dict:
    """How training samples completions (GRPOConfig and the model section), as
    ``generation.generate`` keywords: preflight and eval sample the same way."""
    return dict(max_new_tokens=args.max_completion_length, temperature=args.temperature, top_p=args.top_p,
                top_k=args.top_k, min_p=args.min_p, repetition_penalty=args.repetition_penalty, seed=args.seed,
                chat_template_kwargs=getattr(args, "chat_template_kwargs", None),
                threads=(cfg.model.generation_threads or 1) if device == "cpu" else None,
                fast=fast_generation(cfg, args, device))


# ------------------------------------------------------------------ planning


def plan(cfg: RunConfig, train_columns: list[str], *, device: str) -> list[StagePlan]:
    """Rewards composed and checked against the dataset, GRPOConfig built, per stage."""
    from .data import check_columns

    plans = []
    root = None
    for stage in cfg.stages:
        funcs, weights = stage.funcs, stage.weights  # composed once, when the config was read
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


RUN_FILES = (METRICS, HEALTH, PROGRESS, PLOT, RESOLVED, "adapter", "model", "merged")


def earlier_run(root: Path, plans: list[StagePlan]) -> bool:
    """Does ``root`` hold what an earlier run wrote (checkpoints, metrics, weights)?"""
    if any(p.output_dir.is_dir() and any(p.output_dir.glob("checkpoint-*")) for p in plans):
        return True
    for name in (METRICS, PROGRESS, PLOT, "adapter", "model", "merged"):
        path = root / name
        if path.is_dir() or (path.is_file() and path.stat().st_size > 0):
            return True
    return False


def _start_fresh(root: Path, plans: list[StagePlan], log: Callable, overwrite: bool) -> None:
    """A new run never loses an earlier one by accident: it is moved aside
    (``<dir>.1``, ``<dir>.2``, ...) unless ``--overwrite`` asks to replace it."""
    if not earlier_run(root, plans):
        return
    if overwrite:
        for p in plans:
            for d in p.output_dir.glob("checkpoint-*") if p.output_dir.is_dir() else ():
                shutil.rmtree(d, ignore_errors=True)
        for name in RUN_FILES:
            target = root / name
            shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
        log(f"--overwrite: removed the earlier run's checkpoints and outputs in {root}.")
        return
    n = 1
    while root.with_name(f"{root.name}.{n}").exists():
        n += 1
    aside = root.with_name(f"{root.name}.{n}")
    root.rename(aside)
    root.mkdir(parents=True)
    log(f"{root} held an earlier run: moved it to {aside}. (--resume continues a run; "
        f"--overwrite replaces it.)")


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
        data["stages"] = [{"name": p.section.name, "rewards": [s.as_config() for s in p.section.rewards],
                           **p.section.training} for p in plans]
    else:
        data["rewards"] = [s.as_config() for s in plans[0].section.rewards]
    if cfg.environment is not None:
        data.update(cfg.environment.as_config())
    data["health"] = asdict(cfg.health)
    if cfg.adaptive is not None:
        data["adaptive_weights"] = asdict(cfg.adaptive)
    header = f"# grpo train: resolved configuration (device: {device}); re-run with grpo train {root / RESOLVED}\n"
    path = root / RESOLVED
    path.write_text(header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None))
    return path


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


@dataclass
class Run:
    """What the steps of :func:`run` share: the plan, where it writes, how it speaks."""

    cfg: RunConfig
    device: str
    plans: list[StagePlan]
    root: Path
    train_ds: Any
    eval_ds: Any
    peft_config: Any
    precision: Any  # precision.Precision
    resume: bool | str
    progress: dict
    log: Callable[[str], None]
    stream: Any
    extra_callbacks: list
    main: bool = True
    overwrite: bool = False  # replace an earlier run in output_dir instead of moving it aside
    offset: int = 0  # global steps of the stages before the current one
    carried: str | None = None  # weights a finished stage left, to load before the next one
    trainer: Any = None


def run(cfg: RunConfig, *, resume: bool | str = False, overwrite: bool = False, check: bool = True,
        log: Callable[[str], None] = print, stream=None, extra_callbacks: list | None = None) -> TrainResult:
    """Train as ``cfg`` says; see the module docstring for the outputs. ``check``: run
    ``grpo check`` (gold self-test, reward-hacking probes) first and stop on a failure."""
    from .config import apply_env

    apply_env(cfg)
    r = _prepare(cfg, resume, overwrite, log, stream or sys.stdout, list(extra_callbacks or []), check)
    model, tokenizer = _load_model(r)
    result = TrainResult(output_dir=r.root, global_step=0)
    for i, p in enumerate(r.plans):
        model = _run_stage(r, i, p, model, tokenizer, result)
        if result.interrupted or result.stopped:
            break
    if r.carried:
        model = _load_stage_weights(cfg, model, Path(r.carried))
    result.plot = plot_safely(r.root, r.log) if r.main else None
    if result.interrupted or result.stopped:
        return result
    return _finish(r, model, tokenizer, result)


def _prepare(cfg: RunConfig, resume, overwrite: bool, log, stream, extra_callbacks, check: bool = True) -> Run:
    """Everything that needs no model: data, plans, the reward check, output dir, resume
    bookkeeping (in that order: a failed check touches no earlier run)."""
    from .precision import choose

    main = is_main_process()
    if not main:
        log = lambda message: None  # noqa: E731 - one process speaks
    device = detect_device()
    _quiet()
    train_ds, eval_ds = build_datasets(cfg)
    plans = plan(cfg, train_ds.column_names, device=device)
    if check:
        check_or_stop(cfg, train_ds, plans, log)
    root = root_dir(cfg, plans)
    a = plans[0].args
    r = Run(cfg=cfg, device=device, plans=plans, root=root, train_ds=train_ds, eval_ds=eval_ds,
            peft_config=lora_config(cfg), resume=resume or a.resume_from_checkpoint or False,
            precision=choose(device, dtype=cfg.model.dtype, bf16=a.bf16, fp16=a.fp16, lora=cfg.lora is not None),
            progress={"stages": {}}, log=log, stream=stream, extra_callbacks=extra_callbacks, main=main,
            overwrite=overwrite)
    check_writable(root)
    check_tool_support(cfg, a.trust_remote_code)
    _check_resume(r)
    if main:
        if cfg.health.enabled:
            (root / HEALTH).touch()  # empty: no warnings
        _write_resolved(cfg, plans, root, device)
    return r


def check_or_stop(cfg: RunConfig, train_ds, plans: list[StagePlan], log: Callable) -> None:
    """``grpo check`` before any model loads; a failure is a ConfigError after its table."""
    from .checks import check_plans

    if not all(rep.ok for rep in check_plans(cfg, train_ds, plans, log=log, brief=True)):
        raise ConfigError(
            "grpo check failed (table above): a reward does not pay the gold answer, or pays a hack. "
            "Fix the reward or the dataset's answer column; --no-check skips the check."
        )


def check_writable(path: Path, keep: bool = True) -> None:
    """``path`` can be created and written to, or a ConfigError that says so (before
    any model). ``keep=False`` (a dry run) removes the folders it had to create."""
    created = []
    parent = Path(path)
    while not parent.exists() and parent != parent.parent:
        created.append(parent)
        parent = parent.parent
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".grpo-write-test"
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:
        from .errors import describe_os_error

        raise ConfigError(f"output_dir: {describe_os_error(exc)}") from None
    finally:
        for d in created if not keep else ():
            try:
                d.rmdir()
            except OSError:
                break


def _check_resume(r: Run) -> None:
    resume = r.resume
    if resume and isinstance(resume, str) and resume not in ("true", "True"):
        if not Path(resume).is_dir():
            raise ConfigError(f"--resume {resume}: no such checkpoint directory.")
    if resume:
        r.progress = _read_progress(r.root)
        if not (r.progress["stages"] or any(last_checkpoint(p.output_dir) for p in r.plans)):
            r.log(f"--resume: nothing to resume in {r.root}; starting from the beginning.")
    elif r.main:
        _start_fresh(r.root, r.plans, r.log, r.overwrite)


def quantization_kwargs(quantization: dict | None) -> dict:
    """bitsandbytes loading as `trl grpo` does it (TRL's ModelConfig fields)."""
    if not quantization:
        return {}
    from trl import ModelConfig, get_kbit_device_map, get_quantization_config

    return {"quantization_config": get_quantization_config(ModelConfig(**quantization)),
            "device_map": get_kbit_device_map()}


def _load_model(r: Run):
    from .models import load as load_model

    cfg = r.cfg
    t0 = time.perf_counter()
    model, tokenizer = load_model(
        cfg.model.id, dtype=r.precision.load, attn_implementation=cfg.model.attn_implementation,
        revision=cfg.model.revision, trust_remote_code=r.plans[0].args.trust_remote_code,
        device=r.device, extra={**quantization_kwargs(cfg.model.quantization), **(r.plans[0].args.model_init_kwargs or {})},
        log=r.log,
    )
    r.log(f"Loaded {cfg.model.id} ({sum(p.numel() for p in model.parameters()) / 1e6:.1f}M parameters) "
          f"on {r.device} in {time.perf_counter() - t0:.1f}s: {r.precision.describe(cfg.lora is not None)}"
          + (", fast generation (static cache, compiled decoding)" if fast_generation(cfg, r.plans[0].args, r.device) else "")
          + ".")
    return model, tokenizer


def fast_generation(cfg: RunConfig, args, device: str) -> bool:
    """``model.fast_generation``: auto (on CUDA), true or false; a user's own
    ``cache_implementation`` other than static turns it off, as does vLLM."""
    setting = cfg.model.fast_generation
    on = device == "cuda" if setting == "auto" else bool(setting)
    return on and not args.use_vllm and args.cache_implementation in (None, "static")


def _stage_checkpoint(r: Run, i: int, p: StagePlan) -> Path | None:
    """The checkpoint this stage resumes from (metrics and health cut back to it), or None."""
    if not r.resume:
        return None
    resume = r.resume
    explicit = isinstance(resume, str) and resume not in ("true", "True")
    ckpt = Path(resume) if explicit and i == _stage_of(resume, r.plans) else last_checkpoint(p.output_dir)
    step = 0
    if ckpt is not None:
        step = json.loads((ckpt / "trainer_state.json").read_text()).get("global_step", 0)
        r.log(f"Resuming{f' stage {p.section.name!r}' if r.cfg.multi_stage else ''} from {ckpt} (step {step}).")
    for name in (METRICS, HEALTH):
        _truncate_jsonl(r.root / name, r.offset + step)
    return ckpt


def _stage_callbacks(r: Run, p: StagePlan) -> dict:
    from .callbacks import (
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


def _make_trainer(r: Run, p: StagePlan, model, tokenizer, callbacks: dict):
    from peft import PeftModel
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    from .environments import trainer_kwargs
    from .reward_policy import guard_rewards
    from .trainer import GrpoTrainer

    cfg, h = r.cfg, r.cfg.health
    guard = dict(window=h.window, max_share=h.max_reward_errors, log=r.log)
    trainer = GrpoTrainer(
        model=model, reward_funcs=guard_rewards(p.funcs, **guard), args=p.args, train_dataset=r.train_ds, eval_dataset=r.eval_ds,
        processing_class=tokenizer, callbacks=[*callbacks.values(), *r.extra_callbacks],
        peft_config=r.peft_config if not isinstance(model, PeftModel) else None,
        precision=r.precision, fast_generation=fast_generation(cfg, p.args, r.device),
        generation_threads=int(cfg.model.generation_threads or 1) if r.device == "cpu" else None,
        on_nonfinite=h.on_nonfinite, snapshot=h.snapshot, max_skips=h.max_skips,
        report=lambda event: _report_nonfinite(r, p, event), **trainer_kwargs(cfg.environment),
    )
    guard_environment_rewards(trainer, len(p.funcs), **guard)
    trainer.remove_callback(ProgressCallback)
    trainer.remove_callback(PrinterCallback)
    if "adaptive" in callbacks:
        callbacks["adaptive"].bind(trainer)
    return trainer


def guard_environment_rewards(trainer, own: int, **guard) -> None:
    """An environment's get_reward, which TRL adds after our rewards, gets the failure
    policy of every reward: an item it fails on scores None, counted and logged once."""
    import inspect

    from .reward_policy import AsyncGuardedReward, GuardedReward

    for i in range(own, len(trainer.reward_funcs)):
        func, name = trainer.reward_funcs[i], trainer.reward_func_names[i]
        cls = AsyncGuardedReward if inspect.iscoroutinefunction(func) else GuardedReward
        trainer.reward_funcs[i] = cls(_Named(func, name), **guard)


class _Named:
    """A callable under another ``__name__`` (what GuardedReward reports it as)."""

    def __init__(self, func, name: str):
        self.func, self.__name__ = func, name

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)


def _report_nonfinite(r: Run, p: StagePlan, event) -> None:
    """One line in health.jsonl and a warning, for every dropped update."""
    trainer = r.trainer
    action = "stopping" if trainer is not None and trainer.guard.stop is event else "update dropped, going on"
    message = f"{event.describe()}; {action}" + (" (weights from before the last update restored)" if event.restored else "")
    r.log(f"warning: {message}")
    if r.main and r.cfg.health.enabled:
        record = {"step": r.offset + event.step, "stage": p.section.name, "check": "nonfinite",
                  "metric": event.metric, "value": None if event.value != event.value else event.value,
                  "learning_rate": event.learning_rate, "restored": event.restored, "message": message}
        with open(r.root / HEALTH, "a") as f:
            f.write(json.dumps(record) + "\n")


def _run_stage(r: Run, i: int, p: StagePlan, model, tokenizer, result: TrainResult):
    """Train one stage (or skip it when a resumed run already finished it); the model after it."""
    name = p.section.name
    done = r.progress["stages"].get(name, {})
    if r.resume and done.get("done"):
        r.offset += int(done.get("steps", 0))
        r.carried = done.get("final")
        result.stages.append({"name": name, "steps": int(done.get("steps", 0)), "skipped": True})
        r.log(f"Stage '{name}' already finished ({done.get('steps')} steps); skipping.")
        return model
    if r.carried:
        model = _load_stage_weights(r.cfg, model, Path(r.carried))
        r.carried = None
    ckpt = _stage_checkpoint(r, i, p)
    callbacks = _stage_callbacks(r, p)
    r.trainer = trainer = _make_trainer(r, p, model, tokenizer, callbacks)
    if r.cfg.multi_stage:
        rw = ", ".join(f"{f.__name__}:{w:g}" for f, w in zip(p.funcs, p.weights))
        r.log(f"Stage {i + 1}/{len(r.plans)} '{name}': {p.args.max_steps} steps, rewards {rw}.")
    _train(r, trainer, ckpt, callbacks["interrupt"])
    model = _unwrap(trainer)
    steps = trainer.state.global_step
    if "health" in callbacks:
        result.health_events.extend(callbacks["health"].events)
    result.global_step = r.offset + steps
    if callbacks["interrupt"].requested or trainer.guard.stop is not None:
        _report_stop(r, p, trainer, callbacks["interrupt"], result)
        return model
    r.offset += steps
    result.stages.append({"name": name, "steps": steps})
    final = p.output_dir / "final" if r.cfg.multi_stage else r.root / ("adapter" if r.cfg.lora is not None else "model")
    _save_final(model, tokenizer, final, trainer)
    r.progress["stages"][name] = {"done": True, "steps": steps, "final": str(final)}
    if r.main:
        _write_progress(r.root, r.progress)
    return model


def _train(r: Run, trainer, ckpt: Path | None, interrupt) -> None:
    """``trainer.train`` with Ctrl-C handled at step boundaries; a crash inside a
    step leaves a checkpoint of the last completed step."""
    interrupt.install()
    try:
        trainer.train(resume_from_checkpoint=str(ckpt) if ckpt else None)
    except Exception as exc:
        saved = _save_after_crash(r, trainer)
        if isinstance(exc, GrpoError):
            raise type(exc)(f"{exc}\n{saved}") from None
        r.log(saved)
        raise
    finally:
        interrupt.uninstall()


def _save_after_crash(r: Run, trainer) -> str:
    """A checkpoint of the last completed step (weights, optimizer, scheduler and data
    position as that step left them), and the line that says how to go on."""
    step = trainer.state.global_step
    if step == 0:
        return "No step had completed, so there is nothing to resume; fix the cause and start again."
    out = Path(trainer.args.output_dir) / f"checkpoint-{step}"
    try:
        if not out.is_dir():
            trainer._save_checkpoint(trainer.model, trial=None)
    except Exception as exc:  # a broken device cannot save; say so, keep the first error
        return f"Could not save a checkpoint at step {step} ({type(exc).__name__}: {exc})."
    return f"Saved {out} (step {step}, the last completed step). Continue with: grpo train {r.cfg.path or 'CONFIG'} --resume"


def _report_stop(r: Run, p: StagePlan, trainer, interrupt, result: TrainResult) -> None:
    """The message for a run that ended before its last step, with what to do next."""
    ck = last_checkpoint(p.output_dir)
    again = f"grpo train {r.cfg.path or 'CONFIG'} --resume"
    if interrupt.requested:
        result.interrupted = True
        result.exit_code = interrupt.exit_code
        r.log(f"Saved {ck} at step {result.global_step}. Continue with: {again}")
        return
    event = trainer.guard.stop
    if event.metric != "weights" or event.restored:  # a checkpoint was saved at this step
        how = ("the weights from before the last update, restored" if event.restored
               else f"step {event.step}'s update dropped")
        saved = f"Saved {ck}: the last finite state ({how}). Continue with: {again}"
    elif ck is not None:
        saved = f"The weights are non-finite and were not saved; the last checkpoint is {ck}: {again}"
    else:
        saved = "The weights are non-finite and no earlier checkpoint exists (save_steps): start over."
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
    if cfg.multi_stage or not final.is_dir():
        _save_final(model, tokenizer, final, trainer)
    result.final_dir = final
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
