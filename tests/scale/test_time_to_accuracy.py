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
    opts = type("Opts", (), {"target": 0.5, "limit": 64, "at": [2, 4.5], "baseline": "bare"})()
    row = {"arm": "bare", "seed": 0, "steps": 9, "tokens": 300, "load_start": 1.8, "load_end": 3.0, "base": 0.19,
           "snaps": [{"step": 2, "seconds": 110.0, "accuracy": 0.17}, {"step": 8, "seconds": 257.0, "accuracy": 0.34}]}
    lines = b.table([row], opts).splitlines()
    # never reached: "-"; at 2 min (120 s) the step-2 adapter (110 s) is the last kept, at 4.5 min the step-8 one
    assert lines[3].split() == ["bare", "0", "-", "0.170", "0.340", "9", "300", "1.8-3.0"]
    assert lines[-1] == "bare                   reached 0.5 in 0/1 seeds; @2m 0.170 ± nan; @4.5m 0.340 ± nan"


def test_scoring_every_other_adapter_keeps_the_ones_the_table_reads():
    b = bench()
    snaps = [{"step": step, "seconds": seconds} for step, seconds in
             [(2, 50.0), (4, 100.0), (6, 130.0), (8, 170.0), (10, 200.0), (12, 240.0), (14, 290.0)]]
    # every 2nd kept: steps 4, 8, 12; the last kept by 2 min (120 s): step 4; by 3 min (180 s): step 8;
    # by 4.5 min (270 s): step 12; and the last, step 14
    assert b.chosen(snaps, 2, [2, 3, 4.5]) == {4, 8, 12, 14}
    # every 3rd: 6, 12; by 2 min: 4 (not a 3rd one, read by the table all the same); by 3 min: 8; the last: 14
    assert b.chosen(snaps, 3, [2, 3]) == {4, 6, 8, 12, 14}
    assert b.chosen(snaps, 1, []) == {2, 4, 6, 8, 10, 12, 14}
    assert b.chosen([], 2, [2]) == set()
    # an adapter kept at exactly 3 min counts as kept by then, as accuracy_at reads it
    assert b.chosen([{"step": 2, "seconds": 150.0}, {"step": 4, "seconds": 180.0}, {"step": 6, "seconds": 200.0}],
                    5, [3]) == {4, 6}


def test_scoring_evaluates_only_the_chosen_adapters_and_keeps_the_others_unscored(monkeypatch):
    b = bench()
    evaluated = []
    monkeypatch.setattr(b, "_eval", lambda config, folder, flags, env, limit, with_base:
                        evaluated.append(folder.name) or {"trained": 0.25, "base": 0.19 if with_base else None})
    opts = type("Opts", (), {"score_every": 2, "at": [2], "limit": 64, "config": "q.yaml"})()
    row = {"arm": "bare", "seed": 0, "folder": "/runs/bare-0",
           "snaps": [{"step": 2, "seconds": 50.0}, {"step": 4, "seconds": 100.0}, {"step": 6, "seconds": 130.0},
                     {"step": 8, "seconds": 170.0, "accuracy": 0.5, "prompts": 64}, {"step": 10, "seconds": 200.0}]}
    out = b.score_cell(row, opts, {}, None)
    # chosen: every 2nd (4, 8), the last by 2 min (4), the last (10); step 8 was scored before on 64 prompts
    assert evaluated == ["snap-0004", "snap-0010"]
    assert [s.get("accuracy") for s in out["snaps"]] == [None, 0.25, None, 0.5, 0.25]
    assert out["base"] == 0.19  # measured once, with the first adapter scored


def test_a_rate_that_is_not_a_number_is_refused_naming_it(tmp_path):
    b = bench()
    opts = type("Opts", (), {"keep": tmp_path, "minutes": 1, "max_steps": 100, "every": 2})()
    try:
        b.train_cell("frontier@fast", 0, opts, {})
    except SystemExit as exc:
        assert "'frontier@fast'" in str(exc) and "frontier@2.5e-4" in str(exc)
    else:
        raise AssertionError("a rate of 'fast' was taken")


def test_an_arm_at_another_rate_trains_at_that_rate(tmp_path):
    b = bench()
    calls = []
    b._run = lambda script, args, env: calls.append(args) or {"tokens": 0, "steps": [], "wall": 0.0}
    opts = type("Opts", (), {"keep": tmp_path, "minutes": 1, "max_steps": 100, "every": 2, "bare_lr": 2.5e-4,
                             "config": tmp_path / "q.yaml", "metric": "math.correctness", "max_rounds": 3})()
    b.train_cell("frontier@1e-4", 0, opts, {})
    b.train_cell("frontier", 0, opts, {})
    b.train_cell("bare@5e-4", 0, opts, {})
    b.train_cell("bare", 0, opts, {})
    rate = calls[0].index("--learning_rate")
    assert calls[0][rate + 1] == "1e-4" and "frontier" in calls[0][calls[0].index("--sampling.prompts") + 1]
    assert "--learning_rate" not in calls[1]  # the config's own rate
    assert calls[2][5] == "5e-4" and calls[3][5] == "0.00025"  # bare's rate argument: the arm's, else --bare-lr


def test_an_arm_against_the_baseline_paired_by_seed_by_hand():
    b = bench()
    opts = type("Opts", (), {"target": 0.5, "limit": 64, "at": [2], "baseline": "bare"})()

    def row(arm, seed, snaps):
        return {"arm": arm, "seed": seed, "steps": 4, "tokens": 100, "load_start": 1.9, "load_end": 1.9,
                "base": 0.19, "snaps": [{"step": 2 * (i + 1), "seconds": s, "accuracy": a}
                                        for i, (s, a) in enumerate(snaps)]}

    rows = [row("bare", 0, [(100.0, 0.3), (200.0, 0.5)]), row("bare", 1, [(110.0, 0.4), (240.0, 0.45)]),
            row("fast", 0, [(50.0, 0.5), (100.0, 0.6)]), row("fast", 1, [(80.0, 0.2), (160.0, 0.6)]),
            row("fast", 2, [(90.0, 0.7)])]  # seed 2: no bare run to pair with
    last = b.table(rows, opts).splitlines()[-1]
    # @2m (120 s): fast 0.6 and 0.2 against bare 0.3 and 0.4: differences +0.3 and -0.2, mean +0.05,
    # se = stdev(0.3, -0.2) / sqrt 2 = 0.35355 / 1.41421 = 0.25; seconds to 0.5: seed 0 only (bare
    # never reached it on seed 1): 200 / 50 = 4.00, one seed (no se)
    # and on seed 1 only fast reached it (at 160 s; bare never did in its budget)
    assert last == ("fast - bare, paired over 2 seeds: @2m +0.050 ± 0.250; bare's seconds to 0.5 / fast's 4.00 ± nan "
                    "(1 seeds); reached it alone: fast on 1 seeds, bare on 0")
    opts.baseline = "none here"
    assert "paired" not in b.table(rows, opts)
