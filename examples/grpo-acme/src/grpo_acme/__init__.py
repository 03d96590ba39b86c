"""An example third-party plugin for grpo: the reward ``acme.brevity`` and the command
``grpo acme-lengths``."""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grpo_core import GrpoError, completion_text, hookimpl, text_reward

GRPO_PLUGIN_API = "1.0"  # the grpo plugin API this plugin is written for (docs/plugin-api.md)


@text_reward
def brevity(completions: list[str], max_chars: int = 200, **kwargs: Any) -> list[float]:
    """Reward short answers: 1 - min(len(completion) / max_chars, 1).

    1.0 for an empty completion, 0.5 at half of ``max_chars``, 0.0 at or beyond it.
    """
    if max_chars <= 0:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    return [1.0 - min(len(c) / max_chars, 1.0) for c in completions]


def lengths_setup(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("input", type=Path, help="JSONL, one {\"completion\": ...} per line (grpo score's input)")
    parser.add_argument("--max-chars", type=int, default=200, help="acme.brevity's max_chars to try")
    parser.set_defaults(func=lengths)


def lengths(args: argparse.Namespace) -> int:
    """Completion lengths and what acme.brevity(max_chars) pays them: a max_chars below
    most completions pays almost all of them 0, and teaches nothing."""
    if not args.input.is_file():
        raise GrpoError(f"{args.input}: no such file; give a JSONL file of completions.")
    if args.max_chars <= 0:
        raise GrpoError(f"--max-chars must be positive, got {args.max_chars}.")
    chars = []
    for number, line in enumerate(args.input.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            chars.append(len(completion_text(json.loads(line)["completion"])))
        except (ValueError, KeyError, TypeError):
            raise GrpoError(f"{args.input}:{number} is not a JSON object with a 'completion'.") from None
    if not chars:
        raise GrpoError(f"{args.input} holds no completions.")
    paid = brevity(["x" * n for n in chars], max_chars=args.max_chars)
    print(f"{len(chars)} completions, characters: median {statistics.median(chars):g}, max {max(chars)}")
    print(f"acme.brevity(max_chars={args.max_chars}): mean {statistics.mean(paid):.3f}, "
          f"{sum(p == 0.0 for p in paid)} of {len(chars)} score 0")
    return 0


@hookimpl
def register_rewards(register: Callable[..., None]) -> None:
    register("acme.brevity", brevity)


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("acme-lengths", lengths_setup, description="completion lengths against acme.brevity's max_chars")
