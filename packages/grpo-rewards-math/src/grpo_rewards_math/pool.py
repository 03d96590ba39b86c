"""The checker pool: worker processes with a hard per-item time limit.

math-verify's timeouts use ``signal.alarm``: they fail outside the main thread
(TRL may call rewards from one) and break silently with float limits. Here each
item is a task in a pebble ``ProcessPool``; a task that runs past its limit has
its worker killed and replaced, and the batch goes on.

- Context: forkserver (spawn where there is none), never fork: a training
  process holds torch threads. The forkserver preloads math-verify/sympy, so a
  replacement worker starts in milliseconds instead of re-importing sympy.
  Unlike a plain spawn/forkserver pool, the workers do not re-run the
  caller's ``__main__``, so a script without a main guard is safe.
- Lifetime: the forkserver dies with the trainer and the workers with the
  forkserver (Linux ``PR_SET_PDEATHSIG``), so a checker stuck in a computation
  never outlives a trainer killed by SIGTERM or SIGKILL.
- Size: ``workers`` argument, else ``GRPO_MATH_WORKERS``, else the usable CPUs
  divided by ``LOCAL_WORLD_SIZE`` (processes per host under torchrun or
  accelerate), at most 8. Created lazily on first use, kept for the process.
"""

from __future__ import annotations

import atexit
import math
import multiprocessing
import multiprocessing.context as _mpc
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import Any, NamedTuple

ENV_WORKERS = "GRPO_MATH_WORKERS"
MAX_DEFAULT_WORKERS = 8

_lock = threading.Lock()
_pools: dict[int, Any] = {}
_owner_pid = os.getpid()
_atexit_registered = False


class Outcome(NamedTuple):
    """``status`` is ``ok`` (``value`` holds the result), ``timeout`` or ``error``."""

    status: str
    value: Any = None


def default_workers() -> int:
    """Pool size when the reward is not given one (see module docstring)."""
    env = os.environ.get(ENV_WORKERS, "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(
                f"{ENV_WORKERS}={env!r} must be a positive integer (worker processes per training process)."
            )
        return n
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    try:
        per_host = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        per_host = 1
    return max(1, min(MAX_DEFAULT_WORKERS, cpus // per_host))


def resolve_workers(workers: int | None) -> int:
    if workers is None:
        return default_workers()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(
            f"workers={workers!r}: give a positive number of checker processes, or None for the default."
        )
    return workers


CHECKER_NAME = "grpo-math-checker"


def _install_no_main_hook() -> None:
    """Checker processes must not re-import the parent's ``__main__``.

    spawn/forkserver children normally re-run the main script (as
    ``__mp_main__``) so that functions defined there unpickle; a script
    without an ``if __name__ == "__main__":`` guard would then start its work
    (a training run) again in every checker. Our workers only need
    ``grpo_rewards_math._worker``, so for processes named ``CHECKER_NAME``
    (and only those) the preparation data leaves the main module out.
    """
    from multiprocessing import spawn

    original = spawn.get_preparation_data
    if getattr(original, "_grpo_math", False):
        return

    def get_preparation_data(name):
        data = original(name)
        if name == CHECKER_NAME:
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
        return data

    get_preparation_data._grpo_math = True
    spawn.get_preparation_data = get_preparation_data


class _Named:
    def __init__(self, *args, **kwargs):
        kwargs["name"] = CHECKER_NAME
        super().__init__(*args, **kwargs)


class SpawnChecker(_Named, _mpc.SpawnProcess):
    """A spawn process named ``CHECKER_NAME`` (module level: it is pickled)."""


if hasattr(_mpc, "ForkServerProcess"):

    class ForkServerChecker(_Named, _mpc.ForkServerProcess):
        """A forkserver process named ``CHECKER_NAME``."""

    class ForkServerCheckerContext(_mpc.ForkServerContext):
        Process = ForkServerChecker


class SpawnCheckerContext(_mpc.SpawnContext):
    Process = SpawnChecker


def _context():
    """forkserver (preloading ``_verify``: math-verify, sympy) where available, else spawn;
    its processes carry ``CHECKER_NAME``."""
    _install_no_main_hook()
    if "forkserver" in multiprocessing.get_all_start_methods():
        try:
            multiprocessing.get_context("forkserver").set_forkserver_preload(
                ["grpo_rewards_math._forkserver", "grpo_rewards_math._verify"]
            )
        except Exception:
            pass
        return ForkServerCheckerContext()
    return SpawnCheckerContext()


def get_pool(workers: int):
    """The shared pool with ``workers`` processes, created on first use."""
    global _owner_pid, _atexit_registered
    with _lock:
        if os.getpid() != _owner_pid:  # we are a forked child: the parent's pools are not ours
            _pools.clear()
            _owner_pid = os.getpid()
        pool = _pools.get(workers)
        if pool is not None and getattr(pool, "active", False):
            return pool
        from pebble import ProcessPool

        from . import _worker

        if not _atexit_registered:
            # After multiprocessing.util and pebble registered theirs, so this runs
            # first: multiprocessing's own exit hook would wait for live workers.
            atexit.register(shutdown)
            _atexit_registered = True
        from ._forkserver import PARENT_ENV

        os.environ[PARENT_ENV] = str(os.getpid())  # read by the forkserver it starts
        pool = ProcessPool(max_workers=workers, initializer=_worker.init, context=_context())
        _pools[workers] = pool
        return pool


def shutdown() -> None:
    """Stop every pool and its checker processes (runs at exit, too)."""
    with _lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        try:
            pool.stop()
            pool.join(timeout=2)
        except Exception:
            pass
    for proc in multiprocessing.active_children():
        if proc.name == CHECKER_NAME:
            try:
                proc.kill()
                proc.join(1)
            except Exception:
                pass


def run(func: Callable, arg_tuples: list[tuple], timeout: float, workers: int) -> list[Outcome]:
    """``func(*args)`` for each args in the pool, each under ``timeout`` seconds.

    Always returns one Outcome per input: a task past its limit is killed and
    reported as ``timeout``; a crashed worker or a raised exception as ``error``.
    """
    if not arg_tuples:
        return []
    if not (isinstance(timeout, (int, float)) and timeout > 0 and math.isfinite(timeout)):
        raise ValueError(f"timeout={timeout!r}: give the per-item time limit in seconds (> 0).")
    pool = get_pool(workers)
    try:
        futures = [pool.schedule(func, args=args, timeout=timeout) for args in arg_tuples]
    except RuntimeError:  # the pool was stopped or broke between get_pool and schedule
        with _lock:
            if _pools.get(workers) is pool:
                del _pools[workers]
        pool = get_pool(workers)
        futures = [pool.schedule(func, args=args, timeout=timeout) for args in arg_tuples]
    # Belt and braces: pebble enforces the per-task limit; this bounds the whole
    # batch even if the pool itself stalls (e.g. workers that cannot start).
    waves = math.ceil(len(arg_tuples) / workers) + 1
    deadline = time.monotonic() + waves * (timeout + 2.0) + 30.0
    outcomes = []
    stalled = False
    for fut in futures:
        remaining = deadline - time.monotonic()
        try:
            outcomes.append(Outcome("ok", fut.result(timeout=max(0.0, remaining))))
        except (TimeoutError, FuturesTimeout):
            if fut.done():
                outcomes.append(Outcome("timeout"))
            else:
                stalled = True
                fut.cancel()
                outcomes.append(Outcome("timeout"))
        except ImportError as exc:  # a broken install must not read as "every answer wrong"
            raise ImportError(
                f"the math checker processes cannot import {exc.name or 'a module'} ({exc}); "
                f"reinstall grpo-rewards-math with its dependencies (math-verify[antlr4_13_2], sympy)."
            ) from exc
        except Exception as exc:  # ProcessExpired, MemoryError, ...
            outcomes.append(Outcome("error", type(exc).__name__))
    if stalled:
        with _lock:
            if _pools.get(workers) is pool:
                del _pools[workers]
        try:
            pool.stop()
        except Exception:
            pass
    return outcomes
