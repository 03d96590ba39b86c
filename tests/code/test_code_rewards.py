"""code.tests and code.runs on MBPP-style rows, values worked out by hand."""

from __future__ import annotations

import logging

import pytest

from grpo_rewards_code import rewards, sandbox
from grpo_rewards_code.jobs import Limits

FENCE = "```"


def block(code: str) -> str:
    return f"Let me think.\n{FENCE}python\n{code}{FENCE}\n"


# MBPP task 11 (remove the first and last occurrence of a character)
REMOVE_OCC = ['assert remove_Occ("hello","l") == "heo"',
              'assert remove_Occ("abcda","a") == "bcd"',
              'assert remove_Occ("PHP","P") == "H"']
REMOVE_OCC_GOLD = ("def remove_Occ(s,ch):\n    for i in range(len(s)):\n        if (s[i] == ch):\n"
                   "            s = s[0 : i] + s[i + 1:]\n            break\n    for i in range(len(s) - 1,-1,-1):\n"
                   "        if (s[i] == ch):\n            s = s[0 : i] + s[i + 1:]\n            break\n    return s\n")
# MBPP task 3 (identify non-prime numbers)
NOT_PRIME = ["assert is_not_prime(2) == False", "assert is_not_prime(10) == True", "assert is_not_prime(35) == True"]

CASES = [
    # (completion, tests, code.tests, cause)
    (block(REMOVE_OCC_GOLD), REMOVE_OCC, 1.0, "passed"),
    # strip() removes every leading/trailing 'ch': "hello" keeps its l's (fail), "abcda" -> "bcd",
    # "PHP" -> "H": 2 of 3
    (block("def remove_Occ(s, ch):\n    return s.strip(ch)\n"), REMOVE_OCC, 2 / 3, "failed"),
    # even numbers: 2 -> True (want False), 10 -> True, 35 -> False (want True): 1 of 3
    (block("def is_not_prime(n):\n    return n % 2 == 0\n"), NOT_PRIME, 1 / 3, "failed"),
    # a syntax error: nothing runs
    (block("def is_not_prime(n)\n    return n % 2 == 0\n"), NOT_PRIME, 0.0, "syntax_error"),
    # 2 -> False and 10 -> True pass, then 35 never returns: 2 of 3, killed at the time limit
    (block("def is_not_prime(n):\n    while n == 35:\n        pass\n    return n % 5 == 0\n"), NOT_PRIME, 2 / 3,
     "timeout"),
    # stuck on the first test: 0 of 3
    (block("def is_not_prime(n):\n    while True:\n        pass\n"), NOT_PRIME, 0.0, "timeout"),
    # the right function name is missing: every test is a NameError
    (block("def not_prime(n):\n    return n > 2\n"), NOT_PRIME, 0.0, "failed"),
    # prose only
    ("I would loop over the divisors.", NOT_PRIME, 0.0, "no_code"),
]


def test_code_tests_values_worked_out_by_hand(metrics):
    completions = [c for c, _, _, _ in CASES]
    scores = rewards.tests(completions, tests=[t for _, t, _, _ in CASES], timeout=1.0, **metrics.kwargs())
    assert scores == pytest.approx([s for _, _, s, _ in CASES])
    assert metrics.extra["code.tests/cause"] == [c for _, _, _, c in CASES]
    assert metrics.metrics["code.tests/timeouts"] == 2.0
    assert metrics.metrics["code.tests/syntax_errors"] == 1.0
    assert metrics.metrics["code.tests/no_code"] == pytest.approx(1 / 8)
    assert metrics.metrics["code.tests/sandbox_errors"] == 0.0
    assert metrics.extra["code.tests/answer"][0] == REMOVE_OCC_GOLD[:200]  # the code read, cut for the log


def test_all_or_nothing_pays_only_a_full_pass():
    completions = [c for c, _, _, _ in CASES[:3]]
    scores = rewards.tests(completions, tests=[t for _, t, _, _ in CASES[:3]], all_or_nothing=True)
    assert scores == [1.0, 0.0, 0.0]


def test_setup_column_runs_before_the_code_and_conversations_work():
    # MBPP's test_setup_code / test_imports: the tests use math, the completion does not import it
    completion = [{"role": "assistant", "content": block("def area(r):\n    return math.pi * r * r\n")}]
    tests = ["assert math.isclose(area(1), 3.141592653589793)", "assert area(0) == 0"]
    assert rewards.tests([completion], tests=[tests], test_setup=["import math\n"]) == [1.0]
    assert rewards.tests([completion], tests=[tests]) == [0.0]  # NameError: math


def test_a_setup_the_sandbox_cannot_run_is_none_and_logged_not_a_zero(metrics, caplog, monkeypatch):
    monkeypatch.setattr(rewards, "_reported", set())  # logged once per process: start afresh
    # numpy is not in the sandbox (standard library only): the row, not the completion, is at fault
    completion = block("def total(xs):\n    return sum(xs)\n")
    with caplog.at_level(logging.WARNING, logger="grpo_rewards_code"):
        scores = rewards.tests([completion, completion], tests=[["assert total([1, 2]) == 3"], ["assert total(["]],
                               test_setup=["import numpy as np\n", ""], **metrics.kwargs())
    assert scores == [None, 0.0]
    assert metrics.extra["code.tests/cause"] == ["setup_error", "failed"]
    assert metrics.metrics["code.tests/setup_errors"] == 1.0
    assert "test_setup raised ModuleNotFoundError in the sandbox (it has the standard library only)" in caplog.text
    assert "a test of the dataset does not compile" in caplog.text


def test_rows_without_tests_have_no_opinion_and_bad_tests_columns_say_how_to_fix():
    assert rewards.tests([block("x = 1\n")] * 2, tests=[[], None]) == [None, None]
    with pytest.raises(TypeError, match=r"a 'tests' value must be a list of test strings .* got int 3"):
        rewards.tests([block("x = 1\n")], tests=[3])
    with pytest.raises(ValueError, match=r"'tests' has 1 entries for 2 completions"):
        rewards.tests([block("x = 1\n")] * 2, tests=[["assert x"]])


def test_a_group_of_identical_completions_runs_once(monkeypatch):
    calls = []
    real = sandbox.run

    def counting(jobs, *args, **kwargs):
        calls.append(len(jobs))
        return real(jobs, *args, **kwargs)

    monkeypatch.setattr(sandbox, "run", counting)
    gold = block(REMOVE_OCC_GOLD)
    wrong = block("def remove_Occ(s, ch):\n    return s\n")
    assert rewards.tests([gold, wrong, gold, gold], tests=[REMOVE_OCC] * 4) == [1.0, 0.0, 1.0, 1.0]
    assert calls == [2]


def test_code_runs_values(metrics):
    completions = [
        block(REMOVE_OCC_GOLD),  # defines a function: runs
        block(REMOVE_OCC_GOLD + "print(remove_Occ('hello'))\n"),  # the example call raises TypeError
        block("while True:\n    pass\n"),  # killed at the limit
        block("def f(:\n"),  # does not parse
        "no code here",
    ]
    scores = rewards.runs(completions, timeout=1.0, **metrics.kwargs())
    assert scores == [1.0, 0.0, 0.0, 0.0, 0.0]
    assert metrics.extra["code.runs/cause"] == ["ran", "error", "timeout", "syntax_error", "no_code"]
    assert (metrics.metrics["code.runs/timeouts"], metrics.metrics["code.runs/errors"]) == (1.0, 1.0)


def test_a_failing_sandbox_is_none_counted_and_logged_never_a_silent_zero(monkeypatch, metrics, caplog):
    from grpo_rewards_code import backends

    monkeypatch.setattr(rewards, "_reported", set())  # logged once per process: start afresh
    name = sandbox.backend().name  # probed (and cached) while it works
    monkeypatch.setattr(type(backends.get(name)), "argv", lambda self, *args: ["/nonexistent/sandbox"])
    with caplog.at_level(logging.WARNING, logger="grpo_rewards_code"):
        scores = rewards.tests([block(REMOVE_OCC_GOLD), "no code"], tests=[REMOVE_OCC] * 2, sandbox=name,
                               **metrics.kwargs())
    assert scores == [None, 0.0]
    assert metrics.metrics["code.tests/sandbox_errors"] == 1.0
    assert metrics.extra["code.tests/cause"] == ["sandbox_error", "no_code"]
    assert f"cannot start the {name} sandbox" in caplog.text and "scores None" in caplog.text


@pytest.mark.parametrize("spec, message", [
    ("code.tests(timeout=0)", r"timeout=0: give the per-run wall-clock limit in seconds"),
    ("code.tests(memory_mb=10)", r"memory_mb=10: Python itself needs about 30 MB"),
    ("code.runs(workers=0)", r"workers=0: give a positive number of sandboxes"),
    ("code.tests(sandbox='docker')", r"sandbox='docker': choose one of auto, bwrap, unshare, rlimits, sandboxfusion"),
    ("code.tests(sandbox='sandboxfusion')", r"needs endpoint='http://HOST:PORT'"),
])
def test_bad_parameters_fail_when_the_reward_is_bound(code_plugin, spec, message):
    import grpo_core

    with pytest.raises(grpo_core.RewardParamError, match=message):
        grpo_core.compose_rewards([spec])


def test_limits_reach_the_sandbox():
    # memory_mb is the address-space limit: 200 MB of bytes fit in 1024 MB, not in 128 MB
    completion = block("data = bytearray(200 * 1024 * 1024)\ndef f():\n    return len(data)\n")
    test = [["assert f() == 200 * 1024 * 1024"]]
    assert rewards.tests([completion], tests=test) == [1.0]
    assert rewards.tests([completion], tests=test, memory_mb=128) == [0.0]
    assert Limits(timeout=2.5).cpu_seconds == 4
