"""The settings reference, made from the schema (:mod:`grpo_core.config.schema`): every
key of every grpo section with its type, default and help text. ``docs/config.md`` is
this text (a test keeps it so) and ``grpo train --help-config`` prints it."""

from __future__ import annotations

import dataclasses
from typing import Any

from grpo_core.config.schema import OTHER_KEYS, SECTION_TYPES
from grpo_core.config.values import shown

HEAD = """# Settings

Every key grpo reads in a `grpo train` config, by section: its type, its default and
what it does. Generated from the schema (`grpo_core/config/schema.py`) by
`grpo train --help-config`; a test fails when a setting is missing here or has no help.

Top-level keys that are not listed here are `GRPOConfig` fields, passed to TRL as
they are (`learning_rate`, `max_steps`, `num_generations`, `beta`, ...; see TRL's
`GRPOConfig` documentation). On the command line, `--KEY VALUE` sets a `GRPOConfig`
field and `--SECTION.KEY VALUE` one of these (`--health.reward_time_limit 30`).
"""


def type_name(f: dataclasses.Field) -> str:
    text = str(f.type).replace("typing.", "")
    return "any" if text == "Any" else text


def default_of(f: dataclasses.Field) -> str:
    if f.default_factory is not dataclasses.MISSING:
        return shown(f.default_factory())
    return shown(f.default)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|")


def section_table(key: str, cls) -> str:
    rows = [f"## {key}", "", "| key | type | default | meaning |", "|---|---|---|---|"]
    for f in dataclasses.fields(cls):
        help_ = f.metadata.get("help", "")
        choices = f.metadata.get("choices")
        if choices:
            help_ += f" One of: {', '.join(shown(c) for c in choices)}."
        for bound, says in (("minimum", "At least"), ("maximum", "At most")):
            if f.metadata.get(bound) is not None:
                help_ += f" {says} {shown(f.metadata[bound])}."
        rows.append(f"| `{key}.{f.name}` | `{_cell(type_name(f))}` | `{_cell(default_of(f))}` | {_cell(help_)} |")
    return "\n".join(rows)


def reference() -> str:
    """The whole reference, as Markdown."""
    parts = [HEAD, "## Other keys", "", "| key | what it takes |", "|---|---|"]
    parts += [f"| `{k}` | {_cell(v)} |" for k, v in OTHER_KEYS.items()]
    parts.append("")
    parts += [section_table(key, cls) + "\n" for key, cls in SECTION_TYPES.items()]
    return "\n".join(parts).rstrip("\n") + "\n"


def undocumented() -> list[str]:
    """Section keys whose schema field has no help text."""
    return [f"{key}.{f.name}" for key, cls in SECTION_TYPES.items() for f in dataclasses.fields(cls)
            if not f.metadata.get("help", "").strip()]


__all__ = ["reference", "undocumented"]
