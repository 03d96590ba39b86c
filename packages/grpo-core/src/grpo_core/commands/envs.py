"""`grpo envs list|show NAME`: registered environments (tools, multi-turn rollouts)."""

from __future__ import annotations

import inspect

from grpo_core.commands import SUMMARIES, print_entries
from grpo_core.commands.rewards import describe_parameters
from grpo_core.plugin import registry
from grpo_core.rewards.environments import EnvironmentSpec, list_environments, resolve


def add_parser(sub) -> None:
    p = sub.add_parser("envs", help=SUMMARIES["envs"])
    es = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = es.add_parser("list", help="every registered environment")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=run_list)
    show = es.add_parser("show", help="an environment's parameters, tools, reward and the columns it reads")
    show.add_argument("name")
    show.set_defaults(func=run_show)


def run_list(args) -> int:
    return print_entries(list_environments(), args.json,
                         "No environments registered. Install one, e.g. pip install ./packages/grpo-rewards-code "
                         "from a grpo checkout (python, guess_number).")


def run_show(args) -> int:
    entry = registry.environments().get(args.name)
    obj = entry.obj
    params, _ = describe_parameters(obj.__init__ if inspect.isclass(obj) else obj)
    env = resolve(EnvironmentSpec(entry.name))  # with its defaults: what a config naming it gets
    print(f"{entry.name}  ({entry.source}{', version ' + entry.version if entry.version else ''})")
    print()
    print(inspect.getdoc(obj) or entry.description or "(no description)")
    print()
    print("Parameters:" + ("" if params else " none"))
    for line in params:
        print(f"  {line}")
    print("Tools:" + ("" if env.tools else " none"))
    for name in env.tools:
        func = getattr(env.cls, name)
        try:
            signature = inspect.signature(func, eval_str=True)
        except Exception:  # an annotation that does not resolve: show it as written
            signature = inspect.signature(func)
        shown = str(signature).replace("(self, ", "(").replace("(self)", "()")
        doc = (inspect.getdoc(func) or "").splitlines()
        print(f"  {name}{shown}" + (f": {doc[0]}" if doc else ""))
    reward = inspect.getdoc(env.cls.get_reward) if env.has_reward else None
    print("Reward: " + (f"get_reward(), logged as rewards/{entry.name}/mean" + (f": {reward.splitlines()[0]}"
                                                                               if reward else "")
                        if env.has_reward else "none of its own (score rollouts with rewards)"))
    print("Dataset columns reset() needs: " + (", ".join(env.columns) or "none"))
    return 0
