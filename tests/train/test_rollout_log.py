"""The rollout log: every scored completion of a run, with each reward's score, the
total and the advantage TRL computed; cut back on --resume; every Nth step or none."""

from __future__ import annotations

import math

import pytest

from grpo_core.trainer import rollout_log

from .conftest import TINY


def by_hand(text: str) -> tuple[float, float, float]:
    """tiny.yaml's rewards on one completion: test.digits (share of digit characters),
    test.short(max_chars=40) = 1 - min(len / 40, 1), and the total 1.0 * digits + 0.5 * short."""
    digits = sum(ch.isdigit() for ch in text) / max(len(text), 1)
    short = 1.0 - min(len(text) / 40, 1.0)
    return digits, short, 1.0 * digits + 0.5 * short


def test_three_steps_log_every_completion_with_its_scores_and_advantage(grpo, tmp_path):
    code, out, err = grpo(TINY, "--max_steps", "3")
    assert code == 0, out + err
    table = rollout_log.read(tmp_path / "out").to_pylist()
    # 3 steps x (per_device_train_batch_size 4 = one group of num_generations 4)
    assert len(table) == 12 and [r["step"] for r in table] == [1] * 4 + [2] * 4 + [3] * 4
    for step in (1, 2, 3):
        group = [r for r in table if r["step"] == step]
        assert len({r["prompt"] for r in group}) == 1 and {r["group"] for r in group} == {0}
        totals = []
        for r in group:
            digits, short, total = by_hand(r["completion"])
            assert r["reward/test.digits"] == pytest.approx(digits, abs=1e-6)
            assert r["reward/test.short"] == pytest.approx(short, abs=1e-6)
            assert r["total"] == pytest.approx(total, abs=1e-6)
            totals.append(total)
        # TRL's advantage: (total - group mean) / (unbiased std + 1e-4)
        mean = sum(totals) / 4
        std = math.sqrt(sum((t - mean) ** 2 for t in totals) / 3)
        for r, t in zip(group, totals):
            assert r["advantage"] == pytest.approx((t - mean) / (std + 1e-4), abs=1e-4)
    first = table[0]
    assert first["prompt"] == f"What is {first['prompt_index']} + 1?"  # the toy set's row, found by its prompt
    assert first["answer"] == str(first["prompt_index"] + 1)  # the row's own columns, for re-scoring
    assert 1 <= first["tokens"] <= 8 and isinstance(first["truncated"], bool)


def test_resume_removes_the_log_after_the_checkpoint(grpo, tmp_path):
    from .conftest import INTERRUPT

    INTERRUPT.update(at_call=2, calls=0, signal="SIGINT")  # Ctrl-C while scoring step 2: checkpoint-2
    code, out, err = grpo(TINY, "--max_steps", "4", "--rewards", "test.digits", "test.interrupt:0", "--no-check")
    assert code == 130, err
    folder = tmp_path / "out" / "rollouts"
    assert [s for s, _ in rollout_log.files(folder)] == [1, 2]
    before = rollout_log.read(tmp_path / "out").to_pylist()
    # What a run that got further leaves and the resumed run does not write again: extra
    # generation rounds of steps 3 and 4 (dynamic sampling's step-N-R files). Only the
    # truncation on --resume removes them.
    for step in (3, 4):
        rollout_log.write(folder, step, [{"step": step, "completion": "from the interrupted run"}], round_=1)
    code, out, err = grpo(TINY, "--max_steps", "4", "--rewards", "test.digits", "test.interrupt:0", "--no-check",
                          "--resume")
    assert code == 0, err
    assert sorted(p.name for p in folder.iterdir()) == [f"step-00000{s}.parquet" for s in (1, 2, 3, 4)]
    table = rollout_log.read(tmp_path / "out").to_pylist()
    assert [r["step"] for r in table] == [1] * 4 + [2] * 4 + [3] * 4 + [4] * 4
    assert "from the interrupted run" not in {r["completion"] for r in table}
    assert table[:8] == before  # the steps up to the checkpoint kept as the first run wrote them


@pytest.mark.parametrize("setting, steps", [("2", [1, 3]), ("every 3", [1, 4]), ("all", [1, 2, 3, 4])])
def test_log_rollouts_keeps_every_nth_step(grpo, tmp_path, setting, steps):
    code, out, err = grpo(TINY, "--max_steps", "4", "--log.rollouts", setting)
    assert code == 0, out + err
    assert [s for s, _ in rollout_log.files(tmp_path / "out" / "rollouts")] == steps


def test_log_rollouts_none_writes_no_log(grpo, tmp_path):
    code, out, err = grpo(TINY, "--max_steps", "2", "--log.rollouts", "none")
    assert code == 0, out + err
    assert not (tmp_path / "out" / "rollouts").exists()


def test_a_bad_setting_names_the_value_and_the_choices(grpo):
    code, out, err = grpo(TINY, "--log.rollouts", "sometimes", "--dry-run")
    assert code == 2 and "log.rollouts is 'sometimes'; use all, none, or a number of steps N" in err
