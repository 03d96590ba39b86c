"""--resume takes what you changed: the advice printed after a non-finite stop can
be followed, and settings a checkpoint cannot take are refused by name."""

from __future__ import annotations

import json

import pytest

from .conftest import TINY


def step_records(path):
    return [r for r in map(json.loads, path.read_text().splitlines()) if "reward" in r]


def test_after_a_blow_up_resume_with_a_lower_learning_rate_reaches_the_last_step(grpo, tmp_path):
    # the scenario: no warm-up, an absurd learning rate, no clipping, default health settings.
    # Step 1's update is finite but wrecks the weights (Adam moves each one by about 1e30); the stop
    # must save the weights from before it, or the advice "--resume with a lower learning rate" fails
    args = (TINY, "--max_steps", "4", "--max_grad_norm", "0", "--warmup_steps", "0")
    code, out, err = grpo(*args, "--learning_rate", "1e30")
    text = out + err
    assert code == 1, text
    assert "step 1: the update blew up the trainable weights" in text
    assert "checkpoint-1: the last sound state, the starting weights (restored from before the update)" in text
    assert "a lower learning_rate (now 1e+30)" in text and "--resume" in text
    from safetensors.torch import load_file

    saved = load_file(str(tmp_path / "out" / "checkpoint-1" / "adapter_model.safetensors"))
    assert max(float(v.abs().max()) for v in saved.values()) < 10  # not the 1e30 weights
    code, out, err = grpo(*args, "--learning_rate", "1e-3", "--resume")
    text = out + err
    assert code == 0, text
    assert "learning_rate 1e+30 -> 0.001 from step 1" in text
    steps = step_records(tmp_path / "out" / "metrics.jsonl")
    assert [r["step"] for r in steps][-3:] == [2, 3, 4]
    # every step after the resume trained at the new rate: TRL's linear schedule from 1e-3, not from 1e30
    assert all(r["learning_rate"] <= 1e-3 for r in steps if r["step"] > 1)


def test_changed_weights_and_health_are_named_and_taken(grpo, tmp_path):
    from .conftest import INTERRUPT

    INTERRUPT.update(at_call=2, calls=0, signal="SIGINT")
    code, out, err = grpo(TINY, "--max_steps", "3", "--rewards", "test.digits", "test.interrupt:0", "--no-check")
    assert code == 130, err
    code, out, err = grpo(TINY, "--max_steps", "4", "--rewards", "test.digits:2", "test.interrupt:0",
                          "--health.window", "3", "--max_grad_norm", "0.5", "--resume", "--no-check")
    text = out + err
    assert code == 0, text
    for line in ("max_steps 3 -> 4 from step 2", "max_grad_norm 1 -> 0.5 from step 2",
                 "reward weight test.digits 1 -> 2 from step 2", "health.window 5 -> 3 from step 2"):
        assert line in text
    # TRL multiplies by the new weight: the logged total is twice test.digits from the resumed step on
    last = step_records(tmp_path / "out" / "metrics.jsonl")[-1]
    assert last["step"] == 4 and abs(last["reward"] - 2 * last["rewards/test.digits/mean"]) < 1e-6


def test_settings_a_checkpoint_cannot_take_are_refused_by_name(grpo, tmp_path):
    from .conftest import INTERRUPT

    INTERRUPT.update(at_call=2, calls=0, signal="SIGINT")
    code, out, err = grpo(TINY, "--max_steps", "3", "--rewards", "test.digits", "test.interrupt:0", "--no-check")
    assert code == 130, err
    code, out, err = grpo(TINY, "--max_steps", "3", "--rewards", "test.digits", "test.interrupt:0",
                          "--num_generations", "2", "--lora.r", "8", "--resume", "--no-check")
    assert code == 2
    assert "cannot change mid-run" in err
    assert "num_generations: 4 in the checkpoint, 2 now" in err
    assert "lora: {'r': 4, 'lora_alpha': 8, 'target_modules': 'all-linear'} in the checkpoint" in err


def test_resume_on_another_dataset_or_seed_is_refused_by_name(grpo, tmp_path):
    from .conftest import INTERRUPT

    INTERRUPT.update(at_call=2, calls=0, signal="SIGINT")
    args = ("--max_steps", "3", "--rewards", "test.digits", "test.interrupt:0", "--no-check")
    code, out, err = grpo(TINY, *args)
    assert code == 130, err
    code, out, err = grpo(TINY, *args, "--dataset.name", "toy_no_answer", "--seed", "3", "--temperature", "0.5",
                          "--resume")
    assert code == 2, out + err
    assert "cannot change mid-run" in err
    assert "dataset.name: toy in the checkpoint, toy_no_answer now" in err and "seed: 0 in the checkpoint, 3 now" in err
    assert "temperature" not in err  # a sampling setting is taken, not refused
    code, out, err = grpo(TINY, *args, "--temperature", "0.5", "--resume")
    assert code == 0, out + err
    assert "temperature 1 -> 0.5 from step 2" in out + err


# ------------------------------------------------------------------ a finished run trains on


def stepped(out: str) -> list[str]:
    return [line.split()[1] for line in out.splitlines() if line.startswith("step ")]


def test_a_finished_run_extended_trains_what_the_longer_run_trains(grpo, tmp_path):
    # the scenario at half the size: a finished 2-step run, then --resume --max_steps 4. With a constant
    # learning rate the extended run is the 4-step run: the same prompts, completions and rewards at every step
    args = (TINY, "--save_strategy", "steps", "--lr_scheduler_type", "constant", "--no-check")
    code, out, err = grpo(*args, "--max_steps", "4", out=tmp_path / "whole")
    assert code == 0, out + err
    code, out, err = grpo(*args, "--max_steps", "2")
    assert code == 0 and stepped(out) == ["1/2", "2/2"], out + err
    run = tmp_path / "out"
    code, out, err = grpo(*args, "--max_steps", "4", "--resume")
    text = out + err
    assert code == 0, text
    assert f"Stage 'main' finished with 2 steps; max_steps 4: resuming from {run}/checkpoint-2 (step 2)." in text
    assert "  max_steps 2 -> 4 from step 2\n" in text  # a constant rate: no schedule to speak of
    assert stepped(out) == ["3/4", "4/4"] and "Done: 4 steps." in text
    extended, whole = step_records(run / "metrics.jsonl"), step_records(tmp_path / "whole" / "metrics.jsonl")
    assert [r["step"] for r in extended] == [1, 2, 3, 4]  # the log goes on from step 3, nothing twice
    for a, b in zip(extended, whole):
        assert (a["step"], a["reward"], a["learning_rate"]) == (b["step"], b["reward"], b["learning_rate"])
    from grpo_core.trainer import rollout_log

    assert [s for s, _ in rollout_log.files(run / "rollouts")] == [1, 2, 3, 4]
    mine, theirs = rollout_log.read(run).to_pylist(), rollout_log.read(tmp_path / "whole").to_pylist()
    assert [(r["step"], r["prompt"], r["completion"]) for r in mine] == \
        [(r["step"], r["prompt"], r["completion"]) for r in theirs]
    assert json.loads((run / "progress.json").read_text())["stages"]["main"]["steps"] == 4
    assert "max_steps: 4" in (run / "config.yaml").read_text()


def test_extending_a_decaying_schedule_takes_the_longer_runs_rates(grpo, tmp_path):
    # linear decay from 1e-3 (TRL's default schedule): a 2-step run trains at 1e-3, 5e-4. Extended to 4 steps the
    # schedule is a 4-step run's, as TRL's resume_from_checkpoint has it: steps 3 and 4 at 1e-3 * 2/4 and 1e-3 * 1/4.
    # (TRL itself trains step 3 at the rate its optimizer state holds: 0, where the 2-step schedule ended)
    args = (TINY, "--save_strategy", "steps", "--no-check")
    assert grpo(*args, "--max_steps", "2")[0] == 0
    run = tmp_path / "out"
    code, out, err = grpo(*args, "--max_steps", "4", "--resume")
    assert code == 0, out + err
    assert ("max_steps 2 -> 4 from step 2 (the linear learning-rate schedule is now that of a run of 4 steps, as with "
            "TRL's resume_from_checkpoint; lr_scheduler_type: constant keeps one rate)") in out + err
    rates = [r["learning_rate"] for r in step_records(run / "metrics.jsonl")]
    assert rates == pytest.approx([1e-3, 5e-4, 5e-4, 2.5e-4], rel=1e-9)
    # finished at 4: the same command again trains nothing and says how to train longer; config.yaml stays
    resolved = (run / "config.yaml").read_text()
    code, out, err = grpo(*args, "--max_steps", "4", "--resume")
    assert code == 0 and stepped(out) == [], out + err
    assert "Stage 'main' already finished (4 steps); skipping. To train it longer, raise max_steps" in out + err
    code, out, err = grpo(*args, "--max_steps", "3", "--resume")
    assert code == 0 and "already finished (4 steps; max_steps 3 now); skipping." in out + err
    assert (run / "config.yaml").read_text() == resolved
    # a checkpoint named, as TRL's resume_from_checkpoint takes one: from there, whatever came after trained again
    code, out, err = grpo(*args, "--max_steps", "4", "--resume_from_checkpoint", "checkpoint-2")
    assert code == 0, out + err
    assert (f"Stage 'main' finished with 4 steps; the checkpoint named with --resume: resuming from {run}/checkpoint-2 "
            f"(step 2); steps 3-4 train again.") in out + err
    assert stepped(out) == ["3/4", "4/4"]
    assert [r["step"] for r in step_records(run / "metrics.jsonl")] == [1, 2, 3, 4]


# ------------------------------------------------------------------ what a refused resume leaves


def no_model(patch) -> None:
    """Loading the model fails the test (while ``patch`` lasts): a refusal must come before it."""
    def load_model(*args, **kwargs):
        raise AssertionError("the model was loaded")

    patch.setattr("grpo_core.run.train.load_model", load_model)


def test_a_resume_on_other_data_is_refused_before_the_model_loads_and_config_yaml_stays(grpo, tmp_path,
                                                                                      register_plugin, write):
    import grpo_datasets

    register_plugin(grpo_datasets, name="grpo_datasets")
    rows = [{"question": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(8)]
    a, b = write.jsonl(tmp_path / "a.jsonl", rows), write.jsonl(tmp_path / "b.jsonl", rows[::-1])
    args = (TINY, "--dataset.name", "files", "--save_strategy", "steps", "--no-check")
    assert grpo(*args, "--dataset.params.path", a, "--max_steps", "2")[0] == 0
    run = tmp_path / "out"
    resolved = (run / "config.yaml").read_bytes()

    with pytest.MonkeyPatch.context() as patch:
        no_model(patch)
        code, out, err = grpo(*args, "--dataset.params.path", b, "--max_steps", "4", "--resume")
        assert code == 2 and "cannot change mid-run" in err, out + err
        assert f"dataset.params: {{'path': '{a}'}} in the checkpoint, {{'path': '{b}'}} now" in err
        # the same file edited in place: one question changed, the same row count
        write.jsonl(a, [*rows[:3], {"question": "What is 30 + 1?", "answer": "31"}, *rows[4:]])
        code, out, err = grpo(*args, "--dataset.params.path", a, "--max_steps", "4", "--resume")
        assert code == 2, out + err
        assert "dataset content: the rows' fingerprint is " in err and "with the same dataset settings and 8 rows" in err
        write.jsonl(a, [*rows, {"question": "What is 8 + 1?", "answer": "9"}])  # a row added
        code, out, err = grpo(*args, "--dataset.params.path", a, "--max_steps", "4", "--resume")
        assert code == 2 and "dataset.rows: 8 in the checkpoint, 9 now" in err, out + err
        assert "fingerprint" not in err  # the row count says it
        assert (run / "config.yaml").read_bytes() == resolved
    # the file as it was: the same fingerprint in a new process's load, and the run goes on
    write.jsonl(a, rows)
    code, out, err = grpo(*args, "--dataset.params.path", a, "--max_steps", "4", "--resume")
    assert code == 0 and stepped(out) == ["3/4", "4/4"], out + err


def test_a_row_edited_past_the_first_1024_is_seen_on_resume(grpo, tmp_path, register_plugin, write):
    # the fingerprint hashes the rows 1,024 at a time: an edit at row 1,050 of 1,100 is still another dataset
    import grpo_datasets

    register_plugin(grpo_datasets, name="grpo_datasets")
    rows = [{"question": f"What is {i} + 1?", "answer": str(i + 1)} for i in range(1100)]
    path = write.jsonl(tmp_path / "a.jsonl", rows)
    args = (TINY, "--dataset.name", "files", "--dataset.params.path", path, "--save_strategy", "steps", "--no-check")
    assert grpo(*args, "--max_steps", "1")[0] == 0
    with pytest.MonkeyPatch.context() as patch:
        no_model(patch)
        write.jsonl(path, [*rows[:1050], {"question": "What is 40 + 2?", "answer": "42"}, *rows[1051:]])
        code, out, err = grpo(*args, "--max_steps", "2", "--resume", "--dry-run")
        assert code == 2, out + err
        assert "dataset content: the rows' fingerprint is " in err and "with the same dataset settings and 1100 rows" in err
        write.jsonl(path, rows)  # as it was: the resume goes ahead
        code, out, err = grpo(*args, "--max_steps", "2", "--resume", "--dry-run")
        assert code == 0 and "resuming from" in out, out + err


def test_the_prompt_settings_are_compared_each_by_name(grpo, tmp_path):
    args = (TINY, "--save_strategy", "steps", "--no-check")
    assert grpo(*args, "--max_steps", "1")[0] == 0
    run = tmp_path / "out"
    resolved = (run / "config.yaml").read_bytes()
    with pytest.MonkeyPatch.context() as patch:
        no_model(patch)
        for change, line in [
            (("--dataset.system_prompt", "Say a number."),
             "dataset.system_prompt: Answer with a number. in the checkpoint, Say a number. now"),
            (("--dataset.few_shot", "1"), "dataset.few_shot: 0 in the checkpoint, 1 now"),  # one row less, too
            (("--dataset.answer_template", "The answer is {answer}."),
             "dataset.answer_template: None in the checkpoint, The answer is {answer}. now"),
        ]:
            code, out, err = grpo(*args, "--max_steps", "2", *change, "--resume")
            assert code == 2 and line in err, out + err
            assert "fingerprint" not in err  # the setting explains the other rows
        # --dry-run --resume says the same, or what the resume would do
        code, out, err = grpo(*args, "--max_steps", "2", "--dataset.few_shot", "1", "--resume", "--dry-run")
        assert code == 2 and "dataset.few_shot: 0 in the checkpoint, 1 now" in err, out + err
        code, out, err = grpo(*args, "--max_steps", "2", "--resume", "--dry-run")
        assert code == 0, out + err
        assert f"Stage 'main' finished with 1 step; max_steps 2: resuming from {run}/checkpoint-1 (step 1)." in out
    assert (run / "config.yaml").read_bytes() == resolved


def test_two_stages_extend_the_last_one_and_refuse_to_grow_a_finished_earlier_one(grpo, tmp_path):
    from .test_train_cli import TWO_STAGES

    cfg = tmp_path / "two.yaml"
    cfg.write_text(TWO_STAGES.format(extra="test.digits").replace('save_strategy: "no"', "save_strategy: steps"))
    assert grpo(cfg, "--no-check")[0] == 0
    run = tmp_path / "out"
    resolved = (run / "config.yaml").read_bytes()
    with pytest.MonkeyPatch.context() as patch:
        no_model(patch)
        # --max_steps on the command line sets every stage: 'format' would grow under 'answer', which trained on it
        code, out, err = grpo(cfg, "--max_steps", "3", "--resume", "--no-check")
        assert code == 2, out + err
        assert ("Stage 'format' finished with 2 steps and stage 'answer' has trained on from its weights since, so "
                "it cannot train again (max_steps 3).") in err
    assert (run / "config.yaml").read_bytes() == resolved
    # the last stage's max_steps raised in the config: it trains on, the first is skipped
    cfg.write_text(cfg.read_text().replace("max_steps: 2\n    learning_rate", "max_steps: 3\n    learning_rate"))
    code, out, err = grpo(cfg, "--resume", "--no-check")
    text = out + err
    assert code == 0, text
    assert "Stage 'format' already finished (2 steps); skipping." in text
    assert f"Stage 'answer' finished with 2 steps; max_steps 3: resuming from {run}/answer/checkpoint-2 (step 2)." \
        in text
    assert stepped(out) == ["5/5"]
    assert [(r["step"], r["stage"]) for r in step_records(run / "metrics.jsonl")] == [
        (1, "format"), (2, "format"), (3, "answer"), (4, "answer"), (5, "answer")]
    assert json.loads((run / "progress.json").read_text())["stages"]["answer"]["steps"] == 3
