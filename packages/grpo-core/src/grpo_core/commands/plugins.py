"""`grpo plugins`: installed plugins, their distributions, versions, the plugin API each
declares (``api``; null: none), hooks and the commands they add to ``grpo`` (JSON). A plugin
refused for its API is listed with ``refused`` (why) and no hooks; exit 1 when any plugin
had a problem."""

from __future__ import annotations

from grpo_core.commands import SUMMARIES, plugin_commands, print_json
from grpo_core.plugin import plugins


def add_parser(sub) -> None:
    p = sub.add_parser("plugins", help=SUMMARIES["plugins"])
    p.add_argument("--all", action="store_true", help="include the core's built-in plugins")
    p.set_defaults(func=run)


def run(args) -> int:
    loaded = plugins.loaded_plugins()
    if not args.all:
        loaded = [p for p in loaded if p["name"] not in plugins.DEFAULT_PLUGINS]
    if any("register_commands" in p["hooks"] for p in loaded):
        usable = plugin_commands()  # grpo's own names left out, as `grpo --help` does
        for p in loaded:
            if "register_commands" in p["hooks"]:
                p["commands"] = sorted(n for n, e in usable.items() if e.plugin == p["name"])
    print_json(loaded)
    return 1 if plugins.problems else 0  # each problem was already printed as a warning
