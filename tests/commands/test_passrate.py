"""The pass-rate filter before training: `grpo preflight --write FILE` keeps the prompts
the base model sometimes solves, with their pass rate, as a dataset grpo train reads."""

from __future__ import annotations

import json
import types

import pytest
import yaml

import grpo_core
from grpo_core import passrate
from grpo_core.cli import main


def test_pass_rates_histogram_and_the_predicted_flat_share():
    # 3 prompts x 4 completions, full marks 1.0: 0 of 4, 2 of 4 (None fails), 4 of 4
    scores = [0, 0, 0, 0, 1, None, 1, 0.5, 1, 1, 1, 1]
    rates = passrate.pass_rates(scores, 4, 1.0)
    assert rates == [0.0, 0.5, 1.0]
    assert dict(passrate.histogram(rates)) == {"0": 1, "(0, 0.25]": 0, "(0.25, 0.5]": 1, "(0.5, 0.75]": 0,
                                               "(0.75, 1)": 0, "1": 1}
    # groups of 8: 1 + (0.5**8 + 0.5**8) + 1 = 2.0078125, over 3 prompts
    assert passrate.predicted_flat_share(rates, 8) == pytest.approx(2.0078125 / 3)
    assert [passrate.inside(r, (0.0, 1.0)) for r in rates] == [False, True, False]


def odd_codes(completions, **kwargs):
    """1.0 when the sum of the completion's character codes is odd (about half of them)."""
    return [float(sum(map(ord, grpo_core.completion_text(c))) % 2) for c in completions]


def quiz(split: str = "train", size: int = 12):
    from datasets import Dataset

    return Dataset.from_dict({"question": [f"What is {i} + 1?" for i in range(size)],
                              "answer": [str(i + 1) for i in range(size)], "level": [i % 3 for i in range(size)]})


@pytest.fixture
def plugin(register_plugin):
    mod = types.ModuleType("passrate_toy")
    mod.register_rewards = grpo_core.hookimpl(
        lambda register: register("toy.odd", odd_codes, correctness=True, range=(0, 1)))
    mod.register_datasets = grpo_core.hookimpl(lambda register: register("quiz", quiz))
    register_plugin(mod, name="passrate_toy")


def test_preflight_writes_the_prompts_inside_the_band_and_train_reads_them(installed_plugins, plugin, tiny_model,
                                                                           tmp_path, capsys):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "model": {"id": str(tiny_model), "dtype": "float32"}, "dataset": {"name": "quiz"}, "rewards": ["toy.odd"],
        "num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 10, "temperature": 1.0,
        "seed": 0, "report_to": []}))
    kept = tmp_path / "kept.jsonl"
    code = main(["preflight", str(cfg), "--prompts", "12", "--k", "6", "--write", str(kept), "--no-check"])
    captured = capsys.readouterr()
    out = captured.out
    assert code in (0, 1), out + captured.err
    assert "pass rate over 12 prompts (6 completions each)" in out and "predicted flat share" in out
    rows = [json.loads(x) for x in kept.read_text().splitlines()]
    wrote = int(out.split("wrote ")[1].split()[0])
    assert wrote == len(rows) and 0 < len(rows) <= 12
    for row in rows:
        # k = 6 completions: a rate is a multiple of 1/6, strictly inside (0, 1); the row's own columns stay
        assert 0 < row["pass_rate"] < 1 and round(row["pass_rate"] * 6, 6) == int(round(row["pass_rate"] * 6))
        assert row["answer"] == str(int(row["question"].split()[2]) + 1) and "level" in row and "prompt" not in row
    # the file is a dataset grpo train reads as it is
    cfg2 = tmp_path / "cfg2.yaml"
    cfg2.write_text(yaml.safe_dump({
        "model": {"id": str(tiny_model), "dtype": "float32"}, "rewards": ["toy.odd"],
        "dataset": {"name": "files", "params": {"path": str(kept)}}, "lora": {"r": 4, "lora_alpha": 8},
        "num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 8, "max_steps": 1,
        "save_strategy": "no", "report_to": [], "output_dir": str(tmp_path / "out")}))
    assert main(["train", str(cfg2), "--no-check", "--dry-run"]) == 0
    assert f"({len(rows)} rows" in capsys.readouterr().out
