r"""math on local copies of EleutherAI/hendrycks_math (per-subject folders) and MATH-500."""

from __future__ import annotations

import pytest

from grpo_datasets import DatasetError, EmptyDatasetError, SkippedRowsWarning


def _row(problem, solution, level, type_):
    return {"problem": problem, "level": level, "type": type_, "solution": solution}


ALGEBRA = [
    _row("What is $\\frac{1}{2} \\cdot 1$?", "We have $\\frac{1}{2}\\cdot 1 = \\boxed{\\frac{1}{2}}$.",
         "Level 1", "Algebra"),
    _row("Convert $(3, \\pi/4)$.", "So the point is $\\boxed{\\left( 3, \\frac{\\sqrt{2}}{2} \\right)}$.",
         "Level 4", "Algebra"),
    _row("Broken?", "This solution forgot its box: the answer is 9.", "Level 3", "Algebra"),
]
NUMBER_THEORY = [
    _row("What is $17 \\bmod 6$?", "$17 = 2\\cdot 6 + 5$, so the remainder is $\\boxed 5$.",
         "Level 2", "Number Theory"),
    _row("Which divisors of 2 are there?", "The set is $\\boxed{\\{1, 2\\}}$.", "Level 5", "Number Theory"),
]
COUNTING = [
    _row("How many ways?", "At first $\\boxed{3}$ looks right, but it is $\\fbox{10}$.",
         "Level 5", "Counting & Probability"),
]


@pytest.fixture
def hendrycks(write, tmp_path):
    root = tmp_path / "hendrycks_math"
    write.parquet(root / "algebra" / "train-00000-of-00001.parquet", ALGEBRA)
    write.parquet(root / "number_theory" / "train-00000-of-00001.parquet", NUMBER_THEORY)
    write.parquet(root / "counting_and_probability" / "train-00000-of-00001.parquet", COUNTING)
    write.parquet(root / "algebra" / "test-00000-of-00001.parquet", ALGEBRA[:1])
    return root


def test_answers_are_the_last_box_with_nested_braces(load, hendrycks):
    with pytest.warns(SkippedRowsWarning, match=r"skipped 1 of 6 rows.*forgot its box"):
        ds = load("math", path=str(hendrycks))
    by_question = dict(zip(ds["question"], ds["answer"], strict=True))
    assert by_question == {
        "What is $\\frac{1}{2} \\cdot 1$?": "\\frac{1}{2}",
        "Convert $(3, \\pi/4)$.": "\\left( 3, \\frac{\\sqrt{2}}{2} \\right)",
        "What is $17 \\bmod 6$?": "5",
        "Which divisors of 2 are there?": "\\{1, 2\\}",
        "How many ways?": "10",
    }
    row = ds[ds["question"].index("How many ways?")]
    assert row["level"] == 5 and row["subject"] == "Counting & Probability" and row["type"] == row["subject"]
    assert "\\fbox{10}" in row["solution"]
    assert "problem" not in ds.column_names


def test_level_and_subject_filters(load, hendrycks):
    ds = load("math", path=str(hendrycks), level=[4, 5])  # the boxless level-3 row is filtered first
    assert sorted(ds["level"]) == [4, 5, 5]
    ds = load("math", path=str(hendrycks), subject="number theory")
    assert ds["answer"] == ["5", "\\{1, 2\\}"]
    ds = load("math", path=str(hendrycks), subject=["counting_and_probability"], level=5)
    assert ds["answer"] == ["10"]
    with pytest.raises(EmptyDatasetError, match="subject 'geometry'"):
        load("math", path=str(hendrycks), subject="geometry")
    with pytest.raises(DatasetError, match=r"level must be one of \[1, 2, 3, 4, 5\].*7"):
        load("math", path=str(hendrycks), level=7)


def test_test_split_and_config_folder(load, hendrycks):
    assert load("math", path=str(hendrycks), split="test")["answer"] == ["\\frac{1}{2}"]
    ds = load("math", path=str(hendrycks), config="number_theory")
    assert ds["subject"] == ["Number Theory", "Number Theory"]


def test_math500_layout(write, load, tmp_path):
    rows = [
        {
            "problem": "Find $x$ if $2x = 1$.",
            "solution": "Divide by 2: $x = \\boxed{\\frac12}$.",
            "answer": "\\frac12",
            "subject": "Algebra",
            "level": 2,
            "unique_id": "test/algebra/1.json",
        },
        {
            "problem": "Compute $3!$.",
            "solution": "The answer is six, written without a box.",
            "answer": "6",
            "subject": "Prealgebra",
            "level": 1,
            "unique_id": "test/prealgebra/2.json",
        },
    ]
    path = write.jsonl(tmp_path / "MATH-500" / "test.jsonl", rows)
    ds = load("math", path=str(path), split="test")
    # boxed first; the dataset's own answer column only when the solution has no box
    assert ds["answer"] == ["\\frac12", "6"]
    assert ds["level"] == [2, 1]
    assert ds["subject"] == ["Algebra", "Prealgebra"]
    assert ds["unique_id"] == ["test/algebra/1.json", "test/prealgebra/2.json"]
    assert load("math", path=str(path), split="test", subject="prealgebra")["answer"] == ["6"]


def test_hub_loads_every_subject_config_unless_narrowed(load, monkeypatch):
    import datasets

    calls = []

    def fake_load_dataset(path, name=None, **kwargs):
        calls.append(name)
        return datasets.Dataset.from_list(NUMBER_THEORY if name == "number_theory" else COUNTING)

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    load("math")
    assert calls == [
        "algebra", "counting_and_probability", "geometry", "intermediate_algebra",
        "number_theory", "prealgebra", "precalculus",
    ]
    calls.clear()
    ds = load("math", subject="Number Theory")
    assert calls == ["number_theory"]
    assert ds["answer"] == ["5", "\\{1, 2\\}"]


def test_grpo_check_passes_on_the_fixture(load, hendrycks, reward_check):
    report = reward_check(load("math", path=str(hendrycks)), ["math.correctness"], "xml")
    assert report.ok, [g.short for g in report.gold] + [p.failures for p in report.probes]


def test_math_declares_its_level_and_frontier_steers_by_it(load, hendrycks):
    """MATH's level (1-5) is the difficulty a curriculum reads; loaded with several levels,
    ``frontier`` steers by it from the easiest."""
    from grpo_core.data.difficulty import Difficulty, of_dataset
    from grpo_core.trainer.samplers.base import Pool
    from grpo_core.trainer.samplers.frontier import frontier

    knob = of_dataset("math")
    assert knob == Difficulty("level", param="level", example="level: [1, 2, 3, 4, 5]")
    ds = load("math", path=str(hendrycks), level=[1, 2, 4, 5])
    said: list[str] = []
    f = frontier()
    f.start(Pool(list(range(len(ds))), ds["level"], knob, "math", 0, 4, said.append))
    assert f.level == 1 and said == ["frontier: difficulty from dataset 'math' column 'level' (1 to 5, 4 values), "
                                     "starting at 1; target pass rate 0.5, and each prompt's pass-rate estimate."]
