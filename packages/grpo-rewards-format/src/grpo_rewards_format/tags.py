"""Rewards for the ``<think>…</think><answer>…</answer>`` layout.

Tag names are parameters (``think_tag``, ``answer_tag``), so ``<reasoning>`` /
``<solution>`` work too. Tags are matched literally and case-sensitively.
Parsing is ``str.find`` / ``str.count`` only: linear in the completion length
whatever the model writes (no backtracking regex over untrusted text).
"""

from __future__ import annotations

from functools import lru_cache

from grpo_core import text_reward

Tags = tuple[str, str, str, str]


def _tag_name(value: object, param: str) -> str:
    name = value.strip().strip("<>/").strip() if isinstance(value, str) else ""
    if not name or any(c in "<>/" or c.isspace() for c in name):
        raise ValueError(f"{param} must be a tag name such as 'think' or '<think>', got {value!r}.")
    return name


@lru_cache(maxsize=64)
def tag_pair(name: str, param: str = "tag") -> tuple[str, str]:
    """``("<name>", "</name>")``; ``name`` may be given with or without brackets."""
    name = _tag_name(name, param)
    return f"<{name}>", f"</{name}>"


@lru_cache(maxsize=64)
def tags(think_tag: str = "think", answer_tag: str = "answer") -> Tags:
    """``(open_think, close_think, open_answer, close_answer)`` for two tag names."""
    think, answer = _tag_name(think_tag, "think_tag"), _tag_name(answer_tag, "answer_tag")
    if think == answer:
        raise ValueError(f"think_tag and answer_tag must differ, both are {think!r}.")
    return f"<{think}>", f"</{think}>", f"<{answer}>", f"</{answer}>"


def blocks_in_order(text: str, t: Tags) -> tuple[int, int, int, int] | None:
    """Start indices of the first think block and the first answer block after it.

    Earliest-match is enough: if the four tags occur in order anywhere, the
    earliest occurrences do too.
    """
    ot, ct, oa, ca = t
    i = text.find(ot)
    if i < 0:
        return None
    j = text.find(ct, i + len(ot))
    if j < 0:
        return None
    k = text.find(oa, j + len(ct))
    if k < 0:
        return None
    m = text.find(ca, k + len(oa))
    if m < 0:
        return None
    return i, j, k, m


def _each_once(text: str, t: Tags) -> bool:
    return all(text.count(tag) == 1 for tag in t)


def is_strict(text: str, t: Tags) -> bool:
    ot, ct, oa, ca = t
    s = text.strip()
    if not (s.startswith(ot) and s.endswith(ca)) or not _each_once(s, t):
        return False
    j, k = s.find(ct), s.find(oa)
    # A tag cannot overlap another (each starts with '<' and has no other '<'), so
    # with each tag present once, ordering reduces to </think> before <answer>.
    if k < j:
        return False
    gap = s[j + len(ct) : k]
    return not gap or gap.isspace()


@text_reward
def xml_strict(
    completions: list, think_tag: str = "think", answer_tag: str = "answer", **kwargs
) -> list[float]:
    """1.0 when the whole completion is <think>…</think> then <answer>…</answer>, else 0.0.

    reward = 1.0 iff strip(completion) == "<think>" T "</think>" W "<answer>" A "</answer>"
    where W is empty or whitespace and each of the four tags occurs exactly once
    (so T and A contain no tags). T and A may be empty (content is what
    format.think_answer judges). Leading/trailing whitespace is allowed; any
    other text outside the blocks gives 0.0. Range {0.0, 1.0}.

    Parameters: think_tag="think", answer_tag="answer" (tag names, e.g. "reasoning").
    """
    t = tags(think_tag, answer_tag)
    return [1.0 if is_strict(text, t) else 0.0 for text in completions]


@text_reward
def xml_soft(
    completions: list, think_tag: str = "think", answer_tag: str = "answer", **kwargs
) -> list[float]:
    """1.0 when a <think>…</think> block and then an <answer>…</answer> block appear anywhere.

    reward = 1.0 iff "<think>", "</think>", "<answer>", "</answer>" occur in this
    order as a subsequence of the completion (text around and between them and
    repeated tags are allowed), else 0.0. Range {0.0, 1.0}.

    Parameters: think_tag="think", answer_tag="answer".
    """
    t = tags(think_tag, answer_tag)
    return [0.0 if blocks_in_order(text, t) is None else 1.0 for text in completions]


@text_reward
def xml_incremental(
    completions: list,
    trailing_penalty: float = 0.001,
    think_tag: str = "think",
    answer_tag: str = "answer",
    **kwargs,
) -> list[float]:
    """Partial credit per tag: 0.25 for each tag present exactly once, minus trailing text.

    reward = clamp(0.25 * #{tag in <think>, </think>, <answer>, </answer> : count(tag) == 1}
                   - trailing_penalty * len(strip(text after the last "</answer>")), 0, 1)
    A tag that is missing or repeated earns nothing; order is not checked (that
    is format.xml_soft's job). Whitespace right after "</answer>" and at the end
    is free; every other character after the last "</answer>" costs
    trailing_penalty. Range [0.0, 1.0]: clamped, so the trailing penalty can
    take away the tag credit but never push below 0 (rambling after the answer
    is never worse than having no tags at all).

    Parameters: trailing_penalty=0.001 (per character, >= 0), think_tag, answer_tag.
    """
    if trailing_penalty < 0:
        raise ValueError(f"trailing_penalty must be >= 0, got {trailing_penalty!r}.")
    t = tags(think_tag, answer_tag)
    close_answer = t[3]
    out = []
    for text in completions:
        score = 0.25 * sum(text.count(tag) == 1 for tag in t)
        end = text.rfind(close_answer)
        if end >= 0 and trailing_penalty:
            score -= trailing_penalty * len(text[end + len(close_answer) :].strip())
        out.append(min(1.0, max(0.0, score)))
    return out


@text_reward
def think_answer(
    completions: list,
    min_think_chars: int = 20,
    think_tag: str = "think",
    answer_tag: str = "answer",
    **kwargs,
) -> list[float]:
    """Content-aware format: both blocks with real content 1.0, empty-ish blocks 0.5, else 0.0.

    Structure: each of "<think>", "</think>", "<answer>", "</answer>" occurs exactly
    once, the think block before the answer block (text outside is allowed).
    With T = strip(think block content) and A = strip(answer block content):
      reward = 1.0  if structure and len(T) >= min_think_chars and len(A) > 0
               0.5  if structure but T is too short or A is empty
               0.0  otherwise (missing, repeated or out-of-order tags).
    Range {0.0, 0.5, 1.0}. Lengths are in characters.

    Parameters: min_think_chars=20 (>= 0), think_tag, answer_tag.
    """
    if min_think_chars < 0:
        raise ValueError(f"min_think_chars must be >= 0, got {min_think_chars!r}.")
    t = tags(think_tag, answer_tag)
    ot, _, oa, _ = t
    out = []
    for text in completions:
        pos = blocks_in_order(text, t)
        if pos is None or not _each_once(text, t):
            out.append(0.0)
            continue
        i, j, k, m = pos
        think = text[i + len(ot) : j].strip()
        answer = text[k + len(oa) : m].strip()
        out.append(1.0 if len(think) >= min_think_chars and answer else 0.5)
    return out


# open-r1's layout: the tags on lines of their own (see think_answer_r1).
@lru_cache(maxsize=64)
def r1_pieces(think_tag: str = "think", answer_tag: str = "answer") -> Tags:
    """``("<think>\\n", "\\n</think>\\n", "\\n<answer>\\n", "\\n</answer>")`` for two tag names."""
    ot, ct, oa, ca = tags(think_tag, answer_tag)
    return f"{ot}\n", f"\n{ct}\n", f"\n{oa}\n", f"\n{ca}"


def is_r1_layout(text: str, pieces: Tags) -> bool:
    """open-r1's ``re.match(r"^<think>\\n.*?\\n</think>\\n<answer>\\n.*?\\n</answer>$", text,
    re.DOTALL | re.MULTILINE)``, in linear time.

    The earliest think/answer seam leaves the most room for the closing tag, so
    the regex matches iff that seam is followed by a "\\n</answer>" standing at
    the end of the text or before a newline (MULTILINE ``$``).
    """
    head, _, _, close = pieces
    seam = pieces[1] + pieces[2][1:]  # "\n</think>\n<answer>\n": the two share the newline
    if not text.startswith(head):
        return False
    at = text.find(seam, len(head))
    if at < 0:
        return False
    body = at + len(seam)
    if text.endswith(close) and len(text) - len(close) >= body:
        return True
    return text.find(close + "\n", body) >= 0


@text_reward
def think_answer_r1(
    completions: list, think_tag: str = "think", answer_tag: str = "answer", **kwargs
) -> list[float]:
    """open-r1's ``format``: 1.0 for "<think>\\n…\\n</think>\\n<answer>\\n…\\n</answer>", as its regex reads it.

    reward = 1.0 iff the text is "<think>\\n" T "\\n</think>\\n<answer>\\n" A "\\n</answer>" R
    where T and A are any text (possibly empty, tags included) and R is empty or
    starts with a newline; else 0.0. Range {0.0, 1.0}. This is exactly open-r1's
    re.match(r"^<think>\\n.*?\\n</think>\\n<answer>\\n.*?\\n</answer>$", text,
    re.DOTALL | re.MULTILINE): not a full match, since MULTILINE's "$" also matches
    before any newline, so "...\\n</answer>\\nmore text" scores 1.0 while
    "...\\n</answer> more text" and a leading space or newline score 0.0. Each tag
    stands on its own line, so "<think>\\n</think>" (one newline) is not an empty
    think block: "<think>\\n\\n</think>" is. Checked in linear time (no regex).

    Parameters: think_tag="think", answer_tag="answer" (tag names).
    """
    pieces = r1_pieces(think_tag, answer_tag)
    return [1.0 if is_r1_layout(text, pieces) else 0.0 for text in completions]


@text_reward
def tag_count(
    completions: list, think_tag: str = "think", answer_tag: str = "answer", **kwargs
) -> list[float]:
    """open-r1's ``tag_count``: 0.25 for each of the four newline-delimited tags found exactly once.

    reward = 0.25 * #{piece in "<think>\\n", "\\n</think>\\n", "\\n<answer>\\n", "\\n</answer>"
                     : count(piece) == 1}                    Range {0, 0.25, 0.5, 0.75, 1.0}
    Counts are non-overlapping occurrences of the piece with its newlines
    (so "<think>x" earns nothing for its opening tag); order is not checked
    (format.think_answer_r1 checks it). Same values as open-r1's tag_count_reward.

    Parameters: think_tag="think", answer_tag="answer" (tag names).
    """
    pieces = r1_pieces(think_tag, answer_tag)
    return [0.25 * sum(text.count(p) == 1 for p in pieces) for text in completions]
