"""Rewards by name: specs, parameters, composition, collisions, unknown names."""

from __future__ import annotations

import pickle
import sys
import types
from typing import Literal

import pytest

import grpo_core
from grpo_core import hookimpl
from grpo_core.errors import (
    DuplicateNameError,
    RewardParamError,
    SpecError,
    UnknownNameError,
)
from grpo_core.rewards.reward import RewardSpec, parse_spec

# Module-level so they pickle like a real plugin's rewards.


def length_reward(completions, target: int = 10, scale: float = 1.0, **kwargs):
    """Closeness to a target length: -|target - len| * scale."""
    return [-abs(target - len(grpo_core.completion_text(c))) * scale for c in completions]


def match_reward(completions, answer, **kwargs):
    return [1.0 if grpo_core.completion_text(c).strip() == a else 0.0 for c, a in zip(completions, answer)]


def strict_reward(completions, prompts, mode: str = "a"):  # no **kwargs: extra TRL kwargs filtered
    return [0.5 for _ in completions]


async def async_reward(completions, **kwargs):
    return [1.0 for _ in completions]


def make_plugin(name, rewards):
    mod = types.ModuleType(name)

    @hookimpl
    def register_rewards(register):
        for reward_name, func in rewards.items():
            register(reward_name, func)

    mod.register_rewards = register_rewards
    return mod


@pytest.fixture
def acme(register_plugin):
    plugin = make_plugin("acme_plugin", {
        "acme.length": length_reward,
        "acme.match": match_reward,
        "acme.strict": strict_reward,
        "acme.async": async_reward,
    })
    register_plugin(plugin, name="acme")
    return plugin


# --- spec parsing -------------------------------------------------------------

@pytest.mark.parametrize("spec, expected", [
    ("math.correctness", RewardSpec("math.correctness", {}, 1.0)),
    ("math.correctness:2.0", RewardSpec("math.correctness", {}, 2.0)),
    (" math.correctness : 2 ", RewardSpec("math.correctness", {}, 2.0)),
    ("length.ideal(target=300)", RewardSpec("length.ideal", {"target": 300}, 1.0)),
    ("length.ideal(target=300, unit='words'):-0.5", RewardSpec("length.ideal", {"target": 300, "unit": "words"}, -0.5)),
    ("format.json(schema={'type': 'object', 'required': ['a']}):1e-1",
     RewardSpec("format.json", {"schema": {"type": "object", "required": ["a"]}}, 0.1)),
    ("acme.x(path='C:/a:b)c'):3", RewardSpec("acme.x", {"path": "C:/a:b)c"}, 3.0)),
    ("acme.x(flag=True, items=[1, 2.5, None])", RewardSpec("acme.x", {"flag": True, "items": [1, 2.5, None]}, 1.0)),
    ({"name": "acme.x", "weight": 0.5, "params": {"n": 2}}, RewardSpec("acme.x", {"n": 2}, 0.5)),
    ({"name": "acme.x(n=1)", "weight": "2"}, RewardSpec("acme.x", {"n": 1}, 2.0)),
])
def test_good_specs_parse(spec, expected):
    assert parse_spec(spec) == expected


@pytest.mark.parametrize("spec, message", [
    ("", "empty reward spec"),
    ("math.correctness:two", "weight 'two' in reward spec 'math.correctness:two' is not a number"),
    ("math.correctness:1:2", "is not a number"),
    ("correctness", "not of the form <namespace>.<name>"),
    ("Math-Correctness", "not of the form <namespace>.<name>"),  # Math.Correctness could be an import path
    ("length.ideal(300)", "must be key=value pairs"),
    ("length.ideal(target=300", "unclosed '('"),
    ("length.ideal(target=__import__('os').getcwd())", "is not a Python literal"),
    ("length.ideal(target=open('/etc/passwd'))", "is not a Python literal"),
    ("length.ideal(**{'a': 1})", "'**' is not allowed"),
    ("length.ideal(target=3) extra", "only ':weight' may follow"),
    ({"weight": 2}, "must have 'name'"),
    ({"name": "a.b", "wieght": 2}, "unknown keys: wieght"),
    ({"name": "a.b", "weight": True}, "is not a number"),
])
def test_bad_specs_give_clear_errors(spec, message):
    with pytest.raises(SpecError, match=None) as info:
        parse_spec(spec)
    assert message in str(info.value)


def test_spec_values_are_never_evaluated(tmp_path, monkeypatch):
    marker = tmp_path / "pwned"
    with pytest.raises(SpecError):
        parse_spec(f"a.b(x=__import__('pathlib').Path({str(marker)!r}).touch())")
    assert not marker.exists()


# --- get_reward / compose_rewards ---------------------------------------------

def test_compose_returns_trl_reward_funcs_and_weights(acme):
    funcs, weights = grpo_core.compose_rewards(["acme.length(target=3):2.0", "acme.match"])
    assert [f.__name__ for f in funcs] == ["acme.length", "acme.match"]
    assert weights == [2.0, 1.0]
    # called exactly as TRL calls it: keywords only, every column, TRL extras
    out = funcs[0](prompts=["p", "p"], completions=["abcde", "ab"], completion_ids=[[1], [2]],
                   answer=["x", "y"], trainer_state=None, log_metric=None, log_extra=None)
    assert out == [-2.0, -1.0]  # |3-5|, |3-2|
    convo = [[{"role": "assistant", "content": "x"}], [{"role": "assistant", "content": "z"}]]
    assert funcs[1](prompts=["p", "p"], completions=convo, answer=["x", "y"]) == [1.0, 0.0]


def test_function_without_kwargs_gets_only_what_it_declares(acme):
    reward = grpo_core.get_reward("acme.strict", mode="b")
    assert reward(prompts=["p"], completions=["c"], completion_ids=[[1]], answer=["a"],
                  trainer_state=None) == [0.5]


def test_reward_required_columns_come_from_parameters_without_defaults(acme):
    assert grpo_core.get_reward("acme.match").required_columns == ("answer",)
    assert grpo_core.get_reward("acme.length").required_columns == ()


def test_rewards_are_picklable_with_their_parameters(acme):
    reward = grpo_core.get_reward("acme.length", target=4)
    clone = pickle.loads(pickle.dumps(reward))
    assert clone.__name__ == "acme.length"
    assert clone(completions=["abcdef"]) == [-2.0]


def test_async_reward_stays_async(acme):
    import asyncio
    import inspect

    reward = grpo_core.get_reward("acme.async")
    assert inspect.iscoroutinefunction(reward.__call__)
    assert asyncio.run(reward(completions=["a", "b"])) == [1.0, 1.0]


def test_list_rewards_shows_plugin_and_description(acme):
    entries = {e.name: e for e in grpo_core.list_rewards()}
    assert set(entries) >= {"acme.length", "acme.match"}
    assert entries["acme.length"].plugin == "acme"
    assert entries["acme.length"].description == "Closeness to a target length: -|target - len| * scale."


@pytest.mark.parametrize("params, message", [
    ({"tagret": 5}, "reward 'acme.length' has no parameter 'tagret' (did you mean 'target'?); "
                    "its parameters are: target=10, scale=1.0."),
    ({"target": "ten"}, "reward 'acme.length' parameter 'target' expects int, got str 'ten'"),
    ({"target": 2.5}, "parameter 'target' expects int, got float 2.5"),
    ({"target": True}, "parameter 'target' expects int, got bool True"),
])
def test_bad_parameters_name_the_reward_and_parameter(acme, params, message):
    with pytest.raises(RewardParamError) as info:
        grpo_core.get_reward("acme.length", **params)
    assert message in str(info.value)


def test_int_is_accepted_for_float_parameter(acme):
    assert grpo_core.get_reward("acme.length", scale=2)(completions=["abc"]) == [-14.0]


def test_column_passed_as_parameter_is_rejected(acme):
    with pytest.raises(RewardParamError, match="'answer' is a dataset column it reads"):
        grpo_core.get_reward("acme.match", answer="42")


def test_unknown_reward_lists_closest_names(acme):
    with pytest.raises(UnknownNameError) as info:
        grpo_core.get_reward("acme.lenght")
    assert str(info.value).startswith("unknown reward 'acme.lenght'. Closest registered: acme.length")


def test_unknown_reward_from_a_known_plugin_says_what_to_install(plugin_manager, monkeypatch):
    from grpo_core.plugin import plugins

    monkeypatch.setattr(plugins, "is_installed", lambda dist: False)
    with pytest.raises(UnknownNameError) as info:
        grpo_core.compose_rewards(["math.correctness"])
    assert "pip install ./packages/grpo-rewards-math from a grpo checkout" in str(info.value)


def test_same_reward_twice_is_logged_apart_by_its_parameters_and_rejected_when_identical(acme):
    funcs, weights = grpo_core.compose_rewards(["acme.length:1", "acme.length(target=2):0.5"])
    assert [f.__name__ for f in funcs] == ["acme.length", "acme.length(target=2)"] and weights == [1.0, 0.5]
    funcs, _ = grpo_core.compose_rewards([{"name": "acme.length", "as": "short"}, "acme.length"])
    assert [f.__name__ for f in funcs] == ["short", "acme.length"]
    with pytest.raises(SpecError, match="listed twice"):
        grpo_core.compose_rewards(["acme.length(target=2):1", "acme.length(target=2):3"])


def test_two_plugins_registering_one_name_is_an_error_naming_both_when_used(register_plugin, acme):
    register_plugin(make_plugin("first_mod", {"acme.same": length_reward}), name="first")
    register_plugin(make_plugin("second_mod", {"acme.same": match_reward}), name="second")
    with pytest.warns(grpo_core.PluginWarning, match="reward 'acme.same' is registered by plugin 'first'"):
        names = [e.name for e in grpo_core.list_rewards()]
    assert "acme.same" not in names and "acme.length" in names  # the others stay usable
    with pytest.raises(DuplicateNameError) as info:
        grpo_core.get_reward("acme.same")
    msg = str(info.value)
    assert "reward 'acme.same' is registered by plugin 'first' and by plugin 'second'" in msg
    assert "cannot be used until one is uninstalled" in msg


def test_invalid_reward_name_from_plugin_is_skipped_with_a_warning(register_plugin, acme):
    register_plugin(make_plugin("bad_mod", {"NoDots": length_reward}), name="bad")
    with pytest.warns(grpo_core.PluginWarning, match="grpo plugin 'bad': reward name 'NoDots' is not of the form"):
        names = [e.name for e in grpo_core.list_rewards()]
    assert "acme.length" in names


def test_hook_that_raises_is_isolated(register_plugin, acme):
    mod = types.ModuleType("exploding")

    @hookimpl
    def register_rewards(register):
        raise RuntimeError("boom")

    mod.register_rewards = register_rewards
    register_plugin(mod, name="exploding")
    with pytest.warns(grpo_core.PluginWarning, match="register_rewards raised RuntimeError: boom"):
        names = [e.name for e in grpo_core.list_rewards()]
    assert "acme.length" in names


def test_importing_grpo_core_loads_nothing_heavy():
    import subprocess

    code = "import grpo_core, sys; print(sorted(m for m in ('torch','trl','datasets','transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


def literal_reward(completions, unit: Literal["chars", "words"] = "chars", n: int = 1,
                   ds: NotImportable = None, **kwargs):  # noqa: F821
    return [0.0 for _ in completions]


def test_unresolvable_annotation_does_not_switch_off_other_checks(register_plugin):
    register_plugin(make_plugin("lit_mod", {"acme.lit": literal_reward}), name="lit")
    with pytest.raises(RewardParamError, match="parameter 'n' expects int, got str 'x'"):
        grpo_core.get_reward("acme.lit", n="x")
    with pytest.raises(RewardParamError, match="parameter 'unit' expects one of 'chars', 'words', got str 'lines'"):
        grpo_core.get_reward("acme.lit", unit="lines")
    assert grpo_core.get_reward("acme.lit", unit="words", ds=object()).params["unit"] == "words"


def positive_target(completions, target: int = 5, **kwargs):
    if target <= 0:
        raise ValueError(f"target must be positive, got {target}")
    return [0.0 for _ in completions]


def test_parameter_checks_inside_the_reward_fail_at_composition(register_plugin):
    register_plugin(make_plugin("pos_mod", {"acme.pos": positive_target}), name="pos")
    with pytest.raises(RewardParamError, match=r"reward 'acme.pos\(target=0\)' rejects its parameters: target must be positive, got 0"):
        grpo_core.compose_rewards(["acme.pos(target=0)"])
    assert grpo_core.get_reward("acme.pos", target=3).params == {"target": 3}
