"""The checker pool: the per-item limit really fires, from any thread or event
loop; the pool is created once, sized as configured, and never forks us."""

from __future__ import annotations

import asyncio
import functools
import os
import sys
import threading
import time

import pytest

from grpo_rewards_math import _worker, correctness, pool

TOWER = r"\boxed{9^{9^{9^{9}}}}"  # sympy would take minutes (and gigabytes) on this
LIMIT = 1.0
# limit + killing and replacing the worker + the other items; generous on a shared 2-core box
SLACK = 4.0


def mixed_batch():
    # the towers' golds are expressions: against a plain number a tower is arithmetic left undone,
    # scored 0.0 before any checker sees it (test_math_rewards.py), and would not time out
    comps = [TOWER, r"\boxed{\sqrt{8}}", r"\boxed{3}", "#### 2", TOWER]
    golds = [r"\sqrt{1}", r"2\sqrt{2}", r"2\sqrt{2}", "2", r"\sqrt{4}"]
    return comps, golds


EXPECTED = [0.0, 1.0, 0.0, 1.0, 0.0]


def test_time_limit_fires_and_the_batch_completes():
    comps, golds = mixed_batch()
    correctness([r"\boxed{1}"], ["1"], workers=2)  # warm the pool
    start = time.monotonic()
    out = correctness(comps, golds, timeout=LIMIT, workers=2)
    took = time.monotonic() - start
    assert out == EXPECTED
    assert took < LIMIT + SLACK, took
    # the killed workers were replaced: the pool still answers
    assert correctness([r"\boxed{\frac{2}{4}}"], ["0.5"], timeout=LIMIT, workers=2) == [1.0]


def test_sleeping_task_is_killed_and_others_are_scored():
    start = time.monotonic()
    outcomes = pool.run(time.sleep, [(60,), (0,), (0,)], timeout=0.5, workers=2)
    assert time.monotonic() - start < 0.5 + SLACK
    assert [o.status for o in outcomes] == ["timeout", "ok", "ok"]
    outcomes = pool.run(divmod, [(7, 2), (1, 0)], timeout=5, workers=2)
    assert outcomes[0] == pool.Outcome("ok", (3, 1))
    assert outcomes[1] == pool.Outcome("error", "ZeroDivisionError")


def test_limit_holds_when_called_from_a_thread():
    comps, golds = mixed_batch()
    box = {}

    def target():
        start = time.monotonic()
        box["out"] = correctness(comps, golds, timeout=LIMIT, workers=2)
        box["took"] = time.monotonic() - start

    t = threading.Thread(target=target)
    t.start()
    t.join(60)
    assert not t.is_alive()
    assert box["out"] == EXPECTED
    assert box["took"] < LIMIT + SLACK


def test_limit_holds_inside_an_event_loop():
    comps, golds = mixed_batch()
    call = functools.partial(correctness, comps, golds, timeout=LIMIT, workers=2)

    async def main():
        start = time.monotonic()
        direct = call()  # a plain call from inside a running loop
        in_thread = await asyncio.get_running_loop().run_in_executor(None, call)
        both = await asyncio.gather(asyncio.to_thread(call), asyncio.to_thread(call))
        return direct, in_thread, both, time.monotonic() - start

    direct, in_thread, both, took = asyncio.run(main())
    assert direct == in_thread == both[0] == both[1] == EXPECTED
    assert took < 3 * (LIMIT + SLACK)


def test_math_verify_works_off_the_main_thread_in_a_worker_module():
    # math-verify's signal timeouts are disabled inside the worker code: calling it
    # from a thread raises nothing (with signal.alarm it would raise ValueError)
    box = {}
    t = threading.Thread(
        target=lambda: box.setdefault("r", _worker.check(r"2\sqrt{2}", r"\sqrt{8}"))
    )
    t.start()
    t.join(30)
    assert box["r"] == (True, True)
    assert _worker.check(r"\frac{1}{", "1") == (False, False)
    assert all(type(v) is bool for v in _worker.check("1", "x+"))


def test_pool_is_created_once_reused_and_sized():
    a = {pid for pid, _ in (o.value for o in pool.run(_worker.ping, [()] * 12, 10, workers=2))}
    b = {pid for pid, _ in (o.value for o in pool.run(_worker.ping, [()] * 12, 10, workers=2))}
    assert pool.get_pool(2) is pool.get_pool(2)
    assert 1 <= len(a | b) <= 2  # the same (at most two) processes serve both calls
    one = {o.value[0] for o in pool.run(_worker.ping, [()] * 6, 10, workers=1)}
    assert len(one) == 1 and one.isdisjoint(a)  # another pool, of one process


def test_workers_are_not_forked_from_the_caller():
    pids = {o.value for o in pool.run(_worker.ping, [()] * 4, 10, workers=2)}
    for pid, ppid in pids:
        assert pid != os.getpid()
        assert ppid != os.getpid()  # forkserver children: the server is the parent


def test_pool_size_from_env_and_world_size(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(16)), raising=False)
    monkeypatch.delenv(pool.ENV_WORKERS, raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert pool.default_workers() == 8  # capped
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    assert pool.default_workers() == 4  # 16 CPUs shared by 4 training processes
    monkeypatch.setenv(pool.ENV_WORKERS, "3")
    assert pool.default_workers() == 3
    assert pool.resolve_workers(5) == 5
    monkeypatch.setenv(pool.ENV_WORKERS, "zero")
    with pytest.raises(ValueError, match="GRPO_MATH_WORKERS='zero'"):
        pool.default_workers()
    with pytest.raises(ValueError, match="workers=0"):
        pool.resolve_workers(0)
    with pytest.raises(ValueError, match="timeout"):
        pool.run(_worker.ping, [()], timeout=float("nan"), workers=1)


def test_correctness_honours_the_workers_parameter():
    before = set(pool._pools)
    n = 1000 + os.getpid() % 1000  # an input no earlier test has cached
    assert correctness([rf"\boxed{{\sqrt{{{n * n}}}}}"], [str(n)], workers=3) == [1.0]
    assert (3, 0) in pool._pools
    pool._pools.pop((3, 0)).stop()
    assert set(pool._pools) >= before - {(3, 0)}


def test_a_crashed_worker_scores_as_an_error_and_is_replaced():
    outcomes = pool.run(os._exit, [(3,)], timeout=5, workers=2)
    assert outcomes[0].status == "error"
    assert pool.run(divmod, [(9, 4)], timeout=5, workers=2)[0] == pool.Outcome("ok", (2, 1))


def test_timeouts_are_reported_to_trl():
    metrics = {}
    comps, golds = mixed_batch()
    out = correctness(
        comps, golds, timeout=LIMIT, workers=2, log_metric=lambda k, v: metrics.setdefault(k, v)
    )
    assert out == EXPECTED
    assert metrics["math.correctness/timeouts"] == 2.0  # the two towers


def test_a_broken_install_raises_instead_of_scoring_zero():
    import importlib

    with pytest.raises(ImportError, match="cannot import no_such_module_xyz"):
        pool.run(importlib.import_module, [("no_such_module_xyz",)], timeout=5, workers=2)


ORPHAN_SCRIPT = """
import json, os, signal, threading, time
from grpo_rewards_math import _worker, pool
(pid, ppid), = [o.value for o in pool.run(_worker.ping, [()], timeout=30, workers=2)]
from multiprocessing import resource_tracker
tracker = resource_tracker._resource_tracker._pid
# two checks stuck in C (a power of 10 with a billion digits), holding the GIL
threading.Thread(target=pool.run, args=(pow, [(10, 10**9), (10, 10**9)], 200, 2), daemon=True).start()
time.sleep(1.5)
print(json.dumps({"worker": pid, "forkserver": ppid, "tracker": tracker}), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_no_checker_outlives_a_trainer_killed_with_sigkill(tmp_path):
    import json
    import subprocess

    proc = subprocess.run([sys.executable, "-c", ORPHAN_SCRIPT], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == -9, proc.stderr[-2000:]
    pids = json.loads(proc.stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids.values()):
        time.sleep(0.1)
    left = {name: pid for name, pid in pids.items() if _alive(pid)}
    for pid in left.values():
        os.kill(pid, 9)
    assert not left, f"left running after the trainer died: {left}"


def test_stuck_checks_cost_one_time_limit_per_batch_not_one_per_wave():
    # 8 stuck checks and 2 quick ones on 2 workers: every stuck check starts before
    # the first can time out (spare pools take the waiting ones), so the batch costs
    # one limit, not ceil(8 / 2) of them
    limit = 4.0
    batch = pool._Batch(time.sleep, [(60,)] * 8 + [(0,)] * 2, limit, 2)
    batch.wait()
    out = batch.outcomes()
    assert [o.status for o in out] == ["timeout"] * 8 + ["ok"] * 2
    assert set(range(8)) <= set(batch.started)  # every stuck check ran (a quick one may end unseen)
    # each stuck pair ran in a pool of its own, the quick pair in the 5th: the waiting checks moved on
    # while the pair before them was still stuck (had it timed out first, they would have started in
    # its pool), so all 8 were running before the first limit fired
    assert batch.owner == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert batch.spare == 4
    assert all(spare == 0 for _, spare in pool._pools)  # spare pools are not kept


def test_slow_checks_on_a_loaded_machine_do_not_start_a_pool_every_half_second():
    # every check takes 0.6 s (a busy machine): none is stuck. Before, each 0.5 s every worker
    # counted as blocked and another pool of 2 took the waiting checks (processes without end on
    # a loaded box); now a check is stuck only past 10x the batch's median answer (6 s here)
    batch = pool._Batch(time.sleep, [(0.6,)] * 10, 5.0, 2)
    batch.wait()
    assert [o.status for o in batch.outcomes()] == ["ok"] * 10
    assert batch.spare <= 1  # at most the pool started before the first answer came


def test_spare_pools_are_capped_per_batch():
    # 12 stuck checks on 2 workers: a 5th spare pool would take the last 2; at most 4 (10 checkers),
    # so the 4 checks left in the last pool cost a second wave of the limit there
    batch = pool._Batch(time.sleep, [(60,)] * 12, 1.0, 2)
    batch.wait()
    assert [o.status for o in batch.outcomes()] == ["timeout"] * 12
    assert batch.spare == pool.MAX_SPARES == 4


def test_a_timed_out_check_is_not_remembered_as_an_answer(monkeypatch):
    # a check that ran out of time on a busy machine scores 0.0 for that call only:
    # the same pair is checked again next time (a served 0.5 against \frac{1}{2} once
    # scored 0.0 for the rest of the server's life)
    from grpo_rewards_math import rewards

    n = 7000 + 2 * (os.getpid() % 1000) + 1  # a pair no other test has cached; odd: n/2 is not whole
    comps, golds = [f"Answer: {n / 2}"], [rf"\frac{{{n}}}{{2}}"]
    calls = []
    real = pool.run

    def busy_once(func, keys, timeout, workers):
        calls.append(list(keys))
        return [pool.Outcome("timeout")] * len(keys) if len(calls) == 1 else real(func, keys, timeout, workers)

    monkeypatch.setattr(pool, "run", busy_once)
    metrics = {}
    assert correctness(comps, golds, workers=2, log_metric=lambda k, v: metrics.setdefault(k, v)) == [0.0]
    assert metrics["math.correctness/timeouts"] == 1.0
    assert correctness(comps, golds, workers=2) == [1.0]
    assert len(calls) == 2 and calls[1] == calls[0]
    assert rewards._cached(tuple(calls[0][0])) == (True, True)  # the answer is what is remembered


ROUNDS_SCRIPT = """
import json, threading, time
from grpo_rewards_math import _worker, pool
seen = []
for _ in range(3):  # each round from a thread that ends after it, as a server's request or verl's call
    t = threading.Thread(target=lambda: seen.append([o.value for o in pool.run(_worker.ping, [()] * 4, 30, 2)]))
    t.start()
    t.join()
    time.sleep(0.5)  # a death signal tied to the thread would be delivered by now
print(json.dumps(seen))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_the_pool_outlives_the_thread_that_first_used_it(tmp_path):
    import json
    import subprocess

    proc = subprocess.run([sys.executable, "-c", ROUNDS_SCRIPT], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rounds = json.loads(proc.stdout.strip().splitlines()[-1])
    forkservers = {ppid for r in rounds for _, ppid in r}
    workers = {pid for r in rounds for pid, _ in r}
    assert len(forkservers) == 1  # one forkserver for the three rounds
    assert len(workers) <= 2  # the pool's two checkers, none started again


def test_a_check_lost_with_its_worker_is_rerun_once_then_counted(monkeypatch):

    calls = []

    def fake_run(func, keys, timeout, workers):  # the worker dies on every "lost" pair
        calls.append(list(keys))
        return [pool.Outcome("error", "ProcessExpired") if "777" in k[1] else pool.Outcome("ok", (True, True))
                for k in keys]

    monkeypatch.setattr(pool, "run", fake_run)
    metrics = {}
    n = 5000 + os.getpid() % 1000  # pairs no other test has cached; square roots go to the checker
    golds = [rf"\sqrt{{{n}}}"] * 2
    out = correctness([rf"\boxed{{\sqrt{{{n}}}+0}}", r"\boxed{\sqrt{777}}"], golds, workers=2,
                      log_metric=lambda k, v: metrics.setdefault(k, v))
    assert len(calls) == 2 and len(calls[1]) == 1 and "777" in calls[1][0][1]  # rerun once, alone
    assert out == [1.0, 0.0] and metrics["math.correctness/lost"] == 1.0


def _kill_checkers_during(batch, at: tuple, monkeypatch, workers: int = 2, hang_after: float = 30.0):
    """Run ``batch()`` in a thread; SIGKILL one of the pool's checkers when the share of the
    first batch's checks done reaches each of ``at`` (so every kill lands inside the batch,
    however fast the machine). Returns (its result, seconds taken); fails (instead of
    blocking the suite) when the batch does not end within ``hang_after`` seconds."""
    import random
    import signal

    made = []

    class Recorded(pool._Batch):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(pool, "_Batch", Recorded)
    box = {}
    start = time.monotonic()
    thread = threading.Thread(target=lambda: box.setdefault("out", batch()), daemon=True)
    thread.start()
    rng = random.Random(0)
    for share in at:
        while time.monotonic() - start < hang_after:
            if made and sum(f.done() for f in made[0].futures) >= share * len(made[0].futures):
                break
            time.sleep(0.02)
        pids = pool.get_pool(workers).pids()
        assert "out" not in box and pids, "the batch ended before the kill"
        os.kill(rng.choice(pids), signal.SIGKILL)
    thread.join(max(0.0, hang_after - (time.monotonic() - start)))
    assert not thread.is_alive(), f"the batch hung after a checker was killed ({hang_after:g} s)"
    return box["out"], time.monotonic() - start


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGKILL of a checker process")
def test_a_checker_killed_mid_batch_costs_its_one_task_never_the_batch(monkeypatch):
    # issue 55: with pebble's shared task channel, a checker killed while it held the channel's
    # lock left the other checkers waiting on it for ever (2 hangs in 10). Cheap tasks, so that
    # most of the time goes in handing tasks over, where that lock was held. Three kills.
    pool.run(divmod, [(1, 1)] * 4, 5, 2)  # the pool started: the kills hit a batch's workers
    args = [(k, 7) for k in range(4000)]
    outcomes, took = _kill_checkers_during(lambda: pool.run(divmod, args, 5, 2), (0.2, 0.45, 0.7), monkeypatch)
    lost = [i for i, o in enumerate(outcomes) if o.status != "ok"]
    assert all(o.value == divmod(k, 7) for k, o in enumerate(outcomes) if o.status == "ok")  # none answered wrong
    assert len(lost) <= 3 and all(outcomes[i] == pool.Outcome("error", "WorkerDied") for i in lost)
    assert took < 30
    assert pool.run(divmod, [(9, 4)], 5, 2) == [pool.Outcome("ok", (2, 1))]  # replaced: the pool still answers


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGKILL of a checker process")
def test_math_verdicts_stay_right_when_a_checker_is_killed(monkeypatch):
    # what the rewards see: the check lost with the killed worker is run again, so every
    # pair gets its true verdict (even pairs equal, odd ones not), none scored wrong
    from grpo_rewards_math import rewards

    base = 20_000 + 1000 * (os.getpid() % 50)
    keys = [(str(k), str(k + k % 2)) for k in range(base, base + 300)]
    rewards._check([("1", "1")] * 4, 5.0, 2)
    outcomes, _ = _kill_checkers_during(lambda: rewards._check(keys, 5.0, 2), (0.3,), monkeypatch)
    assert [o.value for o in outcomes] == [(True, k % 2 == 0) for k in range(base, base + 300)]


def test_workers_that_die_as_they_start_fail_the_queue_instead_of_restarting_for_ever():
    from grpo_rewards_math._procs import START_FAILURES, CheckerPool, WorkerDied

    checkers = CheckerPool(1, pool._context(), sys.exit)  # each worker exits before it is ready
    try:
        future = checkers.schedule(divmod, (7, 2), timeout=5)
        error = future.exception(timeout=30)
        assert isinstance(error, WorkerDied) and "exit as they start" in str(error)
        assert START_FAILURES == 3
    finally:
        checkers.stop()
        checkers.join(10)
    assert not checkers.active
    with pytest.raises(RuntimeError, match="stopped"):
        checkers.schedule(divmod, (7, 2))
