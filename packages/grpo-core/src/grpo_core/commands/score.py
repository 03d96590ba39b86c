"""`grpo score`: score completions from a file with composed rewards, no model needed;
``--against`` scores them a second way and reports what would change in training."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import TextIO

from grpo_core.base.errors import GrpoError, MissingColumnError
from grpo_core.base.tables import number as show_number
from grpo_core.base.text import completion_text
from grpo_core.checks import manifest
from grpo_core.commands import SUMMARIES, number_arg, print_json, table
from grpo_core.commands.score_input import (
    INPUTS,
    group_key,
    group_sizes,
    is_log,
    read_batches,
    whole_groups,
)
from grpo_core.config.values import Range
from grpo_core.rewards.reward import compose_rewards
from grpo_core.rewards.scoring import (
    ROW_ONLY,
    Comparison,
    Grouper,
    GroupStats,
    RewardStats,
    score_batch,
)
from grpo_core.runfiles import rollouts as rollout_log


def add_parser(sub) -> None:
    p = sub.add_parser(
        "score",
        help=SUMMARIES["score"],
        description="Each input row has a 'completion' (text or a list of messages) and any dataset "
        "columns the rewards read ('answer', ...); 'prompt' and 'completion_ids' are passed on when "
        "present. With --against, a second reward set scores the same completions, and the report "
        "says how many groups' best completion and how many advantages would change.",
    )
    p.add_argument("--rewards", nargs="+", required=True, metavar="SPEC",
                   help="reward specs: name, name:weight or name(key=value):weight")
    p.add_argument("--against", nargs="+", default=None, metavar="SPEC",
                   help="a second reward set to compare with, over the same completions")
    p.add_argument("--input", required=True, type=Path,
                   help="completions: .jsonl, .csv or .parquet, or a run's rollout log (RUN_DIR, RUN_DIR/rollouts "
                        "or one of its files: groups are taken from the log, and the comparison is reported per step)")
    p.add_argument("--output", type=Path, help="per-row scores (and what rewards logged, e.g. the extracted answer): .jsonl or .csv")
    p.add_argument("--group-size", type=int, default=None, metavar="G",
                   help="groups are G consecutive rows (default: a 'group' column, a rollout log's groups, else "
                   "runs of the same prompt); reports the share of groups with zero reward spread. A group "
                   "reward scores each group together")
    p.add_argument("--batch-size", type=number_arg(Range(1)), default=1024, help="rows scored at once (default 1024)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=run)


# ------------------------------------------------------------------ scoring


class _Side:
    """One reward set: its rewards, weights and running statistics."""

    def __init__(self, specs: list[str], group_size: int | None, prefix: str = ""):
        self.funcs, self.weights = compose_rewards(specs)
        self.prefix = prefix
        self.names = [f.__name__ for f in self.funcs]
        self.stats = [RewardStats(n) for n in self.names]
        self.total = RewardStats("total")
        self.flat = GroupStats(group_size) if group_size else None

    def score(self, batch, keys: set, path: Path, group_size: int | list[int] | None = None) -> tuple[list, list, dict]:
        """(scores per reward, weighted totals, what the rewards logged per row);
        ``group_size``: the batch's groups, for group rewards."""

        rows = [r for _, r in batch]
        for f in self.funcs:
            _require(f, batch, keys, path)
        scored = score_batch(self.funcs, self.weights, [r["completion"] for r in rows],
                             prompts=[r.get("prompt") for r in rows] if "prompt" in keys else None,
                             completion_ids=[r.get("completion_ids") for r in rows] if "completion_ids" in keys else None,
                             columns={k: [r.get(k) for r in rows] for k in keys - set(ROW_ONLY)},
                             group_size=group_size)
        for s, values in zip(self.stats, scored.per_reward):
            s.add(values)
        self.total.add(scored.totals)
        if self.flat:
            self.flat.add(scored.totals)
        return scored.per_reward, scored.totals, scored.extras

    def record(self, i: int, per_reward, totals, extras) -> dict:
        """Row ``i``'s scores, keyed ``<prefix><reward>``, ``<prefix>total``, ``<prefix><logged>``."""
        rec = {self.prefix + n: v[i] for n, v in zip(self.names, per_reward)}
        rec[self.prefix + "total"] = totals[i]
        rec.update({self.prefix + k: v[i] if i < len(v) else None for k, v in extras.items()})
        return rec

    def summary(self) -> dict:
        out = {"rewards": [dict(s.as_dict(), weight=w) for s, w in zip(self.stats, self.weights)],
               "total": self.total.as_dict()}
        if self.flat:
            f = self.flat
            out["groups"] = {"size": f.size, "count": f.groups, "zero_spread": f.flat,
                             "zero_spread_share": f.flat_share, "incomplete_lines": f.leftover}
        return out


def _require(f, batch, keys: set, path: Path) -> None:
    for col in f.required_columns:
        if col in keys and all(col in r for _, r in batch):
            continue
        number, row = next((n, r) for n, r in batch if col not in r)
        raise MissingColumnError(
            f"reward '{f.__name__}' needs the column '{col}', but {path} line {number} has only: "
            f"{', '.join(sorted(row))}. Add \"{col}\" to every row or drop the reward."
        )


def _check_args(args) -> None:
    if not args.input.exists():
        raise GrpoError(f"--input {args.input}: no such file or folder.")
    if args.input.is_dir():
        folder = args.input if args.input.name == rollout_log.FOLDER else args.input / rollout_log.FOLDER
        if not rollout_log.files(folder):
            raise GrpoError(f"--input {args.input}: a folder must be a run's output dir or its rollouts/ folder, "
                            f"with rollouts/step-*.parquet (the run may have set log.rollouts: none).")
    elif args.input.suffix not in INPUTS:
        raise GrpoError(f"--input {args.input}: use a {', '.join(INPUTS)} file, or a run's rollout log.")
    if args.group_size is not None and args.group_size < 2:
        raise GrpoError(f"--group-size must be at least 2 (the number of completions per prompt), got {args.group_size}.")
    if args.output and args.output.suffix not in (".jsonl", ".csv"):
        raise GrpoError(f"--output {args.output}: use a .jsonl or .csv file name.")


def run(args) -> int:
    _check_args(args)
    sides = [_Side(args.rewards, args.group_size)]
    if args.against:
        sides.append(_Side(args.against, args.group_size, prefix="against/"))
    compare = Comparison() if args.against else None
    grouper = Grouper(args.group_size)  # (used with compare only)
    steps: dict = {}  # a rollout log's comparison, per step
    step_of: dict = {}  # row number -> the log's step
    _say_manifest(args.input, args.rewards)
    out = _Output(args.output) if args.output else None
    progress = _progress(args)
    grouped = _group_rewards(sides, args)
    batches = read_batches(args.input, args.batch_size)
    try:
        for batch in whole_groups(batches, args.group_size, args.input) if grouped else batches:
            keys = set().union(*(r.keys() for _, r in batch))
            sizes = group_sizes(batch, args.group_size) if grouped else None
            scored = [side.score(batch, keys, args.input, sizes) for side in sides]
            records = [{"line": n, **{k: v for side, s in zip(sides, scored) for k, v in side.record(i, *s).items()}}
                       for i, (n, _) in enumerate(batch)]
            if out:
                out.write(records)
            if compare:
                step_of.update((n, r["step"]) for n, r in batch if "step" in r)
                items = [(n, scored[0][1][i], scored[1][1][i], _excerpt(r["completion"])) for i, (n, r) in enumerate(batch)]
                for group in grouper.add(items, [group_key(r) for _, r in batch]):
                    _add_group(compare, steps, step_of, group)
            if progress:
                progress.update(len(batch))
    finally:
        if progress:
            progress.close()
        if out:
            out.close()
    if sides[0].total.n == 0:  # a table of nan would say nothing was wrong
        raise GrpoError(f"--input {args.input} holds no completions (no rows); each row needs a 'completion' and the "
                        f"columns the rewards read.")
    if compare:
        for group in grouper.finish():
            _add_group(compare, steps, step_of, group)
    return _report(args, sides, compare, steps)


def _group_rewards(sides: list[_Side], args) -> list[str]:
    """The group rewards scored; with them, which rows form a group must be said."""
    names = [f.__name__ for side in sides for f in side.funcs if getattr(f, "group", False)]
    if names and not args.group_size and not is_log(args.input):
        first: dict = next(read_batches(args.input, 1), [(0, {})])[0][1]
        if "group" not in first and "prompt" not in first:
            raise GrpoError(
                f"{', '.join(names)} {'is a group reward' if len(names) == 1 else 'are group rewards'}: say which rows "
                f"of {args.input} form a group, with --group-size G (G rows after another), a 'group' column, or a "
                f"'prompt' column (runs of one prompt).")
    return names


def _add_group(compare, steps: dict, step_of: dict, group) -> None:
    """To the whole comparison, and to its step's when the rows come from a rollout log."""

    compare.add_group(*zip(*group))
    step = step_of.pop(group[0][0], None)
    for line, *_ in group[1:]:
        step_of.pop(line, None)
    if step is not None:
        steps.setdefault(step, Comparison(top=0)).add_group(*zip(*group))


def _say_manifest(path: Path, specs: list[str]) -> None:
    """A run's log re-scored with installed rewards that differ from those that paid it: say so."""

    for line in manifest.differences_near(path, specs):
        print(f"note: {line}", file=sys.stderr)


def _excerpt(completion) -> str:
    return " ".join(completion_text(completion).split())[:100]


def _progress(args):
    if args.no_progress or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(unit=" rows", desc="scoring", file=sys.stderr)


# ------------------------------------------------------------------ the report


def _report(args, sides: list[_Side], compare, steps: dict | None = None) -> int:
    summary = {"lines": sides[0].total.n, **sides[0].summary()}
    if compare:
        summary["against"] = sides[1].summary()
        summary["comparison"] = compare.as_dict()
        if steps:
            summary["per_step"] = {step: {k: v for k, v in c.as_dict().items() if k != "most_different"}
                                   for step, c in sorted(steps.items())}
    if args.json:
        print_json(summary)
        return 0
    print(f"{summary['lines']} completions from {args.input}")
    for side, s in zip(sides, [summary, summary.get("against", {})]):  # (one side without compare)
        if compare:
            print(f"\n{'--against' if side.prefix else '--rewards'}:")
        _print_side(s)
    if compare:
        _print_comparison(summary["comparison"], args)
    if summary.get("per_step"):
        rows = [[step, c["groups"], f"{c['best_changed']} ({_pct(c['best_changed_share'])})",
                 f"{c['advantage_flipped']}/{c['completions']} ({_pct(c['advantage_flipped_share'])})"]
                for step, c in summary["per_step"].items()]
        print("\nper step of the run:")
        print(table(rows, ["step", "groups", "best changes", "advantage flips sign"]))
    if args.output:
        print(f"\nper-row scores written to {args.output}")
    return 0


def _print_side(s: dict) -> None:
    rows = []
    for d in s["rewards"] + [dict(s["total"], weight="")]:
        rows.append([d["reward"], _fmt(d["weight"]), _fmt(d["mean"]), _fmt(d["std"]), _fmt(d["min"]),
                     _fmt(d["max"]), _pct(d["none_share"]), _pct(d["zero_share"])])
    print(table(rows, ["reward", "weight", "mean", "std", "min", "max", "None", "zeros"]))
    if "groups" in s:
        g = s["groups"]
        print(f"\ngroups of {g['size']}: {g['zero_spread']}/{g['count']} ({_pct(g['zero_spread_share'])}) "
              f"have zero spread in total reward (no learning signal)"
              + (f"; {g['incomplete_lines']} trailing lines do not fill a group" if g["incomplete_lines"] else ""))


def _print_comparison(c: dict, args) -> None:
    grouping = (f"groups of {args.group_size}" if args.group_size else
                "groups (the log's groups)" if is_log(args.input) else "groups (runs of the same prompt)")
    print(f"\nwhat changes with --against, over {c['groups']} {grouping}:")
    print(f"  best completion changes in {c['best_changed']}/{c['groups']} groups ({_pct(c['best_changed_share'])})")
    print(f"  advantage changes sign for {c['advantage_flipped']}/{c['completions']} completions "
          f"({_pct(c['advantage_flipped_share'])})")
    if c["most_different"]:
        print("\nrows whose advantage moves most:")
        rows = [[r["line"], _fmt(r["total"]), _fmt(r["against_total"]), _fmt(r["advantage"]),
                 _fmt(r["against_advantage"]), r["completion"][:60]] for r in c["most_different"]]
        print(table(rows, ["row", "total", "against", "advantage", "against", "completion"]))


def _fmt(v) -> str:
    return "" if v == "" or v is None else show_number(v, missing="nan")


def _pct(v) -> str:
    return show_number(v, percent=True, missing="nan")


class _Output:
    """Per-row records to .jsonl, or .csv with the columns of the first batch."""

    def __init__(self, path: Path):
        self.path = path
        self.fh: TextIO | None = None  # opened with the first rows: an input with none leaves no file behind
        self.csv: csv.DictWriter | None = None

    def write(self, records: list[dict]) -> None:
        if self.fh is None:
            self.fh = self.path.open("w", encoding="utf-8", newline="")
        if self.path.suffix != ".csv":
            self.fh.writelines(json.dumps(r, default=str) + "\n" for r in records)
            return
        if self.csv is None:
            self.csv = csv.DictWriter(self.fh, fieldnames=list(records[0]), extrasaction="ignore")
            self.csv.writeheader()
        self.csv.writerows({k: "" if v is None else v for k, v in r.items()} for r in records)

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()
