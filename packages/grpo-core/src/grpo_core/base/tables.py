"""Plain-text tables for reports (the CLI, preflight, check)."""

from __future__ import annotations


def number(v, digits: int = 4, *, signed: bool = False, percent: bool = False, missing: str = "-") -> str:
    """One way to show a number in a report: ``digits`` significant digits, ``missing``
    for None, NaN or an empty cell, text as it is."""
    if v is None or v == "" or (isinstance(v, float) and v != v):
        return missing
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return str(v)
    if percent:
        return f"{100 * v:.1f}%"
    return f"{v:+.{digits}g}" if signed else f"{v:.{digits}g}"


def table(rows: list[list[str]], headers: list[str]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows)]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def clip(text, n: int = 160) -> str:
    """Model output (or any text) for a console line: whitespace folded, at most ``n``
    characters (print it with ``!r`` so that control characters show escaped)."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n - 3] + "..."
