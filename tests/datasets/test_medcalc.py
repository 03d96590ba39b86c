"""medcalc on a local copy in ncbi/MedCalc-Bench-v1.0's layout."""

from __future__ import annotations

import pytest

from grpo_datasets import AnswerError, ColumnError, EmptyDatasetError


def _row(n, calc_id, calc, category, output, note, question, answer, lower, upper):
    return {
        "Row Number": n,
        "Calculator ID": calc_id,
        "Calculator Name": calc,
        "Category": category,
        "Output Type": output,
        "Note ID": f"pmc-{n}",
        "Note Type": "Extracted",
        "Patient Note": note,
        "Question": question,
        "Relevant Entities": '{"age": [45, "years"]}',
        "Ground Truth Answer": answer,
        "Lower Limit": lower,
        "Upper Limit": upper,
        "Ground Truth Explanation": f"Step-by-step explanation {n}.",
    }


ROWS = [
    _row(1, 2, "Creatinine Clearance (Cockcroft-Gault Equation)", "lab", "decimal",
         "A 45-year-old man, 80 kg, serum creatinine 1.2 mg/dL.",
         "What is the patient's Creatinine Clearance using the Cockcroft-Gault Equation in terms of mL/min?",
         "88.889", "84.444", "93.333"),
    _row(2, 4, "CHA2DS2-VASc Score for Atrial Fibrillation Stroke Risk", "risk", "integer",
         "A 72-year-old woman with hypertension and atrial fibrillation.",
         "What is the patient's CHA2DS2-VASc Score?", "4", "4", "4"),
    _row(3, 13, "Estimated Due Date", "date", "date",
         "The patient's last menstrual period was on 05/03/2023. Her cycle length is 28 days.",
         "Using Naegele's Rule, what is the patient's estimated due date?",
         "02/07/2024", "02/07/2024", "02/07/2024"),
]


@pytest.fixture
def medcalc(write, tmp_path):
    root = tmp_path / "MedCalc-Bench-v1.0"
    write.parquet(root / "data" / "train-00000-of-00001.parquet", ROWS)
    write.parquet(root / "data" / "test-00000-of-00001.parquet", ROWS[1:2])
    return root


def test_question_is_note_plus_question_and_limits_pass_through(load, medcalc):
    ds = load("medcalc", path=str(medcalc))
    assert len(ds) == 3
    first = ds[0]
    assert first["question"] == (
        "Patient note:\nA 45-year-old man, 80 kg, serum creatinine 1.2 mg/dL.\n\n"
        "Question: What is the patient's Creatinine Clearance using the Cockcroft-Gault Equation "
        "in terms of mL/min?"
    )
    assert first["answer"] == "88.889"
    assert (first["lower"], first["upper"]) == (84.444, 93.333)
    assert first["calculator"] == "Creatinine Clearance (Cockcroft-Gault Equation)"
    assert first["calculator_id"] == 2
    assert first["category"] == "lab"
    assert first["explanation"] == "Step-by-step explanation 1."
    # a date answer keeps its text; its limits are not numbers, so they are None, never 0
    assert ds[2]["answer"] == "02/07/2024"
    assert (ds[2]["lower"], ds[2]["upper"]) == (None, None)
    for gone in ("Patient Note", "Question", "Ground Truth Answer", "Lower Limit", "Upper Limit"):
        assert gone not in ds.column_names


def test_hub_snapshot_with_the_same_split_twice_reads_the_parquet(write, load, medcalc):
    # the repository also carries CSV copies and metadata; the parquet files win, nothing doubles
    write.csv(medcalc / "train_data.csv", [{**ROWS[0], "Ground Truth Answer": "csv copy"}])
    (medcalc / "dataset_infos.json").write_text("{}")
    (medcalc / ".cache").mkdir()
    write.parquet(medcalc / ".cache" / "train-junk.parquet", [{"junk": 1}])
    assert load("medcalc", path=str(medcalc))["answer"] == ["88.889", "4", "02/07/2024"]


def test_split_and_filters(load, medcalc):
    assert load("medcalc", path=str(medcalc), split="test")["answer"] == ["4"]
    assert load("medcalc", path=str(medcalc), numeric_only=True)["answer"] == ["88.889", "4"]
    assert load("medcalc", path=str(medcalc), category="RISK")["answer"] == ["4"]
    assert load("medcalc", path=str(medcalc), calculator=13)["answer"] == ["02/07/2024"]
    by_name = load("medcalc", path=str(medcalc), calculator=["estimated due date", "nothing"])
    assert by_name["answer"] == ["02/07/2024"]
    with pytest.raises(EmptyDatasetError, match="calculator 'HAS-BLED'"):
        load("medcalc", path=str(medcalc), calculator="HAS-BLED")


def test_csv_copy_without_limit_columns(write, load, tmp_path):
    rows = [{k: v for k, v in r.items() if k not in ("Lower Limit", "Upper Limit")} for r in ROWS[:2]]
    path = write.csv(tmp_path / "train_data.csv", rows)
    ds = load("medcalc", path=str(path))
    assert ds["answer"] == ["88.889", "4"]
    assert ds["lower"] == [None, None]


def test_empty_gold_answer(write, load, tmp_path):
    rows = [ROWS[0], {**ROWS[1], "Ground Truth Answer": ""}]
    path = write.parquet(tmp_path / "train.parquet", rows)
    with pytest.warns(UserWarning, match=r"skipped 1 of 2 rows"):
        assert load("medcalc", path=str(path))["answer"] == ["88.889"]
    with pytest.raises(AnswerError, match="row 1"):
        load("medcalc", path=str(path), bad_answers="error")


def test_wrong_layout(write, load, tmp_path):
    path = write.jsonl(tmp_path / "x.jsonl", [{"note": "n", "question": "q", "answer": "1"}])
    with pytest.raises(ColumnError, match=r"'Patient Note'.*question_template="):
        load("medcalc", path=str(path))


def test_grpo_check_passes_on_the_fixture(load, medcalc, reward_check):
    report = reward_check(load("medcalc", path=str(medcalc)), ["math.correctness"], "plain")
    assert report.ok, [g.short for g in report.gold] + [p.failures for p in report.probes]
