"""Gating: a reward that counts only where another holds, the gate scored once."""

from __future__ import annotations

import types

import pytest

import grpo_core
from grpo_core.errors import SpecError

CALLS = {"gate": 0}


def right(completions, answer, **kwargs):
    """The gate: 1.0 when the completion is the answer."""
    CALLS["gate"] += 1
    return [float(c == a) for c, a in zip(completions, answer)]


def short(completions, **kwargs):
    """1 - len/10, None for an empty completion."""
    return [None if not c else 1.0 - len(c) / 10 for c in completions]


@pytest.fixture
def toy(register_plugin):
    CALLS["gate"] = 0
    mod = types.ModuleType("gating_toy")

    @grpo_core.hookimpl
    def register_rewards(register):
        register("toy.right", right)
        register("toy.short", short)

    mod.register_rewards = register_rewards
    register_plugin(mod, name="toy")


COMPLETIONS = ["12", "123", "", "7"]
ANSWERS = ["12", "99", "", "8"]  # right: 1, 0, 1, 0


@pytest.mark.parametrize("order", ["gate first", "gated first"])
def test_the_gated_reward_counts_only_where_the_gate_holds_and_the_gate_is_scored_once(toy, order):
    specs = ["toy.right:1", "toy.short:0.1 when toy.right >= 1"]
    funcs, weights = grpo_core.compose_rewards(specs if order == "gate first" else specs[::-1])
    CALLS["gate"] = 0  # composing checks each reward on an empty batch
    batch = dict(completions=COMPLETIONS, answer=ANSWERS)
    out = {f.__name__: f(**batch) for f in funcs}  # TRL calls each reward, in order, with one batch
    assert out["toy.right"] == [1.0, 0.0, 1.0, 0.0]
    # short: 0.8, 0.7, None, 0.9 -> kept where right, else 0: 0.8, 0.0, None, 0.0
    assert out["toy.short"][0] == pytest.approx(0.8) and out["toy.short"][1:] == [0.0, None, 0.0]
    assert CALLS["gate"] == 1
    funcs[0](completions=["x"], answer=["x"])  # a new batch scores the gate again
    assert CALLS["gate"] == 2


def test_the_yaml_form_and_the_string_form_are_the_same(toy):
    a, _ = grpo_core.compose_rewards(["toy.right", {"name": "toy.short", "weight": 0.1, "when": "toy.right == 1"}])
    b, _ = grpo_core.compose_rewards(["toy.right", "toy.short:0.1 when toy.right == 1"])
    batch = dict(completions=COMPLETIONS, answer=ANSWERS)
    assert a[1](**batch) == b[1](**batch)
    assert str(grpo_core.parse_spec({"name": "toy.short", "weight": 0.1, "when": "toy.right == 1"})) == \
        "toy.short:0.1 when toy.right == 1"


def test_a_reward_gated_and_ungated_is_logged_under_two_names(toy):
    funcs, weights = grpo_core.compose_rewards(
        ["toy.right:0", "toy.short:0.2", {"name": "toy.short", "as": "toy.short_if_right", "weight": 0.3,
                                          "when": "toy.right >= 1"}])
    assert [f.__name__ for f in funcs] == ["toy.right", "toy.short", "toy.short_if_right"]
    assert weights == [0.0, 0.2, 0.3]  # weight 0: logged as a metric, not trained on


@pytest.mark.parametrize("specs, message", [
    (["toy.short when toy.right >= 1"], "gated on 'toy.right', which is not in the reward list"),
    (["toy.right", "toy.short when toy.right >> 1"], "is not '<reward> <op> <number>'"),
    (["toy.right when toy.right >= 1"], "a gate must be an ungated other reward"),
])
def test_bad_gates_are_clear_errors(toy, specs, message):
    with pytest.raises(SpecError, match=None) as info:
        grpo_core.compose_rewards(specs)
    assert message in str(info.value)
