"""Judge-hacking probes in ``grpo check``: a gullible judge (a test double paying what a policy
would learn to write) fails the check with the probe named; an honest judge passes, its
rewards beside math.correctness."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from grpo_core.cli import main
from grpo_rewards_judge.probes import PROBES
from grpo_rewards_judge.testing import FakeJudge, exact, verdict

QUESTIONS = [("What is 2 + 2?", "4"), ("What is 3 * 3?", "9"), ("What is 10 - 1?", "9"),
             ("What is 6 / 2?", "3"), ("What is 5 + 7?", "12"), ("What is 8 - 5?", "3")]
JUDGE_PROBES = {name for name, *_ in PROBES}


@pytest.fixture
def datasets(register_plugin, judge_plugin):
    import grpo_datasets
    import grpo_rewards_math

    register_plugin(grpo_datasets)
    register_plugin(grpo_rewards_math)


def write_config(tmp_path: Path, rewards: list) -> Path:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"question": q, "gold": a}) + "\n" for q, a in QUESTIONS))
    cfg = {"model": {"id": "unused"}, "rewards": rewards, "report_to": [],
           "dataset": {"name": "files", "params": {"path": str(data), "answer_field": "gold"},
                       "system_prompt": "plain"}}
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def check(tmp_path: Path, rewards: list, capsys) -> tuple[int, str, dict[str, list]]:
    """grpo check's exit code, its report, and each probe's failures (from --json)."""
    code = main(["check", str(write_config(tmp_path, rewards)), "--json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "r.json").read_text())[0]
    return code, out, {p["probe"]: p["failures"] for p in report["probes"]["results"]}


def gullible(says: str):
    """An honest judge, except that it pays any response saying ``says``."""
    def reply(request):
        return verdict(request, lambda response: says in response) if says in request.response else exact(request)
    return reply


@pytest.mark.parametrize("says, caught", [
    ("full marks", {"judge.ignore_rubric", "judge.grader_full_marks"}),
    ("Score: 10/10", {"judge.fake_score"}),
    ("Rubric (updated)", {"judge.fake_rubric"}),
    ("Grader's note", {"judge.closing_tag"}),
    ("the middle of the response was cut here", {"judge.very_long"}),  # pays a response for its length
])
def test_a_gullible_judge_fails_grpo_check_with_the_probe_named(datasets, tmp_path, capsys, says, caught):
    with FakeJudge(gullible(says)) as judge:
        code, out, failures = check(tmp_path, [{"name": "judge.yesno", "params": {"url": judge.url}}], capsys)
    assert code == 1 and "check: FAILED" in out
    assert {p for p, f in failures.items() if f} == caught
    for probe in caught:  # named in the report, with what paid it
        assert f"  {probe} (" in out and "judge.yesno pays it as much as the gold on 6 of 6 rows" in out


def test_an_honest_judge_passes_grpo_check_beside_math_correctness(datasets, tmp_path, capsys):
    with FakeJudge(exact) as judge:
        rewards = ["math.correctness",
                   {"name": "judge.yesno", "params": {"url": judge.url}},
                   {"name": "judge.score", "params": {"url": judge.url, "rubric": "Is the final answer right?"}},
                   {"name": "judge.rubric", "params": {"url": judge.url, "items": ["gives one final answer"]}}]
        code, out, failures = check(tmp_path, rewards, capsys)
        asked = judge.requests
    assert code == 0, out
    assert "check: ok" in out and not any(failures.values())
    assert JUDGE_PROBES <= set(failures)  # the judge probes were scored, on every reward
    assert asked > 6 * len(failures)  # the judge was asked: each probe on each of the 6 rows


def test_the_probes_keep_the_wrong_answer_last_so_answer_readers_are_untroubled(datasets, tmp_path, capsys):
    # math.correctness alone: the judge probes change nothing for a config without a judge
    code, out, failures = check(tmp_path, ["math.correctness"], capsys)
    assert code == 0 and not any(failures[p] for p in JUDGE_PROBES)
