"""The example plugin's command, `grpo acme-lengths`, run in process as a user runs it."""

from __future__ import annotations

import json

import pytest

from grpo_core.cli import main


@pytest.fixture
def acme(register_plugin):
    import grpo_acme

    register_plugin(grpo_acme, name="acme")


def test_acme_lengths_reports_lengths_and_what_brevity_pays(acme, tmp_path, capsys):
    path = tmp_path / "c.jsonl"
    rows = [{"completion": "x" * 5}, {"completion": [{"role": "assistant", "content": "y" * 100}]},
            {"completion": "z" * 10}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")  # a blank line is skipped
    assert main(["acme-lengths", str(path), "--max-chars", "50"]) == 0
    # brevity at 50: 1 - 5/50 = 0.9, 0.0 (100 >= 50), 1 - 10/50 = 0.8; mean 1.7 / 3
    assert capsys.readouterr().out == (
        "3 completions, characters: median 10, max 100\n"
        "acme.brevity(max_chars=50): mean 0.567, 1 of 3 score 0\n")


@pytest.mark.parametrize("lines, args, message", [
    (None, [], "no such file; give a JSONL file of completions."),
    (['{"completion": "a"}', '["not", "an object"]'], [], "c.jsonl:2 is not a JSON object with a 'completion'."),
    (['{"text": "a"}'], [], "c.jsonl:1 is not a JSON object with a 'completion'."),
    ([""], [], "c.jsonl holds no completions."),
    (['{"completion": "a"}'], ["--max-chars", "0"], "--max-chars must be positive, got 0."),
])
def test_acme_lengths_refuses_bad_input_by_name(acme, tmp_path, capsys, lines, args, message):
    path = tmp_path / "c.jsonl"
    if lines is not None:
        path.write_text("\n".join(lines))
    assert main(["acme-lengths", str(path), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and message in err and "Traceback" not in err
