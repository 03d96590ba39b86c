"""Completions arrive as ``str`` (standard datasets) or a list of messages
(conversational ones). Rewards that only care about text use these helpers."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any


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


def text_reward(func: Callable[..., list]) -> Callable[..., list]:
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
