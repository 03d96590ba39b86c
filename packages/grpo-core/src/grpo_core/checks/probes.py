"""The completions grpo check scores, made from a dataset row: the gold answer in the
answer layout the prompt asks for, and the reward-hacking probes (hedges, lists, negations,
retractions, sums left to compute, format-only answers), each a :class:`Probe`."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grpo_core.data.datasets import _example_answer
from grpo_core.plugin import registry

# the ideal completion for a dataset in TRL's format (a prompt column, no template known):
# reasoning in think tags, then the boxed answer, as TRL's think_format_reward and
# accuracy_reward (which reads LaTeX/boxed answers only) expect
TRL_TEMPLATE = "<think>\n{rationale}\n</think>\n\\boxed{{{answer}}}"


@dataclass
class ProbeRow:
    """What a probe is built from: the row, its gold answer, a wrong one, the template."""

    row: dict
    gold: str
    wrong: str
    template: Any  # str, list of str (first whose fields the row has), or None

    @property
    def question(self) -> str:
        if "question" in self.row:
            return str(self.row["question"])
        prompt = self.row.get("prompt")  # TRL's format: text, or messages ending with the user's
        return str(prompt[-1].get("content", "") if isinstance(prompt, list) and prompt else prompt or "")

    def fill(self, answer: str, reasoning: str | None = None) -> str:
        """The template with ``answer`` (and ``reasoning`` as the rationale where the
        template has one, else on a line before it)."""

        row = {k: v for k, v in self.row.items() if k != "completion"}
        row["answer"] = answer
        templates = [self.template] if isinstance(self.template, str) or self.template is None else list(self.template)
        with_rationale = next((t for t in templates if t and "{rationale}" in t), None)
        if reasoning is not None and with_rationale:
            return with_rationale.format_map({**_Blank(row), "rationale": reasoning})
        text = _example_answer({**row, "rationale": row.get("rationale") or ""}, self.template)
        return f"{reasoning}\n{text}" if reasoning is not None else text


def gold_of(row: dict) -> str:
    """The gold answer: grpo's ``answer`` column, else TRL's ``solution``."""
    return str(row.get("answer", row.get("solution", "")))


class _Blank(dict):
    def __missing__(self, key):
        return ""


def wrong_answer(gold: str) -> str:
    """A different answer of the same kind: a number plus one, else a small number."""
    text = gold.strip()
    try:
        value = int(text.replace(",", ""))
        return str(value + 1)
    except ValueError:
        pass
    try:
        number = float(text)
        return repr(number + 1) if math.isfinite(number) else "0"
    except ValueError:
        return "0" if text != "0" else "1"


def shifted(gold: str) -> str:
    """A wrong answer of the gold's exact shape: each digit and letter moved on by one
    (9 -> 0, z -> a), everything else kept: the same length, layout and n-grams, so a
    reward that does not read the answer pays it as it pays the gold."""
    def move(ch: str) -> str:
        for first, size in (("0", 10), ("a", 26), ("A", 26)):
            if ch.isascii() and 0 <= ord(ch) - ord(first) < size:
                return chr(ord(first) + (ord(ch) - ord(first) + 1) % size)
        return ch

    return "".join(move(ch) for ch in gold)


def unevaluated_sum(gold: str) -> str:
    """The gold as a sum left to compute (24 -> ``23 + 1``, 2.5 -> ``1.5 + 1``): what a
    model that restates the question answers. For a gold that is not a plain number,
    :func:`shifted` (a wrong answer)."""
    from decimal import Decimal, InvalidOperation

    text = gold.strip().replace(",", "")
    if re.fullmatch(r"[-+]?\d{1,30}(?:\.\d{1,30})?", text):
        try:
            return f"{Decimal(text) - 1} + 1"
        except InvalidOperation:
            pass
    return shifted(gold)


def _numbers(text: str) -> list[str]:
    return re.findall(r"-?\d+(?:\.\d+)?", text)[:20]


@dataclass(frozen=True)
class Probe:
    name: str
    description: str
    build: Callable[[ProbeRow], str]
    right: bool = False  # carries the right answer: only the total may not beat the gold's


PROBES: list[Probe] = [
    Probe("empty", "an empty completion", lambda r: ""),
    Probe("empty_answer", "the template with an empty answer", lambda r: r.fill("")),
    Probe("empty_tags", "tags with no content", lambda r: "<think></think>\n<answer></answer>"),
    Probe("question_copied", "the question copied back", lambda r: r.question),
    Probe("question_numbers", "every number in the question as the answer",
          lambda r: r.fill(" ".join(_numbers(r.question)) or "0")),
    Probe("or_hedge", "'gold or wrong' as the answer", lambda r: r.fill(f"{r.gold} or {r.wrong}")),
    Probe("boxes", "a box for each candidate", lambda r: r.fill(rf"\boxed{{{r.wrong}}} \boxed{{{r.gold}}}")),
    Probe("listed", "the candidates listed", lambda r: r.fill(f"{r.wrong}, {r.gold}")),
    Probe("maybe", "'maybe gold'", lambda r: r.fill(f"maybe {r.gold}")),
    Probe("negated", "'not gold'", lambda r: r.fill(f"not {r.gold}")),
    Probe("retracted", "the gold, then retracted in the answer",
          lambda r: r.fill(f"{r.gold}. No, wait, that is wrong: {r.wrong}")),
    Probe("unevaluated", "the gold as a sum left to compute (23 + 1 for 24)",
          lambda r: r.fill(unevaluated_sum(r.gold))),
    Probe("gold_in_reasoning", "the gold in the reasoning, a wrong final answer",
          lambda r: r.fill(r.wrong, reasoning=f"The answer is {r.gold}.")),
    Probe("repeated_blocks", "the right completion five times over", lambda r: "\n".join([r.fill(r.gold)] * 5),
          right=True),
    Probe("overlong", "the right answer after ten times the reasoning",
          lambda r: r.fill(r.gold, reasoning=" ".join(["Let me check this once more."] * 60)), right=True),
    Probe("wrong_format", "the bare right answer, not in the asked format", lambda r: r.gold, right=True),
]


def all_probes() -> list[Probe]:
    """The built-in probes and those plugins register (``register_probes``)."""

    extra = [Probe(e.name, e.description, e.obj, bool(e.extra.get("right", False)))
             for e in registry.probes().entries.values()]
    return PROBES + extra
