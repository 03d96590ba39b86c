"""What the loaders in ``loaders`` do (imported on the first load).

Each reads the Hub dataset, or a local copy in the hub's own layout (``path=``:
a file, a glob, a folder of split-named files or a ``save_to_disk`` folder, read
by grpo-core's :mod:`grpo_core.datafiles` as grpo-datasets reads it), and maps its rows to ``question``, ``tests``, ``test_setup`` and ``answer``.
"""

from __future__ import annotations

import json
import warnings

from grpo_core.datafiles import check_not_empty, load_source, require_columns, shuffle_limit
from grpo_core.errors import ColumnError, DatasetError

# the errors of grpo-core's dataset toolkit, under the names this package has always exported
CodeDatasetError = DatasetError
CodeColumnError = ColumnError


def finish(ds, what: str, limit: int | None, shuffle: bool, seed: int):
    ds = shuffle_limit(ds, shuffle, seed, limit, what)
    check_not_empty(ds, what, "the split selects none, or no row has tests", "Check the split and the tests column.")
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
    ds = load_source(what=what, split=split, dataset_id=dataset_id, config=config, path=path, revision=revision)
    require_columns(ds, ["text" if config == "full" else "prompt", "code", "test_list"], what, MBPP_FIX)
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
    ds = load_source(what=what, split=split, dataset_id=dataset_id, config=config, path=path, revision=revision)
    require_columns(ds, ["prompt", "canonical_solution", "test", "entry_point"], what, HUMANEVAL_FIX)
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
        raise CodeDatasetError("dataset 'code.files' needs path= (a .jsonl, .json, .csv, .tsv, .parquet or .arrow "
                               "file, a glob such as 'data/*.jsonl', a folder of split-named files, or a folder "
                               "saved with save_to_disk).")
    ds = load_source(what=what, split=split, dataset_id=None, path=path)
    fields = [question_field, tests_field] + [f for f in (answer_field, setup_field) if f]
    require_columns(ds, fields, what, "Map your columns with question_field=, tests_field=, answer_field= (None when "
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


__all__ = ["mbpp", "humaneval", "code_files", "CodeDatasetError", "CodeColumnError"]
