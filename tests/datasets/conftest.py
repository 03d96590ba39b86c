"""Fixtures for the grpo-datasets tests: the plugin registered in process, a private
datasets cache, and writers for fixture files in each dataset's real column layout."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _private_hf_cache(tmp_path, monkeypatch):
    import datasets

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-datasets-cache")
    datasets.disable_progress_bars()


@pytest.fixture
def load(register_plugin):
    """``grpo_core.load_dataset`` with only grpo_datasets registered."""
    import grpo_core
    import grpo_datasets

    register_plugin(grpo_datasets)
    return grpo_core.load_dataset


@pytest.fixture
def reward_check(register_plugin):
    """``reward_check(ds, rewards, system_prompt)`` -> grpo check's report for a loaded dataset."""
    import grpo_core
    import grpo_rewards_format
    import grpo_rewards_math
    from grpo_core.checks.checks import check_stage
    from grpo_core.data.datasets import build_prompts, resolve_system_prompt

    register_plugin(grpo_rewards_math, name="math")
    register_plugin(grpo_rewards_format, name="format")

    def run(ds, rewards, system_prompt):
        funcs, weights = grpo_core.compose_rewards(rewards)
        built = build_prompts(ds, system_prompt)
        return check_stage("main", funcs, weights, built, resolve_system_prompt(system_prompt)[1])

    return run
