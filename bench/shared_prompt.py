"""The training pass with each group's prompt computed once (``model.shared_prompt``)
against TRL's plain pass, on the quickstart's shape by default: SmolLM2-135M with its
fused LM head (as TRL's trainer patches it), LoRA r 16 all-linear, 2 groups of 4
completions, a 47-token prompt, completions of up to 48 tokens (right-padded, random
lengths). One pass is what a step with ``beta`` > 0 runs: the reference's forward
(adapters off, no gradient), then the policy's forward and backward. The two sides
alternate, best of ``--runs`` each; prints seconds per side, the ratio shared / plain
and the largest difference in a completion token's log-probability.

    python bench/shared_prompt.py [--model smollm2-135m] [--groups 2] [--k 4] [--prompt 47]
                                  [--completion 48] [--runs 5] [--bf16]
    python bench/shared_prompt.py --tiny     # a tiny random model, 1 run: a smoke test
    python bench/shared_prompt.py --shape 0.5b --k 8 --prompt 150 --completion 256   # GPU: a random
        # Qwen2.5-0.5B shape (bench/gpu_step.py's), base in bf16, adapters float32, bf16 autocast
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
from pathlib import Path

from merged_sampling import build as lora_model


def build(model_id: str, device: str):
    from trl.trainer.utils import add_fused_lm_head

    model, _ = lora_model(model_id, 16, device)
    add_fused_lm_head(model.get_base_model(), outputs=("log_probs", "entropy"))  # as GRPOTrainer patches it
    return model.train()


def batch(vocab: int, groups: int, k: int, prompt: int, completion: int):
    import torch

    g = torch.Generator().manual_seed(0)
    prompts = torch.randint(10, vocab, (groups, prompt), generator=g)
    pmask = torch.ones(groups, prompt, dtype=torch.long)
    pmask[1:, : prompt // 10] = 0  # prompts of different lengths, left-padded
    lengths = torch.randint(completion // 4, completion + 1, (groups * k,), generator=g)
    lengths[0] = completion  # the batch is as wide as its longest completion
    cmask = (torch.arange(completion)[None] < lengths[:, None]).long()
    ids = torch.cat([prompts.repeat_interleave(k, 0), torch.randint(10, vocab, (groups * k, completion), generator=g)], 1)
    return ids, torch.cat([pmask.repeat_interleave(k, 0), cmask], 1)


def now(device: str) -> float:
    import torch

    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def one_pass(model, ids, mask, prompt: int, shared: bool, bf16: bool):
    import torch

    from grpo_core.trainer.shared_prompt import shared_prompt

    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :prompt] = -100
    device = ids.device.type
    cast = torch.autocast(device, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    t0 = now(device)
    with shared_prompt(model, prompt, shared), cast:
        with torch.no_grad(), model.disable_adapter():  # the reference
            model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
        out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
        logps = out.log_probs[:, -(ids.size(1) - prompt):]  # (TRL: [:, -logits_to_keep:])
    (logps * (labels[:, prompt:] != -100)).sum().backward()
    model.zero_grad(set_to_none=True)
    return now(device) - t0, logps.detach()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--k", type=int, default=4, help="completions per prompt (num_generations)")
    parser.add_argument("--prompt", type=int, default=47, help="prompt tokens (the widest)")
    parser.add_argument("--completion", type=int, default=48, help="completion tokens (the longest)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bf16", action="store_true", help="under bf16 autocast (bf16: true; always on CUDA)")
    parser.add_argument("--shape", choices=["0.5b", "1.5b"], help="a random model of this shape (bench/gpu_step.py's)")
    parser.add_argument("--tiny", action="store_true", help="a tiny random model, 1 run: a smoke test")
    opts = parser.parse_args()

    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    opts.bf16 = opts.bf16 or device == "cuda"
    with tempfile.TemporaryDirectory() as tmp:
        if opts.tiny:
            from grpo_core.testing import make_tiny_model

            opts.model, opts.runs, opts.prompt, opts.completion = str(make_tiny_model(tmp + "/model")), 1, 8, 6
        if opts.shape:
            from gpu_step import make_model

            opts.model = str(make_model(Path(tmp) / opts.shape, opts.shape))
        model = build(opts.model, device)
        ids, mask = (t.to(device) for t in batch(model.config.vocab_size, opts.groups, opts.k, opts.prompt,
                                                 opts.completion))
        times = {False: [], True: []}
        logps = {}
        one_pass(model, ids, mask, opts.prompt, True, opts.bf16)  # warm-up
        for _ in range(opts.runs):
            for shared in (False, True):
                took, logps[shared] = one_pass(model, ids, mask, opts.prompt, shared, opts.bf16)
                times[shared].append(took)
    scored = mask[:, opts.prompt:].bool()
    diff = (logps[True] - logps[False])[scored].abs().max().item()
    plain, shared = min(times[False]), min(times[True])
    print(f"{opts.shape or opts.model} on {device}, {opts.groups} groups x {opts.k}, prompt {opts.prompt}, "
          f"completion {opts.completion}{', bf16 autocast' if opts.bf16 else ''}: reference forward + forward + backward")
    print(f"plain   {plain:.3f} s  (runs: {' '.join(f'{t:.2f}' for t in times[False])})")
    print(f"shared  {shared:.3f} s  (runs: {' '.join(f'{t:.2f}' for t in times[True])})")
    print(f"shared / plain {shared / plain:.3f}; largest log-probability difference {diff:.2e}")


if __name__ == "__main__":
    main()
