"""What plugins declare when they register, and config mistakes caught before the model."""

from __future__ import annotations

import importlib.util
import types

import pytest

import grpo_core
from grpo_core.errors import ConfigError


def constant(completions, **kwargs):
    return [1.0] * len(completions)


def plugin(**register_kwargs):
    mod = types.ModuleType("declaring")
    mod.register_rewards = grpo_core.hookimpl(
        lambda register: [register(name, constant, **kw) for name, kw in register_kwargs.items()])
    return mod


def test_a_misspelt_keyword_is_reported_and_the_entry_skipped(register_plugin):
    register_plugin(plugin(**{"acme.typo": {"descripton": "x"}, "acme.fine": {"description": "y"}}), name="declaring")
    with pytest.warns(grpo_core.PluginWarning, match="unknown keyword 'descripton' \\(did you mean 'description'\\?\\)"):
        names = [e.name for e in grpo_core.list_rewards()]
    assert "acme.fine" in names and "acme.typo" not in names


def test_correctness_is_declared_not_guessed_from_the_name(register_plugin, tmp_path, monkeypatch):
    register_plugin(plugin(**{"acme.right": {"correctness": True}, "acme.correctness": {}}), name="declaring")
    funcs, _ = grpo_core.compose_rewards(["acme.right", "acme.correctness"])
    assert [f.correctness for f in funcs] == [True, False]  # the name alone declares nothing
    (tmp_path / "mine.py").write_text("def exact(completions, **kw):\n    return [0.0] * len(completions)\n"
                                      "exact.correctness = True\n")
    monkeypatch.chdir(tmp_path)
    assert grpo_core.compose_rewards(["mine.py:exact"])[0][0].correctness is True


def test_a_list_as_the_dataset_name_is_a_clear_error(register_plugin):
    from grpo_core.config.load import load_config

    register_plugin(plugin(**{"acme.right": {}}), name="declaring")
    with pytest.raises(ConfigError) as info:
        load_config(None, data={"model": "org/model", "dataset": {"name": ["a", "b"]}, "rewards": ["acme.right"]})
    # one problem, naming the value and what it must be (not also "dataset.name is required")
    assert str(info.value).startswith("dataset.name is ['a', 'b']; it must be text or null"), str(info.value)
    assert "required" not in str(info.value)


def test_report_to_a_missing_integration_fails_before_the_model(monkeypatch):
    from types import SimpleNamespace

    from grpo_core.config import grpo_args
    from grpo_core.config.grpo_args import check_integrations

    real = importlib.util.find_spec  # tensorboard is installed here (the tracker tests use it): hide it
    monkeypatch.setattr(grpo_args.importlib.util, "find_spec",
                        lambda name, *a: None if name == "tensorboard" else real(name, *a))

    with pytest.raises(ConfigError, match="report_to tensorboard needs the tensorboard package, which is not installed"):
        check_integrations(SimpleNamespace(report_to=["tensorboard"]))
    check_integrations(SimpleNamespace(report_to=[]))  # none: nothing to check
