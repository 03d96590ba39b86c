"""Fixtures for the grpo-rewards-format tests: the plugin registered in process."""

from __future__ import annotations

import pytest


@pytest.fixture
def reward(register_plugin):
    """``reward(name, **params)``: a format-plugin reward resolved by name through the core."""
    import grpo_rewards_format
    from grpo_core import get_reward

    register_plugin(grpo_rewards_format)
    return get_reward
