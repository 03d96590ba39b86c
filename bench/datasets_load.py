"""Benchmark loading synthetic arithmetic rows and building TRL prompts.

    python bench/datasets_load.py [--n 100000] [--level 1,2,3,4,5] [--few-shot 2] [--repeat 3]

Loads N rows with ``grpo_core.load_dataset("arithmetic", ...)`` (through the
plugin, parameters checked by the core) and builds the conversational prompt
column with ``grpo_core.build_prompts(ds, system_prompt="plain", few_shot=K)``.
Prints the seconds of each step (best of --repeat; target: a few seconds in all for
100 000 rows) and, as a yardstick measured in the same run, the same two steps on N
constant rows made with ``datasets.Dataset.from_dict``: the ratio is what
generating real problems costs over the floor set by ``datasets`` itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("GRPO_PLUGINS", "grpo-datasets")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def best(fn, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return min(times), result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--level", default="1,2,3,4,5")
    parser.add_argument("--few-shot", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    levels = [int(v) for v in args.level.split(",")]

    t = time.perf_counter()
    import datasets

    import grpo_core

    datasets.disable_progress_bars()
    import_s = time.perf_counter() - t
    grpo_core.list_datasets()  # plugin loading, once

    load_s, ds = best(lambda: grpo_core.load_dataset("arithmetic", size=args.n, level=levels), args.repeat)
    prompts_s, out = best(
        lambda: grpo_core.build_prompts(ds, system_prompt="plain", few_shot=args.few_shot), args.repeat
    )
    assert len(out) == args.n - args.few_shot and out[0]["prompt"][-1]["role"] == "user"

    def floor_load():
        return datasets.Dataset.from_dict({"question": ["What is 7 + 5?"] * args.n, "answer": ["12"] * args.n})

    floor_load_s, floor = best(floor_load, args.repeat)
    floor_prompts_s, _ = best(
        lambda: grpo_core.build_prompts(floor, system_prompt="plain", few_shot=args.few_shot), args.repeat
    )

    total, floor_total = load_s + prompts_s, floor_load_s + floor_prompts_s
    print(f"rows: {args.n}, levels {levels}, few_shot={args.few_shot}, best of {args.repeat}")
    print(f"import datasets + grpo_core:   {import_s:7.3f} s (once)")
    print(f"load_dataset('arithmetic'):    {load_s:7.3f} s   ({args.n / load_s:,.0f} rows/s)")
    print(f"build_prompts(plain, {args.few_shot}-shot):  {prompts_s:7.3f} s   ({args.n / prompts_s:,.0f} rows/s)")
    print(f"total:                         {total:7.3f} s")
    print(f"yardstick (constant rows):     {floor_total:7.3f} s   "
          f"(from_dict {floor_load_s:.3f} s + build_prompts {floor_prompts_s:.3f} s)")
    print(f"ratio total / yardstick:       {total / floor_total:7.2f}")
    print(f"target (a few seconds for 100 000 rows): {'ok' if total <= 5 else 'SLOW'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
