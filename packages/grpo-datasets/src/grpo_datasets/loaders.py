"""The registered loaders: signatures, defaults and documentation only.

This module is what the plugin entry point imports, so it stays small: the work
(and ``datasets``) is imported on the first call. The core checks parameters
against these signatures before calling, so every parameter has a default and an
annotation. No return annotation: ``datasets.Dataset`` cannot be resolved without
importing ``datasets``, and an unresolvable hint would switch off those checks.
"""

from __future__ import annotations

from typing import Literal

BadAnswers = Literal["skip", "error"]
Extract = Literal["gsm8k", "boxed"]


def _impl():
    from . import adapters

    return adapters


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
    return _impl().gsm8k(**locals())


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
    return _impl().math(**locals())


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
    return _impl().medcalc(**locals())


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
    return _impl().files(**locals())


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
    return _impl().hub(**locals())


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
    return _impl().arithmetic(**locals())


__all__ = ["load_gsm8k", "load_math", "load_medcalc", "load_files", "load_hub", "load_arithmetic"]
