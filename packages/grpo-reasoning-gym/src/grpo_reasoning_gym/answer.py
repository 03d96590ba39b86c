"""The final answer of a completion, read the way the system prompt asks for it.

reasoning-gym's answers are text (a number, a word, a list of words), so the answer
is a whole line or tag, not a number picked out of one. First hit wins:

1. after a ``</think>`` only the text after the last one counts (an unclosed
   ``<think>`` means there is no answer yet);
2. the last ``<answer>...</answer>`` block (reasoning-gym's own prompts and grpo's
   ``xml``; an unclosed one runs to the end), a box inside it if there is one;
3. the last line with an answer phrase (``Answer: x``, grpo's ``plain`` prompt;
   ``Final answer: x``, ``The answer is x``, ``the answer to the problem is x``): the
   rest of that line after its first phrase, or the next non-blank line when that is
   empty; a box in it if there is one;
4. the boxes (``\\boxed{x}``): one distinct content is the answer, several are all
   of them, ``a, b`` (a hedge is handed to the scorer as written, never one of its parts);
5. GSM8K's ``#### x``;
6. the last non-blank line; with ``fallback_last_number=True`` the last number of the
   text instead (a small model's natural "3 + 8 = 11"), unless its line hedges ("maybe",
   "or", "probably", ...), asks ("is it 11?") or the number is an operand, after an
   operator or before "=" (a copied "0 + 3 =" or "Calculate 0 + 5." is no answer).

Model text is untrusted: only its last ``MAX_TEXT_CHARS`` are read, every pattern
is linear, and an answer longer than ``MAX_ANSWER_CHARS`` is no answer. The box and
``####`` readers are the core's (``grpo_core.text``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grpo_core.text import boxes, hash_answer

MAX_TEXT_CHARS = 100_000  # longer completions keep their end: the answer is there
MAX_ANSWER_CHARS = 2_000  # a longer answer is not scored (reasoning-gym's longest golds are far shorter)

_PHRASE_RE = re.compile(
    r"\banswer\b[ \t*_`\"']*(?:is\b|(?:would|will)\s+be\b|[:=\uff1a])"
    r"|\banswer\b[^\n.:=$\\]{1,40}?\s(?:is|would\s+be|will\s+be)\b",  # "the answer to the problem is"
    re.IGNORECASE,
)
_NUMBER_RE = re.compile(r"-?\d+(?:,\d{3})*(?:\.\d+)?")
_HEDGE_RE = re.compile(r"\b(?:maybe|perhaps|possibly|probably|might|either|or|guess)\b", re.IGNORECASE)
_MARKUP = " \t*`"  # markdown bold and code around an answer
_OPERATORS = ("+", "-", "*", "/", "\u00d7", "\u00f7")  # a number after one is an operand: "0 + 5", not 5


@dataclass(frozen=True)
class Extraction:
    """The answer found (None: none) and where: ``answer_tag``, ``phrase``, ``boxed``,
    ``hash``, ``last_number``, ``last_line`` or ``none``."""

    answer: str | None
    source: str


NONE = Extraction(None, "none")


def final_answer(text: str, fallback_last_number: bool = False) -> Extraction:
    """The final answer of one completion's text (the chain in the module docstring)."""
    if not isinstance(text, str) or not text.strip():
        return NONE
    text = text[-MAX_TEXT_CHARS:]
    lower = text.lower()
    close = lower.rfind("</think>")
    if close >= 0:
        text, lower = text[close + len("</think>"):], lower[close + len("</think>"):]
    elif "<think>" in lower:
        return NONE  # still thinking
    start = lower.rfind("<answer>")
    if start >= 0:
        end = lower.find("</answer>", start)
        region = text[start + len("<answer>"): end if end >= 0 else len(text)]
        inner = _phrase(region)
        return _bounded(_single_box(region) or (inner.answer if inner else region.strip()), "answer_tag")
    for found in (_phrase(text), _boxed(text)):
        if found is not None:
            return found
    hashed = hash_answer(text)
    if hashed:
        return _bounded(hashed, "hash")
    if fallback_last_number:
        return _last_number(text)
    lines = [line for line in text.splitlines() if line.strip()]
    return _bounded(lines[-1] if lines else None, "last_line")


def _bounded(answer: str | None, source: str) -> Extraction:
    if answer is None:
        return NONE
    answer = answer.strip(_MARKUP)
    if not answer or len(answer) > MAX_ANSWER_CHARS:
        return NONE
    return Extraction(answer, source)


def _last_number(text: str) -> Extraction:
    """The text's last number, unless its line hedges ("maybe 72", "72 or 73"), asks ("Is it
    72?") or the number is an operand, after an operator or before "=" ("0 + 3 =", "Calculate
    0 + 5.": a restated question, not its result)."""
    last = None
    for m in _NUMBER_RE.finditer(text):
        last = m
    if last is None:
        return NONE
    start, end = text.rfind("\n", 0, last.start()) + 1, text.find("\n", last.end())
    end = end if end >= 0 else len(text)
    line = text[start:end]
    operand = (text[start:last.start()].rstrip().endswith(_OPERATORS)
               or text[last.end():end].lstrip().startswith("="))
    if _HEDGE_RE.search(line) or line.rstrip().endswith("?") or operand:
        return NONE
    return _bounded(last.group(), "last_number")


def _phrase(text: str) -> Extraction | None:
    """The answer after the last line's answer phrase; None without one."""
    last = None
    for m in _PHRASE_RE.finditer(text):
        last = m
    if last is None:
        return None
    line_start = text.rfind("\n", 0, last.start()) + 1
    first = _PHRASE_RE.search(text, line_start)  # the line's first phrase: "Answer: 7. The answer is right"
    assert first is not None  # ``last`` itself is on that line
    line_end = text.find("\n", first.end())
    rest = text[first.end(): line_end if line_end >= 0 else len(text)].strip(_MARKUP)
    if not rest and line_end >= 0:  # "Answer:" with the answer on the next line
        after = [line for line in text[line_end: line_end + 4 * MAX_ANSWER_CHARS].splitlines() if line.strip()]
        rest = after[0] if after else ""
    return _bounded(_single_box(rest) or rest, "phrase")


def _single_box(text: str) -> str | None:
    found = _boxed(text)
    return found.answer if found is not None else None


def _boxed(text: str) -> Extraction | None:
    """Every distinct box of ``text``: one -> its content; several -> ``a, b``.
    A truncated last box is no answer."""
    found = boxes(text)
    if not found:
        return None
    if found[-1] is None:
        return NONE
    distinct = list(dict.fromkeys(c for c in found if c is not None))
    return _bounded(", ".join(distinct), "boxed")


__all__ = ["Extraction", "final_answer", "MAX_TEXT_CHARS", "MAX_ANSWER_CHARS"]
