"""The reward contract suite catches the mistakes it promises to catch."""

from __future__ import annotations

import pytest

from grpo_core.contract import RewardContract, check_reward


def good(completions, **kwargs):
    return [float(len(str(c)) % 7) for c in completions]


def wrong_length(completions, **kwargs):
    return [0.0]


def strings(completions, **kwargs):
    return ["1.0" for _ in completions]


def fragile(completions, **kwargs):
    return [float(str(c).strip()[0] == "4") for c in completions]  # IndexError on ""


def nan_reward(completions, **kwargs):
    return [float("nan") for _ in completions]


def needs_answer(completions, answer, **kwargs):
    return [1.0 if str(c).strip() == a else 0.0 for c, a in zip(completions, answer)]


def failures(func):
    return {r.name: r.message for r in check_reward(func) if not r.ok}


def test_good_reward_passes_every_check():
    assert failures(good) == {}
    assert failures(needs_answer) == {}  # required column filled with a synthetic value


def test_wrong_length_is_caught():
    assert failures(wrong_length)["plain completions"] == "returned 1 values for 2 completions"


def test_non_float_values_are_caught():
    assert failures(strings)["plain completions"] == "value #0 is str '1.0', expected float or None"


def test_crash_on_hostile_text_is_caught():
    msg = failures(fragile)["hostile text"]
    assert msg.startswith("raised IndexError")


def test_nan_is_caught():
    assert "expected a finite float or None" in failures(nan_reward)["plain completions"]


def test_lambda_is_not_picklable():
    assert "picklable" in failures(lambda completions, **kw: [0.0] * len(completions))


class TestContractBaseClass(RewardContract):
    reward = staticmethod(good)


def test_base_class_fails_for_a_bad_reward():
    class Bad(RewardContract):
        reward = staticmethod(wrong_length)

    with pytest.raises(AssertionError, match="returned 1 values for 2 completions"):
        Bad().test_plain_completions()
