"""grpo's decoding loop (``model.decode_loop: grpo``) samples what ``generate`` samples.

Greedy: the same tokens as transformers' ``generate`` on left-padded prompts of different
lengths (the cache, positions and mask are right). Sampled: each token is the one whose
interval of the running sum of the filtered distribution holds that step's uniform number,
where the distribution is recomputed here from a full forward pass over prompt and
completion (no cache) and filtered by transformers' own warpers; the recorded
log-probability is that distribution's. Rows pad after their end-of-sequence token, and
the loop stops at the first check after every row has ended."""

from __future__ import annotations

import pytest
import torch

from grpo_core.trainer.decode_loop import (
    DecodeLoop,
    effective,
    replacing_generate,
    uncompilable,
    unsupported,
)
from grpo_core.trainer.generation import load_policy, render


@pytest.fixture(scope="module", params=["qwen2", "llama"])
def sharp(request, tmp_path_factory):
    from grpo_core.testing import make_tiny_model

    path = make_tiny_model(tmp_path_factory.mktemp("loop") / request.param, arch=request.param)
    model, tok = load_policy(str(path), dtype="float32", device="cpu", log=lambda *a: None)
    with torch.no_grad():  # sharper logits, so tokens vary instead of repeating one
        for p in model.parameters():
            p.mul_(8)
    tok.padding_side = "left"
    prompts = [render(tok, [{"role": "user", "content": f"What is {i} + {3 * i}?" + " and" * i}]) for i in range(4)]
    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    assert len(set(enc["attention_mask"].sum(1).tolist())) == 4  # four prompt lengths: left padding differs
    return model, tok, enc


def config(**kw):
    from transformers import GenerationConfig

    return GenerationConfig(**{"max_new_tokens": 12, "do_sample": True, **kw})


def test_greedy_tokens_are_generates(sharp):
    model, tok, enc = sharp
    cfg = config(do_sample=False, pad_token_id=tok.pad_token_id, eos_token_id=[tok.eos_token_id])
    expected = model.generate(**enc, generation_config=cfg)
    got = DecodeLoop(model).generate(enc["input_ids"], enc["attention_mask"], cfg, eos=[tok.eos_token_id],
                                     pad=tok.pad_token_id)
    assert torch.equal(got, expected)
    assert len({tuple(r) for r in got[:, enc["input_ids"].shape[1]:].tolist()}) == 4  # not degenerate


def reference(model, enc, completion, settings: dict):
    """Per step, the filtered distribution transformers' warpers give from a full forward pass."""
    from transformers.generation import logits_process as lp

    warpers = [lp.TemperatureLogitsWarper(settings["temperature"])]
    warpers += [lp.TopKLogitsWarper(settings["top_k"])] if settings["top_k"] else []
    warpers += [lp.TopPLogitsWarper(settings["top_p"])] if settings["top_p"] < 1 else []
    warpers += [lp.MinPLogitsWarper(settings["min_p"])] if settings["min_p"] else []
    ids = torch.cat([enc["input_ids"], completion], 1)
    mask = torch.cat([enc["attention_mask"], torch.ones_like(completion)], 1)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits.float()
    prompt = enc["input_ids"].shape[1]
    steps = []
    for t in range(completion.shape[1]):
        scores = logits[:, prompt + t - 1]
        for w in warpers:
            scores = w(ids[:, : prompt + t], scores)
        steps.append(scores.log_softmax(-1))
    return steps


SETTINGS = {"temperature": 0.7, "top_k": 50, "top_p": 0.9, "min_p": 0.0}
MIN_P = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.3}


@pytest.mark.parametrize("settings", [SETTINGS, MIN_P], ids=["temperature-top_k-top_p", "min_p"])
def test_sampled_tokens_follow_the_uniforms_under_transformers_warpers(sharp, settings):
    model, tok, enc = sharp
    cfg = config(**settings)
    rows = enc["input_ids"].shape[0]
    uniforms = torch.rand((12, rows), generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    record: list = []
    loop = DecodeLoop(model)
    out = loop.generate(enc["input_ids"], enc["attention_mask"], cfg, eos=[-1], pad=tok.pad_token_id,
                        uniforms=uniforms, logprobs_out=record)
    completion = out[:, enc["input_ids"].shape[1]:]
    assert completion.shape == (rows, 12) and loop.steps_run == 12
    for t, logprobs in enumerate(reference(model, enc, completion, settings)):
        running = logprobs.double().exp().cumsum(-1)
        expected = torch.searchsorted(running, (uniforms[t] * running[:, -1]).unsqueeze(1), right=True)
        assert completion[:, t].tolist() == expected.squeeze(1).tolist(), t
        assert torch.allclose(record[0][:, t], logprobs.gather(1, completion[:, t : t + 1]).squeeze(1), atol=1e-4)
    assert len(set(completion.flatten().tolist())) > 6  # sampled, not one token repeated


def test_rows_pad_after_their_end_and_the_loop_stops_at_a_check(sharp):
    model, tok, enc = sharp
    cfg = config(**SETTINGS)
    uniforms = torch.rand((12, 4), generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    prompt, pad = enc["input_ids"].shape[1], tok.pad_token_id
    free = DecodeLoop(model).generate(enc["input_ids"], enc["attention_mask"], cfg, eos=[-1], pad=pad,
                                      uniforms=uniforms)[:, prompt:]
    end = int(free[0, 3])  # row 0's fourth token ends it now
    cut = DecodeLoop(model).generate(enc["input_ids"], enc["attention_mask"], cfg, eos=[end], pad=pad,
                                     uniforms=uniforms)[:, prompt:]
    for row, ids in enumerate(free.tolist()):
        stop = ids.index(end) + 1 if end in ids else len(ids)
        assert cut[row, :stop].tolist() == ids[:stop]  # the same tokens up to and with the end
        assert cut[row, stop:].tolist() == [pad] * (len(ids) - stop)  # then padding
    every = list(range(400))  # every token ends a row: all rows end at their first token
    loop = DecodeLoop(model, check_every=4)
    done = loop.generate(enc["input_ids"], enc["attention_mask"], cfg, eos=every, pad=pad, uniforms=uniforms)
    assert loop.steps_run == 4 and done.shape[1] == prompt + 4  # asked at token 4, not at each
    assert done[:, prompt + 1:].eq(pad).all()


def test_compiled_step_samples_the_same_tokens(sharp):
    model, tok, enc = sharp
    cfg = config(**SETTINGS)
    uniforms = torch.rand((12, 4), generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    args = (enc["input_ids"], enc["attention_mask"], cfg)
    kw = dict(eos=[tok.eos_token_id], pad=tok.pad_token_id, uniforms=uniforms)
    eager = DecodeLoop(model).generate(*args, **kw)
    torch._dynamo.reset()
    loop = DecodeLoop(model, compile="aot_eager")
    assert torch.equal(loop.generate(*args, **kw), eager)
    # the same loop again, after a call whose rows all ended at once: its buffers and cache,
    # kept from call to call, start empty again
    loop.generate(*args, **{**kw, "eos": list(range(400))})
    assert torch.equal(loop.generate(*args, **kw), eager)


def test_settings_it_does_not_do_go_to_generate_and_are_said_once(sharp):
    model, tok, enc = sharp
    assert unsupported(effective(model, config())) is None
    assert unsupported(config(repetition_penalty=1.2)) == "repetition_penalty 1.2"
    assert unsupported(config(num_beams=2, do_sample=False)) == "num_beams 2"
    assert unsupported(config(temperature=0.0)) == "temperature 0.0"
    calls, said = [], []
    loop = DecodeLoop(model)
    loop.generate = lambda *a, **k: calls.append(k.get("eos")) or enc["input_ids"]
    with replacing_generate(model, loop, eos=[tok.eos_token_id], pad=tok.pad_token_id, log=said.append):
        model.generate(**enc, generation_config=config(max_new_tokens=2))
        assert calls == [[tok.eos_token_id]]
        for _ in range(2):
            out = model.generate(**enc, generation_config=config(max_new_tokens=2, repetition_penalty=1.2))
        # a setting the model's own generation config carries counts as generate counts it
        model.generation_config.no_repeat_ngram_size = 3
        try:
            model.generate(**enc, generation_config=config(max_new_tokens=2))
        finally:
            model.generation_config.no_repeat_ngram_size = 0
    assert len(calls) == 1 and out.shape[1] == enc["input_ids"].shape[1] + 2  # generate's own
    assert said == ["note: model.decode_loop: grpo samples through generate here (repetition_penalty 1.2).",
                    "note: model.decode_loop: grpo samples through generate here (no_repeat_ngram_size 3)."]
    assert "generate" not in vars(model)  # put back


def test_what_generate_does_not_compile_the_loop_does_not_either(sharp):
    model, _, _ = sharp
    assert uncompilable(model) is None and DecodeLoop(model, compile="aot_eager").declines(config()) is None
    model.config._attn_implementation_internal = "flash_attention_2"  # noqa: SLF001 - what from_pretrained sets
    try:
        assert uncompilable(model) == "attention flash_attention_2"
        assert DecodeLoop(model, compile="aot_eager").declines(config()) == "attention flash_attention_2"
        assert DecodeLoop(model).declines(config()) is None  # eager: no compiling, no reason
    finally:
        model.config._attn_implementation_internal = "sdpa"


def test_a_token_filtered_out_is_never_drawn():
    """A running sum that does not rise to the last bit (float32 on a GPU) could give a
    removed entry an interval; the draw then falls back to the most likely token."""
    from grpo_core.trainer.decode_loop import Draw, pick

    logits = torch.tensor([[0.0, 5.0, 4.0, 0.0]])
    draw = Draw(top_k=2)  # entries 0 and 3 removed
    token, logp = pick(logits, torch.tensor([0.9999999]), draw)
    assert token.item() == 2 and torch.isfinite(logp).all()
    token, logp = pick(logits, torch.tensor([1.0]), draw)  # past the end: clamped to the last entry, removed
    assert token.item() == 1 and torch.isfinite(logp).all()


def test_the_trainers_sampler_samples_through_the_loop_from_the_bf16_copy(tiny_model):
    """``decode_loop: grpo`` with ``sampling.precision: bf16``: the loop samples from the bf16
    copy (LoRA merged into it) and the log-probabilities it hands TRL's correction are that
    copy's own at the drawn tokens, after temperature."""
    from peft import LoraConfig, get_peft_model
    from transformers import GenerationConfig

    from grpo_core.trainer.decoding import FastSampling, Sampling

    model, _ = load_policy(str(tiny_model), dtype="float32", device="cpu", log=lambda *a: None)
    torch.manual_seed(0)
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", lora_dropout=0.0))
    with torch.no_grad():  # a trained adapter (B is zero at initialisation: a missing merge would not show)
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    model.eval()
    config = GenerationConfig(do_sample=True, max_new_tokens=6, temperature=0.7, top_k=0, pad_token_id=0)
    sampler = FastSampling(Sampling(merged=True, precision="bfloat16", logprobs=True, loop=True), config, 6,
                           model=model, eos=[-1], pad=0)
    ids = torch.randint(3, 100, (4, 5))
    calls = []
    real = sampler.loop.generate
    sampler.loop.generate = lambda *a, **k: calls.append(1) or real(*a, **k)

    def generate():  # TRL's part
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=config)
        return [row.tolist() for row in out[:, ids.shape[1]:]], None

    completions, logprobs = sampler.sample(generate, ids.tolist(), "cpu")
    assert calls == [1] and [len(c) for c in completions] == [6] * 4
    tokens = torch.tensor(completions)
    with torch.no_grad():
        with sampler.context("cpu"):  # the bf16 copy, merged, decoding token by token as sampling does
            own = incremental(model, ids, tokens, 0.7)
        f32 = incremental(model, ids, tokens, 0.7)
    got = torch.tensor(logprobs)
    assert (own - f32).abs().max().item() > 5e-3  # bf16 changes them: the next line tells the two apart
    assert torch.allclose(got, own, atol=1e-5)
    assert "generate" not in vars(model)


def incremental(model, ids, tokens, temperature: float):
    """The log-probability of each of ``tokens`` (rows x new) after ``ids``, decoded one token
    at a time over a cache, as sampling decodes (after temperature)."""
    out = model(input_ids=ids, use_cache=True)
    cache, columns = out.cache, []
    for t in range(tokens.shape[1]):
        logprobs = (out.logits[:, -1].float() / temperature).log_softmax(-1)
        columns.append(logprobs.gather(1, tokens[:, t : t + 1]).squeeze(1))
        out = model(input_ids=tokens[:, t : t + 1], cache=cache, use_cache=True)
        cache = out.cache
    return torch.stack(columns, 1)


def test_training_with_the_loop(train, tmp_path, monkeypatch):
    from grpo_core.trainer import decode_loop

    calls = []
    real = decode_loop.DecodeLoop.generate
    monkeypatch.setattr(decode_loop.DecodeLoop, "generate", lambda self, *a, **k: calls.append(1) or real(self, *a, **k))
    result, lines = train("--max_steps", "2", "--model.decode_loop", "grpo", out=tmp_path / "loop")
    assert len(calls) >= 2  # every generation of the two steps went through the loop
    steps = [line for line in (tmp_path / "loop" / "metrics.jsonl").read_text().splitlines() if '"loss"' in line]
    assert len(steps) == 2


def test_when_the_loop_fails_sampling_goes_on_through_generate_with_one_warning(train, tmp_path, monkeypatch):
    from grpo_core.trainer import decode_loop

    calls = []

    def broken(self, *a, **k):
        calls.append(1)
        raise RuntimeError("captured graph went away")

    monkeypatch.setattr(decode_loop.DecodeLoop, "generate", broken)
    result, lines = train("--max_steps", "2", "--model.decode_loop", "grpo", out=tmp_path / "broken")
    warned = [line for line in lines if "failed (RuntimeError: captured graph went away)" in line]
    assert len(warned) == 1 and "grpo's loop" in warned[0] and "model.decode_loop: transformers" in warned[0]
    assert calls == [1]  # tried once, then every generation went through generate
    steps = [line for line in (tmp_path / "broken" / "metrics.jsonl").read_text().splitlines() if '"loss"' in line]
    assert len(steps) == 2
