"""`grpo check CONFIG`: the gold self-test and the reward-hacking probes, no model."""

from __future__ import annotations

import contextlib
import sys

from grpo_core.checks.checks import check_plans
from grpo_core.commands import SUMMARIES, write_json
from grpo_core.commands.train import STRICT_HELP, print_notes
from grpo_core.config.load import load_config
from grpo_core.run.prepare import build_datasets, quiet


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check",
        help=SUMMARIES["check"],
        description="Gold self-test (the ideal completion, scored by every reward, for each row) and "
        "reward-hacking probes (hedges, copied questions, empty tags, ...). grpo train and grpo preflight "
        "run it first (--no-check skips it). Exit codes, for CI: 0 every check passed; 1 a check failed; "
        "2 the config or the data cannot be used.",
    )
    p.add_argument("config", help="the YAML config (rewards, dataset, system prompt)")
    p.add_argument("--limit", type=int, default=None, help="rows for the gold self-test (default 2000)")
    p.add_argument("--probe-rows", type=int, default=None, help="rows the probes are built from (default 16)")
    p.add_argument("--json", default=None, metavar="FILE",
                   help="also write the report as JSON: a list of stages, each with 'ok' (- for stdout, the "
                   "table then goes to stderr)")
    p.add_argument("--strict", action="store_true", help=STRICT_HELP)
    p.set_defaults(func=run, accepts_extra=True)


def run(args) -> int:
    if args.json == "-":  # stdout holds the JSON alone: what is said goes to stderr
        with contextlib.redirect_stdout(sys.stderr):
            reports = _reports(args)
    else:
        reports = _reports(args)
    if args.json:
        write_json(args.json, [{"ok": r.ok, **r.as_dict()} for r in reports])
    return 0 if all(r.ok for r in reports) else 1


def _reports(args) -> list:
    cfg = load_config(args.config, args.extra, strict=args.strict)
    print_notes(cfg)
    quiet()
    train_ds, _ = build_datasets(cfg)  # no GRPOConfig is built: TRL is not imported
    return check_plans(cfg, train_ds, limit=args.limit, probe_rows=args.probe_rows, log=print)
