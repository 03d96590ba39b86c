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


RELATIVE_TOLERANCE = 1e-6


def equivalent(gold: list, candidate: list) -> bool:
    if not verify(gold, candidate, timeout_seconds=None, allow_set_relation_comp=True):
        return False
    return _relatively_close(gold, candidate)


def _relatively_close(gold: list, candidate: list) -> bool:
    """math-verify compares numbers rounded to a few decimals, an absolute tolerance:
    3^{-40} would equal 3^{-41}. Two nonzero numbers must also agree relatively."""
    import sympy

    g, c = gold[0] if gold else None, candidate[0] if candidate else None
    if not (isinstance(g, sympy.Expr) and isinstance(c, sympy.Expr) and g.is_number and c.is_number):
        return True
    try:
        a, b = complex(sympy.N(g, 30)), complex(sympy.N(c, 30))
    except (TypeError, ValueError, ArithmeticError):
        return True  # not a plain number (zoo, nan, ...): math-verify's verdict stands
    scale = max(abs(a), abs(b))
    if scale == 0 or scale != scale or scale == float("inf"):
        return True
    return abs(a - b) <= RELATIVE_TOLERANCE * scale
