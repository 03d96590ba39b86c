"""stdin/stdout test cases: open-r1's ``verification_info`` column read, bounded,
and a program's output judged against each case.

A row's ``verification_info`` is ``{"language": "python", "test_cases": [{"input":
"...", "output": "...", "type": "stdin_stdout"}, ...]}`` (a dict or its JSON
text). The program runs once per case with the case's input on stdin; a case
passes when the program exits with status 0 and prints the expected lines.

The comparison is open-r1's (``evaluate_code`` in ``code_reward``, ``src/open_r1/rewards.py``
at commit 1416fa0): a case whose run exits with a nonzero status fails, the
others still run; the output, stripped, is split into lines and each line is
compared stripped. Two differences, on purpose:

- the stripped output must have as many lines as the stripped expected output.
  open-r1 pairs the lines with ``zip``, which stops at the shorter side, so a
  program that prints only the first line of a multi-line answer passes
  there: a reward hack. It fails here.
- a case past the time limit fails on its own. In open-r1 the ``TimeoutExpired``
  escapes its script, and the whole completion scores 0.0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MAX_CASES = 50  # cases per row; later ones are left out
MAX_INPUT_BYTES = 1 << 20  # a case's stdin; a larger case is left out
MAX_OUTPUT_BYTES = 64 << 10  # a case's expected stdout (the sandbox keeps 64 KiB of stdout); larger: left out
MAX_INFO_CHARS = 64 << 20  # a verification_info JSON text; longer is refused before parsing


@dataclass(frozen=True)
class Case:
    """One stdin/stdout case."""

    input: str
    output: str


@dataclass(frozen=True)
class Cases:
    """A row's cases, and how many the caps left out (logged, not scored)."""

    cases: tuple[Case, ...]
    left_out: int = 0

    def __len__(self) -> int:
        return len(self.cases)


def _decoded(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if len(value) > MAX_INFO_CHARS:
        raise ValueError(f"a 'verification_info' text of {len(value)} characters is over the "
                         f"{MAX_INFO_CHARS >> 20} Mi limit; keep at most {MAX_CASES} cases of bounded size per row.")
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"'verification_info' is not valid JSON ({exc}): {value!r:.100}. Give a dict "
                         f"{{\"language\": \"python\", \"test_cases\": [...]}} or its JSON text.") from None


def _case(index: int, raw: Any) -> Case:
    if not isinstance(raw, dict) or not isinstance(raw.get("input"), str) or not isinstance(raw.get("output"), str):
        raise ValueError(f"test case {index} of 'verification_info' is {raw!r:.100}; each case must be "
                         f"{{\"input\": str, \"output\": str, \"type\": \"stdin_stdout\"}}.")
    kind = raw.get("type", "stdin_stdout")
    if kind != "stdin_stdout":
        raise ValueError(f"test case {index} of 'verification_info' has type {kind!r}; code.tests runs "
                         f"'stdin_stdout' cases only. Filter the dataset to those rows, or give assert tests "
                         f"in a 'tests' column.")
    return Case(raw["input"], raw["output"])


@lru_cache(maxsize=4096)
def _parse_text(value: str) -> Cases:
    return _parse(_decoded(value))


def cases_of(value: Any) -> Cases:
    """A row's ``verification_info`` as :class:`Cases`; None means no cases.

    At most :data:`MAX_CASES` cases are kept; a case whose input is over
    :data:`MAX_INPUT_BYTES` or whose output is over :data:`MAX_OUTPUT_BYTES` is left
    out (both counted in ``left_out``). A language other than Python, or a shape
    other than open-r1's, is a ``ValueError`` that names the value."""
    if value is None:
        return Cases(())
    if isinstance(value, str):
        return _parse_text(value)
    return _parse(value)


def _parse(info: Any) -> Cases:
    if not isinstance(info, dict) or not isinstance(info.get("test_cases", []), list):
        raise ValueError(f"'verification_info' must be a dict {{\"language\": \"python\", \"test_cases\": [...]}} "
                         f"(or its JSON text), got {type(info).__name__} {info!r:.100}.")
    language = info.get("language", "python")
    if language not in ("python", "python3"):
        raise ValueError(f"'verification_info' has language {language!r}; code.tests runs Python only. Filter "
                         f"the dataset to its Python rows.")
    raw = info.get("test_cases") or []
    kept = []
    for i, case in enumerate(raw[:MAX_CASES]):
        c = _case(i, case)
        if len(c.input.encode()) <= MAX_INPUT_BYTES and len(c.output.encode()) <= MAX_OUTPUT_BYTES:
            kept.append(c)
    return Cases(tuple(kept), len(raw) - len(kept))


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def output_matches(output: str, expected: str) -> str | None:
    """None when ``output`` matches ``expected`` line by line (each line stripped, the
    whole text stripped first, the same number of lines), else what differs."""
    got, want = _lines(output), _lines(expected)
    if len(got) != len(want):
        return f"printed {len(got)} line(s), expected {len(want)}"
    for j, (a, b) in enumerate(zip(got, want)):
        if a != b:
            return f"line {j + 1}: expected {b[:40]!r}, got {a[:40]!r}"
    return None


def _exception(stderr: bytes) -> str:
    """The exception class a traceback ends with ('' when there is none)."""
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    last = lines[-1] if lines else ""
    name = last.split(":", 1)[0].strip()
    return name if name.isidentifier() or name.replace(".", "").isidentifier() else ""


def _stopped(result) -> tuple[str, str] | None:
    """(cause, why) when the run did not end with exit status 0, else None."""
    if result.status != "ok":
        return result.status, result.detail or result.status
    if result.exit_code:
        error = _exception(result.stderr)
        cause = "memory" if error == "MemoryError" else "error"
        return cause, f"exit status {result.exit_code}" + (f" ({error})" if error else "")
    return None


@dataclass(frozen=True)
class Verdict:
    """What a row's cases gave: ``passed`` of ``total``, one word for metrics
    (``passed``, ``failed``, ``error``, ``memory``, ``timeout``, ``output_limit``,
    ``crashed``, ``sandbox_error``) and the first failure in words."""

    passed: int
    total: int
    cause: str
    detail: str


def judge(results: list, cases: tuple[Case, ...]) -> Verdict:
    """The verdict on one program from its runs (one :class:`~grpo_rewards_code.jobs.Result`
    per case, in order). The cause and the detail are the first failing case's."""
    n = len(cases)
    passed, first = 0, None
    for k, (result, case) in enumerate(zip(results, cases)):
        if result.status == "sandbox_error":
            return Verdict(0, n, "sandbox_error", f"case {k + 1} of {n}: {result.detail}")
        stopped = _stopped(result)
        wrong = None if stopped else output_matches(result.stdout.decode("utf-8", "replace"), case.output)
        if stopped is None and wrong is None:
            passed += 1
        elif first is None:
            first = stopped or ("failed", f"wrong output ({wrong})")
            first = (first[0], f"case {k + 1} of {n}: {first[1]}")
    if first is None:
        return Verdict(passed, n, "passed", "")
    return Verdict(passed, n, first[0], f"{passed} of {n} cases passed; {first[1]}")


__all__ = ["Case", "Cases", "Verdict", "cases_of", "output_matches", "judge", "MAX_CASES", "MAX_INPUT_BYTES",
           "MAX_OUTPUT_BYTES", "MAX_INFO_CHARS"]
