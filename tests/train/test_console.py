"""The console is ours: one line per step with its time, the run's elapsed time and
ETA, the reward that slows the step; no library warnings or progress bars."""

from __future__ import annotations

from grpo_core.run.callbacks import clock_text, summary_line


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


def test_the_eta_leaves_out_a_first_step_that_compiled():
    # first step 189 s (compiling, first held-out evaluation), then two of 3 s: 57 steps left at 3 s
    assert clock_text(195.0, 3, 57, first=(1, 189.0)) == "3:15 elapsed, ETA 2:51"
    assert clock_text(189.0, 1, 59, first=(1, 189.0)) == "3:09 elapsed, ETA 3:05:51"  # one step: all there is
    # a line every 5 steps (logging_steps 5): the first 5 took 200 s, the next 5 took 10 s; 10 left at 2 s
    assert clock_text(210.0, 10, 10, first=(5, 200.0)) == "3:30 elapsed, ETA 0:20"


def _drive(tmp_path, monkeypatch, clock, begin: int, steps, max_steps: int) -> list[str]:
    """MetricsCallback as training drives it: ``clock`` the perf_counter readings (train
    begins, then one per step line), ``begin`` the global step training starts from."""
    import io
    from types import SimpleNamespace

    from grpo_core.run import callbacks

    readings = iter(clock)
    monkeypatch.setattr(callbacks, "time", SimpleNamespace(perf_counter=lambda: next(readings), time=lambda: 0.0))
    out = io.StringIO()
    cb = callbacks.MetricsCallback(tmp_path / "metrics.jsonl", "main", stream=out)
    state = SimpleNamespace(global_step=begin, max_steps=max_steps, is_world_process_zero=True)
    cb.on_train_begin(None, state, None)
    for step in steps:
        state.global_step = step
        cb.on_log(None, state, None, logs={"reward": 0.5})
    return out.getvalue().splitlines()


def test_the_step_line_eta_after_a_slow_first_step(tmp_path, monkeypatch):
    lines = _drive(tmp_path, monkeypatch, [0.0, 100.0, 102.0, 104.0], 0, [1, 2, 3], 10)
    assert lines[0].endswith("1:40 elapsed, ETA 15:00")  # 9 left at 100 s: the only estimate there is
    assert lines[1].endswith("1:42 elapsed, ETA 0:16")  # 8 left at 2 s, not at (100 + 2) / 2
    assert lines[2].endswith("1:44 elapsed, ETA 0:14")


def test_a_resumed_run_leaves_out_its_own_first_step(tmp_path, monkeypatch):
    # resumed at step 50 of 60: its step 51 compiles again (60 s), then 3 s a step
    lines = _drive(tmp_path, monkeypatch, [0.0, 60.0, 63.0], 50, [51, 52], 60)
    assert lines[0].endswith("1:00 elapsed, ETA 9:00")  # 9 left at 60 s
    assert lines[1].endswith("1:03 elapsed, ETA 0:24")  # 8 left at 3 s


def test_train_and_eval_print_no_library_warning_or_progress_bar(tiny_model, tmp_path):
    """Run as a user runs them (a process of their own, so nothing filters warnings)."""
    import os
    import subprocess
    import sys

    import yaml

    cfg = tmp_path / "run.yaml"
    cfg.write_text(yaml.safe_dump({
        "model": {"id": str(tiny_model), "dtype": "float32"}, "lora": {"r": 4, "lora_alpha": 8},
        "dataset": {"name": "arithmetic", "params": {"size": 16, "level": 1}, "system_prompt": "plain",
                    "eval_split": "test", "eval_params": {"size": 4}},
        "rewards": ["math.correctness(fallback_last_number=True)", "length.soft_overlong(max_length=8, cache=4):0.5"],
        "max_steps": 2, "per_device_train_batch_size": 4, "num_generations": 4, "max_completion_length": 8,
        "save_strategy": "no", "report_to": [], "output_dir": str(tmp_path / "out")}))
    env = dict(os.environ, GRPO_PLUGINS="grpo-datasets,grpo-rewards-math,grpo-rewards-format")
    for argv in (["train", str(cfg)], ["eval", str(cfg), "--checkpoint", str(tmp_path / "out" / "adapter")]):
        done = subprocess.run([sys.executable, "-m", "grpo_core", *argv], capture_output=True, text=True, env=env,
                              timeout=600, cwd=tmp_path)
        text = done.stdout + done.stderr
        assert done.returncode == 0, text
        assert "Warning" not in text and "warnings.warn" not in text, text  # FutureWarning, UserWarning, ...
        assert "it/s]" not in text and "%|" not in text, text  # tqdm's bars
