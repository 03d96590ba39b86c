"""gsm8k on local copies in openai/gsm8k's layout (question, answer '... #### n')."""

from __future__ import annotations

import pytest

from grpo_datasets import (
    AnswerError,
    ColumnError,
    DatasetFileError,
    EmptyDatasetError,
    SkippedRowsWarning,
)

ROWS = [
    {
        "question": "Natalia sold clips to 48 of her friends in April, and then she sold half as many "
        "clips in May. How many clips did Natalia sell altogether in April and May?",
        "answer": "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
        "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72",
    },
    {
        "question": "A shop sells 617 pens on Monday and 617 on Tuesday. How many pens in all?",
        "answer": "617+617 = <<617+617=1234>>1,234 pens.\n#### 1,234",
    },
    {
        "question": "Weng earns $12 an hour for babysitting. Yesterday, she did 90 minutes of "
        "babysitting. How much did she earn?",
        "answer": "Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.\nShe earned 0.2 x 90 = "
        "$<<0.2*90=18>>18.\n#### 18",
    },
    {
        "question": "A city has 1,000 blocks of 1,000 people. How many people live there?",
        "answer": "1,000 x 1,000 = <<1000*1000=1000000>>1,000,000\n#### 1,000,000",
    },
]


@pytest.fixture
def gsm8k_dir(write, tmp_path):
    """The hub repository's own layout: main/ and socratic/ folders of split-named parquet."""
    write.parquet(tmp_path / "gsm8k" / "main" / "train-00000-of-00001.parquet", ROWS)
    write.parquet(tmp_path / "gsm8k" / "main" / "test-00000-of-00001.parquet", ROWS[:1])
    socratic = [{**r, "question": "(socratic) " + r["question"]} for r in ROWS[:2]]
    write.parquet(tmp_path / "gsm8k" / "socratic" / "train-00000-of-00001.parquet", socratic)
    return tmp_path / "gsm8k"


def test_answers_are_the_number_after_the_marker_without_separators(write, load, tmp_path):
    path = write.jsonl(tmp_path / "train.jsonl", ROWS)
    ds = load("gsm8k", path=str(path))
    assert ds["answer"] == ["72", "1234", "18", "1000000"]
    assert ds["question"][0].startswith("Natalia sold clips")
    assert ds[0]["rationale"] == (
        "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
        "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May."
    )
    assert set(ds.column_names) == {"question", "answer", "rationale"}


def test_hub_layout_folder_with_config_and_split(load, gsm8k_dir):
    assert load("gsm8k", path=str(gsm8k_dir))["answer"] == ["72", "1234", "18", "1000000"]
    assert load("gsm8k", path=str(gsm8k_dir), split="test")["answer"] == ["72"]
    socratic = load("gsm8k", path=str(gsm8k_dir), config="socratic")
    assert socratic["question"][0].startswith("(socratic)")
    assert len(socratic) == 2
    with pytest.raises(DatasetFileError, match=r"no folder for config 'mian'.*main, socratic"):
        load("gsm8k", path=str(gsm8k_dir), config="mian")


def test_split_slices_limit_and_shuffle(load, gsm8k_dir):
    head = load("gsm8k", path=str(gsm8k_dir), split="train[:75%]")
    tail = load("gsm8k", path=str(gsm8k_dir), split="train[75%:]")
    assert head["answer"] == ["72", "1234", "18"]
    assert tail["answer"] == ["1000000"]
    assert load("gsm8k", path=str(gsm8k_dir), limit=2)["answer"] == ["72", "1234"]
    a = load("gsm8k", path=str(gsm8k_dir), shuffle=True, seed=3)["answer"]
    b = load("gsm8k", path=str(gsm8k_dir), shuffle=True, seed=3)["answer"]
    assert a == b and sorted(a) == sorted(["72", "1234", "18", "1000000"])


def test_row_without_marker_is_a_counted_skip_or_an_error(write, load, tmp_path):
    rows = ROWS[:2] + [{"question": "Broken row?", "answer": "The answer is 7."}]
    path = write.jsonl(tmp_path / "train.jsonl", rows)
    with pytest.warns(SkippedRowsWarning, match=r"skipped 1 of 3 rows.*in 'answer'.*row 2.*The answer is 7") as caught:
        ds = load("gsm8k", path=str(path))
    assert caught[0].filename == __file__  # points at the caller's line, not inside grpo
    assert ds["answer"] == ["72", "1234"]
    assert "" not in ds["answer"]
    with pytest.raises(AnswerError, match=r"1 of 3 rows.*'####"):
        load("gsm8k", path=str(path), bad_answers="error")


def test_every_row_bad_is_an_error_not_an_empty_dataset(write, load, tmp_path):
    path = write.jsonl(tmp_path / "train.jsonl", [{"question": "q", "answer": "no marker"}])
    with pytest.raises(EmptyDatasetError, match="every row"):
        load("gsm8k", path=str(path))


def test_wrong_layout_names_the_columns_and_the_fix(write, load, tmp_path):
    path = write.jsonl(tmp_path / "train.jsonl", [{"problem": "1+1?", "solution": "#### 2"}])
    with pytest.raises(ColumnError, match=r"'question'.*'answer'.*'problem'.*question_field="):
        load("gsm8k", path=str(path))


def test_hub_call_is_plain_load_dataset_without_remote_code(load, monkeypatch):
    import datasets

    calls = []

    def fake_load_dataset(path, name=None, **kwargs):
        calls.append((path, name, kwargs))
        return datasets.Dataset.from_list(ROWS)

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    ds = load("gsm8k", split="test[:2]")
    assert ds["answer"] == ["72", "1234"]
    assert calls == [("openai/gsm8k", "main", {"split": "test", "revision": None, "trust_remote_code": False})]
    load("gsm8k", trust_remote_code=True)
    assert calls[-1][2]["trust_remote_code"] is True


@pytest.mark.parametrize("system_prompt", ["plain", "xml"])
def test_grpo_check_passes_on_the_fixture(load, gsm8k_dir, reward_check, system_prompt):
    report = reward_check(load("gsm8k", path=str(gsm8k_dir)), ["math.correctness:2", "format.xml_soft:0.5"],
                          system_prompt)
    assert report.ok, [g.short for g in report.gold] + [p.failures for p in report.probes]
    assert report.gold[0].share == 1.0
