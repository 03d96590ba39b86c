"""arithmetic: seeded, offline, exact integer answers, easy level 1, disjoint splits."""

from __future__ import annotations

import ast
import re
from fractions import Fraction

import pytest

from grpo_core import RewardParamError
from grpo_datasets import DatasetError, SplitError

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def exact_value(expression: str) -> tuple[Fraction, int]:
    """(value, number of operators); fails if any division is inexact."""
    count = 0

    def walk(node):
        nonlocal count
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return Fraction(node.value)
        assert isinstance(node, ast.BinOp) and type(node.op) in _OPS, ast.dump(node)
        count += 1
        left, right = walk(node.left), walk(node.right)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        quotient = left / right
        assert quotient.denominator == 1, f"inexact division in {expression}"
        return quotient

    return walk(ast.parse(expression, mode="eval").body), count


def test_level_one_is_one_small_addition_or_subtraction(load):
    ds = load("arithmetic")
    assert len(ds) == 1000 and set(ds["level"]) == {1}
    assert set(ds["kind"]) == {"symbol", "word"}
    for row in ds:
        m = re.fullmatch(r"(\d+) ([+-]) (\d+)", row["expression"])
        assert m, row
        a, op, b = int(m[1]), m[2], int(m[3])
        assert a <= 20 and b <= 20
        assert int(row["answer"]) == (a + b if op == "+" else a - b) >= 0
        assert len(row["question"]) < 110
        if row["kind"] == "symbol":
            assert f"{a} {op} {b}" in row["question"]
        else:
            assert str(a) in row["question"] and str(b) in row["question"]
            assert row["question"].endswith("?")


def test_symbol_question_reads_like_the_quickstart(load):
    questions = load("arithmetic", kind="symbol", size=200)["question"]
    assert "What is" in " ".join(questions)
    for q in questions:
        assert re.fullmatch(r"(What is|Compute|Calculate|Evaluate) \d+ [+-] \d+[?.]|\d+ [+-] \d+ = \?", q), q


@pytest.mark.parametrize("level", [1, 2, 3, 4, 5])
def test_answers_are_exact_integers_and_levels_grow(load, level):
    ds = load("arithmetic", level=level, size=400, seed=7)
    n_ops = {1: 1, 2: 1, 3: 2, 4: 3, 5: 4}[level]
    for row in ds:
        value, count = exact_value(row["expression"])
        assert value.denominator == 1
        assert row["answer"] == str(int(value)), row
        assert count == n_ops, row
        if level < 5:
            assert int(row["answer"]) >= 0
    if level == 1:
        assert not any(op in e for e in ds["expression"] for op in "*/")
    if level >= 2:
        assert any("*" in e for e in ds["expression"]) and any("/" in e for e in ds["expression"])
    biggest = max(int(n) for e in ds["expression"] for n in re.findall(r"\d+", e))
    assert biggest <= {1: 20, 2: 144, 3: 144, 4: 1000, 5: 10000}[level]


def test_seeded_and_reproducible(load):
    a = load("arithmetic", level=[1, 3], size=50, seed=1)
    b = load("arithmetic", level=[1, 3], size=50, seed=1)
    c = load("arithmetic", level=[1, 3], size=50, seed=2)
    assert a["question"] == b["question"] and a["answer"] == b["answer"]
    assert a["question"] != c["question"]
    assert set(a["level"]) == {1, 3}


def test_splits_are_disjoint_problems_and_slices_complement(load):
    train = set(load("arithmetic", size=2000)["expression"])
    test = set(load("arithmetic", split="test", size=300)["expression"])
    validation = set(load("arithmetic", split="validation", size=300)["expression"])
    assert train.isdisjoint(test) and train.isdisjoint(validation) and test.isdisjoint(validation)
    full = load("arithmetic", size=100)["question"]
    head = load("arithmetic", size=100, split="train[:90%]")["question"]
    tail = load("arithmetic", size=100, split="train[90%:]")["question"]
    assert (len(head), len(tail)) == (90, 10) and list(head) + list(tail) == full
    assert len(load("arithmetic", size=100, limit=7)) == 7


def test_kinds(load):
    assert set(load("arithmetic", kind="word", size=50)["kind"]) == {"word"}
    assert set(load("arithmetic", kind="symbol", size=50)["kind"]) == {"symbol"}


def test_bad_parameters_are_clear(load):
    with pytest.raises(SplitError, match="train, validation, test"):
        load("arithmetic", split="dev")
    with pytest.raises(DatasetError, match=r"level must be one of \[1, 2, 3, 4, 5\].*got 6"):
        load("arithmetic", level=6)
    with pytest.raises(DatasetError, match=r"got \['1'\]"):
        load("arithmetic", level=["1"])
    with pytest.raises(RewardParamError, match="'size' expects int"):
        load("arithmetic", size="100")  # checked by the core against the signature
    with pytest.raises(RewardParamError, match="no parameter 'levels'.*did you mean 'level'"):
        load("arithmetic", levels=[1, 2])


@pytest.mark.parametrize("system_prompt", ["plain", "xml"])
def test_grpo_check_passes(load, reward_check, system_prompt):
    report = reward_check(load("arithmetic", size=200, level=3), ["math.correctness", "format.xml_strict:0.5"],
                          system_prompt)
    assert report.ok, [g.short for g in report.gold] + [p.failures for p in report.probes]
