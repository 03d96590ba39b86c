"""One module per ``grpo`` subcommand: ``add_parser(subparsers)`` plus the function it runs."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from grpo_core.base.flags import flag_value, flag_values
from grpo_core.base.tables import clip, number, table  # noqa: F401 - the commands' tables, numbers, text
from grpo_core.config.values import Range
from grpo_core.plugin import registry
from grpo_core.plugin.plugins import PluginProblem, report_once  # (commands.plugins is a command)

# each command's one-line help: `grpo --help` lists them without importing the commands
SUMMARIES = {
    "plugins": "installed plugins as JSON: distribution, version, plugin API, hooks (refused ones with why)",
    "plugin": "start a new plugin package",
    "rewards": "list, show and check registered rewards",
    "datasets": "list and show dataset adapters",
    "prompts": "list and show registered system prompts",
    "envs": "list and show registered environments (tools and multi-turn rollouts)",
    "methods": "list registered learning methods (learning.method) with their parameters",
    "samplers": "list registered prompt samplers (sampling.prompts) with their parameters",
    "score": "score completions from a JSONL, CSV or Parquet file with composed rewards (no model needed)",
    "serve": "serve rewards over HTTP (grpo's /score, OpenRLHF's /get_reward) for other trainers and processes",
    "rollouts": "read a run's rollout log: best and worst completions, hacking filters",
    "view": "a run in the browser: curves, the rollout log as groups with filters, two runs or steps compared",
    "check": "test the rewards without a model: full marks for the gold answer, nothing for hacks",
    "preflight": "sample from the base model, score, and report whether the rewards give a learning signal",
    "train": "train with GRPO from a YAML config (every GRPOConfig field settable)",
    "eval": "held-out evaluation: base model vs trained adapter/checkpoint, scored by the config's rewards",
    "merge": "merge a LoRA adapter into its base model and save model + tokenizer",
    "generate": "generate with a model, checkpoint or LoRA adapter",
    "models": "built-in model aliases and the converted-model cache",
    "doctor": "versions, device, grpo's known-issue checks and the tested TRL range, for an issue report",
}


def plugin_commands() -> dict[str, registry.Entry]:
    """The commands plugins add (``register_commands``), by name; one that takes a name of
    grpo's own is reported once and left out."""
    found = registry.commands()
    out = {}
    for name in found.names():
        entry = found.entries[name]
        if name in SUMMARIES:
            report_once(PluginProblem(entry.plugin, entry.distribution,
                                      registry.builtin_clash("register_commands", "command", name, entry.plugin)))
            continue
        out[name] = entry
    return out


def parse_key_values(extra: list[str], command: str) -> dict[str, Any]:
    """``--key value`` / ``--key=value`` / ``--flag`` parameters, read as config
    overrides are (YAML values)."""

    return {key: flag_value(values) for key, values in flag_values(extra, command)}


def number_arg(rng: Range, whole: bool = True):
    """An argparse ``type`` for a number in ``rng``: a value outside it (``-n 0``,
    ``--max-new-tokens -5``) is refused by argparse, naming the option and the value,
    before the command imports anything heavy."""
    noun = "a whole number" if whole else "a number"

    def parse(text: str):
        try:
            value = int(text) if whole else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {noun}") from None
        if not math.isfinite(value) or not rng.holds(value):  # NaN passes every comparison a range makes
            note = f" ({rng.note})" if rng.note else ""
            raise argparse.ArgumentTypeError(f"{text} is not {rng.text(noun)}{note}")
        return value

    return parse


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def write_json(path: str, data: Any) -> None:
    """A ``--json FILE`` report: ``-`` prints it, else it is written (folders made)."""
    if path == "-":
        print_json(data)
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")


def print_entries(entries: list, as_json: bool, empty_message: str) -> int:
    """``grpo rewards list`` / ``grpo datasets list``: a table or JSON of registry entries."""
    if as_json:
        print_json([{"name": e.name, "plugin": e.plugin, "distribution": e.distribution,
                     "version": e.version, "description": e.description} for e in entries])
        return 0
    if entries:
        print(table([[e.name, e.distribution or "-", e.description] for e in entries],
                    ["name", "distribution", "description"]))
    if all(e.plugin == "grpo_core.data.builtins" for e in entries):  # only the core's own
        print(("\n" if entries else "") + empty_message)
    return 0


