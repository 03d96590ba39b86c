"""bench/time_to_accuracy.py's readings, worked out by hand: the adapters a run kept in step
order (a glob gives them in any order, and sorting the records themselves fails), the seconds
until held-out accuracy first reaches the target, and the accuracy at a fixed time."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bench():
    sys.path.insert(0, str(ROOT / "bench"))  # it imports learning.py beside it
    try:
        spec = importlib.util.spec_from_file_location("tta_bench", ROOT / "bench" / "time_to_accuracy.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_kept_adapters_come_in_step_order(tmp_path):
    b = bench()
    for step, seconds in [(10, 150.0), (2, 31.5), (4, 60.0)]:
        (tmp_path / f"snap-{step:04d}").mkdir()
        (tmp_path / f"snap-{step:04d}" / "when.json").write_text(json.dumps({"step": step, "seconds": seconds}))
    assert [s["step"] for s in b.kept(tmp_path)] == [2, 4, 10]


def test_seconds_to_target_and_accuracy_at_a_time_by_hand():
    b = bench()
    row = {"base": 0.19, "snaps": [{"step": 2, "seconds": 40.0, "accuracy": 0.3},
                                   {"step": 4, "seconds": 95.0, "accuracy": 0.52},
                                   {"step": 6, "seconds": 150.0, "accuracy": 0.48}]}
    assert b.reached(row, 0.5) == 95.0  # the first kept adapter at 0.5 or more, not the last
    assert b.reached(row, 0.6) is None
    assert b.accuracy_at(row, 0.5) == 0.19  # 30 s: nothing kept yet, the base model's
    assert b.accuracy_at(row, 2) == 0.52  # 120 s: the step-4 adapter (95 s) is the last kept by then
    assert b.accuracy_at(row, 3) == 0.48  # 180 s: the step-6 adapter


def test_the_table_shows_a_run_that_never_reached_the_target():
    b = bench()
    opts = type("Opts", (), {"target": 0.5, "limit": 64, "at": [2, 4.5]})()
    row = {"arm": "bare", "seed": 0, "steps": 9, "tokens": 300, "load_start": 1.8, "load_end": 3.0, "base": 0.19,
           "snaps": [{"step": 2, "seconds": 110.0, "accuracy": 0.17}, {"step": 8, "seconds": 257.0, "accuracy": 0.34}]}
    lines = b.table([row], opts).splitlines()
    # never reached: "-"; at 2 min (120 s) the step-2 adapter (110 s) is the last kept, at 4.5 min the step-8 one
    assert lines[3].split() == ["bare", "0", "-", "0.170", "0.340", "9", "300", "1.8-3.0"]
    assert lines[-1] == "bare                   reached 0.5 in 0/1 seeds; @2m 0.170 ± nan; @4.5m 0.340 ± nan"
