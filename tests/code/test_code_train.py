"""`grpo train` for 2 steps on the tiny random model with code.tests on MBPP rows.

grpo check runs first (no --no-check): the gold solutions, written as the
``code`` system prompt asks, pass their tests and the probes pay nothing. The
tiny model writes no code, so code.tests is 0 with ``no_code`` at 100%; a second
reward, code.tests on the reference solution with the model's text appended as a
comment, proves the sandbox runs (and passes) inside the training process.
"""

from __future__ import annotations

import json
import types

import pytest

import grpo_core
import grpo_rewards_code
from grpo_rewards_code import rewards

from .fixtures import mbpp_dir

CONFIG = """
model: {{dtype: float32}}
lora: {{r: 4, lora_alpha: 8}}
dataset:
  name: mbpp
  params: {{path: "{path}"}}
  system_prompt: code
rewards:
  - code.tests(timeout=3.0)
  - test.gold_with_comment
max_steps: 2
learning_rate: 1.0e-3
per_device_train_batch_size: 4
num_generations: 4
max_completion_length: 8
gradient_checkpointing: false
save_strategy: "no"
report_to: []
seed: 0
"""


def gold_with_comment(completions, answer, tests, **kwargs):
    """code.tests on the reference solution followed by the completion as a comment."""
    text = ["".join(ch if ch.isprintable() else " " for ch in grpo_core.completion_text(c)) for c in completions]
    wrapped = [f"```python\n{a}# {t}\n```" for a, t in zip(answer, text)]
    return rewards.tests(wrapped, tests=tests, **{k: v for k, v in kwargs.items() if k == "test_setup"})


@pytest.fixture
def plugins(register_plugin):
    register_plugin(grpo_rewards_code, name="code")
    mod = types.ModuleType("code_train_test_plugin")

    @grpo_core.hookimpl
    def register_rewards(register):
        register("test.gold_with_comment", gold_with_comment)

    mod.register_rewards = register_rewards
    register_plugin(mod, name="code_train_test_plugin")


def test_two_steps_of_grpo_train_with_code_tests(plugins, tiny_model, write, tmp_path, capsys, hf_cache):
    from grpo_core.cli import main

    root = mbpp_dir(write, tmp_path / "mbpp")
    config = tmp_path / "code.yaml"
    config.write_text(CONFIG.format(path=root))
    out = tmp_path / "out"
    code = main(["train", str(config), "--model.id", str(tiny_model), "--output_dir", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    assert "grpo check" in captured.out + captured.err  # the check ran before the model loaded
    steps = [r for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines()) if "reward" in r]
    assert [r["step"] for r in steps] == [1, 2]
    for r in steps:
        assert r["rewards/code.tests/mean"] == 0.0, r  # a random model writes no code ...
        assert r["code.tests/no_code"] == 1.0, r  # ... and says so
        assert r["rewards/test.gold_with_comment/mean"] == 1.0, r  # the sandbox ran under training
        assert r["code.tests/sandbox_errors"] == 0.0, r
