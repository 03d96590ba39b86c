import importlib

import pytest

from tests.serve.test_serve import installed, serving  # noqa: F401 - the fixtures, for test_remote too


def peer(module: str):
    """A module of OpenRLHF or verl, which scripts/setup.sh installs (their reward code only):
    missing, the test fails rather than skip, so that CI never passes without them."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        pytest.fail(f"{module} is not importable ({exc}); scripts/setup.sh installs openrlhf==0.11.2 and "
                    f"verl==0.9.1 without their training stacks (delete .venv/.grpo-installed and run it again).")
