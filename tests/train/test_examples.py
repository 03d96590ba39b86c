"""The example configs stay valid: option names, rewards, datasets and GRPOConfig
values are checked (no model is loaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
@pytest.mark.parametrize("name, steps", [("quickstart.yaml", [14]), ("two-stage.yaml", [10, 10])])
def test_cpu_examples_pass_the_dry_run(installed_plugins, name, steps, monkeypatch):
    from grpo_core.config.load import load_config
    from grpo_core.run.prepare import build_datasets, lora_config, plan

    cfg = load_config(EXAMPLES / name)
    train_ds, _ = build_datasets(cfg)
    plans = plan(cfg, train_ds.column_names, device="cpu")
    lora_config(cfg)
    assert [p.args.max_steps for p in plans] == steps
    assert all(p.args.use_cpu and not p.args.bf16 for p in plans)
    assert cfg.model.id == "smollm2-135m"


def test_quickstart_rewards(installed_plugins):
    from grpo_core.config.load import load_config

    cfg = load_config(EXAMPLES / "quickstart.yaml")
    assert [str(s) for s in cfg.stages[0].rewards] == ["math.correctness(fallback_last_number=True):1",
                                                       "length.soft_overlong(max_length=48, cache=40):1"]
    # dynamic sampling judges a group flat on correctness alone: the length reward nearly always differs
    assert (cfg.sampling.dynamic, cfg.sampling.metric, cfg.sampling.max_rounds) == (True, "math.correctness", 3)


def test_gsm8k_example_config_is_valid(installed_plugins):
    from grpo_core.config.grpo_args import training_args
    from grpo_core.config.load import load_config

    cfg = load_config(EXAMPLES / "gsm8k.yaml")
    args = training_args(cfg, cfg.stages[0], device="cuda")
    assert args.beta == 0.04 and args.reward_weights == [2.0, 0.5, 0.5, 1.0]
    assert cfg.merge and cfg.dataset.eval_split == "test"
