"""Benchmark the grpo-rewards-format rewards against TRL's think_format_reward.

    python bench/format_rewards.py [--n 10000] [--chars 2000] [--batch 64] [--repeat 3]

Scores N completions of ~CHARS characters (a deterministic mix of well-formed,
tag-less, trailing-text, JSON and looping completions, conversational shape,
with completion_ids as TRL passes them) with each reward resolved by name
through grpo_core, and in the same run with ``trl.rewards.think_format_reward``
as the yardstick. Prints completions/second and the time per completion as a
ratio to the yardstick (target: <= 2.0). Then times hostile single completions
(100 000 ``<think>`` tags, 1 MB without tags) at half and full size: linear
parsing shows a size ratio near 2.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

os.environ.setdefault("GRPO_PLUGINS", "grpo-rewards-format")

WORDS = (
    "the of and to in is that for it as with was on be by this are or from at an which "
    "so we then if number sum total value answer step first next therefore because "
    "multiply divide add subtract equals gives result check again let consider"
).split()

SPECS = [
    "format.xml_strict",
    "format.xml_soft",
    "format.xml_incremental",
    "format.think_answer",
    "format.json",
    "format.json(schema={'type': 'object', 'required': ['value']})",
    "length.ideal(target=500)",
    "length.soft_overlong",
    "repetition.ngram",
    "format.xml_strict(think_tag='reasoning', answer_tag='solution')",
]


def prose(rng: random.Random, chars: int) -> str:
    out, size = [], 0
    while size < chars:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:chars]


def make_completion(rng: random.Random, chars: int) -> str:
    kind = rng.randrange(6)
    body = prose(rng, chars - 60)
    if kind == 0:  # the target layout
        return f"<think>\n{body}\n</think>\n<answer>\n{rng.randrange(1000)}\n</answer>"
    if kind == 1:  # no tags at all
        return body + "."
    if kind == 2:  # layout, then rambling
        cut = len(body) * 3 // 4
        return f"<think>{body[:cut]}</think><answer>42</answer> {body[cut:]}"
    if kind == 3:  # JSON answer
        return (
            f'<think>{body}</think>\n<answer>{{"value": {rng.randrange(99)}, "unit": "m"}}</answer>'
        )
    if kind == 4:  # a loop
        phrase = prose(rng, 40) + " "
        return "<think>" + (phrase * (chars // len(phrase) + 1))[: chars - 8]
    return f"<think>{body}</think>"  # think only


def fake_ids(rng: random.Random, text: str) -> list[int]:
    return [rng.randrange(50_000) for _ in range(max(1, len(text) // 4))]


def time_batches(func, completions, ids, batch: int) -> float:
    """Seconds to score all completions in TRL-sized calls (one call per batch)."""
    start = time.perf_counter()
    for i in range(0, len(completions), batch):
        kwargs = {"completions": completions[i : i + batch]}
        if ids is not None:
            kwargs["completion_ids"] = ids[i : i + batch]
        func(**kwargs)
    return time.perf_counter() - start


def time_one(func, text: str, repeat: int = 3) -> float:
    best = float("inf")
    completions = [[{"role": "assistant", "content": text}]]
    for _ in range(repeat):
        start = time.perf_counter()
        func(completions=completions)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--chars", type=int, default=2_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    from trl.rewards import think_format_reward

    from grpo_core import compose_rewards, parse_spec

    rng = random.Random(0)
    texts = [make_completion(rng, args.chars) for _ in range(args.n)]
    completions = [[{"role": "assistant", "content": t}] for t in texts]
    ids = [fake_ids(rng, t) for t in texts]
    mean_chars = sum(map(len, texts)) / len(texts)
    funcs = [compose_rewards([parse_spec(s)])[0][0] for s in SPECS]  # one name may recur

    from trl.rewards import get_repetition_penalty_reward, get_soft_overlong_punishment

    YARD = "trl.rewards.think_format_reward (yardstick)"
    references = {
        "  trl get_repetition_penalty_reward(3, -1.0) (same formula)": (
            get_repetition_penalty_reward(3, -1.0)
        ),
        "  trl get_soft_overlong_punishment(512, 128) (same formula)": (
            get_soft_overlong_punishment(512, 128)
        ),
    }
    rows = {YARD: think_format_reward, **dict(zip(SPECS, funcs, strict=True)), **references}
    best = dict.fromkeys(rows, float("inf"))
    for _ in range(args.repeat):  # interleaved rounds: load on the machine hits every row alike
        for name, func in rows.items():
            yard_ids = None if name == YARD else ids
            best[name] = min(best[name], time_batches(func, completions, yard_ids, args.batch))
    yard = best[YARD]
    print(
        f"{args.n} completions, mean {mean_chars:.0f} chars (~{mean_chars / 4:.0f} token ids), "
        f"conversational, batches of {args.batch}, best of {args.repeat} interleaved rounds"
    )
    header = f"{'reward':<66} {'compl/s':>10} {'us/compl':>9} {'x yardstick':>12}"
    print(header)
    print("-" * len(header))
    worst = 0.0
    for name, t in best.items():
        ratio = t / yard
        if name in SPECS:
            worst = max(worst, ratio)
        print(f"{name:<66} {args.n / t:>10.0f} {t / args.n * 1e6:>9.2f} {ratio:>12.2f}")
    print(f"slowest format reward: {worst:.2f}x the yardstick per completion (target <= 2.00)")

    print("\nhostile single completions: ms at half size / full size (size ratio; ~2 = linear)")
    hostile = {
        "100k <think> tags": lambda k: "<think>" * (100_000 // k),
        "1 MB without tags": lambda k: prose(random.Random(1), 1_000_000 // k),
    }
    named = [("trl think_format_reward", think_format_reward)] + list(
        zip(SPECS, funcs, strict=True)
    )
    header = f"{'reward':<66} " + " ".join(f"{h:>28}" for h in hostile)
    print(header)
    print("-" * len(header))
    inputs = {h: (make(2), make(1)) for h, make in hostile.items()}
    slowest = 0.0
    for name, func in named:
        cells = []
        for half, full in inputs.values():
            t_half, t_full = time_one(func, half), time_one(func, full)
            slowest = max(slowest, t_full)
            cells.append(f"{t_half * 1e3:8.3f} / {t_full * 1e3:8.3f} ({t_full / t_half:4.1f})")
        print(f"{name:<66} " + " ".join(f"{c:>28}" for c in cells))
    print(f"slowest hostile completion: {slowest * 1e3:.1f} ms")
    return 0 if worst <= 2.0 else 1


if __name__ == "__main__":
    sys.exit(main())
