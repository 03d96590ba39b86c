"""A maintainer finds a room's tests from the room's name: tests/README.md names every room of
grpo_core (the architecture page's table), every package and every folder of tests/, and each
file it names exists; no two test files share a name (15 names were repeated across folders,
so a failing 'test_plugin.py' named one of four files)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
PAGE = (TESTS / "README.md").read_text()


def test_no_two_test_files_share_a_name():
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert sorted(n for n, k in names.items() if k > 1) == []


def test_the_page_names_every_room_package_and_folder():
    rooms = re.findall(r"^\| \d+ \| `(\w+/)` \|", (ROOT / "docs" / "architecture.md").read_text(), re.M)
    packages = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").is_file())
    folders = sorted(f"tests/{p.name}/" for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py")))
    assert len(rooms) >= 13 and len(packages) >= 7 and len(folders) >= 14
    named = set(re.findall(r"^\| `([^`]+)` \|", PAGE, re.M)) | set(re.findall(r"`(tests/\w+/)`", PAGE))
    assert [r for r in rooms if r not in named] == []
    assert [p for p in packages if p not in named] == []
    assert [f for f in folders if f not in named] == []


def test_every_file_the_page_names_exists():
    files = re.findall(r"`(tests/[\w/]+\.py)`", PAGE)
    assert len(files) > 30
    assert [f for f in files if not (ROOT / f).is_file()] == []
