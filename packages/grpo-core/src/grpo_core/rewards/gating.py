"""A reward that counts only where another holds (GDPO's conditioned reward).

``length.ideal:0.1 when math.correctness >= 1`` (or ``when:`` in a YAML reward
mapping): the gated reward's value where the gate reward's score satisfies the
condition, else 0.0. The gate must be in the same reward list; it is scored
once per batch whichever of the two TRL calls first (a per-batch memo), and both
are logged under their own ``rewards/<name>/mean``.
"""

from __future__ import annotations

import operator
import re
import threading
from dataclasses import dataclass

from grpo_core.base.errors import SpecError
from grpo_core.base.text import completion_text

OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq,
       "!=": operator.ne}
WHEN_RE = re.compile(r"^\s*(?P<gate>\S+)\s*(?P<op>>=|<=|==|!=|>|<)\s*(?P<value>[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\s*$")


@dataclass(frozen=True)
class Condition:
    gate: str  # the logged name of the gate reward
    op: str
    value: float

    def __str__(self) -> str:
        return f"{self.gate} {self.op} {self.value:g}"

    def holds(self, score) -> bool:
        return score is not None and score == score and OPS[self.op](float(score), self.value)


def parse_condition(text: str, spec: str) -> Condition:
    m = WHEN_RE.match(str(text))
    if not m:
        raise SpecError(
            f"condition {text!r} in reward spec {spec!r} is not '<reward> <op> <number>' with op one of "
            f"{', '.join(OPS)}; e.g. 'length.ideal:0.1 when math.correctness >= 1'."
        )
    return Condition(m["gate"], m["op"], float(m["value"]))


class Memo:
    """Wraps the gate reward: the last batch's scores, keyed by the batch itself
    (the same ``completions`` list TRL passes every reward), so the gated reward
    reads them instead of scoring the gate again."""

    def __init__(self, reward):
        self.reward = reward
        self._key = None
        self._scores = None
        self._lock = threading.Lock()
        self.calls = 0  # times the gate was really scored (tests count them)

    @staticmethod
    def key(completions) -> tuple:
        return id(completions), len(completions), hash(tuple(completion_text(c) for c in completions))

    def scores(self, completions, kwargs: dict) -> list:
        key = self.key(completions)
        with self._lock:
            if self._key != key:
                self.calls += 1
                self._scores = list(self.reward.call_unmemoized(completions, **kwargs))
                self._key = key
            return self._scores


def gate_values(values: list, gate_scores: list, condition: Condition) -> list:
    """``values`` where the condition holds on the gate's score, else 0.0."""
    return [v if condition.holds(g) else (None if v is None else 0.0) for v, g in zip(values, gate_scores)]


def link(funcs: list, conditions: list, refs: list[str]) -> None:
    """Give each gated reward its gate's memo (``conditions[i]`` is reward i's, or
    None); a gate is named by its logged name or as it is written in the list."""
    by_name = {**{r: f for f, r in zip(funcs, refs)}, **{f.__name__: f for f in funcs}}
    for f, cond in zip(funcs, conditions):
        if cond is None:
            continue
        gate = by_name.get(cond.gate)
        if gate is None:
            raise SpecError(
                f"reward '{f.__name__}' is gated on '{cond.gate}', which is not in the reward list "
                f"({', '.join(f.__name__ for f in funcs)}). Add it (with weight 0 to log it without training on it)."
            )
        if gate is f or getattr(gate, "condition", None) is not None:
            raise SpecError(f"reward '{f.__name__}' cannot be gated on '{cond.gate}': a gate must be an ungated other reward.")
        if gate.memo is None:
            gate.memo = Memo(gate)
        f.condition, f.gate = cond, gate


__all__ = ["Condition", "parse_condition", "Memo", "gate_values", "link", "OPS"]
