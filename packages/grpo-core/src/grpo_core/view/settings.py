"""A run's settings as ``grpo view`` shows them: the ``config.yaml`` grpo train wrote in the run
folder (the resolved configuration), read with a size bound, as text for its page and as
dotted keys (``lora.r``, ``dataset.params.level``) for what differs between runs compared."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from grpo_core.runfiles import RESOLVED

MAX_BYTES = 512 * 1024  # grpo train's config.yaml is a few KiB
MAX_KEYS = 2000  # dotted keys kept of one config
VALUE_CHARS = 300  # a value shown at most this long
DEPTH = 12  # nesting followed at most


@dataclass
class Config:
    """``config.yaml`` as read: its text, its values (None: not a YAML mapping), the problem."""

    text: str | None = None
    data: dict | None = None
    problem: str | None = None
    keys: dict[str, str] = field(default_factory=dict)  # dotted key -> the value as shown


def read_config(path: Path) -> Config:
    """The config.yaml at ``path`` (the run folder's ``config.yaml``); every failure a sentence."""
    import yaml

    try:
        size = path.stat().st_size
        if path.is_dir():
            return Config(problem=f"{RESOLVED} is a directory, not the file grpo train writes: no settings shown.")
        if size > MAX_BYTES:
            return Config(problem=f"{RESOLVED} is {size:,} bytes (grpo train writes a few KiB): not shown.")
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return Config(problem=f"there is no {RESOLVED} in the run folder (grpo train writes it before the first "
                              f"step): no settings to show.")
    except OSError as exc:
        return Config(problem=f"{RESOLVED} cannot be read ({type(exc).__name__}: {exc.strerror or exc}).")
    try:
        data = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return Config(text=text, problem=f"{RESOLVED} is not valid YAML ({first}): shown as written, not compared.")
    if not isinstance(data, dict):
        return Config(text=text, problem=f"{RESOLVED} is not a mapping of settings: shown as written, not compared.")
    return Config(text=text, data=data, keys=flatten(data))


def flatten(data: dict) -> dict[str, str]:
    """``{"lora": {"r": 16}}`` -> ``{"lora.r": "16"}``; a list is one value; at most MAX_KEYS
    keys, DEPTH levels, each value clipped to VALUE_CHARS characters (a YAML file can alias a
    structure into itself or into a billion copies: nothing here walks more than it shows)."""
    out: dict[str, str] = {}
    stack = [("", data, 0)]
    walked = 0
    while stack and len(out) < MAX_KEYS and walked < 20 * MAX_KEYS:
        at, value, depth = stack.pop()
        walked += 1
        if isinstance(value, dict) and value and depth < DEPTH:
            stack.extend((f"{at}.{k}" if at else str(k), v, depth + 1) for k, v in reversed(list(value.items())[:MAX_KEYS]))
            continue
        out[at] = shown(value)
    return out


def shown(value, limit: int = VALUE_CHARS) -> str:
    """``value`` as text (strings as written, the rest as JSON would write it), at most
    ``limit`` characters, built only that far."""
    parts: list[str] = []
    size = 0

    def put(text: str) -> bool:
        nonlocal size
        parts.append(text)
        size += len(text)
        return size <= limit

    def walk(v, depth: int) -> bool:
        if isinstance(v, (list, tuple)):
            if not put("["):
                return False
            for i, item in enumerate(v):
                if (i and not put(", ")) or not walk(item, depth + 1):
                    return False
            return put("]")
        if isinstance(v, dict):
            if not put("{"):
                return False
            for i, (k, item) in enumerate(v.items()):
                if (i and not put(", ")) or not put(f"{k}: ") or not walk(item, depth + 1):
                    return False
            return put("}")
        if depth > DEPTH:
            return put("...")
        return put(v if isinstance(v, str) and depth == 0 else json.dumps(v, default=str, ensure_ascii=False)[:limit])

    whole = walk(value, 0)
    text = "".join(parts)
    return text if whole else text[:limit] + "..."


def stage_names(config: Config) -> list[str] | None:
    """The run's stages as grpo train names them (``main`` for a run without stages), or None
    when the config cannot say."""
    if config.data is None:
        return None
    stages = config.data.get("stages")
    if not stages:
        return ["main"]
    if not isinstance(stages, list):
        return None
    return [str(st.get("name", f"stage{i + 1}")) if isinstance(st, dict) else f"stage{i + 1}"
            for i, st in enumerate(stages)]


def differences(configs: list[Config]) -> tuple[list[tuple[str, list[str]]], int]:
    """(each setting whose value is not the same in every config: its key and the values in
    order, ``(not set)`` where a config lacks it; how many settings are the same in all)."""
    keys: list[str] = []
    seen: set[str] = set()
    for c in configs:
        for k in c.keys:
            if k not in seen:
                seen.add(k)
                keys.append(k)
    rows, same = [], 0
    for k in sorted(keys):
        values = [c.keys.get(k, "(not set)") for c in configs]
        if len(set(values)) > 1:
            rows.append((k, values))
        else:
            same += 1
    return rows, same


__all__ = ["Config", "read_config", "flatten", "stage_names", "differences", "MAX_BYTES"]
