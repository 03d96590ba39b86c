"""`grpo score` throughput on N lines of format rewards, against a baseline in the
same run: reading and JSON-decoding the same file (the floor any scorer pays).

    python bench/score_throughput.py [--lines 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time

REWARDS = ["format.xml_strict", "format.xml_soft", "format.xml_incremental:0.5",
           "format.think_answer", "repetition.ngram", "length.ideal(target=200)"]


def make_file(path: str, n: int) -> None:
    rng = random.Random(0)
    with open(path, "w") as fh:
        for i in range(n):
            a = rng.randint(1, 1000)
            think = " ".join(rng.choice(["so", "then", "add", "carry", str(a)]) for _ in range(rng.randint(5, 60)))
            kind = i % 3
            if kind == 0:
                c = f"<think>{think}</think>\n<answer>{a}</answer>"
            elif kind == 1:
                c = [{"role": "assistant", "content": f"{think}. The answer is {a}."}]
            else:
                c = f"<answer>{a}</answer> trailing {think}"
            fh.write(json.dumps({"completion": c, "answer": str(a)}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "c.jsonl")
        make_file(src, args.lines)
        start = time.perf_counter()
        with open(src) as fh:
            rows = [json.loads(line) for line in fh]
        base = time.perf_counter() - start
        assert len(rows) == args.lines
        env = dict(os.environ, GRPO_PLUGINS="grpo-rewards-format")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "grpo_core", "score", "--rewards", *REWARDS, "--input", src,
                        "--group-size", "8", "--output", os.path.join(tmp, "s.jsonl")],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        took = time.perf_counter() - start
    print(f"{args.lines} lines, {len(REWARDS)} format rewards, per-line JSONL output")
    print(f"baseline (read + json.loads only): {base:.2f} s  ({args.lines / base:,.0f} lines/s)")
    print(f"grpo score (whole command):        {took:.2f} s  ({args.lines / took:,.0f} lines/s)")
    print(f"ratio grpo score / baseline: {took / base:.1f}x")


if __name__ == "__main__":
    main()
