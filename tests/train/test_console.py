"""The console is ours: one line per step with its time, the run's elapsed time and
ETA, the reward that slows the step; no library warnings or progress bars."""

from __future__ import annotations

from grpo_core.callbacks import clock_text, summary_line


def test_the_step_line_names_a_reward_that_took_over_a_quarter_of_the_step():
    logs = {"reward": 0.5, "rewards/math.correctness/mean": 0.5, "rewards/math.correctness/seconds": 0.2,
            "rewards/slow.judge/mean": 1.0, "rewards/slow.judge/seconds": 3.1}
    # the step took 10 s: a quarter is 2.5 s; the judge's 3.1 s is over it, 0.2 s is not
    line = summary_line(4, 20, logs, elapsed=10.0, clock=clock_text(40.0, 4, 16))
    assert line.endswith("| 10.0s | slow reward: slow.judge 3.1s | 0:40 elapsed, ETA 2:40")
    assert "slow reward" not in summary_line(4, 20, logs, elapsed=20.0)


def test_the_clock_estimates_from_the_mean_step_time():
    assert clock_text(90.0, 3, 7) == "1:30 elapsed, ETA 3:30"  # 30 s a step, 7 left
    assert clock_text(3700.0, 1, 0) == "1:01:40 elapsed"  # nothing left: no ETA
    assert clock_text(5.0, 0, 10) == "0:05 elapsed"  # no step done yet: no estimate
