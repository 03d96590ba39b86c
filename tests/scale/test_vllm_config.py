"""vLLM stays optional: its GRPOConfig fields pass through, and asking for it
without it installed is a clear error before any model loads."""

from __future__ import annotations

import importlib.util

import pytest

from grpo_core.config.grpo_args import check_vllm
from grpo_core.errors import ConfigError


class Args:
    def __init__(self, **kw):
        self.use_vllm, self.vllm_mode, self.vllm_server_port = False, "colocate", 8000
        self.__dict__.update(kw)


def test_off_by_default_needs_nothing():
    check_vllm(Args())


@pytest.mark.skipif(importlib.util.find_spec("vllm") is not None, reason="vLLM is installed here")
def test_missing_vllm_says_how_to_install_it():
    with pytest.raises(ConfigError, match=r"use_vllm: true needs vLLM, which is not installed: pip install vllm"):
        check_vllm(Args(use_vllm=True))


def test_unknown_mode_is_an_error():
    with pytest.raises(ConfigError, match="vllm_mode 'remote' is not one of colocate, server"):
        check_vllm(Args(use_vllm=True, vllm_mode="remote"))


def test_fields_pass_through_to_grpoconfig(tmp_path, register_plugin):
    import grpo_datasets
    import grpo_rewards_format
    from grpo_core.config.grpo_args import training_args
    from grpo_core.config.load import load_config

    register_plugin(grpo_datasets)
    register_plugin(grpo_rewards_format)
    cfg = load_config(None, ["--vllm_mode", "server", "--vllm_server_port", "8123",
                             "--vllm_gpu_memory_utilization", "0.5"],
                      data={"model": {"id": "some/model"}, "dataset": {"name": "arithmetic"},
                            "rewards": ["length.ideal"], "output_dir": str(tmp_path)})
    args = training_args(cfg, cfg.stages[0], device="cpu", reward_weights=[1.0])
    assert (args.vllm_mode, args.vllm_server_port, args.vllm_gpu_memory_utilization) == ("server", 8123, 0.5)
    data = {"model": {"id": "some/model"}, "dataset": {"name": "arithmetic"}, "rewards": ["length.ideal"],
            "output_dir": str(tmp_path)}
    if importlib.util.find_spec("vllm") is None:
        with pytest.raises(ConfigError, match="needs vLLM"):  # found when the config is read, with its other problems
            load_config(None, ["--use_vllm", "true"], data=data)
