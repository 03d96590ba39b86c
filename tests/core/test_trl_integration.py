"""Rewards resolved by name are plain TRL reward functions: they run inside a bare
``trl.GRPOTrainer`` step and are logged under their registered names."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import grpo_core

from .fakedist import run_grpo


def count_digits(completions, weight_digits: float = 1.0, **kwargs):
    return [weight_digits * sum(ch.isdigit() for ch in grpo_core.completion_text(c)) for c in completions]


@pytest.fixture
def digits(register_plugin):
    import types

    mod = types.ModuleType("digits_plugin")

    @grpo_core.hookimpl
    def register_rewards(register):
        register("acme.digits", count_digits)

    mod.register_rewards = register_rewards
    register_plugin(mod, name="digits")


def grpo_step(model_path, reward_funcs, reward_weights, tmp_path):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": f"What is {i} + 1?"}]} for i in range(8)])
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"), max_steps=1, per_device_train_batch_size=4,
        num_generations=4, max_completion_length=8, use_cpu=True, bf16=False, report_to=[],
        logging_steps=1, save_strategy="no", reward_weights=reward_weights, seed=0,
    )
    trainer = GRPOTrainer(model=str(model_path), reward_funcs=reward_funcs, args=args, train_dataset=ds)
    trainer.train()
    return trainer.state.log_history[0]


def test_composed_reward_runs_in_a_bare_grpo_trainer(digits, tiny_model, tmp_path):
    funcs, weights = grpo_core.compose_rewards(["acme.digits(weight_digits=0.5):2.0"])
    logs = grpo_step(tiny_model, funcs, weights, tmp_path)
    assert "rewards/acme.digits/mean" in logs
    # the total reward is the weighted per-reward mean: 2.0 * mean
    assert logs["reward"] == pytest.approx(2.0 * logs["rewards/acme.digits/mean"], abs=1e-5)


EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "grpo-acme")


def test_example_plugin_is_found_by_name_once_installed():
    """examples/grpo-acme is pip-installed by the setup script, like a third-party plugin."""
    out = run_grpo(["rewards", "list", "--json"], plugins="grpo-acme")
    assert out.returncode == 0, out.stderr
    assert [r["name"] for r in json.loads(out.stdout) if r["distribution"] == "grpo-acme"] == ["acme.brevity"]
    check = run_grpo(["rewards", "check", "acme.brevity", "--max_chars", "50"], plugins="grpo-acme")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "9 passed, 0 failed" in check.stdout


def test_example_plugin_reward_trains_by_name(tiny_model, tmp_path, monkeypatch):
    from grpo_core.plugin import plugins

    monkeypatch.setenv("GRPO_PLUGINS", "grpo-acme")
    plugins.reset()
    try:
        funcs, weights = grpo_core.compose_rewards(["acme.brevity(max_chars=40)"])
        logs = grpo_step(tiny_model, funcs, weights, tmp_path)
    finally:
        plugins.reset()
    assert 0.0 <= logs["rewards/acme.brevity/mean"] <= 1.0


def test_documented_one_liner_works():
    code = ("import grpo_core; f, w = grpo_core.compose_rewards(['acme.brevity:2.0']); "
            "print(f[0].__name__, w)")
    env = dict(os.environ, GRPO_PLUGINS="grpo-acme")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.stdout.strip() == "acme.brevity [2.0]", out.stderr


def test_example_plugins_own_tests_pass():
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", EXAMPLE + "/tests"],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, GRPO_PLUGINS=""), cwd=EXAMPLE)
    assert out.returncode == 0, out.stdout[-2000:]
    assert "10 passed" in out.stdout
