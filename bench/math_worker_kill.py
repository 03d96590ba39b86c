"""Benchmark: SIGKILL one math checker in the middle of a batch, many times.

    python bench/math_worker_kill.py [--runs 50] [--n 3000] [--workers 2] [--hang-after 120]

Each run is a fresh process (a fresh pool): it warms the pool, starts a batch of
``--n`` checks (``_worker.check`` on integer pairs, half equal, as the rewards send
them) from a thread, kills one checker process with SIGKILL at a random moment
inside the batch, and waits for the batch. The batch goes through
``rewards._check``, as ``math.correctness`` does: a check whose worker died is
run once more. A run passes when it finishes and every item is either scored
right or unscored (``error``/``timeout``, which the rewards report as lost or
timed out, never as a wrong answer); a run still waiting after ``--hang-after``
seconds is a hang (the pool's own deadline for 3,000 items on 2 workers at the
default 5 s limit is 2.9 hours, printed as ``batch limit``).

Before issue 55 (pebble's ProcessPool: one task channel shared by the workers,
guarded by a lock a killed worker could hold for ever): 2 hangs in 10 runs on
this 2-core machine. Numbers of the current pool: see the commit that added this
script and docs/rewards.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys

TRIAL = r"""
import json, os, random, signal, sys, threading, time
from multiprocessing import forkserver
from grpo_rewards_math import pool, rewards, _worker

n, workers, timeout, seed, hang_after = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
import faulthandler
faulthandler.dump_traceback_later(hang_after + 60, exit=True)  # stuck anywhere (the warm-up too): every stack, then exit
rng = random.Random(seed)
keys = [(str(k), str(k + (k % 2))) for k in range(1000, 1000 + n)]  # even k: equal, odd k: not
expected = [(True, k % 2 == 0) for k in range(1000, 1000 + n)]
pool.run(_worker.check, [("1", "1")] * (2 * workers), timeout, workers)  # start and warm the pool (not timed)
fs = forkserver._forkserver._forkserver_pid

def checkers():
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] != "Z" and int(fields[1]) == fs:
                pids.append(int(entry))
    return pids

box = {}
def batch():  # as rewards._check: the batch, then the checks whose worker died once more
    b = box["batch"] = pool._Batch(_worker.check, keys, timeout, workers)
    b.wait()
    out = b.outcomes()
    again = [i for i, o in enumerate(out) if o.status == "error"]
    for i, o in zip(again, pool.run(_worker.check, [keys[i] for i in again], timeout, workers) if again else []):
        out[i] = o
    box["again"] = len(again)
    box["out"] = out

start = time.monotonic()
t = threading.Thread(target=batch, daemon=True)
t.start()
time.sleep(rng.uniform(0.2, float(sys.argv[6])))
victims = checkers()
victim = rng.choice(victims) if victims else None
killed_at = time.monotonic() - start
mid_batch = "out" not in box
if victim:
    os.kill(victim, signal.SIGKILL)
t.join(hang_after)
took = time.monotonic() - start
if t.is_alive():  # slow or stuck? what got done, and what is done 10 s later; every thread's stack
    import faulthandler
    done = lambda: sum(f.done() for f in box["batch"].futures) if "batch" in box else None
    first = done()
    time.sleep(10)
    faulthandler.dump_traceback(all_threads=True)
    print(json.dumps({"hang": True, "took": took, "killed_at": killed_at, "victim": victim, "done": first,
                      "done_10s_later": done(), "spare_pools": getattr(box.get("batch"), "spare", None)}), flush=True)
    os._exit(3)
out = box["out"]
right = sum(o.status == "ok" and tuple(o.value) == e for o, e in zip(out, expected))
wrong = sum(o.status == "ok" and tuple(o.value) != e for o, e in zip(out, expected))
unscored = sum(o.status != "ok" for o in out)
print(json.dumps({"hang": False, "took": took, "killed_at": killed_at, "victim": victim, "mid_batch": mid_batch,
                  "right": right, "wrong": wrong, "unscored": unscored, "rerun": box["again"],
                  "spare_pools": box["batch"].spare}), flush=True)
"""


def batch_limit(n: int, workers: int, timeout: float) -> float:
    """The pool's own bound on one batch (pool._Batch.deadline)."""
    return (math.ceil(n / workers) + 1) * (timeout + 2.0) + 30.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=5.0, help="per-item limit (math.correctness's default)")
    ap.add_argument("--hang-after", type=float, default=120.0, help="seconds after which a run counts as hung")
    ap.add_argument("--kill-within", type=float, default=4.0, help="the kill comes 0.2 s to this many s in")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    limit = batch_limit(args.n, args.workers, args.timeout)
    print(f"{args.runs} runs: {args.n} checks, {args.workers} workers, limit {args.timeout:g} s an item, "
          f"one worker SIGKILLed 0.2-{args.kill_within:g} s in; batch limit {limit:.0f} s "
          f"({limit / 3600:.1f} h); a run waiting past {args.hang_after:g} s counts as hung", flush=True)
    rows = []
    for run in range(args.runs):
        cmd = [sys.executable, "-c", TRIAL, str(args.n), str(args.workers), str(args.timeout),
               str(args.seed * 1000 + run), str(args.hang_after), str(args.kill_within)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.hang_after + 120)
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            if row["hang"]:
                print(proc.stderr[-6000:], file=sys.stderr)
        except (subprocess.TimeoutExpired, IndexError, json.JSONDecodeError) as exc:
            row = {"hang": True, "took": None, "error": type(exc).__name__}
            out = exc.stdout if isinstance(exc, subprocess.TimeoutExpired) else proc.stdout
            out = (out.decode() if isinstance(out, bytes) else out or "").strip()
            if out.startswith("{"):  # the batch was done: the process did not exit
                row = dict(json.loads(out.splitlines()[-1]), hang=True, error="no exit after the batch")
            err = exc.stderr if isinstance(exc, subprocess.TimeoutExpired) else proc.stderr
            print((err.decode() if isinstance(err, bytes) else err or "")[-12000:], file=sys.stderr)
        rows.append(row)
        print(f"  run {run + 1:2d}: {json.dumps(row)}", flush=True)
    hangs = sum(r["hang"] for r in rows)
    done = [r for r in rows if not r["hang"]]
    wrong = sum(r.get("wrong", 0) for r in done)
    times = [r["took"] for r in done]
    print(f"\nkills inside the batch: {sum(bool(r.get('mid_batch')) for r in done)} of {len(done)} finished runs; "
          f"checks lost with the killed worker and run again: {sum(r.get('rerun', 0) for r in done)}")
    print(f"hung: {hangs} of {len(rows)}; finished: {len(done)}; items scored wrong: {wrong}; "
          f"items unscored: {sum(r.get('unscored', 0) for r in done)}; "
          f"runs with every item right: {sum(r.get('right') == args.n for r in done)}")
    if times:
        print(f"wall time of the finished runs: min {min(times):.1f} s, median {statistics.median(times):.1f} s, "
              f"max {max(times):.1f} s (batch limit {limit:.0f} s)")
    return 0 if not hangs and not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
