"""Before a release is built: the tag names every published package's version, and
CHANGELOG.md has that version's section (.github/workflows/release.yml runs it).

    python scripts/release_check.py v0.1.0

Exit 0 when they agree; 1 naming each package whose version differs or the missing
section; 2 for a tag that is not vMAJOR.MINOR.PATCH.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("grpo-core", "grpo-rewards-math", "grpo-rewards-format", "grpo-datasets", "grpo-rewards-code",
            "grpo-reasoning-gym", "grpo-rewards-judge")


def version_of(package: str) -> str:
    """``[project] version`` of the package's pyproject.toml (read without a TOML library:
    Python 3.10 has none)."""
    text = (ROOT / "packages" / package / "pyproject.toml").read_text(encoding="utf-8")
    project = text.split("\n[project]\n", 1)[1].split("\n[", 1)[0]
    match = re.search(r'^version = "([^"]+)"$', project, re.M)
    return match[1] if match else "(none)"


def problems(tag: str) -> list[str]:
    version = tag[1:]
    out = [f"{p} is version {version_of(p)} in packages/{p}/pyproject.toml, not {version}"
           for p in PACKAGES if version_of(p) != version]
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    if not re.search(rf"^## {re.escape(version)}\b", changelog, re.M):
        out.append(f"CHANGELOG.md has no '## {version}' section: say what the release changes, per package")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not re.fullmatch(r"v\d+\.\d+\.\d+", argv[0]):
        print(f"usage: python scripts/release_check.py vMAJOR.MINOR.PATCH (got {' '.join(argv) or 'nothing'})")
        return 2
    found = problems(argv[0])
    for line in found:
        print(f"release_check: {line}")
    if not found:
        print(f"release_check: {len(PACKAGES)} packages at {argv[0][1:]}, CHANGELOG.md has its section")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
