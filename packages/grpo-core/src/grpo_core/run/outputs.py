"""A run's output directory: what is in it, and the one process that prepares it.

Under ``accelerate launch`` every process runs ``grpo train``, but only the main
process touches the file system: it checks that output_dir can be written, moves
an earlier run aside (or replaces it with ``--overwrite``; and puts it back should the
new run stop before it saves anything to continue from), reads what a
``--resume`` continues, cuts ``metrics.jsonl`` / ``health.jsonl`` back to the
checkpoint and writes ``config.yaml``. The others wait, and get the outcome
(progress, or the main process's error) from it: no two processes ever race on
one file, and an error stops every process with the same message.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from grpo_core.base.errors import ConfigError, describe_os_error
from grpo_core.config.grpo_args import training_values
from grpo_core.runfiles import (
    HEALTH,
    MANIFEST,
    METRICS,
    PLOT,
    PROGRESS,
    RESOLVED,
    ROLLOUTS,
    RUN_FILES,
)
from grpo_core.runfiles.progress import last_checkpoint, read_progress


def is_main_process() -> bool:
    """Rank 0 under accelerate/torchrun (files are written once), else True."""
    return int(os.environ.get("RANK", "0")) == 0


def from_main(value: Any = None) -> Any:
    """``value`` as the main process has it, on every process (a barrier too)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return value
    from accelerate import PartialState
    from accelerate.utils import broadcast_object_list

    PartialState()  # starts the process group when accelerate launched us
    box = [value]
    broadcast_object_list(box, from_process=0)
    return box[0]


# ------------------------------------------------------------------ a new run


def earlier_run(root: Path, stage_dirs: list[Path]) -> bool:
    """Does ``root`` hold what an earlier run wrote (checkpoints, metrics, weights)?"""
    if any(d.is_dir() and any(d.glob("checkpoint-*")) for d in stage_dirs):
        return True
    for name in (METRICS, PROGRESS, PLOT, ROLLOUTS, "adapter", "model", "merged"):
        path = root / name
        if path.is_dir() or (path.is_file() and path.stat().st_size > 0):
            return True
    return False


def start_fresh(root: Path, stage_dirs: list[Path], log: Callable, overwrite: bool) -> Path | None:
    """A new run never loses an earlier one by accident: it is moved aside
    (``<dir>.1``, ``<dir>.2``, ...) unless ``--overwrite`` asks to replace it; where it went.
    Should the new run fail before it saves anything to continue from, :func:`put_back`
    returns it to ``root``."""
    if not earlier_run(root, stage_dirs):
        return None
    if overwrite:
        for d in stage_dirs:
            for c in d.glob("checkpoint-*") if d.is_dir() else ():
                shutil.rmtree(c, ignore_errors=True)
        for name in RUN_FILES:
            target = root / name
            shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
        log(f"--overwrite: removed the earlier run's checkpoints and outputs in {root}.")
        return None
    aside = free_name(root)
    root.rename(aside)
    root.mkdir(parents=True)
    log(f"{root} held an earlier run: moved it to {aside}. (--resume continues a run; "
        f"--overwrite replaces it.)")
    return aside


def free_name(root: Path) -> Path:
    """``<root>.N``, the first N that names nothing."""
    n = 1
    while root.with_name(f"{root.name}.{n}").exists():
        n += 1
    return root.with_name(f"{root.name}.{n}")


def resumable(root: Path, stage_dirs: list[Path]) -> bool:
    """Does ``root`` hold what ``--resume`` continues from: a checkpoint, or a finished stage?"""
    return (any(last_checkpoint(d) is not None for d in (root, *stage_dirs))
            or any(s.get("done") for s in read_progress(root)["stages"].values()))


def put_back(root: Path, stage_dirs: list[Path], moved: list[Path], log: Callable) -> None:
    """A fresh start moved an earlier run aside (to ``moved[0]``) and then stopped before it
    saved anything ``--resume`` continues from: the earlier run goes back to ``root``, and what
    the new one wrote goes aside in its place (or away, when that is only its resolved config
    and empty logs). Never raises: the failure's own error is what the user must see."""
    if not moved or resumable(root, stage_dirs):
        return
    aside, attempt = moved[0], None
    try:
        if _only_its_config(root):
            shutil.rmtree(root)
        else:
            attempt = free_name(root)
            root.rename(attempt)
        aside.rename(root)
    except OSError as exc:
        log(f"warning: could not move the earlier run back to {root} ({describe_os_error(exc)}); it is whole "
            f"in {aside}.")
        return
    log(f"This run stopped before saving anything --resume could continue, so the earlier run is back in {root}, "
        f"where it was" + (f"; what this run wrote is in {attempt}." if attempt else "."))


def _only_its_config(root: Path) -> bool:
    """Does ``root`` hold only what a run writes before its first step (the resolved config,
    the manifest, empty logs)?"""
    for path in root.iterdir():
        if path.name not in (RESOLVED, MANIFEST, METRICS, HEALTH) or not path.is_file():
            return False
        if path.name in (METRICS, HEALTH) and path.stat().st_size > 0:
            return False
    return True


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
        probe = path / f".grpo-write-test-{os.getpid()}"
        probe.write_bytes(b"ok")
        probe.unlink()
    except OSError as exc:

        raise ConfigError(f"output_dir: {describe_os_error(exc)}") from None
    finally:
        for d in created if not keep else ():
            try:
                d.rmdir()
            except OSError:
                break


def prepare(root: Path, stage_dirs: list[Path], *, resume: bool | str, overwrite: bool, health: bool,
            log: Callable[[str], None], main: bool | None = None, share: Callable[[Any], Any] = from_main,
            moved: list[Path] | None = None) -> dict:
    """Make ``root`` ready on the main process (see the module docstring); every process
    returns the run's progress (what ``--resume`` skips). ``share`` hands the main
    process's outcome to the others and is their barrier; ``moved`` gets the folder an
    earlier run was moved to (on the main process), for :func:`put_back`."""
    return on_main(lambda: _prepare_main(root, stage_dirs, resume, overwrite, health, log, moved), main=main,
                   share=share)


def on_main(work: Callable[[], Any], *, main: bool | None = None, share: Callable[[Any], Any] = from_main) -> Any:
    """What ``work()`` returns on the main process, on every process (the others wait);
    its ConfigError is raised on every process, with the same message."""
    main = is_main_process() if main is None else main
    outcome: Any = None
    if main:
        try:
            outcome = work()
        except ConfigError as exc:
            outcome = exc
    outcome = share(outcome)
    if isinstance(outcome, BaseException):
        raise ConfigError(str(outcome))
    return outcome


def _prepare_main(root: Path, stage_dirs: list[Path], resume, overwrite: bool, health: bool, log,
                  moved: list[Path] | None = None) -> dict:
    check_writable(root)
    progress: dict = {"stages": {}}
    if resume:
        progress = read_progress(root)
        named = isinstance(resume, str) and resume not in ("true", "True")  # --resume CHECKPOINT
        if not (named or progress["stages"] or any(last_checkpoint(d) for d in stage_dirs)):
            log(f"--resume: nothing to resume in {root}; starting from the beginning.")
    elif (aside := start_fresh(root, stage_dirs, log, overwrite)) is not None and moved is not None:
        moved.append(aside)
    if health:
        (root / HEALTH).touch()  # empty: no warnings
    return progress


def write_resolved(cfg, plans: list, root: Path, device: str) -> Path:
    """``config.yaml``: the configuration as resolved, re-runnable (``grpo train config.yaml``)."""
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
    for name in ("sampling", "learning", "heldout", "log"):  # every section a run is re-run with
        data[name] = asdict(getattr(cfg, name))
    header = f"# grpo train: resolved configuration (device: {device}); re-run with grpo train {root / RESOLVED}\n"
    path = root / RESOLVED
    path.write_text(header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None))
    return path


__all__ = ["prepare", "on_main", "put_back", "resumable", "free_name", "check_writable", "write_resolved",
           "is_main_process", "from_main"]
