"""Fixtures for the grpo-reasoning-gym tests: the plugin registered in process, and
rows of a task made by its loader (the column rg.score reads comes from there)."""

from __future__ import annotations

import pytest


@pytest.fixture
def rg(register_plugin):
    """``grpo_core.load_dataset`` with grpo_reasoning_gym registered (its rewards too)."""
    import grpo_core
    import grpo_reasoning_gym

    register_plugin(grpo_reasoning_gym)
    return grpo_core.load_dataset


@pytest.fixture
def rows(rg):
    """``rows(dataset, n, **params)``: the first ``n`` train rows, as dicts."""

    def make(name: str, n: int = 3, **params):
        ds = rg(name, size=params.pop("size", n), **params)
        return [ds[i] for i in range(n)]

    return make


@pytest.fixture
def scored(rg):
    """``scored(completions, row, **params)``: rg.score of each completion against one row."""
    import grpo_core

    def score(completions: list, row: dict, **params):
        reward = grpo_core.get_reward("rg.score", **params)
        return reward(completions, rg_entry=[row["rg_entry"]] * len(completions))

    return score
