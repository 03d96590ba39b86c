"""The plugin as a user has it: found by entry point, listed without importing
reasoning-gym, datasets, torch or trl; grpo-core does not depend on it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from grpo_reasoning_gym import TASKS


def test_the_entry_point_registers_the_tasks_and_the_reward(monkeypatch):
    from importlib.metadata import PackageNotFoundError, distribution

    from grpo_core.plugin import plugins, registry

    try:
        distribution("grpo-reasoning-gym")
    except PackageNotFoundError:
        pytest.skip("grpo-reasoning-gym is not installed (pip install -e packages/grpo-reasoning-gym)")
    monkeypatch.setenv("GRPO_PLUGINS", "grpo-reasoning-gym")
    plugins.reset()
    try:
        names = [n for n in registry.datasets().names() if n.startswith("rg.")]
        assert names == sorted(["rg.task", *(f"rg.{t}" for t in TASKS)])
        assert {"rg.chain_sum", "rg.basic_arithmetic", "rg.leg_counting"} <= set(names)
        entry = registry.rewards().get("rg.score")
        assert entry.distribution == "grpo-reasoning-gym"
        assert entry.extra["correctness"] is True and tuple(entry.extra["range"]) == (0.0, 1.0)
    finally:
        plugins.reset()


def test_listing_imports_neither_reasoning_gym_nor_datasets_nor_torch():
    code = ("import sys, grpo_core; from grpo_core.plugin import plugins; "
            "names = [e.name for e in grpo_core.list_datasets()] + [e.name for e in grpo_core.list_rewards()]; "
            "assert 'rg.chain_sum' in names and 'rg.score' in names, names; "
            "print(sorted(m for m in ('reasoning_gym', 'datasets', 'torch', 'trl', 'sympy') if m in sys.modules))")
    env = {"GRPO_PLUGINS": "grpo-reasoning-gym", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_grpo_core_does_not_depend_on_it():
    from importlib.metadata import requires

    assert not [r for r in requires("grpo-core") or [] if "reasoning" in r]
    assert [r for r in requires("grpo-reasoning-gym") if r.startswith(("grpo-core", "reasoning-gym"))] == [
        "grpo-core>=0.1", "reasoning-gym<0.2,>=0.1.25"]
