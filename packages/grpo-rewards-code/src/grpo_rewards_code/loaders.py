"""The registered dataset loaders: signatures, defaults and documentation only.

The plugin's entry point imports this module, so it stays small; ``datasets`` and
the work load on the first call (``adapters``). The core checks parameters
against these signatures, so each has a default and an annotation.

Every loader returns ``question`` (the task as text), ``tests`` (a list of test
snippets the ``code.*`` rewards run), ``test_setup`` (code run before the
completion's, e.g. imports; may be empty) and ``answer`` (the reference
solution, complete code ending in a newline), plus the source's id columns.
"""

from __future__ import annotations


def _impl():
    from . import adapters

    return adapters


def load_mbpp(
    split: str = "train",
    *,
    config: str = "full",
    shown_tests: int | None = 1,
    challenge_tests: bool = False,
    dataset_id: str = "google-research-datasets/mbpp",
    path: str | None = None,
    revision: str | None = None,
    limit: int | None = None,
    shuffle: bool = False,
    seed: int = 0,
):
    """MBPP (Mostly Basic Python Problems): a task in words, asserts as tests, the reference code as answer.

    :param config: ``full`` (columns text, code, test_list, test_setup_code,
        challenge_test_list) or ``sanitized`` (prompt, code, test_list, test_imports).
    :param shown_tests: how many of the row's tests the question shows (they name the
        function and its arguments); None shows all. Every test is still run:
        shown tests can be hard-coded, hidden ones cannot.
    :param challenge_tests: also run ``challenge_test_list`` (full config).
    :param split: ``train``, ``test``, ``validation``, ``prompt``; slices such as ``train[:50]``.
    :param path: a local copy in the hub's layout (a file, or a folder such as
        ``full/train-00000-of-00001.parquet``) instead of the Hub.
    """
    return _impl().mbpp(**locals())


def load_humaneval(
    split: str = "test",
    *,
    dataset_id: str = "openai/openai_humaneval",
    config: str | None = None,
    path: str | None = None,
    revision: str | None = None,
    limit: int | None = None,
    shuffle: bool = False,
    seed: int = 0,
):
    """HumanEval: a function signature and docstring to complete; its check() as the one test.

    ``question`` shows the signature and docstring and asks for the whole function;
    ``tests`` is one program (the row's ``test`` code, then ``check(<entry_point>)``);
    ``test_setup`` is the prompt itself (its imports and helper functions, which some
    tests call; the completion's function then replaces the stub); ``answer`` is
    prompt + canonical solution. HumanEval has only a ``test`` split (164 rows).

    :param path: a local copy in the hub's layout (``openai_humaneval/test-*.parquet``).
    """
    return _impl().humaneval(**locals())


def load_code_files(
    split: str = "train",
    *,
    path: str | None = None,
    question_field: str = "question",
    tests_field: str = "tests",
    answer_field: str | None = "answer",
    setup_field: str | None = None,
    limit: int | None = None,
    shuffle: bool = False,
    seed: int = 0,
):
    """Local JSONL/JSON/Parquet/CSV with a prompt column and a tests column, for the code.* rewards.

    :param path: a file (jsonl, json, csv, tsv, parquet, arrow), a glob (``data/*.jsonl``),
        a folder of split-named files, or a folder saved with ``save_to_disk``.
    :param question_field: the column with the task (becomes ``question``).
    :param tests_field: the column with the tests: a list of snippets, one string
        holding a test program, or (CSV) a JSON list in a string (becomes ``tests``).
    :param answer_field: the reference solution (becomes ``answer``); None when there is none.
    :param setup_field: code to run before the completion's, e.g. imports (becomes ``test_setup``).
    """
    return _impl().code_files(**locals())


__all__ = ["load_mbpp", "load_humaneval", "load_code_files"]
