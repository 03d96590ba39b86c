"""Prompt length checks with the real tokenizer and chat template.

TRL 1.16 no longer truncates prompts, so one over-long prompt (a long patient note,
many few-shot turns) costs memory or crashes generation mid-run. This measures
every prompt exactly as ``GRPOTrainer`` tokenizes it, before any model loads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .errors import (
    ColumnError,
    DatasetError,
    EmptyDatasetError,
    PromptTooLongError,
)
from .rows import warn_skipped

if TYPE_CHECKING:
    import datasets

ACTIONS = ("report", "drop", "error")


@dataclass
class PromptLengths:
    """Token counts of the ``prompt`` column; ``dataset`` is the input, less dropped rows."""

    count: int
    min: int
    median: float
    max: int
    max_length: int | None
    too_long: int
    dropped: int
    lengths: list[int] = field(repr=False)
    dataset: Any = field(repr=False)

    def __str__(self) -> str:
        text = (
            f"prompt tokens over {self.count} prompts: min {self.min}, "
            f"median {self.median:g}, max {self.max}"
        )
        if self.max_length is not None:
            text += f"; {self.too_long} over max_length={self.max_length}"
            if self.dropped:
                text += f" (dropped, {len(self.dataset)} rows left)"
        return text

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("count", "min", "median", "max", "max_length", "too_long", "dropped")}


def _token_counts(prompts: list, tokenizer, chat_template_kwargs: dict) -> list[int]:
    if isinstance(prompts[0], str):
        return [len(ids) for ids in tokenizer(text=prompts)["input_ids"]]
    if not getattr(tokenizer, "chat_template", None):
        raise DatasetError(
            "the prompts are conversations but the tokenizer has no chat template, so TRL could "
            "not tokenize them either. Use an instruct model's tokenizer or set tokenizer.chat_template."
        )
    # exactly GRPOTrainer's call, so the counts are the trainer's
    encoded = tokenizer.apply_chat_template(
        prompts, add_generation_prompt=True, tokenize=True, return_dict=True, **chat_template_kwargs
    )
    return [len(ids) for ids in encoded["input_ids"]]


def prompt_lengths(
    dataset: datasets.Dataset,
    tokenizer,
    max_length: int | None = None,
    action: Literal["report", "drop", "error"] = "report",
    *,
    chat_template_kwargs: dict | None = None,
    batch_size: int = 1000,
) -> PromptLengths:
    """Token lengths of ``dataset["prompt"]`` after the chat template (system prompt and few-shot included).

    ``action``: ``"report"`` only counts prompts over ``max_length``; ``"drop"`` removes
    them (with a warning giving the count); ``"error"`` raises if there is any.
    Build the ``prompt`` column first with ``grpo_core.build_prompts``.
    """
    if action not in ACTIONS:
        raise DatasetError(f"action must be one of {', '.join(ACTIONS)}, got {action!r}.")
    if action != "report" and max_length is None:
        raise DatasetError(f"action={action!r} needs max_length= (the most prompt tokens allowed).")
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1):
        raise DatasetError(f"max_length must be a positive number of tokens, got {max_length!r}.")
    columns = getattr(dataset, "column_names", None) or []
    if "prompt" not in columns:
        raise ColumnError(
            f"prompt_lengths needs a 'prompt' column; the dataset has: {', '.join(columns) or 'none'}. "
            f"Build it first with grpo_core.build_prompts(ds, system_prompt=..., few_shot=...) so the "
            f"counts include the system prompt and few-shot examples."
        )
    if len(dataset) == 0:
        raise EmptyDatasetError("prompt_lengths: the dataset has no rows.")
    kwargs = dict(chat_template_kwargs or {})
    lengths: list[int] = []
    for start in range(0, len(dataset), batch_size):
        prompts = dataset[start : start + batch_size]["prompt"]
        lengths.extend(_token_counts(prompts, tokenizer, kwargs))
    over = [i for i, n in enumerate(lengths) if max_length is not None and n > max_length]
    dropped = 0
    if over and action == "error":
        worst = max(over, key=lengths.__getitem__)
        raise PromptTooLongError(
            f"{len(over)} of {len(lengths)} prompts are longer than max_length={max_length} tokens "
            f"(longest: row {worst}, {lengths[worst]} tokens). TRL does not truncate prompts: raise "
            f"max_length, shorten the system prompt or few-shot examples, or pass action='drop'."
        )
    if over and action == "drop":
        if len(over) == len(lengths):
            raise EmptyDatasetError(
                f"every one of the {len(lengths)} prompts is longer than max_length={max_length} "
                f"tokens (shortest: {min(lengths)}). Raise max_length or shorten the prompts."
            )
        bad = set(over)
        dataset = dataset.select([i for i in range(len(lengths)) if i not in bad])
        dropped = len(over)
        warn_skipped(
            f"dropped {dropped} of {len(lengths)} prompts longer than max_length={max_length} tokens "
            f"(longest {max(lengths)})."
        )
    import statistics

    return PromptLengths(
        count=len(lengths),
        min=min(lengths),
        median=statistics.median(lengths),
        max=max(lengths),
        max_length=max_length,
        too_long=len(over),
        dropped=dropped,
        lengths=lengths,
        dataset=dataset,
    )


__all__ = ["PromptLengths", "prompt_lengths"]
