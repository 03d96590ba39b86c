"""What a run says and leaves when it fails: a checkpoint whose save a full disk cut short
is never called saved, and the line names the one --resume uses; a re-run without --resume
that fails before it saved anything to continue from leaves the finished run where it was."""

from __future__ import annotations

import errno
import json

import pytest

from .conftest import TINY


def steps_of(run):
    return [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines() if '"reward"' in line]


@pytest.fixture
def full_disk(monkeypatch):
    """``full_disk("checkpoint-2/optimizer.pt")``: torch.save of a path ending so raises
    ENOSPC, as a full disk does (the files written before it stay, as on a real disk)."""
    import torch

    original = torch.save

    def arm(suffix: str):
        def save(obj, f, *args, **kwargs):
            if str(f).endswith(suffix):
                raise OSError(errno.ENOSPC, "No space left on device", str(f))
            return original(obj, f, *args, **kwargs)

        monkeypatch.setattr(torch, "save", save)

    return arm


@pytest.fixture
def crash_in_step(monkeypatch):
    """``crash_in_step(n)``: step n's loss raises once, as a lost device would."""
    from trl import GRPOTrainer

    original = GRPOTrainer.compute_loss

    def arm(step: int):
        raised = []

        def compute_loss(self, model, inputs, *args, **kwargs):
            if self.state.global_step == step - 1 and not raised:
                raised.append(RuntimeError(f"device lost during step {step}"))
                raise raised[0]
            return original(self, model, inputs, *args, **kwargs)

        monkeypatch.setattr(GRPOTrainer, "compute_loss", compute_loss)

    return arm


def test_a_checkpoint_cut_short_by_a_full_disk_is_not_called_saved(grpo, tmp_path, full_disk, monkeypatch):
    """Checkpoint 2's optimizer hits a full disk: its weights are written, the rest is not.
    The message says the save failed, sets the partial folder aside, names checkpoint-1 as
    the one --resume uses; --resume does use it and finishes the run."""
    args = (TINY, "--max_steps", "3", "--save_strategy", "steps", "--save_steps", "1")
    full_disk("checkpoint-2/optimizer.pt")
    code, out, err = grpo(*args)
    run = tmp_path / "out"
    assert code == 2 and "Error: cannot write or read" in err and "the disk is full" in err, out + err
    assert "Saved " not in out and "Continue with" not in out
    [line] = [x for x in out.splitlines() if x.startswith("Saving checkpoint-2 (step 2) failed: ")]
    assert "No space left on device" in line
    assert "Its partial folder is now checkpoint-2.incomplete (incomplete, never resumed from" in line
    assert line.endswith(f"The last complete checkpoint is {run / 'checkpoint-1'} (step 1): --resume continues "
                         f"from it: grpo train {TINY} --max_steps 3 --save_strategy steps --save_steps 1 "
                         f"--model.id {line.split('--model.id ')[1].split()[0]} --output_dir {run} --resume")
    partial = run / "checkpoint-2.incomplete"
    assert (partial / "adapter_model.safetensors").is_file() and not (partial / "optimizer.pt").exists()
    assert not (run / "checkpoint-2").exists() and (run / "checkpoint-1" / "optimizer.pt").is_file()
    assert not (run / "README.md").exists()  # TRL's generic card, written at each checkpoint before, is not

    monkeypatch.undo()  # the disk has room again
    code, out, err = grpo(*args, "--resume")
    assert code == 0, out + err
    assert f"Resuming from {run / 'checkpoint-1'} (step 1)." in out
    assert [x.split()[1] for x in out.splitlines() if x.startswith("step ")] == ["2/3", "3/3"]
    assert steps_of(run) == [1, 2, 3] and (run / "adapter" / "adapter_model.safetensors").is_file()
    assert "for 3 steps on the `toy` dataset" in (run / "README.md").read_text()  # grpo's card, once finished


def test_a_failed_rerun_leaves_the_finished_run_where_it_was(grpo, tmp_path, capsys, monkeypatch, full_disk,
                                                            crash_in_step):
    """The same command again without --resume moves the finished run aside to start fresh.
    When the new run then stops before saving anything --resume continues (the model fails
    to load; or step 2 crashes and the disk is too full to save step 1), the finished run is
    back in its folder; a new run that did save a checkpoint stays, the finished one aside."""
    import grpo_core.run.train

    run = tmp_path / "out"
    assert grpo(TINY)[0] == 0
    finished = (run / "adapter" / "adapter_model.safetensors").read_bytes()

    def no_memory(*args, **kwargs):
        raise RuntimeError("CUDA out of memory (loading the model)")

    monkeypatch.setattr(grpo_core.run.train, "load_model", no_memory)
    with pytest.raises(RuntimeError, match="out of memory"):
        grpo(TINY)
    out = capsys.readouterr().out
    assert f"{run} held an earlier run: moved it to {tmp_path / 'out.1'}." in out
    assert (f"This run stopped before saving anything --resume could continue, so the earlier run is back in {run}, "
            f"where it was.") in out.splitlines()
    assert (run / "adapter" / "adapter_model.safetensors").read_bytes() == finished and steps_of(run) == [1, 2]
    assert not (tmp_path / "out.1").exists()  # the failed run wrote only its config: nothing to keep
    monkeypatch.undo()

    crash_in_step(2)
    full_disk("checkpoint-1/optimizer.pt")
    with pytest.raises(RuntimeError, match="device lost during step 2"):
        grpo(TINY, "--max_steps", "3")
    out = capsys.readouterr().out
    attempt = tmp_path / "out.2"  # out.1 held the finished run while the failed one was moved aside
    assert (f"This run stopped before saving anything --resume could continue, so the earlier run is back in {run}, "
            f"where it was; what this run wrote is in {attempt}.") in out.splitlines()
    assert (run / "adapter" / "adapter_model.safetensors").read_bytes() == finished and steps_of(run) == [1, 2]
    assert steps_of(attempt) == [1] and (attempt / "checkpoint-1.incomplete").is_dir()  # kept: its step 1
    assert not (attempt / "checkpoint-1").exists() and not (tmp_path / "out.1").exists()
    monkeypatch.undo()

    crash_in_step(2)  # step 1 is saved after the crash: the new run can be continued, so it stays
    with pytest.raises(RuntimeError, match="device lost during step 2"):
        grpo(TINY, "--max_steps", "3")
    out = capsys.readouterr().out
    assert "the earlier run is back" not in out and f"Saved {run / 'checkpoint-1'} (step 1" in out
    assert (tmp_path / "out.1" / "adapter" / "adapter_model.safetensors").read_bytes() == finished
    assert (run / "checkpoint-1" / "trainer_state.json").is_file() and steps_of(run) == [1]
