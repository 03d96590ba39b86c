"""Tiny random models for tests, benchmarks and plugin authors: no downloads.

``make_tiny_model(path)`` writes a randomly initialised Qwen2 or Llama model and a
byte-level BPE tokenizer trained on the fly (with a chat template) to ``path``.
A GRPO step on it takes well under a second on a CPU.

For tools and environments: ``make_tiny_model(path, tools=True)`` gives it TRL's
Qwen2.5 chat template, which renders tools and whose ``<tool_call>`` JSON TRL
parses, and :func:`scripted_policy` makes it write chosen text (a well-formed tool
call, an answer that reads the tool's result) where a random model never would.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
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


# tool-call text, so a tool-capable tokenizer writes a call in a few dozen tokens
_TOOL_CORPUS = [
    '<tool_call>\n{"name": "python", "arguments": {"code": "print(6 * 7)"}}\n</tool_call>',
    '<tool_response>\nhigher lower correct\n</tool_response> {"name": "guess", "arguments": {"number": 50}}',
    "# Tools You may call one or more functions to assist with the user query. function signatures",
]


def tool_chat_template() -> str:
    """TRL's Qwen2.5 chat template: it renders tools and tool results, and TRL knows
    how to parse its ``<tool_call>`` JSON (``trl.chat_template_utils.add_response_schema``)."""
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


def make_tokenizer(vocab_size: int = 512, tools: bool = False):
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
    tok.train_from_iterator((_CORPUS + (_TOOL_CORPUS if tools else [])) * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<pad>",
        unk_token=None,
    )
    fast.chat_template = tool_chat_template() if tools else CHAT_TEMPLATE
    return fast


def make_tiny_model(path: str | Path, arch: str = "qwen2", seed: int = 0, hidden_size: int = 32,
                    tools: bool = False) -> Path:
    """Write a tiny random causal LM + tokenizer to ``path`` and return it; ``tools``: a
    chat template that renders tools (see the module docstring)."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    path = Path(path)
    tokenizer = make_tokenizer(tools=tools)
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


@contextlib.contextmanager
def scripted_policy(tokenizer, reply: Callable[[str], str | None]):
    """In this block, every ``generate`` of a transformers model writes, for each
    sequence, the text ``reply(context)`` returns, then end-of-sequence, instead of
    sampling. ``context`` is the decoded text the sequence started from (special
    tokens kept: the system prompt with its tools, earlier turns, tool results);
    ``None`` leaves that sequence to the model. Everything else (TRL's rollouts, tool
    execution, rewards, the update) runs as it would."""
    from transformers import LogitsProcessorList
    from transformers.generation.utils import GenerationMixin

    original = GenerationMixin.generate

    def generate(self, *args, **kwargs):
        processors = LogitsProcessorList(kwargs.pop("logits_processor", None) or [])
        processors.append(_Scripted(tokenizer, reply))
        return original(self, *args, logits_processor=processors, **kwargs)

    GenerationMixin.generate = generate
    try:
        yield
    finally:
        GenerationMixin.generate = original


class _Scripted:
    """A logits processor forcing each row's scripted tokens (one generate call)."""

    def __init__(self, tokenizer, reply: Callable[[str], str | None]):
        self.tokenizer, self.reply = tokenizer, reply
        self.start: int | None = None
        self.targets: list[list[int] | None] = []

    def __call__(self, input_ids, scores):
        tok = self.tokenizer
        if self.start is None:
            self.start = input_ids.shape[1]
            for row in input_ids.tolist():
                text = self.reply(tok.decode([t for t in row if t != tok.pad_token_id]))
                ids = None if text is None else tok(text, add_special_tokens=False)["input_ids"]
                self.targets.append(None if ids is None else [*ids, tok.eos_token_id])
        step = input_ids.shape[1] - self.start
        for i, target in enumerate(self.targets):
            if target is not None:
                scores[i] = float("-inf")
                scores[i, target[step] if step < len(target) else tok.eos_token_id] = 0.0
        return scores
