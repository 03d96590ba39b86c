"""grpo-datasets: dataset adapters for grpo.

``gsm8k``, ``math``, ``medcalc`` (Hub datasets, each also readable from a local copy
with ``path=``), ``files`` (local jsonl/json/csv/parquet), ``hub`` (any dataset id)
and ``arithmetic`` (synthetic, offline: the demo default).

This is the plugin's entry-point module, imported whenever grpo lists plugins:
nothing here imports ``datasets``, which loads with the first dataset.
"""

from __future__ import annotations

from grpo_core import hookimpl
from grpo_core.datafiles import parse_split

from .errors import (
    AnswerError,
    ColumnError,
    DatasetError,
    DatasetFileError,
    DatasetLoadError,
    EmptyDatasetError,
    SkippedRowsWarning,
    SplitError,
)
from .extract import gsm8k_answer, last_boxed
from .loaders import load_arithmetic, load_files, load_gsm8k, load_hub, load_math, load_medcalc

GRPO_PLUGIN_API = "1.0"  # the grpo plugin API this plugin is written for (docs/plugin-api.md)

__version__ = "0.1.0"

ADAPTERS = {
    "arithmetic": load_arithmetic,
    "gsm8k": load_gsm8k,
    "math": load_math,
    "medcalc": load_medcalc,
    "files": load_files,
    "hub": load_hub,
}


@hookimpl
def register_datasets(register):
    for name, loader in ADAPTERS.items():
        register(name, loader)  # description: the docstring's first line


__all__ = [
    "register_datasets", "ADAPTERS",
    "load_arithmetic", "load_gsm8k", "load_math", "load_medcalc", "load_files", "load_hub",
    "gsm8k_answer", "last_boxed", "parse_split",
    "DatasetError", "DatasetFileError", "DatasetLoadError", "SplitError", "ColumnError",
    "EmptyDatasetError", "AnswerError", "SkippedRowsWarning",
]
