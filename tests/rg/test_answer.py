"""The answer reader: the layout the system prompt asks for, first hit wins, bounded."""

from __future__ import annotations

import pytest

from grpo_reasoning_gym.answer import MAX_ANSWER_CHARS, final_answer


@pytest.mark.parametrize("text, answer, source", [
    ("Step one.\nAnswer: Friday", "Friday", "phrase"),
    ("Final answer: thought, sentence, federal", "thought, sentence, federal", "phrase"),
    ("**Answer:** `noremopyh`", "noremopyh", "phrase"),
    ("Answer: 7. The answer is right", "7. The answer is right", "phrase"),  # the line's first phrase
    ("Answer: 16. No, wait, that is wrong: 17", "16. No, wait, that is wrong: 17", "phrase"),  # not 16
    ("The answer is 5.\nAnswer: 6", "6", "phrase"),                            # the last line with one
    ("Answer: $\\boxed{12}$", "12", "phrase"),
    ("The final answer to the problem is 15.", "15.", "phrase"),
    ("I think the answer would be 7 apples", "7 apples", "phrase"),
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


@pytest.mark.parametrize("text, plain, with_fallback", [
    ("3 + 8 = 11\nHope this helps!", "Hope this helps!", "11"),
    ("3 + 8 = 11 ```", "3 + 8 = 11", "11"),                  # the fence is markup, stripped
    ("It is 1,234.5 in all", "It is 1,234.5 in all", "1,234.5"),
    ("3 + 8 = 11 or 12", "3 + 8 = 11 or 12", None),          # a hedged line: no answer
    ("maybe 12", "maybe 12", None),
    ("Answer: 7\n3 + 8 = 11", "7", "7"),                     # an explicit answer beats the fallback
    ("Is it 11?", "Is it 11?", None),                        # a question is no answer
    ("State the answer to this problem: 0 + 3 =", "State the answer to this problem: 0 + 3 =", None),
    ("0 + 3 =\n", "0 + 3 =", None),                          # a copied question: 3 is an operand
    ("Calculate 0 + 5.", "Calculate 0 + 5.", None),          # after an operator: an operand
    ("4 + 0 = x:  x = 4", "4 + 0 = x:  x = 4", "4"),           # after "=": the result
    ("no digits here", "no digits here", None),
])
def test_the_last_number_fallback(text, plain, with_fallback):
    assert final_answer(text).answer == plain
    assert final_answer(text, fallback_last_number=True).answer == with_fallback
