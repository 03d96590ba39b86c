"""The command line and YAML as values: ``--key value`` flags, dotted section overrides,
GRPOConfig's field kinds (cached per TRL version, so checking a config imports no TRL)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

from grpo_core.base.errors import ConfigError
from grpo_core.base.flags import flag_value, flag_values, yaml_value
from grpo_core.base.paths import cache_dir
from grpo_core.base.problems import Problems
from grpo_core.config.schema import SECTIONS


def field_kinds(cls_path: str, *dists: str) -> dict[str, str]:
    """The init fields of the dataclass ``module:Class`` and the kind of value each takes
    (bool, int, float, list, text), kept per installed version of ``dists`` under the
    cache dir: importing TRL or peft takes seconds on 2 cores and a config check needs
    only these (``grpo check`` then imports neither)."""
    import importlib
    import json
    from importlib.metadata import version

    tag = "-".join(f"{d}{version(d)}" for d in dists)
    path = cache_dir("config") / f"{cls_path.replace(':', '.')}-{tag}.kinds.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    module, name = cls_path.split(":")
    kinds = {f.name: _kind(f.type) for f in dataclasses.fields(getattr(importlib.import_module(module), name))
             if f.init}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(kinds, sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass  # an unwritable cache only costs the import next time
    return kinds


def _kind(annotation: Any) -> str:
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


def field_names(cls_path: str, *dists: str) -> list[str]:
    return sorted(field_kinds(cls_path, *dists))


def grpo_fields() -> list[str]:
    """GRPOConfig's field names."""
    return field_names("trl:GRPOConfig", "trl", "transformers")


def cli_values(flags: list[tuple[str, list[str]]], kinds: dict[str, str], problems: Problems | None = None
               ) -> dict[str, Any]:
    """Command-line values typed as GRPOConfig's fields take them (what HfArgumentParser
    does: ``--learning_rate 1e-5`` is a float, ``--bf16`` alone is true)."""
    own = problems is None
    problems = Problems() if own else problems
    out: dict[str, Any] = {}
    for key, values in flags:
        kind = kinds.get(key, "text")
        try:
            out[key] = _typed(kind, values)
        except ValueError:
            problems.add(f"command line: --{key} {' '.join(values)!r} is not {KIND_NOUNS[kind]}.")
    if own:
        problems.raise_if_any("the command line")
    return out


KIND_NOUNS = {"bool": "true or false", "int": "a whole number", "float": "a number", "list": "a list",
            "text": "a value"}


def _typed(kind: str, values: list[str]) -> Any:
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
