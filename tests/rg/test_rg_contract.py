"""The core's reward contract suite on rg.score, with a real row and with the suite's
own synthetic columns (a value that is no rg_entry: no opinion, never a crash)."""

from __future__ import annotations

import grpo_reasoning_gym
from grpo_core.contract import check_reward


def test_contract_on_a_real_row(rows):
    row = rows("rg.leg_counting", 1, seed=0)[0]
    for params in ({}, {"partial": False}):
        results = check_reward("rg.score", params=params, columns={"rg_entry": row["rg_entry"]})
        assert [str(r) for r in results if not r.ok] == []


def test_contract_with_the_suites_own_columns(register_plugin):
    register_plugin(grpo_reasoning_gym)
    assert [str(r) for r in check_reward("rg.score") if not r.ok] == []
