"""Reading a split from the Hugging Face Hub or from a local copy (file, glob or folder).

A local copy keeps the hub's own column layout, so one adapter serves both: this is
how adapters run offline and how the tests run without the network.
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import DatasetFileError, DatasetLoadError, SplitError
from .splits import load_split

if TYPE_CHECKING:
    import datasets

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
    seen = set()
    while (exc.__cause__ or exc.__context__) is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
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


__all__ = ["FORMATS", "read_local", "read_hub", "load_source"]
