"""A dataset adapter's difficulty knob: the part of the dataset contract a curriculum reads.

An adapter whose rows carry a difficulty says so with an attribute on its loader::

    def load_puzzles(split="train", *, grade=1, ...): ...
    load_puzzles.difficulty = "grade"              # the column: a number per row, higher is harder

or, to name the loader parameter that chooses which difficulties are loaded (messages then
say how to give a curriculum room), a mapping (no import of grpo's needed) or a
:class:`Difficulty`::

    load_puzzles.difficulty = {"column": "grade", "param": "grade", "example": "grade: [1, 2, 3]"}

``arithmetic`` declares its ``level`` column (1-5, ``level: [1, 2, 3]`` loads three). An
adapter that declares nothing works as before: a curriculum (``sampling.prompts:
frontier``) then goes by the pass rates it observes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grpo_core.base.errors import GrpoError
from grpo_core.plugin import registry


@dataclass(frozen=True)
class Difficulty:
    """``column``: each row's difficulty, a number (higher is harder); ``param``: the loader
    parameter that chooses the difficulties loaded; ``example``: how a config widens it."""

    column: str
    param: str | None = None
    example: str | None = None

    def widen(self, dataset: str) -> str:
        """How to load rows of several difficulties, for messages."""
        if self.param is None:
            return f"load rows of several difficulties (dataset '{dataset}', column '{self.column}')"
        example = f" ({self.example})" if self.example else ""
        return f"load several with dataset.params.{self.param}{example}"


def declared(loader: Any, name: str = "the dataset") -> Difficulty | None:
    """The difficulty an adapter's loader declares (its ``difficulty`` attribute), or None."""
    value = getattr(loader, "difficulty", None)
    if value is None or isinstance(value, Difficulty):
        return value
    if isinstance(value, str) and value.strip():
        return Difficulty(value.strip())
    if isinstance(value, dict) and set(value) <= {"column", "param", "example"} and all(
            isinstance(value.get(k), str) and value[k].strip() for k in value) and "column" in value:
        return Difficulty(**{k: v.strip() for k, v in value.items()})
    raise GrpoError(f"dataset '{name}' declares difficulty = {value!r:.80}: give the name of its difficulty column "
                    f"(a string), or a mapping with 'column' and optionally 'param' (the loader parameter choosing "
                    f"the difficulties loaded) and 'example', each a string.")


def of_dataset(name: str) -> Difficulty | None:
    """The difficulty the adapter registered as ``name`` declares."""
    return declared(registry.datasets().get(name).obj, name)


__all__ = ["Difficulty", "declared", "of_dataset"]
