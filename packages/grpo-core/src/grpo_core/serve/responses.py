"""The response a trainer meant, from the text a peer sends.

OpenRLHF sends the prompt and the response decoded together with the special tokens
(``...</answer><|im_end|>``), and the prompt as it was before it cut the prompt's
start to fit ``max_len``. TRL, ``grpo score`` and verl's managers score the response
without its end-of-sequence text: a format reward anchored at the end pays nothing
for ``</answer><|im_end|>``. So, before scoring:

- the end markers at the end of a completion are removed (:class:`Ends`): the
  common chat templates' end-of-sequence and end-of-turn markers, the tokenizer's
  when the config names a model, and ``grpo serve --eos``;
- the response is the query past its prompt, found even when the query starts
  inside the prompt (:func:`response_of`); where the prompt cannot be found the whole
  query is scored, with a note saying so.
"""

from __future__ import annotations

from dataclasses import dataclass

# End-of-sequence and end-of-turn text of common chat templates: ChatML (Qwen, SmolLM),
# GPT-2/NeoX, Llama 2 / Mistral, Llama 3, Gemma, Phi-3, DeepSeek, gpt-oss.
DEFAULT_ENDS = ("<|im_end|>", "<|endoftext|>", "</s>", "<|eot_id|>", "<|end_of_text|>", "<|eom_id|>",
                "<end_of_turn>", "<eos>", "<|end|>", "<|return|>", "<｜end▁of▁sentence｜>")

ANCHOR = 32  # characters of the prompt's end looked for in a query that does not start with the prompt
SHORTEST = 8  # fewer characters of the prompt than this at the query's start could be chance
GARBLED = 4  # characters a cut prompt may start with that are not the prompt's (a split UTF-8 byte, a space)


@dataclass(frozen=True)
class Ends:
    """The markers removed from the end of a completion, longest first."""

    markers: tuple[str, ...] = DEFAULT_ENDS

    @classmethod
    def of(cls, extra=(), tokenizer=None) -> Ends:
        """The defaults, a tokenizer's end-of-sequence and padding text, and ``extra``. A
        tokenizer's token counts only when it reads as a special token (``</s>``, ``[SEP]``):
        one whose padding is ``!`` must not cut an answer's exclamation mark."""
        found = list(DEFAULT_ENDS)
        if tokenizer is not None:
            found += [t for t in (getattr(tokenizer, a, None) for a in ("eos_token", "pad_token"))
                      if isinstance(t, str) and len(t) >= 3 and t[0] in "<[" and t[-1] in ">]"]
        found += list(extra)
        markers = {m for m in found if isinstance(m, str) and m.strip()}
        return cls(tuple(sorted(markers, key=len, reverse=True)))

    def trim(self, text: str) -> str:
        """``text`` without the markers at its end (several, whitespace between them
        too); the response's own whitespace before the first one stays."""
        if not text.rstrip().endswith(self.markers):  # most completions: one call, in C
            return text
        while True:
            end = text.rstrip()
            for m in self.markers:
                if end.endswith(m):
                    text = end[: -len(m)]
                    break
            else:
                return text

    def trim_completion(self, completion):
        """A completion as the server reads it: text, or messages (the last one's content)."""
        if isinstance(completion, str):
            return self.trim(completion)
        last = completion[-1]
        return [*completion[:-1], {**last, "content": self.trim(last["content"])}]


def response_of(query: str, prompt: str | None) -> tuple[str, str | None]:
    """``(response, note)``: the query past its prompt. OpenRLHF keeps a long prompt's
    last tokens, so the query may start inside the prompt (after a few characters that
    are not the prompt's when the cut split a character); the prompt's last ``ANCHOR``
    characters mark where the response starts. A query that holds no part of its
    prompt is scored whole, with a note."""
    if not prompt or query.startswith(prompt):
        return query[len(prompt or ""):], None
    end = _prompt_end(query, prompt)
    if end is None:
        return query, "prompt not found in the query: the whole query was scored"
    return query[end:], "prompt cut at its start (the peer truncated it)"


def _prompt_end(query: str, prompt: str) -> int | None:
    """Where a query that starts with the prompt's end (after ``GARBLED`` characters at
    most) leaves the prompt; None when it does not."""
    anchor = prompt[-ANCHOR:]
    start = query.find(anchor, 0, len(prompt) + GARBLED)
    while start >= 0:
        end = start + len(anchor)
        if any(prompt.endswith(query[j:end]) for j in range(min(GARBLED, start) + 1)):
            return end
        start = query.find(anchor, start + 1, len(prompt) + GARBLED)
    # a prompt kept to fewer than ANCHOR characters: the longest end of it the query starts with
    for size in range(min(len(anchor), len(query)) - 1, SHORTEST - 1, -1):
        for j in range(GARBLED + 1):
            if j + size <= len(query) and prompt.endswith(query[j:j + size]):
                return j + size
    return None


__all__ = ["DEFAULT_ENDS", "Ends", "response_of"]
