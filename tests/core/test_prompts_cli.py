"""`grpo prompts list|show`, and error messages that name only commands that exist."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grpo_core import hookimpl
from grpo_core.cli import main
from grpo_core.data.builtins import PLAIN

ROOT = Path(__file__).resolve().parents[2]


class AcmePrompts:
    @hookimpl
    def register_system_prompts(self, register):
        register("acme.terse", "Answer with the number only.", description="Just the number",
                 answer_template="{answer}")
        register("acme.boxed", "Put the answer in \\boxed{}.",
                 answer_template=("{rationale}\n\\boxed{{{answer}}}", "\\boxed{{{answer}}}"))
        register("acme.free", "Say anything.")


@pytest.fixture
def acme(register_plugin):
    register_plugin(AcmePrompts(), name="acme")


def run(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_list_is_a_table_of_every_prompt_with_its_distribution(acme, capsys):
    rc, out, _ = run(capsys, "prompts", "list")
    assert rc == 0
    rows = [re.split(r"\s{2,}", line) for line in out.splitlines()]
    assert rows[0] == ["name", "distribution", "description"]
    assert rows[2:] == [  # sorted by name; a plugin registered in process has no distribution
        ["acme.boxed", "-"],
        ["acme.free", "-"],
        ["acme.terse", "-", "Just the number"],
        ["plain", "grpo-core", "Step-by-step reasoning, final line 'Answer: <answer>' (no tags)"],
    ]


def test_list_json_carries_text_and_answer_templates(acme, capsys):
    rc, out, _ = run(capsys, "prompts", "list", "--json")
    assert rc == 0
    by_name = {p["name"]: p for p in json.loads(out)}
    assert by_name["plain"]["text"] == PLAIN
    assert by_name["plain"]["answer_templates"] == ["Answer: {answer}"]
    assert by_name["plain"]["distribution"] == "grpo-core"
    assert by_name["acme.boxed"]["answer_templates"] == ["{rationale}\n\\boxed{{{answer}}}",
                                                         "\\boxed{{{answer}}}"]
    assert by_name["acme.free"]["answer_templates"] == []
    assert by_name["acme.terse"]["plugin"] == "acme"


def test_show_prints_the_text_and_the_answer_template(capsys):
    rc, out, _ = run(capsys, "prompts", "show", "plain")
    assert rc == 0
    assert out.splitlines()[0] == "plain  (plugin 'grpo_core.data.builtins' (distribution grpo-core), version 0.1.0)"
    assert f"Text:\n  {PLAIN}\n" in out
    assert out.rstrip().endswith("Answer template (a few-shot answer and `grpo check`'s gold completion):\n"
                                 "  Answer: {answer}")


def test_show_lists_several_templates_in_the_order_they_are_tried(acme, capsys):
    _, out, _ = run(capsys, "prompts", "show", "acme.boxed")
    assert out.split("\nAnswer templates")[1] == (
        " (2; the first whose fields the row has is used):\n"
        "  [1]\n    {rationale}\n    \\boxed{{{answer}}}\n"
        "  [2]\n    \\boxed{{{answer}}}\n")


def test_show_says_when_a_prompt_has_no_template(acme, capsys):
    _, out, _ = run(capsys, "prompts", "show", "acme.free")
    assert "Answer template: none (few-shot answers and `grpo check` use the bare {answer})" in out


def test_show_json(acme, capsys):
    _, out, _ = run(capsys, "prompts", "show", "acme.terse", "--json")
    assert json.loads(out) == {"name": "acme.terse", "plugin": "acme", "distribution": None,
                               "version": None, "description": "Just the number",
                               "text": "Answer with the number only.", "answer_templates": ["{answer}"]}


# difflib ratios against 'acme.tersee': acme.terse 20/21, acme.free 16/20, acme.boxed 12/21 (cutoff 0.5)
UNKNOWN = ("unknown system prompt 'acme.tersee'. Closest registered: acme.terse, acme.free, acme.boxed. "
           "List them with `grpo prompts list`.")


def test_an_unknown_prompt_names_the_closest_and_the_command_that_lists_them(acme, capsys):
    rc, out, err = run(capsys, "prompts", "show", "acme.tersee")
    assert rc == 2 and out == ""
    assert err == f"Error: {UNKNOWN}\n"


def test_a_config_naming_an_unknown_prompt_gets_the_same_message(acme):
    from grpo_core.data.datasets import build_prompt, resolve_system_prompt
    from grpo_core.errors import UnknownNameError

    with pytest.raises(UnknownNameError) as info:
        resolve_system_prompt("acme.tersee")
    assert str(info.value) == UNKNOWN
    assert resolve_system_prompt("acme.terse") == ("Answer with the number only.", "{answer}")
    assert build_prompt("2+2?", "Think.")[0] == {"role": "system", "content": "Think."}  # text passes


def test_prompts_commands_import_neither_torch_nor_trl():
    code = (
        "import sys; from grpo_core.cli import main\n"
        "main(['prompts', 'list']); main(['prompts', 'show', 'plain'])\n"
        "heavy = [m for m in ('torch', 'trl', 'transformers', 'datasets') if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "HEAVY []" in out.stderr, out.stderr


def _commands_named() -> dict[tuple[str, ...], set[str]]:
    """Every `grpo COMMAND [ACTION]` written in backticks in the code, the docs and the README."""
    files = [*ROOT.glob("packages/*/src/**/*.py"), *ROOT.glob("docs/*.md"), ROOT / "README.md",
             *ROOT.glob("examples/**/*.md")]
    found: dict[tuple[str, ...], set[str]] = {}
    for path in files:
        for match in re.finditer(r"`grpo ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?", path.read_text()):
            words = tuple(w for w in match.groups() if w)
            found.setdefault(words, set()).add(str(path.relative_to(ROOT)))
    return found


def test_messages_and_docs_name_only_commands_that_exist(capsys, register_plugin):
    import grpo_acme
    import grpo_rewards_judge

    register_plugin(grpo_acme, name="acme")  # the guide's example plugin adds `grpo acme-lengths`
    register_plugin(grpo_rewards_judge, name="judge")  # and the judge's `grpo judge calibrate`
    found = _commands_named()
    assert ("prompts", "list") in found and ("rewards", "check") in found  # the scan reads them
    missing = {}
    for words, where in found.items():
        try:
            main([*words, "--help"])
        except SystemExit as exc:
            if exc.code != 0:
                missing[" ".join(words)] = sorted(where)
    capsys.readouterr()
    assert missing == {}
