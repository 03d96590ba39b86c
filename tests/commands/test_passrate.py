"""The pass-rate filter before training: `grpo preflight --write FILE` keeps the prompts
the base model sometimes solves, with their pass rate, as a dataset grpo train reads."""

from __future__ import annotations

import json
import types

import pytest
import yaml

import grpo_core
from grpo_core.cli import main
from grpo_core.data import passrate


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


# completions that pass, of the 6 sampled for 'What is i + 1?', by i % 4: never, 2 (1/3), 3 (1/2), always
PASSES = (0, 2, 3, 6)
SEEN: dict[str, int] = {}


def scripted(completions, question, **kwargs):
    """Full marks for the first PASSES[i % 4] of every 6 completions scored for 'What is i + 1?',
    whatever they say: each prompt's pass rate is known in advance."""
    out = []
    for q in question:
        j = SEEN.get(q, 0)
        SEEN[q] = j + 1
        out.append(1.0 if j % 6 < PASSES[int(q.split()[2]) % 4] else 0.0)
    return out


def quiz(split: str = "train", size: int = 12):
    from datasets import Dataset

    return Dataset.from_dict({"question": [f"What is {i} + 1?" for i in range(size)],
                              "answer": [str(i + 1) for i in range(size)], "level": [i % 3 for i in range(size)]})


@pytest.fixture
def plugin(register_plugin):
    SEEN.clear()
    mod = types.ModuleType("passrate_toy")
    mod.register_rewards = grpo_core.hookimpl(
        lambda register: register("toy.scripted", scripted, correctness=True, range=(0, 1)))
    mod.register_datasets = grpo_core.hookimpl(lambda register: register("quiz", quiz))
    register_plugin(mod, name="passrate_toy")


def preflight(cfg, kept, *band):
    SEEN.clear()
    return main(["preflight", str(cfg), "--prompts", "12", "--k", "6", "--write", str(kept), "--no-check", *band])


def test_preflight_writes_the_prompts_inside_the_band_and_train_reads_them(installed_plugins, plugin, tiny_model,
                                                                           tmp_path, capsys):
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "model": {"id": str(tiny_model), "dtype": "float32"}, "dataset": {"name": "quiz"},
        "rewards": ["toy.scripted"], "num_generations": 4, "per_device_train_batch_size": 4,
        "max_completion_length": 10, "temperature": 1.0, "seed": 0, "report_to": []}))
    kept = tmp_path / "kept.jsonl"
    code = preflight(cfg, kept)
    captured = capsys.readouterr()
    out = captured.out
    assert code in (0, 1), out + captured.err
    assert "pass rate over 12 prompts (6 completions each)" in out
    # rates 0, 1/3, 1/2, 1 for i % 4 = 0, 1, 2, 3: 3 prompts each; 1/3 and 1/2 share the bin (0.25, 0.5]
    histogram = {line.split()[0]: int(line.split()[-2 if line.rstrip().endswith("#") else -1])
                 for line in out.split("completions each):")[1].split("predicted")[0].strip().splitlines()}
    assert histogram == {"0": 3, "(0,": 0, "(0.25,": 6, "(0.5,": 0, "(0.75,": 0, "1": 3}
    # G = 4: (3 x 1 + 3 x ((1/3)^4 + (2/3)^4) + 3 x 2 x (1/2)^4 + 3 x 1) / 12 = 0.5837: 58 %
    assert "predicted flat share of training groups (G=4): 58%" in out
    rows = [json.loads(x) for x in kept.read_text().splitlines()]
    assert f"wrote {len(rows)} of 12 prompts with 0 < pass rate < 1" in out
    # the default band (0, 1): i % 4 = 1 (1/3) and 2 (1/2), each row with its own prompt's rate and columns
    assert {r["question"]: r["pass_rate"] for r in rows} == {
        f"What is {i} + 1?": [None, 1 / 3, 1 / 2][i % 4] for i in (1, 2, 5, 6, 9, 10)}
    for row in rows:
        i = int(row["question"].split()[2])
        assert row["answer"] == str(i + 1) and row["level"] == i % 3 and "prompt" not in row
    # --band 0.4 1 keeps 1/2 only (1 itself is left out: both ends open); --band 0 0.5 keeps 1/3 only
    for band, expected in ((("0.4", "1"), {2: 0.5, 6: 0.5, 10: 0.5}), (("0", "0.5"), {1: 1 / 3, 5: 1 / 3, 9: 1 / 3})):
        narrow = tmp_path / f"band-{band[0]}.jsonl"
        assert preflight(cfg, narrow, "--band", *band) in (0, 1)
        assert {r["question"]: r["pass_rate"] for r in map(json.loads, narrow.read_text().splitlines())} == {
            f"What is {i} + 1?": rate for i, rate in expected.items()}
        assert f"wrote 3 of 12 prompts with {band[0]} < pass rate < {band[1]}" in capsys.readouterr().out
    # the file is a dataset grpo train reads as it is
    cfg2 = tmp_path / "cfg2.yaml"
    cfg2.write_text(yaml.safe_dump({
        "model": {"id": str(tiny_model), "dtype": "float32"}, "rewards": ["toy.scripted"],
        "dataset": {"name": "files", "params": {"path": str(kept)}}, "lora": {"r": 4, "lora_alpha": 8},
        "num_generations": 4, "per_device_train_batch_size": 4, "max_completion_length": 8, "max_steps": 1,
        "save_strategy": "no", "report_to": [], "output_dir": str(tmp_path / "out")}))
    assert main(["train", str(cfg2), "--no-check", "--dry-run"]) == 0
    assert "(6 rows" in capsys.readouterr().out
