"""Benchmark: code.tests in the sandbox vs a bare subprocess.run per item, same completions, same run.

    python bench/code_reward.py [--n 1000] [--workers N] [--backends bwrap,unshare,rlimits] [--rounds 10]

N MBPP-style completions (12 tasks with 3 asserts each, like MBPP's; about 60%
right, the rest wrong in one or more tests; every completion distinct, so
nothing is deduplicated) are scored all-or-nothing:

- baseline: ``subprocess.run([python, "-S", "-s", "-B", "-c", code + tests])`` per
  item, one after another, exit status 0 = pass: what a reward without a sandbox
  does (same interpreter and flags as the sandbox, so the difference is the
  sandbox: namespaces, harness, limits, seccomp, verdict channel); run twice as
  an A/A check of the noise;
- ``code.tests(all_or_nothing=True)`` through each backend that works here, with
  1 sandbox at a time (the per-item overhead against the baseline, in ms) and
  with the default pool (``GRPO_CODE_WORKERS`` or the CPUs).

The batch is cut into rounds and every configuration runs each round in turn, so
a machine whose load drifts during the run slows all of them alike. Prints
completions/s of each, the ratios and whether every verdict agrees.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
import warnings

# (function source, tests, wrong variants): MBPP-like tasks
TASKS = [
    ("def remove_Occ(s, ch):\n    i = s.find(ch)\n    if i >= 0:\n        s = s[:i] + s[i + 1:]\n"
     "    j = s.rfind(ch)\n    if j >= 0:\n        s = s[:j] + s[j + 1:]\n    return s\n",
     ['assert remove_Occ("hello","l") == "heo"', 'assert remove_Occ("abcda","a") == "bcd"',
      'assert remove_Occ("PHP","P") == "H"'],
     ["def remove_Occ(s, ch):\n    return s.strip(ch)\n", "def remove_Occ(s, ch):\n    return s.replace(ch, '', 1)\n"]),
    ("import math\ndef is_not_prime(n):\n    return any(n % i == 0 for i in range(2, int(math.sqrt(n)) + 1))\n",
     ["assert is_not_prime(2) == False", "assert is_not_prime(10) == True", "assert is_not_prime(35) == True"],
     ["def is_not_prime(n):\n    return n % 2 == 0\n", "def is_not_prime(n):\n    return n > 2\n"]),
    ("import heapq\ndef heap_queue_largest(nums, n):\n    return heapq.nlargest(n, nums)\n",
     ["assert heap_queue_largest([25, 35, 22, 85, 14, 65, 75, 22, 58], 3) == [85, 75, 65]",
      "assert heap_queue_largest([25, 35, 22, 85, 14, 65, 75, 22, 58], 2) == [85, 75]",
      "assert heap_queue_largest([25, 35, 22, 85, 14, 65, 75, 22, 58], 5) == [85, 75, 65, 58, 35]"],
     ["def heap_queue_largest(nums, n):\n    return sorted(nums)[:n]\n"]),
    ("def similar_elements(a, b):\n    return tuple(sorted(set(a) & set(b)))\n",
     ["assert similar_elements((3, 4, 5, 6), (5, 7, 4, 10)) == (4, 5)",
      "assert similar_elements((1, 2, 3, 4), (5, 4, 3, 7)) == (3, 4)",
      "assert similar_elements((11, 12, 14, 13), (17, 15, 14, 13)) == (13, 14)"],
     ["def similar_elements(a, b):\n    return tuple(set(a) | set(b))\n"]),
    ("import re\ndef find_char_long(text):\n    return re.findall(r'\\b\\w{4,}\\b', text)\n",
     ["assert find_char_long('Please move back to stream') == ['Please', 'move', 'back', 'stream']",
      "assert find_char_long('Jing Eco and Tech') == ['Jing', 'Tech']",
      "assert find_char_long('Jhingai wulu road Zone 3') == ['Jhingai', 'wulu', 'road', 'Zone']"],
     ["def find_char_long(text):\n    return [w for w in text.split() if len(w) > 4]\n"]),
    ("def square_nums(nums):\n    return [x * x for x in nums]\n",
     ["assert square_nums([1, 2, 3]) == [1, 4, 9]", "assert square_nums([10, 20]) == [100, 400]",
      "assert square_nums([12, 15]) == [144, 225]"],
     ["def square_nums(nums):\n    return [x * 2 for x in nums]\n"]),
    ("def find_Rotations(s):\n    n = len(s)\n    for i in range(1, n + 1):\n        if s[i:] + s[:i] == s:\n"
     "            return i\n    return n\n",
     ['assert find_Rotations("aaaa") == 1', 'assert find_Rotations("ab") == 2', 'assert find_Rotations("abc") == 3'],
     ["def find_Rotations(s):\n    return len(s)\n"]),
    ("def small_nnum(lst, n):\n    return sorted(lst)[:n]\n",
     ["assert small_nnum([10, 20, 50, 70, 90, 20, 50, 40, 60, 80, 100], 2) == [10, 20]",
      "assert small_nnum([10, 20, 50, 70, 90, 20, 50, 40, 60, 80, 100], 5) == [10, 20, 20, 40, 50]",
      "assert small_nnum([10, 20, 50, 70, 90, 20, 50, 40, 60, 80, 100], 3) == [10, 20, 20]"],
     ["def small_nnum(lst, n):\n    return sorted(set(lst))[:n]\n"]),
    ("def count_ways(n):\n    a, b = 1, 0\n    if n % 2:\n        return 0\n    x, y = 1, 1\n    for _ in range(n // 2):\n"
     "        x, y = 4 * x - y, x\n    return x\n",
     ["assert count_ways(2) == 3", "assert count_ways(8) == 153", "assert count_ways(12) == 2131"],
     ["def count_ways(n):\n    return 3 ** (n // 2)\n"]),
    ("def differ_At_One_Bit_Pos(a, b):\n    x = a ^ b\n    return x != 0 and x & (x - 1) == 0\n",
     ["assert differ_At_One_Bit_Pos(13, 9) == True", "assert differ_At_One_Bit_Pos(15, 8) == False",
      "assert differ_At_One_Bit_Pos(2, 4) == False"],
     ["def differ_At_One_Bit_Pos(a, b):\n    return a != b\n"]),
    ("def word_len(s):\n    return len(s) % 2 == 1\n",
     ['assert word_len("Hadoop") == False', 'assert word_len("great") == True', 'assert word_len("structure") == True'],
     ["def word_len(s):\n    return len(s) % 2 == 0\n"]),
    ("def tetrahedral_number(n):\n    return n * (n + 1) * (n + 2) // 6\n",
     ["assert tetrahedral_number(5) == 35", "assert tetrahedral_number(6) == 56", "assert tetrahedral_number(7) == 84"],
     ["def tetrahedral_number(n):\n    return n * (n + 1) // 2\n"]),
]


def make_batch(n: int, seed: int) -> tuple[list[str], list[list[str]], list[str]]:
    """(completions, tests per completion, the code alone) with a distinct comment in each."""
    rng = random.Random(seed)
    completions, tests, codes = [], [], []
    for i in range(n):
        gold, task_tests, wrong = TASKS[i % len(TASKS)]
        code = gold if rng.random() < 0.6 else rng.choice(wrong)
        code = f"# sample {i}\n{code}"
        codes.append(code)
        completions.append(f"Here is my solution.\n```python\n{code}```\n")
        tests.append(task_tests)
    return completions, tests, codes


def bare(codes: list[str], tests: list[list[str]], python: str, timeout: float) -> list[float]:
    out = []
    for code, ts in zip(codes, tests):
        try:
            done = subprocess.run([python, "-S", "-s", "-B", "-c", code + "\n" + "\n".join(ts) + "\n"],
                                  capture_output=True, timeout=timeout)
            out.append(1.0 if done.returncode == 0 else 0.0)
        except subprocess.TimeoutExpired:
            out.append(0.0)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=None, help="pool size (default: GRPO_CODE_WORKERS or CPUs)")
    ap.add_argument("--backends", default="bwrap,unshare,rlimits", help="comma-separated; those that work here")
    ap.add_argument("--rounds", type=int, default=10, help="the batch is cut in rounds; each round runs every "
                                                          "configuration, so load that drifts hits all alike")
    ap.add_argument("--timeout", type=float, default=5.0)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # rlimits named on purpose: its one-time warning is not news here

    from grpo_rewards_code import backends, rewards, sandbox

    workers = sandbox.resolve_workers(args.workers)
    python = backends.interpreter()
    completions, tests, codes = make_batch(args.n, args.seed)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"{args.n} MBPP-style completions ({len(TASKS)} tasks x 3 asserts, all distinct), {cpus} CPUs, "
          f"pool of {workers}, python {sys.version.split()[0]} ({python}), {args.rounds} rounds")
    configs = [("bare", 1), ("bare again (A/A)", 1)]
    for name in args.backends.split(","):
        reason = sandbox.probe(name)
        if reason:
            print(f"  {name:8} not available here: {reason}")
            continue
        configs += [(name, w) for w in sorted({1, workers})]
    rewards.tests(completions[:8], tests=tests[:8], all_or_nothing=True)  # warm caches and the probes

    took = {c: 0.0 for c in configs}
    verdicts: dict = {c: [] for c in configs}
    size = -(-args.n // args.rounds)
    for start in range(0, args.n, size):
        part = slice(start, start + size)
        for name, w in configs:
            t0 = time.perf_counter()
            if name.startswith("bare"):
                got = bare(codes[part], tests[part], python, args.timeout)
            else:
                got = rewards.tests(completions[part], tests=tests[part], all_or_nothing=True, sandbox=name,
                                    workers=w, timeout=args.timeout)
            took[(name, w)] += time.perf_counter() - t0
            verdicts[(name, w)] += got

    n, t_bare = args.n, took[("bare", 1)]
    base = verdicts[("bare", 1)]
    print(f"  {'bare subprocess.run':24} {n / t_bare:7.1f} completions/s  ({t_bare / n * 1000:6.1f} ms/item)"
          f"   passed {sum(base):.0f}/{n}")
    for (name, w), t in took.items():
        if name == "bare":
            continue
        if name.startswith("bare"):
            print(f"  {name:24} {n / t:7.1f} completions/s  ({t / n * 1000:6.1f} ms/item; {t / t_bare:.2f}x the first)")
            continue
        agree = "all verdicts agree" if verdicts[(name, w)] == base else \
            f"{sum(a != b for a, b in zip(verdicts[(name, w)], base))} verdicts differ"
        extra = (f"overhead {(t - t_bare) / n * 1000:+5.1f} ms/item" if w == 1 else
                 f"{t_bare / t:.2f}x the bare loop's speed")
        print(f"  {name + f', {w} at a time':24} {n / t:7.1f} completions/s  ({t / n * 1000:6.1f} ms/item; "
              f"{extra}; {agree})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
