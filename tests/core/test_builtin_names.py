"""A plugin that registers a name of grpo's own (a learning method ``grpo``, a reward
``model.classifier``...) cannot take it over: grpo's built-in is kept, the plugin's entry
is left out with a warning naming the plugin, and runs that never chose it are untouched
(before, every ``grpo train`` failed: the default method ``grpo`` was "registered twice")."""

from __future__ import annotations

import types
import warnings

import pytest

import grpo_core
from grpo_core.plugin import plugins, registry


def impostor(hook: str, names: list[str], obj=None):
    """A plugin module registering ``names`` through ``hook`` (objects that pass the checks)."""
    mod = types.ModuleType("acme_impostor")
    value = obj if obj is not None else (lambda *a, **k: None)

    def register_all(register):
        for name in names:
            register(name, value, description="the plugin's own")

    setattr(mod, hook, grpo_core.hookimpl(specname=hook)(register_all))
    return mod


# every registry with built-ins of grpo-core, and the built-in's plugin
BUILTINS = [
    ("register_advantages", registry.advantages, "grpo", "learning method", "acme_impostor.grpo"),
    ("register_advantages", registry.advantages, "zvp", "learning method", "acme_impostor.zvp"),
    ("register_advantages", registry.advantages, "sign", "learning method", "acme_impostor.sign"),
    ("register_samplers", registry.samplers, "trl", "prompt sampler", "acme_impostor.trl"),
    ("register_samplers", registry.samplers, "frontier", "prompt sampler", "acme_impostor.frontier"),
    ("register_rewards", registry.rewards, "model.classifier", "reward", "acme_impostor.classifier"),
    ("register_datasets", registry.datasets, "trl", "dataset", "acme_impostor.trl"),
]


@pytest.mark.parametrize("hook, reg, name, kind, suggestion", BUILTINS)
def test_a_plugin_taking_a_builtin_name_is_left_out_and_the_builtin_kept(register_plugin, hook, reg, name, kind,
                                                                          suggestion):
    register_plugin(impostor(hook, [name, "acme.other"]), name="acme_impostor")
    with pytest.warns(grpo_core.PluginWarning) as caught:
        found = reg()
    entry = found.get(name)  # no DuplicateNameError: usable
    assert registry.is_builtin(entry) and entry.description != "the plugin's own"
    assert found.get("acme.other").plugin == "acme_impostor"  # the plugin's other names load
    messages = [str(w.message) for w in caught]
    assert messages == [f"grpo plugin 'acme_impostor': {hook}: '{name}' is one of grpo's own {kind}s; the plugin's "
                        f"{kind} is left out and grpo's built-in '{name}' is kept (give it a name of its own, e.g. "
                        f"'{suggestion}')."]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once a process, not on every look-up
        reg().get(name)


def test_a_builtin_system_prompt_is_kept(register_plugin):
    register_plugin(impostor("register_system_prompts", ["plain"], obj="Say it in French."), name="acme_impostor")
    with pytest.warns(grpo_core.PluginWarning, match="'plain' is one of grpo's own system prompts"):
        entry = registry.system_prompts().get("plain")
    assert entry.obj.startswith("Solve the problem step by step") and registry.is_builtin(entry)


def test_two_plugins_on_one_name_of_their_own_are_still_an_error_on_use(register_plugin):
    register_plugin(impostor("register_advantages", ["acme.same"]), name="first")
    register_plugin(impostor("register_advantages", ["acme.same", "grpo"]), name="second")
    with pytest.warns(grpo_core.PluginWarning):
        found = registry.advantages()
    assert registry.is_builtin(found.get("grpo"))
    with pytest.raises(grpo_core.DuplicateNameError, match="registered by plugin 'first' and by plugin 'second'"):
        found.get("acme.same")
    assert [p.plugin for p in plugins.problems] == ["second", "second"]
