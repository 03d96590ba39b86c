"""Completions arrive as ``str`` (standard datasets) or a list of messages
(conversational ones). Rewards that only care about text use these helpers.

Also the final-answer readers shared by rewards and dataset adapters: the
``\\boxed{...}`` boxes and GSM8K's ``#### x`` line. They read untrusted model
text, so every scan is linear and bounded, and nothing is evaluated.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any, overload


def completion_text(completion: Any) -> str:
    """The text of one completion, whatever its shape.

    ``"text"`` -> ``"text"``; ``[{"role": "assistant", "content": "text"}]`` -> ``"text"``
    (assistant messages joined by newlines; multimodal content parts keep their
    ``text`` parts). ``None`` becomes ``""`` so a reward never crashes on it.
    """
    if isinstance(completion, str):
        return completion
    if completion is None:
        return ""
    if isinstance(completion, dict):
        return _content_text(completion.get("content"))
    if isinstance(completion, (list, tuple)):
        messages = [m for m in completion if isinstance(m, dict)]
        assistant = [m for m in messages if m.get("role", "assistant") == "assistant"]
        return "\n".join(_content_text(m.get("content")) for m in (assistant or messages))
    return str(completion)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
        return "".join(parts)
    return str(content)


@overload
def text_reward(func: Callable[..., Awaitable[list]]) -> Callable[..., Awaitable[list]]: ...


@overload
def text_reward(func: Callable[..., list]) -> Callable[..., list]: ...


def text_reward(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for rewards that want plain strings: ``completions`` is turned
    into a list of ``str`` before ``func`` sees it. Signature, name and
    picklability of ``func`` are kept (module-level functions only), and so is
    ``async def``: TRL awaits a reward only when it is declared async."""

    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def async_wrapper(completions, *args, **kwargs):
            return await func([completion_text(c) for c in completions], *args, **kwargs)

        return async_wrapper

    @functools.wraps(func)
    def wrapper(completions, *args, **kwargs):
        return func([completion_text(c) for c in completions], *args, **kwargs)

    return wrapper


# ---------------------------------------------------------------------------
# final answers: \boxed{...} / \fbox{...} and GSM8K's "#### x"

BOX_RE = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")  # a control word ends at a non-letter
MAX_BOX_CHARS = 4_000  # a group not closed within this many characters is no answer
MAX_SCAN_CHARS = 400_000  # longer texts: only their end is read
LAST_BOXES = 80  # only the last boxes are read: the answer is at the end

# TeX's rule: a backslash takes the next character with it, so \{ \} are literal
# braces and \\ a literal backslash (the brace after "\\" still groups)
_GROUP_TOKEN_RE = re.compile(r"\\.|[{}]", re.DOTALL)
_BLANKS_RE = re.compile(r"[ \t]*")
_BARE_ARG_RE = re.compile(r"[^\s$]{1,100}")  # "\boxed 5": up to a space or "$"


def group_end(text: str, start: int, limit: int = MAX_BOX_CHARS) -> int | None:
    """Index just past the ``}`` closing the group that opens at ``text[start] == "{"``
    (nested groups balanced, escaped braces not counted); None when it does not
    close within ``limit`` characters."""
    depth = 0
    for m in _GROUP_TOKEN_RE.finditer(text, start, start + limit):
        token = m.group()
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                return m.end()
    return None


def _box_argument(text: str, pos: int) -> tuple[str | None, int]:
    """(content, end) of the argument of the box command ending at ``pos``."""
    blanks = _BLANKS_RE.match(text, pos)  # (matches everywhere: [ \t]*)
    start, pos = pos, blanks.end() if blanks else pos
    if text.startswith("{", pos):
        end = group_end(text, pos)
        return (None, pos) if end is None else (text[pos + 1 : end - 1].strip() or None, end)
    m = _BARE_ARG_RE.match(text, pos) if pos > start else None  # "\boxed)" is no box of ")"
    return (m.group().rstrip(".,;") or None, m.end()) if m else (None, pos)


def boxes(text: str) -> list[str | None]:
    """The contents of the boxes of ``text``, in order (among the last ``LAST_BOXES``).

    ``\\boxed{...}`` and ``\\fbox{...}`` with balanced braces, or ``\\boxed 5`` (after a
    space, a token up to a space or ``$``, trailing ``.,;`` dropped). A box inside an
    earlier box is part of it; an empty, unterminated or oversized box is None.
    """
    text = text[-MAX_SCAN_CHARS:]
    found: list[str | None] = []
    end = -1
    for m in list(BOX_RE.finditer(text))[-LAST_BOXES:]:
        if m.start() < end:
            continue
        content, stop = _box_argument(text, m.end())
        if content is not None:
            end = stop
        found.append(content)
    return found


def last_boxed(text: str) -> str | None:
    """Content of the last box of ``text`` (see ``boxes``); None when there is none
    or the last one is empty or unterminated: an earlier box is no safe fallback."""
    found = boxes(text) if isinstance(text, str) else []
    return found[-1] if found else None


def hash_answer(text: str) -> str | None:
    """GSM8K's final answer: the first non-blank of the three lines after the last
    ``####``, with markdown ``*`` stripped; None without one."""
    at = text.rfind("####") if isinstance(text, str) else -1
    if at < 0:
        return None
    for line in text[at + 4 : at + 4 + 3 * MAX_BOX_CHARS].splitlines()[:3]:
        line = line.strip().strip("*").strip()
        if line:
            return line[:MAX_BOX_CHARS]
    return None
