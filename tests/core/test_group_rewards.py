"""Group rewards: called once per group of one prompt's completions, an ordinary TRL reward
function to everything else. Values worked out by hand from a reward that pays each
completion its rank by length within its group (0 = shortest)."""

from __future__ import annotations

import asyncio
import pickle
import types

import pytest

import grpo_core
from grpo_core.rewards.reward import Reward, compose_rewards

CALLS: list[list[str]] = []


def rank(completions, **kwargs):
    """Each completion's rank by length in its group (0 = shortest), and the group's size."""
    texts = [grpo_core.completion_text(c) for c in completions]
    CALLS.append(texts)
    order = sorted(texts, key=len)
    return [float(order.index(t)) for t in texts]


def sees(completions, answer, log_extra=None, log_metric=None, **kwargs):
    """Logs what it saw: the group's answers, one per completion, and the group size."""
    if log_extra is not None:
        log_extra("sees/answers", [f"{a}/{len(completions)}" for a in answer])
    return [float(len(completions))] * len(completions)


@pytest.fixture
def group_plugin(register_plugin):
    CALLS.clear()
    mod = types.ModuleType("groupy")
    mod.register_rewards = grpo_core.hookimpl(lambda register: (
        register("groupy.rank", rank, group=True),
        register("groupy.sees", sees, group=True),
        register("groupy.flat", rank)))
    register_plugin(mod, name="groupy")
    return mod


BATCH = ["aaa", "a", "aa", "aaaa", "bb", "b", "bbbb", "bbb"]  # two prompts, four completions each
PROMPTS = ["p"] * 4 + ["q"] * 4
RANKS = [2.0, 0.0, 1.0, 3.0, 1.0, 0.0, 3.0, 2.0]


def test_a_group_reward_is_called_once_per_group_of_trls_flat_batch(group_plugin):
    r = grpo_core.get_reward("groupy.rank")
    assert r.group and r.__name__ == "groupy.rank"
    CALLS.clear()
    assert r(completions=BATCH, prompts=PROMPTS, group_size=4) == RANKS
    assert CALLS == [BATCH[:4], BATCH[4:]]
    # as a flat reward the same function ranks the whole batch: 'aaa' is 5th shortest of 8
    assert grpo_core.get_reward("groupy.flat")(completions=BATCH)[:2] == [4.0, 0.0]


def test_group_sizes_from_a_list_the_prompts_and_their_errors(group_plugin):
    r = grpo_core.get_reward("groupy.rank")
    # [aaa, a, aa] and [aaaa, bb, b, bbbb, bbb] (a tie keeps its order: aaaa before bbbb)
    assert r(BATCH, group_size=[3, 5]) == [2.0, 0.0, 1.0, 3.0, 1.0, 0.0, 4.0, 2.0]
    assert r(BATCH, prompts=PROMPTS) == RANKS  # runs of one prompt
    assert r(BATCH) == [4.0, 0.0, 2.0, 6.0, 3.0, 1.0, 7.0, 5.0]  # no prompts: one group
    with pytest.raises(ValueError, match=r"batch of 8 completions is not whole groups of group_size = 3 "
                                         r"\(2 groups and 2 completions over\)"):
        r(BATCH, group_size=3)
    with pytest.raises(ValueError, match=r"group sizes \[3, 4\] add up to 7, but the batch has 8"):
        r(BATCH, group_size=[3, 4])
    # runs of one prompt, of any length: [aaa, a, aa, aaaa] [bb, b] [bbbb, bbb]
    assert r(BATCH, prompts=["p"] * 4 + ["q", "q", "r", "r"]) == [2.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, 0.0]


class _Trainer:
    """What a reward sees of TRL's trainer: ``log_metric`` is its bound method."""

    def __init__(self, num_generations, num_generations_eval=None, training=True):
        self.num_generations, self.num_generations_eval = num_generations, num_generations_eval
        self.model = types.SimpleNamespace(training=training)
        self.metrics = []

    def log_metric(self, name, value):
        self.metrics.append((name, value))


def test_in_training_the_group_size_is_the_trainers(group_plugin):
    r = grpo_core.get_reward("groupy.rank")
    # one prompt repeated over the whole batch: only the trainer knows it is two groups of 4
    assert r(BATCH, prompts=["p"] * 8, log_metric=_Trainer(4).log_metric) == RANKS
    assert r(BATCH, log_metric=_Trainer(4, num_generations_eval=2, training=False).log_metric) == [
        1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="not whole groups of num_generations = 3.*make per_device_train_batch_size "
                                         "x steps_per_generation a multiple of num_generations"):
        r(BATCH, log_metric=_Trainer(3).log_metric)


def test_columns_are_cut_per_group_and_log_extra_is_handed_on_once(group_plugin):
    logged = []
    r = grpo_core.get_reward("groupy.sees")
    assert r.required_columns == ("answer",)
    out = r(BATCH[:6], answer=list("uvwxyz"), group_size=[2, 4], log_extra=lambda k, v: logged.append((k, v)))
    assert out == [2.0, 2.0, 4.0, 4.0, 4.0, 4.0]
    assert logged == [("sees/answers", ["u/2", "v/2", "w/4", "x/4", "y/4", "z/4"])]


def test_a_group_reward_is_trls_to_the_rest_gates_weights_pickling(group_plugin):
    funcs, weights = compose_rewards(["groupy.flat:0", "groupy.rank:0.5 when groupy.flat >= 3"])
    gated = funcs[1]
    # the gate (flat rank over all 8: 4 0 2 6 3 1 7 5) holds for completions 0, 3, 4, 6, 7
    assert gated(BATCH, group_size=4) == [2.0, 0.0, 0.0, 3.0, 1.0, 0.0, 3.0, 2.0]
    assert weights == [0.0, 0.5]
    clone = pickle.loads(pickle.dumps(grpo_core.get_reward("groupy.rank")))
    assert clone.group and clone(BATCH, group_size=4) == RANKS


def test_group_size_is_not_passed_to_a_flat_reward(group_plugin):
    seen = {}

    def flat(completions, **kwargs):
        seen.update(kwargs)
        return [0.0] * len(completions)

    assert Reward("own.flat", flat)(["a", "b"], group_size=2, answer=["x", "y"]) == [0.0, 0.0]
    assert "group_size" not in seen and seen["answer"] == ["x", "y"]


def test_an_async_group_reward_awaits_its_groups(group_plugin):
    async def arank(completions, **kwargs):
        await asyncio.sleep(0)
        return rank(completions)

    r = Reward("own.arank", arank, group=True)
    assert asyncio.run(r(BATCH, group_size=4)) == RANKS


def test_a_group_reward_returning_the_wrong_count_for_a_group_is_named(group_plugin):
    r = Reward("own.short", lambda completions, **kw: [0.0], group=True)
    assert r(["a"], group_size=1) == [0.0]
    with pytest.raises(ValueError, match=r"group reward 'own.short' returned 1 values for a group of 4 completions "
                                         r"\(completions 0-3 of the batch\)"):
        r(BATCH, group_size=4)


def test_a_function_of_ones_own_is_a_group_reward_by_its_attribute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text(
        "def shortest(completions, **kwargs):\n"
        "    low = min(len(c) for c in completions)\n"
        "    return [1.0 if len(c) == low else 0.0 for c in completions]\n"
        "shortest.group = True\n")
    (funcs, _) = compose_rewards(["mine.py:shortest"])
    assert funcs[0].group
    assert funcs[0](BATCH, group_size=4) == [0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0]


def test_under_the_failure_policy_a_group_that_raises_costs_its_own_group(group_plugin):
    from grpo_core.rewards.policy import GuardedReward

    def picky(completions, **kwargs):
        if any("!" in c for c in completions):
            raise ValueError("no '!' please")
        return rank(completions)

    logged = []
    g = GuardedReward(Reward("own.picky", picky, group=True), log=logged.append)
    batch = ["aaa", "a", "a!", "aa", "bb", "b", "bbbb", "bbb"]
    assert g(completions=batch, group_size=4) == [None] * 4 + [1.0, 0.0, 3.0, 2.0]
    assert g.errors == 4 and len(logged) == 1 and "raised ValueError: no '!' please" in logged[0]
    # a batch that is not whole groups: every item fails, for that reason, said once
    assert g(completions=batch[:6], group_size=4) == [None] * 6
    assert "is not whole groups of group_size = 4" in logged[-1]
