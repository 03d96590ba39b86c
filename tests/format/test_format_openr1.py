"""open-r1's format, tag_count, reasoning_steps, repetition_penalty and soft_overlong_punishment,
resolved through grpo_core.rewards.openr1_rewards as a recipe names them: the values open-r1's own
tests assert (tests/test_rewards.py at 1416fa0), and more worked out by hand."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grpo_rewards_format
from grpo_core.contract import RewardContract
from grpo_core.rewards.openr1_rewards import OPENR1_REWARDS

from .shapes import chat

FORMAT_SIDE = ["format", "tag_count", "reasoning_steps", "repetition_penalty", "soft_overlong_punishment"]


@pytest.fixture
def openr1(reward):
    """``openr1(name, **fields)``: our reward for an open-r1 name, its fields set as a recipe would."""
    return lambda name, **fields: reward(OPENR1_REWARDS[name].spec, **OPENR1_REWARDS[name].params_for(fields))


def test_table_entries_name_our_rewards_and_their_parameters(reward):
    for name in FORMAT_SIDE:
        entry = OPENR1_REWARDS[name]
        r = reward(entry.spec, **entry.params_for({}))  # open-r1's defaults bind
        params = inspect.signature(r.func).parameters
        assert set(entry.params.values()) | set(entry.fixed) <= set(params), name
        assert entry.columns == {} and r.required_columns == (), name


def test_table_covers_the_rewards_recipes_name_and_loads_no_plugin():
    # open-r1's rewards but its remote judges; accuracy, cosine and length are tests/math/test_math_openr1.py's,
    # code, binary_code and code_format tests/train/test_openr1_recipes.py's
    assert set(OPENR1_REWARDS) == set(FORMAT_SIDE) | {"accuracy", "cosine", "length", "code", "binary_code",
                                                      "code_format"}
    code = (
        "import sys, grpo_core.rewards.openr1_rewards\n"
        "loaded = [m for m in ('torch', 'trl', 'grpo_rewards_math', 'grpo_rewards_format') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_table_carries_open_r1_defaults():
    # configs.py: repetition_n_grams=3, repetition_max_penalty=-1.0, max_completion_len=16384,
    # soft_punish_cache=4096; open-r1 never passes a language, so its default "en" is fixed
    assert OPENR1_REWARDS["repetition_penalty"].params_for({}) == {"language": "en", "n": 3, "max_penalty": -1.0}
    assert OPENR1_REWARDS["soft_overlong_punishment"].params_for({"soft_punish_cache": 20}) == {
        "max_length": 16384, "cache": 20}


# ---------------------------------------------------------------- format

GOOD = "<think>\nSome reasoning\n</think>\n<answer>\nThe answer\n</answer>"
COUNTING = (
    "<think>\nI will count each distinct object in the image:\n1. Purple scooter\n2. Red bicycle\n"
    "3. Green motorcycle\n4. Gray sedan\n5. Yellow school bus\n6. Small green double-decker bus\n"
    "7. Small red car\n8. Small purple car\n9. Small gray dirt bike\n\nThere are 9 distinct objects in total.\n"
    "</think>\n<answer>\n9\n</answer>"
)
FORMAT = [
    (GOOD, 1.0),  # open-r1's tests
    (COUNTING, 1.0),
    ("<think>Only thinking</think>", 0.0),
    ("<answer>Only answer</answer>", 0.0),
    ("No tags at all", 0.0),
    ("<think>Missing closing</think><answer>Missing closing", 0.0),
    ("<think>Wrong order</answer><answer>Wrong order</think>", 0.0),
    # by hand: MULTILINE "$" also matches before a newline, so text on a later line passes...
    (GOOD + "\nP.S. more text", 1.0),
    (GOOD + "\n", 1.0),
    # ... but not on the same line, nor after "\r"
    (GOOD + " more text", 0.0),
    (GOOD + "\r\n", 0.0),
    # the lazy ".*?" runs across a first "</answer>" to a later one that ends a line
    (GOOD + " x\n</answer>", 1.0),
    (" " + GOOD, 0.0),  # "^" at the very start: no leading whitespace
    ("\n" + GOOD, 0.0),
    ("<think>\n</think>\n<answer>\n\n</answer>", 0.0),  # "<think>\n" and "\n</think>" need two newlines
    ("<think>\n\n</think>\n<answer>\n\n</answer>", 1.0),  # empty blocks on their own lines
    ("<think>\na\n</think>\n\n<answer>\nb\n</answer>", 0.0),  # a blank line between the blocks
    ("<think>\na\n</think>\n<answer>\nb</answer>", 0.0),  # "</answer>" not on its own line
    ("<think>\n<answer>\n</think>\n</think>\n<answer>\n42\n</answer>", 1.0),  # any text inside
]


@pytest.mark.parametrize("text,expected", FORMAT)
def test_format(openr1, text, expected):
    r = openr1("format")
    assert r([text]) == [expected]
    assert r([chat(text)]) == [expected]


def test_format_tag_names_are_parameters(reward):
    text = "<reasoning>\na\n</reasoning>\n<answer>\nb\n</answer>"
    assert reward("format.think_answer_r1", think_tag="reasoning")([text, GOOD]) == [1.0, 0.0]


# open-r1's regex, as its docstring and ours state it: the specification, read on short texts only
R1_REGEX = re.compile(r"^<think>\n.*?\n</think>\n<answer>\n.*?\n</answer>$", re.DOTALL | re.MULTILINE)
# pieces of the layout, whole and split at its seams, and the characters around them
PIECES = ["<think>\n", "\n</think>\n", "<answer>\n", "\n</think>\n<answer>\n", "\n</answer>", "</answer>", "\n",
          "\r", "x"]


def test_format_agrees_with_the_regex_on_every_text_of_up_to_six_pieces():
    import itertools

    from grpo_rewards_format.tags import is_r1_layout, r1_pieces

    pieces, seen, matched = r1_pieces(), set(), 0
    for n in range(7):
        for combo in itertools.product(PIECES, repeat=n):
            text = "".join(combo)
            if text in seen:
                continue
            seen.add(text)
            expected = R1_REGEX.match(text) is not None
            assert is_r1_layout(text, pieces) == expected, repr(text)
            matched += expected
    # both answers are well represented: the shortest match is three pieces ("<think>\n",
    # "\n</think>\n<answer>\n", "\n</answer>"), and thousands of six-piece texts contain one
    assert matched > 1000 and len(seen) - matched > 1000


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*PIECES, " ", "y\nz"]), max_size=4).map("".join),
       st.lists(st.sampled_from([*PIECES, " ", "y\nz"]), max_size=4).map("".join),
       st.sampled_from(["", "\n", "\nP.S.", " x", "\r\n", "\n</answer>"]),
       st.sampled_from([None, *range(0, 60, 3)]))
def test_format_agrees_with_the_regex_on_near_misses_of_the_layout(think, answer, tail, cut):
    """The layout around any text, kept whole or with one character dropped: about half match."""
    from grpo_rewards_format.tags import is_r1_layout, r1_pieces

    text = f"<think>\n{think}\n</think>\n<answer>\n{answer}\n</answer>{tail}"
    if cut is not None and cut < len(text):
        text = text[:cut] + text[cut + 1:]
    assert is_r1_layout(text, r1_pieces()) == (R1_REGEX.match(text) is not None), repr(text)


# ---------------------------------------------------------------- tag_count

TAG_COUNT = [
    (GOOD, 1.0),  # open-r1's tests: all four, then each one missing
    ("Some reasoning\n</think>\n<answer>\nThe answer\n</answer>", 0.75),
    ("<think>\nSome reasoning\n<answer>\nThe answer\n</answer>", 0.75),
    ("<think>\nSome reasoning\n</think>\nThe answer\n</answer>", 0.75),
    ("<think>\nSome reasoning\n</think>\n<answer>\nThe answer", 0.75),
    ("Some reasoning\nThe answer", 0.0),
    # by hand: tags without their newlines earn nothing; a piece found twice earns nothing
    ("<think>a</think><answer>b</answer>", 0.0),
    (GOOD + "\n<think>\n", 0.75),  # "<think>\n" twice
    ("\n</answer>\n</think>\n<answer>\n<think>\n", 1.0),  # order is not checked
]


@pytest.mark.parametrize("text,expected", TAG_COUNT)
def test_tag_count(openr1, text, expected):
    assert openr1("tag_count")([text, chat(text)]) == [expected, expected]


# ---------------------------------------------------------------- reasoning_steps

STEPS = [
    ("Step 1: First step\nStep 2: Second step\nStep 3: Third step", 1.0),  # open-r1's tests
    ("First, we do this.\nSecond, we do that.\nFinally, we conclude.", 1.0),
    ("Step 1: Only step", 1 / 3),
    ("First, we do this.\nFinally, we conclude.", 2 / 3),
    ("Just plain text without any clear steps", 0.0),
    # by hand: "^" is the start of the text, so only the first numbered line counts
    ("1. add\n2. carry\n3. done", 1 / 3),
    ("- a\n- b\n- c", 2 / 3),  # the first bullet has no newline before it
    ("intro\n* a\n* b\n* c", 1.0),
    ("first, second, next, finally,", 0.0),  # case-sensitive
    ("Step 1 then Step two: First Next", 0.0),  # "Step \d+:" and "Word," need their colon/comma
    ("Step 1:Step 2:Step 3:Step 4:Step 5:", 1.0),  # capped at 1
]


@pytest.mark.parametrize("text,expected", STEPS)
def test_reasoning_steps(openr1, text, expected):
    assert openr1("reasoning_steps")([text]) == [pytest.approx(expected)]


def test_reasoning_steps_min_steps(reward):
    r = reward("format.reasoning_steps", min_steps=2)
    assert r(["Step 1: x", "Step 1: x\nStep 2: y\nStep 3: z"]) == [0.5, 1.0]
    with pytest.raises(ValueError, match="min_steps must be an integer >= 1, got 0"):
        reward("format.reasoning_steps", min_steps=0)


# ---------------------------------------------------------------- repetition_penalty

REPETITION = [
    # open-r1's tests: (text, n, max_penalty, expected)
    ("this is a test sentence", 2, -1.0, 0.0),
    ("this this this this this", 2, -1.0, -0.75),  # 4 bigrams, 1 unique: (1 - 1/4) * -1
    ("this is a this is a test", 2, -1.0, -1 / 3),  # 6 bigrams, 4 unique
    ("this is a test", 3, -0.5, 0.0),
    ("test test test test", 3, -0.5, -0.25),  # 2 trigrams, 1 unique: (1 - 1/2) * -0.5
    ("", 2, -1.0, 0.0),
    ("this is a this is a test", 3, -2.0, -0.4),  # 5 trigrams, 4 unique: (1 - 4/5) * -2
    ("word", 3, -1.0, 0.0),
    ("two words", 3, -1.0, 0.0),
    ("three different words", 3, -1.0, 0.0),
    ("word word word word", 3, -1.0, -0.5),
    ("one two one two", 3, -1.0, 0.0),  # (one two one), (two one two): 2 of 2 unique
    ("A B C A B", 3, -0.5, 0.0),
    ("A B C A B C", 3, -1.0, -0.25),  # ABC BCA CAB ABC: 3 of 4 unique
    ("A B C A B C E F G A B C A B C", 3, -1.0, -5 / 13),  # 13 trigrams, 8 unique: -0.3846
    ("A B C D E F G H I J K L", 3, -1.0, 0.0),
    # by hand: lower-cased words, so "This this THIS" is one unigram three times: (1 - 1/3) * -1
    ("This this THIS", 1, -1.0, -2 / 3),
]


@pytest.mark.parametrize("text,n,max_penalty,expected", REPETITION)
def test_repetition_penalty(openr1, text, n, max_penalty, expected):
    r = openr1("repetition_penalty", repetition_n_grams=n, repetition_max_penalty=max_penalty)
    # open-r1 counts words even when TRL passes token ids: ids that repeat change nothing
    assert r([text], completion_ids=[[7] * 20]) == [pytest.approx(expected)]


def test_repetition_language_changes_the_items(reward):
    default = reward("repetition.ngram", n=1)
    english = reward("repetition.ngram", n=1, language="en")
    assert default(["This this THIS"]) == [0.0]  # case-sensitive words: 3 unique of 3
    assert english(["This this THIS"]) == [pytest.approx(-2 / 3)]
    assert default(["a b c d"], completion_ids=[[9, 9, 9, 9]]) == [-0.75]  # ids win by default
    assert english(["a b c d"], completion_ids=[[9, 9, 9, 9]]) == [0.0]
    with pytest.raises(ValueError, match="'language'.*'fr'"):  # the core's type check, by name
        reward("repetition.ngram", language="fr")
    from grpo_rewards_format import repetition_ngram

    with pytest.raises(ValueError, match="language must be one of en, zh .* got 'fr'"):
        repetition_ngram(["x"], language="fr")  # called directly, as plain TRL would


def test_repetition_zh_segments_with_jieba(reward, monkeypatch):
    # open-r1's test: "这个这个这个这个这个" is five times the word 这个: 4 bigrams, 1 unique -> -0.75.
    # jieba is optional; a stand-in that cuts two characters at a time segments this text as jieba does.
    fake = types.ModuleType("jieba")
    fake.cut = lambda text: (text[i : i + 2] for i in range(0, len(text), 2))
    monkeypatch.setitem(sys.modules, "jieba", fake)
    r = reward("repetition.ngram", n=2, language="zh")
    assert r(["这个这个这个这个这个"], completion_ids=[[1, 2, 3]]) == [-0.75]


def test_repetition_zh_without_jieba_says_how_to_get_it(reward, monkeypatch):
    monkeypatch.setitem(sys.modules, "jieba", None)  # import jieba raises ImportError
    with pytest.raises(ValueError, match="pip install jieba"):
        reward("repetition.ngram", language="zh")


# ---------------------------------------------------------------- soft_overlong_punishment


@pytest.mark.parametrize(
    "tokens,expected",
    [(50, 0.0), (110, -1.0), (90, -0.5), (80, 0.0), (100, -1.0)],  # open-r1's tests, then the ends
)
def test_soft_overlong_punishment(openr1, tokens, expected):
    # max 100, cache 20: 0 up to 80 tokens, (80 - L) / 20 up to 100, -1 beyond
    r = openr1("soft_overlong_punishment", max_completion_len=100, soft_punish_cache=20)
    assert r(["x"], completion_ids=[[1] * tokens]) == [expected]


# ---------------------------------------------------------------- the contract suite


class TestThinkAnswerR1Contract(RewardContract):
    reward = "format.think_answer_r1"
    plugin = grpo_rewards_format


class TestTagCountContract(RewardContract):
    reward = "format.tag_count"
    plugin = grpo_rewards_format


class TestReasoningStepsContract(RewardContract):
    reward = "format.reasoning_steps"
    plugin = grpo_rewards_format
    params = {"min_steps": 2}


class TestRepetitionEnglishContract(RewardContract):
    reward = "repetition.ngram"
    plugin = grpo_rewards_format
    params = {"n": 2, "language": "en"}
