"""The core's reward contract suite on the three code rewards, resolved by name."""

from __future__ import annotations

import pytest

import grpo_rewards_code
from grpo_core.contract import RewardContract, check_reward

FENCED_COLUMNS = {"tests": ["assert add(1, 2) == 3"]}


@pytest.mark.parametrize("name", ["code.tests", "code.runs", "code.format"])
def test_contract(register_plugin, name):
    register_plugin(grpo_rewards_code, name="code")
    failed = [str(r) for r in check_reward(name, columns=FENCED_COLUMNS if name == "code.tests" else None)
              if not r.ok]
    assert failed == []


class TestCodeTestsContract(RewardContract):
    """The class-based form, with parameters bound by name (all-or-nothing, a short limit)."""

    reward = "code.tests"
    plugin = grpo_rewards_code
    params = {"all_or_nothing": True, "timeout": 2.0, "workers": 2}
    columns = FENCED_COLUMNS
