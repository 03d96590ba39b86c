"""mbpp, humaneval and code.files on fixture files in the hub's own layout (offline),
and their reference solutions passing their own tests in the sandbox."""

from __future__ import annotations

import pytest

from grpo_rewards_code import rewards

from .fixtures import HUMANEVAL, MBPP_FULL, humaneval_dir, mbpp_dir

FENCE = "```"


@pytest.fixture
def mbpp(write, tmp_path):
    return mbpp_dir(write, tmp_path / "mbpp")


def test_mbpp_full_rows_become_question_tests_setup_and_answer(load, mbpp):
    ds = load("mbpp", path=str(mbpp))
    assert ds.column_names == ["task_id", "question", "tests", "test_setup", "answer"]
    assert ds["task_id"] == [2, 3, 4, 7]
    # the question shows one test (it names the function); every test is run
    assert ds[1]["question"] == ("Write a python function to identify non-prime numbers.\n"
                                 "Your code should pass this test:\n\nassert is_not_prime(2) == False")
    assert ds[1]["tests"] == MBPP_FULL[1]["test_list"]
    # Windows newlines gone, one newline at the end, trailing spaces of the last line kept
    assert ds[0]["answer"] == ("def similar_elements(test_tup1, test_tup2):\n  res = tuple(set(test_tup1) & "
                               "set(test_tup2))\n  return (res) \n")
    assert ds["test_setup"] == ["", "", "", ""]
    assert load("mbpp", path=str(mbpp), split="test")["task_id"] == [2, 3]
    assert load("mbpp", path=str(mbpp), split="train[1:3]")["task_id"] == [3, 4]


def test_mbpp_options_and_the_sanitized_config(load, mbpp):
    everything = load("mbpp", path=str(mbpp), shown_tests=None, challenge_tests=True)
    assert everything[3]["question"].endswith("these tests:\n\n" + "\n".join(MBPP_FULL[3]["test_list"]))
    assert everything[3]["tests"] == MBPP_FULL[3]["test_list"] + MBPP_FULL[3]["challenge_test_list"]
    hidden = load("mbpp", path=str(mbpp), shown_tests=0)
    assert hidden[0]["question"] == MBPP_FULL[0]["text"]
    sanitized = load("mbpp", path=str(mbpp), config="sanitized")
    assert sanitized["task_id"] == [3, 17]
    assert sanitized[1]["question"].startswith("Write a function that returns the perimeter of a square")
    assert sanitized["test_setup"] == ["", "import math\n"]  # test_imports
    with pytest.raises(Exception, match=r"config='plain'; choose 'full' or 'sanitized'"):
        load("mbpp", path=str(mbpp), config="plain")
    with pytest.raises(Exception, match=r"config='sanitised'; choose 'full' or 'sanitized'"):
        load("mbpp", path=str(mbpp), config="sanitised")


def test_humaneval_rows(load, write, tmp_path):
    ds = load("humaneval", path=str(humaneval_dir(write, tmp_path / "humaneval")))
    assert ds["task_id"] == ["HumanEval/0", "HumanEval/2"]
    row = ds[0]
    assert row["question"].startswith("Write the Python function `has_close_elements` below, whole")
    assert f"{FENCE}python\nfrom typing import List\n\n\ndef has_close_elements(" in row["question"]
    assert row["tests"] == [HUMANEVAL[0]["test"].strip("\n") + "\n\n\ncheck(has_close_elements)"]
    # the prompt runs first (its imports and helpers); the completion's function replaces its stub
    assert row["test_setup"] == HUMANEVAL[0]["prompt"]
    assert ds[1]["test_setup"] == HUMANEVAL[1]["prompt"].lstrip("\n")
    assert row["answer"] == HUMANEVAL[0]["prompt"] + HUMANEVAL[0]["canonical_solution"]
    with pytest.raises(Exception, match=r"no folder for config 'main' under .*; it has: openai_humaneval\. Pass "
                                        r"config= one of them"):
        load("humaneval", path=str(tmp_path / "humaneval"), config="main")


def test_reference_solutions_pass_their_own_tests(load, mbpp, write, tmp_path):
    for ds in (load("mbpp", path=str(mbpp), challenge_tests=True), load("mbpp", path=str(mbpp), config="sanitized"),
               load("humaneval", path=str(humaneval_dir(write, tmp_path / "he")))):
        completions = [f"{FENCE}python\n{a}{FENCE}" for a in ds["answer"]]
        assert rewards.tests(completions, tests=ds["tests"], test_setup=ds["test_setup"]) == [1.0] * len(ds)


def test_code_files_maps_columns_from_jsonl_csv_and_parquet(load, write, tmp_path):
    rows = [{"task": "Add two numbers.", "checks": ["assert add(1, 2) == 3"], "solution": "def add(a, b):\n"
             "    return a + b", "imports": "import math"},
            {"task": "Negate.", "checks": ["assert neg(1) == -1", "assert neg(0) == 0"], "solution": "def neg(x):\n"
             "    return -x", "imports": None}]
    fields = dict(question_field="task", tests_field="checks", answer_field="solution", setup_field="imports")
    for path in (write.jsonl(tmp_path / "a" / "train.jsonl", rows), write.parquet(tmp_path / "b" / "x.parquet", rows)):
        ds = load("code.files", path=str(path), **fields)
        assert ds["question"] == ["Add two numbers.", "Negate."]
        assert ds["tests"] == [["assert add(1, 2) == 3"], ["assert neg(1) == -1", "assert neg(0) == 0"]]
        assert ds["answer"] == ["def add(a, b):\n    return a + b\n", "def neg(x):\n    return -x\n"]
        assert ds["test_setup"] == ["import math\n", ""]
    # CSV holds the tests as a JSON list in a string, or one test program
    csv_rows = [{"question": "Add.", "tests": '["assert add(1, 1) == 2"]', "answer": "def add(a, b): return a + b"},
                {"question": "Neg.", "tests": "assert neg(2) == -2", "answer": "def neg(x): return -x"}]
    ds = load("code.files", path=str(write.csv(tmp_path / "c.csv", csv_rows)))
    assert ds["tests"] == [["assert add(1, 1) == 2"], ["assert neg(2) == -2"]]


def test_code_files_errors_name_the_columns_and_skip_rows_without_tests(load, write, tmp_path):
    path = write.jsonl(tmp_path / "t.jsonl", [{"prompt": "Add.", "tests": ["assert add(1, 1) == 2"]},
                                              {"prompt": "Nothing to check.", "tests": []}])
    with pytest.raises(Exception, match=r"column 'question' not found; the data has: 'prompt', 'tests'\. Map your "
                                        r"columns with question_field="):
        load("code.files", path=str(path), answer_field=None)
    with pytest.raises(Exception, match=r"column 'test' \(did you mean 'tests'\?\) not found"):
        load("code.files", path=str(path), question_field="prompt", tests_field="test", answer_field=None)
    with pytest.warns(UserWarning, match=r"skipped 1 of 2 rows without a question or tests"):
        ds = load("code.files", path=str(path), question_field="prompt", answer_field=None)
    assert ds["question"] == ["Add."]
    with pytest.raises(Exception, match=r"dataset 'code.files' needs path="):
        load("code.files")


def test_humaneval_tests_may_call_the_prompts_helpers(load, write, tmp_path):
    # like HumanEval/32 (find_zero's tests call poly from the prompt): a completion with the
    # function alone still passes, the prompt having run first
    row = {"task_id": "HumanEval/x", "entry_point": "find_zero", "canonical_solution": "    return -c[0] / c[1]\n",
           "prompt": "def poly(c, x):\n    return sum(a * x ** i for i, a in enumerate(c))\n\n\n"
                     "def find_zero(c: list):\n    \"\"\"The zero of a line c[0] + c[1] x.\"\"\"\n",
           "test": "def check(candidate):\n    assert abs(poly([2, 4], candidate([2, 4]))) < 1e-9\n"}
    ds = load("humaneval", path=str(write.parquet(tmp_path / "he" / "test-00000-of-00001.parquet", [row])))
    only_the_function = f"{FENCE}python\ndef find_zero(c):\n    return -c[0] / c[1]\n{FENCE}"
    assert rewards.tests([only_the_function], tests=ds["tests"], test_setup=ds["test_setup"]) == [1.0]
    assert rewards.tests([only_the_function], tests=ds["tests"]) == [0.0]  # NameError: poly


def test_code_adapters_read_what_grpo_datasets_reads(load, tmp_path):
    # one toolkit (grpo_core.datafiles): a .tsv, a save_to_disk folder, and grpo-datasets' errors
    import datasets

    from grpo_core.errors import DatasetFileError, SplitError
    from grpo_rewards_code.adapters import CodeDatasetError

    tsv = tmp_path / "tasks.tsv"
    tsv.write_text('question\ttests\nAdd.\t["assert add(1, 1) == 2"]\nNeg.\tassert neg(2) == -2\n')
    ds = load("code.files", path=str(tsv), split="test", answer_field=None)  # one file named by path=: any split
    assert (ds["question"], ds["tests"]) == (["Add.", "Neg."], [["assert add(1, 1) == 2"], ["assert neg(2) == -2"]])
    saved = tmp_path / "saved"
    datasets.DatasetDict({
        "train": datasets.Dataset.from_list([{"question": "Add.", "tests": ["assert add(1, 1) == 2"]}]),
        "test": datasets.Dataset.from_list([{"question": "Neg.", "tests": ["assert neg(2) == -2"]}]),
    }).save_to_disk(str(saved))
    ds = load("code.files", path=str(saved), split="test", answer_field=None)
    assert (ds["question"], ds["tests"]) == (["Neg."], [["assert neg(2) == -2"]])
    with pytest.raises(SplitError, match=r"has no split 'validation'; it has: train, test\. Pass split='train'"):
        load("code.files", path=str(saved), split="validation", answer_field=None)
    with pytest.raises(DatasetFileError, match=r"data file '.*missing\.jsonl' does not exist") as info:
        load("code.files", path=str(tmp_path / "missing.jsonl"))
    assert isinstance(info.value, CodeDatasetError)  # what this package's users catch still catches it
