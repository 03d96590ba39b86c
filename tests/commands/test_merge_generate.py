"""`grpo merge` and `grpo generate` on a tiny model and a LoRA adapter."""

from __future__ import annotations

import json
import types

import pytest

import grpo_core
from grpo_core.cli import main


def test_merge_saves_a_model_equal_to_base_plus_adapter(lora_adapter, tiny_model, tmp_path):
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    out = tmp_path / "merged"
    assert main(["merge", str(lora_adapter), "--output", str(out)]) == 0
    assert (out / "config.json").is_file() and (out / "tokenizer.json").is_file()
    assert not (out / "adapter_config.json").exists()

    ids = torch.tensor([[5, 6, 7, 8, 9]])
    merged = AutoModelForCausalLM.from_pretrained(out).eval()
    base = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    adapted = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model), lora_adapter).eval()
    with torch.no_grad():
        m, b, a = (x(ids).logits for x in (merged, base, adapted))
    assert torch.allclose(m, a, atol=1e-4)       # merged == base + adapter
    assert not torch.allclose(m, b, atol=1e-2)   # and really differs from the base


def test_merge_rejects_a_directory_without_an_adapter(tiny_model, tmp_path, capsys):
    assert main(["merge", str(tiny_model), "--output", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "has no adapter_config.json, so it is not a LoRA adapter" in err
    assert "It holds a full model: nothing to merge." in err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["merge", str(empty), "--output", str(tmp_path / "m")]) == 2


def test_merge_refuses_to_overwrite(lora_adapter, tmp_path, capsys):
    out = tmp_path / "busy"
    out.mkdir()
    (out / "x").write_text("keep me")
    assert main(["merge", str(lora_adapter), "--output", str(out)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert (out / "x").read_text() == "keep me"


def digits(completions, **kwargs):
    return [float(sum(ch.isdigit() for ch in grpo_core.completion_text(c))) for c in completions]


def test_generate_greedy_with_scores(tiny_model, register_plugin, capsys):
    mod = types.ModuleType("gen_toy")

    @grpo_core.hookimpl
    def register_rewards(register):
        register("toy.digits", digits)

    mod.register_rewards = register_rewards
    register_plugin(mod, name="toy")
    argv = ["generate", str(tiny_model), "--prompt", "What is 2 + 2?", "--prompt", "Say 7",
            "--greedy", "--max-new-tokens", "6", "--rewards", "toy.digits:2", "--json",
            "--system-prompt", "plain"]
    assert main(argv) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 2
    first = lines[0]
    assert first["prompt"][0]["role"] == "system" and first["prompt"][-1]["content"] == "What is 2 + 2?"
    assert first["num_tokens"] <= 6
    expected = 2.0 * sum(ch.isdigit() for ch in first["completion"])
    assert first["scores"]["total"] == pytest.approx(expected)
    # greedy decoding is deterministic
    assert main(argv) == 0
    again = capsys.readouterr().out
    assert json.dumps(first["completion"]) in again


def test_generate_with_adapter_differs_from_base(tiny_model, lora_adapter, capsys):
    argv = ["--prompt", "What is 2 + 2?", "--greedy", "--max-new-tokens", "8", "--json"]
    assert main(["generate", str(tiny_model), *argv]) == 0
    base = capsys.readouterr().out
    assert main(["generate", str(lora_adapter), *argv]) == 0
    adapted = capsys.readouterr().out
    assert json.loads(base)["completion"] != json.loads(adapted)["completion"]
