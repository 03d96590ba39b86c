"""Sampling from merged LoRA weights (``model.merged_sampling``): the same model
inside the context, the frozen weights untouched after it, and the cases that do
not merge."""

from __future__ import annotations

import pytest
import torch

from grpo_core.config.load import load_config
from grpo_core.trainer import merged_lora
from grpo_core.trainer.generation import load_policy
from grpo_core.trainer.merged_lora import MergedLora

from .conftest import TINY


def _lora(tiny_model, **extra):
    from peft import LoraConfig, get_peft_model

    model, tok = load_policy(str(tiny_model), dtype="float32", device="cpu", log=lambda *a: None)
    torch.manual_seed(0)  # lora_A's initialisation too: the same adapter whatever ran before
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", lora_dropout=0.0,
                                             **extra))
    with torch.no_grad():  # a trained adapter: B is zero at initialisation, which would hide a missing merge
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    return model.eval(), tok


def _sampler(model, autocast: str | None = None):
    """The trainer's sampler over ``model``, merging, under ``autocast`` (precision.sampling_autocast's)."""
    from transformers import GenerationConfig

    from grpo_core.trainer.decoding import FastSampling, Sampling

    return FastSampling(Sampling(merged=True, autocast=autocast), GenerationConfig(), 8, model=model)


def test_merged_weights_give_the_adapted_model_and_leave_the_frozen_weights_untouched(tiny_model):
    model, _ = _lora(tiny_model)
    ids = torch.randint(0, 100, (3, 9))
    with torch.no_grad():
        adapted = model(ids).logits
        with model.disable_adapter():
            base = model(ids).logits
    frozen = {n: (p.data_ptr(), p.detach().clone()) for n, p in model.named_parameters() if not p.requires_grad}
    merge = MergedLora.of(model, True)
    assert len(merge.layers) == len([n for n in frozen if n.endswith("base_layer.weight")]) > 0
    for _ in range(2):  # the buffers are refilled each time
        with torch.no_grad(), merge.merged():
            inside = model(ids).logits
        assert torch.allclose(inside, adapted, atol=1e-5)
        assert not torch.allclose(inside, base, atol=1e-2)  # the adapters change the output
    for n, p in model.named_parameters():
        if n in frozen:
            assert p.data_ptr() == frozen[n][0] and torch.equal(p, frozen[n][1])
    with torch.no_grad():
        assert torch.equal(model(ids).logits, adapted)  # adapters on again


def test_a_bf16_copy_holds_the_merged_sum_rounded_once_as_the_trainer_samples(tiny_model):
    # a CPU under bf16 (precision.sampling_autocast): the copy the products read is bf16, half the bytes;
    # the sum W + B @ A is taken in float32 although the sampler's autocast is on around it
    model, _ = _lora(tiny_model)
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not p.requires_grad}
    sampler = _sampler(model, "bfloat16")
    assert {b.dtype for b in sampler.merge.buffers} == {torch.bfloat16}
    assert {b.dtype for b in _sampler(model).merge.buffers} == {torch.float32}  # float32 sampling: float32 copy
    expected = [(m.base_layer.weight.detach() + m.get_delta_weight("default")).to(torch.bfloat16)
                for m in sampler.merge.layers]  # float32 sum, outside any autocast, rounded once
    ids = torch.randint(0, 100, (3, 9))
    with torch.no_grad():
        with sampler.weights("cpu"):  # the trainer's order: autocast, then the merged copy
            for layer, want in zip(sampler.merge.layers, expected):
                assert layer.base_layer.weight.dtype == torch.bfloat16
                assert torch.equal(layer.base_layer.weight, want)
            inside = model(ids).logits
        assert torch.isfinite(inside).all()
    for n, p in model.named_parameters():
        if n in frozen:
            assert p.dtype == torch.float32 and torch.equal(p, frozen[n])


def test_under_cpu_bf16_the_output_head_reads_a_bf16_copy_with_the_numbers_autocast_gives(tiny_model):
    model, _ = _lora(tiny_model)
    head = model.get_output_embeddings()
    before = head.weight.detach().clone()
    ids = torch.randint(0, 100, (3, 9))
    sampler = _sampler(model, "bfloat16")
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16), sampler.merge.merged():
            expected = model(ids).logits  # autocast casting the float32 head at every call
        with sampler.weights("cpu"):
            assert "forward" in vars(head)  # the copy's projection
            inside = model(ids).logits
    assert torch.equal(inside, expected)
    assert "forward" not in vars(head) and head.weight.dtype == torch.float32 and torch.equal(head.weight, before)
    with _sampler(model).weights("cpu"):
        assert "forward" not in vars(head)  # float32 sampling: nothing to copy


def test_weights_are_put_back_when_sampling_fails(tiny_model):
    model, _ = _lora(tiny_model)
    merge = MergedLora.of(model, "auto")
    weight = merge.layers[0].base_layer.weight
    before, values = weight.data_ptr(), weight.detach().clone()
    with pytest.raises(RuntimeError, match="boom"), merge.merged():
        assert weight.data_ptr() != before
        raise RuntimeError("boom")
    assert weight.data_ptr() == before and torch.equal(weight, values)
    assert not any(getattr(m, "_disable_adapters", False) for m in merge.layers)


def test_greedy_tokens_are_the_adapted_models(tiny_model):
    model, tok = _lora(tiny_model)
    ids = torch.randint(0, 100, (2, 6))
    kw = dict(attention_mask=torch.ones_like(ids), do_sample=False, max_new_tokens=8, pad_token_id=0)
    with torch.no_grad():
        expected = model.generate(ids, **kw)
        with MergedLora.of(model, True).merged():
            assert torch.equal(model.generate(ids, **kw), expected)


@pytest.mark.parametrize("setting", [True, "auto"])
def test_what_does_not_merge(tiny_model, setting):
    said = []
    plain, _ = load_policy(str(tiny_model), dtype="float32", device="cpu", log=lambda *a: None)
    assert MergedLora.of(plain, setting, said.append) is None
    dora, _ = _lora(tiny_model, use_dora=True)
    assert MergedLora.of(dora, setting, said.append) is None
    saved, _ = _lora(tiny_model, modules_to_save=["lm_head"])
    assert MergedLora.of(saved, setting, said.append) is None
    if setting is True:
        assert len(said) == 3 and "DoRA" in said[1] and "modules_to_save" in said[2]
    else:
        assert said == []  # auto: quietly


def test_auto_merges_only_what_fits(tiny_model, monkeypatch):
    model, _ = _lora(tiny_model)
    layers, why = merged_lora.lora_layers(model)
    assert why is None
    size = merged_lora.copy_bytes(layers)
    assert 2 * merged_lora.copy_bytes(layers, "bfloat16") == size  # a bf16 copy: half the bytes of float32 ones
    monkeypatch.setattr(merged_lora, "AUTO_BYTES", size)
    assert MergedLora.of(model, "auto") is not None
    monkeypatch.setattr(merged_lora, "AUTO_BYTES", size - 1)
    assert MergedLora.of(model, "auto") is None
    assert MergedLora.of(model, "auto", dtype="bfloat16") is not None  # its bf16 copy fits: half the bytes
    assert MergedLora.of(model, True) is not None  # true: whatever the size
    assert MergedLora.of(model, False) is None


@pytest.mark.parametrize("setting, device, expected",
                         [("auto", "cpu", "auto"), ("auto", "cuda", False), ("true", "cuda", True),
                          ("false", "cpu", False)])
def test_setting(toy_plugin, tiny_model, setting, device, expected):
    from grpo_core.run.prepare import merged_sampling

    cfg = load_config(TINY, ["--model.id", str(tiny_model), "--model.merged_sampling", setting])
    assert merged_sampling(cfg, device) == expected


def test_training_samples_the_same_tokens_merged_or_not(toy_plugin, tiny_model, tmp_path, monkeypatch):
    # a large learning rate, so the adapters trained at step 1 change what step 2 samples
    import pyarrow.parquet as pq

    from grpo_core.run import train

    made = []
    real = train._make_trainer
    monkeypatch.setattr(train, "_make_trainer", lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    sampled = {}
    for setting in ("auto", "false"):
        out = tmp_path / setting
        cfg = load_config(TINY, ["--model.id", str(tiny_model), "--model.merged_sampling", setting,
                                 "--learning_rate", "0.5", "--output_dir", str(out)])
        assert train.run(cfg, log=lambda *a: None).global_step == 2
        sampled[setting] = [pq.read_table(out / "rollouts" / f"step-00000{k}.parquet").column("completion").to_pylist()
                            for k in (1, 2)]
    assert made[0].sampler.merge is not None and made[1].sampler.merge is None  # auto merges on a CPU
    assert sampled["auto"] == sampled["false"]
    assert sampled["false"][0] != sampled["false"][1]


def test_gpt2_conv1d_layers_merge():
    # GPT-2 keeps its projections as Conv1D, weights stored (in, out): peft adapts them with fan_in_fan_out
    from peft import LoraConfig, get_peft_model
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=2, n_head=2, n_positions=32, vocab_size=64))
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["c_attn", "c_fc"],
                                             fan_in_fan_out=True, lora_dropout=0.0)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    ids = torch.randint(0, 64, (2, 7))
    merge = MergedLora.of(model, True)
    assert merge is not None and len(merge.layers) == 4
    with torch.no_grad():
        adapted = model(ids).logits
        with merge.merged():
            assert torch.allclose(model(ids).logits, adapted, atol=1e-5)
