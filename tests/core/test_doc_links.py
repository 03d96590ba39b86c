"""Every relative link in README.md and docs/ leads somewhere: the file exists, and a
``#section`` names a heading of the page it points to (as GitHub makes heading anchors).
docs/architecture.md and a test once cited a DESIGN.md that was not in the repository;
moving a section to another page breaks the anchors that pointed at it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")


def prose(text: str) -> str:
    """The page without its code blocks and inline code (a link written there is an example)."""
    return CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip()).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    out: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", FENCE.sub("", path.read_text()), re.M):
        base = slug(heading)
        name, n = base, 0
        while name in out:  # a repeated heading gets -1, -2, ...
            n += 1
            name = f"{base}-{n}"
        out.add(name)
    return out


def links() -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        for target in LINK.findall(prose(page.read_text())):
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                out.append((page.relative_to(ROOT).as_posix(), target))
    return out


LINKS = links()


def test_the_pages_have_relative_links_to_check():
    assert len(LINKS) > 50 and ("README.md", "docs/README.md") in LINKS


@pytest.mark.parametrize("page, target", LINKS, ids=[f"{p}->{t}" for p, t in LINKS])
def test_a_relative_link_leads_to_a_file_and_its_section(page, target):
    where, _, section = target.partition("#")
    path = (ROOT / page).parent / where if where else ROOT / page
    assert path.exists(), f"{page} links to {target}: {path.relative_to(ROOT.parent)} does not exist"
    if section and path.suffix == ".md":
        assert section in anchors(path), (
            f"{page} links to {target}: {where or page} has no heading whose anchor is #{section}")


def test_slugs_are_githubs():
    assert slug("Did a method teach more per token? `bench/learning.py`") == \
        "did-a-method-teach-more-per-token-benchlearningpy"
    assert slug("### `register_advantages(register)`".lstrip("# ")) == "register_advantagesregister"
    assert slug("The quickstart's config: how it was chosen") == "the-quickstarts-config-how-it-was-chosen"


def test_the_guide_to_training_is_read_start_to_finish():
    """docs/training.md is a guide; experiment records go to docs/benchmarks.md."""
    lines = (ROOT / "docs" / "training.md").read_text().count("\n")
    assert lines <= 400, f"docs/training.md has {lines} lines: move records to docs/benchmarks.md"
