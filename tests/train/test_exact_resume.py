"""Resuming from a checkpoint that falls inside a generation buffer trains, step
for step, exactly what the uninterrupted run trained: the same prompts and
completions, the same loss, the same adapter weights after every step, and the
same AdamW state at the end."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import TrainerCallback

from .conftest import INTERRUPT, TINY

# Both runs execute the same float32 operations on the same inputs in one process on
# the CPU: they agree to the bit (measured: largest difference 0.0 over 230 tensors).
# The tolerance only forgives a few ULPs, should a BLAS kernel take another code path
# for another memory alignment: 1e-5 relative (~100 float32 ULPs, eps 1.2e-7), and
# 1e-6 of the tensor's largest value absolute, as the tensors' scales differ by 1e9
# (weights ~0.1, exp_avg_sq ~1e-10). A broken resume differs by far more: with AdamW
# restarted from empty moments (optimizer.pt deleted before resuming) every adapter
# weight is off after step 4 (by up to 2e-4..1.2e-3, 0.4..1.0 relative, measured), and
# AdamW's step count is 3, not 6.
RTOL, ATOL = 1e-5, 1e-6


class Recorder(TrainerCallback):
    """The trainable weights after each step, and AdamW's state when training ends."""

    def __init__(self):
        self.weights: dict[int, dict[str, torch.Tensor]] = {}
        self.optimizer: dict | None = None

    def on_step_end(self, args, state, control, model=None, **kw):
        self.weights[state.global_step] = {n: p.detach().clone() for n, p in model.named_parameters()
                                           if p.requires_grad}

    def on_train_end(self, args, state, control, optimizer=None, **kw):
        self.optimizer = {i: {k: v.clone() for k, v in s.items()}
                          for i, s in optimizer.state_dict()["state"].items()}


@pytest.fixture
def batches(monkeypatch):
    """{step: (prompt ids, completion ids)} of every training step (compute_loss inputs)."""
    from trl import GRPOTrainer

    seen: dict[int, tuple] = {}
    original = GRPOTrainer.compute_loss

    def compute_loss(self, model, inputs, *args, **kwargs):
        seen[self.state.global_step + 1] = (inputs["prompt_ids"].tolist(), inputs["completion_ids"].tolist())
        return original(self, model, inputs, *args, **kwargs)

    monkeypatch.setattr(GRPOTrainer, "compute_loss", compute_loss)
    return seen


def close(actual: torch.Tensor, expected: torch.Tensor, where: str) -> None:
    atol = ATOL * float(expected.abs().max())
    torch.testing.assert_close(actual, expected, rtol=RTOL, atol=atol, msg=lambda m: f"{where}: {m}")


def losses(run_dir) -> dict[int, float]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r["loss"] for r in rows if "loss" in r}


@pytest.mark.parametrize("extra", [["--steps_per_generation", "2"], ["--num_iterations", "2"]])
def test_resume_inside_a_generation_buffer_trains_what_the_whole_run_trained(train, batches, tmp_path, extra):
    args = ("--max_steps", "6", "--rewards", "test.digits", "test.short:0.5", "test.interrupt:0", *extra)  # (length: a spread, so every step moves)
    whole = Recorder()
    assert train(*args, out=tmp_path / "whole", callbacks=[whole])[0].exit_code == 0
    whole_batches = dict(batches)
    batches.clear()

    INTERRUPT.update(at_call=2, calls=0)  # rewards run once per buffer of 2 steps: the 2nd call is step 3's
    cut = Recorder()
    result, _ = train(*args, out=tmp_path / "cut", callbacks=[cut])
    assert result.exit_code == 130 and result.global_step == 3
    assert (tmp_path / "cut" / "checkpoint-3" / "grpo_buffer-rank0.pt").is_file()  # 3 is inside a buffer of 2
    INTERRUPT.update(at_call=None)
    result, lines = train(*args, out=tmp_path / "cut", callbacks=[cut], resume=True)
    assert result.exit_code == 0 and result.global_step == 6, lines
    assert any("checkpoint-3 (step 3)" in line for line in lines)

    assert sorted(batches) == sorted(whole_batches) == [1, 2, 3, 4, 5, 6]
    for step in range(1, 7):
        assert batches[step] == whole_batches[step], f"step {step} trained another batch after the resume"
    same_weights_after_each_step(cut, whole)
    same_optimizer_state(cut, whole)
    same_losses(tmp_path / "cut", tmp_path / "whole")


def same_weights_after_each_step(cut: Recorder, whole: Recorder) -> None:
    assert sorted(cut.weights) == [1, 2, 3, 4, 5, 6] and cut.weights[6].keys() == whole.weights[6].keys()
    for step in range(2, 7):  # every step moves the adapter: agreeing after each one is no accident
        assert any(not torch.equal(w, whole.weights[step - 1][n]) for n, w in whole.weights[step].items())
    for step in range(1, 7):
        for name, w in whole.weights[step].items():
            close(cut.weights[step][name], w, f"{name} after step {step}")


def same_optimizer_state(cut: Recorder, whole: Recorder) -> None:
    assert sorted(cut.optimizer) == sorted(whole.optimizer) and len(whole.optimizer) == len(whole.weights[6])
    for i, state in whole.optimizer.items():
        assert int(cut.optimizer[i]["step"]) == int(state["step"]) == 6
        for key in ("exp_avg", "exp_avg_sq"):
            close(cut.optimizer[i][key], state[key], f"AdamW {key} of parameter {i}")


def same_losses(cut_dir, whole_dir) -> None:
    """The loss logged at each step (metrics.jsonl: the resumed run's lines follow the cut one's)."""
    cut, whole = losses(cut_dir), losses(whole_dir)
    assert sorted(cut) == sorted(whole) == [1, 2, 3, 4, 5, 6]
    for step in range(1, 7):
        close(torch.tensor(cut[step]), torch.tensor(whole[step]), f"loss of step {step}")


def test_a_checkpoint_at_a_buffer_boundary_needs_no_buffer(grpo, tmp_path):
    code, out, err = grpo(TINY, "--max_steps", "4", "--steps_per_generation", "2", "--save_strategy", "steps",
                          "--save_steps", "2")
    assert code == 0, out + err
    assert not list((tmp_path / "out" / "checkpoint-2").glob("grpo_buffer*"))
