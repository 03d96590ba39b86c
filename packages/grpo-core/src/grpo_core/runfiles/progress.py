"""``progress.json`` (which stages finished: a stage is ``done`` once its final weights are
saved) and TRL's ``checkpoint-N/`` folders: what a run got through."""

from __future__ import annotations

import json
from pathlib import Path

from grpo_core.runfiles import FORMAT, METRICS, PROGRESS, format_problem


def read_progress(root: Path) -> dict:
    """progress.json as the trainer reads it for ``--resume``: ``{"stages": {}}`` when it is
    absent or not JSON."""
    p = root / PROGRESS
    if p.is_file():
        try:
            return json.loads(p.read_text())
        except json.JSONDecodeError:
            pass
    return {"stages": {}}


def write_progress(root: Path, progress: dict) -> None:
    """progress.json written whole (a temporary name, then renamed), with the folder's format."""
    tmp = root / (PROGRESS + ".tmp")
    data = {"format": FORMAT, **{k: v for k, v in progress.items() if k != "format"}}
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(root / PROGRESS)


def read_stages(path: Path) -> tuple[dict[str, dict], str | None]:
    """progress.json's stages (``{name: {"done": true, "steps": N, "final": DIR}}``; {} when the
    file is absent), and a sentence when it cannot be read (for a reader such as ``grpo view``)."""
    try:
        if path.stat().st_size > 1 << 20:
            return {}, f"{PROGRESS} is over 1 MiB (grpo train writes a few lines): ignored."
        data = json.loads(path.read_text(errors="replace"))
    except FileNotFoundError:
        return {}, None
    except (OSError, ValueError, RecursionError) as exc:
        what = "it is a directory" if path.is_dir() else type(exc).__name__
        return {}, f"{PROGRESS} cannot be read ({what}): the run's state is judged from its other files."
    if isinstance(data, dict) and (problem := format_problem(data.get("format"), PROGRESS)):
        return {}, f"{problem} The run's state is judged from its other files."
    stages = data.get("stages") if isinstance(data, dict) else None
    if not isinstance(stages, dict):
        return {}, f"{PROGRESS} holds no 'stages' mapping: the run's state is judged from its other files."
    return {str(k): v for k, v in stages.items() if isinstance(v, dict)}, None


def last_checkpoint(path: Path) -> Path | None:
    """The highest ``checkpoint-N`` in ``path`` that TRL finished writing (it has its
    ``trainer_state.json``)."""
    if not path.is_dir():
        return None
    best = None
    for d in path.iterdir():
        if d.is_dir() and d.name.startswith("checkpoint-") and d.name[11:].isdigit():
            if (d / "trainer_state.json").is_file() and (best is None or int(d.name[11:]) > int(best.name[11:])):
                best = d
    return best


def checkpoint_step(checkpoint: Path) -> int:
    return int(json.loads((checkpoint / "trainer_state.json").read_text()).get("global_step", 0))


def finished(root: Path, stages: list[str]) -> tuple[int, str | None]:
    """(the steps a ``grpo train`` run in ``root`` trained, why it is not a finished run
    of ``stages`` or None): progress.json marks a stage done once its final weights are
    saved; an interrupted or crashed stage has only checkpoints."""
    if not root.is_dir():
        return 0, f"{root} does not exist"
    done = read_progress(root)["stages"]
    steps = sum(int(done[s].get("steps", 0)) for s in stages if done.get(s, {}).get("done"))
    left = next((s for s in stages if not done.get(s, {}).get("done")), None)
    if left is None:
        return steps, None
    ckpt = last_checkpoint(root / left) or last_checkpoint(root)
    if ckpt is not None:
        return steps, f"stage '{left}' did not finish: its last checkpoint is {ckpt.name}"
    return steps, f"stage '{left}' was not trained there" if done or (root / METRICS).is_file() else "no grpo train run"


__all__ = ["read_progress", "write_progress", "read_stages", "last_checkpoint", "checkpoint_step", "finished"]
