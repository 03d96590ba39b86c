"""The plugin as a user has it: found by entry point, its names listed without
importing torch or trl, its system prompt and datasets registered."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_the_entry_point_registers_rewards_datasets_and_the_prompt(monkeypatch):
    from importlib.metadata import PackageNotFoundError, distribution

    from grpo_core.plugin import plugins, registry

    try:
        distribution("grpo-rewards-code")
    except PackageNotFoundError:
        pytest.skip("grpo-rewards-code is not installed (pip install -e packages/grpo-rewards-code)")
    monkeypatch.setenv("GRPO_PLUGINS", "grpo-rewards-code")
    plugins.reset()
    try:
        assert {"code.tests", "code.runs", "code.format"} <= set(registry.rewards().names())
        assert {"mbpp", "humaneval", "code.files"} <= set(registry.datasets().names())
        entry = registry.system_prompts().get("code")
        assert entry.extra["answer_template"] == "```python\n{answer}\n```"
        assert entry.distribution == "grpo-rewards-code"
    finally:
        plugins.reset()


def test_importing_the_plugin_loads_neither_torch_nor_trl_nor_datasets():
    code = ("import sys, grpo_rewards_code; "
            "print(sorted(m for m in ('torch', 'trl', 'datasets', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_descriptions_state_the_formula(code_plugin):
    import grpo_core

    described = {e.name: e.description for e in grpo_core.list_rewards() if e.name.startswith("code.")}
    assert described == {
        "code.tests": "Share of the row's tests that the completion's code passes, run in the sandbox.",
        "code.runs": "1.0 when the completion's code runs to its end without an exception, in the sandbox.",
        "code.format": "1.0 when the completion has code that parses as Python, else 0.0; nothing is run.",
    }
