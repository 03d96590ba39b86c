"""How each sampled token is drawn on a CPU: torch's ``multinomial`` (an exponential race,
one random number per vocabulary entry) against ``grpo_core.trainer.draws`` (one uniform
number per row in the row's running sum), both in the same process, alternating, best of
``--runs``:

- the draw alone: ``softmax`` probabilities of ``rows`` x the model's vocabulary;
- whole sampling as the trainer does it on a CPU: the quickstart's LoRA model (SmolLM2-135M,
  r 16, all-linear) from its merged copy, ``rows`` completions of ``--tokens`` new tokens
  (``min_new_tokens`` = ``max_new_tokens``: both sides decode as many), at temperature 1.

Prints milliseconds or seconds per call and the ratio draws / multinomial.

    python bench/draws.py [--rows 8 32] [--tokens 48] [--runs 3]
    python bench/draws.py --tiny        # a tiny random model: a smoke test
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time

from merged_sampling import build, prompts


def timed(fn, ours: bool) -> float:
    """Seconds for ``fn()``, drawing with ``draws`` (``ours``) or torch's multinomial."""
    from grpo_core.trainer.draws import cumulative_draws

    with cumulative_draws() if ours else contextlib.nullcontext():
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0


def compare(fn, runs: int) -> tuple[float, float]:
    """Best seconds of ``fn()`` with torch's multinomial and with draws, alternating."""
    sides: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(runs):
        for ours in sides:
            sides[ours].append(timed(fn, ours))
    return min(sides[False]), min(sides[True])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--rows", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tiny", action="store_true", help="a tiny random model, 1 run: a smoke test")
    opts = parser.parse_args()

    import torch

    from grpo_core.trainer.merged_lora import MergedLora

    with tempfile.TemporaryDirectory() as tmp:
        if opts.tiny:
            from grpo_core.testing import make_tiny_model

            opts.model, opts.runs, opts.tokens = str(make_tiny_model(tmp + "/model")), 1, 8
        model, tok = build(opts.model, 16)
        merge = MergedLora.of(model, True)
        vocab = model.get_output_embeddings().weight.shape[0]
        print(f"{opts.model} (vocabulary {vocab}), {torch.get_num_threads()} threads, best of {opts.runs}")
        for rows in opts.rows:
            probs = torch.softmax(torch.randn(rows, vocab, generator=torch.Generator().manual_seed(0)) * 3, -1)
            old, new = compare(lambda probs=probs: [torch.multinomial(probs, num_samples=1) for _ in range(20)],
                               opts.runs)
            print(f"  draw, {rows} rows:      multinomial {old / 20 * 1e3:7.2f} ms   draws {new / 20 * 1e3:7.2f} ms   "
                  f"draws / multinomial {new / old:.3f}")
            enc = prompts(tok, rows)
            kw = dict(max_new_tokens=opts.tokens, min_new_tokens=opts.tokens, do_sample=True, temperature=1.0,
                      top_k=0, pad_token_id=enc["input_ids"][0, 0])

            def sample(enc=enc, kw=kw):
                with torch.no_grad(), merge.merged():
                    model.generate(**enc, **kw)

            sample()  # warm-up
            old, new = compare(sample, opts.runs)
            print(f"  sampling, {rows} x {opts.tokens}: multinomial {old:7.3f} s    draws {new:7.3f} s    "
                  f"draws / multinomial {new / old:.3f}")

if __name__ == "__main__":
    main()
