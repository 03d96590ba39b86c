"""grpo check on code datasets: the gold (the reference solution in the ``code``
prompt's python block) passes its tests, and no reward-hacking probe earns
code.tests without the right code."""

from __future__ import annotations

import pytest

from .fixtures import humaneval_dir, mbpp_dir

# probes that carry the right answer (the gold repeated, after long reasoning, bare)
RIGHT = {"repeated_blocks": 1.0, "overlong": 1.0, "wrong_format": 0.0}


@pytest.mark.parametrize("name", ["mbpp", "humaneval"])
def test_gold_passes_and_no_probe_without_the_right_code_scores(load, write, tmp_path, name):
    import grpo_core
    from grpo_core.checks.checks import check_stage
    from grpo_core.data.datasets import build_prompts, resolve_system_prompt

    root = (mbpp_dir if name == "mbpp" else humaneval_dir)(write, tmp_path / name)
    ds = build_prompts(load(name, path=str(root)), "code")
    funcs, weights = grpo_core.compose_rewards(["code.tests"])
    report = check_stage("main", funcs, weights, ds, resolve_system_prompt("code")[1])
    assert report.ok
    assert [(g.name, g.share) for g in report.gold] == [("code.tests", 1.0)]
    means = {p.probe.name: p.means["code.tests"] for p in report.probes}
    # 'gold or wrong' would often still run as code ("return x or 0"); the answers end in a
    # newline, so the hedge lands on a line of its own and does not parse
    assert means.pop("or_hedge") == 0.0
    assert {k: means.pop(k) for k in RIGHT} == RIGHT  # a bare solution is not in the asked format
    assert means and set(means.values()) == {0.0}, means


def _openr1_rows(answer: bool):
    """open-r1's verifiable-coding-problems shape: a statement, stdin/stdout cases, no gold column
    (``answer=True``: the reference program as the gold)."""
    import datasets

    cases = {"language": "python", "test_cases": [{"input": "4\n", "output": "5\n", "type": "stdin_stdout"},
                                                  {"input": "9\n", "output": "10\n", "type": "stdin_stdout"}]}
    row = {"question": "Read n and print n + 1.", "verification_info": cases}
    if answer:
        # two lines: a one-line gold makes the math-minded probes valid programs ("0, print(...)")
        row["answer"] = "n = int(input())\nprint(n + 1)\n"
    return datasets.Dataset.from_list([row] * 4)


def test_stdin_stdout_rows_without_a_gold_are_not_self_tested_and_with_one_pass(code_plugin):
    import grpo_core
    from grpo_core.checks.checks import check_stage
    from grpo_core.data.datasets import build_prompts, resolve_system_prompt

    funcs, weights = grpo_core.compose_rewards(["code.tests"])
    template = resolve_system_prompt("code")[1]
    report = check_stage("main", funcs, weights, build_prompts(_openr1_rows(False), "code"), template)
    assert report.ok  # code.tests pays 0.0 to every completion tried: no gold to show it can pay
    (gold,) = report.gold
    assert gold.skipped == "the rows have no gold answer ('answer' or 'solution' column): not checked"
    assert report.flat == {}
    report = check_stage("main", funcs, weights, build_prompts(_openr1_rows(True), "code"), template)
    assert report.ok and [(g.name, g.share, g.skipped) for g in report.gold] == [("code.tests", 1.0, None)]
