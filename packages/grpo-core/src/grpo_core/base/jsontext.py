"""JSON from users and clients (a request body, a JSONL line): a whole number longer than
Python reads as text (its int-str limit, 4,300 digits) is a :class:`JsonNumberError` naming
it, not the bare ``ValueError`` (a 500 or a traceback) that ``json.loads`` raises."""

from __future__ import annotations

import json
import sys
from typing import Any


class JsonNumberError(ValueError):
    """A whole number past Python's int-str limit."""


def _limit() -> int:
    get = getattr(sys, "get_int_max_str_digits", None)
    return get() if get is not None else 0


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        digits = len(text.lstrip("-"))
        raise JsonNumberError(f"a whole number of {digits:,} digits ({text[:12]}...), longer than the {_limit():,} "
                              f"digits Python reads: send it as a string (in quotes) or shorter.") from None


def loads(text: str | bytes) -> Any:
    """``json.loads``, with a number too long to read refused by :class:`JsonNumberError`."""
    return json.loads(text, parse_int=_whole)


__all__ = ["JsonNumberError", "loads"]
