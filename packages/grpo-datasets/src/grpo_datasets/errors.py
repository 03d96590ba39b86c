"""Errors and warnings of the dataset adapters; every message names the value and the fix.

The errors of reading data (files, the hub, splits, columns) are grpo-core's
(:mod:`grpo_core.datafiles` raises them for every adapter); the ones about gold
answers are this package's.
"""

from __future__ import annotations

from grpo_core.errors import (
    ColumnError,
    DatasetError,
    DatasetFileError,
    DatasetLoadError,
    EmptyDatasetError,
    SplitError,
)


class AnswerError(DatasetError):
    """A gold answer that cannot be extracted, with ``bad_answers="error"``."""


class SkippedRowsWarning(UserWarning):
    """Rows were dropped (no extractable gold answer); the count is in the message."""


__all__ = [
    "DatasetError", "DatasetFileError", "DatasetLoadError", "SplitError", "ColumnError",
    "EmptyDatasetError", "AnswerError", "SkippedRowsWarning",
]
