"""Prompts end to end (grpo_core.build_prompts) from the adapters' columns."""

from __future__ import annotations

import grpo_core

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
