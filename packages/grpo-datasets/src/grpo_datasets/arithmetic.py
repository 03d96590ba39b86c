"""Synthetic arithmetic problems with exact integer answers, seeded and offline.

Level 1 is one addition or subtraction of numbers up to 20 ("What is 7 + 5?",
"Mia has 7 apples and finds 5 more...") so that a 135M-parameter model can learn
it in a demo; each level adds operations, operand size and multiplication/division.
Division is always exact. Splits are disjoint by the underlying expression
(``test``: 10%, ``validation``: 10%, ``train``: the rest), so held-out rows are
never trained on, whatever the wording.
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Level:
    ops: tuple[str, ...]
    n_ops: int  # operations per problem
    max_operand: int
    max_factor: int  # largest multiplier / divisor
    negative: bool  # symbol problems may go below zero


LEVELS: dict[int, Level] = {
    1: Level(("+", "-"), 1, 20, 0, False),
    2: Level(("+", "-", "*", "/"), 1, 100, 12, False),
    3: Level(("+", "-", "*", "/"), 2, 100, 12, False),
    4: Level(("+", "-", "*", "/"), 3, 1000, 20, False),
    5: Level(("+", "-", "*", "/"), 4, 10000, 50, True),
}
SPLIT_BUCKETS = {"train": tuple(range(2, 10)), "validation": (1,), "test": (0,)}
KINDS = ("mixed", "symbol", "word")

_PREC = {"+": 1, "-": 1, "*": 2, "/": 2}
_ATOM = 3

# (text, value, precedence)
Node = tuple[str, int, int]


def _combine(op: str, left: Node, right: Node) -> Node:
    lt, lv, lp = left
    rt, rv, rp = right
    p = _PREC[op]
    if lp < p:
        lt = f"({lt})"
    if rp < p or (rp == p and op in "-/"):
        rt = f"({rt})"
    if op == "+":
        value = lv + rv
    elif op == "-":
        value = lv - rv
    elif op == "*":
        value = lv * rv
    else:
        value = lv // rv
    return f"{lt} {op} {rt}", value, p


def _randint(rng: random.Random, a: int, b: int) -> int:
    # 3x faster than Random.randint, which dominates generating 100k rows
    return a + int(rng.random() * (b - a + 1))


def _choice(rng: random.Random, seq):
    return seq[int(rng.random() * len(seq))]


def _leaf(v: int) -> Node:
    return str(v), v, _ATOM


def _divisors(v: int, max_factor: int) -> list[int]:
    return [d for d in range(2, max_factor + 1) if v and v % d == 0 and abs(v) // d > 1]


def _tree(rng: random.Random, lv: Level, n_ops: int) -> Node:
    if n_ops == 0:
        return _leaf(_randint(rng, 1, lv.max_operand))
    op = _choice(rng, lv.ops)
    if op == "*":
        left = _leaf(_randint(rng, 2, lv.max_factor)) if n_ops == 1 else _tree(rng, lv, n_ops - 1)
        return _combine("*", left, _leaf(_randint(rng, 2, lv.max_factor)))
    if op == "/":
        if n_ops == 1:  # times-table division: (d * q) / d
            d, q = _randint(rng, 2, lv.max_factor), _randint(rng, 2, lv.max_factor)
            return _combine("/", _leaf(d * q), _leaf(d))
        left = _tree(rng, lv, n_ops - 1)
        divisors = _divisors(left[1], lv.max_factor)
        if divisors:
            return _combine("/", left, _leaf(_choice(rng, divisors)))
        op = _choice(rng, ("+", "-"))
    k = _randint(rng, 0, n_ops - 1)
    left, right = _tree(rng, lv, k), _tree(rng, lv, n_ops - 1 - k)
    if op == "-" and not lv.negative and left[1] < right[1]:
        left, right = right, left
    return _combine(op, left, right)


_ASK = ("What is {e}?", "What is {e}?", "Compute {e}.", "Calculate {e}.", "Evaluate {e}.", "{e} = ?")

_NAMES = (
    ("Mia", "she"), ("Leo", "he"), ("Ava", "she"), ("Sam", "he"), ("Zoe", "she"), ("Ben", "he"),
    ("Lily", "she"), ("Omar", "he"), ("Nina", "she"), ("Raj", "he"), ("Emma", "she"), ("Tom", "he"),
    ("Sofia", "she"), ("Ken", "he"), ("Aisha", "she"), ("Luis", "he"),
)
_ITEMS = (
    "apples", "marbles", "stickers", "pencils", "books", "coins", "cookies", "shells", "cards",
    "stamps", "eggs", "balloons",
)
_GAIN = ("finds {b} more", "buys {b} more", "gets {b} more", "is given {b} more")
_LOSS = ("gives away {b}", "loses {b}", "uses {b}", "sells {b}")


def _word(rng: random.Random, lv: Level) -> tuple[str, Node]:
    name, pron = _choice(rng, _NAMES)
    item = _choice(rng, _ITEMS)
    if lv.n_ops == 1:
        op = _choice(rng, lv.ops)
        if op == "*":
            a, b = _randint(rng, 2, lv.max_factor), _randint(rng, 2, lv.max_factor)
            text = f"There are {a} boxes with {b} {item} in each box. How many {item} are there in total?"
            return text, _combine("*", _leaf(a), _leaf(b))
        if op == "/":
            d, q = _randint(rng, 2, lv.max_factor), _randint(rng, 2, lv.max_factor)
            text = (
                f"{name} shares {d * q} {item} equally among {d} friends. "
                f"How many {item} does each friend get?"
            )
            return text, _combine("/", _leaf(d * q), _leaf(d))
        a = _randint(rng, 2, lv.max_operand)
        if op == "-":
            b = _randint(rng, 1, a)
            text = f"{name} has {a} {item} and {_choice(rng, _LOSS).format(b=b)}. How many {item} does {name} have left?"
            return text, _combine("-", _leaf(a), _leaf(b))
        b = _randint(rng, 1, lv.max_operand)
        text = f"{name} has {a} {item} and {_choice(rng, _GAIN).format(b=b)}. How many {item} does {name} have now?"
        return text, _combine("+", _leaf(a), _leaf(b))
    # several steps, applied in the order told: the expression is left-deep
    start = _randint(rng, 2, lv.max_operand)
    node = _leaf(start)
    steps = []
    for _ in range(lv.n_ops):
        value = node[1]
        op = _choice(rng, lv.ops)
        divisors = _divisors(value, lv.max_factor) if op == "/" else []
        if (op == "/" and not divisors) or (op == "-" and value < 1):
            op = "+"
        if op == "+":
            b = _randint(rng, 1, lv.max_operand)
            steps.append(_choice(rng, _GAIN).format(b=b))
        elif op == "-":
            b = _randint(rng, 1, min(value, lv.max_operand))
            steps.append(_choice(rng, _LOSS).format(b=b))
        elif op == "*":
            b = _randint(rng, 2, min(lv.max_factor, 5))
            steps.append({2: "doubles them", 3: "triples them"}.get(b, f"ends up with {b} times as many"))
        else:
            b = _choice(rng, divisors)
            steps.append(f"splits them into {b} equal groups and keeps one group")
        node = _combine(op, node, _leaf(b))
    told = ", then ".join(steps)
    text = (
        f"{name} has {start} {item}. First {pron} {told}. "
        f"How many {item} does {name} have at the end?"
    )
    return text, node


def _bucket(expression: str) -> int:
    return zlib.crc32(expression.encode()) % 10


def generate(
    size: int, levels: list[int], split: str, seed: int, kind: str = "mixed"
) -> dict[str, list]:
    """Columns of ``size`` problems for ``split``: question, answer, level, kind, expression."""
    buckets = SPLIT_BUCKETS[split]
    rng = random.Random(f"grpo-arithmetic:{seed}:{split}")
    cols: dict[str, list] = {"question": [], "answer": [], "level": [], "kind": [], "expression": []}
    specs = [LEVELS[n] for n in levels]
    attempts = 0
    while len(cols["answer"]) < size:
        attempts += 1
        if attempts > 50 * size + 1000:  # cannot happen with the built-in levels; never loop forever
            raise RuntimeError(f"arithmetic: could not draw {size} problems for split {split!r}.")
        i = _randint(rng, 0, len(levels) - 1)
        lv = specs[i]
        as_word = kind == "word" or (kind == "mixed" and rng.random() < 0.5)
        if as_word:
            question, node = _word(rng, lv)
        else:
            node = _tree(rng, lv, lv.n_ops)
            question = _choice(rng, _ASK).format(e=node[0])
        if _bucket(node[0]) not in buckets:
            continue
        cols["question"].append(question)
        cols["answer"].append(str(node[1]))
        cols["level"].append(levels[i])
        cols["kind"].append("word" if as_word else "symbol")
        cols["expression"].append(node[0])
    return cols


__all__ = ["Level", "LEVELS", "SPLIT_BUCKETS", "KINDS", "generate"]
