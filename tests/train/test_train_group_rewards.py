"""A group reward trains: TRL's flat batch reaches it one group of num_generations at a time
(the group size read from the trainer), and what it paid is in the rollout log, per group,
with or without dynamic sampling's rounds."""

from __future__ import annotations

import types

import pytest

import grpo_core
from grpo_core.trainer import rollout_log

from .conftest import TINY

SIZES: list[int] = []


def group_size(completions, **kwargs):
    """Each completion's group size, as the reward saw it."""
    SIZES.append(len(completions))
    return [float(len(completions))] * len(completions)


@pytest.fixture
def group_rewards(register_plugin):
    import grpo_rewards_format

    SIZES.clear()
    register_plugin(grpo_rewards_format)
    mod = types.ModuleType("group_train_plugin")
    mod.register_rewards = grpo_core.hookimpl(lambda register: register("test.group_size", group_size, group=True))
    register_plugin(mod, name="group_train_plugin")


def kimi(lengths: list[int]) -> list[float]:
    """length.relative by hand: 0.5 - (L - min) / (max - min), 0 when all are equal."""
    low, high = min(lengths), max(lengths)
    return [0.0 if high == low else 0.5 - (n - low) / (high - low) for n in lengths]


@pytest.mark.parametrize("dynamic", [False, True], ids=["plain", "dynamic"])
def test_a_group_reward_trains_and_logs_what_it_paid_each_group(grpo, group_rewards, tmp_path, dynamic):
    # two groups of 4 a step (per_device_train_batch_size 8, num_generations 4)
    # lengths in characters: the tiny model writes 8 tokens nearly always, of varied lengths
    args = ["--rewards", "test.digits", "length.relative(unit='chars'):0.5", "test.group_size:0", "--no-check",
            "--per_device_train_batch_size", "8", "--max_steps", "2"]
    if dynamic:
        args += ["--sampling.dynamic", "true", "--sampling.max_rounds", "3"]
    code, out, err = grpo(TINY, *args)
    assert code == 0, out + err
    log = rollout_log.read(tmp_path / "out").to_pylist()
    groups: dict[tuple, list[dict]] = {}
    for r in log:
        groups.setdefault((r["step"], r["round"], r["group"]), []).append(r)
    assert {k[0] for k in groups} == {1, 2} and all(len(rows) == 4 for rows in groups.values())
    if dynamic:
        assert len(groups) >= 4  # every round's groups are logged, trained or dropped
    else:
        assert len(groups) == 4
    spread = []
    for rows in groups.values():
        assert len({r["prompt"] for r in rows}) == 1
        paid = [r["reward/length.relative"] for r in rows]
        assert paid == pytest.approx(kimi([len(r["completion"]) for r in rows]), abs=1e-6)
        spread.append(max(paid) - min(paid))
        assert [r["reward/test.group_size"] for r in rows] == [4.0] * 4
    assert sum(s == pytest.approx(1.0) for s in spread) >= 3  # 0.5 for each group's shortest, -0.5 its longest
    # called once per group of num_generations, never on the flat batch of 8
    assert set(SIZES) == {4} and len(SIZES) == len(groups)
