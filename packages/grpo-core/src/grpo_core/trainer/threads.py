"""Torch's CPU threads on a machine shared with other work.

torch's CPU wheels run their parallel regions on GNU OpenMP (libgomp), whose threads,
having finished their part, spin for about 300,000 rounds (some milliseconds) before
they sleep. Decoding a small model token by token runs thousands of tiny parallel
regions a second, each ending in such a wait. Alone, the other thread arrives within
microseconds. Beside a busy process, one of torch's threads is often off its core for a
scheduler slice; its partner then spins its own time away waiting for it, time the
scheduler counts against the run. A step took 6x its time alone beside one busy
process (a fair share of two cores is 2x), a generation 15x beside a loaded machine.

The repair, measured by ``bench/contention.py``: ``model.generation_threads: auto`` (the
default) runs each training step (its sampling, loss and backward pass) on the cores other
processes leave idle, read from ``/proc/stat`` at the step's start (``CoreMeter``), never
more than torch's own threads: on one core a region waits for no partner at all. Alone,
the step keeps torch's threads and OpenMP's own wait (setting ``OMP_WAIT_POLICY=PASSIVE``
instead cost 12-18 % of a quickstart step on a quiet machine: 13.0-13.9 s against
10.7-12.9 s).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, MutableMapping


@contextlib.contextmanager
def thread_independent_attention(device: str, on: bool = True):
    """Inside, on a CPU, torch's scaled-dot-product attention runs its math kernel, whose
    results do not depend on the thread count. Its flash kernel's one-query path (each
    decoded token) splits the cached keys across threads and sums their parts in an order
    that follows the thread count: the same seed sampled other tokens when ``auto`` gave a
    step one thread instead of two (issue 55; full-length passes, q > 1, are the same at any
    count). ``on`` False, or another device: nothing changes."""
    if not on or device != "cpu":
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.MATH]):
        yield


# the user's own thread count: model.generation_threads auto keeps it
THREAD_SETTINGS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
# the shortest window CoreMeter reads the other processes' load over (seconds)
MIN_WINDOW = 0.2


def threads_for(cores: int, others: float, ceiling: int) -> int:
    """Threads for the next generation: the cores of ``cores`` that other processes
    (keeping ``others`` cores busy) leave idle, a core counting when at least half of it
    is; at least 1, at most ``ceiling`` (torch's own threads)."""
    idle = int(cores - others + 0.5)
    return max(1, min(ceiling, idle))


def auto_threads(setting, environ: MutableMapping[str, str] | None = None) -> int | str | None:
    """``model.generation_threads`` as sampling uses it: a number, "auto", or None
    (torch's own). ``auto`` is torch's own where the user fixed the count
    (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``)."""
    environ = os.environ if environ is None else environ
    if setting == "auto":
        return None if any(environ.get(k) for k in THREAD_SETTINGS) else "auto"
    return int(setting) if setting else None


def _cpu_ticks(cores: set[int], path: str = "/proc/stat") -> tuple[int, int] | None:
    """(busy, total) clock ticks of ``cores`` since boot, or None where /proc/stat is not."""
    busy = total = 0
    try:
        with open(path) as f:
            for line in f:
                name, *fields = line.split()
                if not name.startswith("cpu") or name == "cpu":
                    continue
                if not name[3:].isdigit():
                    break
                if int(name[3:]) in cores:
                    ticks = [int(x) for x in fields[:8]]  # user nice system idle iowait irq softirq steal
                    total += sum(ticks)
                    busy += sum(ticks) - ticks[3] - ticks[4]
    except (OSError, ValueError, IndexError):
        return None
    return (busy, total) if total else None


def _own_seconds() -> float:
    t = os.times()
    return t.user + t.system


class CoreMeter:
    """How many of this process's cores other processes keep busy, since the last reading:
    busy ticks of those cores (``/proc/stat``) less this process's own CPU time."""

    def __init__(self, ticks: Callable[[set[int]], tuple[int, int] | None] = _cpu_ticks,
                 own: Callable[[], float] = _own_seconds, sleep: Callable[[float], None] = time.sleep,
                 cores: set[int] | None = None, hz: int | None = None):
        if cores is None:
            cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
        self.cores, self.ticks, self.own, self.sleep = cores, ticks, own, sleep
        self.hz = hz or (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)
        self.last = self.read()

    def read(self):
        ticks = self.ticks(self.cores)
        return None if ticks is None else (*ticks, self.own(), time.monotonic())

    def others(self) -> float | None:
        """Cores kept busy by other processes since the last call (the first: since the
        meter was made, at least ``MIN_WINDOW`` seconds); None where it cannot tell."""
        if self.last is None:
            return None
        wait = MIN_WINDOW - (time.monotonic() - self.last[3])
        if wait > 0:
            self.sleep(wait)
        now = self.read()
        if now is None:
            return None
        busy, total, own = (now[i] - self.last[i] for i in range(3))
        self.last = now
        if total <= 0:
            return None
        per_core = total / len(self.cores)  # ticks each core went through
        return min(float(len(self.cores)), max(0.0, (busy - own * self.hz) / per_core))

    def threads(self, ceiling: int) -> int:
        """Threads for the next generation (``threads_for``); ``ceiling`` where it cannot tell."""
        others = self.others()
        return ceiling if others is None else threads_for(len(self.cores), others, ceiling)
