"""Reading a run's rollout log: `grpo rollouts` finds a planted hack, `grpo score --input
RUN_DIR` re-scores the log per step, and the manifest says when a reward's code changed."""

from __future__ import annotations

import json

import pytest
import yaml

from grpo_core.cli import main
from grpo_core.runfiles import rollouts as rollout_log


def record(step, group, completion, correct, brevity, answer="7", extra=""):
    """A log row as grpo train writes it: weights 1.0 (math.correctness) and 0.5 (brevity)."""
    total = correct + 0.5 * brevity
    return {"step": step, "stage": "main", "round": 0, "group": group, "prompt_index": group,
            "prompt": f"What is 3 + 4? ({group})", "completion": completion, "tokens": 3, "truncated": False,
            "tool_calls": 0, "reward/math.correctness": correct, "reward/test.brevity": brevity, "total": total,
            "advantage": 0.0, "extra/math.correctness/answer": extra, "answer": answer}


@pytest.fixture
def planted(tmp_path):
    """Two honest steps: in every group the best total is a right answer (1.45)."""
    run = tmp_path / "run"
    folder = run / rollout_log.FOLDER
    rollout_log.write(folder, 1, [
        record(1, 0, "", 0.0, 1.0), record(1, 0, "3 + 4 = 7 so the answer is 7", 1.0, 0.2, extra="7"),
        record(1, 0, "It is 8", 0.0, 0.6, extra="8"), record(1, 0, "7", 1.0, 0.9, extra="7"),
        record(1, 1, "7", 1.0, 0.9, extra="7"), record(1, 1, "6", 0.0, 0.9, extra="6"),
        record(1, 1, "maybe 7 or 8", 0.0, 0.5, extra=""), record(1, 1, "I think 7", 1.0, 0.6, extra="7")])
    rollout_log.write(folder, 2, [record(2, 0, "7", 1.0, 0.9, extra="7"), record(2, 0, "8", 0.0, 0.9, extra="8"),
                                  record(2, 0, "7.", 1.0, 0.8, extra="7"), record(2, 0, "9", 0.0, 0.9, extra="9")])
    (run / "config.yaml").write_text(yaml.safe_dump({"rewards": ["math.correctness:1", "test.brevity:0.5"]}))
    return run


def test_suspect_finds_the_planted_hack_and_only_it(planted, installed_plugins, capsys):
    # steps 1 and 2 are honest: each group's best total (1.45) is a right answer. Step 3 is the hack:
    folder = planted / rollout_log.FOLDER
    rollout_log.write(folder, 3, [record(3, 0, "", 0.0, 4.0), record(3, 0, "7", 1.0, 0.9, extra="7"),
                                  record(3, 0, "It is 7", 1.0, 0.5, extra="7"), record(3, 0, "8", 0.0, 0.9, extra="8")])
    assert main(["rollouts", str(planted), "--suspect", "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    # step 3 group 0: totals 0 + 0.5 * 4 = 2.0 (the empty answer), 1.45, 1.25, 0.45: the empty one wins, wrong
    assert [(r["step"], r["group"], r["completion"]) for r in rows] == [(3, 0, "")]


def test_empty_lists_empty_answers_and_where_compares_a_score(planted, installed_plugins, capsys):
    assert main(["rollouts", str(planted), "--empty", "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    # the empty completion (its answer column is empty too) and "maybe 7 or 8" (no answer found)
    assert [r["completion"] for r in rows] == ["", "maybe 7 or 8"]
    assert main(["rollouts", str(planted), "--where", "test.brevity>=0.9", "--step", "2", "--json"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["completion"] for r in rows] == ["7", "8", "9"]  # brevity 0.9, 0.9, 0.8 (no), 0.9


def test_without_a_filter_each_steps_best_and_worst_are_shown(planted, capsys):
    assert main(["rollouts", str(planted), "--groups", "1"]) == 0
    out = capsys.readouterr().out
    # step 1 group 0: best "7" (1.45), worst "It is 8" (0.3)
    assert "step 1\n  group 0" in out and "best : '7'" in out and "worst: 'It is 8'" in out
    assert "group 1" not in out  # one group per step asked for


def test_score_input_rescores_the_log_per_step_with_groups_from_the_log(planted, installed_plugins, capsys,
                                                                       register_plugin):
    import types

    import grpo_core

    def brevity(completions, **kwargs):
        """1 / (1 + characters): the shorter, the more."""
        return [1.0 / (1 + len(grpo_core.completion_text(c))) for c in completions]

    mod = types.ModuleType("brevity_plugin")
    mod.register_rewards = grpo_core.hookimpl(lambda register: register("test.brevity", brevity))
    register_plugin(mod, name="brevity_plugin")
    assert main(["score", "--input", str(planted), "--rewards", "math.correctness", "--against",
                 "math.correctness", "test.brevity:5", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    # step 1 group 0 under --rewards: correctness [0, 1, 0, 1] -> the best are the two right ones (rows 2, 4);
    # with brevity x5: "" scores 0 + 5/1 = 5.0, "7" 1 + 5/2 = 3.5: the best becomes the empty answer -> changed.
    # step 1 group 1: [1, 0, 0, 1]; with brevity "7" 3.5, "6" 2.5, "maybe 7 or 8" 0.38, "I think 7" 1.5: best "7",
    # which was already among the best -> unchanged. Step 2: [1, 0, 1, 0]; "7" 3.5, "8" 2.5, "7." 2.67, "9" 2.5:
    # best "7", unchanged.
    assert summary["per_step"]["1"]["groups"] == 2 and summary["per_step"]["1"]["best_changed"] == 1
    assert summary["per_step"]["2"]["groups"] == 1 and summary["per_step"]["2"]["best_changed"] == 0
    assert summary["comparison"]["groups"] == 3


def test_the_manifest_says_when_a_local_rewards_source_changed(tmp_path, installed_plugins, capsys, monkeypatch):
    from grpo_core.checks import manifest
    from grpo_core.config.load import load_config

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.py").write_text("def short(completions, **kwargs):\n    return [1.0 for _ in completions]\n")
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"question": "What is 3 + 4?", "answer": "7"}) + "\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"model": {"id": "unused"}, "rewards": ["math.correctness", "mine.py:short:0.1"],
                                   "dataset": {"name": "files", "params": {"path": str(data)}}}))
    run = tmp_path / "run"
    run.mkdir()
    manifest.write(run, manifest.build(load_config(cfg)))
    recorded = manifest.read(run)["rewards"]
    assert recorded["short"]["source"].endswith("mine.py") and len(recorded["short"]["sha256"]) == 64
    assert recorded["math.correctness"]["distribution"] == "grpo-rewards-math"
    assert manifest.differences_near(run / "rollouts", ["math.correctness", "mine.py:short:0.1"]) == []
    (tmp_path / "mine.py").write_text("def short(completions, **kwargs):\n    return [0.5 for _ in completions]\n")
    import sys

    sys.modules.pop("mine", None)
    lines = manifest.differences_near(run / "rollouts", ["math.correctness", "mine.py:short:0.1"])
    assert len(lines) == 1 and lines[0].startswith("short: the run used ") and "scores may differ" in lines[0]


def test_a_run_dir_that_does_not_exist_is_named_and_a_run_without_a_log_says_why(tmp_path, capsys):
    assert main(["rollouts", str(tmp_path / "nope")]) == 2
    assert f"{tmp_path / 'nope'} does not exist" in capsys.readouterr().err
    (tmp_path / "run").mkdir()
    assert main(["rollouts", str(tmp_path / "run")]) == 2
    assert "log.rollouts: none" in capsys.readouterr().err


def test_a_completion_on_the_console_is_one_line_of_at_most_n_characters():
    from grpo_core.base.tables import clip

    assert clip("7 +\n\t5  =\r\n12") == "7 + 5 = 12"  # whitespace folded: one line
    long = "x" * 30
    assert clip(long, 10) == "xxxxxxx..." and len(clip(long, 10)) == 10  # 7 characters and the ellipsis
    assert clip("x" * 10, 10) == "x" * 10  # exactly n: kept whole
    assert clip(12, 10) == "12"  # an answer column that is a number
