"""Code that runs inside the checker processes (never in the training process).

Imported by the forkserver (preload) and by each worker, so sympy and
math-verify load once per pool. math-verify's own signal-based timeouts are
switched off: the pool kills a worker that runs past the per-item limit.
Only booleans leave this process: a parsed sympy object is never printed or
pickled (``str()`` of one can itself hang).
"""

from __future__ import annotations

import logging
import os
from functools import lru_cache

from latex2sympy2_extended import NormalizationConfig  # noqa: F401  (warm the import)
from math_verify import LatexExtractionConfig, parse, verify
from math_verify import grader as _grader
from math_verify import parser as _parser

# We pass timeouts of None on purpose; silence the "timeout is disabled" warning.
_parser.TIMEOUT_WARNING_SHOWN = True
_grader.TIMEOUT_WARNING_SHOWN = True
for _name in ("math_verify", "latex2sympy2_extended"):
    logging.getLogger(_name).setLevel(logging.CRITICAL)

_LATEX = [LatexExtractionConfig(boxed_match_priority=-1)]


def init() -> None:
    """Pool initializer: cap the worker's memory (``GRPO_MATH_WORKER_MEMORY_MB``,
    default 4096; 0 = no cap) so a runaway computation fails instead of swapping."""
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


@lru_cache(maxsize=4096)
def _parse(latex: str) -> list:
    """Parsed once per worker: a GRPO group shares its gold, and equal answers recur."""
    return parse(
        "$" + latex + "$",
        extraction_config=_LATEX,
        fallback_mode="no_fallback",
        extraction_mode="first_match",
        parsing_timeout=None,
    )


def check(gold: str, candidate: str | None) -> tuple[bool, bool]:
    """(gold parsed, candidate equivalent to gold). Strings come normalized by
    ``extract.to_math``; a candidate of None only checks the gold."""
    try:
        g = _parse(gold)
    except Exception:
        return False, False
    if not g:
        return False, False
    if candidate is None:
        return True, False
    try:
        c = _parse(candidate)
        if not c:
            return True, False
        return True, bool(verify(g, c, timeout_seconds=None, allow_set_relation_comp=True))
    except Exception:  # MemoryError, RecursionError, sympy errors: not equivalent
        return True, False


def ping() -> tuple[int, int]:
    """(pid, parent pid): lets tests see which process ran a task."""
    return os.getpid(), os.getppid()
