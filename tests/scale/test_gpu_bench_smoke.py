"""bench/gpu_step.py runs end to end in its CPU smoke mode (the GPU table itself is
produced on a GPU machine)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "gpu_step.py"


def test_gpu_bench_smoke_mode_prints_the_table():
    proc = subprocess.run([sys.executable, str(BENCH), "--smoke"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("shape"))
    row = lines[header + 1].split()
    assert row[:2] == ["tiny", "lora"]
    grpo_tps, bare_tps, ratio = float(row[2]), float(row[3]), float(row[4])
    assert grpo_tps > 0 and bare_tps > 0
    assert abs(ratio - grpo_tps / bare_tps) <= 0.03 * ratio  # the table rounds tok/s to integers
    # the step split: generation + rewards + the rest adds up to the step, on both sides
    import re

    splits = [line for line in lines if re.search(r"(grpo|bare) \d+ tok/s, [\d.]+ GiB, [\d.]+s = gen", line)]
    assert len(splits) >= 2
    for line in splits[-2:]:
        step, gen, rew, rest = map(float, re.search(
            r"([\d.]+)s = gen ([\d.]+) \+ rew ([\d.]+) \+ rest ([\d.]+)", line).groups())
        assert gen > 0 and abs(gen + rew + rest - step) <= 0.015
