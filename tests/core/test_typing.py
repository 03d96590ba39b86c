"""The names a plugin author is told to import type-check: mypy --strict resolves them to
their real types (the alias modules swap themselves in sys.modules, which mypy cannot
see; they list the real names under TYPE_CHECKING), a misspelt one is an error, and the
scaffolded package and examples/grpo-acme pass."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grpo_core.authoring.scaffold import create, plugin_names, render

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("mypy", reason="mypy is a dev dependency (pip install -e '.[dev]')")


@pytest.fixture
def cache(tmp_path_factory):
    """A cache of its own per test: mypy trusts a cached module of the same name, size and time."""
    return tmp_path_factory.mktemp("mypy-cache")


def mypy(cwd: Path, cache: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache),
                           "--no-error-summary", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


PLUGIN = '''\
from grpo_core.text import completion_text
from grpo_core.errors import GrpoError
from grpo_core.contract import RewardContract
from grpo_core.workers import check_workers
from grpo_core.datafiles import parse_split
from grpo_core.testing import make_tiny_model
from grpo_core import hookimpl, list_environments, text_reward

reveal_type(completion_text)
reveal_type(RewardContract.reward)
reveal_type(list_environments)
reveal_type(make_tiny_model)
'''


@pytest.fixture
def project(tmp_path):
    """A folder with the scaffold's mypy settings (strict; torch, transformers, ... not followed)."""
    pyproject = render(plugin_names("typed"))["pyproject.toml"]
    (tmp_path / "pyproject.toml").write_text(pyproject[pyproject.index("[tool.mypy]"):])
    return tmp_path


def test_the_alias_modules_names_have_their_real_types(project, cache):
    (project / "plugin.py").write_text(PLUGIN)
    out = mypy(project, cache, "plugin.py")
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.splitlines() == [
        'plugin.py:9: note: Revealed type is "def (completion: Any) -> str"',
        'plugin.py:10: note: Revealed type is "Any"',
        'plugin.py:11: note: Revealed type is "def () -> list[grpo_core.plugin.registry.Entry]"',
        'plugin.py:12: note: Revealed type is "def (path: str | pathlib.Path, arch: str =, seed: int =, '
        'hidden_size: int =, tools: bool =) -> pathlib.Path"',
    ]


@pytest.mark.parametrize("line, error", [
    ("from grpo_core.text import completion_txt", 'Module "grpo_core.text" has no attribute "completion_txt"'),
    ("from grpo_core.errors import GrpoErorr", 'Module "grpo_core.errors" has no attribute "GrpoErorr"'),
    ("from grpo_core import list_environment", 'Module "grpo_core" has no attribute "list_environment"'),
    ("from grpo_core.testing import make_tiny_modle", 'Module "grpo_core.testing" has no attribute "make_tiny_modle"'),
])
def test_a_misspelt_name_is_an_error(project, cache, line, error):
    (project / "plugin.py").write_text(line + "\n")
    out = mypy(project, cache, "plugin.py")
    assert out.returncode == 1 and error in out.stdout, out.stdout + out.stderr


def test_the_scaffolded_package_type_checks_as_its_ci_runs_it(tmp_path, cache):
    _, pkg, _ = create("typed", tmp_path / "grpo-typed")
    out = mypy(pkg, cache)  # its pyproject's [tool.mypy]: strict, src and tests, mypy_path src
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_example_plugin_type_checks(cache):
    out = mypy(ROOT / "examples" / "grpo-acme", cache, "src", "tests")  # (it imports no training library)
    assert out.returncode == 0, out.stdout + out.stderr
