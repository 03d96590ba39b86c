"""The step line names what a reward paying for tokens (a judge) spent: its tokens and seconds
per scoring call, from the metrics it and the failure policy logged."""

from __future__ import annotations

from grpo_core.run.callbacks import summary_line


def test_a_reward_that_logs_tokens_has_its_tokens_and_seconds_on_the_step_line():
    logs = {"reward": 1.25, "reward_std": 0.5,
            "rewards/math.correctness/mean": 0.5, "rewards/math.correctness/seconds": 0.02,
            "rewards/judge.yesno/mean": 0.75, "rewards/judge.yesno/seconds": 2.345,
            "judge.yesno/tokens": 18403.0, "judge.yesno/requests": 8.0}
    line = summary_line(3, 10, logs, elapsed=12.0)
    assert line == ("step 3/10 | reward 1.250 ± 0.500 | math.correctness 0.500  judge.yesno 0.750 | "
                    "judge.yesno 18,403 tokens 2.3s | 12.0s")


def test_rewards_that_log_no_tokens_add_nothing():
    logs = {"reward": 1.0, "rewards/math.correctness/mean": 1.0, "rewards/math.correctness/seconds": 0.5}
    assert summary_line(1, 2, logs) == "step 1/2 | reward 1.000 | math.correctness 1.000"
