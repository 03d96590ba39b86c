"""Every reward call has a time limit: a reward stuck on a network call or a
pathological regex costs its items, never the run, and leaves nothing running."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from grpo_core.base import timelimit
from grpo_core.base.timelimit import RewardTimeout, call_within
from grpo_core.errors import SpecError
from grpo_core.rewards.policy import GuardedReward
from grpo_core.rewards.reward import Reward
from grpo_core.rewards.specs import parse_spec


def new_threads(before: set) -> list[str]:
    """Threads alive now that were not before, the watchdog aside (it waits for the next call)."""
    return sorted(t.name for t in set(threading.enumerate()) - before if t.name != "grpo-reward-watchdog")


def test_a_sleeping_call_is_interrupted_and_its_finally_runs():
    cleaned, ran_in = [], []

    def stuck():
        ran_in.append(threading.current_thread())
        try:
            time.sleep(3600)
        finally:
            cleaned.append(True)

    before = set(threading.enumerate())
    started = time.monotonic()
    with pytest.raises(RewardTimeout) as info:
        call_within(0.2, stuck)
    assert cleaned == [True] and info.value.seconds == 0.2 and not info.value.left_running
    # nothing left running: the call ran in the calling (main) thread, was stopped at its limit
    # there, and no thread of its own is still sleeping
    assert ran_in == [threading.main_thread()] and time.monotonic() - started < 3
    assert new_threads(before) == []


def test_a_reward_that_swallows_exceptions_or_spins_is_still_stopped():
    def swallowing():
        try:
            time.sleep(3600)
        except Exception:  # noqa: BLE001 - what careless rewards do
            return "swallowed"

    def spinning():
        while True:
            pass

    for func in (swallowing, spinning):
        with pytest.raises(RewardTimeout):
            call_within(0.2, func)


def test_calls_within_their_limit_return_their_value_and_no_late_signal_follows():
    import signal

    values = [call_within(5, lambda i=i: i * 2) for i in range(2000)]
    assert values == [i * 2 for i in range(2000)]

    def returns_as_its_deadline_passes():
        """Holds the watchdog's signal back until the deadline has passed and the signal is
        sent (pending), then returns: the signal arrives after the call is over."""
        signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
        until = time.monotonic() + 5
        while signal.SIGUSR1 not in signal.sigpending() and time.monotonic() < until:
            time.sleep(0.01)
        return signal.SIGUSR1 in signal.sigpending()

    # the late signal was sent, and the call that had returned keeps its value
    assert call_within(0.1, returns_as_its_deadline_passes) is True
    assert signal.SIGUSR1 not in signal.sigpending()  # delivered once unblocked, and ignored
    time.sleep(0.05)  # nothing raised afterwards either
    assert call_within(5, lambda: "next") == "next"  # nor in the next call


def test_a_nested_call_runs_under_the_outer_limit():
    def outer():
        return call_within(0.1, lambda: time.sleep(0.3) or "inner done")

    # the inner 0.1 s is not armed inside the outer call: the outer 2 s limit covers both
    assert call_within(2, outer) == "inner done"


def test_a_call_from_another_thread_is_abandoned_and_said_so():
    caught, ran_in = [], []

    def sleeps():
        ran_in.append(threading.current_thread())
        time.sleep(2)

    def worker():
        try:
            call_within(0.2, sleeps)
        except RewardTimeout as exc:
            caught.append(exc)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert len(caught) == 1 and caught[0].left_running
    # said to be left running, and it is: a daemon thread of its own, still in its sleep
    (left,) = ran_in
    assert left is not t and left.daemon and left.is_alive()
    # a call made meanwhile runs at once, in another thread: the one left running is not free
    quick = []
    other = threading.Thread(target=lambda: quick.append(call_within(5, lambda: threading.current_thread())))
    other.start()
    other.join(5)
    assert quick and quick[0] is not left and quick[0].daemon
    # once its call returns, the thread left running is free for the next call (kept, not ended)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any(c.thread is left for c in timelimit._Caller.idle):
        time.sleep(0.02)
    assert left.is_alive() and any(c.thread is left for c in timelimit._Caller.idle)


def test_calls_from_other_threads_reuse_the_threads_that_ran_them():
    ran_in = []

    def worker():
        for _ in range(5):
            ran_in.append(call_within(5, threading.current_thread))

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert len(ran_in) == 5 and len(set(ran_in)) == 1 and ran_in[0] is not t


def test_native_code_that_never_returns_ends_the_process_naming_where_it_was(tmp_path):
    """Catastrophic regex backtracking holds the GIL: no Python thread can act, so the
    C timer of faulthandler ends the process (limit + grace + 1 s) instead of a hang."""
    script = tmp_path / "stuck.py"
    script.write_text(
        "import re\n"
        "from grpo_core.base.timelimit import call_within\n"
        "def backtracking_reward():\n"
        "    return re.match(r'(a+)+$', 'a' * 40 + 'b')\n"
        "call_within(0.2, backtracking_reward, grace=0.3)\n"
        "print('not reached')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "not reached" not in done.stdout
    assert "backtracking_reward" in done.stderr  # the traceback shows the stuck reward


@pytest.mark.parametrize("spec, limit", [
    ("slow.py:hang within 5s", 5.0),
    ("math.correctness(timeout=3):2 within 30s", 30.0),  # the reward's own timeout= stays a parameter
    ("length.ideal:0.1 when math.correctness >= 1 within 2.5", 2.5),
    ({"name": "math.correctness", "time_limit": 45}, 45.0),
    ("math.correctness:2", None),
])
def test_the_time_limit_is_a_clause_of_its_own(spec, limit):
    parsed = parse_spec(spec)
    assert parsed.time_limit == limit
    if isinstance(spec, str) and "timeout=3" in spec:
        assert parsed.params == {"timeout": 3} and parsed.weight == 2.0
    if limit is not None and isinstance(spec, str):
        assert parse_spec(str(parsed)) == parsed  # config.yaml writes it back as it reads


@pytest.mark.parametrize("spec", ["math.correctness within 0s", "math.correctness within soon",
                                  {"name": "math.correctness", "time_limit": -1}])
def test_a_bad_time_limit_names_the_value(spec):
    with pytest.raises(SpecError, match="is not a number of seconds > 0"):
        parse_spec(spec)


def test_a_timed_out_batch_scores_none_is_counted_and_reported_once():
    calls = []

    def hang(completions, **kwargs):
        calls.append(len(completions))
        time.sleep(3600)

    logged, metrics = [], []
    g = GuardedReward(Reward("test.hang", hang, time_limit=0.2), log=logged.append, window=3, max_share=1.0)
    for _ in range(2):
        out = g(completions=["a", "b", "c"], log_metric=lambda n, v: metrics.append((n, v)))
        assert out == [None, None, None]
    # one call per batch: a timed-out batch is not retried item by item (that would cost 3 limits)
    assert calls == [3, 3]
    assert ("rewards/test.hang/timeouts", 3.0) in metrics and ("rewards/test.hang/errors", 0.0) in metrics
    assert len([m for m in logged if "ran past its time limit of 0.2s" in m]) == 1  # once per process


def test_a_reward_that_always_hangs_stops_the_run_like_a_failing_one():
    from grpo_core.rewards.policy import RewardFailure

    def hang(completions, **kwargs):
        time.sleep(3600)

    g = GuardedReward(Reward("test.hang2", hang, time_limit=0.1), log=lambda m: None, window=2, max_share=0.2)
    g(completions=["a", "b"], log_metric=lambda *a: None)
    with pytest.raises(RewardFailure, match="'test.hang2'.*failed on 4 of 4 completions"):
        g(completions=["a", "b"], log_metric=lambda *a: None)
