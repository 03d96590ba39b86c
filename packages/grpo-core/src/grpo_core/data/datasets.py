"""Datasets by name, system prompts, and the conversational prompt builder.

Adapters return a ``datasets.Dataset`` with ``question`` (and, for verifiable
tasks, ``answer``); the core, not the adapter, builds TRL's ``prompt`` column.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from grpo_core.base.errors import GrpoError, MissingColumnError, RegistryError, UnknownNameError
from grpo_core.base.params import bind_params
from grpo_core.plugin import registry

if TYPE_CHECKING:  # datasets is heavy; imported only where a dataset is really built
    import datasets


def list_datasets() -> list[registry.Entry]:
    """Every registered dataset adapter, sorted by name."""
    reg = registry.datasets()
    return [reg.entries[n] for n in reg.names()]


def load_dataset(name: str, split: str = "train", **params: Any) -> datasets.Dataset:
    """Load the dataset adapter registered as ``name``.

    Parameters are checked against the loader's signature before it runs.
    """
    entry = registry.datasets().get(name)
    bind_params(f"dataset '{name}'", entry.obj, params)
    ds = entry.obj(split=split, **params)
    columns = getattr(ds, "column_names", None)
    if columns is None:
        raise GrpoError(
            f"dataset '{name}' ({entry.source}) returned {type(ds).__name__}, not a "
            f"datasets.Dataset; the adapter must return one (did it return a DatasetDict? "
            f"select a split)."
        )
    if "question" not in columns and "prompt" not in columns:
        raise GrpoError(
            f"dataset '{name}' ({entry.source}) has no 'question' column; it has: "
            f"{', '.join(columns)}. The adapter must provide the question text as 'question'."
        )
    return ds


def list_system_prompts() -> list[registry.Entry]:
    """Every registered system prompt, sorted by name."""
    reg = registry.system_prompts()
    return [reg.entries[n] for n in reg.names()]


def system_prompt_entry(name: str) -> registry.Entry:
    """The system prompt registered as ``name``; an unknown name is an error that lists
    the closest names and the command that lists them all."""
    try:
        return registry.system_prompts().get(name)
    except UnknownNameError as exc:
        message = re.sub(r" List them with `grpo [^`]*`\.$", "", str(exc))
        raise UnknownNameError(f"{message} List them with `grpo prompts list`.") from None


def resolve_system_prompt(value: str | None) -> tuple[str | None, str | None]:
    """``(text, answer_template)`` for a registered name or literal prompt text.

    A single lower-case word (``xml``, ``format.xml``) is looked up by name and an
    unknown one is an error with suggestions; anything else is the prompt itself.
    """
    if value is None or value == "":
        return None, None
    if not isinstance(value, str):
        raise GrpoError(f"system_prompt must be text or a registered name, got {value!r}.")
    if registry.NAME_RE.match(value.strip()):
        entry = system_prompt_entry(value.strip())
        return entry.obj, entry.extra.get("answer_template")
    return value, None


class _Row(dict):
    def __missing__(self, key):  # few-shot templates may name a column an example lacks
        return ""


def _example_answer(example: dict, template: str | Sequence[str] | None) -> str:
    """The assistant turn of a few-shot example. ``template`` may be a list: the first
    whose fields the example has (non-empty) is used, so ``xml`` can fall back to a
    template without ``{rationale}`` for datasets that have none."""
    if example.get("completion"):
        return str(example["completion"])
    row = _Row({k: ("" if v is None else v) for k, v in example.items()})
    candidates = [template] if isinstance(template, str) or template is None else list(template)
    for candidate in candidates:
        fields = [f for _, f, _, _ in string.Formatter().parse(candidate or "{answer}") if f]
        if all(str(row[f]).strip() for f in fields):
            return (candidate or "{answer}").format_map(row)
    return (candidates[-1] or "{answer}").format_map(row)


def build_prompt(
    question: str,
    system_prompt: str | None = None,
    examples: Sequence[dict] = (),
    answer_template: str | None = None,
) -> list[dict]:
    """The conversational prompt for one question: system, few-shot turns, user."""
    messages: list[dict] = []
    if system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    for ex in examples:
        messages.append({"role": "user", "content": str(ex["question"])})
        messages.append({"role": "assistant", "content": _example_answer(ex, answer_template)})
    messages.append({"role": "user", "content": str(question)})
    return messages


def build_prompts(
    dataset: datasets.Dataset,
    system_prompt: str | None = None,
    few_shot: int | Sequence[dict] = 0,
    answer_template: str | None = None,
) -> datasets.Dataset:
    """Add TRL's conversational ``prompt`` column built from ``question``.

    ``system_prompt`` is a registered name or the text. ``few_shot`` is a number
    of examples taken from the start of ``dataset`` (and then removed from it, so
    no question is trained on its own answer) or a list of ``{"question",
    "answer"}`` / ``{"question", "completion"}`` dicts.
    """
    text, registered_template = resolve_system_prompt(system_prompt)
    template = answer_template or registered_template
    columns = dataset.column_names
    if "question" not in columns and "prompt" in columns:
        return _keep_prompts(dataset, text, few_shot)
    if "question" not in columns:
        raise MissingColumnError(
            f"cannot build prompts: the dataset has no 'question' column; it has {', '.join(columns)}."
        )
    examples, dataset = take_few_shot(dataset, few_shot)
    prefix = build_prompt("", text, examples, template)[:-1]

    def add(batch):
        return {"prompt": [prefix + [{"role": "user", "content": str(q)}] for q in batch["question"]]}

    if "prompt" in columns:
        dataset = dataset.remove_columns("prompt")
    return dataset.map(add, batched=True, batch_size=10_000, desc="Building prompts")


def take_few_shot(dataset: datasets.Dataset, few_shot: int | Sequence[dict]) -> tuple[list[dict], datasets.Dataset]:
    """``(examples, the rest)``: a count takes that many rows from the start of the
    dataset (and removes them, so no question is trained on its own answer); a list
    is the examples themselves (``{"question", "answer"}`` or ``{"question", "completion"}``)."""
    if isinstance(few_shot, bool) or not isinstance(few_shot, (int, list, tuple)):
        raise GrpoError(f"few_shot must be a count or a list of examples, got {few_shot!r}.")
    if isinstance(few_shot, int):
        if few_shot < 0 or few_shot >= len(dataset):
            raise GrpoError(
                f"few_shot={few_shot} must be between 0 and {len(dataset) - 1} "
                f"(the dataset has {len(dataset)} rows)."
            )
        examples = [dict(dataset[i]) for i in range(few_shot)]
        return examples, dataset.select(range(few_shot, len(dataset))) if few_shot else dataset
    examples = list(few_shot)
    for ex in examples:
        if not isinstance(ex, dict) or "question" not in ex or not ({"answer", "completion"} & set(ex)):
            raise GrpoError(f"few-shot example {ex!r} needs 'question' and 'answer' (or 'completion').")
    return examples, dataset


def _keep_prompts(dataset: datasets.Dataset, system_text: str | None, few_shot) -> datasets.Dataset:
    """A dataset in TRL's own format (a ``prompt`` column, text or messages) keeps its
    prompts; a configured system prompt is put first in conversational ones."""
    if few_shot:
        raise GrpoError("few_shot needs a 'question' column; this dataset has TRL's 'prompt' column only. "
                        "Put the examples in the prompts, or set few_shot: 0.")
    if not system_text:
        return dataset

    def add(batch):
        out = []
        for p in batch["prompt"]:
            if isinstance(p, list) and not (p and p[0].get("role") == "system"):
                p = [{"role": "system", "content": system_text}, *p]
            out.append(p)
        return {"prompt": out}

    return dataset.map(add, batched=True, batch_size=10_000, desc="Adding the system prompt")


def check_columns(columns: Iterable[str], rewards: Iterable[Any], dataset_name: str = "the dataset") -> None:
    """Fail before any model loads when a reward needs a column the dataset lacks."""
    present = list(columns)
    for reward in rewards:
        required = getattr(reward, "required_columns", ())
        missing = [c for c in required if c not in present]
        if missing:
            name = getattr(reward, "__name__", repr(reward))
            raise MissingColumnError(
                f"reward '{name}' needs dataset column(s) {', '.join(repr(c) for c in missing)}, "
                f"but {dataset_name} has: {', '.join(present)}. Use a dataset that provides "
                f"{'it' if len(missing) == 1 else 'them'} (e.g. map your gold column with "
                f"answer_field=...) or drop the reward."
            )


__all__ = [
    "list_datasets", "load_dataset", "list_system_prompts", "system_prompt_entry", "resolve_system_prompt",
    "build_prompt", "build_prompts", "check_columns", "RegistryError",
]
