"""Reading the judge's answer. It is model output, so untrusted: every parser sees at most
:data:`MAX_ANSWER` characters, uses only linear-time patterns over bounded digit runs, and
returns None for what it cannot read (never a guess, never 0).

- a score: the last ``Score: N`` (``N/scale`` allowed), else an answer that is only a
  number; outside ``[0, scale]`` or over another scale (``3/5`` for a scale of 10) is None;
- yes/no: the first word, else the one of ``yes``/``no`` that appears alone;
- A/B: the first word (``A``, ``B``, ``tie``), else ``Winner: A``-style lines;
- log-probabilities, where the server returns them: the probability mass of the ``yes``
  (``A``) tokens against that of ``no`` (``B``) at the first answer token that has either.
"""

from __future__ import annotations

import math
import re

MAX_ANSWER = 4096  # characters of an answer read
MAX_LOGPROB_TOKENS = 8  # answer tokens searched for yes/no (A/B) alternatives
MIN_MASS = 0.05  # yes+no probability below this at a token: the token is not the verdict

_THINK_END = "</think>"
_NUMBER = r"(\d{1,6}(?:\.\d{1,6})?)"
_OVER = r"(?:[ \t]{0,4}/[ \t]{0,4}(\d{1,6}))?"
_SCORE_LINE = re.compile(r"score[ \t]{0,4}(?:is|:|=)?[ \t]{0,4}\**[ \t]{0,4}" + _NUMBER + _OVER, re.IGNORECASE)
_ONLY_NUMBER = re.compile(r"\s{0,8}\**" + _NUMBER + _OVER + r"\**\.?\s{0,8}")
_WORD = re.compile(r"[a-z]{1,12}", re.IGNORECASE)
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)
_WINNER = re.compile(r"(?:winner|better|answer|verdict|choice)(?:[ \t]{1,4}response)?[ \t]{0,4}(?:is|:)?[ \t]{0,4}"
                     r"\**[ \t]{0,4}(?:response[ \t]{1,4})?\b([AB])\b|response[ \t]{1,4}([AB])[ \t]{1,4}is[ \t]{1,4}better",
                     re.IGNORECASE)


def visible(answer: str | None) -> str:
    """The answer a grader gave, bounded: after a reasoning model's ``</think>``."""
    if not answer:
        return ""
    text = answer[:MAX_ANSWER]
    end = text.rfind(_THINK_END)
    return text[end + len(_THINK_END):] if end >= 0 else text


def score(answer: str | None, scale: int) -> float | None:
    """``Score: 7`` over a scale of 10 -> 0.7; None when no score in ``[0, scale]`` is read."""
    text = visible(answer)
    found = None
    for match in _SCORE_LINE.finditer(text):
        found = match
    if found is None:
        found = _ONLY_NUMBER.fullmatch(text)
    if found is None:
        return None
    value = float(found.group(1))
    over = found.group(2)
    if over is not None and int(over) != scale:
        return None
    if not 0 <= value <= scale:
        return None
    return value / scale


def yes_no(answer: str | None) -> float | None:
    """1.0 for yes, 0.0 for no, None for anything else."""
    text = visible(answer)
    words = [w.lower() for w in _WORD.findall(text[:64])][:5]
    if words and words[0] in ("yes", "no") and text.lstrip(" \t\n*\"'").lower().startswith(words[0]):
        other = "no" if words[0] == "yes" else "yes"
        if other not in words[1:]:  # "yes or no, ..." decides nothing
            return 1.0 if words[0] == "yes" else 0.0
        return None
    said = {m.group(1).lower() for m in _YES_NO.finditer(text)}
    if len(said) == 1:
        return 1.0 if said == {"yes"} else 0.0
    return None


def a_or_b(answer: str | None) -> float | None:
    """1.0 when A is better, 0.0 when B is, 0.5 for a tie, None for anything else."""
    text = visible(answer).strip()
    first = re.match(r"\W{0,4}(a|b|tie)\b", text[:32], re.IGNORECASE)
    if first is not None:
        word = first.group(1).lower()
        return 0.5 if word == "tie" else (1.0 if word == "a" else 0.0)
    said = {(m.group(1) or m.group(2)).upper() for m in _WINNER.finditer(text)}
    if len(said) == 1:
        return 1.0 if said == {"A"} else 0.0
    return None


def _word(token: object) -> str:
    return str(token).strip().strip("\"'*.:,()").lower()[:16] if isinstance(token, str) else ""


def soft(logprobs: object, positive: str, negative: str) -> float | None:
    """P(positive) / (P(positive) + P(negative)) at the first answer token whose alternatives
    (OpenAI's ``choices[0].logprobs.content[i].top_logprobs``) hold either, or None."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return None
    for entry in content[:MAX_LOGPROB_TOKENS]:
        alternatives = entry.get("top_logprobs") if isinstance(entry, dict) else None
        if not isinstance(alternatives, list):
            continue
        mass = {positive: 0.0, negative: 0.0}
        for alt in alternatives[:50]:
            if not isinstance(alt, dict):
                continue
            word, lp = _word(alt.get("token")), alt.get("logprob")
            if word in mass and isinstance(lp, (int, float)) and not isinstance(lp, bool) and math.isfinite(lp):
                mass[word] += math.exp(min(float(lp), 0.0))
        total = mass[positive] + mass[negative]
        if total >= MIN_MASS:
            return mass[positive] / total
    return None


__all__ = ["MAX_ANSWER", "visible", "score", "yes_no", "a_or_b", "soft"]
