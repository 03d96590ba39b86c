"""Command-line tokens as values: ``--key value ...`` flags read as YAML reads them. The one
parser of config overrides and of the parameters of ``grpo rewards check`` and
``grpo datasets show``."""

from __future__ import annotations

from typing import Any

from grpo_core.base.errors import ConfigError


def yaml_value(text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def flag_values(tokens: list[str], command: str = "overrides") -> list[tuple[str, list[str]]]:
    """``--key value ...`` / ``--key=value`` / ``--flag`` tokens as ``(key, raw values)``,
    keys with ``-`` read as ``_``: the one command-line parser (config overrides,
    ``grpo rewards check`` and ``grpo datasets show`` parameters)."""
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("--") or len(tok) == 2:
            raise ConfigError(f"{command}: unexpected argument {tok!r}; write --key value.")
        key, eq, value = tok[2:].partition("=")
        values = [value] if eq else []
        j = i + 1
        if not eq:
            while j < len(tokens) and not (tokens[j].startswith("--") and len(tokens[j]) > 2):
                values.append(tokens[j])
                j += 1
        out.append((key.replace("-", "_"), values))
        i = j
    return out


def flag_value(values: list[str]) -> Any:
    """YAML's reading of a flag's values: none is true, one is a value, more a list."""
    if not values:
        return True
    return yaml_value(values[0]) if len(values) == 1 else [yaml_value(v) for v in values]


__all__ = ["flag_values", "flag_value", "yaml_value"]
