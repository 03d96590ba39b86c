"""The plugin author's guide documents every hook with its exact signature, and the
example plugin in examples/ is exactly the code the guide shows."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from grpo_core import hookspecs

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "writing-plugins.md").read_text()

HOOKS = [(name, fn) for name, fn in vars(hookspecs).items()
         if inspect.isfunction(fn) and hasattr(fn, "grpo_spec")]


def test_there_are_hooks_to_document():
    assert {name for name, _ in HOOKS} >= {"register_rewards", "register_datasets"}


@pytest.mark.parametrize("name, fn", HOOKS, ids=[n for n, _ in HOOKS])
def test_every_hook_is_documented_with_its_exact_signature(name, fn):
    params = ", ".join(inspect.signature(fn).parameters)
    assert f"### `{name}({params})`" in GUIDE


def test_guide_code_is_the_example_plugins_code():
    blocks = re.findall(r"`(examples/[^`]+)`:\n\n```\w*\n(.*?)\n```", GUIDE, re.S)
    assert {path for path, _ in blocks} == {
        "examples/grpo-acme/pyproject.toml",
        "examples/grpo-acme/src/grpo_acme/__init__.py",
        "examples/grpo-acme/tests/test_brevity.py",
    }
    for path, code in blocks:
        assert (ROOT / path).read_text().rstrip() == code, f"{path} differs from the guide"


@pytest.mark.parametrize("name, fn", HOOKS, ids=[n for n, _ in HOOKS])
def test_every_register_keyword_is_documented_in_the_hook_spec_and_the_guide(name, fn):
    """The hook spec is the contract: each keyword its ``register`` takes is written there."""
    from grpo_core.plugin.registry import KEYWORDS

    assert name in KEYWORDS, f"registry.KEYWORDS has no entry for {name}"
    for keyword in ["description", *KEYWORDS[name]]:
        assert f"{keyword}=" in fn.__doc__, f"{name}'s docstring does not document {keyword}="
        assert f"{keyword}=" in GUIDE, f"docs/writing-plugins.md does not mention {keyword}="


SIGNATURES = {name: f"{name}({', '.join(inspect.signature(fn).parameters)})" for name, fn in HOOKS}
PAGES = {path.relative_to(ROOT).as_posix(): path.read_text()
         for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]}


def _guide_hook_list() -> list[str]:
    """The bulleted list of hooks at the top of the guide's hook reference."""
    reference = GUIDE.split("\n## Hook reference\n", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"^- `(register_\w+\([^`]*\))`", reference, re.M)


@pytest.mark.parametrize("name", SIGNATURES)
def test_the_guides_hook_list_names_every_hookspec_with_its_exact_signature(name):
    assert SIGNATURES[name] in _guide_hook_list(), (
        f"docs/writing-plugins.md's hook list (under '## Hook reference') does not name "
        f"`{SIGNATURES[name]}`, a hookspec in grpo_core/hookspecs.py")


def test_the_guides_hook_list_names_no_hook_that_does_not_exist():
    assert set(_guide_hook_list()) <= set(SIGNATURES.values())


@pytest.mark.parametrize("page", PAGES)
def test_a_page_that_lists_hooks_lists_them_all(page):
    """A page naming three or more hooks is listing them: then it names every one, and
    names none that does not exist (README.md once listed 4 of the 5)."""
    named = set(re.findall(r"\b(register_[a-z_]+)\(register\)", PAGES[page]))
    assert named <= set(SIGNATURES), f"{page} names hooks that do not exist: {sorted(named - set(SIGNATURES))}"
    mentioned = {name for name in SIGNATURES if re.search(rf"\b{name}\b", PAGES[page])}
    if len(mentioned) >= 3:
        assert mentioned == set(SIGNATURES), f"{page} lists hooks but leaves out {sorted(set(SIGNATURES) - mentioned)}"
