"""`grpo samplers list`: the prompt samplers a config can name (``sampling.prompts``)."""

from __future__ import annotations

from grpo_core.commands import SUMMARIES
from grpo_core.commands.methods import list_factories
from grpo_core.plugin import registry


def add_parser(sub) -> None:
    p = sub.add_parser("samplers", help=SUMMARIES["samplers"])
    ss = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    ls = ss.add_parser("list", help="every registered prompt sampler with its parameters")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=run_list)


def run_list(args) -> int:
    return list_factories(registry.samplers(), args, "A config names one as sampling.prompts, parameters in the "
                                                     "name: frontier(target=0.3). docs/prompts.md says what each does.")
