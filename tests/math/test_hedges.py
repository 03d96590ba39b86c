"""A hedge is never paid: an answer that offers more than one candidate scores 0
against either of them, in every spelling (math.correctness's docstring lists them)."""

from __future__ import annotations

import pytest

from grpo_rewards_math import correctness
from grpo_rewards_math.rewards import HEDGES

COMMITTED = [  # controls: one answer, however written, is paid
    r"\boxed{73}",
    r"$\boxed{73}$",
    r"\boxed{73} so the answer is \boxed{73}",  # the same answer twice
    "The answer is 73.",
    "Answer: 73",
    "<answer>73</answer>",
    "#### 73",
    "so 7 + 66 = 73",  # with fallback_last_number
]


def test_there_are_at_least_twenty_hedge_spellings():
    assert len(HEDGES) >= 20 and len(set(HEDGES)) == len(HEDGES)


@pytest.mark.parametrize("gold", ["72", "73"])
def test_no_hedge_is_paid_against_either_candidate(gold):
    out = correctness(HEDGES, [gold] * len(HEDGES), fallback_last_number=True, workers=2)
    paid = [h for h, score in zip(HEDGES, out) if score]
    assert paid == []


def test_a_committed_answer_is_still_paid():
    assert correctness(COMMITTED, ["73"] * len(COMMITTED), fallback_last_number=True, workers=2) == [1.0] * len(COMMITTED)
