"""grpo's decoding loop (``model.decode_loop: grpo``) against transformers' ``generate``, as the
trainer samples: the quickstart's LoRA model (SmolLM2-135M, r 16, all-linear, a trained-looking
adapter), the trainer's sampler around both (``FastSampling``: on a CPU the merged LoRA copy,
one uniform number per row for each draw, thread-independent attention), the same prompts,
``--tokens`` new tokens a row (no row ends early on either side), the two sides alternating in
one process, best of ``--runs``. Prints seconds per generated token for each side and the ratio
loop / generate. On CUDA the loop's step is compiled with CUDA graphs ("reduce-overhead") and
``generate`` uses transformers' own static cache and compiled step, as ``model.fast_generation``
does.

    python bench/decode_loop.py [--model smollm2-135m] [--rows 8 32] [--tokens 48] [--runs 3] [--threads N]
    python bench/decode_loop.py --tiny          # a tiny random model: a smoke test
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

from merged_sampling import build, prompts


def sides(model, tokens: int, device: str, threads: int | None):
    from transformers import GenerationConfig

    from grpo_core.trainer.decoding import FastSampling, Sampling

    out = {}
    for name in ("generate", "loop"):
        config = GenerationConfig(do_sample=True, max_new_tokens=tokens, temperature=1.0, top_k=0, top_p=1.0,
                                  pad_token_id=0)
        if name == "generate":  # rows never end early: the loop is told no token ends them
            config.min_new_tokens = tokens
        out[name] = FastSampling(Sampling(fast=device == "cuda", merged=device == "cpu", threads=threads,
                                          loop=name == "loop"), config, tokens, model=model, eos=[-1], pad=0)
    return out


def timed(model, side, enc, device: str) -> tuple[float, int]:
    import torch

    def generate():
        out = model.generate(**enc, generation_config=side.config)
        return [row.tolist() for row in out[:, enc["input_ids"].shape[1]:]], None

    torch.manual_seed(1)
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    with torch.no_grad():
        tokens, _ = side.sample(generate, enc["input_ids"].tolist(), device)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0, sum(len(t) for t in tokens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--rows", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--threads", type=int, help="CPU: torch threads while sampling (default torch's own)")
    parser.add_argument("--tiny", action="store_true", help="a tiny random model (a smoke test)")
    parser.add_argument("--json", help="write the rows here too")
    opts = parser.parse_args()
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    model_id = opts.model
    if opts.tiny:
        from grpo_core.testing import make_tiny_model

        model_id = str(make_tiny_model(tempfile.mkdtemp() + "/tiny", arch="llama"))
        opts.rows, opts.tokens, opts.runs = [4], 8, 1
    model, tok = build(model_id, 16, device)
    print(f"{model_id} on {device}, {opts.threads or torch.get_num_threads()} threads, {opts.tokens} new tokens a row, "
          f"best of {opts.runs} alternating runs", flush=True)
    rows = []
    for batch in opts.rows:
        enc = prompts(tok, batch).to(device)
        both = sides(model, opts.tokens, device, opts.threads)
        for side in both.values():  # warm-up (compiling, the merged copy)
            timed(model, side, enc, device)
        best = {name: float("inf") for name in both}
        count = {}
        for _ in range(opts.runs):
            for name, side in both.items():
                seconds, count[name] = timed(model, side, enc, device)
                best[name] = min(best[name], seconds)
        per = {name: best[name] / max(count[name], 1) for name in both}
        row = {"rows": batch, "tokens": opts.tokens, "generate_s_per_token": per["generate"],
               "loop_s_per_token": per["loop"], "ratio": per["loop"] / per["generate"], "device": device}
        rows.append(row)
        print(f"rows {batch:3d}: generate {per['generate'] * 1e3:8.3f} ms/token  loop {per['loop'] * 1e3:8.3f} "
              f"ms/token  loop/generate {row['ratio']:.2f}", flush=True)
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
