"""Prompts end to end (grpo_core.build_prompts) and token-length checks with a real tokenizer."""

from __future__ import annotations

import pytest

import grpo_core
from grpo_datasets import (
    ColumnError,
    DatasetError,
    EmptyDatasetError,
    PromptTooLongError,
    prompt_lengths,
)

PLAIN = (
    "Solve the problem step by step, then give the final answer on its own line "
    "as 'Answer: <answer>'."
)


def test_build_prompts_with_plain_system_prompt_and_two_shots(load):
    ds = load("arithmetic", size=10)
    questions, answers = ds["question"], ds["answer"]
    out = grpo_core.build_prompts(ds, system_prompt="plain", few_shot=2)
    assert len(out) == 8  # the two examples are not trained on
    assert out["answer"] == answers[2:]  # gold answers stay aligned for the rewards
    assert out[0]["prompt"] == [
        {"role": "system", "content": PLAIN},
        {"role": "user", "content": questions[0]},
        {"role": "assistant", "content": f"Answer: {answers[0]}"},
        {"role": "user", "content": questions[1]},
        {"role": "assistant", "content": f"Answer: {answers[1]}"},
        {"role": "user", "content": questions[2]},
    ]
    assert out[7]["prompt"][-1] == {"role": "user", "content": questions[9]}


def test_gsm8k_rationale_can_be_the_few_shot_answer(write, load, tmp_path):
    rows = [
        {"question": "Tom has 2 bags of 3 apples. How many apples?", "answer": "2*3 = <<2*3=6>>6\n#### 6"},
        {"question": "Ann has 1,000 coins and gets 234 more. How many?", "answer": "1000+234\n#### 1,234"},
    ]
    ds = load("gsm8k", path=str(write.jsonl(tmp_path / "train.jsonl", rows)))
    out = grpo_core.build_prompts(ds, few_shot=1, answer_template="{rationale}\nAnswer: {answer}")
    assert out[0]["prompt"] == [
        {"role": "user", "content": "Tom has 2 bags of 3 apples. How many apples?"},
        {"role": "assistant", "content": "2*3 = <<2*3=6>>6\nAnswer: 6"},
        {"role": "user", "content": "Ann has 1,000 coins and gets 234 more. How many?"},
    ]
    assert out["answer"] == ["1234"]


CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer():
    """Word-level tokenizer trained on the fly: one token per word or punctuation run."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(
        ["What is 7 + 5 ? Be brief .", "user assistant system"],
        trainers.WordLevelTrainer(special_tokens=["[UNK]", "<|im_start|>", "<|im_end|>"]),
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", additional_special_tokens=["<|im_start|>", "<|im_end|>"]
    )
    fast.chat_template = CHATML
    return fast


@pytest.fixture
def prompted():
    import datasets

    ds = datasets.Dataset.from_dict({
        "question": [
            "What is 7 + 5?",
            "What is 12 - 4?",
            "Mia has 3 apples and finds 2 more. How many apples does Mia have now?",
        ],
        "answer": ["12", "8", "5"],
    })
    return grpo_core.build_prompts(ds, system_prompt="Be brief.", few_shot=1)


# Each message costs <|im_start|> role ... <|im_end|> = content + 3 tokens; the generation
# prompt adds 2. Shared: system "Be brief ." 6, example user "What is 7 + 5 ?" 9, assistant
# "12" 4: 19. Row 0 asks "What is 12 - 4 ?" (9): 19 + 9 + 2 = 30. Row 1 asks "Mia has 3
# apples and finds 2 more . How many apples does Mia have now ?", 17 tokens (20): 19 + 20 + 2 = 41.


def test_lengths_include_system_prompt_few_shot_and_template(prompted, tokenizer):
    report = prompt_lengths(prompted, tokenizer)
    assert report.lengths == [30, 41]
    assert (report.count, report.min, report.median, report.max) == (2, 30, 35.5, 41)
    assert report.too_long == 0 and report.dataset is prompted
    assert str(report) == "prompt tokens over 2 prompts: min 30, median 35.5, max 41"


def test_report_drop_and_error_over_the_limit(prompted, tokenizer):
    report = prompt_lengths(prompted, tokenizer, max_length=35)
    assert (report.too_long, report.dropped, len(report.dataset)) == (1, 0, 2)
    with pytest.warns(UserWarning, match=r"dropped 1 of 2 prompts longer than max_length=35"):
        dropped = prompt_lengths(prompted, tokenizer, max_length=35, action="drop")
    assert dropped.dataset["answer"] == ["8"]
    assert "1 over max_length=35 (dropped, 1 rows left)" in str(dropped)
    with pytest.raises(PromptTooLongError, match=r"1 of 2 prompts.*max_length=35.*row 1, 41 tokens"):
        prompt_lengths(prompted, tokenizer, max_length=35, action="error")
    assert prompt_lengths(prompted, tokenizer, max_length=41, action="error").too_long == 0
    with pytest.raises(EmptyDatasetError, match="every one of the 2 prompts"):
        prompt_lengths(prompted, tokenizer, max_length=10, action="drop")


def test_plain_text_prompts_and_bad_calls(prompted, tokenizer):
    import datasets

    text = datasets.Dataset.from_dict({"prompt": ["What is 7 + 5?"]})
    assert prompt_lengths(text, tokenizer).lengths == [6]
    with pytest.raises(ColumnError, match=r"needs a 'prompt' column.*build_prompts"):
        prompt_lengths(prompted.remove_columns("prompt"), tokenizer)
    with pytest.raises(DatasetError, match="needs max_length"):
        prompt_lengths(prompted, tokenizer, action="drop")
    with pytest.raises(DatasetError, match="action must be one of"):
        prompt_lengths(prompted, tokenizer, max_length=5, action="truncate")
    saved, tokenizer.chat_template = tokenizer.chat_template, None
    try:
        with pytest.raises(DatasetError, match="no chat template"):
            prompt_lengths(prompted, tokenizer)
    finally:
        tokenizer.chat_template = saved
