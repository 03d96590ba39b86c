"""Which part of a completion is the code, and code.format (nothing is run)."""

from __future__ import annotations

import pytest

from grpo_rewards_code.extract import MAX_CODE, extract_code, parses
from grpo_rewards_code.rewards import code_format

FENCE = "```"


@pytest.mark.parametrize("text, code", [
    # the last fenced python block wins
    (f"Try:\n{FENCE}python\nx = 1\n{FENCE}\nBetter:\n{FENCE}python\nx = 2\n{FENCE}\n", "x = 2\n"),
    # untagged, py and python3 blocks count; other languages are skipped
    (f"{FENCE}\nx = 3\n{FENCE}", "x = 3\n"),
    (f"{FENCE}py\nx = 4\n{FENCE}", "x = 4\n"),
    (f"{FENCE}python\nx = 5\n{FENCE}\nOutput:\n{FENCE}text\n5\n{FENCE}", "x = 5\n"),
    # tildes and longer fences; a shorter fence inside a longer one is content
    ("~~~python\nx = 6\n~~~", "x = 6\n"),
    (f"````python\ns = '''\n{FENCE}\n'''\n````", f"s = '''\n{FENCE}\n'''\n"),
    # the <answer> block wins over fences outside it; its own fence if it has one
    (f"{FENCE}python\nx = 0\n{FENCE}\n<answer>\n{FENCE}python\nx = 7\n{FENCE}\n</answer>", "x = 7\n"),
    ("<think>maybe x = 0</think><answer>\n    x = 8\n</answer>", "x = 8\n"),  # dedented
    # CRLF-free, surrounding blank lines dropped, one newline at the end
    (f"{FENCE}python\n\n\ndef f():\n    return 1\n\n{FENCE}", "def f():\n    return 1\n"),
])
def test_the_code_is_the_last_python_block_or_the_answer_block(text, code):
    assert extract_code(text).code == code


@pytest.mark.parametrize("text, why", [
    ("def f(): return 1", "no_code"),  # bare code, no fence
    (f"{FENCE}python\ndef f(): return 1", "no_code"),  # unclosed: a truncated completion
    (f"{FENCE}bash\nrm -rf /\n{FENCE}", "no_code"),
    (f"{FENCE}python\n   \n{FENCE}", "empty"),
    ("<answer></answer>", "empty"),
    (f"{FENCE}python\n" + "x = 1\n" * (MAX_CODE // 6 + 1) + FENCE, "too_long"),
])
def test_no_code_says_why(text, why):
    e = extract_code(text)
    assert (e.code, e.why) == (None, why)


def test_only_the_end_of_a_huge_completion_is_read():
    text = f"{FENCE}python\nx = 'early'\n{FENCE}\n" + "filler " * 100_000 + f"\n{FENCE}python\nx = 'late'\n{FENCE}"
    assert extract_code(text).code == "x = 'late'\n"
    # a block that starts before the last 200,000 characters is cut off: no code
    assert extract_code(f"{FENCE}python\n" + "#" * 300_000 + f"\n{FENCE}").code is None


@pytest.mark.parametrize("code", [
    "-" * 60_000 + "1",  # parser MemoryError
    "a." * 30_000 + "b",  # RecursionError
    "(" * 5_000,
    "x = '\x00'",  # a null byte in source
    "def f(:\n  pass",
])
def test_pathological_code_fails_to_parse_without_harm(code):
    assert parses(code) is False


def test_code_format_scores_presence_and_syntax_without_running(metrics):
    completions = [
        f"{FENCE}python\ndef f(x):\n    return x\n{FENCE}",  # 1.0
        f"{FENCE}python\ndef f(x)\n    return x\n{FENCE}",  # 0.0: missing colon
        "def f(x): return x",  # 0.0: no fence
        f"{FENCE}python\nimport os\nos.remove('/tmp/never-run')\n{FENCE}",  # 1.0: parsed, never run
        [{"role": "assistant", "content": f"{FENCE}python\nx = 1\n{FENCE}"}],  # conversational: 1.0
    ]
    assert code_format(completions, **metrics.kwargs()) == [1.0, 0.0, 0.0, 1.0, 1.0]
    assert metrics.metrics["code.format/no_code"] == pytest.approx(1 / 5)
    assert metrics.extra["code.format/cause"] == ["ok", "syntax_error", "no_code", "ok", "ok"]
