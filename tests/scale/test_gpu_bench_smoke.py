"""bench/gpu_step.py: its arithmetic on hand-made timings, and its CPU smoke mode end to end,
both sides measuring the same work (the GPU table itself is produced on a GPU machine)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "gpu_step.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("gpu_step_bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_report_leaves_the_warm_up_step_out_and_splits_the_mean_step(monkeypatch, capsys):
    from trl import GRPOTrainer

    for name in ("_generate_single_turn", "_calculate_rewards"):  # the script wraps them: put them back after
        monkeypatch.setattr(GRPOTrainer, name, getattr(GRPOTrainer, name))
    scope: dict = {}
    exec(load_bench().COMMON, scope)  # the timing code both sides run
    clock = scope["Clock"]()
    # per step: seconds, generation, rewards, TRL's num_tokens after it. A 10 s warm-up (100 tokens),
    # then steps of 2 s and 4 s that bring the count to 164 and 292
    clock.steps = [[10.0, 8.0, 0.5, 100], [2.0, 1.0, 0.25, 164], [4.0, 2.0, 0.75, 292]]
    scope["report"](clock)
    result = json.loads(capsys.readouterr().out.split("RESULT ", 1)[1])
    # after the warm-up: 292 - 100 = 192 tokens in 2 + 4 = 6 s; per step 3 s = 1.5 gen + 0.5 rew + 1.0 rest
    result.pop("peak_gib")
    assert result.pop("cudnn_sdpa") is None  # which attention kernel ran: said on CUDA only
    assert result == pytest.approx({"tokens_per_s": 32.0, "warmup_s": 10.0, "step_s": 3.0, "generation_s": 1.5,
                                    "rewards_s": 0.5, "rest_s": 1.0})


def test_the_table_divides_grpo_by_bare(capsys):
    grpo = {"tokens_per_s": 150.0, "peak_gib": 3.0, "warmup_s": 9.0, "step_s": 2.0, "generation_s": 1.0,
            "rewards_s": 0.1, "rest_s": 0.9}
    bare = {**grpo, "tokens_per_s": 120.0, "peak_gib": 4.0}
    load_bench().table([("0.5b", "lora", grpo, bare), ("1.5b", "full", grpo, "timed out after 60s")])
    lines = capsys.readouterr().out.splitlines()
    # 150 / 120 = 1.25 the throughput; 3 / 4 = 0.75 the memory
    assert lines[2].split() == ["0.5b", "lora", "150", "120", "1.25", "3.00", "4.00", "0.75"]
    assert lines[3].split() == ["1.5b", "full", "grpo:", "ok;", "bare:", "timed", "out", "after", "60s"]


def test_gpu_bench_smoke_mode_measures_the_same_work_on_both_sides(monkeypatch, capsys):
    bench = load_bench()
    rows = []
    monkeypatch.setattr(bench, "table", rows.extend)
    monkeypatch.setattr(sys, "argv", [str(BENCH), "--smoke"])
    bench.main()
    [(shape, mode, grpo, bare)] = rows
    assert (shape, mode) == ("tiny", "lora")
    assert isinstance(grpo, dict) and isinstance(bare, dict), (grpo, bare, capsys.readouterr().err[-3000:])
    # tokens TRL counted over the 2 steps after the warm-up: each step one prompt, 4 completions of exactly
    # 8 tokens (min_new_tokens = max_completion_length), each counted with its prompt: 2 x 4 x 8 = 64
    # completion tokens plus 4 copies of each step's prompt. Like for like: the same prompts on both sides
    tokens = {side: round(r["tokens_per_s"] * r["step_s"] * 2, 6) for side, r in (("grpo", grpo), ("bare", bare))}
    assert tokens["grpo"] == tokens["bare"] and tokens["grpo"] == int(tokens["grpo"])
    assert tokens["grpo"] > 64 and (tokens["grpo"] - 64) % 4 == 0
    # the timed parts lie inside the step: generation takes time, the rest (log-probs, backward) too
    for r in (grpo, bare):
        assert r["generation_s"] > 0 and r["rewards_s"] >= 0 and r["rest_s"] > 0


def test_a_row_says_whether_cudnn_attention_ran_on_cuda_only():
    bench = load_bench()
    row = {"tokens_per_s": 100.0, "peak_gib": 1.0, "step_s": 2.0, "generation_s": 1.5, "rewards_s": 0.1,
           "rest_s": 0.4, "warmup_s": 30.0}
    assert bench.split({**row, "cudnn_sdpa": False}).endswith("(warm-up 30s; cuDNN attention off)")
    assert bench.split({**row, "cudnn_sdpa": True}).endswith("(warm-up 30s; cuDNN attention on)")
    assert bench.split({**row, "cudnn_sdpa": None}).endswith("(warm-up 30s)")  # a CPU run
