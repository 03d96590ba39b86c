"""--resume takes what you changed: the advice printed after a non-finite stop can
be followed, and settings a checkpoint cannot take are refused by name."""

from __future__ import annotations

import json

from .conftest import TINY


def step_records(path):
    return [r for r in map(json.loads, path.read_text().splitlines()) if "reward" in r]


def test_after_a_non_finite_stop_resume_with_a_lower_learning_rate_reaches_the_last_step(grpo, tmp_path):
    # the issue's scenario: an absurd learning rate, no clipping; the run stops and says "Try: a lower
    # learning_rate ... Continue with: ... --resume"
    code, out, err = grpo(TINY, "--max_steps", "4", "--learning_rate", "1e30", "--max_grad_norm", "0",
                          "--health.snapshot", "true")
    text = out + err
    assert code == 1, text
    assert "a lower learning_rate (now 1e+30)" in text and "--resume" in text
    ckpt = sorted((tmp_path / "out").glob("checkpoint-*"))[-1]
    stopped_at = int(ckpt.name.split("-")[1])
    code, out, err = grpo(TINY, "--max_steps", "4", "--learning_rate", "1e-3", "--max_grad_norm", "0",
                          "--health.snapshot", "true", "--resume")
    text = out + err
    assert code == 0, text
    assert f"learning_rate 1e+30 -> 0.001 from step {stopped_at}" in text
    steps = step_records(tmp_path / "out" / "metrics.jsonl")
    assert steps[-1]["step"] == 4
    # every step after the resume trained at the new rate: TRL's linear schedule from 1e-3, not from 1e30
    assert all(r["learning_rate"] <= 1e-3 for r in steps if r["step"] > stopped_at)


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
