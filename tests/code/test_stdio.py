"""code.tests on stdin/stdout cases (open-r1's verification_info column), values worked out by hand."""

from __future__ import annotations

import json
import time

import pytest

from grpo_rewards_code import rewards
from grpo_rewards_code.stdio import MAX_CASES, MAX_OUTPUT_BYTES, cases_of, output_matches

FENCE = "```"


def block(code: str) -> str:
    return f"Here it is.\n{FENCE}python\n{code}{FENCE}\n"


def info(*cases: tuple[str, str]) -> dict:
    return {"language": "python", "test_cases": [{"input": i, "output": o, "type": "stdin_stdout"} for i, o in cases]}


# read two numbers, print their sum: 1 + 2 = 3, 5 + 5 = 10
SUM = info(("1 2\n", "3\n"), ("5 5\n", "10\n"))
# read n, print n and n + 1 on two lines: 3 -> "3\n4"
TWO_LINES = info(("3\n", "3\n4\n"))
RIGHT_SUM = block("a, b = map(int, input().split())\nprint(a + b)\n")


def openr1_case_passes(output: str, expected: str) -> bool:
    """open-r1's comparison at commit 1416fa0 (src/open_r1/rewards.py, evaluate_code), verbatim."""
    output = output.strip()
    all_correct = True
    for line1, line2 in zip(output.split("\n"), expected.split("\n")):
        all_correct = all_correct and line1.strip() == line2.strip()
    return all_correct


def test_stdin_stdout_cases_values_worked_out_by_hand(metrics):
    completions = [
        RIGHT_SUM,
        # multiplies when a == 5: 1 + 2 = 3 passes, 5 * 5 = 25 is not 10: 1 of 2
        block("a, b = map(int, input().split())\nprint(a * b if a == 5 else a + b)\n"),
        # trailing spaces and blank lines around the answer are stripped, as in open-r1: 1 of 1
        block("import sys\nn = int(sys.stdin.buffer.read())\nprint('  ', n, '  ')\nprint(n + 1)\nprint()\n"),
        # reads its input with open(0), prints it back: the first case passes only if 3 == "1 2": 0 of 2
        block("print(open(0).read().strip())\n"),
    ]
    scores = rewards.tests(completions, verification_info=[SUM, SUM, TWO_LINES, SUM], timeout=2.0,
                           **metrics.kwargs())
    assert scores == [1.0, 0.5, 1.0, 0.0]
    assert metrics.extra["code.tests/cause"] == ["passed", "failed", "passed", "failed"]
    assert metrics.extra["code.tests/detail"][1] == ("1 of 2 cases passed; case 2 of 2: wrong output "
                                                     "(line 1: expected '10', got '25')")
    assert metrics.extra["code.tests/detail"][3] == ("0 of 2 cases passed; case 1 of 2: wrong output "
                                                     "(line 1: expected '3', got '1 2')")


def test_printing_only_the_first_line_fails_where_open_r1_pays(metrics):
    first_line_only = block("n = int(input())\nprint(n)\n")  # "3", where "3\n4" is expected
    assert openr1_case_passes("3\n", "3\n4\n")  # open-r1's zip stops at the shorter side: it pays 1.0
    assert output_matches("3\n", "3\n4\n") == "printed 1 line(s), expected 2"
    scores = rewards.tests([first_line_only], verification_info=[TWO_LINES], **metrics.kwargs())
    assert scores == [0.0]
    assert metrics.extra["code.tests/detail"] == ["0 of 1 cases passed; case 1 of 1: wrong output "
                                                  "(printed 1 line(s), expected 2)"]


def test_a_nonzero_exit_fails_its_case_and_the_others_still_run(metrics):
    # raises on the first case (a == 1), right on the second: 1 of 2, as open-r1 (it skips the failed case)
    code = block("a, b = map(int, input().split())\nif a == 1:\n    raise ValueError(a)\nprint(a + b)\n")
    exits = block("import sys\nprint(3)\nsys.exit(2)\n")  # right output, exit status 2: 0 of 2
    scores = rewards.tests([code, exits], verification_info=[SUM, SUM], **metrics.kwargs())
    assert scores == [0.5, 0.0]
    assert metrics.extra["code.tests/cause"] == ["error", "error"]
    assert metrics.extra["code.tests/detail"] == ["1 of 2 cases passed; case 1 of 2: exit status 1 (ValueError)",
                                                  "0 of 2 cases passed; case 1 of 2: exit status 2"]
    assert metrics.metrics["code.tests/errors"] == 2.0


def test_an_infinite_loop_hits_the_time_limit_scores_zero_and_does_not_hang(metrics):
    start = time.monotonic()
    scores = rewards.tests([block("while True:\n    pass\n")], verification_info=[SUM], timeout=1.0, workers=2,
                           **metrics.kwargs())
    assert time.monotonic() - start < 15  # two 1 s runs side by side, plus the sandbox's start
    assert scores == [0.0]
    assert metrics.extra["code.tests/cause"] == ["timeout"]
    assert metrics.extra["code.tests/detail"] == ["0 of 2 cases passed; case 1 of 2: killed after the 1 s "
                                                  "wall-clock limit"]
    assert metrics.metrics["code.tests/timeouts"] == 1.0


def test_all_or_nothing_pays_only_when_every_case_passes():
    half = block("a, b = map(int, input().split())\nprint(a * b if a == 5 else a + b)\n")
    assert rewards.tests([RIGHT_SUM, half], verification_info=[SUM, SUM], all_or_nothing=True) == [1.0, 0.0]


def test_verification_info_as_json_text_and_mixed_with_assert_rows():
    # the hub stores verification_info as a JSON string; a row with asserts uses them instead
    add = block("def add(a, b):\n    return a + b\na, b = map(int, input().split())\nprint(a + b)\n")
    scores = rewards.tests([add, add], tests=[[], ["assert add(2, 2) == 4", "assert add(0, 0) == 1"]],
                           verification_info=[json.dumps(SUM), json.dumps(SUM)])
    # row 1: both cases pass. Row 2: its two asserts; add is defined before input() meets an empty
    # stdin (EOFError), so add(2, 2) == 4 passes and add(0, 0) == 1 fails: 1 of 2
    assert scores == [1.0, 0.5]


def test_bad_verification_info_is_an_error_naming_the_value_and_the_fix():
    cpp = {"language": "cpp", "test_cases": [{"input": "", "output": "1", "type": "stdin_stdout"}]}
    with pytest.raises(ValueError, match="language 'cpp'; code.tests runs Python only"):
        rewards.tests([RIGHT_SUM], verification_info=[cpp])
    with pytest.raises(ValueError, match="type 'function_call'; code.tests runs 'stdin_stdout' cases only"):
        rewards.tests([RIGHT_SUM], verification_info=[{"test_cases": [{"input": "", "output": "",
                                                                       "type": "function_call"}]}])
    with pytest.raises(ValueError, match="not valid JSON"):
        rewards.tests([RIGHT_SUM], verification_info=["{'language': 'python'"])
    with pytest.raises(ValueError, match="needs a 'tests' column .* or a 'verification_info' column"):
        rewards.tests([RIGHT_SUM])


def test_cases_are_capped_in_number_and_size():
    many = info(*[(f"{i}\n", f"{i}\n") for i in range(MAX_CASES + 7)])
    assert (len(cases_of(many)), cases_of(many).left_out) == (MAX_CASES, 7)
    big = info(("1\n", "x" * (MAX_OUTPUT_BYTES + 1)), ("1\n", "1\n"))
    assert cases_of(big).cases[0].output == "1\n" and cases_of(big).left_out == 1
    # a row whose every case was too large has no tests left: no opinion
    assert rewards.tests([RIGHT_SUM], verification_info=[info(("", "x" * (MAX_OUTPUT_BYTES + 1)))]) == [None]
