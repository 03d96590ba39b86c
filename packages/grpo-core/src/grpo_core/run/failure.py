"""What a crash inside training leaves, and the line that says it: a checkpoint of the
last completed step that ``--resume`` can use, never one whose save the crash cut short.

A save cut short (a full disk, most often) leaves a folder ``checkpoint-N`` with some of its
files: it is renamed ``checkpoint-N.incomplete`` (kept, safe to delete: no resume reads a name
with that suffix), and the line names the checkpoint ``--resume`` uses instead, the last
complete one, or says there is none.
"""

from __future__ import annotations

import shutil
import traceback
from pathlib import Path

from grpo_core.base.errors import describe_os_error
from grpo_core.run.outputs import is_main_process
from grpo_core.runfiles.progress import checkpoint_step, last_checkpoint

PARTIAL = ".incomplete"  # the suffix of a checkpoint folder whose save was cut short


def after_crash(trainer, exc: BaseException, again: str) -> str:
    """Save the last completed step (weights, optimizer, scheduler and data position as that
    step left them) unless a checkpoint of it exists; the line that says what is usable and
    how to go on (``again``: the ``--resume`` command)."""
    step = trainer.state.global_step
    if step == 0:
        return "No step had completed, so there is nothing to resume; fix the cause and start again."
    out = Path(trainer.args.output_dir) / f"checkpoint-{step}"
    if while_saving(exc):  # the crash was this checkpoint's own save
        return cut_short(out, step, exc, again)
    if not out.is_dir():
        try:
            trainer.save_checkpoint_now()
        except Exception as error:  # noqa: BLE001 - a full disk, a broken device: say so, keep the first error
            return cut_short(out, step, error, again)
    return f"Saved {out} (step {step}, the last completed step). Continue with: {again}"


def while_saving(exc: BaseException) -> bool:
    """Was ``exc`` raised while the trainer wrote a checkpoint (not while it removed old ones)?"""
    names = {frame.name for frame in traceback.extract_tb(exc.__traceback__)}
    return "_save_checkpoint" in names and "_rotate_checkpoints" not in names


def cut_short(out: Path, step: int, exc: BaseException, again: str) -> str:
    """The line for a checkpoint whose save failed; its partial folder renamed (main process)."""
    why = describe_os_error(exc) or f"{type(exc).__name__}: {exc}"
    said = f"Saving {out.name} (step {step}) failed: {why}"
    if out.is_dir() and is_main_process():
        partial = out.with_name(out.name + PARTIAL)
        shutil.rmtree(partial, ignore_errors=True)  # an older partial save of the same step
        out.rename(partial)
        said += f" Its partial folder is now {partial.name} (incomplete, never resumed from: delete it to free space)."
    usable = last_checkpoint(out.parent)
    if usable is None:
        return f"{said} No complete checkpoint exists in {out.parent}: --resume starts from the beginning: {again}"
    return (f"{said} The last complete checkpoint is {usable} (step {checkpoint_step(usable)}): --resume "
            f"continues from it: {again}")


__all__ = ["after_crash", "while_saving", "cut_short", "PARTIAL"]
