"""repetition.ngram, values worked out by hand and against TRL."""

from __future__ import annotations

import random

import pytest

from .shapes import chat


def test_trl_docstring_example(reward):
    r = reward("repetition.ngram", n=2)
    assert r(["", ""], completion_ids=[[1, 2, 3, 4], [5, 5, 5, 5, 5]]) == [0.0, -0.75]


@pytest.mark.parametrize(
    "text,n,expected",
    [
        ("a b a b a b", 2, -0.6),  # 5 bigrams, 2 unique: 1 - 2/5
        ("a b a b a b", 3, -0.5),  # 4 trigrams (aba, bab, aba, bab), 2 unique
        ("the cat sat", 3, 0.0),  # a single trigram
        ("a b", 3, 0.0),  # shorter than n
        ("", 3, 0.0),
        ("a a a a", 1, -0.75),  # 4 unigrams, 1 unique
        ("A a", 1, 0.0),  # case-sensitive
        ("x  x\n\tx", 1, pytest.approx(-2 / 3)),  # any whitespace separates words
    ],
)
def test_words_without_ids(reward, text, n, expected):
    r = reward("repetition.ngram", n=n)
    assert r([text]) == [expected]
    assert r([chat(text)]) == [expected]


def test_ids_take_priority_over_words(reward):
    r = reward("repetition.ngram", n=1)
    assert r(["a a a a"], completion_ids=[[1, 2, 3, 4]]) == [0.0]
    assert r(["a b c d"], completion_ids=[[9, 9]]) == [-0.5]


def test_max_penalty_scales(reward):
    assert reward("repetition.ngram", n=1, max_penalty=-0.5)(["a a a a"]) == [-0.375]
    assert reward("repetition.ngram", n=1, max_penalty=0.0)(["a a a a"]) == [0.0]


def test_default_n_is_3(reward):
    # trigrams of "a b c a b c": abc, bca, cab, abc -> 3 unique of 4.
    assert reward("repetition.ngram")(["a b c a b c"]) == [-0.25]


def test_matches_trl_on_random_ids(reward):
    from trl.rewards import get_repetition_penalty_reward

    rng = random.Random(0)
    ids = [[rng.randrange(6) for _ in range(rng.randrange(0, 40))] for _ in range(200)]
    for n, penalty in [(1, -1.0), (2, -0.5), (3, -1.0), (5, -2.0)]:
        ours = reward("repetition.ngram", n=n, max_penalty=penalty)([""] * len(ids), completion_ids=ids)
        theirs = get_repetition_penalty_reward(n, penalty)(completion_ids=ids)
        assert ours == pytest.approx(theirs), n


@pytest.mark.parametrize(
    "params,message",
    [({"max_penalty": 0.5}, "max_penalty must be <= 0"), ({"n": 0}, "n must be an integer >= 1")],
)
def test_parameter_errors(reward, params, message):
    with pytest.raises(ValueError, match=message):
        reward("repetition.ngram", **params)(["a"])
