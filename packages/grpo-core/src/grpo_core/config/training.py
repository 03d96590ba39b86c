"""GRPOConfig's own values, checked with the config's other problems: unknown keys,
values of the wrong type or out of range (:mod:`grpo_core.config.values`), vLLM and
logging integrations."""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Any

from grpo_core.base.problems import Problems
from grpo_core.config.grpo_args import check_integrations, check_vllm
from grpo_core.config.removed import REMOVED, removed_error, unknown_key
from grpo_core.config.values import RANGES, ValueType, value_problem


def check_training(values: dict, where: str, known: Collection[str], problems: Problems) -> None:
    for key in values:
        if key not in known:
            problems.add(unknown_key(key, where, sorted(known)))


def check_top_level(training: dict, cli_names: set[str], known: set[str], problems: Problems) -> None:
    check_training(training, "", known, problems)
    for name in sorted(cli_names):
        if name in REMOVED:
            problems.add(removed_error(name, "command line: "))
        elif name not in known:
            problems.add(unknown_key(name, "command line: ", sorted(known)))
    if "reward_weights" in training or "reward_weights" in cli_names:
        problems.add(
            "reward_weights is set from the rewards section; write the weight after the reward "
            "name ('math.correctness:2.0' or {name: ..., weight: 2.0}) instead."
        )


def _coerced(kind: str, value: Any) -> Any:
    """A YAML value as TRL's parser reads it into a field of ``kind`` (PyYAML leaves 1e-4 a string)."""
    if isinstance(value, str) and kind in ("int", "float"):
        try:
            return int(value) if kind == "int" else float(value)
        except ValueError:
            return value
    return value


def check_training_values(sources: list[tuple[str, dict]], types: dict[str, ValueType], problems: Problems) -> None:
    """GRPOConfig values against their field's type and choices (read from GRPOConfig) and
    the ranges TRL checks only late (``values.RANGES``), then vLLM and logging
    integrations: found with the config's other problems."""
    from types import SimpleNamespace

    merged: dict[str, Any] = {}
    for where, values in sources:
        for name, value in values.items():
            if name not in types:
                continue  # an unknown key: check_top_level names it
            value = _coerced(types[name].kind, value)
            problem = value_problem(name, value, types[name], RANGES.get(name))
            if problem:
                problems.add(f"{where}{problem}")
            elif not where.startswith("stage"):
                merged[name] = value
    report_to = merged.get("report_to")
    if isinstance(report_to, str):
        merged["report_to"] = [report_to]
    problems.attempt(check_vllm, SimpleNamespace(**merged))
    problems.attempt(check_integrations, SimpleNamespace(**merged))
    if merged.get("push_to_hub") is True and os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
        problems.add("push_to_hub: true needs the Hugging Face Hub, but HF_HUB_OFFLINE is set: unset it (and log in), "
                     "or set push_to_hub: false.")
