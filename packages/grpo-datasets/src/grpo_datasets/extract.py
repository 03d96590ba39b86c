"""Gold-answer extraction from reference solutions (GSM8K ``#### n``, MATH ``\\boxed{...}``).

These parse trusted dataset text, not model output, but stay linear-time and
never evaluate anything.
"""

from __future__ import annotations

import re

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?:\D|$))")


def clean_number(text: str) -> str | None:
    """``"1,234"`` -> ``"1234"``, ``"$5.50"`` -> ``"5.50"``; ``None`` when it is not one number."""
    s = _THOUSANDS.sub("", text.strip())
    s = s.strip().lstrip("$").rstrip(".").strip()
    if s.startswith("+"):
        s = s[1:]
    return s if _NUMBER.fullmatch(s) else None


def split_gsm8k(solution: str) -> tuple[str, str | None]:
    """``(rationale, answer)`` of a GSM8K solution; answer is ``None`` without a usable ``####``."""
    if not isinstance(solution, str) or "####" not in solution:
        return (solution or "").strip() if isinstance(solution, str) else "", None
    rationale, _, tail = solution.rpartition("####")
    tail = tail.strip().splitlines()[0] if tail.strip() else ""
    return rationale.strip(), clean_number(tail)


def gsm8k_answer(solution: str) -> str | None:
    """The number after ``####`` with thousands separators removed, or ``None``."""
    return split_gsm8k(solution)[1]


_BOX = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")


def _braced(text: str, start: int) -> str | None:
    """Content of the group opening at ``text[start] == "{"``; escaped braces do not count."""
    depth = 0
    i = start
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2  # \{ \} \\ are literal characters, not grouping
            continue
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i]
        i += 1
    return None


def last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}`` / ``\\fbox{...}`` (nested braces balanced).

    ``\\boxed 5`` (no braces) gives ``5``. ``None`` when the last box is missing,
    empty or unterminated (an earlier box is not a safe fallback).
    """
    if not isinstance(text, str):
        return None
    matches = list(_BOX.finditer(text))
    if not matches:
        return None
    last = matches[-1]
    i = last.end()
    while i < len(text) and text[i] == " ":
        i += 1
    if i < len(text) and text[i] == "{":
        content = _braced(text, i)
    elif i > last.end():  # "\\boxed 5": the token up to a space or "$"
        token = re.match(r"[^\s$]+", text[i:])
        content = token.group(0).rstrip(".,;") if token else None
    else:
        content = None
    return content.strip() if content and content.strip() else None


__all__ = ["clean_number", "split_gsm8k", "gsm8k_answer", "last_boxed"]
