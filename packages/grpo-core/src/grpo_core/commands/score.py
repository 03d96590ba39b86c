"""`grpo score`: score completions from a JSONL file with composed rewards, no model needed."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from . import print_json, table


def add_parser(sub) -> None:
    p = sub.add_parser(
        "score",
        help="score completions from a JSONL file with composed rewards (no model needed)",
        description="Each input line is a JSON object with a 'completion' (text or a list of "
        "messages) and any dataset columns the rewards read ('answer', ...); 'prompt' and "
        "'completion_ids' are passed on when present.",
    )
    p.add_argument("--rewards", nargs="+", required=True, metavar="SPEC",
                   help="reward specs: name, name:weight or name(key=value):weight")
    p.add_argument("--input", required=True, type=Path, help="JSONL file of completions")
    p.add_argument("--output", type=Path, help="per-line scores: .jsonl or .csv")
    p.add_argument("--group-size", type=int, default=None, metavar="G",
                   help="report the share of groups of G consecutive lines with zero reward spread")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=run)


def _read_batches(path: Path, batch_size: int):
    from ..errors import GrpoError

    batch = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise GrpoError(f"{path}:{lineno} is not valid JSON ({exc.msg}); each line must be one object.") from None
            if not isinstance(row, dict) or "completion" not in row:
                raise GrpoError(
                    f"{path}:{lineno} has no 'completion' field; each line needs "
                    f'{{"completion": ..., <columns the rewards read>}}.'
                )
            batch.append((lineno, row))
            if len(batch) >= batch_size:
                yield batch
                batch = []
    if batch:
        yield batch


def run(args) -> int:
    from ..errors import GrpoError, MissingColumnError
    from ..rewards import compose_rewards
    from ..scoring import GroupStats, RewardStats, call_reward, weighted_totals

    if not args.input.is_file():
        raise GrpoError(f"--input {args.input}: no such file.")
    if args.group_size is not None and args.group_size < 2:
        raise GrpoError(f"--group-size must be at least 2 (the number of completions per prompt), got {args.group_size}.")
    if args.output and args.output.suffix not in (".jsonl", ".csv"):
        raise GrpoError(f"--output {args.output}: use a .jsonl or .csv file name.")
    funcs, weights = compose_rewards(args.rewards)
    names = [f.__name__ for f in funcs]
    stats = [RewardStats(n) for n in names]
    total_stats = RewardStats("total")
    groups = GroupStats(args.group_size) if args.group_size else None
    out = _open_output(args.output, names) if args.output else None
    progress = None
    if not args.no_progress and sys.stderr.isatty():
        from tqdm import tqdm

        progress = tqdm(unit=" lines", desc="scoring", file=sys.stderr)
    try:
        for batch in _read_batches(args.input, args.batch_size):
            rows = [r for _, r in batch]
            keys = set().union(*(r.keys() for r in rows))
            columns = {k: [r.get(k) for r in rows] for k in keys - {"completion", "prompt", "completion_ids"}}
            for f in funcs:
                missing = [c for c in f.required_columns if c not in keys]
                partial = [c for c in f.required_columns if c in keys and any(c not in r for r in rows)]
                if missing or partial:
                    col = (missing or partial)[0]
                    where = f"line {next(n for n, r in batch if col not in r)}"
                    raise MissingColumnError(
                        f"reward '{f.__name__}' needs the column '{col}', but {args.input} {where} "
                        f"has only: {', '.join(sorted(next(r for _, r in batch if col not in r)))}. "
                        f"Add \"{col}\" to every line or drop the reward."
                    )
            completions = [r["completion"] for r in rows]
            prompts = [r.get("prompt") for r in rows] if "prompt" in keys else None
            ids = [r.get("completion_ids") for r in rows] if "completion_ids" in keys else None
            per_reward = [call_reward(f, completions, columns, prompts, ids) for f in funcs]
            totals = weighted_totals(per_reward, weights)
            for s, values in zip(stats, per_reward):
                s.add(values)
            total_stats.add(totals)
            if groups:
                groups.add(totals)
            if out:
                out.write(batch, per_reward, totals)
            if progress:
                progress.update(len(rows))
    finally:
        if progress:
            progress.close()
        if out:
            out.close()
    summary = {
        "lines": total_stats.n,
        "rewards": [dict(s.as_dict(), weight=w) for s, w in zip(stats, weights)],
        "total": total_stats.as_dict(),
    }
    if groups:
        summary["groups"] = {"size": groups.size, "count": groups.groups, "zero_spread": groups.flat,
                             "zero_spread_share": groups.flat_share, "incomplete_lines": groups.leftover}
    if args.json:
        print_json(summary)
        return 0
    rows = []
    for d in summary["rewards"] + [dict(summary["total"], weight="")]:
        rows.append([d["reward"], _fmt(d["weight"]), _fmt(d["mean"]), _fmt(d["std"]), _fmt(d["min"]),
                     _fmt(d["max"]), _pct(d["none_share"]), _pct(d["zero_share"])])
    print(f"{summary['lines']} completions from {args.input}")
    print(table(rows, ["reward", "weight", "mean", "std", "min", "max", "None", "zeros"]))
    if groups:
        g = summary["groups"]
        print(f"\ngroups of {g['size']}: {g['zero_spread']}/{g['count']} ({_pct(g['zero_spread_share'])}) "
              f"have zero spread in total reward (no learning signal)"
              + (f"; {g['incomplete_lines']} trailing lines do not fill a group" if g["incomplete_lines"] else ""))
    if args.output:
        print(f"per-line scores written to {args.output}")
    return 0


def _fmt(v) -> str:
    if v == "" or v is None:
        return ""
    return "nan" if isinstance(v, float) and math.isnan(v) else f"{v:.4g}"


def _pct(v) -> str:
    return "nan" if isinstance(v, float) and math.isnan(v) else f"{100 * v:.1f}%"


class _open_output:
    def __init__(self, path: Path, names: list[str]):
        self.path, self.names = path, names
        self.fh = path.open("w", encoding="utf-8", newline="")
        if path.suffix == ".csv":
            import csv

            self.csv = csv.writer(self.fh)
            self.csv.writerow(["line", *names, "total"])
        else:
            self.csv = None

    def write(self, batch, per_reward, totals) -> None:
        for i, (lineno, _) in enumerate(batch):
            values = [v[i] for v in per_reward]
            if self.csv:
                self.csv.writerow([lineno, *("" if v is None else v for v in values), totals[i]])
            else:
                rec = {"line": lineno, **dict(zip(self.names, values)), "total": totals[i]}
                self.fh.write(json.dumps(rec) + "\n")

    def close(self) -> None:
        self.fh.close()
