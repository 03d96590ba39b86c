"""Cold start of listing commands: `grpo rewards list` and `grpo envs list` (with every installed plugin)
against, in the same run, a bare interpreter start and an `import trl` (what a
listing command that imported the training stack would pay).

    python bench/cold_start.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def median_seconds(cmd: list[str], runs: int, env: dict) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    env = dict(os.environ)
    env.pop("GRPO_PLUGINS", None)  # every installed plugin loads, as for a user
    py = sys.executable
    cases = {
        "python -c pass (baseline)": [py, "-c", "pass"],
        "grpo rewards list": [py, "-m", "grpo_core", "rewards", "list"],
        "grpo datasets list": [py, "-m", "grpo_core", "datasets", "list"],
        "grpo envs list": [py, "-m", "grpo_core", "envs", "list"],
        "grpo --help": [py, "-m", "grpo_core", "--help"],
        "python -c 'import trl'": [py, "-c", "import trl"],
    }
    results = {name: median_seconds(cmd, args.runs, env) for name, cmd in cases.items()}
    base = results["python -c pass (baseline)"]
    print(f"median of {args.runs} cold starts each")
    print(f"{'command':34} {'median s':>9} {'x baseline':>11}")
    for name, t in results.items():
        print(f"{name:34} {t:9.3f} {t / base:11.2f}")
    for name in ("grpo rewards list", "grpo envs list"):
        verdict = "OK" if results[name] < 0.3 else "OVER"
        print(f"{name}: {results[name]:.3f} s (target < 0.3 s: {verdict})")
    ratio = results["grpo envs list"] / results["grpo rewards list"]
    print(f"grpo envs list / grpo rewards list: {ratio:.2f}")


if __name__ == "__main__":
    main()
