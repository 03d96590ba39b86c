"""One module per ``grpo`` subcommand: ``add_parser(subparsers)`` plus the function it runs."""

from __future__ import annotations

import ast
import json
import sys
from typing import Any


def parse_value(text: str) -> Any:
    """A command-line value as a Python literal when it is one (``3``, ``0.5``,
    ``True``, ``[1, 2]``), else the string itself. Never evaluated."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        low = text.lower()
        if low in ("true", "false"):
            return low == "true"
        if low in ("none", "null"):
            return None
        return text


def parse_key_values(extra: list[str], command: str) -> dict[str, Any]:
    """``--key value`` / ``--key=value`` / ``--flag`` pairs into a dict."""
    from ..errors import GrpoError

    out: dict[str, Any] = {}
    i = 0
    while i < len(extra):
        tok = extra[i]
        if not tok.startswith("--") or len(tok) == 2:
            raise GrpoError(f"{command}: unexpected argument {tok!r}; parameters are --key value.")
        key, eq, value = tok[2:].partition("=")
        if not eq:
            if i + 1 < len(extra) and not extra[i + 1].startswith("--"):
                value, i = extra[i + 1], i + 1
            else:
                value = "true"
        out[key.replace("-", "_")] = parse_value(value)
        i += 1
    return out


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def table(rows: list[list[str]], headers: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def print_entries(entries: list, as_json: bool, empty_message: str) -> int:
    """``grpo rewards list`` / ``grpo datasets list``: a table or JSON of registry entries."""
    if as_json:
        print_json([{"name": e.name, "plugin": e.plugin, "distribution": e.distribution,
                     "version": e.version, "description": e.description} for e in entries])
        return 0
    if entries:
        print(table([[e.name, e.distribution or "-", e.description] for e in entries],
                    ["name", "distribution", "description"]))
    if all(e.plugin == "grpo_core.builtins" for e in entries):  # only the core's own
        print(("\n" if entries else "") + empty_message)
    return 0


