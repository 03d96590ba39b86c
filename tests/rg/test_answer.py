"""The answer reader: the layout the system prompt asks for, first hit wins, bounded."""

from __future__ import annotations

import pytest

from grpo_reasoning_gym.answer import MAX_ANSWER_CHARS, final_answer


@pytest.mark.parametrize("text, answer, source", [
    ("Step one.\nAnswer: Friday", "Friday", "phrase"),
    ("Final answer: thought, sentence, federal", "thought, sentence, federal", "phrase"),
    ("**Answer:** `noremopyh`", "noremopyh", "phrase"),
    ("Answer: 7. The answer is right", "7. The answer is right", "phrase"),  # the line's first phrase
    ("The answer is 5.\nAnswer: 6", "6", "phrase"),                            # the last line with one
    ("Answer: $\\boxed{12}$", "12", "phrase"),
    ("<answer>\nthe cat sat\n</answer>", "the cat sat", "answer_tag"),
    ("<answer>Answer: 4</answer>", "4", "answer_tag"),
    ("<answer>12 unclosed", "12 unclosed", "answer_tag"),
    ("<think>Answer: 3</think>no phrase here\n9", "9", "last_line"),          # reasoning is not the answer
    ("\\boxed{3} then \\boxed{3}", "3", "boxed"),
    ("\\boxed{3} or \\boxed{4}", "3, 4", "boxed"),                            # a hedge, as written
    ("blah\n#### 42\n", "42", "hash"),
    ("I think\n\n  it is 12  \n\n", "it is 12", "last_line"),
])
def test_the_answer_and_where_it_was_found(text, answer, source):
    found = final_answer(text)
    assert (found.answer, found.source) == (answer, source)


@pytest.mark.parametrize("text", [
    "", "   \n ", "<think>unfinished Answer: 3", "Answer:", "<answer>  </answer>", "\\boxed{12",
    "Answer: " + "x" * (MAX_ANSWER_CHARS + 1), None, 42,
])
def test_no_answer(text):
    assert final_answer(text).answer is None


def test_a_long_completion_is_read_at_its_end():
    assert final_answer("Answer: 1\n" + "filler " * 50_000 + "\nAnswer: 2").answer == "2"
    # the early answer lies outside the last 100,000 characters: not read (the last line is too long)
    assert final_answer("Answer: 1\n" + "filler " * 50_000).answer is None
