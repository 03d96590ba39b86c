"""A reward whose calls keep timing out is not waited on for the rest of the run:
after health.max_reward_timeouts calls in a row, stop (RewardStalled) or drop it."""

from __future__ import annotations

import asyncio
import time

import pytest

from grpo_core.rewards.policy import AsyncGuardedReward, GuardedReward, RewardStalled, Stalls
from grpo_core.rewards.reward import Reward


def batch(g):
    return g(completions=["a", "b"], log_metric=lambda *a: None)


def test_only_time_outs_in_a_row_count_and_the_third_stops():
    calls = []

    def flaky(completions, **kwargs):
        calls.append(len(calls) + 1)
        if len(calls) != 3:  # hangs on every call but the third
            time.sleep(3600)
        return [1.0 for _ in completions]

    g = GuardedReward(Reward("test.flaky", flaky, time_limit=0.1), log=lambda m: None, max_share=1.0)
    assert batch(g) == [None, None] and batch(g) == [None, None]  # 1, 2 in a row
    assert batch(g) == [1.0, 1.0]  # an answered call: the count starts again
    assert batch(g) == [None, None] and batch(g) == [None, None]  # 1, 2
    with pytest.raises(RewardStalled, match=r"'test.flaky' timed out on 3 calls in a row \(0.1s each"):
        batch(g)  # 3
    assert calls == [1, 2, 3, 4, 5, 6]


def test_a_time_out_in_the_checks_before_training_counts_as_the_first():
    def hang(completions, **kwargs):
        time.sleep(3600)

    reward = Reward("test.hang_checked", hang, time_limit=0.1)
    reward.timed_out = True  # what grpo check's call marks
    g = GuardedReward(reward, log=lambda m: None, max_share=1.0, stalls=Stalls(max_in_a_row=2))
    with pytest.raises(RewardStalled, match="timed out on 2 calls in a row"):
        batch(g)


def test_an_async_reward_that_hangs_is_dropped_and_not_called_again():
    calls = []

    async def hang(completions, **kwargs):
        calls.append(1)
        await asyncio.sleep(3600)

    logged, metrics = [], []
    g = AsyncGuardedReward(Reward("test.async_hang", hang, time_limit=0.1), log=logged.append, max_share=1.0,
                           stalls=Stalls(max_in_a_row=2, action="drop"))
    run = lambda: asyncio.run(g(completions=["a", "b"], log_metric=lambda n, v: metrics.append((n, v))))  # noqa: E731
    assert run() == [None, None] and run() == [None, None]  # dropped at the second
    started = time.monotonic()
    assert run() == [None, None] and run() == [None, None]
    assert time.monotonic() - started < 0.05 and len(calls) == 2  # not called, not waited on
    assert [m for m in logged if "DROPPED from training" in m and "'test.async_hang'" in m].__len__() == 1
    assert metrics.count(("rewards/test.async_hang/dropped", 1.0)) == 2


def test_an_async_reward_that_hangs_stops_the_run_by_default():
    async def hang(completions, **kwargs):
        await asyncio.sleep(3600)

    g = AsyncGuardedReward(Reward("test.async_stop", hang, time_limit=0.05), log=lambda m: None, max_share=1.0)
    for _ in range(2):
        asyncio.run(g(completions=["a"], log_metric=lambda *a: None))
    with pytest.raises(RewardStalled, match="health.on_reward_timeout: drop"):
        asyncio.run(g(completions=["a"], log_metric=lambda *a: None))
