"""`grpo train` end to end on a tiny random model: outputs, resume, Ctrl-C, stages."""

from __future__ import annotations

import json
import os
import signal

import pytest

from .conftest import TINY


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def step_records(path):
    return [r for r in records(path) if "reward" in r]


def test_two_steps_through_the_cli_write_adapter_metrics_and_plot(grpo, tmp_path):
    code, out, err = grpo(TINY)
    assert code == 0, err
    run = tmp_path / "out"
    assert (run / "adapter" / "adapter_config.json").is_file()
    assert (run / "adapter" / "tokenizer_config.json").is_file()
    steps = step_records(run / "metrics.jsonl")
    assert [r["step"] for r in steps] == [1, 2]
    assert {"rewards/test.digits/mean", "rewards/test.short/mean", "reward", "reward_std"} <= set(steps[0])
    png = (run / "rewards.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    resolved = (run / "config.yaml").read_text()
    assert "test.digits:1" in resolved and "test.short(max_chars=40):0.5" in resolved
    # one summary line per step on the console
    lines = [line for line in out.splitlines() if line.startswith("step ")]
    assert [line.split()[1] for line in lines] == ["1/2", "2/2"]
    assert "test.digits" in lines[0] and "reward" in lines[0]
