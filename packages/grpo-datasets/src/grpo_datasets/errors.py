"""Errors and warnings of the dataset adapters; every message names the value and the fix."""

from __future__ import annotations

from grpo_core.errors import GrpoError, MissingColumnError


class DatasetError(GrpoError, ValueError):
    """A dataset that cannot be loaded or used as asked."""


class DatasetFileError(DatasetError, FileNotFoundError):
    """A local path that does not exist, matches nothing, or cannot be read."""


class DatasetLoadError(DatasetError):
    """The Hugging Face Hub (or its cache) could not provide the dataset."""


class SplitError(DatasetError):
    """A split string such as ``train[:90%]`` that does not parse or names no split."""


class ColumnError(DatasetError, MissingColumnError):
    """A mapped or expected source column is missing."""


class EmptyDatasetError(DatasetError):
    """No rows are left (after slicing, filters or dropped answers)."""


class AnswerError(DatasetError):
    """A gold answer that cannot be extracted, with ``bad_answers="error"``."""


class SkippedRowsWarning(UserWarning):
    """Rows were dropped (no extractable gold answer); the count is in the message."""


__all__ = [
    "DatasetError", "DatasetFileError", "DatasetLoadError", "SplitError", "ColumnError",
    "EmptyDatasetError", "AnswerError", "SkippedRowsWarning",
]
