"""examples/reasoning-gym.yaml, the learning benchmark's second task: valid, its gold
answers pass grpo check, its held-out split is large enough for grpo eval --limit 64, and
it plans a CPU run (no model is loaded)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import use_installed

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "reasoning-gym.yaml"


@pytest.fixture
def installed(monkeypatch):
    import grpo_core.config.models

    monkeypatch.setattr(grpo_core.config.models, "load", lambda *a, **k: pytest.fail("a model was loaded"))
    yield from use_installed(monkeypatch, "grpo-reasoning-gym,grpo-rewards-format")


def test_the_example_trains_on_rg_score_and_the_length_reward(installed):
    from grpo_core.config.load import load_config

    cfg = load_config(CONFIG)
    assert cfg.dataset.name.startswith("rg.") and cfg.model.id == "smollm2-135m"
    assert [str(s) for s in cfg.stages[0].rewards] == [
        "rg.score(partial=False, fallback_last_number=True):1", "length.soft_overlong(max_length=48, cache=40):1"]
    assert (cfg.sampling.dynamic, cfg.sampling.metric) == (True, "rg.score")


def test_the_example_plans_a_cpu_run_with_enough_held_out_prompts(installed):
    from grpo_core.config.load import load_config
    from grpo_core.run.prepare import build_datasets, lora_config, plan

    cfg = load_config(CONFIG)
    train, held = build_datasets(cfg, eval_split="test")
    assert len(held) >= 64 and not set(held["question"]) & set(train["question"])
    plans = plan(cfg, train.column_names, device="cpu")
    lora_config(cfg)
    assert [p.args.max_steps for p in plans] == [14]
    assert all(p.args.use_cpu and not p.args.bf16 for p in plans)


def test_grpo_check_passes_the_examples_gold_answers(installed, capsys, monkeypatch):
    from grpo_core.cli import main

    monkeypatch.chdir(ROOT)
    assert main(["check", "examples/reasoning-gym.yaml"]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "ok   rg.score                          100.0% at 1 (correctness)" in out
