"""format.xml_strict / xml_soft / xml_incremental / think_answer, values worked out by hand."""

from __future__ import annotations

import pytest

from .shapes import chat

GOOD = "<think>a</think><answer>b</answer>"
T20 = "x" * 20  # exactly min_think_chars


def score(reward, name, texts, **params):
    """Score plain and conversational shapes; they must agree."""
    r = reward(name, **params)
    plain = r(completions=list(texts))
    convo = r(completions=[chat(t) for t in texts])
    assert plain == convo, (name, texts)
    return plain


STRICT = [
    (GOOD, 1.0),
    ("  \n<think>\nreason\n</think>\n\n<answer>\n42\n</answer>\n", 1.0),
    ("<think></think><answer></answer>", 1.0),  # empty blocks: structure only
    ("\u3000<think>a</think>\u2003<answer>b</answer>\t", 1.0),  # unicode whitespace
    ("Sure! " + GOOD, 0.0),  # text before
    (GOOD + " done", 0.0),  # trailing text
    ("<think>a</think> so <answer>b</answer>", 0.0),  # text between the blocks
    ("<answer>b</answer><think>a</think>", 0.0),  # wrong order
    ("<think>a<think>b</think><answer>c</answer>", 0.0),  # duplicated <think>
    ("<think>a</think></think><answer>c</answer>", 0.0),  # duplicated </think>
    (GOOD + "<answer>c</answer>", 0.0),  # second answer block
    ("<think>a</think><answer>b</answer></answer>", 0.0),  # duplicated </answer>
    ("<think>a</think><answer>b", 0.0),  # unclosed answer
    ("<think>a<answer>b</answer></think>", 0.0),  # answer nested in think
    ("<think>a</think><answer><think>b</answer>", 0.0),
    ("<THINK>a</THINK><answer>b</answer>", 0.0),  # case-sensitive
    ("<answer>b</answer>", 0.0),
    ("", 0.0),
]


@pytest.mark.parametrize("text,expected", STRICT)
def test_xml_strict(reward, text, expected):
    assert score(reward, "format.xml_strict", [text]) == [expected]


def test_xml_strict_scores_a_batch_in_order(reward):
    texts = [t for t, _ in STRICT]
    assert score(reward, "format.xml_strict", texts) == [v for _, v in STRICT]


SOFT = [
    (GOOD, 1.0),
    ("Sure. <think>a</think> then <answer>b</answer> bye", 1.0),
    ("<think>a</think><think>b</think><answer>c</answer>", 1.0),  # repeats allowed
    ("<answer>x</answer><think>a</think><answer>b</answer>", 1.0),
    ("</think><think>a</think>\n<answer>b</answer>", 1.0),
    ("<think></think><answer></answer>", 1.0),
    ("<answer>b</answer><think>a</think>", 0.0),  # wrong order
    ("<think>a<answer>b</answer></think>", 0.0),  # no answer block after </think>
    ("<think>a</think>", 0.0),
    ("<think>a</think><answer>b", 0.0),
    ("<think>a<answer>b</answer>", 0.0),  # no </think>
    ("", 0.0),
]


@pytest.mark.parametrize("text,expected", SOFT)
def test_xml_soft(reward, text, expected):
    assert score(reward, "format.xml_soft", [text]) == [expected]


INCREMENTAL = [
    (GOOD, 1.0),
    (GOOD + "\n\n", 1.0),  # whitespace after </answer> is free
    (GOOD + " extra", 0.995),  # "extra": 5 chars * 0.001
    (GOOD + "\nabc def\n", 0.993),  # "abc def": 7 chars (inner space counts)
    ("<think>a</think><think>b</think><answer>c</answer>", 0.5),  # think tags twice: no credit
    ("<think>a</think><answer>b", 0.75),  # no </answer>: no penalty either
    ("<answer>x</answer>", 0.5),
    ("<answer>b</answer><think>a</think>", 0.984),  # order not checked; 16 trailing chars
    ("<think>a</think><answer>b</answer>zz</answer>yy", 0.748),  # 3 tags once; tail after last
    ("<answer>x</answer>" + "y" * 1000, 0.0),  # 0.5 - 1.0, clamped at 0
    ("no tags at all", 0.0),
    ("", 0.0),
]


@pytest.mark.parametrize("text,expected", INCREMENTAL)
def test_xml_incremental(reward, text, expected):
    assert score(reward, "format.xml_incremental", [text]) == [pytest.approx(expected)]


def test_xml_incremental_penalty_is_a_parameter(reward):
    texts = [GOOD + "abc", GOOD + "x" * 200]
    assert score(reward, "format.xml_incremental", texts, trailing_penalty=0.01) == [
        pytest.approx(0.97),
        0.0,  # 1 - 2.0 clamped
    ]
    assert score(reward, "format.xml_incremental", texts, trailing_penalty=0.0) == [1.0, 1.0]


def test_xml_incremental_rejects_a_negative_penalty(reward):
    with pytest.raises(ValueError, match="trailing_penalty must be >= 0"):
        reward("format.xml_incremental", trailing_penalty=-0.1)([GOOD])


THINK_ANSWER = [
    (f"<think>{T20}</think><answer>42</answer>", 1.0),
    (f"Let me see. <think>{T20}</think> <answer>7</answer> done", 1.0),  # text outside ok
    (f"<think>{'x' * 19}</think><answer>42</answer>", 0.5),  # think one char short
    (f"<think>  \n{'x' * 19}\n  </think><answer>42</answer>", 0.5),  # whitespace not counted
    (f"<think>{T20}</think><answer> \n </answer>", 0.5),  # blank answer
    ("<think></think><answer></answer>", 0.5),
    (f"<think>{T20}</think><think>x</think><answer>7</answer>", 0.0),  # duplicated block
    (f"<think>{T20}</think><answer>7</answer><answer>8</answer>", 0.0),
    (f"<answer>7</answer><think>{T20}</think>", 0.0),  # wrong order
    (f"<think>{T20}<answer>7</answer></think>", 0.0),  # answer inside think
    (f"<think>{T20}</think>7", 0.0),  # no answer block
    ("", 0.0),
]


@pytest.mark.parametrize("text,expected", THINK_ANSWER)
def test_think_answer(reward, text, expected):
    assert score(reward, "format.think_answer", [text]) == [expected]


def test_think_answer_min_think_chars(reward):
    texts = ["<think></think><answer>7</answer>", "<think>abcd</think><answer>7</answer>"]
    assert score(reward, "format.think_answer", texts, min_think_chars=0) == [1.0, 1.0]
    assert score(reward, "format.think_answer", texts, min_think_chars=5) == [0.5, 0.5]
    assert score(reward, "format.think_answer", texts, min_think_chars=4) == [0.5, 1.0]
    with pytest.raises(ValueError, match="min_think_chars"):
        reward("format.think_answer", min_think_chars=-1)(texts)


CUSTOM = {"think_tag": "reasoning", "answer_tag": "solution"}
CUSTOM_GOOD = f"<reasoning>{T20}</reasoning>\n<solution>42</solution>"


@pytest.mark.parametrize(
    "name,expected_custom,expected_default",
    [
        ("format.xml_strict", 1.0, 0.0),
        ("format.xml_soft", 1.0, 0.0),
        ("format.xml_incremental", 1.0, 0.0),
        ("format.think_answer", 1.0, 0.0),
    ],
)
def test_custom_tag_names(reward, name, expected_custom, expected_default):
    default_good = f"<think>{T20}</think><answer>42</answer>"
    assert score(reward, name, [CUSTOM_GOOD, default_good], **CUSTOM) == [expected_custom, 0.0]
    assert score(reward, name, [CUSTOM_GOOD]) == [expected_default]
    # Tags may be written with their brackets.
    assert score(reward, name, [CUSTOM_GOOD], think_tag="<reasoning>", answer_tag="<solution>") == [
        expected_custom
    ]


def test_custom_tags_by_spec_string(register_plugin):
    import grpo_rewards_format
    from grpo_core import compose_rewards

    register_plugin(grpo_rewards_format)
    funcs, weights = compose_rewards(
        ["format.xml_strict(think_tag='reasoning', answer_tag='solution'):2"]
    )
    assert weights == [2.0]
    assert funcs[0]([CUSTOM_GOOD, GOOD]) == [1.0, 0.0]


@pytest.mark.parametrize(
    "params,message",
    [
        ({"think_tag": ""}, "think_tag must be a tag name"),
        ({"answer_tag": "a b"}, "answer_tag must be a tag name"),
        ({"think_tag": "x>y"}, "think_tag must be a tag name"),
        ({"think_tag": "same", "answer_tag": "same"}, "must differ"),
    ],
)
@pytest.mark.parametrize(
    "name",
    ["format.xml_strict", "format.xml_soft", "format.xml_incremental", "format.think_answer"],
)
def test_bad_tag_names_are_errors(reward, name, params, message):
    with pytest.raises(ValueError, match=message):
        reward(name, **params)([GOOD])


def test_conversational_completion_uses_assistant_text(reward):
    r = reward("format.xml_strict")
    convo = [{"role": "assistant", "content": [{"type": "text", "text": GOOD}]}]
    assert r(completions=[convo, [], None]) == [1.0, 0.0, 0.0]
