"""Model output is untrusted: no task whose scorer evaluates text is offered.

The installed reasoning-gym's scorers are read (each task's ``score_answer`` and what it
calls of its class, its module and reasoning-gym's helpers) for eval, exec, compile and
sympy's parsers; every task found must be refused by name, and every refused one must
still be found (a list that only grows would hide a fixed scorer)."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap

import pytest

from grpo_core.errors import DatasetError
from grpo_reasoning_gym import EVALUATING, TASKS
from grpo_reasoning_gym.tasks import registry

EVALUATORS = {"eval", "exec", "compile", "sympify", "parse_expr", "parse_latex"}
# read by hand: the scorer evaluates the gold (entry["answer"], made by reasoning-gym), never the answer
REVIEWED = {
    "number_sorting": "eval(entry['answer']) when the gold is not JSON",
    "bitwise_arithmetic": "eval(metadata['problem']); the answer is read with int(answer, 0)",
}


def _evaluators(func, owner: type, seen: set, depth: int = 0) -> set[str]:
    """The evaluating calls in ``func`` and, four calls deep, in what it calls."""
    func = inspect.unwrap(func)
    if func in seen or depth > 4 or not getattr(func, "__module__", "").startswith("reasoning_gym"):
        return set()
    seen.add(func)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return set()
    found: set[str] = set()
    module = vars(sys.modules[func.__module__])
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        callee = node.func
        name = callee.id if isinstance(callee, ast.Name) else callee.attr if isinstance(callee, ast.Attribute) else None
        target = None
        if isinstance(callee, ast.Attribute) and isinstance(callee.value, ast.Name):
            base = callee.value.id
            holder = owner if base in ("self", "cls") else module.get(base)
            target = getattr(holder, callee.attr, None) if holder is not None else None
        elif isinstance(callee, ast.Name):
            target = module.get(callee.id)
        if (inspect.isfunction(target) or inspect.ismethod(target)) and target.__module__.startswith("reasoning_gym"):
            found |= _evaluators(target, owner, seen, depth + 1)  # reasoning-gym's own (its own parse_expr too)
        elif name in EVALUATORS:
            found.add(name)
    return found


@pytest.fixture(scope="module")
def evaluating() -> dict[str, set[str]]:
    out = {}
    for task, (dataset_cls, _) in registry().items():
        found = _evaluators(dataset_cls.score_answer, dataset_cls, set())
        if found:
            out[task] = found
    return out


def test_the_scanner_finds_what_it_looks_for(evaluating):
    # read by hand: countdown's scorer calls parse_expr(answer); chain_sum's only Decimal()
    assert "parse_expr" in evaluating["countdown"] and "chain_sum" not in evaluating


def test_every_task_whose_scorer_evaluates_text_is_refused_and_only_those(evaluating):
    assert set(evaluating) - set(REVIEWED) == set(EVALUATING)
    assert set(REVIEWED) <= set(evaluating)  # read by hand as the scanner found them
    assert not set(TASKS) & set(evaluating)


@pytest.mark.parametrize("task", sorted(EVALUATING))
def test_a_refused_task_cannot_be_loaded(rg, task):
    with pytest.raises(DatasetError, match=f"'{task}' is not offered: its scorer runs the model's answer through"):
        rg("rg.task", task=task, size=2)
