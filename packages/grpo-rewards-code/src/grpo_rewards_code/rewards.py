"""The code rewards: TRL reward functions over the completion's code.

``code.tests`` and ``code.runs`` run the code in the sandbox (never in this
process); ``code.format`` only parses it. Module-level functions, so they pickle;
the sandbox loads on the first call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any, cast

from grpo_core.text import completion_text

from .extract import Extraction, extract_code, parses
from .stdio import MAX_CASES, MAX_INPUT_BYTES, MAX_OUTPUT_BYTES, Cases, Verdict, cases_of, judge

DEFAULT_TIMEOUT = 5.0
DEFAULT_MEMORY_MB = 1024
CAUSES = ("no_code", "no_tests", "syntax_error", "error", "memory", "timeout", "output_limit", "crashed",
          "sandbox_error", "setup_error")
METRIC = {"no_code": "no_code", "no_tests": "no_tests", "syntax_error": "syntax_errors", "error": "errors", "memory": "memory_errors",
          "timeout": "timeouts", "output_limit": "output_limits", "crashed": "crashes",
          "sandbox_error": "sandbox_errors", "setup_error": "setup_errors"}

log = logging.getLogger("grpo_rewards_code")
_reported: set[tuple[str, str]] = set()
_report_lock = threading.Lock()


def _aligned(name: str, completions: Sequence, column: Any) -> list:
    if isinstance(column, (str, bytes)) or not isinstance(column, Sequence):
        raise TypeError(f"'{name}' must be a list with one entry per completion (a dataset column), "
                        f"got {type(column).__name__} {column!r:.80}.")
    if len(column) != len(completions):
        raise ValueError(f"'{name}' has {len(column)} entries for {len(completions)} completions; they must align.")
    return list(column)


def tests_of(value: Any) -> tuple[str, ...]:
    """A row's tests: a list of test snippets (``assert f(1) == 2``), or one string
    holding a whole test program; None or an empty list means no tests."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, (list, tuple)) and all(isinstance(t, str) for t in value):
        return tuple(t for t in value if t.strip())
    raise TypeError(f"a 'tests' value must be a list of test strings (e.g. [\"assert f(1) == 2\"]) or one "
                    f"string, got {type(value).__name__} {value!r:.100}. Fix the dataset's tests column.")


def _setups(completions: Sequence, kwargs: dict) -> list[str]:
    column = kwargs.get("test_setup")
    if column is None:
        return [""] * len(completions)
    return ["" if s is None else str(s) for s in _aligned("test_setup", completions, column)]


def _limits(timeout: float, memory_mb: int):
    from .jobs import Limits

    return Limits(timeout=timeout, memory_mb=memory_mb)


def _settings(timeout, memory_mb, workers, sandbox, endpoint):
    """Check every parameter, even for an empty batch: a bad value, or a sandbox that
    does not work on this host, fails when the reward is bound, before any model loads
    (the core binds rewards with an empty batch); ``auto`` picks its backend then."""
    from . import sandbox as sb

    limits = _limits(timeout, memory_mb)
    sb.resolve_workers(workers)
    choice = sb.check_choice(sandbox, endpoint)
    if choice != "sandboxfusion":
        sb.backend(choice)  # probed once per process
    return limits, choice, workers, endpoint


def _execute(jobs: list, limits, workers, sandbox, endpoint) -> list:
    """Results for ``jobs``; identical jobs (a group's repeated completions) run once."""
    from . import sandbox as sb

    unique: dict = {}
    for job in jobs:
        unique.setdefault(job, None)
    keys = list(unique)
    for job, result in zip(keys, sb.run(keys, limits, workers, sandbox, endpoint)):
        unique[job] = result
    return [unique[job] for job in jobs]


def _warn_once(name: str, what: str) -> None:
    key = (name, what[:120])
    with _report_lock:
        if key in _reported:
            return
        _reported.add(key)
    log.warning("%s: %s", name, what)


def _report(name: str, results: list, rows: list) -> None:
    """Problems that are not the completion's fault are logged once per kind of message:
    the sandbox failing, the row's setup code raising, a test that does not compile,
    stdin/stdout cases left out by the caps."""
    for r in results:
        if r.status == "sandbox_error":
            _warn_once(name, f"the sandbox failed, the item scores None (counted in {name}/sandbox_errors): "
                             f"{r.detail}")
        elif r.setup_error:
            _warn_once(name, f"the row's test_setup raised {r.setup_error} in the sandbox (it has the standard "
                             f"library only); those items score None (counted in {name}/setup_errors)")
        elif "TestSyntaxError" in r.tests:
            _warn_once(name, "a test of the dataset does not compile; it counts as failed for every completion")
    left_out = sum(row.left_out for row in rows if isinstance(row, Cases))
    if left_out:
        _warn_once(name, f"{left_out} stdin/stdout case(s) of this batch's verification_info were left out: at "
                         f"most {MAX_CASES} cases per row, inputs up to {MAX_INPUT_BYTES >> 20} MiB and outputs "
                         f"up to {MAX_OUTPUT_BYTES >> 10} KiB are run (logged once)")


def _log(kwargs: dict, name: str, extractions: list[Extraction], causes: list[str], details: list[str]) -> None:
    """Causes as TRL metrics (``<name>/timeouts``, ...: counts in this batch; ``no_code``: a
    share) and per completion (``<name>/cause``; ``<name>/detail``: the first failure in
    words; ``<name>/answer``: the code read)."""
    try:
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and causes:
            for cause in CAUSES:
                count = sum(c == cause for c in causes)
                log_metric(f"{name}/{METRIC[cause]}", count / len(causes) if cause.startswith("no_") else float(count))
        log_extra = kwargs.get("log_extra")
        if callable(log_extra):
            log_extra(f"{name}/cause", list(causes))
            log_extra(f"{name}/detail", list(details))
            log_extra(f"{name}/answer", [(e.code or "")[:200] for e in extractions])
    except Exception:
        pass


def _extract_all(completions: Sequence) -> list[Extraction]:
    """The code of each completion; code that does not parse is marked, not sent to a sandbox."""
    out = []
    for c in completions:
        e = extract_code(completion_text(c))
        out.append(e if e.code is None or parses(e.code) else Extraction(e.code, "syntax_error"))
    return out


def _rows(completions: Sequence, tests: Any, kwargs: dict) -> list:
    """Each row's tests: its asserts (the ``tests`` column) when it has any, else its
    stdin/stdout cases (open-r1's ``verification_info`` column)."""
    info = kwargs.get("verification_info")
    if tests is None and info is None:
        raise ValueError("code.tests needs a 'tests' column (assert tests per row, e.g. [\"assert f(1) == 2\"]) or "
                         "a 'verification_info' column (open-r1's stdin/stdout cases); the dataset has neither.")
    n = len(completions)
    asserts = [tests_of(t) for t in _aligned("tests", completions, tests)] if tests is not None else [()] * n
    infos = _aligned("verification_info", completions, info) if info is not None else [None] * n
    return [a or cases_of(v) for a, v in zip(asserts, infos)]


def _jobs_for(code: str, row, setup: str) -> list:
    """Asserts: one run with every test; stdin/stdout cases: one run of the program per case."""
    from .jobs import Job

    if isinstance(row, Cases):
        return [Job(code, mode="raw", stdin=case.input) for case in row.cases]
    return [Job(code, row, setup)]


def _assert_verdict(r, row: tuple) -> Verdict:
    """The verdict of one run of the code with the row's asserts (none: ``code.runs``)."""
    n = len(row)
    why = (r.detail or r.status if r.status != "ok"
           else f"the row's test_setup raised {r.setup_error}" if r.setup_error
           else f"the code raised {r.code_error}" if r.code_error else None)
    if why:
        return Verdict(r.passed, n, r.cause, f"{r.passed} of {n} tests passed; {why}" if n else why)
    failing = [(k, t) for k, t in enumerate(r.tests) if t != "pass"]
    if not failing:
        return Verdict(r.passed, n, r.cause, "")
    k, verdict = failing[0]
    what = {"fail": "assertion failed", None: "did not run"}.get(verdict, f"raised {verdict}")
    return Verdict(r.passed, n, r.cause, f"{r.passed} of {n} tests passed; test {k + 1}: {what}")


def _judge(name: str, completions: Sequence, rows: list | None, kwargs: dict, settings, score) -> list:
    """Run each completion's code (with its row's tests; ``rows=None``: no tests) and
    score what ran with ``score(verdict)``: 0.0 without parseable code, None for a
    row without tests or a sandbox failure. Logs the causes."""
    limits, choice, workers, endpoint = settings
    setups = _setups(completions, kwargs)
    extractions = _extract_all(completions)
    needs_tests = rows is not None
    rows = rows if rows is not None else [()] * len(completions)  # (needs_tests: rows were given)
    todo = [i for i, (e, t) in enumerate(zip(extractions, rows)) if not e.why and (t or not needs_tests)]
    jobs = {i: _jobs_for(cast(str, extractions[i].code), rows[i], setups[i]) for i in todo}  # todo: code found
    results = _execute([job for i in todo for job in jobs[i]], limits, workers, choice, endpoint)
    ran, by_item = iter(results), {}
    for i in todo:
        by_item[i] = [next(ran) for _ in jobs[i]]
    out: list[tuple[float | None, str, str]] = []
    for i, e in enumerate(extractions):
        if needs_tests and not rows[i]:
            out.append((None, "no_tests", "the row has no tests"))
        elif e.code is None:
            out.append((0.0, "no_code", "" if e.why == "no_code" else f"the code block is {e.why.replace('_', ' ')}"))
        elif e.why:
            out.append((0.0, e.why, ""))
        else:
            v = (judge(by_item[i], rows[i].cases) if isinstance(rows[i], Cases)
                 else _assert_verdict(by_item[i][0], rows[i]))
            out.append((None if v.cause in ("sandbox_error", "setup_error") else score(v), v.cause, v.detail))
    _report(name, results, rows)
    _log(kwargs, name, extractions, [c for _, c, _ in out], [d for _, _, d in out])
    return [s for s, _, _ in out]


def tests(
    completions: list,
    tests: list | None = None,
    all_or_nothing: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: int = DEFAULT_MEMORY_MB,
    workers: int | None = None,
    sandbox: str | None = None,
    endpoint: str | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """Share of the row's tests that the completion's code passes, run in the sandbox.

    ``score = passed / number of tests``; with ``all_or_nothing=True``, 1.0 when
    every test passes, else 0.0. The code is the last fenced Python block (or the
    ``<answer>`` block, see ``code.format``). A row's tests come from one of two
    dataset columns:

    - ``tests``: a list of snippets per row (``assert f(2) == 4``), each run on its
      own after the code (and the optional ``test_setup`` column, e.g. imports).
      Asserts compare plain values only: an object whose ``__eq__`` always says True
      passes nothing.
    - ``verification_info`` (open-r1's; read for a row without asserts): ``{"language":
      "python", "test_cases": [{"input", "output", "type": "stdin_stdout"}]}``, a dict
      or its JSON text. The code runs as a program once per case, the case's input
      on stdin, under the limits below; a case passes when it exits with status 0 and
      its output, stripped, has the expected lines (each stripped). Unlike open-r1,
      whose ``zip`` stops at the shorter side, the number of lines must match: a
      program printing only the first line of a two-line answer fails that case; and
      a case past the time limit fails alone (open-r1 scores the whole completion 0).
      At most 50 cases per row, inputs up to 1 MiB, expected outputs up to 64 KiB:
      larger cases are left out (logged once). Another language, or another case
      type, is a ValueError naming the value.

    0.0 when there is no code, it does not parse or nothing passes; tests passed
    before a timeout, crash or output flood still count. None (no opinion) when the
    row has no tests, its ``test_setup`` raised, or the sandbox itself failed; a
    dataset with neither column is a ValueError. Each cause is a metric:
    ``code.tests/timeouts``, ``/crashes``, ``/memory_errors``, ``/output_limits``,
    ``/syntax_errors``, ``/errors``, ``/sandbox_errors``, ``/setup_errors`` (counts)
    and ``/no_code``, ``/no_tests`` (shares); per completion ``code.tests/cause`` and
    ``code.tests/detail`` (the first failure: which test or case, and how). Limits per
    run: ``timeout`` seconds of wall clock (the whole process tree is killed),
    ``memory_mb`` of address space, 16 MB files, 1 MB of output, no network, no
    new processes. ``workers``: sandboxes at a time (default ``GRPO_CODE_WORKERS``
    or the CPUs per process); ``sandbox``: ``auto`` (bwrap, else unshare, else
    rlimits), a backend by name, or ``sandboxfusion``
    with ``endpoint`` (a remote service).
    """
    settings = _settings(timeout, memory_mb, workers, sandbox, endpoint)
    if not completions:
        return []
    rows = _rows(completions, tests, kwargs)

    def score(verdict: Verdict) -> float:
        if all_or_nothing:
            return 1.0 if verdict.passed == verdict.total else 0.0
        return verdict.passed / verdict.total

    return _judge("code.tests", completions, rows, kwargs, settings, score)


def runs(
    completions: list,
    timeout: float = DEFAULT_TIMEOUT,
    memory_mb: int = DEFAULT_MEMORY_MB,
    workers: int | None = None,
    sandbox: str | None = None,
    endpoint: str | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """1.0 when the completion's code runs to its end without an exception, in the sandbox.

    The code (as ``code.tests`` reads it) runs after the optional ``test_setup``
    column, with no tests, under the same limits. 0.0 for no code, a syntax error,
    an exception, a timeout, a crash or an output flood; None when the sandbox
    itself failed. Causes are counted as in ``code.tests`` (``code.runs/timeouts``,
    ``/sandbox_errors``, ...). A shaping reward: code that defines a function and
    never calls it runs; pair it with ``code.tests``.
    """
    settings = _settings(timeout, memory_mb, workers, sandbox, endpoint)
    if not completions:
        return []
    return _judge("code.runs", completions, None, kwargs, settings, lambda verdict: 1.0 if verdict.cause == "ran" else 0.0)


def code_format(completions: list, **kwargs: Any) -> list[float | None]:
    """1.0 when the completion has code that parses as Python, else 0.0; nothing is run.

    Code: the last ``<answer>…</answer>`` block (its last fenced Python block if it
    holds one, else its whole text), otherwise the last closed fenced block tagged
    ``python``/``py``/``python3`` or untagged; blocks in other languages are
    skipped, an unclosed fence holds no code. It must be non-empty, at most 64,000
    characters, and ``ast.parse`` (in the trainer: parsing never executes) must
    accept it. Metric: ``code.format/no_code`` (share without a block).
    """
    extractions = _extract_all(completions)
    scores: list[float | None] = [1.0 if e.code is not None and not e.why else 0.0 for e in extractions]
    causes = [e.why or "ok" for e in extractions]
    try:
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and causes:
            log_metric("code.format/no_code", sum(e.code is None for e in extractions) / len(causes))
        log_extra = kwargs.get("log_extra")
        if callable(log_extra):
            log_extra("code.format/cause", causes)
            log_extra("code.format/answer", [(e.code or "")[:200] for e in extractions])
    except Exception:
        pass
    return scores


REWARDS = {"code.tests": tests, "code.runs": runs, "code.format": code_format}

__all__ = ["tests", "runs", "code_format", "REWARDS", "tests_of"]
