"""``grpo judge calibrate EXAMPLES.jsonl --reward SPEC``: before paying for a run, does the judge
understand the rubric? Your own labelled examples are scored by the judge reward exactly as
training would call it (the cache off: every answer is new), each twice, and the report says
how often the judge agrees with your labels, how far it is from them, how many of its answers
could not be read, whether it answers the same twice at temperature 0, and what it cost.

EXAMPLES.jsonl, one object per line: ``completion`` (text, or chat messages), ``expected``
(the score you would give on the reward's 0..1 scale: 0.7 for 7 of 10, or true/false for a
yes/no question), optionally ``prompt`` (the question answered) and any dataset column the
reward reads (``answer``: the reference answer shown to the judge).

Exit codes: 0 the judge agrees on at least ``--min-agreement`` of the examples, 1 it does not,
2 the examples or the reward spec cannot be used.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

MAX_FILE = 16 << 20  # bytes
MAX_EXAMPLES = 5000
RESERVED = {"completion", "expected", "prompt"}


def setup(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="judge_command", metavar="{calibrate}")
    sub.required = True
    p = sub.add_parser("calibrate", help="score your labelled examples with a judge reward: agreement, consistency, "
                       "cost", description="Score your labelled examples with a judge reward, each twice, before "
                       "paying for a run: agreement with your labels, unreadable answers, consistency, cost. Exit 0 "
                       "at or above --min-agreement, 1 below, 2 for examples or a spec that cannot be used.")
    p.add_argument("examples", type=Path, help="JSONL: completion, expected (0..1 or true/false), optional prompt "
                   "and columns (answer)")
    p.add_argument("--reward", required=True, metavar="SPEC",
                   help="the judge reward as in a config, e.g. \"judge.yesno(url='http://127.0.0.1:8000/v1')\"")
    p.add_argument("--tolerance", type=float, default=0.1,
                   help="a score within this of the label agrees (labels other than 0/1; default 0.1)")
    p.add_argument("--min-agreement", type=float, default=0.8, help="exit 1 below this share (default 0.8)")
    p.add_argument("--show", type=int, default=10, help="disagreements listed (default 10)")
    p.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the report as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from grpo_core import GrpoError

    if not 0 <= args.tolerance <= 1 or not 0 <= args.min_agreement <= 1:
        raise GrpoError(f"--tolerance and --min-agreement are shares from 0 to 1, got {args.tolerance} and "
                        f"{args.min_agreement}.")
    examples = read_examples(args.examples)
    reward, spec = _reward(args.reward)
    started = time.perf_counter()
    spent = {"tokens": 0.0, "requests": 0.0}
    first = _score(reward, examples, spent)
    second = _score(reward, examples, spent)
    result = agreement([e["expected"] for e in examples], first, second, args.tolerance)
    result.update(reward=args.reward, examples=len(examples), seconds=time.perf_counter() - started, **spent)
    print(format_report(result, examples, spec, args))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    return 0 if result["agreement"] >= args.min_agreement else 1


def read_examples(path: Path) -> list[dict]:
    """The labelled examples, each checked; GrpoError names the line and the fix."""
    from grpo_core import GrpoError

    if not path.is_file():
        raise GrpoError(f"{path}: no such file; give a JSONL file of labelled examples (completion, expected).")
    if path.stat().st_size > MAX_FILE:
        raise GrpoError(f"{path} is over {MAX_FILE >> 20} MiB; calibrate on a small labelled sample.")
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            raise GrpoError(f"{path}:{number} is not JSON; each line is an object such as "
                            f"{{\"completion\": \"...\", \"expected\": 0.8}}.") from None
        if not isinstance(row, dict) or "completion" not in row or "expected" not in row:
            raise GrpoError(f"{path}:{number} needs 'completion' and 'expected' (the score you would give, 0..1, "
                            f"or true/false).")
        row["expected"] = _label(row["expected"], f"{path}:{number}")
        out.append(row)
        if len(out) > MAX_EXAMPLES:
            raise GrpoError(f"{path} has more than {MAX_EXAMPLES} examples; calibrate on a small labelled sample.")
    if not out:
        raise GrpoError(f"{path} holds no examples.")
    return out


def _label(value, where: str) -> float:
    from grpo_core import GrpoError

    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value) and 0 <= value <= 1:
        return float(value)
    raise GrpoError(f"{where}: expected is {value!r:.40}; give the score the reward should pay, from 0 to 1 (a "
                    f"score of 7 on a scale of 10 is 0.7), or true/false.")


def _reward(text: str):
    """The judge reward the spec names, bound with its cache off (every answer new) and no
    recheck (this command asks everything twice itself)."""
    from grpo_core import GrpoError, get_reward, parse_spec

    spec = parse_spec(text)
    if not spec.name.startswith("judge."):
        raise GrpoError(f"--reward {text!r} is not a judge reward; give judge.score, judge.yesno or judge.rubric "
                        f"with its settings.")
    if spec.name == "judge.pairwise":
        raise GrpoError("judge.pairwise compares a group's completions with each other: it has no score of its own "
                        "to hold against a label. Calibrate the criterion with judge.yesno or judge.score.")
    return get_reward(spec.name, **{**spec.params, "cache": "off", "recheck": 0}), spec


def _score(reward, examples: list[dict], spent: dict) -> list[float | None]:
    columns = sorted({k for e in examples for k in e} - RESERVED)

    def log_metric(name: str, value: float) -> None:
        kind = name.rsplit("/", 1)[-1]
        if kind in spent:
            spent[kind] += value

    values = reward([e["completion"] for e in examples],
                    prompts=[[{"role": "user", "content": str(e.get("prompt") or "")}] for e in examples],
                    log_metric=log_metric, log_extra=lambda *a, **k: None,
                    **{c: [e.get(c) for e in examples] for c in columns})
    return [None if v is None else float(v) for v in values]


def agreement(expected: list[float], first: list, second: list, tolerance: float) -> dict:
    """How the judge's first scores compare with the labels, and its second with its first."""
    binary = all(e in (0.0, 1.0) for e in expected)
    agree = [j is not None and ((j >= 0.5) == (e == 1.0) if binary else abs(j - e) <= tolerance + 1e-9)
             for e, j in zip(expected, first)]
    judged = [(e, j) for e, j in zip(expected, first) if j is not None]
    twice = [(a, b) for a, b in zip(first, second) if a is not None or b is not None]
    differ = [(a, b) for a, b in twice if a is None or b is None or abs(a - b) > 1e-6]
    spreads = [abs(a - b) for a, b in differ if a is not None and b is not None]
    return {"binary": binary, "agreement": sum(agree) / len(agree), "agreed": sum(agree),
            "unreadable": sum(j is None for j in first),
            "mean_abs_difference": statistics.fmean(abs(e - j) for e, j in judged) if judged else math.nan,
            "correlation": _correlation(judged), "differ_twice": len(differ), "asked_twice": len(twice),
            "spread": max(spreads) if spreads else 0.0,
            "rows": [{"expected": e, "judged": j, "again": b, "agrees": a}
                     for e, j, b, a in zip(expected, first, second, agree)]}


def _correlation(pairs: list[tuple[float, float]]) -> float:
    if len(pairs) < 3:
        return math.nan
    xs, ys = zip(*pairs)
    if len(set(xs)) < 2 or len(set(ys)) < 2:
        return math.nan
    return statistics.correlation(xs, ys)


def format_report(r: dict, examples: list[dict], spec, args) -> str:
    from grpo_core import completion_text

    n = r["examples"]
    rule = ("a score of 0.5 or more read as yes" if r["binary"]
            else f"within {args.tolerance:g} of the label")
    lines = [f"grpo judge calibrate: {spec.name} on {n} labelled examples ({args.examples})",
             f"  agreement        {r['agreed']} of {n} ({r['agreement']:.1%}; {rule})",
             f"  mean |judge - label| {r['mean_abs_difference']:.3f}, correlation "
             f"{'n/a' if math.isnan(r['correlation']) else format(r['correlation'], '.2f')}",
             f"  unreadable       {r['unreadable']} answers scored None (counted as disagreeing)",
             f"  consistency      {r['asked_twice'] - r['differ_twice']} of {r['asked_twice']} the same when asked "
             f"again (spread up to {r['spread']:.2f})",
             f"  cost             {r['requests']:.0f} requests, {r['tokens']:.0f} tokens, {r['seconds']:.1f}s "
             f"(every example asked twice)"]
    wrong = [(i, row) for i, row in enumerate(r["rows"]) if not row["agrees"]]
    if wrong and args.show > 0:
        lines.append("  disagreements (expected -> judged):")
        for i, row in wrong[:args.show]:
            judged = "unreadable" if row["judged"] is None else f"{row['judged']:.2f}"
            text = completion_text(examples[i]["completion"]).replace("\n", " ")
            lines.append(f"    example {i + 1}: {row['expected']:g} -> {judged}  {text!r:.70}")
    ok = r["agreement"] >= args.min_agreement
    lines.append(f"calibrate: {'ok' if ok else 'FAILED'} ({r['agreement']:.1%} "
                 f"{'>=' if ok else '<'} --min-agreement {args.min_agreement:g})")
    if r["differ_twice"]:
        lines.append("  note: the judge did not repeat itself at temperature 0: its scores are noisy (check the "
                     "server honours temperature 0 and the seed)")
    return "\n".join(lines)


__all__ = ["setup", "run", "read_examples", "agreement"]
