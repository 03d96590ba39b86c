"""Tiny random models for tests, benchmarks and plugin authors: no downloads.

``make_tiny_model(path)`` writes a randomly initialised Qwen2 or Llama model and a
byte-level BPE tokenizer trained on the fly (with a chat template) to ``path``.
A GRPO step on it takes well under a second on a CPU.
"""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_CORPUS = [
    "What is 7 + 5? <think>7 plus 5 is 12</think><answer>12</answer>",
    "The answer is 42. Let me think step by step about the problem.",
    "Solve the problem and give the final answer. 0 1 2 3 4 5 6 7 8 9 + - * / = ( )",
    "<think> reasoning </think> <answer> result </answer> #### \\boxed{}",
    "system user assistant question answer Answer: final",
]


def make_tokenizer(vocab_size: int = 512):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<pad>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<pad>",
        unk_token=None,
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def make_tiny_model(path: str | Path, arch: str = "qwen2", seed: int = 0, hidden_size: int = 32) -> Path:
    """Write a tiny random causal LM + tokenizer to ``path`` and return it."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    path = Path(path)
    tokenizer = make_tokenizer()
    common = dict(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    config = Qwen2Config(**common) if arch == "qwen2" else LlamaConfig(**common)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
