"""The checker pool: worker processes with a hard per-item time limit.

math-verify's timeouts use ``signal.alarm``: they fail outside the main thread
(TRL may call rewards from one) and break silently with float limits. Here each
item is a task for a pool of worker processes (``_procs.CheckerPool``: each
worker has a pipe of its own, so a worker that dies, killed or crashed, costs its
one task and never stalls the others); a task that runs past its limit has its
worker killed and replaced, and the batch goes on.

- Context: forkserver (spawn where there is none), never fork: a training
  process holds torch threads. The forkserver preloads math-verify/sympy, so a
  replacement worker starts in milliseconds instead of re-importing sympy.
  Unlike a plain spawn/forkserver pool, the workers do not re-run the
  caller's ``__main__``, so a script without a main guard is safe.
- Lifetime: the forkserver dies with the trainer and the workers with the
  forkserver (Linux ``PR_SET_PDEATHSIG``), so a checker stuck in a computation
  never outlives a trainer killed by SIGTERM or SIGKILL. The kernel ties that
  signal to the *thread* that started the forkserver, so it is started from a
  thread that lives as long as the process (``_Keeper``), never from the caller's:
  a server or verl scores from short-lived threads, and a forkserver started there
  died with the request (every request paid a new forkserver and new workers).
- Size: ``workers`` argument, else ``GRPO_MATH_WORKERS``, else the usable CPUs
  divided by ``LOCAL_WORLD_SIZE`` (processes per host under torchrun or
  accelerate), at most 8. Created lazily on first use, kept for the process.
"""

from __future__ import annotations

import atexit
import collections
import math
import multiprocessing
import multiprocessing.context as _mpc
import os
import statistics
import threading
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import Any, NamedTuple

ENV_WORKERS = "GRPO_MATH_WORKERS"
MAX_DEFAULT_WORKERS = 8

_lock = threading.Lock()
_pools: dict[tuple[int, int], Any] = {}
_owner_pid = os.getpid()
_atexit_registered = False


class Outcome(NamedTuple):
    """``status`` is ``ok`` (``value`` holds the result), ``timeout`` or ``error``."""

    status: str
    value: Any = None


def default_workers() -> int:
    """Pool size when the reward is not given one (see module docstring)."""
    from grpo_core.workers import default_workers as rule

    return rule(ENV_WORKERS, "worker processes per training process", MAX_DEFAULT_WORKERS)


def resolve_workers(workers: int | None) -> int:
    from grpo_core.workers import check_workers

    n = check_workers(workers, "checker processes")
    return default_workers() if n is None else n


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

    get_preparation_data._grpo_math = True  # type: ignore[attr-defined]  # marks the patch as ours
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


def get_pool(workers: int, spare: int = 0):
    """The shared pool with ``workers`` processes, created on first use. ``spare``
    1, 2, ...: further pools of the same size, taken only while the ones before are
    blocked by stuck checks."""
    global _owner_pid, _atexit_registered
    key = (workers, spare)
    with _lock:
        if os.getpid() != _owner_pid:  # we are a forked child: the parent's pools are not ours
            _pools.clear()
            _owner_pid = os.getpid()
        pool = _pools.get(key)
        if pool is not None and getattr(pool, "active", False):
            return pool
        from . import _worker
        from ._procs import CheckerPool

        if not _atexit_registered:
            # After multiprocessing.util registered its own, so this runs first:
            # multiprocessing's exit hook would wait for live workers.
            atexit.register(shutdown)
            _atexit_registered = True
        context = _context()
        if isinstance(context, _mpc.ForkServerContext):
            _keeper().run(_forkserver_running)
        pool = CheckerPool(workers, context, _worker.serve)
        _pools[key] = pool
        return pool


def _forkserver_running() -> None:
    """Start the forkserver with ``GRPO_MATH_PARENT_PID`` in its environment, and in no
    other child's: a program this process starts later (a test's subprocess, a user's
    tool) that imports the pool would otherwise take itself for the forkserver, tie its
    life to ours and load the checker stack."""
    from multiprocessing import forkserver

    from ._forkserver import PARENT_ENV

    os.environ[PARENT_ENV] = str(os.getpid())
    try:
        forkserver.ensure_running()
    finally:
        os.environ.pop(PARENT_ENV, None)


class _Keeper:
    """A daemon thread that lives as long as the process and runs what must outlive the
    thread that asked for it: starting the forkserver (see the module docstring)."""

    def __init__(self):
        import queue

        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.pid = os.getpid()
        threading.Thread(target=self._serve, name="grpo-math-keeper", daemon=True).start()

    def _serve(self) -> None:
        while True:
            func, done = self.jobs.get()
            try:
                done.set_result(func())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                done.set_exception(exc)

    def run(self, func: Callable):
        from concurrent.futures import Future

        done: Future = Future()
        self.jobs.put((func, done))
        return done.result()


_keeper_thread: _Keeper | None = None


def _keeper() -> _Keeper:
    """The process's keeper (a forked child starts its own: the parent's thread is not in it)."""
    global _keeper_thread
    if _keeper_thread is None or _keeper_thread.pid != os.getpid():
        _keeper_thread = _Keeper()
    return _keeper_thread


def _forget(key: tuple[int, int], pool) -> None:
    with _lock:
        if _pools.get(key) is pool:
            del _pools[key]
    try:
        pool.stop()
    except Exception:
        pass


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


def check_timeout(timeout) -> None:
    if isinstance(timeout, bool) or not (isinstance(timeout, (int, float)) and timeout > 0 and math.isfinite(timeout)):
        raise ValueError(f"timeout={timeout!r}: give the per-item time limit in seconds (> 0).")


STUCK_AFTER = 0.5  # seconds: a check running longer blocks its worker for scheduling purposes,
STUCK_FACTOR = 10  # or this many times the batch's typical check (the median of those done), if longer:
MAX_SPARES = 4  # on a loaded machine every check runs past 0.5 s, and each 0.5 s started another pool


def run(func: Callable, arg_tuples: list[tuple], timeout: float, workers: int) -> list[Outcome]:
    """``func(*args)`` for each args in the pool, each under ``timeout`` seconds.

    Always returns one Outcome per input: a task past its limit is killed and
    reported as ``timeout``; a crashed worker or a raised exception as ``error``.
    Stuck checks cost one time limit per batch, not one per ``workers`` of them:
    when every worker of a pool has run one check for over ``STUCK_AFTER`` (or
    ``STUCK_FACTOR`` times the batch's median check, when longer) and checks still
    wait, those move to a spare pool of the same size, at most ``MAX_SPARES`` of them.
    """
    if not arg_tuples:
        return []
    check_timeout(timeout)
    batch = _Batch(func, arg_tuples, timeout, workers)
    batch.wait()
    return batch.outcomes()


class _Batch:
    """One call of :func:`run`: its futures, which pool holds each, when each started."""

    def __init__(self, func, arg_tuples, timeout, workers):
        self.func, self.args, self.timeout, self.workers = func, arg_tuples, timeout, workers
        self.spare = 0
        self.pool = self._pool(0)
        self.pools = [self.pool]
        self.futures = [self._schedule(a) for a in arg_tuples]
        self.owner = [0] * len(arg_tuples)
        self.started: dict[int, float] = {}
        self.took: collections.deque[float] = collections.deque(maxlen=256)  # recent answers' times
        # belt and braces: the pool enforces the per-task limit; this bounds the whole
        # batch even if a pool itself stalls (e.g. workers that cannot start)
        self.deadline = time.monotonic() + (math.ceil(len(arg_tuples) / workers) + 1) * (timeout + 2.0) + 30.0
        self.stalled = False

    def _pool(self, spare: int):
        return get_pool(self.workers, spare)

    def _schedule(self, args):
        try:
            return self.pool.schedule(self.func, args=args, timeout=self.timeout)
        except RuntimeError:  # the pool was stopped or broke since get_pool
            _forget((self.workers, self.spare), self.pool)
            self.pool = self._pool(self.spare)
            return self.pool.schedule(self.func, args=args, timeout=self.timeout)

    def wait(self) -> None:
        """Until every future is done or the batch's deadline passes. Looks at the batch
        every 50 ms, not at every answer: a look is O(batch), and the pool's dispatcher
        thread needs the GIL to hand out the next task."""
        from concurrent.futures import ALL_COMPLETED
        from concurrent.futures import wait as wait_all

        open_ = list(range(len(self.futures)))
        while True:
            now = time.monotonic()
            still = []
            for i in open_:
                if not self.futures[i].done():
                    still.append(i)
                elif getattr(self.futures[i], "took", None) is not None:  # answered (not timed out, not lost)
                    self.took.append(self.futures[i].took)
            open_ = still
            if not open_:
                return
            if now > self.deadline:
                self.stalled = True
                return
            for i in open_:
                if i not in self.started and self.futures[i].running():
                    self.started[i] = now
            self._move_if_blocked(open_, now)
            wait_all([self.futures[i] for i in open_], timeout=0.05, return_when=ALL_COMPLETED)

    def _move_if_blocked(self, open_: list[int], now: float) -> None:
        waiting = [i for i in open_ if i not in self.started and self.owner[i] == self.spare]
        if not waiting or self.spare >= MAX_SPARES:
            return
        after = max(STUCK_AFTER, STUCK_FACTOR * statistics.median(self.took)) if self.took else STUCK_AFTER
        stuck = [i for i in open_ if self.owner[i] == self.spare and now - self.started.get(i, now) > after]
        if len(stuck) < self.workers:
            return
        self.spare += 1
        self.pool = self._pool(self.spare)
        self.pools.append(self.pool)
        for i in waiting:
            if self.futures[i].cancel():
                self.futures[i] = self._schedule(self.args[i])
                self.owner[i] = self.spare

    def outcomes(self) -> list[Outcome]:
        out = []
        for fut in self.futures:
            if not fut.done():
                fut.cancel()
                out.append(Outcome("timeout"))
                continue
            try:
                out.append(Outcome("ok", fut.result(timeout=0)))
            except (TimeoutError, FuturesTimeout):
                out.append(Outcome("timeout"))
            except ImportError as exc:  # a broken install must not read as "every answer wrong"
                raise ImportError(
                    f"the math checker processes cannot import {exc.name or 'a module'} ({exc}); "
                    f"reinstall grpo-rewards-math with its dependencies (math-verify[antlr4_13_2], sympy)."
                ) from exc
            except Exception as exc:  # WorkerDied, MemoryError, CancelledError ...
                out.append(Outcome("error", type(exc).__name__))
        # spare pools only served this batch's stuck checks; the first stays for the next
        for spare, pool in enumerate(self.pools):
            if spare or self.stalled:
                _forget((self.workers, spare), pool)
        return out
