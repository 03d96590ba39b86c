"""`grpo train` end to end on a tiny random model: outputs, resume, Ctrl-C, stages."""

from __future__ import annotations

import json

import pytest

from .conftest import TINY


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def step_records(path):
    return [r for r in records(path) if "reward" in r]


def test_two_steps_through_the_cli_write_adapter_metrics_and_plot(grpo, tmp_path):
    code, out, err = grpo(TINY)
    assert code == 0, err
    run = tmp_path / "out"
    assert (run / "adapter" / "adapter_config.json").is_file()
    assert (run / "adapter" / "tokenizer_config.json").is_file()
    steps = step_records(run / "metrics.jsonl")
    assert [r["step"] for r in steps] == [1, 2]
    assert {"rewards/test.digits/mean", "rewards/test.short/mean", "reward", "reward_std"} <= set(steps[0])
    png = (run / "rewards.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    resolved = (run / "config.yaml").read_text()
    assert "test.digits:1" in resolved and "test.short(max_chars=40):0.5" in resolved
    # one summary line per step on the console
    lines = [line for line in out.splitlines() if line.startswith("step ")]
    assert [line.split()[1] for line in lines] == ["1/2", "2/2"]
    assert "test.digits" in lines[0] and "reward" in lines[0]


def test_ctrl_c_saves_a_checkpoint_and_resume_continues_at_the_next_step(grpo, tmp_path):
    from .conftest import INTERRUPT

    INTERRUPT["at_call"] = 2  # Ctrl-C during step 2
    args = (TINY, "--max_steps", "4", "--rewards", "test.digits", "test.interrupt:0")
    code, out, err = grpo(*args)
    assert code == 130, out + err
    run = tmp_path / "out"
    assert (run / "checkpoint-2" / "adapter_model.safetensors").is_file()
    assert [r["step"] for r in step_records(run / "metrics.jsonl")] == [1, 2]
    assert "--resume" in out + err

    code, out, err = grpo(*args, "--resume")
    assert code == 0, err
    assert "checkpoint-2" in out + err
    lines = [line.split()[1] for line in out.splitlines() if line.startswith("step ")]
    assert lines == ["3/4", "4/4"]  # no step lost, none repeated
    assert [r["step"] for r in step_records(run / "metrics.jsonl")] == [1, 2, 3, 4]
    assert json.loads((run / "progress.json").read_text())["stages"]["main"]["steps"] == 4
    assert (run / "adapter" / "adapter_model.safetensors").is_file()


def test_sigterm_checkpoints_like_ctrl_c_and_exits_143(grpo, tmp_path):
    import signal

    from .conftest import INTERRUPT

    INTERRUPT.update(at_call=2, signal="SIGTERM")  # a cluster preempting the job during step 2
    before = signal.getsignal(signal.SIGTERM)
    args = (TINY, "--max_steps", "3", "--rewards", "test.digits", "test.interrupt:0")
    code, out, err = grpo(*args)
    assert code == 143, out + err
    assert "Interrupted (SIGTERM)" in err and "--resume" in out + err
    assert (tmp_path / "out" / "checkpoint-2" / "adapter_model.safetensors").is_file()
    assert signal.getsignal(signal.SIGTERM) is before  # the handler is put back
    INTERRUPT.update(at_call=None)
    code, out, err = grpo(*args, "--resume")
    assert code == 0 and [line.split()[1] for line in out.splitlines() if line.startswith("step ")] == ["3/3"]



def test_an_ordinary_crash_inside_a_step_leaves_a_checkpoint_and_resume_finishes(grpo, tmp_path, capsys,
                                                                                 monkeypatch):
    """A plain exception (not grpo's own) escaping step 3 after its sampling and scoring,
    as a lost device would: the last completed step is saved, the line says how to go
    on, the error itself reaches the caller, and --resume trains steps 3 and 4."""
    from trl import GRPOTrainer

    original, raised = GRPOTrainer.compute_loss, []

    def compute_loss(self, model, inputs, *args, **kwargs):
        if self.state.global_step == 2 and not raised:  # step 3's loss, once
            raised.append(RuntimeError("device lost during step 3"))
            raise raised[0]
        return original(self, model, inputs, *args, **kwargs)

    monkeypatch.setattr(GRPOTrainer, "compute_loss", compute_loss)
    args = (TINY, "--max_steps", "4")  # tiny.yaml saves no checkpoints of its own (save_strategy: no)
    with pytest.raises(RuntimeError) as crash:
        grpo(*args)
    assert crash.value is raised[0] and crash.traceback[-1].name == "compute_loss"  # unwrapped, its own traceback
    run, out = tmp_path / "out", capsys.readouterr().out
    ckpt = run / "checkpoint-2"
    saved = [line for line in out.splitlines() if line.startswith(f"Saved {ckpt} (step 2, the last completed step)")]
    assert len(saved) == 1 and saved[0].endswith("--resume"), out
    assert json.loads((ckpt / "trainer_state.json").read_text())["global_step"] == 2
    assert (ckpt / "adapter_model.safetensors").is_file() and (ckpt / "optimizer.pt").is_file()
    assert not (run / "checkpoint-3").exists() and not (run / "adapter").exists()

    code, out, err = grpo(*args, "--resume")
    assert code == 0, out + err
    assert f"Resuming from {ckpt} (step 2)." in out
    assert [line.split()[1] for line in out.splitlines() if line.startswith("step ")] == ["3/4", "4/4"]
    assert [r["step"] for r in step_records(run / "metrics.jsonl")] == [1, 2, 3, 4]
    assert (run / "adapter" / "adapter_model.safetensors").is_file()

TWO_STAGES = """
model: {{dtype: float32}}
lora: {{r: 4, lora_alpha: 8}}
dataset: {{name: toy}}
per_device_train_batch_size: 4
num_generations: 4
max_completion_length: 8
gradient_checkpointing: false
save_strategy: "no"
seed: 0
stages:
  - name: format
    rewards: [test.short]
    max_steps: 2
  - name: answer
    rewards: ["test.exact:2.0", {extra}]
    max_steps: 2
    learning_rate: 5.0e-4
"""


def test_two_stages_switch_rewards_at_the_boundary(grpo, tmp_path):
    cfg = tmp_path / "two.yaml"
    cfg.write_text(TWO_STAGES.format(extra="test.digits"))
    code, out, err = grpo(cfg, "--no-check")  # test.exact pays hedges: see test_a_hedge_paying_reward_...
    assert code == 0, err
    run = tmp_path / "out"
    steps = step_records(run / "metrics.jsonl")
    assert [(r["step"], r["stage"]) for r in steps] == [(1, "format"), (2, "format"), (3, "answer"), (4, "answer")]
    for r in steps[:2]:
        assert "rewards/test.short/mean" in r and "rewards/test.exact/mean" not in r
    for r in steps[2:]:
        assert "rewards/test.exact/mean" in r and "rewards/test.short/mean" not in r
        assert r["learning_rate"] <= 5.0e-4
    assert (run / "format" / "final" / "adapter_config.json").is_file()
    assert (run / "adapter" / "adapter_config.json").is_file()
    assert json.loads((run / "progress.json").read_text())["stages"]["answer"]["steps"] == 2


def test_resume_in_the_second_stage_skips_the_first(grpo, tmp_path):
    from .conftest import INTERRUPT

    cfg = tmp_path / "two.yaml"
    cfg.write_text(TWO_STAGES.format(extra="test.interrupt").replace("max_steps: 2\n    learning", "max_steps: 3\n    learning"))
    INTERRUPT["at_call"] = 2  # during the second step of stage 'answer' (global step 4)
    code, out, err = grpo(cfg, "--no-check")
    assert code == 130, err
    run = tmp_path / "out"
    assert (run / "answer" / "checkpoint-2").is_dir()
    code, out, err = grpo(cfg, "--resume", "--no-check")
    assert code == 0, err
    assert "Stage 'format' already finished" in out + err
    assert [line.split()[1] for line in out.splitlines() if line.startswith("step ")] == ["5/5"]
    assert [r["step"] for r in step_records(run / "metrics.jsonl")] == [1, 2, 3, 4, 5]


def test_full_fine_tune_writes_the_model(grpo, tmp_path):
    code, out, err = grpo(TINY, "--lora", "false", "--max_steps", "1")
    assert code == 0, err
    assert (tmp_path / "out" / "model" / "config.json").is_file()
    assert not (tmp_path / "out" / "adapter").exists()


def test_merged_model_on_request(grpo, tmp_path):
    code, out, err = grpo(TINY, "--lora.merge", "true", "--max_steps", "1")
    assert code == 0, err
    merged = tmp_path / "out" / "merged"
    assert (merged / "config.json").is_file() and not (merged / "adapter_config.json").exists()


def test_eval_split_is_evaluated(grpo, tmp_path):
    code, out, err = grpo(TINY, "--dataset.eval_split", "test", "--dataset.eval_params.size", "4",
                          "--eval_strategy", "steps", "--eval_steps", "2")
    assert code == 0, err
    recs = records(tmp_path / "out" / "metrics.jsonl")
    assert any("eval_reward" in r for r in recs)


def test_dry_run_checks_without_loading_a_model(grpo, tmp_path, monkeypatch):
    import grpo_core.config.models

    monkeypatch.setattr(grpo_core.config.models, "load", lambda *a, **k: pytest.fail("model loaded"))
    code, out, err = grpo(TINY, "--dry-run")
    assert code == 0, err
    assert "stage 'main': 2 steps" in out and "test.short:0.5" in out


def test_rerun_without_resume_moves_the_earlier_run_aside(grpo, tmp_path):
    assert grpo(TINY, "--save_strategy", "steps", "--save_steps", "1")[0] == 0
    out = tmp_path / "out"
    assert (out / "checkpoint-2").is_dir()
    code, stdout, err = grpo(TINY, "--max_steps", "1")  # the same command, --resume forgotten
    assert code == 0, err
    aside = tmp_path / "out.1"
    assert f"{out} held an earlier run: moved it to {aside}" in stdout and "--overwrite" in stdout
    # nothing of the first run is lost, and the new one starts clean
    assert (aside / "checkpoint-1").is_dir() and (aside / "checkpoint-2").is_dir()
    assert [r["step"] for r in step_records(aside / "metrics.jsonl")] == [1, 2]
    assert [r["step"] for r in step_records(out / "metrics.jsonl")] == [1]
    assert grpo(TINY, "--max_steps", "1")[0] == 0
    assert (tmp_path / "out.2" / "adapter").is_dir()  # a third run: out.2


def test_overwrite_replaces_the_earlier_run(grpo, tmp_path):
    assert grpo(TINY, "--save_strategy", "steps", "--save_steps", "1")[0] == 0
    code, stdout, err = grpo(TINY, "--max_steps", "1", "--overwrite")
    assert code == 0, err
    assert "--overwrite: removed the earlier run" in stdout
    assert not (tmp_path / "out" / "checkpoint-2").exists() and not (tmp_path / "out.1").exists()
    assert [r["step"] for r in step_records(tmp_path / "out" / "metrics.jsonl")] == [1]


def test_third_party_example_reward_composes_by_name_in_training(grpo, register_plugin, tmp_path):
    acme = pytest.importorskip("grpo_acme")  # examples/grpo-acme, installed by scripts/setup.sh
    register_plugin(acme, name="acme")
    code, out, err = grpo(TINY, "--rewards", "acme.brevity(max_chars=40):2.0", "test.digits")
    assert code == 0, err
    steps = step_records(tmp_path / "out" / "metrics.jsonl")
    for r in steps:
        brevity, digits = r["rewards/acme.brevity/mean"], r["rewards/test.digits/mean"]
        assert 0.0 <= brevity <= 1.0
        assert r["reward"] == pytest.approx(2.0 * brevity + digits, abs=1e-5)


def test_a_hedge_paying_reward_stops_training_before_the_model(grpo, tmp_path, monkeypatch):
    """test.exact pays any completion that contains the gold, so '7 or 8' earns the
    full 1.0 a right answer earns: grpo check fails it, and nothing is loaded or moved."""
    import grpo_core.config.models

    out = tmp_path / "out"
    out.mkdir()
    (out / "metrics.jsonl").write_text("{}\n")  # an earlier run that must stay where it is
    monkeypatch.setattr(grpo_core.config.models, "load", lambda *a, **k: pytest.fail("model loaded"))
    code, stdout, err = grpo(TINY, "--rewards", "test.exact")
    assert code == 2
    assert "grpo check failed" in err and "--no-check" in err
    failed = {line.split()[0] for line in stdout.splitlines() if line.rstrip().endswith("FAIL")}
    assert {"or_hedge", "boxes", "listed", "maybe", "negated", "retracted"} <= failed
    assert (out / "metrics.jsonl").read_text() == "{}\n" and not (tmp_path / "out.1").exists()
