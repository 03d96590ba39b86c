"""A bad command-line value is a message naming it, a non-zero exit and no traceback, before
anything heavy loads: each case run as a real `grpo` process (issue 40's seven)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

RUN = ("import sys\nfrom grpo_core.cli import main\ntry:\n    rc = main(sys.argv[1:])\nexcept SystemExit as e:\n"
       "    rc = e.code\nprint('HEAVY', sorted(m for m in ('torch', 'trl', 'transformers') if m in sys.modules), "
       "file=sys.stderr)\nsys.exit(rc)\n")


def grpo(*args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "GRPO_PLUGINS": "grpo-rewards-math", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", RUN, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=120)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "latin1.jsonl").write_bytes(b'{"completion": "1", "answer": "1"}\n{"completion": "caf\xe9", "answer": "1"}\n')
    (tmp_path / "latin1.csv").write_bytes(b"completion,answer\n1,1\ncaf\xe9,1\n")
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "header.csv").write_text("completion,answer\n")
    (tmp_path / "ok.jsonl").write_text('{"completion": "1", "answer": "1"}\n')
    return tmp_path


SCORE = ("score", "--rewards", "math.correctness", "--input")


@pytest.mark.parametrize("args, message", [
    (SCORE + ("latin1.jsonl",), "Error: latin1.jsonl:2 is not UTF-8 text (byte 0xe9 at column 20); save the file as "
                                "UTF-8.\n"),
    (SCORE + ("latin1.csv",), "Error: latin1.csv:3 is not UTF-8 text (byte 0xe9 at column 4); save the file as UTF-8."),
    (SCORE + ("empty.jsonl",), "Error: --input empty.jsonl holds no completions (no rows)"),
    (SCORE + ("header.csv",), "Error: --input header.csv holds no completions (no rows)"),
    (SCORE + ("ok.jsonl", "--batch-size", "0"), "argument --batch-size: 0 is not a whole number >= 1\n"),
    (("generate", "smollm2-135m", "--prompt", "hi", "--max-new-tokens", "-5"),
     "argument --max-new-tokens: -5 is not a whole number >= 1\n"),
    (("generate", "smollm2-135m", "--prompt", "hi", "-n", "0"), "argument -n/--num: 0 is not a whole number >= 1\n"),
    (("generate", "smollm2-135m", "--prompt", "hi", "--top-p", "1.5"), "argument --top-p: 1.5 is not a number in (0, 1]"),
    (("merge", "adapter", "--output", "merged", "--dtype", "int3"),
     "argument --dtype: 'int3' is not one of auto, float32, bfloat16, float16 (or bf16, fp16, fp32)\n"),
    # a negative time limit turned the limit off, and 0 was silently 120 s; NaN passes a range's comparisons
    *[(("serve", "--rewards", "math.correctness", "--time-limit", value),
       f"argument --time-limit: {value} is not a number > 0 (a reward call is always bounded; for slow rewards give "
       f"more, e.g. 600)\n") for value in ("-1", "0", "nan", "inf")],
    # a port past 65535 was an OverflowError traceback from the socket, after the rewards were built
    (("serve", "--rewards", "math.correctness", "--port", "99999"),
     "argument --port: 99999 is not a whole number in [1, 65535]\n"),
    (("serve", "--rewards", "math.correctness", "--port", "0"), "argument --port: 0 is not a whole number in [1, 65535]"),
    (("serve", "--rewards", "math.correctness", "--port", "http"), "argument --port: 'http' is not a whole number\n"),
    (("models", "pull", "gpt-17"), "Error: 'gpt-17' is not a model alias or a .gguf file: grpo models pull takes one "
                                   "of smollm2-135m"),
    (("models", "pull", "smollm2"), "Error: 'smollm2' is not a model alias (did you mean 'smollm2-135m'?)"),
])
def test_a_bad_value_is_named_with_no_traceback(files, args, message):
    done = grpo(*args, cwd=files)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert "HEAVY []" in done.stderr  # refused before torch, TRL or transformers loads
    assert not (files / "merged").exists()


def test_an_empty_input_leaves_no_output_file(files):
    done = grpo(*SCORE, "empty.jsonl", "--output", "scores.jsonl", cwd=files)
    assert done.returncode == 2
    assert not (files / "scores.jsonl").exists()  # (it was created empty, beside a table of nan and exit 0)


def test_the_good_values_still_run(files):
    done = grpo(*SCORE, "ok.jsonl", "--batch-size", "1", "--output", "scores.jsonl", cwd=files)
    assert done.returncode == 0, done.stderr
    assert "1 completions from ok.jsonl" in done.stdout
    assert (files / "scores.jsonl").read_text().count("\n") == 1
