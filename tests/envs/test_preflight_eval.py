"""`grpo preflight` and `grpo eval` run the multi-turn rollouts training runs: the
environment's reset, the tool calls and their results, the next turn, and TRL's
scores (an environment's get_reward included). The policy is scripted
(conftest.py), so every value below is worked out from the script."""

from __future__ import annotations

import json

from grpo_core.testing import scripted_policy

from .conftest import BinarySearchPolicy, PythonPolicy, write_config

COMMON = """
model: {dtype: float32}
num_generations: 2
per_device_train_batch_size: 2
gradient_checkpointing: false
report_to: []
seed: 0
"""


def test_preflight_shows_tool_calls_and_results_in_its_samples(grpo, tool_tokenizer, tmp_path, monkeypatch):
    config = write_config(tmp_path / "python.yaml", COMMON + """
dataset: {name: toy_arithmetic, system_prompt: plain}
environment: python
rewards: [math.correctness]
max_completion_length: 128
""")
    report = tmp_path / "report.json"
    monkeypatch.chdir(tmp_path)  # where the config's default output_dir (outputs/python) would go
    with scripted_policy(tool_tokenizer, PythonPolicy()):
        code, out, err = grpo("preflight", config, "--prompts", "2", "--json", report)
    # the script answers every question right: all groups are flat, so the verdict is "dead" (exit 1)
    assert code == 1, out + err
    assert "1 tool calls per completion" in out
    assert "[call: python(code='print(6 * 7)')] [result: 42] Answer: 42" in out
    assert "[call: python(code='print(2 ** 10)')] [result: 1024] Answer: 1024" in out
    data = json.loads(report.read_text())
    assert data["tool_calls"] == 1.0
    assert [(r["reward"], r["mean"]) for r in data["rewards"]] == [("math.correctness", 1.0)]
    assert data["flat_share"] == 1.0
    assert not (tmp_path / "outputs").exists()  # sampling makes no training output folder


def test_eval_plays_the_game_for_base_and_checkpoint_and_reports_its_reward(grpo, tool_tokenizer, tool_model,
                                                                             tmp_path):
    config = write_config(tmp_path / "guess.yaml", COMMON + """
dataset: {name: toy_guess}
environment: guess_number(max_guesses=5)
max_completion_length: 512
""")
    report = tmp_path / "eval.json"
    with scripted_policy(tool_tokenizer, BinarySearchPolicy()):
        code, out, err = grpo("eval", config, "--checkpoint", tool_model, "--split", "test", "--output", report)
    assert code == 0, out + err
    data = json.loads(report.read_text())
    for side in ("base", "trained"):
        # secret 37 found in 3 guesses (1.0); secret 100 not within 5, the 6th call refused (0.0)
        assert data[side]["guess_number"] == 0.5
        assert data[side]["reward_total"] == 0.5
        assert data[side]["tool_calls"] == 4.5
        assert data[side]["truncated"] == 0.0
    assert data["delta"]["guess_number"] == 0.0
    # per prompt, as played: the secret found (1.0), then the one not found within five guesses (0.0)
    for side in ("base", "trained"):
        assert [w[side][0]["rewards"]["guess_number"] for w in data["completions"]] == [1.0, 0.0]
