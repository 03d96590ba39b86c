"""Sandbox processes, several at a time, each under its limits, from one thread.

One selector watches every running sandbox's pipes (the verdict channel, stdout,
stderr, the payload going in) and, where the kernel has them, pidfds for exits.
A run past its wall-clock limit, or printing past its output limit, has its whole
process group killed (the pid namespace of bwrap/unshare takes the rest with
it), its pipes closed at once, and the batch goes on: nothing waits on a child
that will not die. Every process started is in a registry that an exit hook
empties, so none outlives the trainer; the harness also dies with its parent
(``PR_SET_PDEATHSIG`` / bwrap ``--die-with-parent`` / unshare ``--kill-child``).
"""

from __future__ import annotations

import atexit
import marshal
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from typing import IO

from .backends import Backend, harness_code
from .jobs import Job, Limits, Result, prepared_tests, read_verdicts

CHANNEL_CAP = 256 << 10  # verdict bytes: a test line is ~45 bytes
KEEP = 64 << 10  # stdout / stderr bytes kept for the result
EXIT_GRACE = 2.0  # seconds a killed process may take to go before it is left to the exit hook

_lock = threading.Lock()
_live: dict[int, subprocess.Popen] = {}
_run_ids: deque[str] = deque(maxlen=100_000)  # runs started here, newest last
_owner = os.getpid()
_hook = False


def _track(proc: subprocess.Popen) -> None:
    global _hook, _owner
    with _lock:
        if os.getpid() != _owner:  # a forked child: the parent's sandboxes are not ours
            _live.clear()
            _owner = os.getpid()
        _live[proc.pid] = proc
        if not _hook:
            atexit.register(kill_all)
            _hook = True


def _untrack(proc: subprocess.Popen) -> None:
    with _lock:
        if proc.returncode is not None:
            _live.pop(proc.pid, None)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # start_new_session: the group id is the pid
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except (ProcessLookupError, OSError):
        pass


def kill_all() -> None:
    """Kill every sandbox this process started that may still run (runs at exit)."""
    with _lock:
        procs = list(_live.values()) if os.getpid() == _owner else []
    for proc in procs:
        _kill_group(proc)
    for proc in procs:
        try:
            proc.wait(timeout=EXIT_GRACE)
        except subprocess.TimeoutExpired:
            pass
        _untrack(proc)


def live_count() -> int:
    """Sandbox processes started here that have not been reaped yet."""
    with _lock:
        for pid, proc in list(_live.items()):
            if proc.poll() is not None:
                del _live[pid]
        return len(_live)


def _pids_with(tag: bytes) -> list[int]:
    """Processes whose command line holds ``tag`` (a run id), wherever they were reparented."""
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if tag in f.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


def _make_sure_gone(run_id: str) -> None:
    """After a kill: every process of the run (the sandbox's own init and the code,
    which a pid namespace may still be tearing down) is dead, or EXIT_GRACE passed."""
    tag, deadline = run_id.encode(), time.monotonic() + EXIT_GRACE
    while True:
        pids = _pids_with(tag)
        if not pids or time.monotonic() > deadline:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.005)


def our_processes() -> list[int]:
    """Processes anywhere on the host that belong to runs this process started
    (found by run id in /proc, reparented or not). Between batches: none."""
    with _lock:
        ids = {i.encode() for i in _run_ids}
    if not ids:
        return []
    found = []
    for pid in _pids_with(b"grpo-run-"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if ids.intersection(argv):
            found.append(pid)
    return found


def _remove_tree(path: str) -> None:
    def retry(func, p, _exc):
        try:
            os.chmod(os.path.dirname(p), 0o700)
            os.chmod(p, 0o700)
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=retry)


def _pipe_holding(data: bytes) -> int:
    """The read end of a pipe that holds ``data`` (a few KB: within the pipe's buffer)."""
    read, write = os.pipe()
    try:
        os.write(write, data)
    finally:
        os.close(write)
    return _high_fd(read)


def _high_fd(fd: int) -> int:
    """Keep the channel off 0-2 (they become the child's stdio)."""
    if fd > 2:
        return fd
    import fcntl

    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return new


class _Run:
    """One job: its process, its pipes and what came out of them."""

    def __init__(self, job: Job, backend: Backend, limits: Limits, sel: selectors.BaseSelector):
        self.job, self.limits, self.sel = job, limits, sel
        self.token = secrets.token_hex(16)  # only the harness sees it (stdin)
        self.run_id = "grpo-run-" + secrets.token_hex(8)  # on the command line, for /proc
        with _lock:
            _run_ids.append(self.run_id)
        self.start = time.monotonic()
        self.deadline = self.start + limits.timeout
        self.killed: str | None = None
        self.killed_at = 0.0
        self.bufs = {"chan": bytearray(), "stdout": bytearray(), "stderr": bytearray()}
        self.out_total = 0
        self.open: set[str] = set()
        self.proc: subprocess.Popen | None = None
        self.pidfd: int | None = None
        self.error = ""
        self.host_dir = tempfile.mkdtemp(prefix="grpo-code-") if backend.host_dir else None
        try:
            self._spawn(backend)
        except OSError as exc:  # bwrap/unshare/python missing or not executable
            self.error = f"cannot start the {backend.name} sandbox: {exc}"

    def _spawn(self, backend: Backend) -> None:
        read, write = os.pipe()
        write = _high_fd(write)
        fds = [write]
        bpf = backend.seccomp_filter() if self.limits.seccomp else None
        if bpf is not None:
            fds.append(_pipe_holding(bpf))
        payload = {"token": self.token, "mode": self.job.mode, "code": self.job.code,
                   "tests": prepared_tests(self.job), "setup": self.job.setup, "stdin": self.job.stdin,
                   "limits": self.limits.for_harness(), "seccomp": self.limits.seccomp, "channel": write,
                   **backend.payload(self.host_dir, filter_loaded=bpf is not None)}
        try:
            self.proc = subprocess.Popen(
                backend.argv(self.run_id, fds[1] if bpf is not None else None), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=tuple(fds), cwd=self.host_dir or "/",
                env=backend.environment(self.host_dir), start_new_session=True,
            )
        except BaseException:
            os.close(read)
            raise
        finally:
            for fd in fds:
                os.close(fd)
        _track(self.proc)
        self.pending = memoryview(marshal.dumps((harness_code(), payload)))
        stdin, stdout, stderr = self._pipes()
        os.set_blocking(stdin.fileno(), False)
        self.sel.register(stdin, selectors.EVENT_WRITE, (self, "stdin"))
        self.chan = os.fdopen(read, "rb", buffering=0)
        for name, f in (("chan", self.chan), ("stdout", stdout), ("stderr", stderr)):
            self.sel.register(f, selectors.EVENT_READ, (self, name))
            self.open.add(name)
        try:
            self.pidfd = os.pidfd_open(self.proc.pid)
            self.sel.register(self.pidfd, selectors.EVENT_READ, (self, "exit"))
        except (AttributeError, OSError):
            self.pidfd = None

    # ---------------------------------------------------------------- events

    def on_event(self, name: str) -> None:
        if name == "stdin":
            self._feed()
        elif name == "exit":
            self._drop(self.pidfd)
            self.pidfd = None
        else:
            self._read(name)

    def _pipes(self) -> tuple[IO[bytes], IO[bytes], IO[bytes]]:
        """The child's stdin, stdout and stderr: all three pipes once it is spawned."""
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        return proc.stdin, proc.stdout, proc.stderr

    def _feed(self) -> None:
        f = self._pipes()[0]
        try:
            n = os.write(f.fileno(), self.pending[:65536])
            self.pending = self.pending[n:]
            if self.pending:
                return
        except BlockingIOError:
            return
        except OSError:  # the child is gone or closed its stdin
            pass
        self._drop(f)

    def _read(self, name: str) -> None:
        _, stdout, stderr = self._pipes()
        f: IO[bytes] = {"chan": self.chan, "stdout": stdout, "stderr": stderr}[name]
        try:
            data = os.read(f.fileno(), 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._drop(f)
            self.open.discard(name)
            return
        buf = self.bufs[name]
        if name == "chan":
            buf += data
            if len(buf) > CHANNEL_CAP:
                self.kill("output_limit")
            return
        if len(buf) < KEEP:
            buf += data[: KEEP - len(buf)]
        self.out_total += len(data)
        if self.out_total > self.limits.output_kb * 1024:
            self.kill("output_limit")

    def _drop(self, f) -> None:
        try:
            self.sel.unregister(f)
        except (KeyError, ValueError):
            pass
        try:
            f.close() if hasattr(f, "close") else os.close(f)
        except OSError:
            pass

    # ---------------------------------------------------------------- life cycle

    def kill(self, why: str) -> None:
        if self.killed is None:
            self.killed, self.killed_at = why, time.monotonic()
        if self.proc is None:
            return
        _kill_group(self.proc)
        for f in (self.chan, self.proc.stdout, self.proc.stderr, self.proc.stdin):
            self._drop(f)  # a grandchild holding a pipe must not keep us waiting
        self.open.clear()

    def check(self, now: float) -> bool:
        """Enforce the deadline; True once the run is over."""
        if self.proc is None:
            return True
        if self.killed is None and now >= self.deadline:
            self.kill("timeout")
        exited = self.proc.poll() is not None
        if self.killed is not None:
            return exited or now - self.killed_at > EXIT_GRACE  # else the exit hook reaps it
        return exited and not self.open

    def next_event(self) -> float:
        return self.killed_at + EXIT_GRACE if self.killed else self.deadline

    def finish(self) -> Result:
        if self.proc is not None:
            if self.proc.poll() is None:
                _kill_group(self.proc)  # only after a kill that has not landed yet; the exit hook reaps
            for f in (self.chan, self.proc.stdout, self.proc.stderr, self.proc.stdin):
                self._drop(f)
            if self.pidfd is not None:
                self._drop(self.pidfd)
                self.pidfd = None
            _untrack(self.proc)
            if self.killed is not None:
                _make_sure_gone(self.run_id)
        if self.host_dir:
            _remove_tree(self.host_dir)
        return _result(self)

    def abort(self) -> None:
        if self.proc is not None:
            self.kill("aborted")
        self.finish()


def _result(run: _Run) -> Result:
    res = Result(status="ok", tests=[None] * len(run.job.tests), seconds=time.monotonic() - run.start,
                 stdout=bytes(run.bufs["stdout"]), stderr=bytes(run.bufs["stderr"]))
    if run.proc is None:
        res.status, res.detail = "sandbox_error", run.error
        return res
    res.returncode = run.proc.returncode
    seen = read_verdicts(res, run.token, bytes(run.bufs["chan"]))
    if run.killed in ("timeout", "output_limit"):
        res.status = run.killed
        res.detail = (f"killed after the {run.limits.timeout:g} s wall-clock limit" if run.killed == "timeout"
                      else f"killed: printed past the {run.limits.output_kb} KiB output limit")
    elif "ready" not in seen:
        res.status = "sandbox_error"
        tail = bytes(run.bufs["stderr"][-600:]).decode("utf-8", "replace").strip()
        res.detail = f"the sandbox did not start (exit status {res.returncode}): {tail or 'no message'}"
    elif ("exit" if run.job.mode == "raw" else "done") not in seen:
        rc = res.returncode
        sig = -rc if rc is not None and rc < 0 else (rc - 128 if rc is not None and rc > 128 else 0)
        res.status = "timeout" if sig == signal.SIGXCPU else "crashed"
        res.detail = (f"killed by {signal.Signals(sig).name}" if sig in signal.valid_signals()
                      else f"ended early with exit status {rc}")
    return res


def run_jobs(jobs: list[Job], backend: Backend, limits: Limits, workers: int) -> list[Result]:
    """One Result per job, in order; at most ``workers`` sandboxes at a time."""
    results: list[Result | None] = [None] * len(jobs)
    queue = deque(range(len(jobs)))
    running: dict[int, _Run] = {}
    sel = selectors.DefaultSelector()
    try:
        while queue or running:
            while queue and len(running) < workers:
                i = queue.popleft()
                running[i] = _Run(jobs[i], backend, limits, sel)
            now = time.monotonic()
            soonest = min(r.next_event() for r in running.values())
            tick = 0.02 if any(r.pidfd is None for r in running.values()) else 0.5
            for key, _ in sel.select(timeout=max(0.0, min(soonest - now, tick))):
                run, name = key.data
                run.on_event(name)
            now = time.monotonic()
            for i, run in list(running.items()):
                if run.check(now):
                    results[i] = run.finish()
                    del running[i]
    finally:
        for run in running.values():
            run.abort()
        sel.close()
    return results  # type: ignore[return-value]


__all__ = ["run_jobs", "kill_all", "live_count", "our_processes"]
