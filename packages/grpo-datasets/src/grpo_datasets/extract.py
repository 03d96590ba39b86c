"""Gold answers from reference solutions: GSM8K's ``#### n`` as a clean number,
MATH's last ``\\boxed{...}``. The readers are ``grpo_core.text``'s, shared with
the math reward, so a gold is read as a completion is."""

from __future__ import annotations

import re

from grpo_core.text import hash_answer, last_boxed

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
    if not isinstance(solution, str):
        return "", None
    answer = hash_answer(solution)
    rationale = solution[: solution.rfind("####")] if "####" in solution else solution
    return rationale.strip(), None if answer is None else clean_number(answer)


def gsm8k_answer(solution: str) -> str | None:
    """The number after ``####`` with thousands separators removed, or ``None``."""
    return split_gsm8k(solution)[1]


__all__ = ["clean_number", "split_gsm8k", "gsm8k_answer", "last_boxed"]
