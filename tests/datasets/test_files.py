"""files: local jsonl/json/csv/parquet with field mapping, filters and clear errors."""

from __future__ import annotations

import pytest

from grpo_datasets import (
    AnswerError,
    ColumnError,
    DatasetError,
    DatasetFileError,
    EmptyDatasetError,
    SkippedRowsWarning,
)

ROWS = [
    {"prompt_text": "What is 2 + 2?", "gold": 4, "topic": "add", "difficulty": 1},
    {"prompt_text": "What is 3 * 3?", "gold": 9, "topic": "mul", "difficulty": 2},
    {"prompt_text": "What is 10 / 4?", "gold": 2.5, "topic": "div", "difficulty": 2},
    {"prompt_text": "What is 9 - 1?", "gold": 8, "topic": "sub", "difficulty": 1},
]
MAPPING = {"question_field": "prompt_text", "answer_field": "gold"}


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv", "parquet"])
def test_every_format_maps_question_and_answer_as_text(write, load, tmp_path, fmt):
    path = getattr(write, fmt)(tmp_path / f"data.{fmt}", ROWS)
    ds = load("files", path=str(path), **MAPPING)
    assert ds["question"] == ["What is 2 + 2?", "What is 3 * 3?", "What is 10 / 4?", "What is 9 - 1?"]
    assert ds["answer"] == ["4", "9", "2.5", "8"]  # text, integral floats without ".0"
    assert ds["topic"] == ["add", "mul", "div", "sub"]  # other columns pass through
    assert "prompt_text" not in ds.column_names and "gold" in ds.column_names


def test_glob_filters_limit_and_split_slices(write, load, tmp_path):
    write.jsonl(tmp_path / "part-0.jsonl", ROWS[:2])
    write.jsonl(tmp_path / "part-1.jsonl", [{**r, "gold": int(r["gold"] * 2)} for r in ROWS[2:]])
    pattern = str(tmp_path / "part-*.jsonl")
    assert len(load("files", path=pattern, **MAPPING)) == 4
    assert load("files", path=pattern, filters={"difficulty": 2}, **MAPPING)["answer"] == ["9", "5"]
    assert load("files", path=pattern, filters={"topic": ["ADD", "sub"]}, **MAPPING)["answer"] == ["4", "16"]
    assert load("files", path=pattern, limit=1, **MAPPING)["answer"] == ["4"]
    assert load("files", path=pattern, split="train[:50%]", **MAPPING)["answer"] == ["4", "9"]
    assert load("files", path=pattern, split="train[50%:]", **MAPPING)["answer"] == ["5", "16"]


def test_files_that_disagree_on_a_column_type_name_the_cause(write, load, tmp_path):
    write.jsonl(tmp_path / "part-0.jsonl", ROWS[:2])  # gold: int
    write.jsonl(tmp_path / "part-1.jsonl", ROWS[2:])  # gold: 2.5, a float
    with pytest.raises(DatasetFileError, match=r"part-\*\.jsonl.*2\.5.*one type in every row and file"):
        load("files", path=str(tmp_path / "part-*.jsonl"), **MAPPING)


def test_template_extract_and_no_answer(write, load, tmp_path):
    rows = [{"context": "Ann has 3 pens.", "ask": "How many pens?", "solution": "3 pens.\n#### 3"}]
    path = write.jsonl(tmp_path / "d.jsonl", rows)
    ds = load("files", path=str(path), question_template="{context}\n{ask}", answer_field="solution",
              extract="gsm8k")
    assert ds[0]["question"] == "Ann has 3 pens.\nHow many pens?"
    assert (ds[0]["answer"], ds[0]["rationale"]) == ("3", "3 pens.")
    ds = load("files", path=str(path), question_field="ask", answer_field=None)
    assert ds["question"] == ["How many pens?"] and "answer" not in ds.column_names
    with pytest.raises(ColumnError, match=r"\{missing\}.*'context'"):
        load("files", path=str(path), question_template="{missing}", answer_field=None)


def test_missing_file_names_it(load, tmp_path):
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(DatasetFileError, match=r"nope\.jsonl.*does not exist"):
        load("files", path=str(missing))
    with pytest.raises(DatasetFileError, match=r"no file matches"):
        load("files", path=str(tmp_path / "*.parquet"))
    with pytest.raises(DatasetError, match=r"needs path="):
        load("files")


def test_missing_mapped_column_names_it_and_suggests(write, load, tmp_path):
    path = write.jsonl(tmp_path / "d.jsonl", ROWS)
    with pytest.raises(ColumnError, match=r"'golden' \(did you mean 'gold'\?\).*answer_field="):
        load("files", path=str(path), question_field="prompt_text", answer_field="golden")
    with pytest.raises(ColumnError, match=r"columns 'question', 'answer' not found.*'prompt_text'"):
        load("files", path=str(path))


def test_empty_after_filters_is_an_error(write, load, tmp_path):
    path = write.jsonl(tmp_path / "d.jsonl", ROWS)
    with pytest.raises(EmptyDatasetError, match=r"filters \{'topic': 'pow'\} kept none of 4 rows"):
        load("files", path=str(path), filters={"topic": "pow"}, **MAPPING)
    with pytest.raises(ColumnError, match=r"filters.*'level'"):
        load("files", path=str(path), filters={"level": 1}, **MAPPING)


def test_missing_gold_is_counted_never_an_empty_string(write, load, tmp_path):
    rows = [*ROWS[:2], {"prompt_text": "What is 1 + 0?", "gold": None, "topic": "add", "difficulty": 1},
            {"prompt_text": "   ", "gold": 5, "topic": "add", "difficulty": 1}]
    path = write.jsonl(tmp_path / "d.jsonl", rows)
    with pytest.warns(SkippedRowsWarning, match=r"skipped 2 of 4 rows.*1 of 4 rows have no usable gold.*"
                      r"1 of 4 rows have an empty question"):
        ds = load("files", path=str(path), **MAPPING)
    assert ds["answer"] == ["4", "9"]
    with pytest.raises(AnswerError, match=r"row 2"):
        load("files", path=str(path), bad_answers="error", **MAPPING)


def test_unreadable_file(load, tmp_path):
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"question": "a", "answer": 1}\n{not json\n')
    with pytest.raises(DatasetFileError, match=r"broken\.jsonl.*json"):
        load("files", path=str(bad))
    other = tmp_path / "data.xlsx"
    other.write_text("x")
    with pytest.raises(DatasetFileError, match=r"\.xlsx"):
        load("files", path=str(other))
