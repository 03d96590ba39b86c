"""bench/learning.py: --quick runs the arms (grpo is bare's trajectory) end to end on a tiny model; the table's
standard errors and best rates are worked out by hand."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def bench():
    spec = importlib.util.spec_from_file_location("learning_bench", ROOT / "bench" / "learning.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_learning_bench_smoke_mode_runs_every_arm():  # two cells at a time after the first (--jobs 2)
    env = {k: v for k, v in os.environ.items() if k != "GRPO_PLUGINS"}  # the installed plugins, as a user has them
    arms = ["bare", "dynamic", "iter2"]  # (a learning method's arm, zvp, is the grpo train its tests run)
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "learning.py"), "--quick", "--arms", *arms,
                           "--lrs", "1e-3", "--jobs", "2"], capture_output=True, text=True, timeout=600, cwd=ROOT,
                          env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    rows = [line.split() for line in proc.stdout.splitlines()
            if line.split()[:1] in [[a] for a in arms] and len(line.split()) == 14]
    assert [r[0] for r in rows][-3:] == arms  # one seed, the table in arm order
    assert len(rows) == 6  # each cell's line as it ends, then the table
    tokens, steps = {r[0]: int(r[10]) for r in rows[-3:]}, {r[0]: int(r[11]) for r in rows[-3:]}
    # the budget (64 completion tokens: 8 completions x 8 tokens, a random model never ends early) stops
    # bare after one step; iter2 trains each batch twice: 2 steps on the same 64 tokens
    assert (tokens["bare"], tokens["iter2"]) == (64, 64)
    assert (steps["bare"], steps["iter2"]) == (1, 2)
    # a random model answers nothing right: every group is flat, dynamic sampling runs all 3 rounds
    # and every round's tokens count
    assert tokens["dynamic"] == 3 * 64
    # flat-c, the share of generated groups flat on math.correctness: all of them (nothing is right)
    assert {r[0]: r[9] for r in rows[-3:]} == dict.fromkeys(arms, "1.00")
    acc = {r[0]: float(r[4]) for r in rows[-3:]}
    d = acc["iter2"] - acc["bare"]
    assert f"difference, tokens: iter2 (lr 0.001) - bare (lr 0.001): {d:+.3f}" in proc.stdout


def test_standard_errors_and_best_rates_by_hand():
    b = bench()
    assert b.binomial_se(0.5, 200) == pytest.approx(0.0353553, abs=1e-6)  # sqrt(0.25 / 200)
    m, se = b.mean_se([0.40, 0.50, 0.60])
    assert m == pytest.approx(0.5) and se == pytest.approx(0.1 / 3 ** 0.5)  # stdev 0.1 over sqrt(3)
    row = {"axis": "steps", "base": 0.2, "steps": 12, "tokens": 3000, "seed": 0}
    rows = [{**row, "arm": "bare", "lr": 1e-3, "accuracy": a} for a in (0.1, 0.2)] + \
           [{**row, "arm": "bare", "lr": 5e-4, "accuracy": a} for a in (0.3, 0.5)] + \
           [{**row, "arm": "dynamic", "lr": 1e-3, "accuracy": a} for a in (0.5, 0.7)]
    lines = b.summary(rows)
    assert "best rate, steps: bare at lr 0.0005: 0.400 ± 0.100" in lines  # mean 0.4, stdev 0.1414 / sqrt 2
    assert "best rate, steps: dynamic at lr 0.001: 0.600 ± 0.100" in lines
    assert b.done(rows, "bare", "steps", 5e-4, 0) is True and b.done(rows, "bare", "steps", 2e-3, 0) is False


def test_differences_against_bare_by_hand():
    b = bench()
    best = {("tokens", "bare"): (0.40, 0.03, 2.5e-4), ("tokens", "zvp-0.1"): (0.50, 0.04, 5e-4),
            ("steps", "zvp-0.1"): (0.5, 0.1, 1e-3)}  # no bare on steps: no difference to show
    assert b.differences(best) == [
        "difference, tokens: zvp-0.1 (lr 0.0005) - bare (lr 0.00025): +0.100 ± 0.050 (+2.0 SE)"]  # 0.05 = hypot(.03, .04)


def test_arm_names_become_the_settings_they_stand_for():
    b = bench()
    opts = type("Opts", (), {"metric": "math.correctness", "max_rounds": 3})()
    flags = b.arm_flags("iter4", opts)  # iterN: N optimizer steps per generation batch
    assert flags[flags.index("--num_iterations") + 1] == "4"
    assert flags[-2:] == ["--sampling.dynamic", "false"]
    both = b.arm_flags("zvp-0.2+iter2", opts)
    assert both[both.index("--learning.method") + 1] == "zvp(alpha=0.2)"
    assert both[both.index("--num_iterations") + 1] == "2"
    front = b.arm_flags("frontier-0.3+dynamic", opts)  # frontier-T: target T; with dynamic sampling
    assert front[front.index("--sampling.prompts") + 1] == "frontier(target=0.3)"
    assert front[front.index("--learning.metric") + 1] == "math.correctness"
    assert front[front.index("--sampling.dynamic") + 1] == "true"
    assert b.arm_flags("frontier", opts)[:2] == ["--sampling.prompts", "frontier"]
    for bad in ("iter1", "iterx", "iter", "frontier-x"):  # one iteration is bare; the name is refused, not run as bare
        with pytest.raises(SystemExit, match=f"unknown arm '{bad}'"):
            b.arm_flags(bad, opts)
