"""A reward that raises or returns garbage on some items costs those items, not
the run: they score None and are counted; only a high failure share over a
window stops training, with a checkpoint of the last completed step."""

from __future__ import annotations

import json
import math
import types

import pytest

import grpo_core
from grpo_core.rewards.policy import AsyncGuardedReward, GuardedReward, RewardFailure
from grpo_core.rewards.reward import Reward

from .conftest import TINY


def scores_of(values):
    """A reward returning ``values`` (cycled) for any batch."""

    def reward(completions, **kwargs):
        return [values[i % len(values)] for i in range(len(completions))]

    return reward


def raising_on(marker):
    def reward(completions, **kwargs):
        out = []
        for c in completions:
            if marker in c:
                raise ValueError(f"cannot score {c!r}")
            out.append(float(len(c)))
        return out

    return reward


def guarded(func, **kw):
    logged = []
    g = GuardedReward(Reward("test.r", func), source="plugin 'p' (distribution d)", log=logged.append, **kw)
    return g, logged


def test_an_item_that_raises_scores_none_and_the_others_keep_their_scores():
    g, logged = guarded(raising_on("!"))
    metrics = []
    out = g(completions=["ab", "x!", "abcd", "!!"], answer=["1", "2", "3", "4"],
            log_metric=lambda name, value: metrics.append((name, value)))
    assert out == [2.0, None, 4.0, None]
    # two items failed, none ran past the time limit; the call's wall time is logged too
    assert metrics[:2] == [("rewards/test.r/errors", 2.0), ("rewards/test.r/timeouts", 0.0)]
    assert metrics[2][0] == "rewards/test.r/seconds" and metrics[2][1] >= 0
    # logged once, with the exception and its traceback, naming the plugin
    assert len(logged) == 1
    assert "raised ValueError: cannot score 'x!'" in logged[0] and "plugin 'p' (distribution d)" in logged[0]
    assert "Traceback" in logged[0]
    g(completions=["!"], log_metric=lambda *a: None)
    assert len(logged) == 1 and g.errors == 3


@pytest.mark.parametrize(
    "values, expected",
    [(["1.0", 0.5], [None, 0.5, None]),  # a string is not a score
     ([["high"], 1], [None, 1.0, None]),
     ([math.nan, 2], [None, 2.0, None]),
     ([math.inf, -1], [None, -1.0, None]),
     ([True, 0.0], [None, 0.0, None]),  # a bool is a bug, not a score
     ([None, 3], [None, 3.0, None])],  # None is a valid "no opinion", not an error
)
def test_values_that_are_not_finite_numbers_score_none(values, expected):
    g, logged = guarded(scores_of(values))
    assert g(completions=["a", "b", "c"]) == expected
    failed = sum(v is None for v in expected) if values[0] is not None else 0
    assert g.errors == failed and (len(logged) == 1) == (failed > 0)


def test_a_wrong_number_of_scores_fails_the_whole_batch():
    g, logged = guarded(lambda completions, **kw: [1.0])
    assert g(completions=["a", "b", "c"]) == [None, None, None]
    assert "returned 1 scores for 3 completions" in logged[0]


def test_numpy_scalars_are_scores():
    np = pytest.importorskip("numpy")
    g, _ = guarded(scores_of([np.float32(0.5), np.int64(2)]))
    assert g(completions=["a", "b"]) == [0.5, 2.0]


def test_too_many_failures_over_the_window_stop_with_the_reward_and_its_plugin():
    g, _ = guarded(raising_on("!"), window=2, max_share=0.2)
    g(completions=["!", "a", "b", "c"])  # 1 of 4 after one batch: the window is not full yet
    with pytest.raises(RewardFailure) as info:
        g(completions=["!", "a", "b", "c"])  # 2 of 8 = 25 % > 20 %
    msg = str(info.value)
    assert "reward 'test.r' from plugin 'p' (distribution d) failed on 2 of 8 completions" in msg
    assert "health.max_reward_errors 0.2" in msg


def test_async_rewards_get_the_same_policy():
    import asyncio

    async def reward(completions, **kwargs):
        if any("!" in c for c in completions):
            raise RuntimeError("no")
        return [1.0] * len(completions)

    g = AsyncGuardedReward(Reward("test.a", reward), log=lambda m: None)
    assert asyncio.run(g(completions=["a", "!", "b"])) == [1.0, None, 1.0]


# ------------------------------------------------------------------ in training


FLAKY = {"step": None, "singles": 0}


def flaky(completions, trainer_state=None, **kwargs):
    """Fails a whole batch, and the second completion of each step when scored alone."""
    if not completions:  # the empty probe when the reward is bound
        return []
    if trainer_state is None:  # grpo check scores outside training: no step to be flaky in
        return [0.5] * len(completions)
    if FLAKY["step"] != trainer_state.global_step:
        FLAKY.update(step=trainer_state.global_step, singles=0)
    FLAKY["singles"] += len(completions) == 1
    if len(completions) > 1 or FLAKY["singles"] == 2: raise RuntimeError("flaky service")  # noqa: E701
    return [0.5]


def broken_from_step_3(completions, trainer_state=None, **kwargs):
    if trainer_state is not None and trainer_state.global_step >= 2:
        raise RuntimeError("broken since step 3")
    return [0.5 for _ in completions]


@pytest.fixture
def failing_rewards(register_plugin):
    FLAKY.update(step=None, singles=0)
    mod = types.ModuleType("failing_rewards")

    @grpo_core.hookimpl
    def register_rewards(register):
        register("test.flaky", flaky)
        register("test.broken", broken_from_step_3)

    mod.register_rewards = register_rewards
    register_plugin(mod, name="failing_rewards")


def test_a_flaky_reward_costs_its_items_not_the_run(grpo, failing_rewards, tmp_path):
    code, out, err = grpo(TINY, "--max_steps", "2", "--rewards", "test.digits", "test.flaky:0",
                          "--health.max_reward_errors", "0.9")
    assert code == 0, out + err
    assert (out + err).count("raised RuntimeError: flaky service") == 1  # once per kind
    steps = [json.loads(x) for x in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in steps if "reward" in r]
    # 4 completions a step: the batch call raises, then each is scored alone and the
    # second of them raises again: one lost item per step, the other three score 0.5
    assert [r["rewards/test.flaky/errors"] for r in steps] == [1.0, 1.0]
    assert all(r["rewards/test.flaky/mean"] == 0.5 for r in steps)


def test_a_reward_broken_mid_run_stops_with_a_checkpoint_and_the_resume_line(grpo, failing_rewards, tmp_path):
    code, out, err = grpo(TINY, "--max_steps", "6", "--rewards", "test.digits", "test.broken:0",
                          "--health.window", "2")
    text = out + err
    assert code == 2, text
    # window of 2 batches: step 2 scored 4 of 4, step 3 failed 4 of 4: 50 % > 20 %
    assert "reward 'test.broken' from plugin 'failing_rewards' failed on 4 of 8 completions" in text
    run = tmp_path / "out"
    # the run stopped while scoring step 3, after step 2 completed
    assert "checkpoint-2 (step 2, the last completed step)" in text and "--resume" in text
    assert (run / "checkpoint-2" / "adapter_model.safetensors").is_file()
    assert "Traceback" not in err.split("error:")[-1]  # one clean message, no TRL traceback at the end


# a third-party reward in a local file: raises on every third call (a flaky service), and
# notes each call in calls.jsonl (step None: grpo check, before training)
EVERY_THIRD = '''
import json
from pathlib import Path

CALLS = []


def flaky(completions, trainer_state=None, **kwargs):
    """The share of digits; raises on every third call."""
    if not completions:  # the empty probe when the reward is bound
        return []
    CALLS.append(len(completions))
    raised = len(CALLS) % 3 == 0
    step = None if trainer_state is None else trainer_state.global_step + 1
    with open(Path(__file__).with_name("calls.jsonl"), "a") as log:
        log.write(json.dumps({"step": step, "items": len(completions), "raised": raised}) + "\\n")
    if raised:
        raise ValueError(f"flaky service: cannot score call {len(CALLS)}")
    return [sum(ch.isdigit() for ch in c) / max(len(c), 1) for c in (x if isinstance(x, str) else x[0]["content"]
                                                                       for x in completions)]
'''


def lost_items(calls: list[dict], step) -> int:
    """Items a guarded reward loses: a batch that raises is scored again item by item,
    and the single items that raise again are lost (batches here are larger than one)."""
    return sum(1 for c in calls if c["step"] == step and c["raised"] and c["items"] == 1)


def test_a_local_reward_raising_on_every_third_call_costs_items_in_the_check_and_training(grpo, tmp_path,
                                                                                          monkeypatch):
    """grpo check calls the rewards through training's failure policy: the reward's error
    (a crash before training, once) costs the items it raised on in the check too, is
    counted per step in metrics.jsonl and named once for the whole run."""
    (tmp_path / "my_rewards.py").write_text(EVERY_THIRD)
    monkeypatch.chdir(tmp_path)
    code, out, err = grpo(TINY, "--max_steps", "4", "--rewards", "test.digits", "my_rewards.py:flaky")
    text = out + err
    assert code == 0, text
    assert "Done: 4 steps" in text
    calls = [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]
    in_check = lost_items(calls, None)
    assert any(c["step"] is None and c["raised"] and c["items"] > 1 for c in calls)  # the check hit a raise
    assert in_check > 0 and f"flaky failed on {in_check} of " in text  # the check's summary line says so
    steps = [json.loads(x) for x in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    errors = {r["step"]: r["rewards/flaky/errors"] for r in steps if "rewards/flaky/errors" in r}
    assert errors == {s: float(lost_items(calls, s)) for s in (1, 2, 3, 4)}
    assert sum(errors.values()) > 0  # four steps of one 4-item call each: at least one raised again alone
    # named once for the run: in the check, with its traceback, not again in training
    assert text.count("raised ValueError: flaky service") == 1 and text.count("Traceback") == 1
    assert text.index("raised ValueError") < text.index("grpo check: ok")
