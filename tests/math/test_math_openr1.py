"""open-r1's accuracy, cosine and length rewards, resolved through grpo_core.rewards.openr1_rewards as a
recipe names them: the values open-r1's own tests assert (tests/test_rewards.py at 1416fa0),
worked out by hand, and where ours differ on purpose."""

from __future__ import annotations

import inspect

import pytest

import grpo_rewards_math
from grpo_core.contract import RewardContract
from grpo_core.rewards.openr1_rewards import OPENR1_REWARDS

MATH_SIDE = ["accuracy", "cosine", "length"]
RIGHT = r"\boxed{\frac{63}{400}}"  # 22 characters
WRONG = r"\boxed{\frac{64}{400}}"
GOLD = r"\frac{63}{400}"


def msg(text):
    return [{"role": "assistant", "content": text}]


@pytest.fixture
def openr1(register_plugin):
    """``openr1(name, **fields)``: our reward for an open-r1 name, its fields set as a recipe would."""
    from grpo_core import get_reward

    register_plugin(grpo_rewards_math)
    return lambda name, **fields: get_reward(OPENR1_REWARDS[name].spec, **OPENR1_REWARDS[name].params_for(fields))


COLUMN = OPENR1_REWARDS["accuracy"].columns["solution"]


def score(r, completions, solution, **kwargs):
    """Call as TRL does, with open-r1's ``solution`` column under our name for it."""
    return r(completions=[msg(c) for c in completions], **{COLUMN: solution}, **kwargs)


def test_table_entries_name_our_rewards_and_their_parameters(openr1):
    for name in MATH_SIDE:
        entry = OPENR1_REWARDS[name]
        r = openr1(name)  # open-r1's defaults bind
        params = inspect.signature(r.func).parameters
        assert set(entry.params.values()) | set(entry.fixed) <= set(params), name
        assert entry.columns == {"solution": "answer"} and r.required_columns == ("answer",), name
        assert entry.note, f"{name}: the differences from open-r1 are written down"


def test_premise_lengths():
    assert len(RIGHT) == len(WRONG) == 22


# ---------------------------------------------------------------- accuracy


def test_accuracy_values_of_open_r1s_tests(openr1):
    r = openr1("accuracy")
    assert score(r, [RIGHT, WRONG], [GOLD, GOLD]) == [1.0, 0.0]
    assert score(r, [r"\boxed{3}"], ["6"]) == [0.0]


def test_accuracy_differences_on_purpose(openr1):
    r = openr1("accuracy")
    # open-r1 reads LaTeX only: plain "The answer is 42" and an <answer> block give it no answer (0.0)
    assert score(r, ["The answer is 42.", "<answer>42</answer>"], ["42", "42"]) == [1.0, 1.0]
    # a gold that cannot be parsed is no opinion in both (open-r1 before its #566 paid 1.0)
    assert score(r, [r"\boxed{answer}"], ["unparseable_latex"]) == [None]


# ---------------------------------------------------------------- cosine

# open-r1's test parameters: wrong answers from -1.0 (short) to -0.5 (long), right from 1.0 to 0.5
COSINE_TEST = dict(cosine_min_value_wrong=-1.0, cosine_max_value_wrong=-0.5, cosine_min_value_correct=0.5,
                   cosine_max_value_correct=1.0, cosine_max_len=100)


def test_cosine_values_of_open_r1s_tests(openr1):
    r = openr1("cosine", **COSINE_TEST)
    long_right, long_wrong = RIGHT + " " * 58, WRONG + " " * 58  # 80 characters
    # 22 characters: cos(0.22 pi) = 0.77051, 0.5 + 0.25 * 1.77051 = 0.94263 (open-r1: 0.943)
    # 80 characters: cos(0.80 pi) = -0.80902, 0.5 + 0.25 * 0.19098 = 0.54775 (open-r1: 0.547)
    # wrong: lo = -0.5, hi = -1.0: -0.5 - 0.25 * 1.77051 = -0.94263, -0.5 - 0.25 * 0.19098 = -0.54775
    # open-r1 counts characters even though TRL passes token ids: 5 ids each change nothing
    out = score(r, [RIGHT, long_right, WRONG, long_wrong], [GOLD] * 4, completion_ids=[[1] * 5] * 4)
    assert out == pytest.approx([0.94263, 0.54775, -0.94263, -0.54775], abs=1e-5)


def test_cosine_with_open_r1s_config_defaults(openr1):
    # configs.py: min_value_wrong 0.0 (not the function's -1.0), max_value_wrong -0.5, right 0.5..1.0,
    # max_len 1000. At 500 characters cos(pi / 2) = 0: right 0.5 + 0.25 = 0.75, wrong -0.5 + 0.25 = -0.25
    r = openr1("cosine")
    assert score(r, [RIGHT + " " * 478, WRONG + " " * 478], [GOLD] * 2) == pytest.approx([0.75, -0.25])


def test_cosine_differences_on_purpose(openr1):
    r = openr1("cosine")
    # 2000 characters, max_len 1000: ours holds max_len's value 0.5; open-r1's cos(2 pi) = 1 pays 1.0
    assert score(r, [RIGHT + " " * 1978], [GOLD]) == [0.5]
    assert score(r, [RIGHT], ["unparseable_latex"]) == [None]  # open-r1 pays 1.0


# ---------------------------------------------------------------- length (Kimi 1.5)

LONG_RIGHT, LONG_WRONG = RIGHT + "  " + "x" * 10, WRONG + "  " + "x" * 10  # 34 characters, open-r1's


def test_length_values_of_open_r1s_tests(openr1):
    r = openr1("length")
    # lambda = 0.5 - (L - 22) / (34 - 22): 0.5 at 22 characters, -0.5 at 34; wrong: min(0, lambda)
    assert score(r, [RIGHT, WRONG], [GOLD] * 2) == [0.0, 0.0]  # equal lengths
    assert score(r, [RIGHT, LONG_RIGHT], [GOLD] * 2) == [0.5, -0.5]
    assert score(r, [WRONG, LONG_WRONG], [GOLD] * 2) == [0.0, -0.5]
    assert score(r, [RIGHT, LONG_RIGHT, WRONG, LONG_WRONG], [GOLD] * 4) == [0.5, -0.5, 0.0, -0.5]


def test_length_in_between_and_unreadable_golds(openr1):
    r = openr1("length")
    mid = RIGHT + " " * 6  # 28 characters: lambda = 0.5 - 6 / 12 = 0.0
    assert score(r, [RIGHT, mid, LONG_WRONG], [GOLD] * 3) == [0.5, 0.0, -0.5]
    # an unreadable gold scores None (open-r1: counted correct, 0.5 here) but its 22 characters still
    # set the minimum: the 28-character answer gets 0.0, not 0.5
    assert score(r, [mid, RIGHT, LONG_RIGHT], [GOLD, "unparseable_latex", GOLD]) == [0.0, None, -0.5]


def test_length_normalises_over_the_call_or_per_prompt(register_plugin):
    from grpo_core import get_reward

    register_plugin(grpo_rewards_math)
    comps = [RIGHT, LONG_RIGHT, RIGHT + " " * 78, RIGHT + " " * 90]  # 22, 34, 100, 112 characters
    prompts = [msg("p1"), msg("p1"), msg("p2"), msg("p2")]
    batch = get_reward("math.kimi_length", unit="chars")
    # one call, min 22, max 112: 0.5 - (L - 22) / 90
    assert score(batch, comps, [GOLD] * 4, prompts=prompts) == pytest.approx(
        [0.5, 0.5 - 12 / 90, 0.5 - 78 / 90, -0.5])
    per_prompt = get_reward("math.kimi_length", unit="chars", group_by="prompt")
    assert score(per_prompt, comps, [GOLD] * 4, prompts=prompts) == [0.5, -0.5, 0.5, -0.5]
    # without prompts (grpo score) the call is one group
    assert score(per_prompt, comps, [GOLD] * 4) == score(batch, comps, [GOLD] * 4)


def test_length_counts_tokens_by_default(register_plugin):
    from grpo_core import get_reward

    register_plugin(grpo_rewards_math)
    r = get_reward("math.kimi_length")
    # 10, 15 and 20 tokens: 0.5, 0.0, -0.5 whatever the characters
    assert score(r, [LONG_RIGHT, RIGHT, RIGHT], [GOLD] * 3, completion_ids=[[1] * 10, [1] * 15, [1] * 20]) == [
        0.5, 0.0, -0.5]
    with pytest.raises(ValueError, match="group_by must be 'batch' or 'prompt', got 'group'"):
        grpo_rewards_math.kimi_length([RIGHT], [GOLD], group_by="group")
    with pytest.raises(ValueError, match="unit must be one of auto, chars, got 'words'"):
        grpo_rewards_math.kimi_length([RIGHT], [GOLD], unit="words")


class TestKimiLengthContract(RewardContract):
    reward = "math.kimi_length"
    plugin = grpo_rewards_math
    params = {"group_by": "prompt"}
