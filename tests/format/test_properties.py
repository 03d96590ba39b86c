"""Property tests: arbitrary unicode, tag soup and very long text never break a reward.

For every reward (default and non-default parameters): no exception, one float
per completion, every value inside the range its docstring documents, and the
plain and conversational shapes of a completion score the same. Batches have at
least MIN_BATCH completions, so the suite scores at least
len(CASES) * EXAMPLES * MIN_BATCH (> 10 000) generated completions.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .shapes import chat

EXAMPLES = 200
MIN_BATCH = 5
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

FRAGMENTS = [
    "<think>", "</think>", "<answer>", "</answer>", "<reasoning>", "</solution>",
    "<think", "think>", "</", "<", ">", "```json", "```JSON ", "```", "{", "}", "[", "]",
    '"k"', ":", ",", "1", "-2.5e3", "null", "NaN", "\n", " ", "\t", "\u3000", "\u200b",
    "\U0001d7d8", "\ud7ff", "é", "x" * 30, "word ", "\x00",
]  # fmt: skip

tag_soup = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=8)), max_size=40).map(
    "".join
)
# Long text without a long draw: a short piece repeated up to ~150 000 characters.
long_text = st.builds(
    lambda piece, times: piece * times,
    st.one_of(st.text(min_size=1, max_size=50), tag_soup.filter(bool)),
    st.integers(min_value=100, max_value=3000),
)
text = st.one_of(st.text(), tag_soup, long_text)


@st.composite
def batches(draw):
    """(plain texts, completions in either shape, completion_ids or None)."""
    texts = draw(st.lists(text, min_size=MIN_BATCH, max_size=10))
    completions = [t if draw(st.booleans()) else chat(t) for t in texts]
    ids = None
    if draw(st.booleans()):
        ids = [draw(st.lists(st.integers(0, 20), max_size=700)) for _ in texts]
    return texts, completions, ids


def in_set(*allowed):
    return lambda v, params: v in allowed


def in_interval(lo, hi):
    return lambda v, params: lo <= v <= hi


CASES = [
    ("format.xml_strict", {}, in_set(0.0, 1.0)),
    ("format.xml_soft", {"think_tag": "reasoning", "answer_tag": "solution"}, in_set(0.0, 1.0)),
    ("format.xml_incremental", {}, in_interval(0.0, 1.0)),
    ("format.xml_incremental", {"trailing_penalty": 0.5}, in_interval(0.0, 1.0)),
    ("format.think_answer", {"min_think_chars": 3}, in_set(0.0, 0.5, 1.0)),
    ("format.json", {}, in_set(0.0, 1.0)),
    ("format.json", {"schema": {"type": "object"}, "max_chars": 2000}, in_set(0.0, 0.5, 1.0)),
    ("length.ideal", {"target": 50}, in_interval(-1.0, 0.0)),
    ("length.ideal", {"target": 7, "unit": "words"}, in_interval(-1.0, 0.0)),
    ("length.soft_overlong", {"max_length": 100, "cache": 30}, in_interval(-1.0, 0.0)),
    (
        "repetition.ngram",
        {"n": 2, "max_penalty": -0.5},
        lambda v, params: params["max_penalty"] <= v <= 0.0,
    ),
]
assert len(CASES) * EXAMPLES * MIN_BATCH >= 10_000


@pytest.mark.parametrize("name,params,in_range", CASES, ids=[f"{c[0]}{c[1]}" for c in CASES])
def test_any_text_scores_inside_the_documented_range(reward, name, params, in_range):
    r = reward(name, **params)
    scored = []

    @SETTINGS
    @given(batches())
    def check(batch):
        texts, completions, ids = batch
        scored.append(len(completions))
        values = r(completions=completions, completion_ids=ids)
        assert len(values) == len(completions)
        for v in values:
            assert type(v) is float and math.isfinite(v), v
            assert in_range(v, params), (name, params, v)
        # The shape of a completion never changes its score.
        assert r(completions=texts, completion_ids=ids) == values

    check()
    assert sum(scored) >= EXAMPLES * MIN_BATCH


def test_the_xml_rewards_agree_with_each_other(reward):
    """strict => soft and incremental == 1.0 (nothing trails); think_answer > 0 => soft;
    with each tag exactly once, think_answer > 0 <=> soft."""
    strict, soft = reward("format.xml_strict"), reward("format.xml_soft")
    incremental = reward("format.xml_incremental")
    content = reward("format.think_answer", min_think_chars=0)

    @SETTINGS
    @given(st.lists(text, min_size=MIN_BATCH, max_size=10))
    def check(texts):
        rows = zip(
            texts, strict(texts), soft(texts), incremental(texts), content(texts), strict=True
        )
        for t, s, so, inc, c in rows:
            if s == 1.0:
                assert so == 1.0 and inc == 1.0 and c > 0.0, t
            if c > 0.0:
                assert so == 1.0, t
            if all(t.count(tag) == 1 for tag in ("<think>", "</think>", "<answer>", "</answer>")):
                assert (c > 0.0) == (so == 1.0), t

    check()
