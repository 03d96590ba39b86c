from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def lora_adapter(tiny_model, tmp_path_factory):
    """A LoRA adapter on the tiny model whose weights are far from zero, so the
    adapted model really differs from its base."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    base = AutoModelForCausalLM.from_pretrained(tiny_model)
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "o_proj"]))
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 2.0)
    out = tmp_path_factory.mktemp("adapter") / "adapter"
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_model).save_pretrained(out)
    return out
