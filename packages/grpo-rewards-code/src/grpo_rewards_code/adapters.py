"""What the loaders in ``loaders`` do (imported on the first load).

Each reads the Hub dataset, or a local copy in the hub's own layout (``path=``),
and maps its rows to ``question``, ``tests``, ``test_setup`` and ``answer``.
"""

from __future__ import annotations

import difflib
import glob
import json
import os
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from grpo_core.errors import GrpoError, MissingColumnError

if TYPE_CHECKING:
    import datasets

FORMATS = {".parquet": "parquet", ".jsonl": "json", ".json": "json", ".csv": "csv"}
_PREFERENCE = ("parquet", "json", "csv")


class CodeDatasetError(GrpoError, ValueError):
    """A code dataset that cannot be loaded or used as asked."""


class CodeColumnError(CodeDatasetError, MissingColumnError):
    """An expected source column is missing."""


# --------------------------------------------------------------------------- reading


def _files(path: str) -> list[str]:
    path = os.path.expanduser(path)
    if glob.has_magic(path):
        found = sorted(f for f in glob.glob(path, recursive=True) if os.path.isfile(f))
    elif os.path.isdir(path):
        found = sorted(str(f) for f in Path(path).rglob("*") if f.is_file() and f.suffix.lower() in FORMATS
                       and not any(p.startswith(".") for p in f.relative_to(path).parts))
    else:
        found = [path] if os.path.isfile(path) else []
    if not found:
        raise CodeDatasetError(f"no data file at {path!r} (working directory {os.getcwd()}): give a .parquet, "
                               f".jsonl, .json or .csv file, a glob, or a folder in the hub's layout.")
    return found


def _pick(files: list[str], root: str, split: str, config: str | None) -> list[str]:
    """The files of one split (and config folder) in a folder laid out like the hub's."""
    rel = {f: os.path.relpath(f, root).replace(os.sep, "/") for f in files}
    if config:
        inside = [f for f in files if config in rel[f].split("/")[:-1]]
        folders = sorted({rel[f].split("/")[0] for f in files if "/" in rel[f]})
        if inside:
            files = inside
        elif folders and all("/" in rel[f] for f in files):
            raise CodeDatasetError(f"no folder for config {config!r} under {root!r}; it has "
                                   f"{', '.join(folders)}. Pass config= one of them.")
    word = re.compile(rf"(^|[/_.-]){re.escape(split)}([/_.-]|$)")
    chosen = [f for f in files if word.search(rel[f])]
    if not chosen:
        if len(files) == 1:
            return files
        raise CodeDatasetError(f"no data file for split {split!r} under {root!r} (files: "
                               f"{', '.join(sorted(rel.values())[:8])}). Name files after their split "
                               f"(train.jsonl, test-00000-of-00001.parquet) or point path= at one file.")
    kinds = {FORMATS[Path(f).suffix.lower()] for f in chosen}
    keep = next(k for k in _PREFERENCE if k in kinds)
    return [f for f in chosen if FORMATS[Path(f).suffix.lower()] == keep]


def read(what: str, split: str, *, dataset_id: str | None, config: str | None, path: str | None,
         revision: str | None = None) -> datasets.Dataset:
    """``split`` (slices allowed: ``train[:50]``) of the local copy at ``path``, else of the Hub dataset."""
    import datasets

    base = re.split(r"[\[+]", split, maxsplit=1)[0].strip()
    if path:
        files = _files(path)
        if os.path.isdir(os.path.expanduser(path)):
            files = _pick(files, os.path.expanduser(path), base, config)
        kinds = {FORMATS.get(Path(f).suffix.lower()) for f in files}
        if None in kinds or len(kinds) > 1:
            raise CodeDatasetError(f"{what}: {path!r} gives files of types {sorted(map(str, kinds))}; use one of "
                                   f"parquet, jsonl/json or csv.")
        try:
            return datasets.load_dataset(kinds.pop(), data_files={base: files}, split=split)
        except Exception as exc:
            raise CodeDatasetError(f"{what}: cannot read {path!r} split {split!r}: {type(exc).__name__}: "
                                   f"{str(exc).splitlines()[0] if str(exc) else ''}") from exc
    try:
        return datasets.load_dataset(dataset_id, config, split=split, revision=revision)
    except Exception as exc:
        offline = "1" in (os.environ.get("HF_HUB_OFFLINE"), os.environ.get("HF_DATASETS_OFFLINE"))
        hint = ("the Hub is switched off (HF_HUB_OFFLINE=1) and this split is not cached" if offline
                else "check the id, config, split and your network")
        raise CodeDatasetError(f"{what}: cannot load {dataset_id!r} (config {config!r}) split {split!r}: "
                               f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}; "
                               f"{hint}, or pass path= to a local copy in the hub's layout.") from exc


def require(ds, columns: list[str], what: str, fix: str) -> None:
    missing = [c for c in columns if c not in ds.column_names]
    if missing:
        hints = [c + (f" (did you mean {m[0]!r}?)" if (m := difflib.get_close_matches(c, ds.column_names, 1)) else "")
                 for c in missing]
        raise CodeColumnError(f"{what}: column(s) {', '.join(hints)} not found; the data has "
                              f"{', '.join(ds.column_names)}. {fix}")


def finish(ds, what: str, limit: int | None, shuffle: bool, seed: int):
    if shuffle:
        ds = ds.shuffle(seed=seed)
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise CodeDatasetError(f"{what}: limit={limit!r} must be a positive number of rows.")
        ds = ds.select(range(min(limit, len(ds))))
    if len(ds) == 0:
        raise CodeDatasetError(f"{what}: no rows left; check the split and the tests column.")
    return ds


def source_code(text) -> str:
    """Code as the sandbox runs it: Unix newlines, one newline at the end."""
    return str(text or "").replace("\r\n", "\n").replace("\r", "\n").strip("\n") + "\n"


# --------------------------------------------------------------------------- mbpp

MBPP_FIX = ("The mbpp adapter reads google-research-datasets/mbpp's layout: config 'full' (text, code, "
            "test_list, test_setup_code, challenge_test_list) or 'sanitized' (prompt, code, test_list, "
            "test_imports); for other layouts use 'code.files'.")


def mbpp_question(task: str, tests: list[str], shown: int | None) -> str:
    shown_tests = tests if shown is None else tests[:shown]
    text = task.strip()
    if shown_tests:
        word = "this test" if len(shown_tests) == 1 else "these tests"
        text += f"\nYour code should pass {word}:\n\n" + "\n".join(t.strip() for t in shown_tests)
    return text


def _mbpp_batch(batch, config: str, shown: int | None, challenge: bool):
    n = len(batch["code"])
    tasks = batch["text"] if config == "full" else batch["prompt"]
    challenges = batch.get("challenge_test_list") or [[]] * n
    if config == "full":
        setups = [source_code(s) if (s or "").strip() else "" for s in batch.get("test_setup_code") or [""] * n]
    else:
        setups = ["\n".join(imports) + "\n" if imports else "" for imports in batch.get("test_imports") or [[]] * n]
    tests = [[source_code(t).strip("\n") for t in (list(ts or []) + (list(cs or []) if challenge else []))]
             for ts, cs in zip(batch["test_list"], challenges)]
    return {
        "question": [mbpp_question(t or "", list(ts or []), shown) for t, ts in zip(tasks, batch["test_list"])],
        "tests": tests,
        "test_setup": setups,
        "answer": [source_code(c) for c in batch["code"]],
    }


def mbpp(*, split, config, shown_tests, challenge_tests, dataset_id, path, revision, limit, shuffle, seed):
    """MBPP rows as question / tests / test_setup / answer."""
    what = "dataset 'mbpp'"
    if config not in ("full", "sanitized"):
        raise CodeDatasetError(f"{what}: config={config!r}; choose 'full' or 'sanitized'.")
    if shown_tests is not None and (isinstance(shown_tests, bool) or not isinstance(shown_tests, int)
                                    or shown_tests < 0):
        raise CodeDatasetError(f"{what}: shown_tests={shown_tests!r}; give a count (0 hides them all) or None.")
    ds = read(what, split, dataset_id=dataset_id, config=config, path=path, revision=revision)
    require(ds, ["text" if config == "full" else "prompt", "code", "test_list"], what, MBPP_FIX)
    keep = [c for c in ("task_id",) if c in ds.column_names]
    ds = ds.map(_mbpp_batch, batched=True, remove_columns=[c for c in ds.column_names if c not in keep],
                fn_kwargs=dict(config=config, shown=shown_tests, challenge=challenge_tests),
                desc="Building MBPP tasks")
    return finish(ds, what, limit, shuffle, seed)


# --------------------------------------------------------------------------- humaneval

HUMANEVAL_FIX = ("The humaneval adapter reads openai/openai_humaneval's layout (task_id, prompt, "
                 "canonical_solution, test, entry_point); for other layouts use 'code.files'.")


def _humaneval_batch(batch):
    out = {"question": [], "tests": [], "test_setup": [], "answer": []}
    for prompt, solution, test, entry in zip(batch["prompt"], batch["canonical_solution"], batch["test"],
                                             batch["entry_point"]):
        out["question"].append(
            f"Write the Python function `{entry}` below, whole (signature, body and any imports it needs)."
            f"\n\n```python\n{prompt.strip()}\n```")
        out["tests"].append([f"{source_code(test)}\n\ncheck({entry})"])
        # the prompt itself (imports, helpers such as HumanEval/32's poly, the stub) runs
        # first: the tests may call its helpers; the completion's function replaces the stub
        out["test_setup"].append(source_code(prompt))
        out["answer"].append(source_code(prompt + solution))
    return out


def humaneval(*, split, dataset_id, config, path, revision, limit, shuffle, seed):
    """HumanEval rows as question / tests / test_setup / answer."""
    what = "dataset 'humaneval'"
    ds = read(what, split, dataset_id=dataset_id, config=config, path=path, revision=revision)
    require(ds, ["prompt", "canonical_solution", "test", "entry_point"], what, HUMANEVAL_FIX)
    ds = ds.map(_humaneval_batch, batched=True, remove_columns=["prompt", "canonical_solution", "test"],
                desc="Building HumanEval tasks")
    return finish(ds, what, limit, shuffle, seed)


# --------------------------------------------------------------------------- files


def tests_value(value, row: int, field: str) -> list[str]:
    """A tests cell as a list of snippets: a list, a JSON list in a string (CSV), or one program."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and len(text) <= 10_000_000:
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if isinstance(parsed, list) and all(isinstance(t, str) for t in parsed):
                return [t for t in parsed if t.strip()]
        return [text] if text else []
    if isinstance(value, (list, tuple)) and all(isinstance(t, str) for t in value):
        return [t for t in value if t.strip()]
    raise CodeDatasetError(f"row {row}: column {field!r} holds {type(value).__name__} {value!r:.80}; give a list "
                           f"of test strings, one test program, or a JSON list of strings.")


def _files_batch(batch, indices, question_field, tests_field, answer_field, setup_field):
    out = {
        "question": [None if q is None else str(q).strip() for q in batch[question_field]],
        "tests": [tests_value(v, i, tests_field) for v, i in zip(batch[tests_field], indices)],
        "test_setup": [source_code(s) if s and str(s).strip() else "" for s in
                       (batch[setup_field] if setup_field else [""] * len(indices))],
    }
    if answer_field:
        out["answer"] = [None if a is None else source_code(a) for a in batch[answer_field]]
    return out


def code_files(*, split, path, question_field, tests_field, answer_field, setup_field, limit, shuffle, seed):
    """Local files with a prompt and a tests column."""
    what = f"dataset 'code.files' ({path})"
    if not path:
        raise CodeDatasetError("dataset 'code.files' needs path= (a .jsonl, .json, .parquet or .csv file, a glob "
                               "such as 'data/*.jsonl', or a folder of split-named files).")
    ds = read(what, split, dataset_id=None, config=None, path=path)
    fields = [question_field, tests_field] + [f for f in (answer_field, setup_field) if f]
    require(ds, fields, what, "Map your columns with question_field=, tests_field=, answer_field= (None when "
                              "there is no reference solution) and setup_field=.")
    targets = {"question", "tests", "test_setup", "answer"}
    drop = [c for c in ds.column_names if c in targets or c in (question_field, tests_field)]
    ds = ds.map(_files_batch, batched=True, with_indices=True, remove_columns=drop,
                fn_kwargs=dict(question_field=question_field, tests_field=tests_field,
                               answer_field=answer_field, setup_field=setup_field), desc="Mapping code tasks")
    before = len(ds)
    ds = ds.filter(lambda b: [bool(q) and bool(t) for q, t in zip(b["question"], b["tests"])], batched=True)
    if len(ds) < before:
        warnings.warn(f"{what}: skipped {before - len(ds)} of {before} rows without a question or tests.",
                      stacklevel=3)
    return finish(ds, what, limit, shuffle, seed)


__all__ = ["mbpp", "humaneval", "code_files", "read", "CodeDatasetError", "CodeColumnError"]
