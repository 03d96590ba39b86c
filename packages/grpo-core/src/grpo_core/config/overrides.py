"""The command line and YAML as values: ``--key value`` flags, dotted section overrides,
GRPOConfig's field kinds (cached per TRL version, so checking a config imports no TRL)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from grpo_core.base.errors import ConfigError
from grpo_core.base.flags import flag_value, flag_values, yaml_value
from grpo_core.base.paths import cache_dir
from grpo_core.base.problems import Problems
from grpo_core.config.fields import HELP_BOOLS, HELP_CHOICES, describe_fields
from grpo_core.config.schema import SECTIONS
from grpo_core.config.values import ValueType


def field_types(cls_path: str, *dists: str) -> dict[str, ValueType]:
    """The init fields of the dataclass ``module:Class`` and what each takes (its
    :class:`~grpo_core.config.values.ValueType`: types, choices, how a flag is typed), kept
    per installed version of ``dists`` under the cache dir: importing TRL or peft takes
    seconds on 2 cores and a config check needs only these (``grpo check`` then imports
    neither)."""
    import importlib
    import json
    from importlib.metadata import version

    if (cls_path, dists) in _READ:  # reading the versions is most of a config check's time
        return _READ[cls_path, dists]
    tag = "-".join(f"{d}{version(d)}" for d in dists) + f"-{TYPES_TAG}"
    path = cache_dir("config") / f"{cls_path.replace(':', '.')}-{tag}.types.json"
    try:
        described = json.loads(path.read_text())
    except (OSError, ValueError):
        module, name = cls_path.split(":")
        described = describe_fields(getattr(importlib.import_module(module), name))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(json.dumps(described, sort_keys=True))
            tmp.replace(path)
        except OSError:
            pass  # an unwritable cache only costs the import next time
    _READ[cls_path, dists] = {k: ValueType.from_dict(v) for k, v in described.items()}
    return _READ[cls_path, dists]


_READ: dict[tuple, dict[str, ValueType]] = {}  # per process (the versions installed do not change under it)


TYPES_FORMAT = 1  # raised when what field_types keeps, or how describe_fields reads it, changes
# ... and the tables it reads with: a cache built before they changed is not read
TYPES_TAG = hashlib.sha1(repr((TYPES_FORMAT, HELP_CHOICES, HELP_BOOLS)).encode()).hexdigest()[:8]


def field_kinds(cls_path: str, *dists: str) -> dict[str, str]:
    """Each field's kind of command-line value (bool, int, float, list, text)."""
    return {name: t.kind for name, t in field_types(cls_path, *dists).items()}


def field_names(cls_path: str, *dists: str) -> list[str]:
    return sorted(field_kinds(cls_path, *dists))


def grpo_fields() -> list[str]:
    """GRPOConfig's field names."""
    return field_names("trl:GRPOConfig", "trl", "transformers")


def cli_values(flags: list[tuple[str, list[str]]], types: dict[str, ValueType], problems: Problems | None = None
               ) -> dict[str, Any]:
    """Command-line values typed as GRPOConfig's fields take them (what HfArgumentParser
    does: ``--learning_rate 1e-5`` is a float, ``--bf16`` alone is true)."""
    own = problems is None
    problems = Problems() if problems is None else problems
    out: dict[str, Any] = {}
    for key, values in flags:
        vtype = types.get(key)
        kind = vtype.kind if vtype else "text"
        try:
            out[key] = _typed(kind, values, vtype.accepts if vtype else frozenset())
        except ValueError:
            problems.add(f"command line: --{key} {' '.join(values)!r} is not {KIND_NOUNS[kind]}.")
    if own:
        problems.raise_if_any("the command line")
    return out


KIND_NOUNS = {"bool": "true or false", "int": "a whole number", "float": "a number", "list": "a list",
            "text": "a value"}


def _typed(kind: str, values: list[str], accepts: frozenset = frozenset()) -> Any:
    """``accepts``: what a text field also takes (scale_rewards false, pad_to_multiple_of 64)."""
    if kind == "bool":
        if not values:
            return True
        word = values[0].strip().lower()
        if len(values) != 1 or word not in ("true", "false", "yes", "no", "1", "0"):
            raise ValueError
        return word in ("true", "yes", "1")
    if kind in ("int", "float"):
        if len(values) != 1:
            raise ValueError
        if values[0].strip().lower() == "none":
            return None
        return int(values[0]) if kind == "int" else float(values[0])
    if kind == "list":
        items = [yaml_value(v) for v in values]
        return [i for item in items for i in (item if isinstance(item, list) else [item])]
    if len(values) == 1:
        word = values[0].strip()
        if "bool" in accepts and word.lower() in ("true", "false"):
            return word.lower() == "true"
        if "int" in accepts and word.lstrip("-").isdigit():
            return int(word)
        return values[0]  # as HfArgumentParser: text stays text ("none" in report_to means no integration)
    return list(values) if values else True


def read_yaml(path: str | os.PathLike) -> dict:
    import yaml

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {path} does not exist.")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path} is not valid YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path} must contain a YAML mapping of options, got {type(data).__name__}.")
    return data


def split_overrides(tokens: list[str]) -> tuple[dict[str, Any], list[tuple[str, list[str]]]]:
    """``(our overrides {dotted key: value}, the other flags as (name, raw values))``."""
    ours: dict[str, Any] = {}
    others: list[tuple[str, list[str]]] = []
    for key, values in flag_values(tokens):
        if key.split(".", 1)[0] in SECTIONS or key.split(".", 1)[0] == "env":
            if key in ("rewards", "tools"):  # specs stay text (a list given as one YAML value aside)
                ours[key] = yaml_value(values[0]) if len(values) == 1 and values[0].lstrip().startswith("[") else values
            else:
                ours[key] = flag_value(values)
        else:
            others.append((key, values))
    return ours, others


def set_dotted(data: dict, dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    node = data
    for part in parts[:-1]:
        nxt = node.get(part)
        if nxt is None or nxt is True or nxt is False:
            nxt = {}
            node[part] = nxt
        if not isinstance(nxt, dict):
            raise ConfigError(f"cannot set --{dotted}: '{part}' is {nxt!r}, not a section.")
        node = nxt
    node[parts[-1]] = value
