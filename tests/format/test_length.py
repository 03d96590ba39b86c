"""length.ideal and length.soft_overlong, values worked out by hand and against TRL."""

from __future__ import annotations

import pytest

from .shapes import chat


@pytest.mark.parametrize(
    "length,expected",
    [(10, 0.0), (5, -0.5), (15, -0.5), (19, -0.9), (20, -1.0), (30, -1.0), (0, -1.0), (1, -0.9)],
)
def test_ideal_in_chars_without_ids(reward, length, expected):
    r = reward("length.ideal", target=10)
    text = "x" * length
    assert r([text]) == [pytest.approx(expected)]
    assert r([chat(text)]) == [pytest.approx(expected)]


def test_ideal_auto_uses_tokens_when_ids_are_given(reward):
    r = reward("length.ideal", target=10)
    # 100 characters but 8 tokens: tokens win.
    assert r(["x" * 100], completion_ids=[[1] * 8]) == [pytest.approx(-0.2)]
    assert r(["x" * 100, ""], completion_ids=[[1] * 10, [1] * 13]) == [0.0, pytest.approx(-0.3)]


def test_ideal_explicit_units(reward):
    ids = [[1] * 8]
    assert reward("length.ideal", target=10, unit="chars")(["x" * 12], completion_ids=ids) == [
        pytest.approx(-0.2)
    ]
    assert reward("length.ideal", target=10, unit="words")(["a b  c\nd e"], completion_ids=ids) == [
        pytest.approx(-0.5)
    ]
    tokens = reward("length.ideal", target=10, unit="tokens")
    assert tokens(["x" * 100], completion_ids=ids) == [pytest.approx(-0.2)]
    # Without ids, tokens are estimated as ceil(chars / 4).
    assert tokens(["x" * 20, "x" * 21, "x" * 40]) == [pytest.approx(-0.5), pytest.approx(-0.4), 0.0]


def test_ideal_default_target_is_200(reward):
    assert reward("length.ideal")(["x" * 200, "x" * 100]) == [0.0, -0.5]


def test_ideal_parameter_errors(reward):
    from grpo_core import RewardParamError

    with pytest.raises(RewardParamError, match="unit"):
        reward("length.ideal", unit="bytes")
    with pytest.raises(RewardParamError, match="target"):
        reward("length.ideal", target=2.5)
    with pytest.raises(ValueError, match="target must be a positive integer"):
        reward("length.ideal", target=0)(["x"])


def test_misaligned_completion_ids_are_an_error(reward):
    with pytest.raises(ValueError, match="completion_ids has 1 items but there are 2"):
        reward("length.ideal")(["a", "b"], completion_ids=[[1]])


@pytest.mark.parametrize(
    "tokens,expected",
    [
        (0, 0.0),
        (80, 0.0),
        (81, -0.05),
        (90, -0.5),
        (99, -0.95),
        (100, -1.0),
        (101, -1.0),
        (10_000, -1.0),
    ],
)
def test_soft_overlong_in_tokens(reward, tokens, expected):
    r = reward("length.soft_overlong", max_length=100, cache=20)
    # The text is irrelevant when ids are given.
    assert r(["short"], completion_ids=[[7] * tokens]) == [pytest.approx(expected)]


def test_soft_overlong_matches_trl(reward):
    from trl.rewards import get_soft_overlong_punishment

    ids = [[1] * n for n in range(0, 131)]
    texts = [""] * len(ids)
    for max_length, cache in [(100, 20), (100, 1), (50, 50), (128, 32)]:
        ours = reward("length.soft_overlong", max_length=max_length, cache=cache)(
            texts, completion_ids=ids
        )
        theirs = get_soft_overlong_punishment(max_length, cache)(completion_ids=ids)
        assert ours == pytest.approx(theirs), (max_length, cache)


def test_soft_overlong_hard_cut_with_zero_cache(reward):
    r = reward("length.soft_overlong", max_length=100, cache=0)
    assert r(["", ""], completion_ids=[[1] * 100, [1] * 101]) == [0.0, -1.0]


def test_soft_overlong_estimates_tokens_without_ids(reward):
    r = reward("length.soft_overlong", max_length=100, cache=20)
    # 357..360 chars -> 90 tokens, 320 chars -> 80 tokens, 401 chars -> 101 tokens.
    assert r(["x" * 357, "x" * 360, chat("x" * 320), "x" * 401]) == [-0.5, -0.5, 0.0, -1.0]


def test_soft_overlong_defaults(reward):
    # max_length=512 (GRPOConfig.max_completion_length), cache=128: starts at 384.
    r = reward("length.soft_overlong")
    assert r([""] * 3, completion_ids=[[1] * 384, [1] * 448, [1] * 513]) == [0.0, -0.5, -1.0]


@pytest.mark.parametrize(
    "params,message",
    [
        ({"max_length": 0}, "max_length must be > 0"),
        ({"max_length": 10, "cache": 11}, "cache must be between 0 and max_length=10"),
        ({"cache": -1}, "cache must be between"),
    ],
)
def test_soft_overlong_parameter_errors(reward, params, message):
    with pytest.raises(ValueError, match=message):
        reward("length.soft_overlong", **params)(["x"])


def test_relative_pays_each_group_by_its_own_shortest_and_longest(reward):
    """Kimi k1.5: 0.5 - (L - min) / (max - min) per group of one prompt's completions."""
    r = reward("length.relative")
    assert r.group
    # group of "a": lengths 2, 4, 6, 10 -> spread 8: 0.5, 0.25, 0.0, -0.5
    # group of "b": lengths 5, 5, 5, 5 -> all equal: 0.0
    completions = ["x" * n for n in (2, 4, 6, 10)] + ["y" * 5] * 4
    prompts = ["a"] * 4 + ["b"] * 4
    assert r(completions, prompts=prompts) == [0.5, 0.25, 0.0, -0.5, 0.0, 0.0, 0.0, 0.0]
    # the same completions as groups of 4 by size, and the second group alone: its own values
    assert r(completions, group_size=4) == [0.5, 0.25, 0.0, -0.5, 0.0, 0.0, 0.0, 0.0]
    assert r(completions[:4], prompts=prompts[:4]) == [0.5, 0.25, 0.0, -0.5]
    # as one group of 8: min 2, max 10 -> the y's (5) get 0.5 - 3/8
    assert r(completions, group_size=8) == [0.5, 0.25, 0.0, -0.5] + [0.125] * 4


def test_relative_measures_tokens_when_ids_are_given(reward):
    r = reward("length.relative")
    # 100 vs 1 characters, but 3 vs 9 tokens: tokens decide
    assert r(["x" * 100, "y", "z" * 50], completion_ids=[[1] * 3, [1] * 9, [1] * 6]) == [0.5, -0.5, 0.0]
    assert reward("length.relative", unit="words")(["a b c", "a", "a b"]) == [-0.5, 0.5, 0.0]
    assert r([chat("x" * 3), chat("x")]) == [-0.5, 0.5]
