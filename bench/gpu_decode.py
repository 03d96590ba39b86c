"""Where a GRPO step's sampling time goes on CUDA, and what grpo's sampling arms cost per
decoding step: one process, one randomly initialised model of a real shape with LoRA
adapters (bf16 base, float32 adapters, as `grpo train` loads a LoRA run), the same prompts.

    python bench/gpu_decode.py --out DIR                  # GPU: 0.5B shape, rows 16 64 128, 256 tokens
    python bench/gpu_decode.py --smoke --out DIR          # CPU smoke test: tiny shape, aot_eager

Arms (each sampling `--tokens` new tokens per row, forced with min_new_tokens):

- ``bare``: TRL's own generation (dynamic cache, eager decoding, adapters unmerged, no autocast);
- ``grpo``: `grpo train`'s CUDA sampling of a LoRA run today (static cache, compiled decoding
  with CUDA graphs, adapters unmerged under bf16 autocast);
- ``bf16``: ``sampling.precision: bf16`` (the adapters merged into a bf16 copy of the
  weights they adapt, pure bf16 decoding, static cache and compiled decoding; each drawn
  token's log-probability recorded for TRL's correction);
- ``loop``, ``loop-bf16``: ``grpo`` and ``bf16`` with ``model.decode_loop: grpo`` (grpo's own
  loop: the whole decoding step, the draw included, one CUDA-graph-captured function, no wait
  for the GPU per token; rows never end early there: no token ends them).

Per cell: the warm-up call's seconds (compilation), the seconds per decoding step of a
timed call, tokens per second. Then, for ``grpo`` and ``bf16`` at the first row count, a
torch-profiler trace of ``--profile-steps`` decoding steps (gzipped Chrome trace and the
top kernels in DIR): kernels per step, GPU busy time per step against the step's wall
time. Then the bf16 sampler's check: after the adapters move, the recorded log-probs
against the copy's own forward with the new weights and with the old ones (stale weights
would match the old), and against the trainer's (unmerged, autocast): mean |difference|
and the mean per-token KL estimate. Every result is appended to DIR/decode.jsonl as it
comes, so a run cut short keeps what it measured.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import torch  # noqa: E402
from gpu_step import SHAPES  # noqa: E402

CUDA = torch.cuda.is_available()
ARMS = ("grpo", "loop", "bf16", "loop-bf16", "bare")
DEVICE = "cuda" if CUDA else "cpu"


def now() -> float:
    if CUDA:
        torch.cuda.synchronize()
    return time.perf_counter()


def build(shape: str):
    """The shape's model, random, bf16 base on CUDA (float32 on a CPU), LoRA r16 on every
    linear layer with non-zero B (a trained adapter: a zero B would hide a missing merge)."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, Qwen2Config

    dims = dict(SHAPES[shape])
    dims["vocab_size"] = dims["vocab_size"] or 512
    cfg = Qwen2Config(**dims, max_position_embeddings=4096, eos_token_id=1, pad_token_id=0, bos_token_id=None)
    torch.manual_seed(0)
    with torch.device(DEVICE):
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16 if CUDA else torch.float32)
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", lora_dropout=0.0))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.02)
    return model.eval()


def sampler(arm: str, tokens: int, model, backend: str | None):
    """grpo's FastSampling for ``arm`` (None for bare) and the GenerationConfig it samples with."""
    from transformers import GenerationConfig

    from grpo_core.trainer.decoding import FastSampling, Sampling, enable_fast_generation

    gc = GenerationConfig(max_new_tokens=tokens, min_new_tokens=tokens, do_sample=True, temperature=1.0, top_k=0,
                          top_p=1.0, pad_token_id=0, eos_token_id=1, disable_compile=True)  # as TRL builds it
    if arm == "bare":
        return None, gc
    settings = {"grpo": Sampling(fast=True, autocast="bfloat16" if CUDA else None),
                "bf16": Sampling(fast=True, precision="bfloat16", merged="auto", logprobs=True)}[arm.removeprefix("loop-")
                                                                                               if arm != "loop" else "grpo"]
    loop = arm.startswith("loop")
    if loop:  # the loop does not take min_new_tokens: no token ends a row instead (eos below)
        gc.min_new_tokens = None
        settings = replace(settings, loop=True)
    s = FastSampling(settings, gc, tokens, model=model, log=lambda *a: print(*a, file=sys.stderr), eos=[-1], pad=0)
    if backend:
        enable_fast_generation(gc, backend=backend)
        if s.loop is not None:
            s.loop.compile = backend
    return s, gc


def sample(s, gc, model, ids, new: int | None = None):
    """One generation of ``new`` tokens a row (default the config's): (completions, log-probs)."""
    if new is not None:
        gc.max_new_tokens = new
        gc.min_new_tokens = new if gc.min_new_tokens else None

    def generate():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=gc)
        return out[:, ids.shape[1]:].tolist(), None

    with torch.no_grad():
        if s is None:
            return generate()
        return s.sample(generate, ids.tolist(), DEVICE)


def cell(arm, rows, o, model, record):
    ids = torch.randint(2, 400, (rows, o.prompt), device=DEVICE)
    s, gc = sampler(arm, o.tokens, model, o.backend)
    t = now()
    sample(s, gc, model, ids, new=min(8, o.tokens))  # compiles (the cache is sized for the full length)
    warm = now() - t
    t = now()
    done, _ = sample(s, gc, model, ids, new=o.tokens)
    took = now() - t
    assert all(len(c) == o.tokens for c in done), "a row stopped early"
    r = dict(what="decode", arm=arm, rows=rows, tokens=o.tokens, warmup_s=round(warm, 2), seconds=round(took, 3),
             ms_per_step=round(1000 * took / o.tokens, 3), tokens_per_s=round(rows * o.tokens / took))
    record(r)
    return s, gc, ids


def profile(arm, s, gc, ids, o, record, model):
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if CUDA else [])
    sample(s, gc, model, ids, new=o.profile_steps)  # warm at this length
    with torch_profile(activities=acts) as prof:
        t = now()
        sample(s, gc, model, ids, new=o.profile_steps)
        wall = now() - t
    trace = Path(o.out) / f"trace-{arm}.json"
    prof.export_chrome_trace(str(trace))
    with open(trace, "rb") as f, gzip.open(str(trace) + ".gz", "wb") as g:
        shutil.copyfileobj(f, g)
    trace.unlink()
    events = prof.key_averages()
    key = "self_device_time_total" if CUDA else "self_cpu_time_total"
    gpu = [e for e in events if getattr(e, "device_type", None) is not None and "CUDA" in str(e.device_type)]
    kernels = sum(e.count for e in gpu)
    busy_us = sum(getattr(e, "self_device_time_total", 0) for e in gpu)
    try:
        top = events.table(sort_by=key, row_limit=30)
    except Exception:  # noqa: BLE001 - older torch names the column self_cuda_time_total
        top = events.table(sort_by="self_cuda_time_total" if CUDA else key, row_limit=30)
    (Path(o.out) / f"profile-{arm}.txt").write_text(top)
    steps = o.profile_steps
    record(dict(what="profile", arm=arm, rows=ids.shape[0], steps=steps, wall_ms_per_step=round(1000 * wall / steps, 3),
                gpu_busy_ms_per_step=round(busy_us / 1000 / steps, 3), kernels_per_step=round(kernels / steps, 1),
                gpu_busy_share=round(busy_us / 1e6 / wall, 3) if wall else None,
                note="prefill included in the profiled call; wall time under the profiler"))


def logps(model, full, prompt, temperature=1.0):
    logits = model(full).logits[:, prompt - 1:-1].float() / temperature
    return logits.log_softmax(-1).gather(-1, full[:, prompt:].unsqueeze(-1)).squeeze(-1)


def check(arm, s, gc, ids, o, record, model):
    """After the adapters move: the bf16 sampler's recorded log-probs against the copy with
    the new weights, the copy with the old ones, and the trainer."""
    old = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_B" in n}
    torch.manual_seed(1)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.add_(torch.randn_like(p) * 0.02)
    new = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_B" in n}
    done, got = sample(s, gc, model, ids, new=o.check_tokens)
    full = torch.cat([ids, torch.tensor(done, device=DEVICE)], 1)
    got = torch.tensor(got, device=DEVICE)
    p = ids.shape[1]

    def with_b(weights):
        with torch.no_grad():
            for n, q in model.named_parameters():
                if n in weights:
                    q.copy_(weights[n])

    with torch.no_grad():
        with s.copy.swapped():
            own = logps(model, full, p)
        with_b(old)
        with s.copy.swapped():
            stale = logps(model, full, p)
        with_b(new)
        with torch.autocast(DEVICE, dtype=torch.bfloat16, enabled=CUDA):
            trainer = logps(model, full, p)
    record(dict(what="check", arm=arm, rows=ids.shape[0], tokens=o.check_tokens,
                vs_own_mean_abs=round((got - own).abs().mean().item(), 5),
                vs_own_max_abs=round((got - own).abs().max().item(), 4),
                vs_old_weights_mean_abs=round((got - stale).abs().mean().item(), 5),
                vs_trainer_mean_abs=round((got - trainer).abs().mean().item(), 5),
                kl_sampler_trainer=round((got - trainer).mean().item(), 6)))


def attempt(what, arm, rows, record, step, *args):
    """``step(*args)``, or None with a row saying why it failed (the other cells still run)."""
    try:
        return step(*args) or True
    except Exception as exc:  # noqa: BLE001 - one cell's failure is a row
        record(dict(what=f"{what} failed", arm=arm, rows=rows, error=f"{type(exc).__name__}: {str(exc)[:300]}"))
        return None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shape", default="0.5b", choices=sorted(SHAPES))
    p.add_argument("--rows", nargs="+", type=int, default=[16, 128, 64])
    p.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    p.add_argument("--tokens", type=int, default=256)
    p.add_argument("--prompt", type=int, default=64, help="prompt tokens a row (default 64)")
    p.add_argument("--profile-steps", type=int, default=8)
    p.add_argument("--check-tokens", type=int, default=32)
    p.add_argument("--budget", type=float, default=330, help="seconds: no new cell starts after (default 330)")
    p.add_argument("--backend", default=None, help="compile backend (tests: aot_eager on a CPU)")
    p.add_argument("--out", required=True)
    p.add_argument("--smoke", action="store_true", help="CPU smoke test: tiny shape, 2 arms x 2 row counts")
    o = p.parse_args()
    if o.smoke:
        o.shape, o.rows, o.tokens, o.prompt, o.profile_steps, o.check_tokens = "tiny", [2, 3], 6, 5, 2, 4
        o.backend = o.backend or ("aot_eager" if not CUDA else None)
    os.makedirs(o.out, exist_ok=True)
    start = time.monotonic()
    meta = dict(device=torch.cuda.get_device_name() if CUDA else "cpu", torch=torch.__version__, shape=o.shape,
                date=time.strftime("%Y-%m-%d"))

    def record(r):
        r = {**meta, **r}
        print(json.dumps(r), flush=True)
        with open(Path(o.out) / "decode.jsonl", "a") as f:
            f.write(json.dumps(r) + "\n")

    for name in ("recompile_limit", "cache_size_limit"):  # one compiled decoder per arm and row count here
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 64)
    model = build(o.shape)
    for i, rows in enumerate(o.rows):
        for arm in o.arms:
            if time.monotonic() - start > o.budget:
                record(dict(what="skipped", arm=arm, rows=rows, reason="budget"))
                continue
            made = attempt("decode", arm, rows, record, cell, arm, rows, o, model, record)
            if made and i == 0 and arm != "bare":
                attempt("profile", arm, rows, record, profile, arm, *made, o, record, model)
            if made and i == 0 and arm in ("bf16", "loop-bf16"):
                attempt("check", arm, rows, record, check, arm, *made, o, record, model)
            if CUDA:
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
