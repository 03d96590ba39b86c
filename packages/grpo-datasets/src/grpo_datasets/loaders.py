"""The registered loaders, one function per dataset.

The core reads their signatures, defaults and docstrings (``grpo datasets show``,
parameter checks), so every parameter has a default and an annotation. No return
annotation: ``datasets.Dataset`` cannot be resolved without importing ``datasets``,
and an unresolvable hint would switch off those checks. ``datasets`` itself is
imported on the first load, so this module (the plugin's) stays cheap to import.
"""

from __future__ import annotations

import re
from typing import Literal

from grpo_core.datafiles import load_source, load_split

from .errors import ColumnError, DatasetError, SplitError
from .extract import last_boxed, split_gsm8k
from .rows import (
    apply_filters,
    as_text,
    check_not_empty,
    drop_bad_rows,
    require_columns,
    shuffle_limit,
    values,
)

BadAnswers = Literal["skip", "error"]
Extract = Literal["gsm8k", "boxed"]


SOURCE = "_source"  # the raw gold text, kept until bad rows are reported, then dropped


def _finish(ds, *, what, bad_answers, fix, shuffle, seed, limit, label, source_column=SOURCE):
    ds = drop_bad_rows(ds, bad_answers, what, source_column, fix, label)
    if SOURCE in ds.column_names:
        ds = ds.remove_columns(SOURCE)
    return shuffle_limit(ds, shuffle, seed, limit, what)


def _keep(ds, column, wanted, *, what, why, fix, desc):
    """The rows whose ``column`` passes ``wanted``; none left is an error saying why."""
    ds = ds.filter(lambda b: [wanted(v) for v in b[column]], batched=True, desc=desc)
    check_not_empty(ds, what, why, fix)
    return ds


# --------------------------------------------------------------------------- gsm8k

GSM8K_FIX = (
    "The gsm8k adapter reads openai/gsm8k's layout: 'question' and 'answer' "
    "('<reasoning> #### 42'); for other layouts use the 'files' or 'hub' adapter "
    "with question_field=/answer_field=."
)


def _gsm8k_batch(batch):
    pairs = [split_gsm8k(a) for a in batch["answer"]]
    return {
        "question": [None if q is None else str(q).strip() for q in batch["question"]],
        "answer": [p[1] for p in pairs],
        "rationale": [p[0] for p in pairs],
        SOURCE: batch["answer"],
    }


def load_gsm8k(
    split: str = "train",
    *,
    config: str = "main",
    dataset_id: str = "openai/gsm8k",
    path: str | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
    limit: int | None = None,
    shuffle: bool = False,
    seed: int = 0,
    bad_answers: BadAnswers = "skip",
):
    """GSM8K grade-school math (openai/gsm8k): answer = the number after '####'.

    Columns: ``question``; ``answer`` (thousands separators removed, "1,234" -> "1234");
    ``rationale`` (the worked solution before '####').

    :param config: ``main`` or ``socratic``.
    :param path: a local copy in openai/gsm8k's layout (file, glob or folder) instead of the Hub.
    :param bad_answers: rows without '#### <number>': ``skip`` (counted in a warning) or ``error``.
    :param split: ``train``/``test`` with optional slice, e.g. ``train[:90%]``.
    """
    what = "dataset 'gsm8k'"
    ds = load_source(
        what=what, split=split, dataset_id=dataset_id, config=config, path=path,
        revision=revision, trust_remote_code=trust_remote_code,
    )
    require_columns(ds, ["question", "answer"], what, GSM8K_FIX)
    ds = ds.map(_gsm8k_batch, batched=True, desc="Extracting GSM8K answers")
    return _finish(
        ds, what=what, bad_answers=bad_answers, fix="Its text has no '#### <number>' line.",
        shuffle=shuffle, seed=seed, limit=limit, label="answer",
    )


# --------------------------------------------------------------------------- math

HENDRYCKS_ID = "EleutherAI/hendrycks_math"
HENDRYCKS_CONFIGS = (
    "algebra", "counting_and_probability", "geometry", "intermediate_algebra",
    "number_theory", "prealgebra", "precalculus",
)
MATH_FIX = (
    "The math adapter reads the competition MATH layout ('problem', 'solution' with "
    r"\boxed{...}, 'level', 'type' or 'subject'), as in EleutherAI/hendrycks_math or "
    "HuggingFaceH4/MATH-500; for other layouts use 'files'/'hub' with extract='boxed'."
)


def _slug(text) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(text).lower().replace("&", " and ")).strip("_")


def _level(value) -> int | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    m = re.search(r"\d+", str(value))
    return int(m.group(0)) if m else None


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _levels(value, allowed, what) -> set[int]:
    """``3`` or ``[1, 2]`` as a set of levels; anything else is an error naming the value."""
    items = _as_list(value)
    if not items or not all(isinstance(v, int) and not isinstance(v, bool) and v in allowed for v in items):
        raise DatasetError(
            f"{what}: level must be one of {sorted(allowed)} or a list of them, got {value!r}."
        )
    return set(items)


def _math_batch(batch):
    n = len(batch["problem"])
    subjects = batch.get("type") or batch.get("subject") or [None] * n
    given = batch.get("answer") or [None] * n
    answers = []
    for solution, fallback in zip(batch["solution"], given, strict=True):
        answer = last_boxed(solution)
        answers.append(answer if answer is not None else as_text(fallback))
    return {
        "question": [None if q is None else str(q).strip() for q in batch["problem"]],
        "answer": answers,
        "level": [_level(v) for v in batch["level"]] if "level" in batch else [None] * n,
        "subject": [None if s is None else str(s) for s in subjects],
    }


def _math_source(*, what, config, subjects, subject, **source):
    """The rows of every config asked for; hendrycks_math's configs are its subjects."""
    if config is None and not source["path"] and source["dataset_id"] == HENDRYCKS_ID:
        configs = [c for c in HENDRYCKS_CONFIGS if subjects is None or c in subjects]
        if not configs:
            raise DatasetError(
                f"{what}: subject {subject!r} is none of {', '.join(HENDRYCKS_CONFIGS)}."
            )
    else:
        configs = _as_list(config)
    parts = [load_source(what=what, config=c, **source) for c in configs]
    if len(parts) == 1:
        return parts[0]
    import datasets

    return datasets.concatenate_datasets(parts)


def load_math(
    split: str = "train",
    *,
    level: int | list[int] | None = None,
    subject: str | list[str] | None = None,
    config: str | list[str] | None = None,
    dataset_id: str = "EleutherAI/hendrycks_math",
    path: str | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
    limit: int | None = None,
    shuffle: bool = False,
    seed: int = 0,
    bad_answers: BadAnswers = "skip",
):
    r"""Competition MATH: answer = the last \boxed{...} of the solution; filter by level, subject.

    Columns: ``question`` (the problem), ``answer`` (balanced braces: \boxed{\frac{1}{2}}
    gives \frac{1}{2}; also \boxed 5 and \fbox), ``solution``, ``level`` (int 1-5),
    ``subject`` (and the source's ``type`` when present).

    :param level: keep these levels (1-5).
    :param subject: keep these subjects, any spelling: ``number_theory``, "Number Theory".
    :param config: Hub config(s); for EleutherAI/hendrycks_math, default all seven subjects.
    :param dataset_id: e.g. ``HuggingFaceH4/MATH-500`` (split ``test``).
    :param path: a local copy in the same layout instead of the Hub.
    """
    what = "dataset 'math'"
    levels = None if level is None else _levels(level, {1, 2, 3, 4, 5}, what)
    subjects = None if subject is None else {_slug(s) for s in _as_list(subject)}
    ds = _math_source(
        what=what, split=split, config=config, subjects=subjects, subject=subject,
        dataset_id=dataset_id, path=path, revision=revision, trust_remote_code=trust_remote_code,
    )
    require_columns(ds, ["problem", "solution"], what, MATH_FIX)
    drop = [c for c in ("problem", "answer") if c in ds.column_names]
    ds = ds.map(_math_batch, batched=True, remove_columns=drop, desc="Extracting MATH answers")
    if levels is not None:
        ds = _keep(ds, "level", levels.__contains__, what=what, desc="Filtering levels",
                   why=f"no row has level {sorted(levels)}", fix="Choose other levels.")
    if subjects is not None:
        ds = _keep(
            ds, "subject", lambda s: _slug(s) in subjects, what=what, desc="Filtering subjects",
            why=f"no row has subject {subject!r}",
            fix=f"Subjects are like {', '.join(HENDRYCKS_CONFIGS)} (any case, spaces or '&' allowed).",
        )
    return _finish(
        ds, what=what, bad_answers=bad_answers, source_column="solution", label="solution",
        fix=r"Its solution has no complete \boxed{...}.", shuffle=shuffle, seed=seed, limit=limit,
    )


# The difficulty a curriculum steers by (sampling.prompts: frontier): each row's level, 1-5 (a
# "Level ?" row has none: then frontier says so and `level` keeps only rows that have one)
load_math.difficulty = {"column": "level", "param": "level", "example": "level: [1, 2, 3, 4, 5]"}  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- medcalc

MEDCALC_ID = "ncbi/MedCalc-Bench-v1.0"
MEDCALC_FIX = (
    "The medcalc adapter reads ncbi/MedCalc-Bench-v1.0's layout ('Patient Note', 'Question', "
    "'Ground Truth Answer', 'Lower Limit', 'Upper Limit', ...); for other layouts use the "
    "'files' or 'hub' adapter with question_template= and answer_field=."
)
_MEDCALC_RENAME = {"Calculator Name": "calculator", "Ground Truth Explanation": "explanation"}
_MEDCALC_USED = ("Patient Note", "Question", "Ground Truth Answer", "Lower Limit", "Upper Limit")


def _float_or_none(value) -> float | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(str(value).strip().replace(",", ""))
    except ValueError:
        return None
    return number if number == number else None  # NaN -> None


def _snake(name: str) -> str:
    return _MEDCALC_RENAME.get(name) or re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _medcalc_batch(batch):
    n = len(batch["Question"])
    none = [None] * n
    out = {
        "question": [
            None if not q else f"Patient note:\n{str(note or '').strip()}\n\nQuestion: {str(q).strip()}"
            for note, q in zip(batch["Patient Note"], batch["Question"], strict=True)
        ],
        "answer": [as_text(a) for a in batch["Ground Truth Answer"]],
        "lower": [_float_or_none(v) for v in batch.get("Lower Limit", none)],
        "upper": [_float_or_none(v) for v in batch.get("Upper Limit", none)],
        SOURCE: batch["Ground Truth Answer"],
    }
    return out


def _keep_calculators(ds, calculator, what):
    """Rows whose 'Calculator Name' or 'Calculator ID' is one of ``calculator``."""
    require_columns(ds, ["calculator"], what, "Filtering by calculator needs 'Calculator Name'.")
    wanted = {str(c).strip().lower() for c in _as_list(calculator)}
    ids = values(ds, "calculator_id") if "calculator_id" in ds.column_names else [None] * len(ds)
    keep = [i for i, (name, cid) in enumerate(zip(values(ds, "calculator"), ids, strict=True))
            if str(name).strip().lower() in wanted or (cid is not None and str(cid) in wanted)]
    ds = ds.select(keep)
    check_not_empty(ds, what, f"no row has calculator {calculator!r}",
                    "Give a 'Calculator Name' or 'Calculator ID' from the data.")
    return ds


def load_medcalc(
    split: str = "train",
    *,
    calculator: str | int | list | None = None,
    category: str | list[str] | None = None,
    numeric_only: bool = False,
    config: str | None = None,
    dataset_id: str = "ncbi/MedCalc-Bench-v1.0",
    path: str | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
    limit: int | None = None,
    shuffle: bool = False,
    seed: int = 0,
    bad_answers: BadAnswers = "skip",
):
    """MedCalc-Bench: patient note + question; gold answer with lower/upper tolerance limits.

    Columns: ``question`` ("Patient note: ... Question: ..."), ``answer`` (Ground Truth
    Answer), ``lower``/``upper`` (float, or None when absent or not a number),
    ``calculator``, ``calculator_id``, ``category``, ``output_type``, ``explanation``, ...

    :param calculator: keep these calculators (name or id).
    :param category: keep these categories (e.g. ``lab``, ``risk``).
    :param numeric_only: drop rows whose answer is not a number (dates, week/day pairs).
    :param path: a local copy in ncbi/MedCalc-Bench-v1.0's layout instead of the Hub.
    """
    what = "dataset 'medcalc'"
    ds = load_source(
        what=what, split=split, dataset_id=dataset_id, config=config, path=path,
        revision=revision, trust_remote_code=trust_remote_code,
    )
    require_columns(ds, ["Patient Note", "Question", "Ground Truth Answer"], what, MEDCALC_FIX)
    renames = {c: _snake(c) for c in ds.column_names if c not in _MEDCALC_USED}
    clash = [c for c in renames.values() if c in ("question", "answer", "lower", "upper", SOURCE)]
    if clash:
        raise ColumnError(f"{what}: source columns would clash with {clash}. {MEDCALC_FIX}")
    ds = ds.map(
        _medcalc_batch, batched=True, remove_columns=[c for c in _MEDCALC_USED if c in ds.column_names],
        desc="Building MedCalc questions",
    )
    ds = ds.rename_columns({k: v for k, v in renames.items() if k != v})
    if calculator is not None:
        ds = _keep_calculators(ds, calculator, what)
    if category is not None:
        require_columns(ds, ["category"], what, "Filtering by category needs 'Category'.")
        wanted = {str(c).strip().lower() for c in _as_list(category)}
        ds = _keep(ds, "category", lambda c: str(c).strip().lower() in wanted, what=what,
                   desc="Filtering categories", why=f"no row has category {category!r}",
                   fix="Give a 'Category' from the data.")
    if numeric_only:
        ds = _keep(ds, "answer", lambda a: _float_or_none(a) is not None, what=what,
                   desc="Keeping numeric answers", why="no row has a numeric answer", fix="Drop numeric_only.")
    return _finish(
        ds, what=what, bad_answers=bad_answers, fix="Its 'Ground Truth Answer' is empty.",
        shuffle=shuffle, seed=seed, limit=limit, label="Ground Truth Answer",
    )


# --------------------------------------------------------------------------- files and hub


class _RowView(dict):
    """One row of a batch for ``str.format_map``; a missing column is a clear error."""

    def __init__(self, batch, i):
        super().__init__()
        self.batch, self.i = batch, i

    def __missing__(self, key):
        if key not in self.batch:
            raise ColumnError(
                f"question_template names column {{{key}}}, which the data does not have; "
                f"it has: {', '.join(repr(c) for c in self.batch)}."
            )
        value = self.batch[key][self.i]
        return "" if value is None else value


def _fields_batch(batch, question_field, answer_field, template, extract):
    n = len(next(iter(batch.values())))
    if template:
        questions = [template.format_map(_RowView(batch, i)).strip() for i in range(n)]
    else:
        questions = [None if q is None else str(q).strip() for q in batch[question_field]]
    out = {"question": [q or None for q in questions]}
    if answer_field:
        raw = batch[answer_field]
        if extract == "gsm8k":
            pairs = [split_gsm8k(a) for a in raw]
            out["answer"] = [p[1] for p in pairs]
            out["rationale"] = [p[0] for p in pairs]
        elif extract == "boxed":
            out["answer"] = [last_boxed(a) for a in raw]
        else:
            out["answer"] = [as_text(a) for a in raw]
        out[SOURCE] = [None if a is None else str(a) for a in raw]
    return out


_EXTRACT_FIX = {
    "gsm8k": "Its text has no '#### <number>' line.",
    "boxed": r"Its text has no complete \boxed{...}.",
    None: "The gold answer is empty.",
}


def _map_fields(ds, *, what, question_field, answer_field, question_template, extract,
                filters, bad_answers, shuffle, seed, limit, fix):
    if extract not in _EXTRACT_FIX:
        raise DatasetError(f"{what}: extract must be 'gsm8k', 'boxed' or None, got {extract!r}.")
    if extract and not answer_field:
        raise DatasetError(f"{what}: extract={extract!r} needs answer_field= (the column to extract from).")
    needed = ([] if question_template else [question_field]) + ([answer_field] if answer_field else [])
    require_columns(ds, needed, what, fix)
    ds = apply_filters(ds, filters, what)
    # the mapped question column replaces its source; a mapped answer column stays as it was
    removed = [question_field] if not question_template and question_field != "question" else []
    ds = ds.map(
        _fields_batch, batched=True, remove_columns=removed,
        fn_kwargs=dict(question_field=question_field, answer_field=answer_field,
                       template=question_template, extract=extract),
        desc="Mapping fields",
    )
    return _finish(
        ds, what=what, bad_answers=bad_answers,
        fix=_EXTRACT_FIX[extract] + (f" Check answer_field={answer_field!r}." if answer_field else ""),
        shuffle=shuffle, seed=seed, limit=limit, label=answer_field or "question",
    )


def load_files(
    split: str = "train",
    *,
    path: str | None = None,
    question_field: str = "question",
    answer_field: str | None = "answer",
    question_template: str | None = None,
    extract: Extract | None = None,
    filters: dict | None = None,
    limit: int | None = None,
    shuffle: bool = False,
    seed: int = 0,
    bad_answers: BadAnswers = "skip",
):
    """Local jsonl/json/csv/parquet (a file, glob or folder) with question/answer field mapping.

    :param path: ``data.jsonl``, ``data/*.parquet``, or a folder of split-named files.
    :param question_field: the column holding the question (becomes ``question``).
    :param answer_field: the column holding the gold answer (becomes ``answer``; the
        original column is kept); None for data without gold answers.
    :param question_template: build the question from several columns instead,
        e.g. ``"{context}\\n\\n{question}"``.
    :param extract: ``gsm8k`` (number after '####', adds ``rationale``) or ``boxed``
        (last \\boxed{...}) to pull the answer out of a solution text.
    :param filters: keep rows where column == value (or in a list), e.g. ``{"level": 1}``.
    :param split: the file is the split named here; slice it with ``train[:90%]``.
    """
    what = "dataset 'files'"
    if not path:
        raise DatasetError(
            f"{what} needs path= (a .jsonl, .json, .csv or .parquet file, a glob like "
            f"'data/*.jsonl', or a folder)."
        )
    ds = load_source(what=what, split=split, dataset_id=None, path=path)
    return _map_fields(
        ds, what=f"{what} ({path})", question_field=question_field, answer_field=answer_field,
        question_template=question_template, extract=extract, filters=filters,
        bad_answers=bad_answers, shuffle=shuffle, seed=seed, limit=limit,
        fix="Map your columns with question_field=... and answer_field=... (answer_field=None "
            "for data without gold answers).",
    )


def load_hub(
    split: str = "train",
    *,
    dataset_id: str | None = None,
    config: str | None = None,
    question_field: str = "question",
    answer_field: str | None = "answer",
    question_template: str | None = None,
    extract: Extract | None = None,
    filters: dict | None = None,
    path: str | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
    limit: int | None = None,
    shuffle: bool = False,
    seed: int = 0,
    bad_answers: BadAnswers = "skip",
):
    """Any Hugging Face dataset id, config and split, with question/answer field mapping.

    Same mapping parameters as ``files``. Loads with ``trust_remote_code=False``
    unless you pass ``trust_remote_code=True``.

    :param dataset_id: ``org/name`` on the Hub.
    :param path: a local copy in the same layout instead of the Hub.
    """
    what = f"dataset 'hub' ({dataset_id or path})"
    if not dataset_id and not path:
        raise DatasetError(
            "dataset 'hub' needs dataset_id='org/name' (e.g. dataset_id='openai/gsm8k', "
            "config='main') or path= to a local copy."
        )
    ds = load_source(
        what=what, split=split, dataset_id=dataset_id, config=config, path=path,
        revision=revision, trust_remote_code=trust_remote_code,
    )
    return _map_fields(
        ds, what=what, question_field=question_field, answer_field=answer_field,
        question_template=question_template, extract=extract, filters=filters,
        bad_answers=bad_answers, shuffle=shuffle, seed=seed, limit=limit,
        fix="Map its columns with question_field=... and answer_field=... (answer_field=None "
            "for data without gold answers).",
    )


# --------------------------------------------------------------------------- arithmetic


def load_arithmetic(
    split: str = "train",
    *,
    size: int = 1000,
    level: int | list[int] = 1,
    kind: Literal["mixed", "symbol", "word"] = "mixed",
    seed: int = 0,
    shuffle: bool = False,
    limit: int | None = None,
):
    """Synthetic arithmetic, offline and seeded: level 1 ("What is 7 + 5?") to 5; exact integer answers.

    Levels: 1 one +/- on numbers to 20; 2 one operation to 100 (times tables for
    x and /); 3 two operations; 4 three operations to 1000; 5 four operations to
    10000, may go negative. Division is always exact. Columns: ``question``,
    ``answer``, ``level``, ``kind`` (symbol/word), ``expression``.

    :param size: rows generated for the named split (before slicing and limit).
    :param level: a level or a list of levels (mixed evenly).
    :param kind: ``symbol`` ("What is 7 + 5?"), ``word`` (short stories) or ``mixed``.
    :param split: ``train``, ``validation``, ``test``: disjoint problems (80/10/10
        buckets by expression); slices like ``train[:90%]`` work too.
    """
    import datasets

    from . import arithmetic as _arith  # the generator (random, its tables) loads with the data

    what = "dataset 'arithmetic'"
    levels = sorted(_levels(level, set(_arith.LEVELS), what))
    if kind not in _arith.KINDS:
        raise DatasetError(f"{what}: kind must be one of {', '.join(_arith.KINDS)}, got {kind!r}.")
    if size < 1:
        raise DatasetError(f"{what}: size must be a positive number of rows, got {size!r}.")

    def base(name: str):
        if name not in _arith.SPLIT_BUCKETS:
            raise SplitError(
                f"{what} has splits {', '.join(_arith.SPLIT_BUCKETS)} (disjoint problems), "
                f"not {name!r}; slice one instead, e.g. split='train[:90%]'."
            )
        return datasets.Dataset.from_dict(_arith.generate(size, levels, name, seed, kind))

    ds = load_split(split, base, what)
    return shuffle_limit(ds, shuffle, seed, limit, what)


# The difficulty a curriculum steers by (sampling.prompts: frontier): each row's level, chosen with `level`
# (grpo_core.data.difficulty's declaration, a function attribute, which mypy does not model)
load_arithmetic.difficulty = {"column": "level", "param": "level", "example": "level: [1, 2, 3]"}  # type: ignore[attr-defined]

__all__ = ["load_gsm8k", "load_math", "load_medcalc", "load_files", "load_hub", "load_arithmetic"]
