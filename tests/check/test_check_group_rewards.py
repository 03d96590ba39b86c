"""A group reward, length.relative (Kimi k1.5's length reward within a group), scores the
same small batch alike in `grpo score` (a group column, --group-size), `grpo check` (a
row's completions as one group) and `grpo serve` (/score with group_size).

By hand, 0.5 - (L - min) / (max - min) per group, L in characters:
  group a: "aa" "0" "bb" "xxxxxx" "y"  lengths 2 1 2 6 1, spread 5 -> 0.3 0.5 0.3 -0.5 0.5
  group b: "cccc" "c" "cc"             lengths 4 1 2, spread 3     -> -0.5 0.5 0.1667
"""

from __future__ import annotations

import json

import pytest
import yaml

from grpo_core.cli import main
from tests.serve.test_serve import installed, post, serving  # noqa: F401 - the server fixtures

GROUP_A = ["aa", "0", "bb", "xxxxxx", "y"]
GROUP_B = ["cccc", "c", "cc"]
VALUES_A = [0.3, 0.5, 0.3, -0.5, 0.5]
VALUES_B = [-0.5, 0.5, 0.5 - 1 / 3]


def score(tmp_path, rows, *args):
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code = main(["score", "--rewards", "length.relative", "--input", str(src), "--output", str(out),
                 "--no-progress", *args])
    return code, [json.loads(line)["length.relative"] for line in out.read_text().splitlines()] if code == 0 else None


@pytest.mark.parametrize("column", ["group", "prompt"])
def test_grpo_score_scores_each_group_of_a_column_together(installed_plugins, tmp_path, capsys, column):
    rows = [{"completion": c, column: "a"} for c in GROUP_A] + [{"completion": c, column: "b"} for c in GROUP_B]
    code, values = score(tmp_path, rows)
    assert code == 0 and values == pytest.approx(VALUES_A + VALUES_B)
    # batches of 3 lines are cut between groups only: the same values
    assert score(tmp_path, rows, "--batch-size", "3")[1] == pytest.approx(VALUES_A + VALUES_B)


def test_grpo_score_with_a_group_size(installed_plugins, tmp_path, capsys):
    rows = [{"completion": c} for c in GROUP_B + ["d"] + GROUP_B + ["dddd"]]
    # groups of 4: cccc c cc d (4 1 2 1) and cccc c cc dddd (4 1 2 4)
    code, values = score(tmp_path, rows, "--group-size", "4", "--batch-size", "3")
    assert code == 0 and values == pytest.approx([-0.5, 0.5, 0.5 - 1 / 3, 0.5, -0.5, 0.5, 0.5 - 1 / 3, -0.5])
    capsys.readouterr()
    assert score(tmp_path, rows[:7], "--group-size", "4")[0] == 2
    assert ("the last 3 rows (from line 5) do not fill a group of --group-size 4; a group reward scores whole "
            "groups") in capsys.readouterr().err


def test_grpo_score_asks_which_rows_form_a_group(installed_plugins, tmp_path, capsys):
    code, _ = score(tmp_path, [{"completion": c} for c in GROUP_A])
    assert code == 2
    assert ("length.relative is a group reward: say which rows of " in capsys.readouterr().err)


def test_grpo_serve_scores_each_group_of_a_request_together(serving):  # noqa: F811 - the fixture
    body = {"completions": GROUP_A + GROUP_B, "group_size": [5, 3]}
    with serving(rewards=["length.relative"]) as url:
        status, got = post(url, "/score", json.dumps(body).encode())
        assert status == 200, got
        assert got["scores"]["length.relative"] == pytest.approx(VALUES_A + VALUES_B)
        # by prompts, as TRL lays them out: runs of one prompt
        prompts = ["a"] * 5 + ["b"] * 3
        status, got = post(url, "/score", json.dumps({"completions": GROUP_A + GROUP_B, "prompts": prompts}).encode())
        assert got["scores"]["length.relative"] == pytest.approx(VALUES_A + VALUES_B)
        for bad, words in ((3, "group_size 3 does not divide the 8 completions"),
                           ([5, 2], "add up to 7, not to the 8 completions"),
                           ("5", "'group_size' must be a positive whole number or a list of them")):
            status, got = post(url, "/score", json.dumps({"completions": GROUP_A + GROUP_B,
                                                          "group_size": bad}).encode())
            assert status == 400 and words in got["error"], got
        assert post(url, "/health", b"", method="GET")[1]["status"] == "ok"


def test_grpo_check_scores_a_rows_completions_as_one_group(installed_plugins):
    """One row, gold 'aa' written as '{answer}': the check's group is the gold, its two
    wrong answers ('0' and the shifted 'bb') and the probes, here 'xxxxxx' and 'y': group a."""
    from grpo_core import compose_rewards
    from grpo_core.checks.checks import GROUP_GOLD, gold_self_test, run_probes
    from grpo_core.checks.probes import Probe

    rows = [{"question": "Say aa.", "answer": "aa"}]
    funcs, weights = compose_rewards(["length.relative"])
    probes = [Probe("long", "six x", lambda r: "xxxxxx"), Probe("short", "one y", lambda r: "y")]
    gold, gold_total, results, flat, _ = run_probes(funcs, weights, rows, "{answer}", probes)
    assert gold == {"length.relative": pytest.approx(0.3)} and gold_total == pytest.approx(0.3)
    assert [(r.probe.name, r.means["length.relative"]) for r in results] == [("long", -0.5), ("short", 0.5)]
    assert flat == {}
    # the gold alone is a group of one: not judged on it
    assert gold_self_test(funcs, rows, "{answer}")[0].skipped == GROUP_GOLD


def test_grpo_check_finds_what_a_gated_group_reward_pays_for(installed_plugins, tmp_path, capsys):
    """Next to math.correctness, a length reward in the row's group pays the bare right answer
    ('4', the wrong_format probe: right, and shortest) more than the gold written as the
    plain prompt asks ('Answer: 4'): its total beats the gold's on every row, and the check
    says so. Scored alone (a group of one) the length reward would pay every probe 0."""
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"question": f"What is {i} + {i}?", "gold": str(2 * i)}) + "\n"
                            for i in range(1, 9)))
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(yaml.safe_dump({
        "model": {"id": "unused"}, "report_to": [],
        "rewards": ["math.correctness", "length.relative:0.2 when math.correctness >= 1"],
        "dataset": {"name": "files", "params": {"path": str(data), "answer_field": "gold"}, "system_prompt": "plain"}}))
    assert main(["check", str(cfg), "--json", str(tmp_path / "r.json")]) == 1
    out = capsys.readouterr().out
    assert "wrong_format (the bare right answer, not in the asked format): its total beats the gold's on 8 of 8 " \
           "rows" in out
    report = json.loads((tmp_path / "r.json").read_text())[0]
    gold = {g["reward"]: g for g in report["gold_self_test"]}
    assert gold["math.correctness"]["ok"] and not gold["math.correctness"]["short"]
    assert gold["length.relative"]["skipped"].startswith("a group reward")
    failing = [r["probe"] for r in report["probes"]["results"] if r["failures"]]
    assert failing == ["wrong_format"]
