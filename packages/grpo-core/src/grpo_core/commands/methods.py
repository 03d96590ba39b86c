"""`grpo methods list`: the learning methods a config can name (``learning.method``); the
listing of a registry of factories with their parameters (``grpo samplers list`` too)."""

from __future__ import annotations

from grpo_core.commands import SUMMARIES, print_json, table
from grpo_core.commands.rewards import describe_parameters
from grpo_core.plugin import registry


def add_parser(sub) -> None:
    p = sub.add_parser("methods", help=SUMMARIES["methods"])
    ms = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = ms.add_parser("list", help="every registered learning method with its parameters")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=run_list)


def parameters(entry: registry.Entry) -> list[str]:
    """The factory's parameters as a config writes them: ``alpha: float = 0.1``; one
    without a default is ``name (required)``."""
    params, required = describe_parameters(entry.obj)
    return [*(f"{name} (required)" for name in required), *params]


def where(entry: registry.Entry) -> str:
    return "grpo-core" if registry.is_builtin(entry) else entry.distribution or "-"


def run_list(args) -> int:
    return list_factories(registry.advantages(), args,
                          "A config names one as learning.method, parameters in the name: zvp(alpha=0.05).")


def list_factories(found: registry.Registry, args, footer: str) -> int:
    """A registry of factories (learning methods, prompt samplers) as a table or JSON: each
    name with its parameters, where it comes from and what it does."""
    entries = [found.entries[name] for name in found.names()]
    if args.json:
        print_json([{"name": e.name, "parameters": parameters(e), "plugin": e.plugin,
                     "distribution": e.distribution, "version": e.version, "description": e.description}
                    for e in entries])
        return 0
    print(table([[e.name, ", ".join(parameters(e)) or "-", where(e), e.description]
                 for e in entries], ["name", "parameters", "distribution", "description"]))
    print(f"\n{footer}")
    return 0
