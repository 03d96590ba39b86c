"""A quickstart step on a CPU alone and beside one busy process, before and after
grpo chose its threads for a shared machine (issue 40, item 7).

Each arm runs ``grpo train examples/quickstart.yaml`` for a few steps twice: alone, then
beside a busy process (a pure-Python spin loop on one core, in a session of its own, as a
job from another terminal is), and prints each step's seconds and the ratio busy/alone:

- ``old``: what grpo did before: torch's own threads while sampling
  (``--model.generation_threads null``) and GNU OpenMP's default wait, threads spinning
  about 300,000 rounds before they sleep (``GOMP_SPINCOUNT=300000``, libgomp's own value
  when nothing is set, which grpo leaves as the user's);
- ``new``: grpo's defaults: ``model.generation_threads: auto``, each training step
  (sampling, loss, backward) on the cores other processes leave idle, chosen at its
  start; OpenMP's own wait.

A fair share of two cores beside one busy process is 2x (one core each). The first step
is left out of the ratio (it pays one-time costs); the work of a step is fixed by turning
dynamic sampling off (one generation of 8 completions and one update per step; with
``--dynamic``, the quickstart's up to 3 generations a step, whose count differs between
runs). Completions stop at an end token, so a run that samples other tokens does other
work: the mean completion length of each run is printed beside its times.

The machine's load average is printed for every run: "alone" means beside whatever else
runs on the machine, so measure on a quiet one.

    python bench/contention.py                      # 3 steps a run, 4 runs, ~5 min on 2 quiet cores
    python bench/contention.py --steps 4 --arms new --dynamic
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARMS = {
    "old": ({"GOMP_SPINCOUNT": "300000"}, ["--model.generation_threads", "null"]),
    "new": ({}, []),
}
# the user's own say over threads and waiting, left out of both arms
CLEARED = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
SPIN = "while True:\n    pass\n"


def load() -> float:
    return os.getloadavg()[0]


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far (user + system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def train(arm: str, config: Path, out: Path, steps: int, dynamic: bool) -> dict:
    """One ``grpo train`` run of ``arm``: each step's seconds and mean completion length."""
    extra_env, extra_args = ARMS[arm]
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", **extra_env)
    cmd = [sys.executable, "-m", "grpo_core", "train", str(config), "--output_dir", str(out),
           "--max_steps", str(steps), "--heldout.enabled", "false", "--save_strategy", "no", "--no-check",
           "--logging_steps", "1", *extra_args]
    if not dynamic:
        cmd += ["--sampling.dynamic", "false"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if proc.returncode != 0:
        sys.exit(f"grpo train ({arm}) failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    recs = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    end = next(r for r in recs if "train_runtime" in r)
    logged = [r for r in recs if "reward" in r]
    times = [end["time"] - end["train_runtime"]] + [r["time"] for r in logged]
    return {"steps": [b - a for a, b in zip(times, times[1:])],
            "length": statistics.mean(r.get("completions/mean_length", float("nan")) for r in logged),
            "fewer_threads": "sampling on" in proc.stdout + proc.stderr}


def beside_busy(run) -> tuple[dict, float]:
    """``run()`` beside a busy process on one core; also the cores that process got."""
    spin = subprocess.Popen([sys.executable, "-c", SPIN], start_new_session=True)
    try:
        time.sleep(1.0)
        t0, c0 = time.monotonic(), cpu_seconds(spin.pid)
        result = run()
        got = (cpu_seconds(spin.pid) - c0) / (time.monotonic() - t0)
    finally:
        spin.kill()
        spin.wait()
    return result, got


def per_step(result: dict) -> float:
    """Median seconds of a run's steps after the first (the first alone when it is all)."""
    return statistics.median(result["steps"][1:] or result["steps"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps per run (default 3; the first is left out)")
    parser.add_argument("--arms", nargs="+", choices=sorted(ARMS), default=["old", "new"])
    parser.add_argument("--config", type=Path, default=ROOT / "examples" / "quickstart.yaml")
    parser.add_argument("--dynamic", action="store_true", help="keep the quickstart's dynamic sampling")
    opts = parser.parse_args()
    if opts.steps < 1:
        parser.error(f"--steps {opts.steps}: give 1 or more")

    print(f"{os.cpu_count()} cores, load average at start {load():.2f}; {opts.config.name}, {opts.steps} steps "
          f"a run, dynamic sampling {'on' if opts.dynamic else 'off'}", flush=True)
    ratios, alone = {}, {}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="grpo-contention-") as tmp:
        for arm in opts.arms:
            rows = {}
            for where in ("alone", "busy"):
                before = load()
                out = Path(tmp) / f"{arm}-{where}"
                run = functools.partial(train, arm, opts.config, out, opts.steps, opts.dynamic)
                result, got = (run(), None) if where == "alone" else beside_busy(run)
                rows[where] = result
                steps = " ".join(f"{s:.1f}" for s in result["steps"])
                spun = f", busy process got {got:.2f} cores" if got is not None else ""
                fewer = ", sampled on fewer threads" if result["fewer_threads"] else ""
                print(f"{arm:4} {where:6} s/step {per_step(result):7.1f}  (steps: {steps})  mean completion "
                      f"{result['length']:.1f} tokens  load {before:.2f} -> {load():.2f}{spun}{fewer}", flush=True)
            ratios[arm] = per_step(rows["busy"]) / per_step(rows["alone"])
            alone[arm] = per_step(rows["alone"])
    print()
    print(f"{len(opts.arms) * 2} runs in {time.perf_counter() - t0:.0f}s; load average at end {load():.2f}")
    for arm, ratio in ratios.items():
        print(f"{arm}: a step beside one busy process takes {ratio:.2f}x the step alone "
              f"(fair share 2x; target <= 2.5x)")
    if len(alone) == 2:
        print(f"alone, new/old: {alone['new'] / alone['old']:.2f}x (what the wait policy and thread choice cost "
              f"or save on a machine left to the run)")


if __name__ == "__main__":
    main()
