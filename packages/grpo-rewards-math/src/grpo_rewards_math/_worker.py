"""The tasks the checker processes run.

Light on purpose: the training process imports this module only so that
``check`` pickles by reference; sympy and math-verify live in ``_verify``,
which only the workers import. Only booleans leave a worker: a parsed sympy
object is never printed or pickled (``str()`` of one can itself hang).
"""

from __future__ import annotations

import os


def die_with_parent() -> None:
    """Linux: the kernel kills this process (SIGKILL) when its parent dies, however
    the parent dies (kill -9 included) and whatever this process is doing (a stuck
    C-level computation holding the GIL too). Elsewhere a no-op."""
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        parent = os.getppid()
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before the call
            os._exit(1)
    except (OSError, AttributeError):
        pass


def init() -> None:
    """Pool initializer: die with the parent (the forkserver, which itself dies with
    the trainer: see ``_forkserver``); cap the worker's memory
    (``GRPO_MATH_WORKER_MEMORY_MB``, default 4096; 0 = no cap) so a runaway
    computation fails instead of swapping."""
    die_with_parent()
    try:
        mb = int(os.environ.get("GRPO_MATH_WORKER_MEMORY_MB", "4096"))
    except ValueError:
        mb = 4096
    if mb > 0:
        try:
            import resource

            limit = mb * 1024 * 1024
            _, hard = resource.getrlimit(resource.RLIMIT_AS)
            if hard == resource.RLIM_INFINITY or hard > limit:
                resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        except (ImportError, ValueError, OSError):
            pass
    try:  # already loaded under forkserver; spawn loads it here, outside any task's limit
        from . import _verify  # noqa: F401
    except Exception:
        pass  # the first task raises the ImportError, which reaches the caller


def serve(conn) -> None:
    """A checker process's main loop (``_procs.CheckerPool``): ``init``, say ready, then
    one task at a time over this worker's own pipe, each answered ``("ok", value)`` or
    ``("raise", exception)``. Ends when the pool closes the pipe."""
    import pickle
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the trainer answers it
    init()
    conn.send(("ready", None))
    while True:
        try:
            data = conn.recv_bytes()
        except (EOFError, OSError):
            return
        try:
            func, args = pickle.loads(data)
            reply = ("ok", func(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, as the task's outcome
            reply = ("raise", exc)
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return
        except Exception as exc:  # a value or exception that does not pickle
            conn.send(("raise", RuntimeError(f"the checker's {reply[0]} answer could not be sent back: {exc}")))


def check(gold: str, candidate: str | None) -> tuple[bool, bool]:
    """(gold parsed, candidate equivalent to gold). Strings come normalized by
    ``extract.to_math``; a candidate of None only checks the gold."""
    from ._verify import equivalent, parse_math

    try:
        g = parse_math(gold)
    except Exception:
        return False, False
    if not g:
        return False, False
    if candidate is None:
        return True, False
    if candidate == gold:  # the same normalized string: equal, as the in-process shortcut says
        return True, True
    try:
        c = parse_math(candidate)
        if not c:
            return True, False
        return True, equivalent(g, c)
    except Exception:  # MemoryError, RecursionError, sympy errors: not equivalent
        return True, False


def ping() -> tuple[int, int]:
    """(pid, parent pid): lets tests see which process ran a task."""
    return os.getpid(), os.getppid()
