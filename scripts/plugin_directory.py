"""Writes the table of docs/plugins.md from docs/plugins.yaml, the one list of plugins.

    python scripts/plugin_directory.py           # rewrite the table
    python scripts/plugin_directory.py --check   # exit 1 when the page is not the list's

tests/core/test_plugin_directory.py checks the list itself (every plugin of this
repository in it, each installing and passing the reward contract suite).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
LIST = ROOT / "docs" / "plugins.yaml"
PAGE = ROOT / "docs" / "plugins.md"
START = "<!-- directory: written from docs/plugins.yaml by scripts/plugin_directory.py -->"
END = "<!-- directory: end -->"


def load(path: Path = LIST) -> list[dict]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))["plugins"]


def is_local(entry: dict) -> bool:
    """A plugin of this repository (its source a folder here), not an https address."""
    return "://" not in str(entry.get("source", ""))


def table(entries: list[dict]) -> str:
    """The directory as a Markdown table: plugin (linked to its source), what it adds,
    install line, hooks."""
    rows = ["| plugin | what it adds | install | hooks |", "|---|---|---|---|"]
    for e in entries:
        link = f"../{e['source']}" if is_local(e) else e["source"]
        hooks = ", ".join(f"`{h}`" for h in e["hooks"])
        rows.append(f"| [{e['name']}]({link}) | {e['adds']} | `{e['install']}` | {hooks} |")
    return "\n".join(rows)


def page(text: str, entries: list[dict]) -> str:
    """``text`` (the page) with its table between the markers replaced."""
    if START not in text or END not in text:
        raise SystemExit(f"{PAGE} has lost its markers ({START} ... {END}); put them back around the table.")
    head, rest = text.split(START, 1)
    return f"{head}{START}\n{table(entries)}\n{END}{rest.split(END, 1)[1]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/plugins.md is not the list's")
    args = parser.parse_args(argv)
    text = PAGE.read_text(encoding="utf-8")
    wanted = page(text, load())
    if args.check:
        if wanted != text:
            print(f"{PAGE.relative_to(ROOT)} is not written from {LIST.relative_to(ROOT)}: run "
                  f"python scripts/plugin_directory.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
