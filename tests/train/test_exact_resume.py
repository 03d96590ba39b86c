"""Resuming from a checkpoint that falls inside a generation buffer trains, step
for step, exactly what the uninterrupted run trained: the same prompts and the
same completions."""

from __future__ import annotations

import pytest

from .conftest import INTERRUPT, TINY


@pytest.fixture
def trained(monkeypatch):
    """{step: (prompt ids, completion ids)} of every training step (compute_loss inputs)."""
    from trl import GRPOTrainer

    seen: dict[int, tuple] = {}
    original = GRPOTrainer.compute_loss

    def compute_loss(self, model, inputs, *args, **kwargs):
        seen[self.state.global_step + 1] = (inputs["prompt_ids"].tolist(), inputs["completion_ids"].tolist())
        return original(self, model, inputs, *args, **kwargs)

    monkeypatch.setattr(GRPOTrainer, "compute_loss", compute_loss)
    return seen


@pytest.mark.parametrize("extra", [["--steps_per_generation", "2"], ["--num_iterations", "2"]])
def test_resume_inside_a_generation_buffer_replays_the_same_steps(grpo, trained, tmp_path, extra):
    args = (TINY, "--max_steps", "6", "--rewards", "test.digits", "test.interrupt", *extra)
    assert grpo(*args, out=tmp_path / "whole")[0] == 0
    whole = dict(trained)
    assert sorted(whole) == [1, 2, 3, 4, 5, 6]
    trained.clear()

    INTERRUPT.update(at_call=2, calls=0)  # rewards run once per buffer: the 2nd call is step 3's
    code, out, err = grpo(*args, out=tmp_path / "cut")
    assert code == 130, out + err
    assert (tmp_path / "cut" / "checkpoint-3" / "grpo_buffer-rank0.pt").is_file()  # 3 is inside a buffer of 2
    INTERRUPT.update(at_call=None)
    code, out, err = grpo(*args, "--resume", out=tmp_path / "cut")
    assert code == 0, out + err
    assert sorted(trained) == [1, 2, 3, 4, 5, 6]
    for step in range(1, 7):
        assert trained[step] == whole[step], f"step {step} trained something else after the resume"


def test_a_checkpoint_at_a_buffer_boundary_needs_no_buffer(grpo, tmp_path):
    code, out, err = grpo(TINY, "--max_steps", "4", "--steps_per_generation", "2", "--save_strategy", "steps",
                          "--save_steps", "2")
    assert code == 0, out + err
    assert not list((tmp_path / "out" / "checkpoint-2").glob("grpo_buffer*"))
