"""``grpo score --input``: the completions to score, read in batches of numbered rows from
a .jsonl, .csv or .parquet file (JSONL rows numbered by file line, a line that is not UTF-8
or not a JSON object an error naming it) or from a run's rollout log (its folder, the run's
output dir, or one step's file), and cut between whole groups for group rewards (groups of
``--group-size`` rows, a 'group' column, the log's groups, else runs of one prompt)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from grpo_core.base import jsontext
from grpo_core.base.errors import GrpoError
from grpo_core.base.params import reserved_columns_problem
from grpo_core.rewards.scoring import ROW_ONLY
from grpo_core.runfiles import rollouts as rollout_log

INPUTS = (".jsonl", ".csv", ".parquet")


def read_batches(path: Path, batch_size: int):
    """Lists of (row number, row); JSONL rows are numbered by file line, CSV and
    Parquet rows from 1."""

    reader = _log_rows if is_log(path) else {".jsonl": _jsonl_rows, ".csv": _csv_rows,
                                              ".parquet": _parquet_rows}[path.suffix]
    batch = []
    for number, row in reader(path):
        if "completion" not in row:
            raise GrpoError(f"{path}:{number} has no 'completion' field; each row needs "
                            f"a 'completion' and the columns the rewards read (it has: {', '.join(sorted(row))}).")
        problem = reserved_columns_problem(set(row) - set(ROW_ONLY))
        if problem:
            raise GrpoError(f"{path}:{number}: {problem}")
        batch.append((number, row))
        if len(batch) >= batch_size:
            yield batch
            batch = []
    if batch:
        yield batch


def is_log(path: Path) -> bool:
    """A run's rollout log: its folder, the run's output dir, or one step's file."""

    if path.is_dir():
        return True
    return path.suffix == ".parquet" and path.parent.name == rollout_log.FOLDER


def _log_rows(path: Path):
    folder = path if path.is_file() or path.name == rollout_log.FOLDER else path / rollout_log.FOLDER
    files = [folder] if folder.is_file() else [p for _, p in rollout_log.files(folder)]
    number = 0
    for file in files:
        for row in rollout_log.read(file).to_pylist():
            number += 1
            yield number, row


def group_key(row: dict) -> str:
    """A GRPO group: the log's (step, round, group), a 'group' column, else the rows' prompt."""
    if "step" in row and "group" in row:
        return f"{row['step']}/{row.get('round', 0)}/{row['group']}"
    if "group" in row:
        return json.dumps(row["group"], default=str)
    return json.dumps(row.get("prompt"), default=str)


def whole_groups(batches, size: int | None, path: Path):
    """``batches`` cut between groups only (a group reward sees each group whole): groups
    of ``size`` rows, else runs of one :func:`group_key`. A last group short of ``size``
    is an error naming its lines."""
    carry: list = []
    for batch in batches:
        rows = carry + batch
        if size:
            cut = len(rows) // size * size
        else:
            last = group_key(rows[-1][1])
            cut = len(rows)
            while cut and group_key(rows[cut - 1][1]) == last:
                cut -= 1  # the last run may go on in the next batch
        if cut:
            yield rows[:cut]
        carry = rows[cut:]
    if carry and size and len(carry) < size:
        raise GrpoError(f"{path}: the last {len(carry)} rows (from line {carry[0][0]}) do not fill a group of "
                        f"--group-size {size}; a group reward scores whole groups. Drop them or fix --group-size.")
    if carry:
        yield carry


def group_sizes(batch, size: int | None) -> int | list[int]:
    """The ``group_size`` a batch of whole groups is scored with (``rewards/groups.py``)."""
    if size:
        return size
    sizes: list[int] = []
    previous = object()
    for _, row in batch:
        key = group_key(row)
        if key == previous:
            sizes[-1] += 1
        else:
            sizes.append(1)
            previous = key
    return sizes


def _text_lines(path: Path):
    """``path``'s lines as text, numbered from 1; a line that is not UTF-8 is an error naming
    it and its first bad byte (not a UnicodeDecodeError from deep in a reader)."""
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise GrpoError(f"{path}:{lineno} is not UTF-8 text (byte {raw[exc.start]:#04x} at column "
                                f"{exc.start + 1}); save the file as UTF-8.") from None


def _jsonl_rows(path: Path):
    for lineno, line in _text_lines(path):
        if not line.strip():
            continue
        try:
            row = jsontext.loads(line)
        except json.JSONDecodeError as exc:
            raise GrpoError(f"{path}:{lineno} is not valid JSON ({exc.msg}); each line must be one object.") from None
        except jsontext.JsonNumberError as exc:
            raise GrpoError(f"{path}:{lineno} holds {exc}") from None
        if not isinstance(row, dict):
            raise GrpoError(f"{path}:{lineno} is not a JSON object; each line needs {{\"completion\": ...}}.")
        yield lineno, row


def _csv_rows(path: Path):
    yield from enumerate(csv.DictReader(line for _, line in _text_lines(path)), 1)


def _parquet_rows(path: Path):
    import pyarrow.parquet as pq

    number = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=1024):
        for row in batch.to_pylist():
            number += 1
            yield number, row


__all__ = ["read_batches", "is_log", "group_key", "whole_groups", "group_sizes", "INPUTS"]
