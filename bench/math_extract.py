"""Benchmark: answer extraction (grpo_rewards_math.extract) on hostile text, in linear time.

    python bench/math_extract.py [--chars 100000] [--repeat 5]

Each hostile pattern (tag floods, unclosed boxes, phrase floods, number runs,
deep brackets...) is repeated to CHARS/2 and to CHARS characters (at most
MAX_TEXT_CHARS: longer texts are cut to it first) and read with
``extract_answer(..., fallback_last_number=True)`` then ``to_math``. Prints,
per pattern, the best time at full size, its ratio to benign prose of the same
length (the baseline, measured in the same run) and the full/half size ratio:
linear parsing shows about 2, quadratic about 4. Replaces a timed test
(tests/math/test_math_extract.py keeps the answers and the size bound).
"""

from __future__ import annotations

import argparse
import time

from grpo_rewards_math.extract import MAX_TEXT_CHARS, extract_answer, to_math

PATTERNS = {
    "<answer> flood": "<answer>",
    "unclosed \\boxed{": "\\boxed{",
    "'answer is' flood": "answer is ",
    "$ run": "$",
    "1, run": "1,",
    "( run": "(",
    "no structure": "a",
    "boxes joined by 'and'": " and",
    "'answer:' then $x$": "$x$ ",
}
PROSE = "so we add the two numbers and carry the one, which gives the total. "


def text_of(unit: str, chars: int) -> str:
    body = (unit * (chars // len(unit) + 1))[:chars]
    if unit == " and":
        return "\\boxed{1}" + body[18:] + "\\boxed{2}"
    if unit == "$x$ ":
        return "answer: " + body[8:]
    return body


def best_time(text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        to_math(extract_answer(text, fallback_last_number=True).answer)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=MAX_TEXT_CHARS)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    full = min(args.chars, MAX_TEXT_CHARS)
    baseline = best_time(text_of(PROSE, full) + " The answer is 42.", args.repeat)
    print(f"baseline (prose, {full} chars): {baseline * 1e3:.2f} ms")
    print(f"{'pattern':24} {'ms':>8} {'x prose':>8} {'full/half':>9}")
    worst = 0.0
    for name, unit in PATTERNS.items():
        t_full = best_time(text_of(unit, full), args.repeat)
        t_half = best_time(text_of(unit, full // 2), args.repeat)
        growth = t_full / max(t_half, 1e-9)
        worst = max(worst, growth)
        print(f"{name:24} {t_full * 1e3:8.2f} {t_full / baseline:8.1f} {growth:9.2f}")
    print(f"worst full/half ratio: {worst:.2f} (linear ~2, quadratic ~4)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
