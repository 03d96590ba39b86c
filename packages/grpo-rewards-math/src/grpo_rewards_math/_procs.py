"""A pool of checker processes in which each worker has a pipe of its own.

Why not pebble's ``ProcessPool`` (used before issue 55): its workers take tasks from
one shared channel guarded by a lock in shared memory. A worker killed while it held
that lock (SIGKILL, the kernel's OOM killer) never released it, and every other
worker waited on it: SIGKILL of one of 2 workers in a 3,000-item batch hung 2 runs
in 10, for up to the batch's own deadline (2.9 hours).

Here nothing is shared between workers. One thread of the calling process (the
dispatcher) hands each idle worker one task at a time over that worker's pipe and
watches every worker's pipe and process sentinel. A worker that dies, however and
whenever, takes only its own pipe and the one task it held: that task fails with
:class:`WorkerDied` and the worker is replaced. A task past its limit has its
worker killed (SIGKILL: it holds nothing another process needs) and fails with
``TimeoutError``. No lock is ever held across processes, so no death can leave one
held.
"""

from __future__ import annotations

import collections
import pickle
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from multiprocessing import connection

START_FAILURES = 3  # workers in a row that die before they are ready: queued tasks fail instead of waiting
START_LIMIT = 60.0  # seconds a new worker may take to be ready (spawn imports sympy) before it counts as dead


class WorkerDied(Exception):
    """The checker process running a task exited before answering (killed, crashed)."""


class _Task:
    __slots__ = ("future", "payload", "timeout", "sent", "deadline", "started")

    def __init__(self, future: Future, payload: tuple, timeout: float | None):
        self.future, self.payload, self.timeout = future, payload, timeout
        self.sent = 0.0
        self.deadline: float | None = None
        self.started = False  # its future was moved on from pending (to running, or found cancelled)

    def begin(self) -> bool:
        """Mark it running; False when it was cancelled while it waited."""
        if not self.started:
            self.started = True
            return self.future.set_running_or_notify_cancel()
        return not self.future.done()

    def settle(self, value=None, error: BaseException | None = None) -> None:
        if not self.started:
            self.started = True
            if not self.future.set_running_or_notify_cancel():
                return
        if self.future.done() or self.future.cancelled():
            return
        if error is not None:
            self.future.set_exception(error)
        else:
            self.future.set_result(value)


class _Proc:
    """One checker process, the parent's end of its pipe, and the one task it runs."""

    def __init__(self, context, target: Callable):
        mine, theirs = context.Pipe(duplex=True)
        self.process = context.Process(target=target, args=(theirs,), daemon=True)
        try:
            self.process.start()
        finally:
            theirs.close()  # the child's end lives in the child only: its death reads as EOF here
        self.conn = mine
        self.ready = False
        self.ready_by = time.monotonic() + START_LIMIT
        self.task: _Task | None = None

    def end(self) -> None:
        try:
            self.process.kill()
            self.process.join(5)
        except (OSError, ValueError, AssertionError):
            pass
        self.conn.close()


class CheckerPool:
    """``schedule(func, args, timeout) -> Future``, run by ``size`` worker processes.

    ``context``: a multiprocessing context; ``target``: the worker's main function,
    called with its end of the pipe (``_worker.serve``)."""

    def __init__(self, size: int, context, target: Callable):
        self.size, self.context, self.target = size, context, target
        self._queue: collections.deque[_Task] = collections.deque()
        self._procs: list[_Proc] = []
        self._stopped = False
        self._start_failures = 0
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._thread = threading.Thread(target=self._loop, name="grpo-math-dispatcher", daemon=True)
        self._thread.start()

    @property
    def active(self) -> bool:
        return not self._stopped and self._thread.is_alive()

    def schedule(self, func: Callable, args: tuple = (), timeout: float | None = None) -> Future:
        if not self.active:
            raise RuntimeError("the checker pool is stopped")
        future: Future = Future()
        self._queue.append(_Task(future, (func, tuple(args)), timeout))
        self._wake()
        return future

    def stop(self) -> None:
        """Kill the workers; tasks not done fail with RuntimeError. Returns at once."""
        self._stopped = True
        self._wake()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def pids(self) -> list[int]:
        return [p.process.pid for p in list(self._procs) if p.process.pid]

    # -- the dispatcher thread ------------------------------------------------

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:  # full (a wake-up is pending anyway) or closed (stopped)
            pass

    def _loop(self) -> None:
        try:
            while not self._stopped:
                self._dispatch()
                self._collect(self._wait())
                self._expire(time.monotonic())
        finally:
            self._stopped = True
            stopped = RuntimeError("the checker pool was stopped")
            for proc in self._procs:
                proc.end()
                if proc.task is not None:
                    proc.task.settle(error=stopped)
            self._fail_queue(stopped)
            self._procs.clear()
            self._wake_r.close()
            self._wake_w.close()

    def _dispatch(self) -> None:
        while self._queue and len(self._procs) < self.size:
            try:
                self._procs.append(_Proc(self.context, self.target))
            except (OSError, EOFError, ValueError) as exc:  # no process to be had (fork refused, ...)
                if not self._procs:  # nobody to run the queue: it fails now instead of waiting
                    self._fail_queue(WorkerDied(f"cannot start a checker process: {exc}"))
                break
        for proc in self._procs:
            if proc.ready and proc.task is None:
                self._hand(proc)

    def _hand(self, proc: _Proc) -> None:
        while self._queue:
            task = self._queue.popleft()
            if not task.begin():
                continue  # cancelled while it waited: never sent
            try:
                proc.conn.send(task.payload)
            except (pickle.PicklingError, TypeError, AttributeError) as exc:  # the task itself does not pickle
                task.settle(error=exc)
                continue
            except OSError:  # the worker died before it read the task: the next worker takes it
                self._queue.appendleft(task)
                return
            task.sent = time.monotonic()
            task.deadline = task.sent + task.timeout if task.timeout else None
            proc.task = task
            return

    def _wait(self) -> list:
        deadlines = [p.task.deadline for p in self._procs if p.task is not None and p.task.deadline]
        deadlines += [p.ready_by for p in self._procs if not p.ready]
        timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
        watched = [self._wake_r] + [p.conn for p in self._procs] + [p.process.sentinel for p in self._procs]
        ready = connection.wait(watched, timeout)
        if self._wake_r in ready:
            try:
                while self._wake_r.recv(4096):
                    pass
            except OSError:  # drained
                pass
        return ready

    def _collect(self, ready: list) -> None:
        for proc in list(self._procs):
            if proc.conn not in ready and proc.process.sentinel not in ready:
                continue
            broken = False
            try:
                while proc.conn.poll():
                    self._answer(proc, proc.conn.recv())
            except (EOFError, OSError):
                broken = True  # its end closed: the worker is gone, or going (a message cut short)
            except Exception as exc:  # an answer that does not unpickle here: that task's error
                if proc.task is not None:
                    proc.task.settle(error=exc)
                    proc.task = None
            if broken or proc.process.sentinel in ready or not proc.process.is_alive():
                self._lost(proc)

    def _answer(self, proc: _Proc, message: tuple) -> None:
        kind, value = message
        if kind == "ready":
            proc.ready = True
            self._start_failures = 0
            return
        task, proc.task = proc.task, None
        if task is None:
            return
        task.future.took = time.monotonic() - task.sent  # type: ignore[attr-defined]  # seconds the worker took to answer (read by pool._Batch)
        if kind == "ok":
            task.settle(value)
        else:
            task.settle(error=value if isinstance(value, BaseException) else RuntimeError(str(value)))

    def _retire(self, proc: _Proc, error: BaseException | None = None) -> None:
        """Take ``proc`` out and kill it; its task, if any, fails with ``error`` (by
        default: :class:`WorkerDied`, with the exit code)."""
        self._procs.remove(proc)
        proc.end()
        if proc.task is not None:
            code = proc.process.exitcode
            proc.task.settle(error=error or WorkerDied(f"checker process {proc.process.pid} exited (code {code})"))
            proc.task = None

    def _lost(self, proc: _Proc) -> None:
        """A worker that exited (or whose pipe broke, or that never got ready): its one
        running task fails; it is replaced when there is work."""
        self._retire(proc)
        if not proc.ready:
            self._start_failures += 1
            if self._start_failures >= START_FAILURES:
                self._start_failures = 0
                self._fail_queue(WorkerDied(f"checker processes exit as they start (exit code {proc.process.exitcode})"))

    def _fail_queue(self, error: BaseException) -> None:
        while self._queue:
            self._queue.popleft().settle(error=error)

    def _expire(self, now: float) -> None:
        for proc in list(self._procs):
            if not proc.ready and now >= proc.ready_by:
                self._lost(proc)
                continue
            task = proc.task
            if task is not None and task.deadline is not None and now >= task.deadline:
                # SIGKILL: a check stuck in C holds the GIL and ignores SIGTERM
                self._retire(proc, TimeoutError(f"the check ran past its limit of {task.timeout:g} s"))
