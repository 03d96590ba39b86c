"""Reading one split of a dataset, from the Hugging Face Hub or a local copy, and the
row checks every adapter makes: the toolkit that grpo-datasets and grpo-rewards-code
share.

A local copy keeps the hub's own column layout, so one adapter serves both: this is
how adapters run offline and how the tests run without the network. ``path=`` is a
file (jsonl, json, ndjson, csv, tsv, parquet, arrow), a glob, a folder laid out like
a hub snapshot (files named after their split, config folders), or a folder saved
with ``save_to_disk``.

Split strings: ``train``, ``train[:90%]``, ``train[90%:]``, ``test[10:20]``,
``train+test``, parsed here rather than by ``datasets`` so that every source (hub,
local files, saved datasets, a generator) slices the same way. Percent bounds round
to the nearest row, so ``train[:90%]`` and ``train[90%:]`` are complementary.

``datasets`` is imported only when data is read.
"""

from __future__ import annotations

import difflib
import glob
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grpo_core.base.errors import (
    ColumnError,
    DatasetError,
    DatasetFileError,
    DatasetLoadError,
    EmptyDatasetError,
    SplitError,
)

if TYPE_CHECKING:
    import datasets

# ------------------------------------------------------------------ splits

_PART = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9_.-]+)\s*"
    r"(?:\[\s*(?P<start>-?\d+(?:\.\d+)?%?)?\s*:\s*(?P<stop>-?\d+(?:\.\d+)?%?)?\s*\])?\s*$"
)


@dataclass(frozen=True)
class SplitPart:
    name: str
    start: str | None = None
    stop: str | None = None

    def bounds(self, n: int) -> tuple[int, int]:
        return _bound(self.start, n, 0), _bound(self.stop, n, n)

    def __str__(self) -> str:
        if self.start is None and self.stop is None:
            return self.name
        return f"{self.name}[{self.start or ''}:{self.stop or ''}]"


def _bound(text: str | None, n: int, default: int) -> int:
    if text is None:
        return default
    if text.endswith("%"):
        pct = float(text[:-1])
        value = int(abs(pct) * n / 100 + 0.5)
        value = n - value if pct < 0 else value
    else:
        value = int(float(text))
        value = n + value if value < 0 else value
    return max(0, min(n, value))


def parse_split(split: str) -> list[SplitPart]:
    """``"train[:90%]+test"`` -> ``[SplitPart("train", None, "90%"), SplitPart("test")]``."""
    if not isinstance(split, str) or not split.strip():
        raise SplitError(f"split must be a name such as 'train' or 'train[:90%]', got {split!r}.")
    parts = []
    for piece in split.split("+"):
        m = _PART.match(piece)
        if m is None:
            raise SplitError(
                f"cannot parse split {split!r} (at {piece.strip()!r}). Use a split name with an "
                f"optional slice: 'train', 'train[:90%]', 'train[90%:]', 'test[:100]', 'train+test'."
            )
        for bound in (m["start"], m["stop"]):
            if bound and bound.endswith("%") and abs(float(bound[:-1])) > 100:
                raise SplitError(f"split {split!r}: percent bound {bound} is outside -100%..100%.")
        parts.append(SplitPart(m["name"], m["start"], m["stop"]))
    return parts


def slice_dataset(ds: datasets.Dataset, part: SplitPart) -> datasets.Dataset:
    if part.start is None and part.stop is None:
        return ds
    start, stop = part.bounds(len(ds))
    return ds.select(range(start, max(start, stop)))


def load_split(split: str, load_base: Callable[[str], datasets.Dataset], what: str) -> datasets.Dataset:
    """Load each named split with ``load_base(name)``, slice it, concatenate the parts."""
    pieces = []
    for part in parse_split(split):
        pieces.append(slice_dataset(load_base(part.name), part))
    if len(pieces) == 1:
        ds = pieces[0]
    else:
        import datasets

        ds = datasets.concatenate_datasets(pieces)
    if len(ds) == 0:
        raise EmptyDatasetError(
            f"{what}: split {split!r} selects no rows. Widen the slice (e.g. 'train[:90%]' "
            f"rather than 'train[:0%]') or check that the source split is not empty."
        )
    return ds



# ------------------------------------------------------------------ files and the hub

# extension -> (datasets builder, extra builder kwargs)
FORMATS = {
    ".jsonl": ("json", {}),
    ".json": ("json", {}),
    ".ndjson": ("json", {}),
    ".csv": ("csv", {}),
    ".tsv": ("csv", {"sep": "\t"}),
    ".parquet": ("parquet", {}),
    ".pq": ("parquet", {}),
    ".arrow": ("arrow", {}),
}
_SAVED_MARKERS = ("dataset_dict.json", "state.json")
_METADATA = {"dataset_infos.json", "dataset_info.json", "dataset_dict.json", "state.json"}
# a Hub snapshot may hold the same split twice (data/train-*.parquet and train_data.csv)
_PREFERENCE = ("parquet", "arrow", "json", "csv")


def _ext(path: str) -> str:
    return Path(path).suffix.lower()


def _expand(path: str) -> list[str]:
    """The data files ``path`` names: one file, a glob, or every data file under a folder."""
    path = os.path.expanduser(str(path))
    if glob.has_magic(path):
        files = sorted(f for f in glob.glob(path, recursive=True) if os.path.isfile(f))
        if not files:
            raise DatasetFileError(f"no file matches {path!r}. Check the pattern and the working directory ({os.getcwd()}).")
        return files
    if os.path.isdir(path):
        files = sorted(
            str(f) for f in Path(path).rglob("*")
            if f.is_file() and f.suffix.lower() in FORMATS and f.name not in _METADATA
            and not any(p.startswith(".") for p in f.relative_to(path).parts)
        )
        if not files:
            raise DatasetFileError(
                f"folder {path!r} holds no data files ({', '.join(sorted(FORMATS))}) and is not a "
                f"dataset saved with save_to_disk. Point path= at the data file itself."
            )
        return files
    if not os.path.exists(path):
        raise DatasetFileError(
            f"data file {path!r} does not exist (working directory {os.getcwd()}). "
            f"Check the path, or use a glob such as 'data/*.jsonl'."
        )
    return [path]


def _split_files(files: list[str], root: str, split: str, config: str | None) -> list[str]:
    """Files of one split inside a folder, named like the hub's (``train-0000.parquet``, ``test/x.jsonl``)."""
    rel = {f: os.path.relpath(f, root).replace(os.sep, "/") for f in files}
    if config:
        in_config = [f for f in files if config in rel[f].split("/")[:-1]]
        tops = {rel[f].split("/")[0] for f in files if "/" in rel[f]} - {"data"}
        if in_config:
            files = in_config
        elif tops and all("/" in rel[f] for f in files):  # folders per config, not this one
            raise DatasetFileError(
                f"no folder for config {config!r} under {root!r}; it has: {', '.join(sorted(tops))}. "
                f"Pass config= one of them, or point path= at the data files."
            )
    word = re.compile(rf"(^|[/_.-]){re.escape(split)}([/_.-]|$)")
    chosen = [f for f in files if word.search(rel[f])]
    if not chosen:
        if len(files) == 1 and split == "train":
            return files  # one unnamed data file is the train split
        shown = ", ".join(rel[f] for f in files[:8]) + (" ..." if len(files) > 8 else "")
        raise SplitError(
            f"no data file for split {split!r} under {root!r} (files: {shown}). Name the files "
            f"after their split (train.jsonl, test-00000.parquet) or point path= at one file."
        )
    builders = {FORMATS[_ext(f)][0] for f in chosen}
    if len(builders) > 1:
        keep = next(b for b in _PREFERENCE if b in builders)
        chosen = [f for f in chosen if FORMATS[_ext(f)][0] == keep]
    return chosen


def _read_files(files: list[str], split: str, shown: str) -> datasets.Dataset:
    import datasets

    exts = {_ext(f) for f in files}
    unknown = exts - set(FORMATS)
    if unknown:
        raise DatasetFileError(
            f"cannot read {shown}: unsupported file type {', '.join(sorted(unknown))}. "
            f"Use jsonl, json, csv, tsv or parquet."
        )
    builders = {FORMATS[e][0] for e in exts}
    if len(builders) > 1:
        raise DatasetFileError(
            f"{shown} mixes file types ({', '.join(sorted(exts))}); point path= at one type."
        )
    builder, kwargs = FORMATS[exts.pop()]
    try:
        return datasets.load_dataset(builder, data_files={split: files}, split=split, **kwargs)
    except Exception as exc:  # malformed JSON/CSV, types that differ between files, ...
        root = _root_cause(exc)
        raise DatasetFileError(
            f"cannot read {shown} as {builder}: {type(root).__name__}: {_first_line(root)}. "
            f"Check the format (.jsonl: one JSON object per line) and that each column has one "
            f"type in every row and file (e.g. all answers numbers, or all strings)."
        ) from exc


def _root_cause(exc: BaseException) -> BaseException:
    seen: set[int] = set()
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc, cause = cause, cause.__cause__ or cause.__context__
    return exc


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0]


def _read_saved(path: str, split: str) -> datasets.Dataset:
    import datasets

    saved = datasets.load_from_disk(path)
    if isinstance(saved, datasets.DatasetDict):
        if split not in saved:
            raise SplitError(
                f"{path!r} has no split {split!r}; it has: {', '.join(saved)}. Pass split='{next(iter(saved))}'."
            )
        return saved[split]
    return saved


def read_local(path: str, split: str, config: str | None = None) -> datasets.Dataset:
    """One named split from a local file, glob, folder of data files, or ``save_to_disk`` folder."""
    expanded = os.path.expanduser(str(path))
    if os.path.isdir(expanded) and any(os.path.exists(os.path.join(expanded, m)) for m in _SAVED_MARKERS):
        return _read_saved(expanded, split)
    files = _expand(expanded)
    if os.path.isdir(expanded):
        files = _split_files(files, expanded, split, config)
    return _read_files(files, split, repr(str(path)))


def read_hub(
    dataset_id: str, config: str | None, split: str, revision: str | None, trust_remote_code: bool
) -> datasets.Dataset:
    import datasets

    try:
        return datasets.load_dataset(
            dataset_id, config, split=split, revision=revision, trust_remote_code=trust_remote_code
        )
    except Exception as exc:
        where = f"'{dataset_id}'" + (f" (config '{config}')" if config else "")
        offline = os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("HF_DATASETS_OFFLINE") == "1"
        hint = (
            "The Hub is switched off (HF_HUB_OFFLINE=1) and this split is not in the local cache: "
            "load it once online, or pass path= to a local copy in the same column layout."
            if offline else
            "Check the id, config and split names, your network and your token, or pass path= "
            "to a local copy in the same column layout."
        )
        raise DatasetLoadError(
            f"cannot load {where} split '{split}' from the Hugging Face Hub: "
            f"{type(exc).__name__}: {_first_line(exc)}. {hint}"
        ) from exc


def load_source(
    *,
    what: str,
    split: str,
    dataset_id: str | None,
    config: str | None = None,
    path: str | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
) -> datasets.Dataset:
    """``split`` (with slices) of the local copy at ``path`` if given, else of ``dataset_id`` on the hub."""
    if path:
        return load_split(split, lambda name: read_local(path, name, config), what)
    if not dataset_id:
        raise DatasetLoadError(f"{what}: give dataset_id='org/name' (a Hub dataset) or path= (a local copy).")
    return load_split(
        split, lambda name: read_hub(dataset_id, config, name, revision, trust_remote_code), what
    )


# ------------------------------------------------------------------ row checks


def require_columns(ds: datasets.Dataset, columns: list[str], what: str, fix: str) -> None:
    missing = [c for c in columns if c not in ds.column_names]
    if missing:
        hints = []
        for c in missing:
            close = difflib.get_close_matches(c, ds.column_names, n=1, cutoff=0.6)
            hints.append(f"{c!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise ColumnError(
            f"{what}: column{'s' if len(hints) > 1 else ''} {', '.join(hints)} not found; the data has: "
            f"{', '.join(repr(c) for c in ds.column_names)}. {fix}"
        )


def values(ds: datasets.Dataset, column: str) -> list:
    """A column as a list in one Arrow conversion (``ds[column]`` iterates row by row: 100x slower)."""
    return ds.select_columns([column])[:][column]


def check_not_empty(ds: datasets.Dataset, what: str, why: str, fix: str) -> None:
    if len(ds) == 0:
        raise EmptyDatasetError(f"{what}: no rows left: {why}. {fix}")


def shuffle_limit(ds: datasets.Dataset, shuffle: bool, seed: int, limit: int | None, what: str) -> datasets.Dataset:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise DatasetError(f"{what}: limit must be a positive number of rows or None, got {limit!r}.")
    if shuffle:
        ds = ds.shuffle(seed=seed)
    if limit is not None and limit < len(ds):
        ds = ds.select(range(limit))
    if shuffle:
        ds = ds.flatten_indices()  # contiguous again: later maps and TRL's sampler stay fast
    return ds


__all__ = [
    "SplitPart", "parse_split", "slice_dataset", "load_split", "FORMATS", "read_local", "read_hub", "load_source",
    "values", "require_columns", "check_not_empty", "shuffle_limit",
]
