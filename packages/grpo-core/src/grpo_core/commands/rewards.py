"""`grpo rewards list|show NAME|check NAME`."""

from __future__ import annotations

import inspect
import sys

from grpo_core.base.params import split_signature
from grpo_core.commands import SUMMARIES, parse_key_values, print_entries
from grpo_core.plugin import registry
from grpo_core.rewards.reward import list_rewards


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
    )
    check.add_argument("name")
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
    return 0


def run_check(args) -> int:
    # the contract suite runs rewards concurrently (asyncio, a thread pool): loaded for this
    # action only, not for `grpo rewards list`
    from grpo_core.authoring.contract import check_reward

    params = parse_key_values(args.extra, "grpo rewards check")
    results = check_reward(args.name, params)
    for r in results:
        print(r)
    failed = [r for r in results if not r.ok]
    print(f"{len(results) - len(failed)} passed, {len(failed)} failed")
    if failed:
        print(f"reward '{args.name}' does not meet the reward contract.", file=sys.stderr)
    return 1 if failed else 0
