"""`grpo rollouts RUN_DIR`: what the model wrote while it learned, from the rollout log."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from grpo_core.base.errors import GrpoError
from grpo_core.base.tables import clip, number
from grpo_core.commands import SUMMARIES
from grpo_core.runfiles import METRICS
from grpo_core.runfiles import rollouts as rollout_log
from grpo_core.runfiles.jsonl import read_jsonl
from grpo_core.runfiles.metrics import run_tokens, summary
from grpo_core.view.filters import correctness_names, empty, group_key, suspect, unknown_columns
from grpo_core.view.filters import steps as _steps
from grpo_core.view.filters import where as _where

EPILOG = """\
filters (rows that match any given filter are listed, grouped by step):
  --suspect          a correctness reward scores 0 on the completion, yet its total is the best of
                     its group (the group has a spread, and was trained on): the policy is pushed
                     toward a wrong answer
  --empty            the completion is empty or was truncated, or a reward found no answer in it
                     (an empty or null extra/<reward>/answer column)
  --where EXPR       a column compared with a number: 'format.xml_strict>0.5', 'total>=1',
                     'tokens<5' (a reward's name reads its score; ops > >= < <= ==)
Without a filter: per step, the best and worst completion of the first K groups.
"""


def add_parser(sub) -> None:
    import argparse

    p = sub.add_parser("rollouts", help=SUMMARIES["rollouts"],
                       description="What the model wrote while it learned: grpo train logs every scored completion "
                       "in OUTPUT_DIR/rollouts/ (log.rollouts).", epilog=EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run", type=Path, help="the run's output dir (or its rollouts folder)")
    p.add_argument("--step", default=None, metavar="N|A-B", help="one step, or a range of steps")
    p.add_argument("--groups", type=int, default=2, metavar="K", help="groups shown per step (default 2)")
    p.add_argument("--suspect", action="store_true", help="correctness 0 but the group's best total")
    p.add_argument("--empty", action="store_true", help="empty, truncated, or no answer found")
    p.add_argument("--where", action="append", default=[], metavar="EXPR", help="e.g. 'format.xml_strict>0.5'")
    p.add_argument("--correctness", action="append", default=None, metavar="NAME",
                   help="the correctness rewards (default: those the run's config.yaml declares)")
    p.add_argument("--limit", type=int, default=50, help="rows listed at most (default 50)")
    p.add_argument("--json", action="store_true", help="JSON lines: one per row listed")
    p.set_defaults(func=run)


def run(args) -> int:
    run_dir = args.run.parent if args.run.name == rollout_log.FOLDER else args.run
    steps = _steps(args.step)  # a range: --step 1-30000000 costs what the logged steps cost
    for expr in args.where:
        _where(expr)  # its syntax, before any file is read
    logged = [s for s, _ in rollout_log.files(run_dir / rollout_log.FOLDER)]
    if steps is not None and logged and not any(s in steps for s in logged):
        raise GrpoError(f"--step {args.step}: no logged step there; the log has steps {logged[0]} to {logged[-1]} "
                        f"({len(set(logged))} of them).")
    try:
        table = rollout_log.read(args.run, steps=steps)
    except FileNotFoundError as exc:
        raise GrpoError(str(exc)) from None
    unknown = unknown_columns(args.where, args.correctness or [], table.column_names)
    if unknown:
        raise GrpoError(" ".join(unknown))
    rows = table.to_pylist()
    filters = []
    if args.suspect:
        correct = args.correctness or correctness_names(run_dir, table.column_names)
        if not correct:
            raise GrpoError("--suspect needs a correctness reward: the run's config.yaml declares none that is "
                            "installed; name one with --correctness NAME.")
        flagged = {id(r) for r in suspect(rows, correct)}
        filters.append(lambda r: id(r) in flagged)
    if args.empty:
        filters.append(empty)
    filters += [_where(expr)[1] for expr in args.where]
    if filters:
        listed = [r for r in rows if any(f(r) for f in filters)]
        _print_rows(listed[:args.limit], len(listed), args.json)
    else:
        _print_groups(rows, args.groups, args.json)
    tokens = summary(*run_tokens(read_jsonl(run_dir / METRICS)))
    if tokens and not args.json:
        print(f"\nThe run: {tokens}")
    return 0


def _scores(r: dict) -> str:
    parts = [f"{k[len('reward/'):]} {_n(v)}" for k, v in r.items() if k.startswith("reward/")]
    return "  ".join(parts) + f" | total {_n(r['total'])} | advantage {_n(r['advantage'])}"


def _n(v) -> str:
    return number(v, 3)


def _print_rows(rows: list[dict], total: int, as_json: bool) -> None:
    if as_json:
        for r in rows:
            sys.stdout.write(json.dumps(r, default=str) + "\n")
        return
    print(f"{total} rows match" + (f" (first {len(rows)} shown)" if total > len(rows) else ""))
    step = None
    for r in rows:
        if r["step"] != step:
            step = r["step"]
            print(f"\nstep {step}")
        flags = " [truncated]" if r.get("truncated") else ""
        where = f"group {r['group']}" + (f" round {r['round']}" if r.get("round") else "")
        print(f"  {where} | {clip(r['prompt'], 60)!r}{flags}\n    {clip(r['completion'])!r}\n    {_scores(r)}")


def _print_groups(rows: list[dict], k: int, as_json: bool) -> None:
    groups: dict = {}
    for r in rows:
        groups.setdefault(group_key(r), []).append(r)
    shown: dict = {}
    for key, members in groups.items():
        if len(shown.setdefault(key[0], [])) < k:
            shown[key[0]].append(members)
    for step, chosen in sorted(shown.items()):
        if not as_json:
            print(f"step {step}")
        for members in chosen:
            ranked = sorted(members, key=lambda r: r["total"], reverse=True)
            best, worst = ranked[0], ranked[-1]
            if as_json:
                sys.stdout.write(json.dumps({"step": step, "group": best["group"], "best": best, "worst": worst},
                                            default=str) + "\n")
                continue
            print(f"  group {best['group']}: {clip(best['prompt'], 80)!r}")
            print(f"    best : {clip(best['completion'])!r}\n           {_scores(best)}")
            print(f"    worst: {clip(worst['completion'])!r}\n           {_scores(worst)}")
