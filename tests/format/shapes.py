"""Helpers shared by the format tests."""

from __future__ import annotations


def chat(text: str) -> list[dict]:
    """The conversational shape of a completion (what TRL passes for chat datasets)."""
    return [{"role": "assistant", "content": text}]


def both_shapes(texts: list[str]) -> tuple[list[str], list[list[dict]]]:
    return list(texts), [chat(t) for t in texts]
