"""Asserts rewritten so that only plain values can pass them (done in the trainer,
on the dataset's tests, which are trusted text; the harness only compiles them).

``assert f(1) == 3`` becomes ``assert __grpo_truth__(__grpo_cmp__(("Eq",), f(1), 3))``;
``and`` / ``or`` / ``not`` parts are checked one by one. In the sandbox those
helpers fail the test when a value built from anything but plain built-in types
(numbers, strings, bytes, None and lists, tuples, sets, dicts, deques, Counters
of them) meets a plain one or is used as a truth value: an object whose ``__eq__``
always says True passes nothing, negated or not. ``is`` / ``is not`` are left to
identity.
"""

from __future__ import annotations

import ast
from functools import lru_cache


def _call(name: str, args: list) -> ast.Call:
    return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=args, keywords=[])


def _check(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Compare):
        names = ast.Tuple(elts=[ast.Constant(value=type(op).__name__) for op in node.ops], ctx=ast.Load())
        return _call("__grpo_cmp__", [names, node.left, *node.comparators])
    if isinstance(node, ast.BoolOp):
        return ast.BoolOp(op=node.op, values=[_call("__grpo_truth__", [_check(v)]) for v in node.values])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return ast.UnaryOp(op=node.op, operand=_call("__grpo_truth__", [_check(node.operand)]))
    return node


class _Rewriter(ast.NodeTransformer):
    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        self.generic_visit(node)
        new = ast.Assert(test=_call("__grpo_truth__", [_check(node.test)]), msg=node.msg)
        return ast.copy_location(new, node)


@lru_cache(maxsize=4096)
def rewrite(source: str) -> str:
    """``source`` with every assert (inside functions too) rewritten; unchanged when it
    does not parse (the harness then reports the test's SyntaxError)."""
    try:
        tree = ast.parse(source, "<test>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source
    return ast.unparse(ast.fix_missing_locations(_Rewriter().visit(tree)))


__all__ = ["rewrite"]
