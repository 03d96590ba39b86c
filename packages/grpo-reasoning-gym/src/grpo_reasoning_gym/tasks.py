"""reasoning-gym's procedural tasks as grpo datasets: seeded, offline, a train and a
test split that share no question.

Each row is ``question``, ``answer`` (the gold, as text) and ``rg_entry``: JSON of
what reasoning-gym's scorer reads (``{"task", "config", "entry"}``: the task, the
knobs the rows were made with, reasoning-gym's own item with its metadata), so
``rg.score`` scores a row exactly as reasoning-gym would.

Splits: ``train`` is reasoning-gym's items ``0..size-1`` under ``seed``; ``test`` the
first ``size`` distinct questions under ``seed + TEST_SEED_OFFSET`` that the train split
of the same parameters does not have (within ``TEST_DRAWS * size`` draws: a task with
few distinct problems has a shorter test split, with a warning, or none: an error).

reasoning-gym takes 1-2 s to import (a hundred generators, sympy, numpy, matplotlib):
nothing here imports it before a task's rows or parameters are asked for, so listing
plugins and datasets stays fast. A task loader's signature (its knobs, read from the
task's config dataclass) is built on first use too (:class:`TaskSignature`).
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import inspect
import json
import sys
import typing
import warnings
from collections.abc import Callable
from types import FrameType
from typing import Any

from grpo_core.datafiles import load_split
from grpo_core.errors import DatasetError, EmptyDatasetError, SplitError

DEFAULT_SIZE = 1000
MAX_SIZE = 1_000_000
TEST_SEED_OFFSET = 1_000_000_007  # test items' seeds: past any train split's (reasoning-gym seeds item i with seed + i)
TEST_DRAWS = 10  # the test split draws up to this many items per row it is to have
SPLITS = ("train", "test")
OWN = ("seed", "size")  # config fields grpo sets itself: they are the loaders' own parameters
LEVEL = "level"  # reasoning-gym's curriculum level: a loader parameter and, when given, a column
# the difficulty a curriculum steers by (sampling.prompts: frontier; grpo_core.data.difficulty)
DIFFICULTY = {"column": LEVEL, "param": LEVEL, "example": "level: [0, 1, 2]"}

# Tasks whose scorer runs the model's answer as code (eval) or through sympy's parse_expr
# (itself eval): rg.score would execute untrusted text, so they are refused (reasoning-gym
# 0.1.25, read from each score_answer; tests/rg re-reads the installed version's).
EVALUATING = {
    "binary_matrix": "eval()",
    "n_queens": "eval()",
    "spiral_matrix": "eval()",
    "string_insertion": "eval()",
    "countdown": "sympy's parse_expr",
    "puzzle24": "sympy's parse_expr",
    "simple_integration": "sympy's parse_expr",
    "intermediate_integration": "sympy's parse_expr",
    "polynomial_multiplication": "sympy's parse_expr",
}
REFUSED = {
    **{task: f"its scorer runs the model's answer through {how}" for task, how in EVALUATING.items()},
    "composite": "it mixes other tasks: load each one by name",
}


def registry() -> dict[str, tuple[type, type]]:
    """reasoning-gym's registry: task name -> (dataset class, config dataclass)."""
    import reasoning_gym  # noqa: F401 - importing it registers every task
    from reasoning_gym.factory import DATASETS

    return DATASETS


def task_classes(task: Any, what: str) -> tuple[type, type]:
    """(dataset class, config class) of a task grpo can load and score; a clear error otherwise."""
    reg = registry()
    if not isinstance(task, str) or task not in reg:
        close = difflib.get_close_matches(str(task), list(reg), n=3)
        hint = f" Closest: {', '.join(close)}." if close else ""
        raise DatasetError(
            f"{what}: reasoning-gym has no task {task!r}.{hint} Its tasks: "
            f"python -c \"import reasoning_gym.factory as f, reasoning_gym; print(sorted(f.DATASETS))\"."
        )
    if task in REFUSED:
        raise DatasetError(f"{what}: reasoning-gym's task {task!r} is not offered: {REFUSED[task]}.")
    return reg[task]


@functools.cache
def knobs(task: str) -> dict[str, inspect.Parameter]:
    """A task's difficulty knobs: its config fields but seed and size, with their types and
    defaults, as keyword parameters."""
    _, config_cls = task_classes(task, f"dataset 'rg.{task}'")
    try:
        hints = typing.get_type_hints(config_cls)
    except Exception:  # an annotation that does not resolve: that knob is not type-checked
        hints = {}
    out = {}
    for field in dataclasses.fields(config_cls):
        if field.name in OWN or not field.init:
            continue
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            default = None
        out[field.name] = inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=hints.get(field.name, inspect.Parameter.empty))
    return out


def _knob_list(task: str) -> str:
    return ", ".join(f"{p.name}={p.default!r}" for p in knobs(task).values()) or "none"


def check_knobs(task: str, given: dict, what: str) -> None:
    """Every knob in ``given`` is one of the task's config fields; else an error naming it,
    the closest one, and every one there is."""
    valid = knobs(task)
    for name in given:
        if name in valid:
            continue
        close = difflib.get_close_matches(name, list(valid), n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        own = " (seed and size are the dataset's own parameters)" if name in OWN else ""
        raise DatasetError(
            f"{what}: reasoning-gym's {task} has no setting '{name}'{hint}{own}; its settings are: "
            f"{_knob_list(task)}."
        )


@functools.cache
def task_signature(task: str) -> inspect.Signature:
    """The loader of ``rg.<task>``: split, seed, size, then the task's knobs."""
    kw = inspect.Parameter.KEYWORD_ONLY
    return inspect.Signature([
        inspect.Parameter("split", inspect.Parameter.POSITIONAL_OR_KEYWORD, default="train", annotation=str),
        inspect.Parameter("seed", kw, default=0, annotation=int),
        inspect.Parameter("size", kw, default=DEFAULT_SIZE, annotation=int),
        *knobs(task).values(),
        *([inspect.Parameter(LEVEL, kw, default=None, annotation=int | list[int] | None)] if curriculum(task) else []),
    ])


class TaskSignature(inspect.Signature):
    """A task loader's ``__signature__``, read from reasoning-gym on first use: grpo binds
    and type-checks a dataset's parameters against its loader's signature (so an unknown
    knob is refused by name), and building it imports reasoning-gym, which listing must not."""

    __slots__ = ("_task",)

    def __init__(self, task: str):
        super().__init__()
        self._task = task

    @property
    def parameters(self):
        return task_signature(self._task).parameters


def task_loader(task: str, description: str) -> Callable:
    """The loader registered as ``rg.<task>``: ``load(split="train", *, seed=0, size=1000, **knobs)``."""

    def load(split: str = "train", **params: Any):
        return load_task(task, split, **params)

    load.__name__ = load.__qualname__ = f"load_{task}"
    load.__doc__ = (
        f"{description}.\n\nreasoning-gym's `{task}` task, seeded and offline. Parameters: `seed`, "
        f"`size` (rows per split), and the task's own settings (its config's fields, listed in the "
        f"error for an unknown one). Splits `train` and `test` (disjoint seeds; no test question "
        f"is a train question). Columns: question, answer, rg_entry (what rg.score reads); with `level` "
        f"(reasoning-gym's curriculum level, a number or a list: `level: [0, 1, 2]`) also level, each row's "
        f"difficulty (what sampling.prompts: frontier steers by)."
    )
    load.__signature__ = TaskSignature(task)  # type: ignore[attr-defined]  # what inspect.signature reads
    load.difficulty = DIFFICULTY  # type: ignore[attr-defined]  # every named task has a curriculum
    return load


def load_any(split: str = "train", *, task: str = "", seed: int = 0, size: int = DEFAULT_SIZE,
             config: dict | None = None, level: int | list[int] | None = None):
    """Any reasoning-gym task by name: rg.task(task=..., config={...}), its settings in config.

    ``task``: a task of reasoning-gym's registry (those whose scorer evaluates the answer as
    code are refused); ``config``: the task's settings (its config dataclass's fields);
    ``level``: reasoning-gym's curriculum level(s), as for the named datasets. Splits,
    seeding and columns as for the named ``rg.<task>`` datasets. (``name`` is the dataset's
    own name in grpo: the task is ``task``.)
    """
    if not task:
        raise DatasetError("dataset 'rg.task' needs task=<reasoning-gym task>, e.g. params: {task: chain_sum}; "
                           "or use the task's own dataset, rg.chain_sum.")
    what = "dataset 'rg.task'"
    if config is not None and not isinstance(config, dict):
        raise DatasetError(f"{what}: config must be a mapping of the task's settings, "
                           f"got {type(config).__name__} {config!r:.80}.")
    task_classes(task, what)
    check_knobs(task, config or {}, what)
    return load_task(task, split, seed=seed, size=size, what=what, level=level, **(config or {}))


def load_task(task: str, split: str = "train", *, seed: int = 0, size: int = DEFAULT_SIZE,
              what: str | None = None, level: Any = None, **settings: Any):
    """The rows of ``split`` of reasoning-gym's ``task`` (see the module docstring); with
    ``level``, rows of each curriculum level given (:func:`level_settings`), ``size`` split
    evenly among them, each row's level in a ``level`` column."""
    import datasets

    what = what or f"dataset 'rg.{task}'"
    task_classes(task, what)
    check_knobs(task, settings, what)
    for key, value, low, high in (("seed", seed, 0, 2**62), ("size", size, 1, MAX_SIZE)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise DatasetError(f"{what}: {key} must be a whole number from {low} to {high}, got {value!r}.")
    parts = [(None, settings, size)] if level is None else level_settings(task, level, settings, size, what)

    def base(name: str):
        if name not in SPLITS:
            raise SplitError(f"{what} has splits {', '.join(SPLITS)} (no test question is a train "
                             f"question), not {name!r}; slice one instead, e.g. split='train[:90%]'.")
        out = []
        for lvl, knobs_of_level, n in parts:
            train = items(task, knobs_of_level, seed, n, what)
            made = train if name == "train" else test_items(task, knobs_of_level, seed, n, train, what)
            out += [row(task, knobs_of_level, e, what, lvl) for e in made]
        return datasets.Dataset.from_list(out)

    return load_split(split, base, what)


def curriculum(task: str):
    """reasoning-gym's curriculum of ``task`` (a fresh one), or None where it has none."""
    from reasoning_gym.factory import CURRICULA

    made = CURRICULA.get(task)
    return made() if made is not None else None


def level_settings(task: str, level: Any, settings: dict, size: int, what: str) -> list[tuple[int, dict, int]]:
    """(level, the task's settings at that level, rows) for each curriculum level asked for.

    A level sets the knobs reasoning-gym's curriculum for the task moves (each knob its
    level's own segment of values: reasoning-gym's ``upper_bound`` mode, so a higher level is
    harder and two levels share no range); the other settings pass through."""
    from reasoning_gym.coaching.base_curriculum import DefaultCurriculumContext, RangeAttributeMode

    made = curriculum(task)
    if made is None:
        raise DatasetError(f"{what}: reasoning-gym has no curriculum for {task}, so it has no level; leave level out "
                           f"and set its settings ({_knob_list(task)}).")
    top = max((len(a.levels) - 1 for a in made.attributes.values()), default=0)
    levels = level if isinstance(level, list) else [level]
    if not levels or any(isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= top for v in levels) \
            or len(set(levels)) < len(levels):
        raise DatasetError(f"{what}: level must be a curriculum level from 0 to {top} or a list of different ones "
                           f"(level: [0, 1, 2]), got {level!r}.")
    moved = sorted({name for a in made.attributes.values()
                    for name in (getattr(a, "lower_field_name", None), getattr(a, "upper_field_name", None),
                                 getattr(a, "field_name", None)) if name})
    clash = sorted(set(settings) & set(moved))
    if clash:
        raise DatasetError(f"{what}: level sets {', '.join(moved)}; give level or {', '.join(clash)}, not both.")
    if size < len(levels):
        raise DatasetError(f"{what}: size {size} is fewer rows than the {len(levels)} levels asked for; raise size.")
    out = []
    for i, lvl in enumerate(sorted(levels)):
        made.set_global_level(lvl)
        config = made.generate_configuration(dict(settings), DefaultCurriculumContext(RangeAttributeMode.UPPER_BOUND))
        chosen = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.name not in OWN and f.init}
        chosen = {k: list(v) if isinstance(v, tuple) else v for k, v in chosen.items()}  # as JSON keeps them
        out.append((lvl, chosen, size // len(levels) + (1 if i < size % len(levels) else 0)))
    return out


def test_items(task: str, settings: dict, seed: int, size: int, train: list[dict], what: str) -> list[dict]:
    """``size`` questions drawn under the test seed, each once and none that ``train`` has;
    fewer (with a warning) when ``TEST_DRAWS * size`` draws do not find that many."""
    seen = {_key(e["question"]) for e in train}
    rows, count = [], 0
    for e in items(task, settings, seed + TEST_SEED_OFFSET, TEST_DRAWS * size, what, lazy=True):
        count += 1
        key = _key(e["question"])
        if key not in seen:
            seen.add(key)
            rows.append(e)
            if len(rows) == size:
                break
    if not rows:
        raise EmptyDatasetError(
            f"{what}: none of {count} test questions drawn is new: the train split ({size} rows) has every "
            f"one. These settings make too few distinct problems: make the task harder or lower size.")
    if len(rows) < size:
        _warn(f"{what}: the test split has {len(rows)} questions, not {size}: the other {count - len(rows)} "
              f"drawn were train questions or repeats (these settings make few distinct problems).")
    return rows


def items(task: str, settings: dict, seed: int, size: int, what: str, lazy: bool = False):
    """reasoning-gym's items ``0..size-1`` of ``task`` under ``seed`` (a generator when ``lazy``)."""
    dataset_cls, config_cls = task_classes(task, what)
    try:
        dataset = dataset_cls(config=config_cls(**settings, seed=seed, size=size))
    except (AssertionError, TypeError, ValueError) as exc:  # reasoning-gym checks its config with assert
        detail = str(exc) or type(exc).__name__
        raise DatasetError(f"{what}: reasoning-gym refused the settings {settings}: {detail}. "
                           f"Its settings and defaults: {_knob_list(task)}.") from None
    made = (dataset[i] for i in range(size))
    return made if lazy else list(made)


class OverlapWarning(UserWarning):
    """The test split is short: too few of the questions drawn were new."""


def _warn(message: str) -> None:
    """Warn, attributed to the first caller outside grpo (the line that asked for the data)."""
    level = 2
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(("grpo_reasoning_gym", "grpo_core")):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, OverlapWarning, stacklevel=level)


def _key(question: str) -> str:
    return " ".join(str(question).split())


def row(task: str, settings: dict, entry: dict, what: str, level: int | None = None) -> dict:
    """One dataset row: question, the gold as text, what rg.score needs as JSON (and the
    row's curriculum level, where one was asked for)."""
    try:
        carried = json.dumps({"task": task, "config": settings, "entry": entry}, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"{what}: reasoning-gym's item cannot be kept as JSON for rg.score ({exc}); "
                           f"this task cannot be scored by grpo.") from None
    answer = entry.get("answer")
    out = {"question": str(entry["question"]), "answer": None if answer is None else str(answer), "rg_entry": carried}
    return out if level is None else {**out, LEVEL: level}


load_any.difficulty = DIFFICULTY  # type: ignore[attr-defined]

__all__ = ["load_task", "load_any", "level_settings", "curriculum", "DIFFICULTY", "task_loader", "knobs", "check_knobs", "task_classes",
           "registry", "REFUSED", "EVALUATING", "TEST_SEED_OFFSET", "DEFAULT_SIZE", "OverlapWarning"]
