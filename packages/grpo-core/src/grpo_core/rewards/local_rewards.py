"""Reward functions from the user's own code, without a package.

Two forms, next to registered names (``math.correctness``):

- ``my_rewards.py:has_digit``: a function in a Python file (a path relative to
  the directory grpo runs in, or absolute). The ``.py`` before the colon is what
  tells it from ``name:weight``;
- ``my_lib.rewards.has_digit``: a function in an importable module, as TRL's
  ``reward_funcs`` and axolotl write it (the directory grpo runs in is on the
  import path, as in `trl grpo`). Registered names win: a dotted name is an
  import path only when no plugin registered it and its namespace is none of ours
  (``math.``, ``format.``, ...).

The file or module is imported when the config is checked, so every process of
an ``accelerate launch`` run imports it itself. Its functions are rewards like
any other: TRL's signature, parameters bound and checked, columns required.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from collections.abc import Callable
from pathlib import Path

from grpo_core.base.errors import SpecError

# ``file.py:func`` at the start of a spec; what follows is ``(params)``, ``:weight``,
# ``when ...`` or nothing
LOCAL_REF_RE = re.compile(r"^\s*(?P<ref>[^\s():]+\.py:[A-Za-z_]\w*)")
IMPORT_PATH_RE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")


def is_local_ref(name: str) -> bool:
    """``file.py:func``."""
    return ":" in name and bool(LOCAL_REF_RE.fullmatch(name))


def load(ref: str, kind: str = "reward") -> Callable:
    """The function ``ref`` names (``file.py:func`` or ``module.func``); ``kind`` (reward,
    tool) names it in errors."""
    if is_local_ref(ref):
        where, func_name = ref.rsplit(":", 1)
        module = _load_file(where, ref, kind)
    else:
        where, func_name = ref.rsplit(".", 1)
        module = _import(where, ref, kind)
    func = getattr(module, func_name, None)
    if func is None:
        found = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                       and getattr(v, "__module__", None) == module.__name__)
        raise SpecError(f"{kind} '{ref}': {where} has no function '{func_name}'"
                        + (f"; its functions: {', '.join(found)}." if found else "."))
    if not callable(func):
        raise SpecError(f"{kind} '{ref}': '{func_name}' in {where} is a {type(func).__name__}, not a function.")
    return func


def _load_file(path_text: str, ref: str, kind: str = "reward"):
    path = Path(path_text).expanduser()
    if not path.is_file():
        raise SpecError(
            f"{kind} '{ref}': no file {path_text} (looked in {Path.cwd()}). Give the path relative to "
            f"the directory you run grpo in, or an absolute one."
        )
    path = path.resolve()
    stem = re.sub(r"\W", "_", path.stem)
    name = f"grpo_local_{stem}_{hashlib.sha1(str(path).encode()).hexdigest()[:8]}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # a .py file (LOCAL_REF_RE) has a source loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # picklable by name, and loaded once per process
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise SpecError(f"{kind} '{ref}': importing {path} failed: {type(exc).__name__}: {exc}") from exc
    return module


def _import(module_name: str, ref: str, kind: str = "reward"):
    cwd = str(Path.cwd())
    if cwd not in sys.path:  # as `trl grpo` does: modules next to where it runs import
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise SpecError(
                f"{kind} '{ref}': no module '{module_name}' to import (nor a registered {kind} of that "
                f"name; `grpo {'envs' if kind == 'tool' else 'rewards'} list` shows those). For a file, write path/to/file.py:function."
            ) from None
        raise SpecError(f"{kind} '{ref}': importing {module_name} failed: {exc}") from exc
    except Exception as exc:
        raise SpecError(f"{kind} '{ref}': importing {module_name} failed: {type(exc).__name__}: {exc}") from exc


__all__ = ["is_local_ref", "load", "LOCAL_REF_RE", "IMPORT_PATH_RE"]
