"""The plugin as grpo sees it: names, parameters, cheap import."""

from __future__ import annotations

import subprocess
import sys

import grpo_core
from grpo_core.base.params import bind_params

NAMES = ["arithmetic", "files", "gsm8k", "hub", "math", "medcalc"]


def ours():
    """This plugin's entries (the core registers built-ins such as ``trl`` too)."""
    return [e for e in grpo_core.list_datasets() if e.plugin == "grpo_datasets"]


def test_registers_the_six_adapters(load):
    entries = ours()
    assert [e.name for e in entries] == NAMES
    for entry in entries:
        assert entry.description
    others = {e.plugin for e in grpo_core.list_datasets()} - {"grpo_datasets"}
    assert others <= {"grpo_core.data.builtins"}, others


def test_every_parameter_has_a_default_and_a_checkable_type(load):
    import inspect
    import typing

    for entry in ours():
        hints = typing.get_type_hints(entry.obj)  # fails if any annotation cannot be resolved
        for name, param in inspect.signature(entry.obj).parameters.items():
            assert param.default is not param.empty, (entry.name, name)
            assert name in hints, (entry.name, name)
        if "trust_remote_code" in hints:
            assert inspect.signature(entry.obj).parameters["trust_remote_code"].default is False
        if entry.name != "arithmetic":
            bind_params(entry.name, entry.obj, {"limit": 5, "shuffle": True, "seed": 1})


def test_importing_the_entry_point_stays_cheap():
    code = (
        "import sys, grpo_datasets; "
        "heavy = [m for m in ('datasets', 'pyarrow', 'torch', 'transformers', 'trl') if m in sys.modules]; "
        "assert not heavy, heavy; "
        "grpo_datasets.register_datasets(lambda *a, **k: None); "
        "assert 'datasets' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
