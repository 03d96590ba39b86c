"""Static-cache, compiled decoding (the CUDA default) gives the same tokens as
eager decoding. On a CPU it is compiled with the aot_eager backend: the same
dynamo trace of the decoding step and the same static cache, without inductor's
C++ build (the GPU uses inductor with CUDA graphs). Measured on an H100 with
inductor: 16/16 greedy sequences identical in float32; in bfloat16 only 4/16 on
this sharpened random model, where the compiled kernels' different rounding
flips near-ties (sampling is unaffected in distribution, not token for token)."""

from __future__ import annotations

import pytest
import torch

from grpo_core.config.load import load_config
from grpo_core.trainer.decoding import enable_fast_generation
from grpo_core.trainer.generation import generate, load_policy

from .conftest import TINY


@pytest.fixture(scope="module")
def sharp_model(tiny_model):
    model, tok = load_policy(str(tiny_model), dtype="float32", device="cpu", log=lambda *a: None)
    with torch.no_grad():  # sharper logits, so greedy tokens vary instead of repeating one token
        for p in model.parameters():
            p.mul_(8)
    return model, tok


def test_fast_decoding_gives_the_same_greedy_tokens_as_eager(sharp_model):
    model, tok = sharp_model
    prompts = [[{"role": "user", "content": f"What is {i} + {3 * i}?" + " and" * i}] for i in range(5)]
    kw = dict(n=1, max_new_tokens=12, do_sample=False, batch_size=3)  # two batches: 3 prompts, then 2
    eager = generate(model, tok, prompts, fast=False, **kw)
    fast = generate(model, tok, prompts, fast="aot_eager", **kw)
    ids = [g[0].token_ids for g in eager]
    assert [g[0].token_ids for g in fast] == ids
    assert len({tuple(x) for x in ids}) == 5 and all(len(set(x)) > 3 for x in ids)  # not degenerate


def test_enable_fast_generation_sets_a_static_cache_and_compiles():
    from transformers import GenerationConfig

    config = GenerationConfig(disable_compile=True)  # as TRL builds it
    enable_fast_generation(config)
    assert config.cache_implementation == "static" and config.disable_compile is False
    assert config.compile_config is None  # transformers' default: inductor, CUDA graphs


@pytest.mark.parametrize(
    "setting, device, extra, expected",
    [("auto", "cuda", [], True), ("auto", "cpu", [], False), ("false", "cuda", [], False),
     ("true", "cpu", [], True), ("auto", "cuda", ["--cache_implementation", "dynamic"], False),
     ("auto", "cuda", ["--cache_implementation", "static"], True)],
)
def test_fast_generation_setting(toy_plugin, tiny_model, setting, device, extra, expected):
    from grpo_core.config.grpo_args import training_args
    from grpo_core.run.prepare import fast_generation

    cfg = load_config(TINY, ["--model.id", str(tiny_model), "--model.fast_generation", setting, *extra])
    args = training_args(cfg, cfg.stages[0], device="cpu")
    assert fast_generation(cfg, args, device) is expected


def test_the_trainer_samples_with_a_static_cache_sized_by_prompt_bucket(toy_plugin, tiny_model, tmp_path, monkeypatch):
    from grpo_core.run import train

    made = []
    real = train._make_trainer
    monkeypatch.setattr(train, "_make_trainer", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    cfg = load_config(TINY, ["--model.id", str(tiny_model), "--model.fast_generation", "true",
                             "--max_steps", "1", "--output_dir", str(tmp_path / "o")])
    assert train.run(cfg, log=lambda *a: None).global_step == 1
    g = made[0].generation_config
    assert g.cache_implementation == "static" and g.disable_compile is False
    assert g.remove_invalid_values is True  # NaN logits are replaced, never a device assert
    # toy prompts are far below 128 tokens: one bucket of 128 + max_completion_length 8
    assert g.max_cache_len == 128 + 8


def test_bad_fast_generation_value_is_a_config_error(toy_plugin, tiny_model):
    from grpo_core.errors import ConfigError

    with pytest.raises(ConfigError, match="model.fast_generation is 'fast'; use one of true, false, auto"):
        load_config(TINY, ["--model.id", str(tiny_model), "--model.fast_generation", "fast"])


@pytest.mark.parametrize("setting, device, off", [(None, "cuda", True), ("true", "cuda", False),
                                                  (None, "cpu", False), ("false", "cpu", False)])
def test_cudnn_attention_is_turned_off_for_training_on_cuda_unless_asked_for(toy_plugin, tiny_model, setting,
                                                                              device, off):
    """torch's cuDNN sdpa kernel returns NaN gradients on H100/H200 for some batch lengths
    (pytorch#196678): a CUDA run turns it off for its process unless model.cudnn_attention is true."""
    from grpo_core.run.prepare import cudnn_attention

    cfg = load_config(TINY, ["--model.id", str(tiny_model)]
                      + (["--model.cudnn_attention", setting] if setting else []))
    before = torch.backends.cuda.cudnn_sdp_enabled()
    torch.backends.cuda.enable_cudnn_sdp(True)
    try:
        assert cudnn_attention(cfg, device) is off
        assert torch.backends.cuda.cudnn_sdp_enabled() is (not off)
    finally:
        torch.backends.cuda.enable_cudnn_sdp(before)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_invalid_values_are_replaced_in_one_pass_to_the_same_numbers(dtype):
    """The trainer's sampling sets ``remove_invalid_values``; on a CPU its processor runs as
    one ``nan_to_num`` pass: NaN to 0, infinities to the dtype's extremes, everything else as
    it was, exactly what transformers' six passes give; outside, transformers' own again."""
    from transformers.generation.logits_process import InfNanRemoveLogitsProcessor

    from grpo_core.trainer.decoding import invalid_values_in_one_pass

    scores = torch.tensor([[1.5, float("nan"), float("inf"), -float("inf"), -3.25, 0.0]]).to(dtype)
    processor, ids = InfNanRemoveLogitsProcessor(), torch.zeros(1, 1, dtype=torch.long)
    original = InfNanRemoveLogitsProcessor.__call__
    want = processor(ids, scores)
    with invalid_values_in_one_pass():
        assert InfNanRemoveLogitsProcessor.__call__ is not original
        got = processor(ids, scores)
    assert InfNanRemoveLogitsProcessor.__call__ is original
    info = torch.finfo(dtype)
    assert got.tolist() == want.tolist() == [[1.5, 0.0, info.max, info.min, -3.25, 0.0]]
    assert got.dtype == dtype


def test_the_trainers_cpu_sampling_replaces_invalid_values_in_one_pass():
    from transformers import GenerationConfig
    from transformers.generation.logits_process import InfNanRemoveLogitsProcessor

    from grpo_core.trainer.decoding import FastSampling, Sampling, replace_invalid

    sampler = FastSampling(Sampling(), GenerationConfig(do_sample=True), 4)
    with sampler.context("cpu"):
        assert InfNanRemoveLogitsProcessor.__call__ is replace_invalid
    with sampler.context("cuda"):  # (no CUDA needed: nothing here touches a device)
        assert InfNanRemoveLogitsProcessor.__call__ is not replace_invalid
