"""``rg.score``: reasoning-gym's own ``score_answer`` on the completion's final answer.

The scorer is the task's, built with the settings the row was made with (the
``rg_entry`` column), so a row scores exactly as reasoning-gym scores it: 1.0 for the
gold, and for many tasks partial credit below that (the gold inside a longer answer
earns ``len(gold) / len(answer)``: ``Answer: 24 or 25`` earns 0.25 against 24).
``partial=False`` pays full marks only.

Bounded for untrusted text: the answer reader reads the completion's last 100,000
characters and no answer over 2,000 (:mod:`.answer`); tasks whose scorer evaluates
the answer as code are refused when loaded and here; a scorer that raises on an
answer scores it 0.0.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from typing import Any

from grpo_core.errors import DatasetError
from grpo_core.text import completion_text

from .answer import Extraction, final_answer

NAME = "rg.score"


def score(completions: Sequence, rg_entry: Sequence, partial: bool = True, fallback_last_number: bool = False,
          **kwargs: Any) -> list[float | None]:
    """reasoning-gym's own score_answer of the final answer ('Answer: x' line, <answer> tag, box, else the last line), 0..1.

    Reads the dataset column ``rg_entry`` (the ``rg.<task>`` datasets make it). The
    answer: after the last ``</think>``, the last ``<answer>`` block, else the last line
    with "Answer:" / "The answer is", else the boxes, else ``####``, else the last
    non-blank line (``fallback_last_number=True``: the last number, unless its line hedges).
    A full stop ending the answer is tried without it too ("Friday."). ``partial=False``:
    1.0 for reasoning-gym's full marks, else 0.0. None ("no opinion") for a row whose
    ``rg_entry`` is not one these datasets made.
    """
    if isinstance(rg_entry, (str, bytes)) or not isinstance(rg_entry, Sequence):
        raise TypeError(f"'rg_entry' must be a list with one entry per completion (a dataset column), "
                        f"got {type(rg_entry).__name__} {rg_entry!r:.80}.")
    if len(rg_entry) != len(completions):
        raise ValueError(f"'rg_entry' has {len(rg_entry)} entries for {len(completions)} completions; "
                         f"they must align.")
    extractions = [final_answer(completion_text(c), fallback_last_number) for c in completions]
    out: list[float | None] = []
    errors = 0
    for found, raw in zip(extractions, rg_entry):
        carried = _read(raw)
        if carried is None:
            out.append(None)
            continue
        value, failed = _score_one(carried, found)
        errors += failed
        out.append(value if partial or value >= 1.0 else 0.0)
    _log(kwargs, extractions, errors)
    return out


def _read(raw: Any) -> tuple[str, str, dict] | None:
    """(task, its settings as JSON, reasoning-gym's item) of an ``rg_entry`` value; None when
    it is not one (a task this package refuses is an error: its rows must not be scored)."""
    try:
        carried = json.loads(raw) if isinstance(raw, (str, bytes)) else raw
    except (ValueError, RecursionError):
        return None
    if not isinstance(carried, dict):
        return None
    task, config, entry = carried.get("task"), carried.get("config") or {}, carried.get("entry")
    if not isinstance(task, str) or not isinstance(config, dict) or not isinstance(entry, dict):
        return None
    return task, json.dumps(config, sort_keys=True), entry


def _score_one(carried: tuple[str, str, dict], found: Extraction) -> tuple[float, int]:
    """(score in [0, 1], 1 when the scorer raised)."""
    if found.answer is None:
        return 0.0, 0
    task, config, entry = carried
    scorer = _scorer(task, config)
    candidates = [found.answer]
    if found.answer.endswith(".") and len(found.answer) > 1:
        candidates.append(found.answer[:-1].rstrip())
    best, failed = 0.0, 0
    for answer in candidates:
        try:
            value = float(scorer(answer, entry))
        except Exception:  # reasoning-gym's scorers parse the answer and may raise on garbage
            failed = 1
            continue
        if math.isfinite(value):
            best = max(best, min(1.0, value))
    return best, failed


@functools.lru_cache(maxsize=64)
def _scorer(task: str, config: str):
    """The task's ``score_answer``, on a dataset built with the row's settings."""
    from .tasks import task_classes

    dataset_cls, config_cls = task_classes(task, f"{NAME} (a row of task {task!r})")
    try:
        return dataset_cls(config=config_cls(**json.loads(config))).score_answer
    except (AssertionError, TypeError, ValueError) as exc:
        raise DatasetError(f"{NAME}: reasoning-gym's {task} refused the row's settings {config}: "
                           f"{exc or type(exc).__name__}.") from None


def _log(kwargs: dict, extractions: list[Extraction], errors: int) -> None:
    """Answers not found and scorer errors as TRL metrics, the answers read as a column."""
    try:
        log_metric = kwargs.get("log_metric")
        if callable(log_metric) and extractions:
            log_metric(f"{NAME}/no_answer", sum(e.answer is None for e in extractions) / len(extractions))
            log_metric(f"{NAME}/scorer_errors", float(errors))
        log_extra = kwargs.get("log_extra")
        if callable(log_extra):
            log_extra(f"{NAME}/answer", [(e.answer or "")[:200] for e in extractions])
    except Exception:
        pass


__all__ = ["score", "NAME"]
