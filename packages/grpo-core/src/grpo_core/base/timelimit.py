"""A time limit for every reward call: a reward stuck on a network call or a
pathological regex costs its items, never the run.

TRL calls rewards inline with no limit, so one that hangs hangs the GPU. Here a
call runs where it always ran (the main thread: rewards that use
``signal.alarm``, as math-verify does, keep working) while one watchdog thread
keeps the deadline. At the deadline it sends ``SIGUSR1`` to the main thread,
whose handler raises :class:`RewardTimeout` inside the reward: a blocking
``sleep`` or ``recv`` returns, pure Python stops at the next bytecode, ``re``
within a few thousand steps, and the reward's ``finally`` blocks run. Nothing
is left running. ``RewardTimeout`` is a ``BaseException``, so a reward's own
``except Exception`` does not swallow it.

Code stuck in native code that never returns to Python cannot be interrupted
from inside the process. When the call is still running ``grace`` seconds after
the signal, the watchdog says so, naming the reward, and ends the process
(exit code 3) rather than hold a GPU forever; the last checkpoint is intact.
Native code that holds the GIL (``re`` backtracking) stops every Python thread,
the watchdog too: for that, ``faulthandler``'s timer (a C thread) ends the
process a second later, printing where each thread was.

A call made from another thread (a thread pool of one's own, a reward server's
workers) cannot be signalled: it runs in a daemon thread of its own, and on
timeout it is left behind, said so in the warning, and dies with the process.
Those threads are kept and reused once their call returns (a server calls each
reward once per request: a new thread each time cost more than small batches).
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

DEFAULT_SECONDS = 120.0  # health.reward_time_limit: per call of a reward (one batch)
SIGNAL = signal.SIGUSR1


class RewardTimeout(BaseException):  # noqa: N818 - reads as what happened
    """Raised inside a reward call that ran past its time limit."""

    def __init__(self, seconds: float, left_running: bool = False):
        super().__init__(f"ran past its time limit of {seconds:g}s")
        self.seconds = seconds
        self.left_running = left_running  # a thread that could not be stopped is still running it


class _Watchdog:
    """One daemon thread per process that keeps the deadline of the current call."""

    def __init__(self):
        self.cond = threading.Condition()
        self.deadline: float | None = None
        self.active: int | None = None  # the token of the call running now
        self.fired: int | None = None  # the token whose deadline passed (its signal is sent once)
        self.token = 0
        self.what = ""
        self.grace = 10.0
        self.thread: threading.Thread | None = None
        self.previous = None  # the SIGUSR1 handler before ours, chained to for signals not ours

    def arm(self, seconds: float, what: str, grace: float) -> int:
        with self.cond:
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="grpo-reward-watchdog", daemon=True)
                self.thread.start()
            self.token += 1
            self.active, self.fired = self.token, None
            self.deadline = time.monotonic() + seconds
            self.what, self.grace = what, grace
            self.cond.notify()
            return self.token

    def disarm(self, token: int) -> bool:
        """True when the call's deadline had passed (its signal is sent, or about to be)."""
        with self.cond:
            if self.active == token:
                self.active, self.deadline = None, None
                self.cond.notify()
            return self.fired == token

    def _run(self) -> None:
        with self.cond:
            while True:
                if self.active is None or self.deadline is None:
                    self.cond.wait()
                    continue
                left = self.deadline - time.monotonic()
                if left > 0:
                    self.cond.wait(left)
                    continue
                token = self.fired = self.active
                self.deadline = None
                main = threading.main_thread().ident
                assert main is not None  # (set once a thread starts: the main thread runs this program)
                signal.pthread_kill(main, SIGNAL)
                if not self.cond.wait_for(lambda t=token: self.active != t, self.grace):
                    _give_up(self.what, self.grace)

    def handler(self, signum, frame) -> None:
        fired = self.fired
        if fired is not None and fired == self.active:
            self.fired = -fired  # raised once; disarm still sees the deadline passed (below)
            raise RewardTimeout(0.0)
        if callable(self.previous):
            self.previous(signum, frame)

    def passed(self, token: int) -> bool:
        return self.fired in (token, -token)


_watchdog = _Watchdog()
_depth = 0  # nested calls (a gate scored inside the reward it gates) run under the outer limit


def _give_up(what: str, grace: float) -> None:
    message = (f"\nError: {what} is still running {grace:g}s after its time limit, inside native code that "
               f"cannot be interrupted. Ending the process (exit code 3) rather than hold the machine; the "
               f"last checkpoint is intact (grpo train CONFIG --resume). Fix or drop the reward, or raise its "
               f"limit (time_limit: in its rewards entry, or health.reward_time_limit).\n")
    try:
        os.write(2, message.encode())
    finally:
        os._exit(3)


def _install() -> None:
    current = signal.getsignal(SIGNAL)
    if current != _watchdog.handler:
        _watchdog.previous = current
        signal.signal(SIGNAL, _watchdog.handler)


def _native_timer(seconds: float) -> bool:
    """faulthandler's timer, on the real stderr (a captured sys.stderr has no file descriptor)."""
    stream = sys.__stderr__
    if stream is None:
        return False
    try:
        faulthandler.dump_traceback_later(seconds, exit=True, file=stream)
    except (ValueError, OSError):
        return False
    return True


@contextmanager
def _signalled(seconds: float, what: str, grace: float):
    global _depth
    if _depth:
        yield
        return
    _install()
    _depth += 1
    token = _watchdog.arm(seconds, what, grace)
    native = _native_timer(seconds + grace + 1.0)
    try:
        yield
    except RewardTimeout:
        if _watchdog.passed(token):
            raise RewardTimeout(seconds) from None
        raise
    finally:
        # blocked while disarming: a signal sent as the call returned is then delivered when
        # nothing is armed, and ignored
        signal.pthread_sigmask(signal.SIG_BLOCK, [SIGNAL])
        try:
            if native:
                faulthandler.cancel_dump_traceback_later()
            _watchdog.disarm(token)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, [SIGNAL])
            _depth -= 1


def call_within(seconds: float | None, func: Callable[[], Any], what: str = "a reward",
                grace: float | None = None):
    """``func()``, or :class:`RewardTimeout` once ``seconds`` have passed. ``None`` or 0:
    no limit. (No arguments are forwarded: a dataset column may be called anything.)"""
    if not seconds or seconds <= 0:
        return func()
    grace = max(10.0, float(seconds)) if grace is None else grace
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_kill"):
        with _signalled(float(seconds), what, grace):
            return func()
    return _in_thread(float(seconds), func)


class _Caller:
    """A daemon thread that runs one call at a time and waits for the next when its call
    returns; a call past its limit keeps it busy (left running) until the call ends."""

    idle: list[_Caller] = []
    lock = threading.Lock()

    def __init__(self):
        import queue

        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.pid = os.getpid()
        self.thread = threading.Thread(target=self._serve, name="grpo-reward-call", daemon=True)
        self.thread.start()

    @classmethod
    def take(cls) -> _Caller:
        with cls.lock:
            while cls.idle:
                caller = cls.idle.pop()
                if caller.pid == os.getpid():  # not a thread of the process this one was forked from
                    return caller
        return cls()

    def _serve(self) -> None:
        while True:
            func, box, done = self.jobs.get()
            try:
                box["value"] = func()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                box["error"] = exc
            del func
            with self.lock:  # free before the caller hears back, so its next call finds this thread
                self.idle.append(self)
            done.set()
            del box, done  # nothing of the call is kept while the thread waits


def _in_thread(seconds: float, func: Callable[[], Any]):
    box: dict = {}
    done = threading.Event()
    _Caller.take().jobs.put((func, box, done))
    if not done.wait(seconds):
        raise RewardTimeout(seconds, left_running=True)
    if "error" in box:
        raise box["error"]
    return box["value"]


_reported: set[str] = set()


def report_once(name: str, source: str, exc: RewardTimeout, log: Callable[[str], None] | None = None) -> None:
    """The warning for a reward that timed out, once per reward and process (the
    parameter check, grpo check and training would each say it otherwise)."""
    if name in _reported:
        return
    _reported.add(name)
    message = f"warning: {describe(name, source, exc)}"
    if log is not None:
        log(message)
    else:
        print(message, file=sys.stderr, flush=True)


def describe(name: str, source: str, exc: RewardTimeout) -> str:
    """The one warning for a reward that timed out."""
    left = (" The call could not be stopped (it was made from a thread of its own) and is left running "
            "until the process exits." if exc.left_running else "")
    return (f"reward '{name}'{f' ({source})' if source else ''} ran past its time limit of {exc.seconds:g}s; "
            f"its items score None (left out by TRL) and are counted in rewards/{name}/timeouts.{left} Set "
            f"the limit per reward (time_limit: in its rewards entry, or 'NAME within 300s') or for all with "
            f"health.reward_time_limit.")


__all__ = ["RewardTimeout", "call_within", "describe", "report_once", "DEFAULT_SECONDS"]

if __name__ == "__main__":  # pragma: no cover - a manual check: python -m grpo_core.base.timelimit
    t0 = time.monotonic()
    try:
        call_within(0.5, lambda: time.sleep(30))
    except RewardTimeout as exc:
        print(f"{exc} after {time.monotonic() - t0:.2f}s", file=sys.stderr)
