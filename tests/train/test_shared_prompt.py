"""Each group's prompt computed once in the training pass (``model.shared_prompt``):
the log-probabilities, entropies and gradients of TRL's plain pass, two backbone
calls instead of one where prompts repeat, and the cases where it steps aside."""

from __future__ import annotations

import json
import types

import pytest
import torch

from grpo_core.trainer import shared_prompt as sp
from grpo_core.trainer.generation import load_policy

from .conftest import TINY


def _fused(path, lora: bool):
    """The model as TRL's trainer has it: the fused LM head (log-probs and entropies), then PEFT."""
    from trl.trainer.utils import add_fused_lm_head

    model, _ = load_policy(str(path), dtype="float32", device="cpu", log=lambda *a: None)
    add_fused_lm_head(model, outputs=("log_probs", "entropy"))
    if lora:
        from peft import LoraConfig, get_peft_model

        torch.manual_seed(0)
        model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", lora_dropout=0.0))
        with torch.no_grad():  # B is zero at initialisation: the adapters' gradient paths would be trivial
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.normal_(0, 0.3)
    return model.train()


def _batch(vocab: int, groups=2, k=3, prompt=6, completion=5):
    """groups x k rows: each group's prompt repeated k times (the first left-padded by 2),
    completions right-padded to different lengths, as TRL lays out a batch."""
    g = torch.Generator().manual_seed(1)
    prompts = torch.randint(3, vocab, (groups, prompt), generator=g)
    pmask = torch.ones(groups, prompt, dtype=torch.long)
    pmask[0, :2] = 0
    rows = groups * k
    comp = torch.randint(3, vocab, (rows, completion), generator=g)
    cmask = torch.ones(rows, completion, dtype=torch.long)
    for i in range(rows):
        cmask[i, 2 + i % (completion - 1):] = 0
    ids = torch.cat([prompts.repeat_interleave(k, 0), comp], 1)
    return ids, torch.cat([pmask.repeat_interleave(k, 0), cmask], 1)


def _pass(model, ids, mask, prompt: int, enabled: bool = True):
    """TRL's call (labels on completion tokens, the fused head) and a loss over log-probs
    and entropies; (log-probs, entropies, gradients, the backbone's input shapes)."""
    completion = ids.size(1) - prompt
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :prompt] = -100
    shapes = []
    backbone = sp.backbone_of(model)
    own = backbone.forward

    def recorder(*args, **kwargs):  # an instance forward, as accelerate's hooks put one
        shapes.append(tuple(kwargs["input_ids"].shape))
        return own(*args, **kwargs)

    backbone.forward = recorder
    model.zero_grad()
    try:
        with sp.shared_prompt(model, prompt, enabled):
            out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
        assert backbone.forward is recorder  # kept
    finally:
        del backbone.forward
    logps, ent = out.log_probs[:, -completion:], out.entropy[:, -completion:]
    weights = torch.linspace(-1, 1, logps.numel()).view_as(logps)  # every token its own weight
    ((logps * weights).sum() + 0.1 * ent.sum()).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return logps.detach(), ent.detach(), grads, shapes


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
def test_the_shared_pass_gives_the_plain_passs_log_probs_entropies_and_gradients(tmp_path, arch, lora):
    from grpo_core.testing import make_tiny_model

    model = _fused(make_tiny_model(tmp_path / arch, arch=arch), lora)
    ids, mask = _batch(model.config.vocab_size)  # 2 groups x 3, prompt 6, completion 5
    plain = _pass(model, ids, mask, 6, enabled=False)
    shared = _pass(model, ids, mask, 6)
    assert plain[3] == [(6, 11)]
    assert shared[3] == [(2, 6), (6, 5)]  # the 2 distinct prompts once, then the 6 rows' completions
    scored = mask[:, 6:].bool()
    assert torch.allclose(shared[0][scored], plain[0][scored], atol=1e-5)
    assert torch.allclose(shared[1][scored], plain[1][scored], atol=1e-5)
    assert set(shared[2]) == set(plain[2]) and len(plain[2]) > 0
    for name, g in plain[2].items():  # the prompt's gradient flows back through its one cache
        assert torch.allclose(shared[2][name], g, atol=1e-5, rtol=1e-4), name


def test_it_steps_aside_where_nothing_is_shared_or_no_cache_is_kept(tiny_model):
    model = _fused(tiny_model, lora=True)
    ids, mask = _batch(model.config.vocab_size, groups=4, k=1)  # every prompt its own
    assert _pass(model, ids, mask, 6)[3] == [(4, 11)]
    ids, mask = _batch(model.config.vocab_size)
    assert _pass(model, ids, mask, 0)[3] == [(6, 11)]  # no prompt
    model.gradient_checkpointing_enable()
    try:
        assert _pass(model, ids, mask, 6)[3] == [(6, 11)]
    finally:
        model.gradient_checkpointing_disable()
    assert _pass(model, ids, mask, 6)[3] == [(2, 6), (6, 5)]
    backbone = sp.backbone_of(model)
    with sp.shared_prompt(model, 6):
        assert "forward" in backbone.__dict__
    assert "forward" not in backbone.__dict__  # the class's own again


def test_a_model_with_sliding_windows_steps_aside_before_any_work(tiny_model):
    from transformers import AutoConfig, AutoModelForCausalLM, Qwen2Config
    from trl.trainer.utils import add_fused_lm_head

    settings = AutoConfig.from_pretrained(tiny_model).to_dict()
    for window in (4, None):
        settings.update(use_sliding_window=window is not None, sliding_window=window,
                        layer_types=["sliding_attention" if window else "full_attention"] * 2)
        model = AutoModelForCausalLM.from_config(Qwen2Config(**settings))
        add_fused_lm_head(model, outputs=("log_probs", "entropy"))
        ids, mask = _batch(model.config.vocab_size)
        # with windows: one plain call (no prompt pass thrown away); without: the prompts once, then the rows
        assert _pass(model.train(), ids, mask, 6)[3] == ([(6, 11)] if window else [(2, 6), (6, 5)])


def test_full_attention_is_a_text_only_model_whose_cache_keeps_every_position():
    from transformers import LlamaConfig, MistralConfig, Qwen2Config, Qwen2VLConfig

    assert sp.full_attention(Qwen2Config()) and sp.full_attention(LlamaConfig())  # qwen2: no sliding by default
    assert sp.full_attention(MistralConfig(sliding_window=None))
    assert not sp.full_attention(MistralConfig(sliding_window=4096))  # Mistral-7B-v0.1's
    assert not sp.full_attention(Qwen2VLConfig())  # positions over prompt and completion together
    assert not sp.full_attention(None)


def test_auto_uses_it_on_a_cpu_on_the_checked_architectures_only():
    from transformers import AutoConfig

    def model(kind, **settings):
        return types.SimpleNamespace(config=AutoConfig.for_model(kind, **settings))

    assert sp.usable(model("qwen2"), "auto", "cpu") and sp.usable(model("llama"), "auto", "cpu")
    assert not sp.usable(model("gemma"), "auto", "cpu") and not sp.usable(model("qwen2"), "auto", "cuda")
    assert sp.usable(model("gemma"), True, "cuda") and not sp.usable(model("qwen2"), False, "cpu")
    # true or auto, never where the cache drops positions or positions span prompt and completion
    assert not sp.usable(model("mistral", sliding_window=4096), "auto", "cpu")
    assert not sp.usable(model("qwen2_vl"), True, "cpu")


def test_a_run_trains_the_same_with_it_and_without(grpo, tmp_path, monkeypatch):
    calls = []
    split = sp._split
    monkeypatch.setattr(sp, "_split", lambda *a: calls.append(found := split(*a)) or found)
    logged = {}
    for setting in ("true", "false"):
        out = tmp_path / setting
        # step 2 trains on step 1's completions again (num_iterations 2): the same batch both ways,
        # scored by a policy one update away from the reference and the old policy, so KL and the loss move
        code, text, err = grpo(TINY, "--model.shared_prompt", setting, "--max_steps", "2", "--num_iterations", "2",
                               "--beta", "0.1", "--output_dir", str(out))
        assert code == 0, text + err
        said = "each group's prompt computed once in the training pass (model.shared_prompt)" in text + err
        assert said == (setting == "true")  # the load line says so
        logged[setting] = [r for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())
                           if "loss" in r][1]
        if setting == "true":  # old policy, reference, loss x 2 steps: 4 rows of one prompt each time
            assert len(calls) >= 4 and all(c is not None and c[0].size(0) == 1 for c in calls)
            calls.clear()
    assert calls == []  # false: never consulted
    assert logged["false"]["kl"] > 1e-6 and logged["false"]["loss"] != 0
    for key in ("loss", "kl", "entropy", "grad_norm"):
        assert logged["true"][key] == pytest.approx(logged["false"][key], rel=1e-4, abs=1e-7), key


def test_under_gradient_checkpointing_the_load_line_does_not_claim_it(grpo):
    code, text, err = grpo(TINY, "--model.shared_prompt", "true", "--gradient_checkpointing", "true",
                           "--max_steps", "1")
    assert code == 0, text + err
    assert "Loaded " in text and "(model.shared_prompt)" not in text + err  # it steps aside there
