"""Benchmark: math.correctness vs trl.rewards.accuracy_reward, same completions, same run.

    python bench/math_reward.py [--n 2000] [--workers N] [--limit 2.0] [--seed 0] [--adversarial-only]

1. Throughput: N varied completions (half short answers, half ~2,000-character
   reasoning texts; boxed, <answer> tags, "the answer is", "####"; integers,
   decimals, fractions, radicals, pi, percentages, polynomials, intervals;
   ~40% wrong) scored by both rewards. Prints completions/s of each, the
   ratio (target >= 1.8x on 2 cores) and how often they agree. Both are
   warmed on another batch first (our pool starts once per training process;
   its start time is printed), so the timed batch is new to both.
2. Adversarial batch (nested parentheses, power towers, a 1 MB text, ...):
   each item alone, then all together; every item's wall time must stay
   within the per-item limit + 0.5 s. TRL's reward is not run on these (its
   signal-based timeout only works in the main thread, and a power tower can
   outlive it). Huge factorials and binomials against a number gold (500000!,
   \\binom{800000}{400000}, (10^6)!, \\frac{500000!}{2}, {800000 \\choose 400000})
   held a checker for the whole limit before issue 40: 5.06-6.01 s each at
   math.correctness's default 5 s limit, against 0.2 ms for the power tower; now
   they are arithmetic left undone, as the tower is: 0.0-0.1 ms each. Here
   (--adversarial-only, --limit 2, 2 shared cores at load 11, 2 workers): the
   five factorial items 2.02-3.40 s each before, under 0.2 ms after; all 19
   items together 9.64 s before, 2.20 s after.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import time


def _gold_and_forms(rng: random.Random) -> tuple[str, list[str], list[str]]:
    """(gold, equivalent forms a model writes, wrong answers)."""
    kind = rng.choice(["int", "int", "int", "dec", "frac", "sqrt", "pi", "pct", "poly", "interval"])
    a, b = rng.randint(2, 999), rng.randint(2, 97)
    if kind == "int":
        n = rng.randint(1, 99_999)
        return str(n), [str(n), f"{n:,}", f"{n}.0", rf"\${n}"], [str(n + d) for d in (-1, 1, 10)]
    if kind == "dec":
        x = round(rng.uniform(0, 100), 2)
        return f"{x}", [f"{x}", f"{x}0"], [f"{x + 0.1:.2f}", f"{x * 10:.1f}"]
    if kind == "frac":
        if a % b == 0:
            a += 1
        right = [
            rf"\frac{{{a}}}{{{b}}}",
            rf"\frac{{{2 * a}}}{{{2 * b}}}",
            rf"\dfrac{{{a}}}{{{b}}}",
            f"{a}/{b}",
        ]
        return (
            rf"\frac{{{a}}}{{{b}}}",
            right,
            [rf"\frac{{{b}}}{{{a}}}", rf"\frac{{{a + 1}}}{{{b}}}"],
        )
    if kind == "sqrt":
        r, k = rng.choice([2, 3, 5, 6, 7, 10, 11]), rng.randint(2, 9)
        right = [rf"{k}\sqrt{{{r}}}", rf"\sqrt{{{k * k * r}}}", rf"{k} \sqrt {r}"]
        return rf"{k}\sqrt{{{r}}}", right, [rf"{k + 1}\sqrt{{{r}}}", rf"\sqrt{{{k * r}}}"]
    if kind == "pi":
        k = rng.randint(2, 30)
        return rf"{k}\pi", [rf"{k}\pi", rf"{k} \pi", rf"\pi \cdot {k}"], [rf"{k + 1}\pi", f"{k}"]
    if kind == "pct":
        p = rng.randint(1, 99)
        return rf"{p}\%", [rf"{p}\%", f"{p}", rf"{p} \%"], [rf"{p + 1}\%", f"{p / 1000}"]
    if kind == "poly":
        right = [rf"x^2 + {a}x + {b}", rf"{b} + {a}x + x^2", rf"x^{{2}}+{a}x+{b}"]
        return rf"x^2 + {a}x + {b}", right, [rf"x^2 + {a}x - {b}", rf"x^2 + {b}x + {a}"]
    lo, hi = sorted((a, b))
    hi += lo == hi
    return (
        f"[{lo}, {hi})",
        [f"[{lo},{hi})", f"[{lo}, {hi})"],
        [f"({lo}, {hi}]", f"[{lo}, {hi + 1})"],
    )


FILLER = [
    r"First, we compute ${a} \times {b} = {ab}$, which gives the number of items per box. ",
    "Then we add {a} and {b} to get {s}, since both groups are counted together. ",
    r"Let $x$ be the unknown quantity; the equation is $x + {a} = {s}$, so $x = {b}$. ",
    "We double-check: {s} - {b} = {a}, which is consistent with the statement. ",
    r"Note that $\frac{{{ab}}}{{{b}}} = {a}$, so the ratio is preserved. ",
    "Hmm, wait. Let me reconsider the second step, because {a} items were already sold. ",
]


def _reasoning(rng: random.Random, chars: int = 2000) -> str:
    parts = ["<think>"] if rng.random() < 0.3 else []
    while sum(map(len, parts)) < chars:
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        parts.append(rng.choice(FILLER).format(a=a, b=b, ab=a * b, s=a + b))
    if parts[0] == "<think>":
        parts.append("</think>\n")
    return "".join(parts)


def make_batch(n: int, seed: int, group: int = 8) -> tuple[list[str], list[str]]:
    """GRPO-shaped: n // group prompts, each with ``group`` completions of one gold."""
    rng = random.Random(seed)
    completions, golds = [], []
    while len(completions) < n:
        gold, right, wrong = _gold_and_forms(rng)
        p_right = rng.uniform(0.2, 0.9)  # how hard the prompt is for the model
        for _ in range(min(group, n - len(completions))):
            final = rng.choice(right) if rng.random() < p_right else rng.choice(wrong)
            style = rng.choices(["boxed", "tags", "phrase", "hash"], weights=[60, 20, 12, 8])[0]
            if style == "boxed":
                tail = rf"Therefore the answer is $\boxed{{{final}}}$."
            elif style == "tags":
                tail = f"<answer>{final}</answer>"
            elif style == "phrase":
                tail = f"The final answer is ${final}$."
            else:
                tail = f"#### {final}"
            body = _reasoning(rng) if rng.random() < 0.5 else ""
            if style == "tags" and body and not body.startswith("<think>"):
                body = f"<think>{body}</think>"
            completions.append(body + tail)
            golds.append(gold)
    return completions, golds


def adversarial_batch() -> list[tuple[str, str, str]]:
    """(label, completion, gold)"""
    return [
        ("power tower", r"\boxed{9^{9^{9^{9}}}}", "1"),
        ("power tower 2^..^2", r"\boxed{2^{2^{2^{2^{2^{2}}}}}}", "1"),
        ("factorial of 10^10", r"\boxed{(10^{10})!}", "1"),
        ("factorial 500000!", r"\boxed{500000!}", "1"),
        ("binomial 800000/400000", r"\boxed{\binom{800000}{400000}}", "1"),
        ("factorial over 2", r"\boxed{\frac{500000!}{2}}", "1"),
        ("factorial of (10^6)", r"\boxed{(10^6)!}", "1"),
        ("tower vs latex gold", r"The answer is $7^{7^{7^{7}}}$.", r"2\sqrt{2}"),
        ("nested parentheses x30", r"\boxed{" + "(" * 30 + "1" + ")" * 30 + "}", "1"),
        ("nested parentheses x8", r"\boxed{" + "(" * 8 + "x+1" + ")" * 8 + "}", "x+1"),
        ("nested fractions x7", r"\boxed{" + r"\frac{1}{" * 7 + "2" + "}" * 7 + "}", "2"),
        ("1 MB text", "a" * 1_000_000, "1"),
        ("1 MB of numbers", "1 " * 500_000, "1"),
        ("1 MB then a box", "word " * 200_000 + r"\boxed{\sqrt{2}}", r"\sqrt{2}"),
        ("unclosed boxes", r"\boxed{" * 2_000, "1"),
        ("5000 parentheses", "(" * 5_000 + ")" * 10, "1"),
        ("huge integer", r"\boxed{" + "9" * 5_000 + "}", "9"),
        ("long sum", r"\boxed{" + "+".join(["x"] * 400) + "}", "400x"),
        ("python power", "The answer is 2**2**2**2**2**2**2**2", "1"),
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument(
        "--workers", type=int, default=None, help="pool size (default: GRPO_MATH_WORKERS or CPUs)"
    )
    ap.add_argument("--limit", type=float, default=2.0, help="per-item time limit, seconds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--group", type=int, default=8, help="completions per prompt (GRPO num_generations)"
    )
    ap.add_argument("--adversarial-only", action="store_true", help="skip the throughput part (and TRL)")
    args = ap.parse_args()
    logging.disable(logging.WARNING)  # math-verify warns on every timeout it handles

    from grpo_rewards_math import correctness, pool

    workers = pool.resolve_workers(args.workers)
    if not args.adversarial_only:
        throughput(args, workers)
    else:
        correctness([r"\boxed{1}"], ["1"], timeout=args.limit, workers=workers)  # pool start, not timed
    return adversarial(args, workers)


def throughput(args: argparse.Namespace, workers: int) -> None:
    from trl.rewards import accuracy_reward

    from grpo_rewards_math import correctness, rewards

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    completions, golds = make_batch(args.n, args.seed, args.group)
    long_share = sum(len(c) > 1500 for c in completions) / len(completions)
    avg_len = sum(map(len, completions)) / len(completions)
    print(
        f"{args.n} completions in GRPO groups of {args.group} ({long_share:.0%} long, mean {avg_len:.0f} chars), "
        f"{len(set(golds))} distinct golds, {len(set(completions))} distinct completions; "
        f"{cpus} CPUs, {workers} checker processes, "
        f"limit {args.limit:g}s"
    )

    # Warm both sides on another batch of the same shape: the pool starts once
    # per training run, and TRL's antlr parser warms its caches too.
    warm_c, warm_g = make_batch(64, args.seed + 1)
    start = time.perf_counter()
    correctness(warm_c, warm_g, timeout=args.limit, workers=workers)
    t_start = time.perf_counter() - start
    accuracy_reward([[{"role": "assistant", "content": c}] for c in warm_c], warm_g)

    conversational = [[{"role": "assistant", "content": c}] for c in completions]
    start = time.perf_counter()
    theirs = accuracy_reward(conversational, golds)
    t_trl = time.perf_counter() - start
    rewards._verdicts.clear()
    start = time.perf_counter()
    ours = correctness(completions, golds, timeout=args.limit, workers=workers)
    t_ours = time.perf_counter() - start

    n = len(completions)
    print(f"  pool start + first 64 items: {t_start:.2f}s (once per training process)")
    print(f"  trl accuracy_reward  {n / t_trl:8.1f} completions/s  ({t_trl:.2f}s)")
    print(f"  math.correctness     {n / t_ours:8.1f} completions/s  ({t_ours:.2f}s)")
    print(f"  ratio {t_trl / t_ours:.2f}x  (target >= 1.8x on 2 cores)")
    same = sum((a == 1.0) == (b == 1.0) for a, b in zip(ours, theirs))
    only_ours = [i for i in range(n) if ours[i] == 1.0 and theirs[i] != 1.0]
    only_trl = [i for i in range(n) if theirs[i] == 1.0 and ours[i] != 1.0]
    print(
        f"  agreement (1.0 vs not 1.0): {same / n:.1%}; 1.0 from ours only: {len(only_ours)}, "
        f"from trl only: {len(only_trl)}; scored 1.0: ours {sum(v == 1.0 for v in ours)}, "
        f"trl {sum(v == 1.0 for v in theirs)}"
    )
    # TRL reads a gold without $...$ as its first number (2\sqrt{2} -> 2); the usual
    # workaround is to wrap golds. Agreement with that fairer baseline (not timed):
    wrapped = accuracy_reward(conversational, [f"${g}$" for g in golds])
    same_w = sum((a == 1.0) == (b == 1.0) for a, b in zip(ours, wrapped))
    print(
        f"  agreement with trl on $-wrapped golds: {same_w / n:.1%} "
        f"(trl then scores 1.0 on {sum(v == 1.0 for v in wrapped)})"
    )
    for i in only_trl[:3]:
        print(f"    trl-only 1.0: gold={golds[i]!r} ending={completions[i][-60:]!r}")
    for i in only_ours[:3]:
        print(f"    ours-only 1.0: gold={golds[i]!r} ending={completions[i][-60:]!r}")


def adversarial(args: argparse.Namespace, workers: int) -> int:
    from grpo_rewards_math import correctness, rewards

    print(f"\nadversarial items, limit {args.limit:g}s (each alone, then all at once):")
    worst = 0.0
    for label, comp, gold in adversarial_batch():
        start = time.perf_counter()
        out = correctness([comp], [gold], timeout=args.limit, workers=workers)
        took = time.perf_counter() - start
        worst = max(worst, took)
        flag = "ok" if took <= args.limit + 0.5 else "OVER"
        print(f"  {label:24s} {took:7.4f}s  score {out[0]}  {flag}")
    items = adversarial_batch()
    rewards._verdicts.clear()
    start = time.perf_counter()
    out = correctness(
        [c for _, c, _ in items], [g for _, _, g in items], timeout=args.limit, workers=workers
    )
    took = time.perf_counter() - start
    print(
        f"  all {len(items)} together: {took:.2f}s on {workers} workers, scores {out}; "
        f"worst single item {worst:.2f}s (limit + 0.5 = {args.limit + 0.5:g}s)"
    )
    return 0 if worst <= args.limit + 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
