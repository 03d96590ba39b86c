"""A rollout's batch as verl lays it out, for the tests that score through verl's own code
(in this process or in a fresh one, which imports this file by path)."""

from __future__ import annotations


def verl_batch(tok, data):
    """``data`` (rows with prompt, completion, answer) as verl's DataProto: prompts
    left-padded, responses right-padded and ending with the end-of-sequence token, one
    attention mask, the answer as the reward model's ground truth."""
    import numpy as np
    import torch
    from verl import DataProto

    prompts = [tok(r["prompt"])["input_ids"] for r in data]
    responses = [tok(r["completion"])["input_ids"] + [tok.eos_token_id] for r in data]
    P, R, pad = max(map(len, prompts)), max(map(len, responses)), tok.pad_token_id
    p = torch.tensor([[pad] * (P - len(x)) + x for x in prompts])
    r = torch.tensor([x + [pad] * (R - len(x)) for x in responses])
    mask = torch.tensor([[0] * (P - len(a)) + [1] * (len(a) + len(b)) + [0] * (R - len(b))
                         for a, b in zip(prompts, responses)])
    return DataProto.from_dict(
        tensors={"prompts": p, "responses": r, "input_ids": torch.cat([p, r], 1), "attention_mask": mask},
        non_tensors={"data_source": np.array(["arithmetic"] * len(data), dtype=object),
                     "reward_model": [{"ground_truth": x["answer"], "style": "rule"} for x in data],
                     "extra_info": [{"index": i, "question": x["prompt"]} for i, x in enumerate(data)]})
