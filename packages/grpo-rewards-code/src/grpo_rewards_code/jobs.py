"""What the sandbox is asked to run (:class:`Job`, :class:`Limits`) and what it
reports (:class:`Result`). Plain data: no processes are started here."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# the code's own failures that are not a crash of the run
SYNTAX_ERRORS = frozenset({"SyntaxError", "IndentationError", "TabError"})


@dataclass(frozen=True)
class Limits:
    """Per-run limits. ``timeout``: wall clock from the sandbox's start, after which
    the whole process tree is killed; ``memory_mb``: address space; ``file_mb``:
    largest file the code may write; ``processes``: RLIMIT_NPROC (threads count;
    not enforced for root, whose new processes seccomp refuses instead);
    ``output_kb``: stdout plus stderr before the run is killed; ``seccomp``: the
    system-call filter (no new processes or programs, no sockets, no signals to
    other processes)."""

    timeout: float = 5.0
    memory_mb: int = 1024
    file_mb: int = 16
    processes: int = 64
    output_kb: int = 1024
    seccomp: bool = True

    def __post_init__(self):
        t = self.timeout
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not (t > 0 and math.isfinite(t)):
            raise ValueError(f"timeout={t!r}: give the per-run wall-clock limit in seconds (> 0).")
        for name in ("memory_mb", "file_mb", "processes", "output_kb"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name}={value!r}: give a positive whole number.")
        if self.memory_mb < 64:
            raise ValueError(f"memory_mb={self.memory_mb}: Python itself needs about 30 MB; give at least 64.")

    @property
    def cpu_seconds(self) -> int:
        return int(math.ceil(self.timeout)) + 1

    def for_harness(self) -> dict:
        return {"cpu": self.cpu_seconds, "memory_mb": self.memory_mb, "file_mb": self.file_mb,
                "nproc": self.processes, "nofile": 256}


@dataclass(frozen=True)
class Job:
    """``code`` (the model's) after ``setup`` (the dataset's imports), then each of
    ``tests`` on its own; ``mode="raw"``: ``code`` is a whole program whose stdout,
    stderr and exit status are the result (``stdin`` is its input)."""

    code: str
    tests: tuple[str, ...] = ()
    setup: str = ""
    mode: str = "tests"
    stdin: str = ""
    strict: bool = True  # asserts compare plain values only (see grpo_rewards_code.asserts)


@dataclass
class Result:
    """One run. ``status``: ``ok`` (ran to the end), ``timeout``, ``output_limit``,
    ``crashed`` (the process died mid-run: os._exit, a signal, a memory kill) or
    ``sandbox_error`` (the sandbox itself did not start: not the code's fault)."""

    status: str
    code_error: str | None = None  # exception class the code raised at top level
    tests: list[str | None] = field(default_factory=list)  # per test: pass | fail | <exception> | None
    setup_error: str | None = None
    exit_code: int | None = None  # raw mode: the program's exit status
    returncode: int | None = None
    stdout: bytes = b""
    stderr: bytes = b""
    detail: str = ""
    layers: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def passed(self) -> int:
        return sum(t == "pass" for t in self.tests)

    @property
    def ran_clean(self) -> bool:
        """The code ran to its end without an exception, within every limit."""
        return self.status == "ok" and self.code_error is None

    @property
    def cause(self) -> str:
        """One word for metrics and logs: passed, failed, ran (no tests, no error),
        syntax_error, error, memory, timeout, output_limit, crashed, sandbox_error,
        setup_error (the row's own setup code raised: not the completion's fault)."""
        if self.status != "ok":
            return self.status
        if self.setup_error is not None:
            return "setup_error"
        if self.code_error in SYNTAX_ERRORS:
            return "syntax_error"
        if self.code_error == "MemoryError" or "MemoryError" in self.tests:
            return "memory"
        if self.tests and all(t == "pass" for t in self.tests):
            return "passed"
        if self.code_error is not None:
            return "error"
        return "failed" if self.tests else "ran"


def prepared_tests(job: Job) -> list[str]:
    """The tests as the harness gets them: asserts rewritten when ``job.strict``."""
    if not job.strict:
        return list(job.tests)
    from .asserts import rewrite

    return [rewrite(t) for t in job.tests]


def read_verdicts(res: Result, token: str, data: bytes) -> set[str]:
    """Fill ``res`` from the verdict lines in ``data`` that carry ``token`` (anything
    else is ignored: the code may print what it likes); the kinds of line seen."""
    prefix = token.encode() + b" "
    seen: set[str] = set()
    n = len(res.tests)
    for line in data.split(b"\n"):
        if not line.startswith(prefix):
            continue
        fields = line[len(prefix):].decode("ascii", "replace").split(" ")
        kind, args = fields[0], fields[1:]
        seen.add(kind)
        if kind == "ready":
            res.layers = dict(a.split("=", 1) for a in args if "=" in a)
        elif kind == "code" and args:
            res.code_error = None if args[0] == "ok" else args[0]
        elif kind == "setup" and args:
            res.setup_error = args[0]
        elif kind == "test" and len(args) == 2 and args[0].isdigit() and int(args[0]) < n:
            res.tests[int(args[0])] = args[1]
        elif kind == "exit" and args and args[0].lstrip("-").isdigit():
            res.exit_code = int(args[0])
        elif kind == "setup_error":
            res.detail = "sandbox setup failed: " + " ".join(args)
    return seen


__all__ = ["Limits", "Job", "Result", "SYNTAX_ERRORS", "prepared_tests", "read_verdicts"]
