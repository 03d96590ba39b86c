"""The names DESIGN.md fixes, and the module names plugins import, work as before the
rooms: ``from grpo_core import ...`` and ``grpo_core.text`` & co. are the moved modules."""

from __future__ import annotations

import importlib

import pytest

import grpo_core

DESIGN = ["hookimpl", "list_rewards", "get_reward", "compose_rewards", "list_datasets", "load_dataset"]
ALIASES = {"text": "base.text", "errors": "base.errors", "workers": "base.workers", "datafiles": "data.datafiles",
           "contract": "authoring.contract", "testing": "authoring.testing"}


@pytest.mark.parametrize("name", DESIGN)
def test_design_names_are_on_the_face(name):
    assert callable(getattr(grpo_core, name))


@pytest.mark.parametrize("old, room", sorted(ALIASES.items()))
def test_a_moved_module_is_the_same_object_under_its_old_name(old, room):
    assert importlib.import_module(f"grpo_core.{old}") is importlib.import_module(f"grpo_core.{room}")


def test_a_reward_by_name_is_a_trl_reward_named_as_registered(monkeypatch):
    monkeypatch.setenv("GRPO_PLUGINS", "")  # the core's own rewards only
    assert "remote.server" in [entry.name for entry in grpo_core.list_rewards()]
    assert grpo_core.get_reward("remote.server", url="http://127.0.0.1:9").__name__ == "remote.server"
    funcs, weights = grpo_core.compose_rewards(["remote.server(url='http://127.0.0.1:9'):2.5"])
    assert [f.__name__ for f in funcs] == ["remote.server"] and weights == [2.5]
