"""`grpo rewards list|show NAME|check NAME`."""

from __future__ import annotations

import inspect
import sys

from grpo_core.base.errors import GrpoError
from grpo_core.base.params import split_signature
from grpo_core.commands import SUMMARIES, parse_key_values, print_entries, write_json
from grpo_core.plugin import registry
from grpo_core.rewards.reward import list_rewards, resolve


def add_parser(sub) -> None:
    p = sub.add_parser("rewards", help=SUMMARIES["rewards"])
    rs = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = rs.add_parser("list", help="every registered reward")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=run_list)
    show = rs.add_parser("show", help="a reward's formula, parameters and required columns")
    show.add_argument("name")
    show.set_defaults(func=run_show)
    check = rs.add_parser(
        "check",
        help="run the reward contract suite (length, floats or None, hostile text); "
        "parameters as --key value",
        description="The reward contract suite on one reward. Exit codes, for CI: 0 the reward meets the "
        "contract; 1 a contract check failed; 2 bad input (an unknown reward, a parameter it does not take "
        "or of the wrong type).",
    )
    check.add_argument("name")
    check.add_argument("--json", default=None, metavar="FILE",
                       help="also write the report as JSON (- for stdout instead of the table)")
    check.set_defaults(func=run_check, accepts_extra=True)


def run_list(args) -> int:
    return print_entries(list_rewards(), args.json,
                         "No rewards registered by a plugin. Install a reward plugin, e.g. pip install ./packages/grpo-rewards-format "
                         "from a grpo checkout")


def describe_parameters(func) -> tuple[list[str], list[str]]:
    params, required, _ = split_signature(func)
    lines = []
    for name, p in params.items():
        ann = p.annotation
        ann = "" if ann is p.empty else (ann if isinstance(ann, str) else getattr(ann, "__name__", str(ann)))
        lines.append(f"{name}{': ' + ann if ann else ''} = {p.default!r}")
    return lines, list(required)


def run_show(args) -> int:
    entry = registry.rewards().get(args.name)
    params, columns = describe_parameters(entry.obj)
    print(f"{entry.name}  ({entry.source}{', version ' + entry.version if entry.version else ''})")
    print()
    doc = inspect.getdoc(getattr(entry.obj, "__wrapped__", entry.obj)) or entry.description
    print(doc or "(no description)")
    print()
    print("Parameters:" + ("" if params else " none"))
    for line in params:
        print(f"  {line}")
    print("Required dataset columns: " + (", ".join(columns) or "none"))
    if entry.extra.get("group"):
        print("A group reward: called once per group of one prompt's completions, each scored against its group.")
    return 0


def run_check(args) -> int:
    # the contract suite runs rewards concurrently (asyncio, a thread pool): loaded for this
    # action only, not for `grpo rewards list`
    from grpo_core.authoring.contract import CheckResult, check_reward

    params = parse_key_values(args.extra, "grpo rewards check")
    try:  # bad input (exit 2): an unknown name, a parameter it does not take or of the wrong type
        reward = resolve(args.name).bind(params)
    except GrpoError as exc:
        results = [CheckResult("resolves", False, str(exc))]
    else:  # what calling it does is the contract's to judge (exit 1)
        results = check_reward(reward)
    unresolved = results[0] if results and results[0].name == "resolves" else None
    failed = [r for r in results if not r.ok]
    code = 2 if unresolved else 1 if failed else 0
    if args.json:
        write_json(args.json, {
            "reward": args.name, "params": params, "ok": code == 0, "exit_code": code,
            "error": unresolved.message if unresolved else None,
            "passed": 0 if unresolved else len(results) - len(failed), "failed": 0 if unresolved else len(failed),
            "checks": [] if unresolved else [{"check": r.name, "ok": r.ok, "message": r.message} for r in results]})
    if unresolved:
        print(f"Error: reward '{args.name}' cannot be checked: {unresolved.message}", file=sys.stderr)
        return code
    shown = sys.stderr if args.json == "-" else sys.stdout
    for r in results:
        print(r, file=shown)
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed", file=shown)
    if failed:
        print(f"reward '{args.name}' does not meet the reward contract.", file=sys.stderr)
    return code
