"""repetition.ngram, values worked out by hand and against TRL."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
        ours = reward("repetition.ngram", n=n, max_penalty=penalty)(
            [""] * len(ids), completion_ids=ids
        )
        theirs = get_repetition_penalty_reward(n, penalty)(completion_ids=ids)
        assert ours == pytest.approx(theirs), n


@pytest.mark.parametrize(
    "params,message",
    [({"max_penalty": 0.5}, "max_penalty must be <= 0"), ({"n": 0}, "n must be an integer >= 1")],
)
def test_parameter_errors(reward, params, message):
    with pytest.raises(ValueError, match=message):
        reward("repetition.ngram", **params)(["a"])


small_alphabet = st.lists(st.integers(0, 5), min_size=0, max_size=400)
wide_values = st.lists(
    st.one_of(st.integers(0, 3), st.integers(0, 2**63 - 1)), min_size=0, max_size=400
)
hostile_items = st.lists(
    st.one_of(st.integers(-(2**70), 2**70), st.booleans(), st.floats(), st.text(max_size=2)),
    max_size=200,
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(small_alphabet, wide_values, hostile_items), st.integers(1, 8))
def test_numpy_and_python_counts_agree(items, n):
    """The fast path either declines (None) or counts exactly what the set of tuples counts."""
    from grpo_rewards_format.repetition import distinct_ngrams_numpy, distinct_ngrams_python

    if len(items) < n:
        return
    fast = distinct_ngrams_numpy(items, n)
    assert fast is None or fast == distinct_ngrams_python(items, n)


def test_fast_path_is_taken_for_long_token_lists():
    from grpo_rewards_format.repetition import distinct_ngrams_numpy

    rng = random.Random(1)
    ids = [rng.randrange(150_000) for _ in range(500)]  # Qwen-sized vocabulary
    assert distinct_ngrams_numpy(ids, 3) == len(set(zip(ids, ids[1:], ids[2:], strict=False)))
    # 150k needs 18 bits, 4-grams get 15: renumbered by rank (500 distinct values) to fit.
    four = set(zip(ids, ids[1:], ids[2:], ids[3:], strict=False))
    assert distinct_ngrams_numpy(ids, 4) == len(four)
    # 8-grams get 7 bits: 500 distinct values cannot fit, so it declines.
    assert distinct_ngrams_numpy(ids, 8) is None
    assert distinct_ngrams_numpy([1.0] * 500, 3) is None


def test_long_word_lists_match_the_definition(reward):
    words = ("alpha beta gamma delta " * 100 + "epsilon zeta").split()
    # 402 words, 400 trigrams: 4 distinct in the loop + 2 at the tail (g d e, d e z).
    text = " ".join(words)
    total = len(words) - 2
    expected = -(1 - 6 / total)
    assert reward("repetition.ngram")([text]) == [pytest.approx(expected)]
