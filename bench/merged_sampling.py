"""Sampling from merged LoRA weights (``model.merged_sampling``) against peft's unmerged
layers: the same LoRA model (the quickstart's shape by default: SmolLM2-135M, r 16,
all-linear), the same prompts, sampling the same number of new tokens (``min_new_tokens``
= ``max_new_tokens``, so both sides decode exactly as many), alternating the two sides,
best of ``--runs`` each. The merged side's time includes building the merged copy (the
trainer rebuilds it before every generation). Prints seconds per generation and the ratio
merged / unmerged, and checks that greedy decoding gives the same tokens both ways.

    python bench/merged_sampling.py [--model smollm2-135m] [--batch 8] [--tokens 48] [--runs 5]
    python bench/merged_sampling.py --tiny        # a tiny random model: a smoke test

CPU only (``auto`` merges only there).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time


def build(model_id: str, rank: int, device: str = "cpu"):
    """The LoRA model as the trainer loads it (float32 on a CPU; on CUDA a bf16 base), with a
    trained-looking adapter (B drawn, not zero)."""
    import torch
    from peft import LoraConfig, get_peft_model

    from grpo_core.config.models import load

    model, tok = load(model_id, dtype="bfloat16" if device == "cuda" else "float32", device=device,
                      log=lambda *a: None)
    model.to(device)
    model = get_peft_model(model, LoraConfig(r=rank, lora_alpha=2 * rank, target_modules="all-linear",
                                             lora_dropout=0.0, task_type="CAUSAL_LM"))
    torch.manual_seed(0)
    with torch.no_grad():  # a trained adapter (B is zero at initialisation)
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.01)
    return model.eval(), tok


def prompts(tok, batch: int):
    texts = [tok.apply_chat_template([{"role": "user", "content": f"What is {7 + k} + {5 + 2 * k}?"}],
                                     tokenize=False, add_generation_prompt=True) for k in range(batch)]
    tok.padding_side = "left"
    return tok(texts, return_tensors="pt", padding=True)


def timed(model, enc, tokens: int, merge, *, sample: bool) -> tuple[float, object]:
    import contextlib

    import torch

    kw = dict(max_new_tokens=tokens, min_new_tokens=tokens, do_sample=sample, pad_token_id=enc["input_ids"][0, 0])
    torch.manual_seed(1)
    t0 = time.perf_counter()
    with torch.no_grad(), (merge.merged() if merge is not None else contextlib.nullcontext()):
        out = model.generate(**enc, **kw)
    return time.perf_counter() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tiny", action="store_true", help="a tiny random model, 2 runs: a smoke test")
    opts = parser.parse_args()

    from grpo_core.trainer.merged_lora import MergedLora

    with tempfile.TemporaryDirectory() as tmp:
        if opts.tiny:
            from grpo_core.testing import make_tiny_model

            opts.model, opts.runs, opts.tokens = str(make_tiny_model(tmp + "/model")), 2, 8
        model, tok = build(opts.model, opts.rank)
        merge = MergedLora.of(model, True)
        enc = prompts(tok, opts.batch)
        same = all(bool((timed(model, enc, opts.tokens, None, sample=False)[1]
                         == timed(model, enc, opts.tokens, merge, sample=False)[1]).all()) for _ in range(1))
        timed(model, enc, opts.tokens, None, sample=True)  # warm-up
        times: dict[str, list[float]] = {"unmerged": [], "merged": []}
        for _ in range(opts.runs):
            times["unmerged"].append(timed(model, enc, opts.tokens, None, sample=True)[0])
            times["merged"].append(timed(model, enc, opts.tokens, merge, sample=True)[0])
    print(f"{opts.model}, LoRA r {opts.rank} all-linear ({len(merge.layers)} adapted layers), "
          f"{opts.batch} x {opts.tokens} new tokens, {opts.runs} runs each")
    for side, ts in times.items():
        print(f"  {side:9} best {min(ts):.3f} s  median {statistics.median(ts):.3f} s")
    print(f"merged / unmerged: {min(times['merged']) / min(times['unmerged']):.3f} (best), "
          f"{statistics.median(times['merged']) / statistics.median(times['unmerged']):.3f} (median)")
    print(f"greedy tokens equal: {same}")


if __name__ == "__main__":
    main()
