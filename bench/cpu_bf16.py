"""bf16 on a CPU (``bf16: true`` there): what sampling and the training step's forward
and backward pass cost under bf16 autocast against float32, on the same LoRA model
(the quickstart's shape by default: SmolLM2-135M, r 16, all-linear, sampling from the
merged weights as the trainer does: a float32 copy, or under bf16 a bf16 one and a bf16
copy of the output head), the two sides alternating, best of ``--runs``
each. Prints seconds per side and the ratio bf16 / float32 for each part, and the share
of greedy tokens both sides decode alike (bf16 rounds, so it need not be 1).

    python bench/cpu_bf16.py [--model smollm2-135m] [--batch 8] [--tokens 32] [--length 90] [--runs 3]
    python bench/cpu_bf16.py --tiny        # a tiny random model: a smoke test

The whole quickstart step is a different matter (see docs/benchmarks.md, "bf16 on a CPU").
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time

from merged_sampling import build, prompts


def autocast(on: bool):
    import torch

    return torch.autocast("cpu", dtype=torch.bfloat16) if on else contextlib.nullcontext()


def sample(model, merges, enc, tokens: int, bf16: bool, *, greedy: bool = False):
    import torch

    from grpo_core.trainer.decoding import head_in

    kw = dict(max_new_tokens=tokens, min_new_tokens=tokens, do_sample=not greedy, pad_token_id=enc["input_ids"][0, 0])
    head = head_in(model, "bfloat16") if bf16 else contextlib.nullcontext()  # as the trainer's sampler
    torch.manual_seed(1)
    t0 = time.perf_counter()
    with torch.no_grad(), autocast(bf16), merges[bf16].merged(), head:  # the trainer's order
        out = model.generate(**enc, **kw)
    return time.perf_counter() - t0, out


def step(model, ids, bf16: bool) -> float:
    """One forward and backward pass over ``ids`` (a loss on every position's logits)."""
    t0 = time.perf_counter()
    with autocast(bf16):
        loss = model(input_ids=ids).logits.float().logsumexp(-1).mean()
    loss.backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=32, help="new tokens sampled per completion")
    parser.add_argument("--length", type=int, default=90, help="tokens per sequence in the training pass")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="a tiny random model, 1 run: a smoke test")
    opts = parser.parse_args()

    import torch

    from grpo_core.trainer.merged_lora import MergedLora

    with tempfile.TemporaryDirectory() as tmp:
        if opts.tiny:
            from grpo_core.testing import make_tiny_model

            opts.model, opts.runs, opts.tokens, opts.length = str(make_tiny_model(tmp + "/model")), 1, 8, 16
        model, tok = build(opts.model, 16)
        merges = {False: MergedLora.of(model, True), True: MergedLora.of(model, True, dtype="bfloat16")}
        enc = prompts(tok, opts.batch)
        ids = torch.randint(10, min(1000, model.config.vocab_size), (opts.batch, opts.length))
        same = (sample(model, merges, enc, opts.tokens, False, greedy=True)[1]
                == sample(model, merges, enc, opts.tokens, True, greedy=True)[1]).float().mean().item()
        model.train()
        times = {(part, side): [] for part in ("sample", "step") for side in ("float32", "bf16")}
        for run in range(opts.runs + 1):  # the first round warms both sides up and is left out
            for side in ("float32", "bf16"):
                s = sample(model, merges, enc, opts.tokens, side == "bf16")[0]
                t = step(model, ids, side == "bf16")
                if run:
                    times["sample", side].append(s)
                    times["step", side].append(t)
    print(f"{opts.model}, LoRA r 16 all-linear, {torch.get_num_threads()} threads, best of {opts.runs}")
    for part, what in (("sample", f"sampling {opts.batch} x {opts.tokens} new tokens (merged weights)"),
                       ("step", f"forward + backward of {opts.batch} x {opts.length} tokens")):
        f32, b16 = min(times[part, "float32"]), min(times[part, "bf16"])
        print(f"  {what:52} float32 {f32:6.2f} s  bf16 {b16:6.2f} s  bf16 / float32 {b16 / f32:.3f}")
    print(f"greedy tokens alike: {same:.3f}")


if __name__ == "__main__":
    main()
