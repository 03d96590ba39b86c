"""GRPOConfig's and peft LoraConfig's fields as :class:`~grpo_core.config.values.ValueType`:
each init field's types and choices read from the dataclass's own annotation, metadata and
help text (``HELP_CHOICES``), and how a command-line value for it is typed (``kind_of``).
:func:`grpo_core.config.overrides.field_types` keeps what ``describe_fields`` returns,
per installed version, so a config check imports no TRL."""

from __future__ import annotations

import dataclasses
import re
import typing
from typing import Any

from grpo_core.config.values import ValueType, from_annotation


def kind_of(annotation: Any) -> str:
    """How a command-line value for a field of this annotation is typed: bool, int, float,
    list or text (what HfArgumentParser makes of ``--key value``)."""
    text = str(annotation).replace("<class '", "").replace("'>", "")
    parts = {p.strip() for p in text.replace("typing.", "").replace("Optional[", "").rstrip("]").split("|")}
    parts.discard("None")
    if parts == {"bool"}:
        return "bool"
    if parts == {"int"}:
        return "int"
    if parts == {"float"}:
        return "float"
    if any(p.startswith("list[") for p in parts) and not parts & {"str", "dict"}:
        return "list"
    return "text"


# GRPOConfig fields of type str whose help lists the values they take (TRL checks none of them
# before training: a loss_type it does not know fails mid-run, or silently trains another loss)
HELP_CHOICES = ("loss_type", "scale_rewards", "importance_sampling_level", "multi_objective_aggregation",
                "vllm_mode", "vllm_model_impl", "vllm_importance_sampling_mode", "include_num_input_tokens_seen",
                "pad_to_multiple_of")
# ... and those that also take true/false, as TRL reads them (scale_rewards: true is group, false none)
HELP_BOOLS = ("scale_rewards",)


def choices_in_help(text: str, default: Any) -> list[str]:
    """The values a help text lists: the words it quotes ('dapo'; not k='v'), the words
    after "one of" in backticks, and the default."""
    found = [default] if isinstance(default, str) else []
    found += re.findall(r"(?<![=\w])'([A-Za-z_]\w*)'", text)
    after = re.search(r"one of (.*?)(?:\.\s|\.$|:|$)", text)
    if after:
        found += [w for w in re.findall(r"`([A-Za-z_]\w*)`", after.group(1)) if w not in ("True", "False")]
    return list(dict.fromkeys(found))


def describe_fields(cls: type) -> dict[str, dict]:
    """Each init field of the dataclass ``cls``: its ValueType as a dict (what the cache keeps)."""
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        vtype = from_annotation(hints.get(f.name, f.type), f.metadata.get("choices"))
        if f.metadata.get("const") is True:  # --fsdp alone (fsdp: true) turns it on
            vtype = dataclasses.replace(vtype, accepts=vtype.accepts | {"bool"})
        if f.name in HELP_CHOICES:
            listed = choices_in_help(f.metadata.get("help", ""), f.default)
            accepts = vtype.accepts | ({"bool"} if f.name in HELP_BOOLS else set())
            vtype = ValueType(frozenset(accepts), tuple(listed) + ((True, False) if "bool" in accepts else ()),
                              vtype.items, vtype.obj)
        if f.name == "report_to":
            vtype = ValueType(vtype.accepts, _integrations(), _integrations(), None)
        out[f.name] = dataclasses.replace(vtype, kind=kind_of(f.type)).as_dict()
    return out


def _integrations() -> tuple[str, ...] | None:
    """report_to's values: transformers' integrations, all and none."""
    try:
        from transformers.integrations.integration_utils import INTEGRATION_TO_CALLBACK
    except ImportError:  # another transformers: report_to is then not checked by name
        return None
    return ("none", "all", *INTEGRATION_TO_CALLBACK)


__all__ = ["describe_fields", "choices_in_help", "kind_of", "HELP_CHOICES", "HELP_BOOLS"]
