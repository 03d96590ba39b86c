"""Sampling in a lower precision than training (``sampling.precision``): the bf16 copy is
the model in bf16 (LoRA merged), the trainer's weights untouched, the sampled tokens'
log-probabilities are the bf16 model's own, TRL's correction uses them, and float32
samples exactly as before."""

from __future__ import annotations

import json

import pytest
import torch

from grpo_core.base.errors import ConfigError
from grpo_core.config.precision import sampling_precision
from grpo_core.run.prepare import cpu_bf16
from grpo_core.trainer.decoding import FastSampling, Sampling, enable_fast_generation
from grpo_core.trainer.generation import load_policy
from grpo_core.trainer.sampling_copy import (
    attention_in_float32,
    contiguous_head,
    float32_attention,
    per_row,
    sampled_logprobs,
)


def _lora(tiny_model):
    from peft import LoraConfig, get_peft_model

    model, tok = load_policy(str(tiny_model), dtype="float32", device="cpu", log=lambda *a: None)
    torch.manual_seed(0)
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", lora_dropout=0.0))
    with torch.no_grad():  # a trained adapter: B is zero at initialisation, which would hide a missing merge
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    return model.eval(), tok


def _sampler(model, precision: str | None, logprobs: bool = True, temperature: float = 0.7, fast: bool = False):
    from transformers import GenerationConfig

    config = GenerationConfig(do_sample=True, max_new_tokens=6, temperature=temperature, top_k=0, pad_token_id=0)
    sampler = FastSampling(Sampling(merged=True, precision=precision, logprobs=logprobs, fast=fast), config, 6,
                           model=model)
    if fast:  # compiled with aot_eager on a CPU: dynamo's trace and the static cache, no C++ build
        enable_fast_generation(config, backend="aot_eager")
    return sampler


def _generate(model, sampler, ids):
    """TRL's part: generate, keep each row's completion (here: every new token)."""
    def generate():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=sampler.config)
        return [row.tolist() for row in out[:, ids.shape[1]:]], None
    return generate


def test_inside_the_copy_the_model_is_the_merged_model_in_bf16_and_outside_it_is_untouched(tiny_model):
    model, _ = _lora(tiny_model)
    ids = torch.randint(3, 100, (3, 7))
    before = {n: (p.data_ptr(), p.detach().clone()) for n, p in model.named_parameters()}
    # the reference: the adapters merged in float32, then every weight rounded to bf16 (buffers,
    # such as the rotary frequencies, stay float32 as transformers computes them), its
    # attention's products and softmax in float32 as torch's math kernel computes them
    import copy

    reference = copy.deepcopy(model).merge_and_unload()
    for p in reference.parameters():
        p.data = p.data.to(torch.bfloat16)
    with torch.no_grad(), float32_attention():
        expected = reference(ids).logits
    sampler = _sampler(model, "bfloat16")
    for _ in range(2):  # refilled each time
        with torch.no_grad(), sampler.weights("cpu"):
            # every weight the forward reads (the adapters are disabled: merged into the bf16 buffers)
            assert {p.dtype for n, p in model.named_parameters() if "lora_" not in n} == {torch.bfloat16}
            inside = model(ids).logits
        assert inside.dtype == torch.bfloat16  # computed in bf16, not float32 activations under autocast
        assert torch.equal(inside, expected)
    for n, p in model.named_parameters():
        assert p.data_ptr() == before[n][0] and torch.equal(p, before[n][1]), n


def _qkv(rows=3, heads=4, groups=2, queries=5, keys=5, dim=8):
    torch.manual_seed(0)
    return (torch.randn(rows, heads, queries, dim).bfloat16(), torch.randn(rows, groups, keys, dim).bfloat16(),
            torch.randn(rows, groups, keys, dim).bfloat16())


@pytest.mark.parametrize("mask", ["bool", "additive", "causal", "none"])
def test_bf16_attention_is_torchs_math_kernel_on_the_inputs_in_float32(mask):
    """What the bf16 copy's attention computes: torch's own math kernel over the same
    bfloat16 inputs taken to float32 (the key and value heads shared by groups of query heads,
    as transformers passes them with enable_gqa), rounded to bfloat16 once at the end."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    q, k, v = _qkv()
    keep = torch.ones(3, 1, 5, 5, dtype=torch.bool).tril()
    keep[0, :, :, 0] = False  # row 0 does not see its first key (left padding)
    kwargs = {"bool": {"attn_mask": keep}, "additive": {"attn_mask": torch.zeros(3, 1, 5, 5).masked_fill(~keep, -1e4)},
              "causal": {"is_causal": True}, "none": {}}[mask]
    with sdpa_kernel([SDPBackend.MATH]):
        want = torch.nn.functional.scaled_dot_product_attention(
            q.float(), k.float().repeat_interleave(2, 1), v.float().repeat_interleave(2, 1), **kwargs)
    got = attention_in_float32(q, k, v, enable_gqa=True, **kwargs)
    assert got.dtype == torch.bfloat16 and got.shape == (3, 4, 5, 8)
    torch.testing.assert_close(got.float(), want, atol=8e-3, rtol=8e-3)  # bf16's rounding of the result
    # the mask is honoured: row 0's first value moves row 0's last query only where that key is seen
    v2 = v.clone()
    v2[0, :, 0] += 10
    moved = attention_in_float32(q, k, v2, enable_gqa=True, **kwargs)
    assert bool((moved[0, :, -1] != got[0, :, -1]).all()) == (mask in ("causal", "none"))
    assert torch.equal(moved[1:], got[1:])


def test_bf16_attention_gives_a_query_that_sees_no_key_zeros_and_does_not_follow_the_thread_count():
    q, k, v = _qkv()
    keep = torch.ones(3, 1, 5, 5, dtype=torch.bool)
    keep[1, :, 2] = False  # row 1's third query (a padded position) sees nothing
    got = attention_in_float32(q, k, v, attn_mask=keep, enable_gqa=True)
    assert torch.equal(got[1, :, 2], torch.zeros(4, 8, dtype=torch.bfloat16))  # not NaN, which would spread
    assert not got.isnan().any()
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = attention_in_float32(q, k, v, attn_mask=keep, enable_gqa=True)
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one, got)


def test_only_bf16_attention_on_a_cpu_is_rerouted():
    """Inside, bf16 attention is :func:`attention_in_float32`'s and float32 attention torch's
    own, to the bit (``sampling.precision: float32`` samples as before); after, torch's own."""
    q, k, v = _qkv()
    sdpa = torch.nn.functional.scaled_dot_product_attention
    with float32_attention():
        assert torch.nn.functional.scaled_dot_product_attention is not sdpa
        bf16 = torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        f32 = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), enable_gqa=True)
    assert torch.nn.functional.scaled_dot_product_attention is sdpa
    assert torch.equal(bf16, attention_in_float32(q, k, v, enable_gqa=True))
    assert torch.equal(f32, sdpa(q.float(), k.float(), v.float(), enable_gqa=True))


def test_the_head_reads_a_strided_slice_as_a_contiguous_one(monkeypatch):
    """The first decoding step projects the prompt's last position (a strided slice): inside,
    the head's product reads it laid out contiguously (a strided bf16 input costs a copy of
    the head per row), with the same numbers, and after it is the plain Linear again."""
    linear, seen = torch.nn.functional.linear, []
    monkeypatch.setattr(torch.nn.functional, "linear", lambda x, *a: seen.append(x.is_contiguous()) or linear(x, *a))
    head = torch.nn.Linear(8, 50, bias=False).bfloat16()
    model = torch.nn.Module()
    model.get_output_embeddings = lambda: head
    hidden = torch.randn(4, 6, 8).bfloat16()
    last = hidden[:, -1:, :]
    assert not last.is_contiguous()
    with contiguous_head(model):
        assert "forward" in vars(head)
        got = head(last)
    assert "forward" not in vars(head) and seen == [True]
    assert torch.equal(got, linear(last.contiguous(), head.weight))


def test_sampled_log_probabilities_are_the_bf16_models_own_on_the_tokens_it_drew(tiny_model):
    model, _ = _lora(tiny_model)
    sampler = _sampler(model, "bfloat16", temperature=0.7)
    ids = torch.randint(3, 100, (4, 5))
    torch.manual_seed(3)
    completions, logprobs = sampler.sample(_generate(model, sampler, ids), ids, "cpu")
    assert [len(r) for r in logprobs] == [len(c) for c in completions] == [6] * 4
    tokens = torch.tensor(completions)
    # the bf16 model's own distribution at each step, as it decoded them (the same seed: the
    # same tokens), after temperature: transformers' processed scores
    torch.manual_seed(3)
    with torch.no_grad(), sampler.context("cpu"):
        again = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=sampler.config,
                               output_scores=True, return_dict_in_generate=True)
    assert torch.equal(again.sequences[:, 5:], tokens)
    own = torch.stack([s.log_softmax(-1) for s in again.scores], 1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    # the float32 trainer's log-probabilities of the same tokens: what the correction compares with
    full = torch.cat([ids, tokens], dim=1)
    with torch.no_grad():
        f32 = (model(full).logits[:, ids.shape[1] - 1:-1] / 0.7).log_softmax(-1)
    f32 = f32.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    got = torch.tensor(logprobs)
    assert (own - f32).abs().max().item() > 1e-3  # bf16 changes them: the assertion below tells the two apart
    assert torch.allclose(got, own, atol=1e-5)


def test_compiled_decoding_samples_from_the_copy_as_it_is_refilled_each_step(tiny_model):
    """Fast generation (static cache, compiled decoding: the CUDA default) samples from the
    bf16 copy too, and after the adapters move it samples from the new weights: the copy's
    tensors keep their addresses and are refilled in place, so a compiled (or CUDA-graph
    captured) decoder reads this step's weights, not the ones it was compiled with."""
    model, _ = _lora(tiny_model)
    ids = torch.randint(3, 100, (4, 5))
    eager, fast = _sampler(model, "bfloat16"), _sampler(model, "bfloat16", fast=True)
    assert fast.fast and fast.copy is not None and fast.corrects
    drawn = []
    for _ in range(2):
        torch.manual_seed(7)
        want, want_lp = eager.sample(_generate(model, eager, ids), ids, "cpu")
        torch.manual_seed(7)
        got, got_lp = fast.sample(_generate(model, fast, ids), ids, "cpu")
        assert got == want
        assert torch.allclose(torch.tensor(got_lp), torch.tensor(want_lp), atol=1e-3)
        drawn.append(got)
        with torch.no_grad():  # an optimizer step moves the adapters
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.normal_(0, 0.5)
    assert drawn[0] != drawn[1]  # the move shows in what is drawn: the second round tells stale weights apart


def test_float32_samples_exactly_as_before(tiny_model):
    """precision None (``sampling.precision: float32``): the trainer's sampler of today, no
    copy, no recording: the same tokens as the model's own merged sampling."""
    model, _ = _lora(tiny_model)
    ids = torch.randint(3, 100, (4, 5))
    today = _sampler(model, None)
    assert today.copy is None and not today.corrects
    torch.manual_seed(5)
    tokens, logprobs = today.sample(_generate(model, today, ids), ids, "cpu")
    assert logprobs is None
    from grpo_core.trainer.draws import cumulative_draws
    from grpo_core.trainer.merged_lora import MergedLora

    torch.manual_seed(5)
    with torch.no_grad(), cumulative_draws(), MergedLora.of(model, True).merged():
        plain = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=today.config)
    assert tokens == plain[:, 5:].tolist()


def test_the_recorder_cuts_each_row_to_its_completion_and_refuses_what_it_did_not_see():
    columns = [torch.tensor([-0.1, -0.2]), torch.tensor([-1.0, -2.0]), torch.tensor([-3.0, -4.0])]
    assert per_row(columns, [3, 1]) == [[pytest.approx(-0.1), -1.0, -3.0], [pytest.approx(-0.2)]]
    assert per_row(columns, [4, 1]) is None  # longer than the draws recorded
    assert per_row(columns, [1, 1, 1]) is None  # not the rows drawn
    assert per_row([], [1]) is None  # greedy: nothing drawn


def test_the_recorder_gives_the_drawn_tokens_log_probability():
    probs = torch.tensor([[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]])
    torch.manual_seed(0)
    with sampled_logprobs() as drawn:
        picked = torch.multinomial(probs, 1)
    expected = [float(torch.log(probs[i, picked[i, 0]])) for i in range(2)]
    assert drawn.rows([1, 1]) == [[pytest.approx(expected[0])], [pytest.approx(expected[1])]]
    assert torch.multinomial is not None and drawn.columns and len(drawn.columns) == 1


@pytest.mark.parametrize("setting, device, bf16, expected", [
    ("auto", "cpu", True, "bfloat16"),   # a CPU with bf16 instructions
    ("auto", "cpu", False, None),        # AVX2 only: float32, as today
    ("auto", "cuda", True, None),        # CUDA: as the model is (a bf16 LoRA base samples in bf16 already)
    ("float32", "cpu", True, None),
    ("bf16", "cpu", False, "bfloat16"),  # asked for: given, even where slow
    ("bf16", "cuda", True, "bfloat16"),
])
def test_which_precision_each_setting_samples_in(setting, device, bf16, expected):
    assert sampling_precision(setting, device, cpu_bf16=bf16) == expected


@pytest.mark.parametrize("setting, device, words", [
    ("int8", "cpu", ["int8", "cpu", "_weight_int8pack_mm", "bf16"]),
    ("fp8", "cpu", ["fp8", "cpu", "bf16"]),
    ("int8", "cuda", ["int8", "cuda", "not", "measured"]),
])
def test_precisions_without_a_fast_kernel_are_refused_with_the_reason(setting, device, words):
    with pytest.raises(ConfigError) as err:
        sampling_precision(setting, device)
    assert all(w in str(err.value) for w in words), str(err.value)


def test_vllm_samples_in_its_own_precision():
    with pytest.raises(ConfigError, match="use_vllm"):
        sampling_precision("bf16", "cuda", vllm=True)
    assert sampling_precision("auto", "cpu", cpu_bf16=True, vllm=True) is None


def test_cpu_bf16_reads_the_cpus_flags(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor : 0\nflags : fpu avx2 avx512f avx512_bf16 avx512_vnni\n")
    assert cpu_bf16(str(info))
    info.write_text("processor : 0\nflags : fpu avx2 amx_bf16 amx_tile\n")
    assert cpu_bf16(str(info))
    info.write_text("processor : 0\nflags : fpu avx avx2\n")
    assert not cpu_bf16(str(info))
    assert not cpu_bf16(str(tmp_path / "none"))


class _Weights:
    """A callback keeping the trainable weights after each step."""

    def __init__(self):
        from transformers import TrainerCallback

        self.after: list[dict] = []
        outer = self

        class Keep(TrainerCallback):
            def on_step_end(self, args, state, control, model=None, **kw):
                outer.after.append({n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad})

        self.callback = Keep()


def _step(train, monkeypatch, tmp_path, name: str, shift: bool, *overrides):
    """One step with bf16 sampling; ``shift``: the sampler's log-probabilities of row i
    reported 0.3 * i nat higher than drawn (its importance ratio exp(-0.3 i) under
    token_truncate with no cap in reach), so the correction weighs the rows unequally."""
    from grpo_core.trainer import sampling_copy

    real = sampling_copy.per_row

    def shifted(columns, lengths):
        rows = real(columns, lengths)
        return rows if rows is None or not shift else [[x + 0.3 * i for x in r] for i, r in enumerate(rows)]

    monkeypatch.setattr(sampling_copy, "per_row", shifted)
    keep = _Weights()
    train("--max_steps", "1", "--sampling.precision", "bf16", "--vllm_importance_sampling_mode", "token_truncate",
          "--vllm_importance_sampling_clip_max", "1000", *overrides, callbacks=[keep.callback], out=tmp_path / name)
    return keep.after[-1]


def _same(a: dict, b: dict) -> bool:
    return all(torch.equal(a[n], b[n]) for n in a)


def test_trls_correction_weighs_the_loss_by_the_samplers_log_probabilities(train, monkeypatch, tmp_path):
    plain = _step(train, monkeypatch, tmp_path, "plain", False)
    shifted = _step(train, monkeypatch, tmp_path, "shifted", True)
    assert not _same(plain, shifted)  # the sampler's log-probabilities reach the loss
    steps = [json.loads(x) for x in (tmp_path / "plain" / "metrics.jsonl").read_text().splitlines()]
    logged = next(s for s in steps if "sampling/kl" in s)
    assert abs(logged["sampling/kl"]) < 0.05 and "sampling/importance_sampling_ratio/mean" in logged


def test_without_the_correction_the_samplers_log_probabilities_change_nothing(train, monkeypatch, tmp_path):
    off = ("--vllm_importance_sampling_correction", "false")
    plain = _step(train, monkeypatch, tmp_path, "plain", False, *off)
    shifted = _step(train, monkeypatch, tmp_path, "shifted", True, *off)
    assert _same(plain, shifted)


def test_a_full_fine_tune_samples_from_its_weights_as_they_are_now(tiny_model):
    """No LoRA: every weight is trainable, so the bf16 copy is refilled before each generation."""
    model, _ = load_policy(str(tiny_model), dtype="float32", device="cpu", log=lambda *a: None)
    model.train()
    sampler = _sampler(model, "bfloat16")
    assert sampler.copy.merge is None and not sampler.copy.frozen and sampler.copy.live
    ids = torch.randint(3, 100, (2, 6))
    with torch.no_grad(), sampler.weights("cpu"):
        assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
        before = model(ids).logits
    with torch.no_grad():  # an update of the float32 weights
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))
    expected = {n: p.detach().to(torch.bfloat16) for n, p in model.named_parameters()}
    with torch.no_grad(), sampler.weights("cpu"):
        assert all(torch.equal(p, expected[n]) for n, p in model.named_parameters())
        assert not torch.equal(model(ids).logits, before)
    assert {p.dtype for p in model.parameters()} == {torch.float32}


def test_dynamic_sampling_merges_the_corrected_batches(train, tmp_path):
    """Dynamic sampling's rounds each carry their importance ratios; the merged batch trains."""
    train("--max_steps", "2", "--sampling.precision", "bf16", "--sampling.dynamic", "true",
          "--sampling.max_rounds", "3", "--vllm_importance_sampling_mode", "token_truncate", out=tmp_path / "d")
    steps = [json.loads(x) for x in (tmp_path / "d" / "metrics.jsonl").read_text().splitlines()]
    logged = [s for s in steps if "sampling/kl" in s]
    assert len(logged) == 2 and all(abs(s["sampling/kl"]) < 0.05 for s in logged)
