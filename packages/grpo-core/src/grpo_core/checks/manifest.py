"""Which reward paid: ``manifest.json`` beside a run's ``config.yaml``.

For every reward and environment a run used: where it came from (its plugin's
distribution and version, or a file of one's own) and a SHA-256 of the source
file that defines it. ``grpo eval`` and ``grpo score --input RUN_DIR/...`` say so
when what is installed now differs: a reward whose code changed may score the
same completions differently.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Iterable
from pathlib import Path

from grpo_core.plugin import registry
from grpo_core.rewards.reward import compose_rewards

NAME = "manifest.json"


def _source_hash(obj) -> tuple[str | None, str | None]:
    """(the defining file, its SHA-256), or Nones for a function with no file."""
    target = getattr(obj, "func", obj)
    target = getattr(target, "func", target)  # a Reward's function, or a partial's
    try:
        path = inspect.getsourcefile(target if inspect.isroutine(target) or inspect.isclass(target)
                                     else type(target))
    except TypeError:
        return None, None
    if not path or not Path(path).is_file():
        return None, None
    return path, hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _entry(name: str, obj, registered) -> dict:
    path, digest = _source_hash(obj)
    out = {"name": name, "source": path, "sha256": digest}
    if registered is not None:
        out.update(distribution=registered.distribution, version=registered.version, plugin=registered.plugin)
    return out


def build(cfg) -> dict:
    """The manifest of a parsed config: each stage's rewards, each environment."""

    rewards = registry.rewards().entries
    seen: dict[str, dict] = {}
    for stage in cfg.stages:
        for f in stage.funcs:
            seen.setdefault(f.__name__, _entry(f.name, f.func, rewards.get(f.name)))
    out: dict = {"rewards": seen, "environments": {}}
    if cfg.environment is not None:
        envs = registry.environments().entries
        for env in cfg.environment.routes.values():
            out["environments"].setdefault(env.name, _entry(env.name, env.entry.obj, envs.get(env.name)))
    return out


def write(root: Path, data: dict) -> Path:
    path = Path(root) / NAME
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path


def read(root: Path) -> dict | None:
    try:
        return json.loads((Path(root) / NAME).read_text())
    except (OSError, ValueError):
        return None


def compare(run: dict, now: dict) -> list[str]:
    """What differs between the run's rewards and the installed ones, one line each."""
    lines = []
    for kind in ("rewards", "environments"):
        for logged, old in (run.get(kind) or {}).items():
            new = (now.get(kind) or {}).get(logged)
            if new is None:
                continue
            if (old.get("version"), old.get("sha256")) != (new.get("version"), new.get("sha256")):
                lines.append(f"{logged}: the run used {_describe(old)}, installed now {_describe(new)}; "
                             f"scores may differ from the run's")
    return lines


def _describe(entry: dict) -> str:
    where = (f"{entry['distribution']} {entry.get('version') or ''}".strip() if entry.get("distribution")
             else entry.get("source") or "a function of one's own")
    return f"{where} (source {str(entry.get('sha256') or '?')[:12]})"


def run_dir_of(path: Path) -> Path | None:
    """The run's output dir for a path inside it (a checkpoint, the adapter, the rollout log)."""
    path = Path(path).resolve()
    for candidate in (path, *path.parents):
        if (candidate / NAME).is_file():
            return candidate
    return None


def differences_near(path: Path, specs: Iterable[str]) -> list[str]:
    """The manifest of the run ``path`` belongs to, against ``specs`` resolved now."""
    root = run_dir_of(path)
    data = read(root) if root is not None else None
    if data is None:
        return []

    funcs, _ = compose_rewards(list(specs))
    return compare(data, {"rewards": of_rewards(funcs)})


def of_rewards(funcs) -> dict:
    """Composed rewards' entries, keyed by logged name: distribution, version, source SHA-256."""
    return {f.__name__: _entry(f.name, f.func, _registered(f.name)) for f in funcs}


def _registered(name: str):
    return registry.rewards().entries.get(name)


__all__ = ["build", "write", "read", "compare", "differences_near", "of_rewards", "run_dir_of", "NAME"]
