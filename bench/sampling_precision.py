"""Sampling in bf16 (``sampling.precision: bf16``) against float32, as the trainer samples: the
quickstart's LoRA model (SmolLM2-135M, r 16, all-linear, a trained-looking adapter), the
trainer's sampler (``FastSampling``: merged LoRA, the CPU draws, thread-independent
attention; bf16: every weight in a bf16 copy, the sampled tokens' log-probabilities
recorded), the same prompts, ``--tokens`` new tokens a row (``min_new_tokens`` = max, so
both sides decode as many), the two sides alternating in one process, best of ``--runs``.
Prints seconds per generated token for each side and the ratio bf16 / float32, and the
mismatch TRL's correction sees: the mean per-token KL(bf16 sampler || float32 trainer) over
the vocabulary at each sampled position, its max, and the sampled estimate (the mean of
log p_bf16 - log p_float32 at the drawn tokens, what ``sampling/kl`` logs).

    python bench/sampling_precision.py [--model smollm2-135m] [--rows 8 32] [--tokens 48] [--runs 3]
    python bench/sampling_precision.py --trainer [--steps 4]   # also inside the trainer (grpo train, alternating)
    python bench/sampling_precision.py --tiny                  # a tiny random model: a smoke test

The CPU's bfloat16 instructions decide it: with AVX-512 BF16 or AMX a bf16 product is 2-4x a
float32 one; without them torch emulates bf16 and it is slower (the line printed first says
which this CPU has).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from merged_sampling import build, prompts


def sampler(model, precision: str | None, tokens: int):
    from transformers import GenerationConfig

    from grpo_core.trainer.decoding import FastSampling, Sampling

    config = GenerationConfig(do_sample=True, max_new_tokens=tokens, min_new_tokens=tokens, temperature=1.0,
                              top_k=0, top_p=1.0)
    return FastSampling(Sampling(merged=True, precision=precision, logprobs=precision is not None), config,
                        tokens, model=model)


def sample(model, side, enc) -> tuple[float, list, list | None]:
    import torch

    def generate():
        out = model.generate(**enc, generation_config=side.config, pad_token_id=enc["input_ids"][0, 0])
        return [row.tolist() for row in out[:, enc["input_ids"].shape[1]:]], None

    torch.manual_seed(1)
    t0 = time.perf_counter()
    with torch.no_grad():
        tokens, logprobs = side.sample(generate, enc["input_ids"], "cpu")
    return time.perf_counter() - t0, tokens, logprobs


def mismatch(model, bf16, enc, tokens: list) -> tuple[float, float, float]:
    """(mean KL over the vocabulary, its max, the sampled estimate) of bf16 against float32
    at each sampled position of ``tokens`` (drawn by the bf16 sampler)."""
    import torch

    new = torch.tensor(tokens)
    ids = torch.cat([enc["input_ids"], new], dim=1)
    mask = torch.cat([enc["attention_mask"], torch.ones_like(new)], dim=1)
    start = enc["input_ids"].shape[1] - 1
    with torch.no_grad():
        f32 = model(input_ids=ids, attention_mask=mask).logits[:, start:-1].float().log_softmax(-1)
        with bf16.weights("cpu"):
            b16 = model(input_ids=ids, attention_mask=mask).logits[:, start:-1].float().log_softmax(-1)
    kl = (b16.exp() * (b16 - f32)).sum(-1)
    # (from the full forward, not the recorded ones: min_new_tokens masks the end token while
    # sampling here, which TRL's sampling does not)
    drawn = (b16 - f32).gather(-1, new.unsqueeze(-1)).squeeze(-1)
    return kl.mean().item(), kl.max().item(), drawn.mean().item()


def in_the_sampler(opts) -> None:
    import torch

    with tempfile.TemporaryDirectory() as tmp:
        if opts.tiny:
            from grpo_core.testing import make_tiny_model

            opts.model, opts.runs, opts.tokens = str(make_tiny_model(tmp + "/model")), 1, 8
        model, tok = build(opts.model, 16)
        sides = {"float32": sampler(model, None, opts.tokens), "bf16": sampler(model, "bfloat16", opts.tokens)}
        print(f"{opts.model}, LoRA r 16 all-linear merged, {torch.get_num_threads()} threads, "
              f"{opts.tokens} new tokens a row, best of {opts.runs}")
        for rows in opts.rows:
            enc = prompts(tok, rows)
            times: dict = {name: [] for name in sides}
            for run in range(opts.runs + 1):  # the first round warms both sides up and is left out
                for name, side in sides.items():
                    seconds, tokens, _ = sample(model, side, enc)
                    if run:
                        times[name].append(seconds / (rows * opts.tokens))
            f32, b16 = min(times["float32"]), min(times["bf16"])
            kl, kl_max, drawn = mismatch(model, sides["bf16"], enc, tokens)
            print(f"  {rows:3d} rows: float32 {f32 * 1e3:7.2f} ms/token  bf16 {b16 * 1e3:7.2f} ms/token  "
                  f"bf16 / float32 {b16 / f32:.3f}  |  KL(bf16 || float32) mean {kl:.5f} max {kl_max:.4f} nat, "
                  f"sampled estimate {drawn:.5f}")


def in_the_trainer(opts) -> None:
    """The quickstart's first ``--steps`` steps (dynamic sampling and held-out off, so each
    step samples once), float32 and bf16 runs alternating: the trainer's own
    ``sampling/seconds_per_token`` and ``sampling/kl``."""
    root = Path(__file__).resolve().parents[1]
    rows: dict = {"float32": [], "bf16": []}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(opts.runs):
            for name in rows:
                out = Path(tmp) / f"{name}-{run}"
                subprocess.run([sys.executable, "-m", "grpo_core", "train", str(root / "examples/quickstart.yaml"),
                                "--max_steps", str(opts.steps), "--sampling.dynamic", "false", "--heldout.enabled",
                                "false", "--sampling.precision", name, "--save_strategy", "no", "--log.rollouts",
                                "none", "--output_dir", str(out), "--no-check"], check=True,
                               stdout=subprocess.DEVNULL)
                lines = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
                per = [x["sampling/seconds_per_token"] for x in lines if "sampling/seconds_per_token" in x]
                kls = [x["sampling/kl"] for x in lines if "sampling/kl" in x]
                rows[name].append((sum(per) / len(per), sum(kls) / len(kls) if kls else None))
                print(f"  trainer {name} run {run}: {rows[name][-1][0] * 1e3:.2f} ms/token"
                      + (f", sampling/kl {rows[name][-1][1]:.5f}" if kls else ""), flush=True)
    f32 = min(r[0] for r in rows["float32"])
    b16 = min(r[0] for r in rows["bf16"])
    print(f"inside the trainer ({opts.steps} steps, best of {opts.runs}): float32 {f32 * 1e3:.2f} ms/token, "
          f"bf16 {b16 * 1e3:.2f} ms/token, bf16 / float32 {b16 / f32:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--rows", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--tokens", type=int, default=48, help="new tokens sampled per row")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--trainer", action="store_true", help="also time sampling inside grpo train")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--tiny", action="store_true", help="a tiny random model, 1 run: a smoke test")
    opts = parser.parse_args()
    from grpo_core.run.prepare import cpu_bf16

    print(f"CPU bfloat16 instructions (AVX-512 BF16 or AMX): {'yes' if cpu_bf16() else 'no'}")
    in_the_sampler(opts)
    if opts.trainer and not opts.tiny:
        in_the_trainer(opts)


if __name__ == "__main__":
    main()
