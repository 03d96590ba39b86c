"""bench/learning.py --quick runs the three configurations end to end on a tiny model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_learning_bench_smoke_mode_prints_the_table():
    env = {k: v for k, v in os.environ.items() if k != "GRPO_PLUGINS"}  # the installed plugins, as a user has them
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "learning.py"), "--quick"], capture_output=True,
                          text=True, timeout=600, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    rows = [line.split() for line in proc.stdout.splitlines() if line.split()[:1] in (["bare"], ["grpo"], ["dynamic"])
            and len(line.split()) == 9]
    assert [r[0] for r in rows][-3:] == ["bare", "grpo", "dynamic"]
    # the budget (64 completion tokens: 8 completions x 8 tokens) stops bare and grpo after one step;
    # dynamic sampling's extra rounds count toward the tokens generated
    assert int(rows[-3][5]) == int(rows[-2][5]) == 64 and int(rows[-1][5]) >= 64
    assert "step time grpo/bare" in proc.stdout
