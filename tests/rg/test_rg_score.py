"""rg.score on answers worked out by hand: right, wrong, hedged, garbage, huge.

Two rows: chain_sum seed 0 item 0 (gold -14282; reasoning-gym's decimal scorer: commas
dropped, equal as decimals, else the gold inside a longer answer earns
len(gold) / len(answer)) and leg_counting (gold 12; reasoning-gym's default scorer:
the same text, else that ratio)."""

from __future__ import annotations

import json

import pytest

from grpo_core.errors import DatasetError

LEGS = {"min_animals": 1, "max_animals": 2, "max_instances": 3}  # row 0: 2 grasshoppers, 3 jellyfish = 12


@pytest.fixture
def chain(rows):
    row = rows("rg.chain_sum", 1, seed=0)[0]
    assert row["answer"] == "-14282"
    return row


@pytest.fixture
def legs(rows):
    row = rows("rg.leg_counting", 1, seed=0, **LEGS)[0]
    assert "2 grasshoppers, 3 jellyfishs" in row["question"] and row["answer"] == "12"
    return row


@pytest.mark.parametrize("completion", [
    "-14282",                                              # the bare answer: the last line
    "1663 - 5242 = -3579, and so on.\nAnswer: -14282",     # the plain prompt's layout
    "Answer: -14,282",                                     # commas are dropped by reasoning-gym's scorer
    "**Answer:** -14282",
    "Answer:\n-14282",                                     # the answer on the line after the phrase
    "The answer is -14282.",
    "<think>-14281? no</think>\n<answer>-14282</answer>",
    "So the result is $\\boxed{-14282}$",
    "#### -14282",
])
def test_right_answers_score_one(scored, chain, completion):
    assert scored([completion], chain) == [1.0]


@pytest.mark.parametrize("completion", [
    "Answer: -14281",
    "Answer: 14282",           # the sign is part of the answer: "-14282" is not inside "14282"
    "The answer is -14282.\nAnswer: -14281",   # the last answer line counts, not the reasoning
    "<answer>-14282</answer> was my first guess. <answer>7</answer>",
])
def test_wrong_answers_score_zero(scored, chain, completion):
    assert scored([completion], chain) == [0.0]


@pytest.mark.parametrize("completion, partial_credit", [
    ("Answer: -14282 or 7", 6 / 11),          # "-14282" (6 characters) inside 11
    ("Answer: maybe -14282", 6 / 12),
    ("\\boxed{-14282} \\boxed{7}", 6 / 8),    # both boxes, "-14282, 7", commas dropped: "-14282 7"
])
def test_hedges_earn_reasoning_gyms_partial_credit_and_nothing_without_it(scored, chain, completion, partial_credit):
    assert scored([completion], chain) == [pytest.approx(partial_credit)]
    assert scored([completion], chain, partial=False) == [0.0]


def test_the_last_number_fallback_reads_a_small_models_natural_answer(scored, chain):
    worked = "1663 - 5242 - 9376 - 8961 + 7634 = -14282"
    assert scored([worked], chain, fallback_last_number=True) == [1.0]
    assert scored([worked], chain) == [pytest.approx(6 / len(worked))]  # the last line, "-14282" inside it
    assert scored([worked + " or -14281"], chain, fallback_last_number=True) == [0.0]  # a hedged line


def test_the_default_scorer_pays_exact_text_and_a_share_for_more(scored, legs):
    assert scored(["Answer: 12", "Answer: 12 legs", "Answer: 13", "Answer: 12."], legs) == [
        1.0, pytest.approx(2 / 7), 0.0, 1.0]  # "12." is tried as "12" too: a sentence's full stop


@pytest.mark.parametrize("completion", [
    "", " ", "\x00\x01\x02", "Answer:", "Answer: ", "<think>still thinking, 12", "<answer></answer>",
    "\\boxed{12", "__import__('os').system('echo pwned')", "日本語 🤖 \u202eRTL",
])
def test_garbage_scores_zero(scored, legs, completion):
    assert scored([completion], legs) == [0.0]


def test_huge_completions_are_read_at_their_end_and_huge_answers_not_at_all(scored, legs):
    junk = "word " * 200_000  # 1 MB
    assert scored([junk, junk + "\nAnswer: 12", "Answer: " + "12 " * 1_000, "Answer: " + "9" * 5_000], legs) == [
        0.0, 1.0, 0.0, 0.0]


def test_conversational_completions_are_read_as_text(scored, legs):
    assert scored([[{"role": "assistant", "content": "Answer: 12"}]], legs) == [1.0]


def test_a_row_that_is_not_an_rg_entry_gets_no_opinion(rg):
    import grpo_core

    reward = grpo_core.get_reward("rg.score")
    assert reward(["Answer: 42", "Answer: 42", "Answer: 42"], rg_entry=["42", "{not json", None]) == [None] * 3


def test_a_row_of_a_task_whose_scorer_evaluates_text_is_an_error(rg):
    import grpo_core

    reward = grpo_core.get_reward("rg.score")
    entry = json.dumps({"task": "countdown", "config": {}, "entry": {"question": "q", "answer": "1+1",
                                                                      "metadata": {}}})
    with pytest.raises(DatasetError, match="'countdown' is not offered: its scorer runs the model's answer"):
        reward(["Answer: __import__('os')"], rg_entry=[entry])


def test_misaligned_columns_are_an_error(rg, legs):
    import grpo_core

    reward = grpo_core.get_reward("rg.score")
    with pytest.raises(ValueError, match="'rg_entry' has 2 entries for 1 completions"):
        reward(["Answer: 12"], rg_entry=[legs["rg_entry"]] * 2)


def test_it_logs_missing_answers_and_what_it_read(rg, legs):
    import grpo_core

    metrics, extras = {}, {}
    reward = grpo_core.get_reward("rg.score")
    reward(["Answer: 12", "", "so 13"], rg_entry=[legs["rg_entry"]] * 3,
           log_metric=metrics.__setitem__, log_extra=extras.__setitem__)
    assert metrics == {"rg.score/no_answer": pytest.approx(1 / 3), "rg.score/scorer_errors": 0.0}
    assert extras == {"rg.score/answer": ["12", "", "so 13"]}


def test_every_named_task_pays_its_gold_full_marks_in_the_prompts_layouts(rows, scored):
    """The gold as the plain prompt asks for it, in <answer> tags, and bare."""
    from grpo_reasoning_gym import TASKS

    for task in TASKS:
        for row in rows(f"rg.{task}", 25, seed=1):
            gold = row["answer"]
            layouts = [f"Let me work it out.\nAnswer: {gold}", f"<think>\nwork\n</think>\n<answer>\n{gold}\n</answer>",
                       gold]
            assert scored(layouts, row) == [1.0, 1.0, 1.0], (task, gold)
