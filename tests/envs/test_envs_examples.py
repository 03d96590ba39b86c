"""The environment examples stay valid (no model, no Hub: the tokenizer check is not run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import use_installed

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PLUGINS = "grpo-datasets,grpo-rewards-math,grpo-rewards-format,grpo-rewards-code"


@pytest.fixture
def installed(monkeypatch):
    yield from use_installed(monkeypatch, PLUGINS)


def test_the_python_tool_example(installed):
    from grpo_core.config.load import load_config

    cfg = load_config(EXAMPLES / "python-tool.yaml")
    env = cfg.environment.routes[None]
    assert (str(env.spec), env.tools, env.has_reward) == ("python(timeout=5.0, max_calls=3)", ("python",), False)
    assert [str(s) for s in cfg.stages[0].rewards] == ["math.correctness:1"]


def test_the_guess_number_example_trains_on_its_own_reward(installed):
    from grpo_core.config.load import load_config
    from grpo_core.run.prepare import build_datasets, plan

    cfg = load_config(EXAMPLES / "guess-number.yaml")
    train, held = build_datasets(cfg)
    assert (len(train), len(held)) == (2000, 200)
    plans = plan(cfg, train.column_names, device="cuda")
    assert plans[0].funcs == [] and plans[0].args.max_tool_calling_iterations == 10
    assert [(e.name, e.weight) for e in cfg.environment.rewarded] == [("guess_number", 1.0)]
