"""The core's reward contract suite, on every math reward resolved by name."""

from __future__ import annotations

import pytest

import grpo_rewards_math
from grpo_core.contract import RewardContract, check_reward

NAMES = ["math.correctness", "math.numeric", "math.exact", "math.cosine", "math.kimi_length"]


@pytest.mark.parametrize("name", NAMES)
def test_contract(register_plugin, name):
    register_plugin(grpo_rewards_math)
    failed = [str(r) for r in check_reward(name) if not r.ok]
    assert failed == []


@pytest.mark.parametrize("name", ["math.correctness", "math.cosine", "math.kimi_length"])
def test_contract_through_the_checker_pool(register_plugin, name):
    # a LaTeX gold sends every hostile completion through the worker processes
    register_plugin(grpo_rewards_math)
    results = check_reward(
        name, params={"timeout": 2.0, "workers": 2}, columns={"answer": r"2\sqrt{2}"}
    )
    assert [str(r) for r in results if not r.ok] == []


class TestNumericContract(RewardContract):
    """The class-based form of the suite, with a parameter bound by name."""

    reward = "math.numeric"
    plugin = grpo_rewards_math
    params = {"rtol": 0.05}
