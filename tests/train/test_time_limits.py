"""A reward that hangs costs one time limit per call, is named once, and the run
completes its steps with the timeouts counted (or stops like a failing reward)."""

from __future__ import annotations

import json

from .conftest import TINY

HANG = '''
import time

def hang(completions, **kwargs):
    """Sleeps for an hour: a reward stuck on a network call."""
    time.sleep(3600)
    return [1.0 for _ in completions]
'''


def logged_hang(name: str, calls) -> str:
    """HANG as ``name``, each call writing to ``calls`` "start", and "end" in its finally
    (when its sleep is over, interrupted or not), with the thread it ran in."""
    return HANG.replace("def hang", f"def {name}").replace("    time.sleep(3600)\n", f"""\
    import threading
    with open({str(calls)!r}, "a") as log:
        log.write(f"start {{time.monotonic()}} {{threading.current_thread().name}}\\n")
    try:
        time.sleep(3600)
    finally:
        with open({str(calls)!r}, "a") as log:
            log.write(f"end {{time.monotonic()}} {{threading.current_thread().name}}\\n")
""")


def interrupted_in_the_call(calls, n: int, limit: float) -> bool:
    """Nothing left running: each of ``n`` calls ran in the main thread (where the
    watchdog's signal reaches it) and its sleep ended at its time limit, in the call (its
    finally ran), rather than being abandoned in a thread of its own."""
    log = [line.split() for line in calls.read_text().splitlines()]
    return ([event for event, _, _ in log] == ["start", "end"] * n
            and all(thread == "MainThread" for _, _, thread in log)
            and all(limit - 0.1 <= float(end) - float(start) < limit + 4 for (_, start, _), (_, end, _)
                    in zip(log[::2], log[1::2])))  # (the limit is armed just before the call writes start)


def test_train_check_and_dry_run_get_past_a_reward_that_sleeps_for_an_hour(grpo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    calls = tmp_path / "calls.log"
    (tmp_path / "slow.py").write_text(logged_hang("hang", calls))
    args = ("--rewards", "test.digits", "slow.py:hang:0.5", "--health.reward_time_limit", "1",
            "--health.max_reward_errors", "1.0", "--health.max_reward_timeouts", "10")
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
    # nothing left running. 4 calls: each run's parameter check before the model loads, 2 steps
    assert interrupted_in_the_call(calls, 4, 1.0), calls.read_text()


def test_a_reward_that_always_hangs_stops_the_run_after_three_timeouts_in_a_row(grpo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    calls = tmp_path / "calls.log"
    (tmp_path / "slow2.py").write_text(logged_hang("hang2", calls))
    code, out, err = grpo(TINY, "--max_steps", "20", "--rewards", "test.digits", "slow2.py:hang2 within 0.5s",
                          "--save_strategy", "steps", "--save_steps", "1")
    text = out + err
    assert code == 2, text
    # time-outs in a row: the parameter check before training (1), steps 1 (2) and 2 (3): stop at step 2,
    # whose checkpoint is the last completed step's, 1
    assert text.count("timed out on 3 calls in a row") == 1
    assert "reward 'hang2' timed out on 3 calls in a row (0.5s each; health.max_reward_timeouts 3)" \
        in text
    assert "health.on_reward_timeout: drop" in text
    assert "checkpoint-1 (step 1, the last completed step)" in text
    steps = [json.loads(x) for x in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in steps if "reward" in r] == [1]
    # nothing left running after the stop: the 3 calls were each interrupted at 0.5 s, in the call
    assert interrupted_in_the_call(calls, 3, 0.5), calls.read_text()


def test_drop_trains_on_without_a_reward_that_keeps_timing_out(grpo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "slow3.py").write_text(HANG.replace("def hang", "def hang3"))
    code, out, err = grpo(TINY, "--max_steps", "5", "--rewards", "test.digits", "slow3.py:hang3 within 0.5s",
                          "--health.on_reward_timeout", "drop", "--health.max_reward_timeouts", "2")
    text = out + err
    assert code == 0, text
    assert text.count("DROPPED from training") == 1 and "reward 'hang3'" in text
    steps = [json.loads(x) for x in (tmp_path / "out" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in steps if "reward" in r]
    assert [r["step"] for r in steps] == [1, 2, 3, 4, 5]
    # timed out in the parameter check (1) and at step 1 (2): dropped there; never called again, so
    # steps 2-5 take no time in it and log it as dropped
    assert steps[0]["rewards/hang3/timeouts"] == 4.0
    assert all(r["rewards/hang3/dropped"] == 1.0 and "rewards/hang3/timeouts" not in r for r in steps[1:])
    # the total is test.digits' alone from step 2 on
    assert all(abs(r["reward"] - r["rewards/test.digits/mean"]) < 1e-6 for r in steps[1:])
