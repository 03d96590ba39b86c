"""--resume takes what you changed: the advice printed after a non-finite stop can
be followed, and settings a checkpoint cannot take are refused by name."""

from __future__ import annotations

import json

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
