"""Which part of a completion is its code, and whether it parses.

Runs in the trainer on untrusted text, so it only reads: the text is cut to its
last ``MAX_TEXT`` characters and scanned line by line (no regex backtracking);
code over ``MAX_CODE`` characters is refused; ``ast.parse`` never executes
anything and fails cleanly (SyntaxError, RecursionError, MemoryError) on
pathological nesting.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

MAX_TEXT = 200_000
MAX_CODE = 64_000
PYTHON_TAGS = frozenset({"", "python", "py", "python3", "py3"})


@dataclass(frozen=True)
class Extraction:
    """``code`` (None when there is none); ``why`` says why not: ``no_code`` (no
    fenced Python block or ``<answer>`` block), ``empty``, ``too_long``; or, with
    the code, ``syntax_error`` when it does not parse."""

    code: str | None
    why: str = ""


def _fences(lines: list[str]) -> list[tuple[str, str]]:
    """Closed fenced blocks as (language tag, content). A fence is three or more
    backticks or tildes at the start of a line (up to three spaces in); the block
    ends at a line of the same character, at least as long, and nothing else."""
    blocks = []
    i, n = 0, len(lines)
    while i < n:
        stripped = lines[i].lstrip(" ")
        indent = len(lines[i]) - len(stripped)
        char = stripped[:1]
        if indent <= 3 and char in ("`", "~") and stripped.startswith(char * 3):
            width = len(stripped) - len(stripped.lstrip(char))
            info = stripped[width:].strip()
            if char == "`" and "`" in info:
                i += 1
                continue
            tag = info.split()[0].lower() if info else ""
            for j in range(i + 1, n):
                closing = lines[j].strip()
                if closing and set(closing) == {char} and len(closing) >= width:
                    blocks.append((tag, "\n".join(lines[i + 1:j])))
                    i = j
                    break
            else:
                break  # an unclosed fence (a truncated completion) holds no code
        i += 1
    return blocks


def _answer_block(text: str) -> str | None:
    start = text.rfind("<answer>")
    if start < 0:
        return None
    end = text.find("</answer>", start)
    return None if end < 0 else text[start + len("<answer>"):end]


def extract_code(text: str) -> Extraction:
    """The code of a completion: the last ``<answer>…</answer>`` block if there is
    one (its last fenced Python block when it holds one, else all of it), otherwise
    the last closed fenced block tagged ``python``/``py``/``python3`` or untagged.
    Blocks tagged with another language (```` ```text ````, ```` ```bash ````) are skipped."""
    text = text[-MAX_TEXT:]
    answer = _answer_block(text)
    where = answer if answer is not None else text
    blocks = [content for tag, content in _fences(where.split("\n")) if tag in PYTHON_TAGS]
    if blocks:
        code = blocks[-1]
    elif answer is not None:
        code = answer
    else:
        return Extraction(None, "no_code")
    if not code.strip():
        return Extraction(None, "empty")
    if len(code) > MAX_CODE:
        return Extraction(None, "too_long")
    return Extraction(textwrap.dedent(code).strip("\n") + "\n")


def parses(code: str) -> bool:
    """``ast.parse`` accepts ``code`` (nothing is run)."""
    try:
        ast.parse(code, "<completion>")
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
        return False
    return True


__all__ = ["Extraction", "extract_code", "parses", "MAX_TEXT", "MAX_CODE"]
