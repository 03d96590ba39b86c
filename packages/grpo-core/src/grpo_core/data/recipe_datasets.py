"""The datasets `trl grpo` and open-r1 configs name, loaded as their scripts load them:
``trl`` (``dataset_name`` or a ``datasets:`` mixture, TRL's prompt column kept) and
``openr1`` (``dataset_name`` or open-r1's ``dataset_mixture``, its prompt column as the
question, its reward columns under grpo's names). Registered by the default plugin
(:mod:`grpo_core.data.builtins`); the config translations that choose them live in
:mod:`grpo_core.config.trl_compat` and :mod:`grpo_core.config.openr1`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grpo_core.base.errors import ConfigError
from grpo_core.base.text import last_boxed


def trl_dataset(split: str = "train", dataset_name: str | None = None, dataset_config: str | None = None,
                streaming: bool = False, datasets: list | None = None, test_split_size: float | None = None):
    """A dataset as `trl grpo` loads it: ``dataset_name`` (a hub id, a local folder,
    or a .jsonl/.json/.csv/.parquet file) with ``dataset_config``, or a ``datasets``
    mixture (TRL's DatasetMixtureConfig). Rows keep TRL's ``prompt`` column, and a
    ``solution`` (what TRL's accuracy_reward reads) is also the gold ``answer`` grpo's
    rewards read (its last ``\\boxed{}``, else the whole text) unless the rows have one."""
    ds = _trl_rows(split, dataset_name, dataset_config, streaming, datasets, test_split_size)
    if "solution" in ds.column_names and "answer" not in ds.column_names:
        ds = ds.map(lambda batch: _gold({"answer": batch["solution"]}), batched=True, desc="Reading the gold answers")
    return ds


def _trl_rows(split, dataset_name, dataset_config, streaming, datasets, test_split_size):
    import datasets as hf

    if streaming:
        raise ConfigError("dataset_streaming / streaming: grpo needs a map-style dataset (it checks rows before "
                          "training); set it to false.")
    if datasets:
        from trl import DatasetMixtureConfig, get_dataset
        from trl.scripts.utils import DatasetConfig

        mixture = DatasetMixtureConfig(datasets=[DatasetConfig(**d) for d in datasets],
                                       test_split_size=test_split_size)
        return split_of(get_dataset(mixture), split, "datasets mixture")
    if not dataset_name:
        raise ConfigError("the trl dataset needs dataset_name (a hub id or a local path) or datasets: [...].")
    path = Path(dataset_name).expanduser()
    builders = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
    if path.is_file() and path.suffix in builders:  # one file: the train split
        return split_of(hf.load_dataset(builders[path.suffix], data_files=str(path)), split, dataset_name)
    if path.is_dir() and ((path / "dataset_info.json").is_file() or (path / "dataset_dict.json").is_file()):
        return split_of(hf.load_from_disk(str(path)), split, dataset_name)  # save_to_disk's layout
    return hf.load_dataset(dataset_name, name=dataset_config, split=split)


def split_of(data, split: str, what: str):
    if not hasattr(data, "keys"):
        return data
    if split not in data:
        raise ConfigError(f"{what} has no split '{split}'; its splits: {', '.join(data)}. Set dataset_train_split.")
    return data[split]


def _gold(batch: dict) -> dict:
    return {"answer": [None if s is None else (last_boxed(str(s)) or str(s)) for s in batch["answer"]]}

MIXTURE_KEYS = ("datasets", "seed", "test_split_size")
MIXTURE_ENTRY_KEYS = ("id", "config", "split", "columns", "weight")


def check_mixture(mixture: Any) -> list[str]:
    """Problems of an open-r1 ``dataset_mixture``, found before anything loads."""
    example = "dataset_mixture: {datasets: [{id: data.jsonl, weight: 0.5}], seed: 0}"
    if not isinstance(mixture, dict) or not isinstance(mixture.get("datasets"), list) or not mixture["datasets"]:
        return [f"dataset_mixture must be a mapping with a non-empty 'datasets' list, got {mixture!r}; e.g. {example}."]
    out = [f"dataset_mixture has no option '{k}'; its options are: {', '.join(MIXTURE_KEYS)}."
           for k in mixture if k not in MIXTURE_KEYS]
    columns = []
    for i, entry in enumerate(mixture["datasets"], 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            out.append(f"dataset_mixture.datasets entry {i} needs an id (a hub id or a local path), got {entry!r}.")
            continue
        out += [f"dataset_mixture.datasets entry {i} has no option '{k}'; use {', '.join(MIXTURE_ENTRY_KEYS)}."
                for k in entry if k not in MIXTURE_ENTRY_KEYS]
        weight = entry.get("weight")
        if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0):
            out.append(f"dataset_mixture.datasets entry {i} ({entry['id']}): weight {weight!r} must be a number > 0 "
                       f"(the share of its rows kept, 1.0 for all).")
        if entry.get("columns") is not None:
            columns.append(sorted(entry["columns"]))
    if any(c != columns[0] for c in columns):
        out.append(f"dataset_mixture: every entry's columns must be the same (as open-r1 requires), got {columns}.")
    return out


def openr1_dataset(split: str = "train", dataset_name: str | None = None, dataset_config: str | None = None,
                   dataset_mixture: dict | None = None, prompt_column: str = "prompt", columns: dict | None = None,
                   streaming: bool = False, datasets: list | None = None, test_split_size: float | None = None):
    """A dataset as open-r1's GRPO script loads it: ``dataset_name`` (or ``dataset_mixture``,
    open-r1's: a ``weight`` keeps that share of an entry's rows), and ``prompt_column``'s
    text as the user turn (it becomes ``question``, so the system prompt goes first, as in
    open-r1's make_conversation). ``columns`` renames what open-r1's rewards read under
    another name (``solution`` becomes ``answer``)."""
    if dataset_mixture is not None:
        problems = check_mixture(dataset_mixture)
        if problems:
            raise ConfigError(problems[0])
        ds = _mixture(dataset_mixture, split)
    else:
        ds = trl_dataset(split, dataset_name, dataset_config, streaming, datasets, test_split_size)
    what = dataset_name or "the dataset mixture"
    return _renamed(_prompt(ds, prompt_column, what), columns or {}, what)


def _mixture(mixture: dict, split: str):
    """open-r1's get_dataset for a mixture: each entry's split, its columns, a seeded
    share of its rows; all shuffled together; a seeded test split when asked."""
    import datasets as hf

    seed = mixture.get("seed", 0)
    parts = []
    for entry in mixture["datasets"]:
        ds = trl_dataset(entry.get("split", "train"), entry["id"], entry.get("config"))
        if entry.get("columns") is not None:
            ds = ds.select_columns(entry["columns"])
        if entry.get("weight") is not None:
            ds = ds.shuffle(seed=seed).select(range(int(len(ds) * entry["weight"])))
        parts.append(ds)
    combined = hf.concatenate_datasets(parts).shuffle(seed=seed)
    size = mixture.get("test_split_size")
    splits = combined.train_test_split(test_size=size, seed=seed) if size is not None else {"train": combined}
    return split_of(splits, split, "dataset_mixture")


def _prompt(ds, column: str, what: str):
    """``column``'s text becomes ``question`` (TRL's conversational prompts stay as they are)."""
    if column not in ds.column_names:
        raise ConfigError(f"dataset_prompt_column '{column}' is not a column of {what}; it has: "
                          f"{', '.join(ds.column_names)}. Set dataset_prompt_column to the column holding the prompt.")
    if column == "prompt" and len(ds) and isinstance(ds[0]["prompt"], list):
        return ds
    drop = [c for c in ("question", "prompt") if c in ds.column_names and c != column]
    return ds.remove_columns(drop).rename_column(column, "question") if column != "question" else ds.remove_columns(drop)


def _renamed(ds, columns: dict, what: str):
    """open-r1's reward columns under our names; a ``solution`` becomes the gold ``answer``
    as open-r1's math_verify reads it: its last ``\\boxed{}``, else the whole text."""
    for theirs, ours in columns.items():
        if theirs in ds.column_names:
            ds = ds.remove_columns([ours] if ours in ds.column_names else []).rename_column(theirs, ours)
            if ours == "answer":
                ds = ds.map(_gold, batched=True, desc="Reading the gold answers")
        elif ours not in ds.column_names:
            raise ConfigError(f"{what} has neither '{theirs}' (open-r1's name) nor '{ours}' (grpo's), the column its "
                              f"rewards read as the gold answer; it has: {', '.join(ds.column_names)}.")
    return ds


__all__ = ["trl_dataset", "openr1_dataset", "check_mixture", "split_of"]
