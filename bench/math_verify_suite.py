"""math.correctness against math-verify's own test suite: how many of its cases agree.

    python bench/math_verify_suite.py /path/to/Math-Verify/tests [--fallback] [--wrap answer] [--show N]

math-verify (github.com/huggingface/Math-Verify) keeps its regression cases as
pytest parameters ``(gold, pred, expected)``. This reads them from a checkout's
``tests/`` folder (test_all.py, test_boxed.py, test_numina_cases.py,
test_open_thoughts.py, test_yujianll.py: 268 cases; nothing of math-verify's is
copied here), scores each ``pred`` against ``gold`` with ``math.correctness`` and
counts a case as agreeing when the score is 1.0 exactly where math-verify expects
1. Extra parameters of a case (precision, strict, ...) are left out: grpo has one
setting. Most predictions are bare text with no answer marker (math-verify takes
the last formula of any text), which math.correctness reads as no answer:
``--fallback`` passes ``fallback_last_number=True``; ``--wrap answer`` hands each
prediction over as ``<answer>pred</answer>`` (the whole prediction is the final
answer, math-verify's view of it). ``--timeout`` is generous by default so that a
busy machine's time-outs do not count as disagreement (the count of time-outs is
printed). Prints the total and every case that disagrees (``--show``), with its id.
"""

from __future__ import annotations

import argparse
import ast
import math
import sys
from pathlib import Path

FILES = ("test_all.py", "test_boxed.py", "test_numina_cases.py", "test_open_thoughts.py", "test_yujianll.py")


def cases(tests: Path) -> list[tuple[str, str, str, int]]:
    """(test id, gold, pred, expected) for every (gold, pred, expected|result) parameter.
    Read with ``ast`` (literals only): the test modules are not run."""
    out = []
    for name in FILES:
        tree = ast.parse((tests / name).read_text(encoding="utf-8"))
        for func in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
            for deco in func.decorator_list:
                if not (isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "parametrize"):
                    continue
                names = ast.literal_eval(deco.args[0])
                names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
                if "gold" not in names or "pred" not in names:
                    continue
                verdict = "expected" if "expected" in names else "result"
                for k, node in enumerate(deco.args[1].elts):
                    if isinstance(node, ast.Call):  # pytest.param(...)
                        node = ast.Tuple(elts=node.args, ctx=ast.Load())
                    row = dict(zip(names, _value(node)))
                    out.append((f"{name}::{func.name}[{k}]", row["gold"], row["pred"], int(row[verdict])))
    return out


def _value(node: ast.expr):
    """A literal, or (test_all.py's float case) an f-string over ``math``: evaluated with
    nothing but ``math`` in reach. These are math-verify's test files, not model output."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        code = compile(ast.Expression(body=node), "<math-verify case>", "eval")
        return eval(code, {"__builtins__": {}, "math": math})  # noqa: S307


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tests", type=Path, help="math-verify's tests/ folder")
    ap.add_argument("--fallback", action="store_true", help="fallback_last_number=True")
    ap.add_argument("--show", type=int, default=100, help="disagreeing cases to print")
    ap.add_argument("--only", default="", help="score only the cases whose id contains this")
    ap.add_argument("--wrap", choices=["none", "answer"], default="none", help="answer: <answer>pred</answer>")
    ap.add_argument("--timeout", type=float, default=30.0, help="per-check limit, seconds")
    args = ap.parse_args()
    from grpo_rewards_math import correctness

    found = [c for c in cases(args.tests) if args.only in c[0]]
    preds = [p if args.wrap == "none" else f"<answer>{p}</answer>" for _, _, p, _ in found]
    metrics: dict = {}
    scores = correctness(preds, [g for _, g, _, _ in found], fallback_last_number=args.fallback,
                         timeout=args.timeout, log_metric=metrics.__setitem__)
    wrong = [(c, s) for c, s in zip(found, scores) if (s == 1.0) != bool(c[3])]
    for (case_id, gold, pred, expected), score in wrong[: args.show]:
        print(f"  {case_id}: expected {expected}, scored {score}; gold={gold[:60]!r} pred={pred[-100:]!r}")
    print(f"math-verify's suite: {len(found) - len(wrong)}/{len(found)} agree"
          f" (fallback_last_number={args.fallback}, wrap={args.wrap}); {sum(1 for c, _ in wrong if c[3])} missed,"
          f" {sum(1 for c, _ in wrong if not c[3])} paid where math-verify expects 0;"
          f" time-outs {metrics.get('math.correctness/timeouts', 0):g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
