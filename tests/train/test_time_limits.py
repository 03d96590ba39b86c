"""A reward that hangs costs one time limit per call, is named once, and the run
completes its steps with the timeouts counted (or stops like a failing reward)."""

from __future__ import annotations

import json
import threading

from .conftest import TINY

HANG = '''
import time

def hang(completions, **kwargs):
    """Sleeps for an hour: a reward stuck on a network call."""
    time.sleep(3600)
    return [1.0 for _ in completions]
'''


def test_train_check_and_dry_run_get_past_a_reward_that_sleeps_for_an_hour(grpo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "slow.py").write_text(HANG)
    args = ("--rewards", "test.digits", "slow.py:hang:0.5", "--health.reward_time_limit", "1",
            "--health.max_reward_errors", "1.0")
    code, out, err = grpo(TINY, "--dry-run", *args)
    assert code == 0, out + err
    assert (out + err).count("reward 'hang' ran past its time limit of 1s") == 1
    code, out, err = grpo(TINY, "--max_steps", "2", *args)
    text = out + err
    assert code == 0, text
    # named once in the process: by the parameter check (the dry run above); grpo check skips it
    assert "ran past its time limit" not in text and "hang" in text
    steps = [json.loads(x) for x in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in steps if "reward" in r]
    # 4 completions a step, each batch past its limit: 4 timeouts, 0 errors, the mean of nothing is NaN
    assert [r["rewards/hang/timeouts"] for r in steps] == [4.0, 4.0]
    assert [r["rewards/hang/errors"] for r in steps] == [0.0, 0.0]
    assert all(r["rewards/hang/seconds"] >= 1.0 for r in steps)
    assert not [t for t in threading.enumerate() if t.name == "grpo-reward-call"]  # nothing left running


def test_a_reward_that_always_hangs_stops_with_a_checkpoint(grpo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "slow2.py").write_text(HANG.replace("def hang", "def hang2"))
    code, out, err = grpo(TINY, "--max_steps", "4", "--rewards", "test.digits", "slow2.py:hang2 within 0.5s",
                          "--health.window", "2")
    text = out + err
    assert code == 2, text
    # window of 2 batches, every item timed out: 8 of 8 > 20 %; step 1 completed before
    assert "reward 'hang2'" in text and "failed on 8 of 8 completions" in text
    assert "checkpoint-1 (step 1, the last completed step)" in text
