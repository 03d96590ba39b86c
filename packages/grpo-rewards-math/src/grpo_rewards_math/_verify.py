"""math-verify and sympy, configured for the checker processes only.

Preloaded by the forkserver (so every worker starts with it imported) and
imported by ``_worker`` on first use; the training process never imports it.
math-verify's own signal-based timeouts are switched off here (``None``): they
fail off the main thread and break with float limits; the pool kills a worker
that runs past the per-item limit instead.
"""

from __future__ import annotations

import logging
from functools import lru_cache

from math_verify import LatexExtractionConfig, parse, verify
from math_verify import grader as _grader
from math_verify import parser as _parser

# Timeouts are None on purpose; silence math-verify's "timeout is disabled" warning.
_parser.TIMEOUT_WARNING_SHOWN = True
_grader.TIMEOUT_WARNING_SHOWN = True
for _name in ("math_verify", "latex2sympy2_extended"):
    logging.getLogger(_name).setLevel(logging.CRITICAL)

# LaTeX only: math-verify's plain-expression extractor runs sympy's parse_expr.
_LATEX = [LatexExtractionConfig(boxed_match_priority=-1)]


@lru_cache(maxsize=4096)
def parse_math(latex: str) -> list:
    """Parsed once per worker: a GRPO group shares its gold, and equal answers recur."""
    return parse(
        "$" + latex + "$",
        extraction_config=_LATEX,
        fallback_mode="no_fallback",
        extraction_mode="first_match",
        parsing_timeout=None,
    )


def equivalent(gold: list, candidate: list) -> bool:
    return bool(verify(gold, candidate, timeout_seconds=None, allow_set_relation_comp=True))
