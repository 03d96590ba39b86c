"""Row-level steps of the answer adapters: gold answers as text, filters, dropped answers.

Column checks, shuffle and limit are grpo-core's (:mod:`grpo_core.datafiles`), shared
with the code adapters; they are re-exported here."""

from __future__ import annotations

import math
import warnings
from types import FrameType
from typing import TYPE_CHECKING, Any

from grpo_core.datafiles import check_not_empty, require_columns, shuffle_limit, values

from .errors import AnswerError, DatasetError, EmptyDatasetError, SkippedRowsWarning

if TYPE_CHECKING:
    import datasets

BAD_ANSWERS = ("skip", "error")


def as_text(value: Any) -> str | None:
    """A gold answer as text; ``None`` for missing ones (never an empty string)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    text = str(value).strip()
    return text or None


def _matches(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, (list, tuple, set)):
        return any(_matches(value, w) for w in wanted)
    if value == wanted:
        return True
    return value is not None and str(value).strip().lower() == str(wanted).strip().lower()


def apply_filters(ds: datasets.Dataset, filters: dict | None, what: str) -> datasets.Dataset:
    """Keep rows whose column equals the value (or one of a list), case-insensitively for text."""
    if not filters:
        return ds
    if not isinstance(filters, dict):
        raise DatasetError(f"{what}: filters must be a mapping column -> value(s), got {filters!r}.")
    require_columns(ds, list(filters), f"{what} filters", "Filter on one of the existing columns.")
    before = len(ds)

    def keep(batch):
        flags = [True] * len(next(iter(batch.values())))
        for column, wanted in filters.items():
            flags = [f and _matches(v, wanted) for f, v in zip(flags, batch[column], strict=True)]
        return flags

    ds = ds.filter(keep, batched=True, desc="Filtering")
    check_not_empty(ds, what, f"filters {filters!r} kept none of {before} rows", "Loosen the filters.")
    return ds


def warn_skipped(message: str) -> None:
    """Warn, attributed to the first caller outside grpo (the line that asked for the data)."""
    import sys

    level = 2  # stacklevel 2 is the frame that called warn_skipped
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(("grpo_datasets", "grpo_core")):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, SkippedRowsWarning, stacklevel=level)


def _shown(value) -> str:
    text = str(value)
    return repr(text if len(text) <= 160 else text[:157] + "...")


def drop_bad_rows(
    ds: datasets.Dataset, bad_answers: str, what: str, source_column: str, fix: str,
    source_label: str | None = None,
) -> datasets.Dataset:
    """Rows with an empty question or a ``None`` answer: an error or a counted, reported skip.

    ``source_column`` holds the text the answer was extracted from, shown in the message
    under the name the user knows, ``source_label``.
    """
    if bad_answers not in BAD_ANSWERS:
        raise DatasetError(f"{what}: bad_answers must be 'skip' or 'error', got {bad_answers!r}.")
    no_question = [i for i, q in enumerate(values(ds, "question")) if q is None or not str(q).strip()]
    no_answer = []
    if "answer" in ds.column_names:
        no_answer = [i for i, a in enumerate(values(ds, "answer")) if a is None or not str(a).strip()]
    if not no_question and not no_answer:
        return ds
    problems = []
    if no_answer:
        i = no_answer[0]
        problems.append(
            f"{len(no_answer)} of {len(ds)} rows have no usable gold answer in {source_label or source_column!r} "
            f"(first: row {i}, {_shown(ds[i][source_column]) if source_column in ds.column_names else ''}). {fix}"
        )
    if no_question:
        problems.append(f"{len(no_question)} of {len(ds)} rows have an empty question (first: row {no_question[0]}).")
    detail = " ".join(problems)
    if bad_answers == "error":
        raise AnswerError(f"{what}: {detail} Or pass bad_answers='skip' to drop these rows.")
    bad = set(no_question) | set(no_answer)
    if len(bad) == len(ds):
        raise EmptyDatasetError(f"{what}: every row would be dropped: {detail}")
    warn_skipped(f"{what}: skipped {len(bad)} of {len(ds)} rows: {detail}")
    return ds.select([i for i in range(len(ds)) if i not in bad])


__all__ = [
    "BAD_ANSWERS", "values", "require_columns", "as_text", "apply_filters", "check_not_empty",
    "drop_bad_rows", "shuffle_limit", "warn_skipped",
]
