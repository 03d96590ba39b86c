"""Held-out accuracy during training (eval/accuracy), the same as grpo eval measures
it, and the alarm when the training reward rises while held-out accuracy falls."""

from __future__ import annotations

import json
import types

import pytest

import grpo_core
from grpo_core.config.schema import HealthSection
from grpo_core.run.callbacks import HealthCallback

from .conftest import TINY

HELDOUT = ("--dataset.eval_split", "test", "--heldout.every", "2", "--heldout.prompts", "6")


def has_digit(completions, **kwargs):
    """1.0 when the sum of the completion's character codes is even: a 'correctness' the random
    tiny model meets on about half its completions, so accuracy is neither 0 nor 1."""
    return [float(sum(map(ord, grpo_core.completion_text(c))) % 2 == 0) for c in completions]


def even_or_none(completions, question, **kwargs):
    """has_digit's score, but None ("no opinion") on 'What is N + 1?' when N is a multiple of 3."""
    return [None if int(q.split()[2]) % 3 == 0 else s for q, s in zip(question, has_digit(completions))]


@pytest.fixture
def digit_correctness(register_plugin):
    mod = types.ModuleType("digit_plugin")

    def register_rewards(register):
        register("test.has_digit", has_digit, correctness=True, range=(0, 1))
        register("test.even_or_none", even_or_none, correctness=True, range=(0, 1))

    mod.register_rewards = grpo_core.hookimpl(register_rewards)
    register_plugin(mod, name="digit_plugin")


@pytest.fixture
def sharp_model(tiny_model, tmp_path):
    """The tiny model with sharper logits: its greedy answers differ from prompt to prompt (the
    plain one answers every prompt with the same newlines)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(8)
    out = tmp_path / "sharp"
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tiny_model).save_pretrained(out)
    return out


def records(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_held_out_accuracy_is_measured_as_grpo_eval_measures_it(grpo, digit_correctness, sharp_model, tmp_path,
                                                               capsys):
    """A correctness reward with no opinion (None) on 2 of the 6 held-out prompts ('What is 0 + 1?'
    and 'What is 3 + 1?'): both figures are the share of full marks among the other 4, so they
    are multiples of 1/4 (counted wrong instead, they would be multiples of 1/6)."""
    from grpo_core.cli import main

    rewards = ("--rewards", "test.even_or_none", "test.short:0.1")
    code, out, err = grpo(TINY, "--max_steps", "4", *rewards, "--no-check", *HELDOUT, "--model.id", str(sharp_model),
                          model=False)
    assert code == 0, out + err
    steps = [r for r in records(tmp_path / "out" / "metrics.jsonl") if "reward" in r]
    measured = {r["step"]: r["eval/accuracy"] for r in steps if "eval/accuracy" in r}
    assert sorted(measured) == [1, 2, 4]  # after the first step, then every 2 steps
    assert measured[4] in (0.25, 0.5, 0.75)  # a figure that can differ, not an all-or-nothing one
    assert all(4 * value == int(4 * value) for value in measured.values())
    assert [line for line in out.splitlines() if line.startswith("step 2/4") and "held-out accuracy" in line]
    # grpo eval on the trained adapter: the same 6 held-out prompts, greedy, the same reward
    report = tmp_path / "eval.json"
    assert main(["eval", str(TINY), "--model.id", str(sharp_model), "--checkpoint", str(tmp_path / "out" / "adapter"),
                 "--limit", "6", "--split", "test", "--output", str(report), *rewards]) == 0
    assert json.loads(report.read_text())["trained"]["accuracy"] == pytest.approx(measured[4])
    # the console names the misses: 4 scored prompts (2 have no opinion), (1 - accuracy) x 4 of them missed
    printed = capsys.readouterr().out
    missed = round(4 * (1 - measured[4]))
    assert f"missed full marks on test.even_or_none in {missed} of 4 scored completions" in printed
    shown = [x for x in printed.splitlines() if x.startswith("  'What is ")]
    assert len(shown) == min(3, missed) and all(" -> " in x for x in shown)


def test_held_out_accuracy_on_a_step_that_reuses_a_batch_is_on_the_console(grpo, digit_correctness, tmp_path):
    """num_iterations 2: steps 2 and 4 train the batch steps 1 and 3 generated, so their logs
    carry no reward; the accuracy measured after them is still printed on a step line."""
    code, out, err = grpo(TINY, "--max_steps", "4", "--num_iterations", "2", "--rewards", "test.has_digit",
                          "--no-check", *HELDOUT)
    assert code == 0, out + err
    logged = {}
    for r in records(tmp_path / "out" / "metrics.jsonl"):  # (the last step also logs the run's totals)
        logged.setdefault(r["step"], {}).update(r)
    assert "reward" in logged[1] and "reward" not in logged[2]  # step 2 reused step 1's batch
    assert sorted(s for s, r in logged.items() if "eval/accuracy" in r) == [1, 2, 4]
    for step in (2, 4):
        assert [x for x in out.splitlines() if x.startswith(f"step {step}/4") and "held-out accuracy" in x], out


def test_held_out_accuracy_under_bf16_on_a_cpu_samples_from_the_bf16_copy_as_training_does(grpo, digit_correctness,
                                                                                          tmp_path):
    """bf16 on a CPU: training samples under bf16 autocast from a bf16 merged copy of the LoRA
    weights; the held-out evaluation between steps samples the same way (outside the autocast
    the bf16 copy meets float32 activations: a dtype error after step 1, seen in the quickstart)."""
    code, out, err = grpo(TINY, "--max_steps", "2", "--rewards", "test.has_digit", "--no-check", *HELDOUT,
                          "--bf16", "true")
    assert code == 0, out + err
    assert "compute bfloat16 autocast" in out
    logged = [r for r in records(tmp_path / "out" / "metrics.jsonl") if "eval/accuracy" in r]
    assert [r["step"] for r in logged] == [1, 2] and all(0 <= r["eval/accuracy"] <= 1 for r in logged)


@pytest.mark.parametrize("scores, top, expected", [
    ([1.0, 0.0, 1.0, 0.0], 1.0, 0.5),
    ([1.0, None, 0.0, None, 1.0, 1.0], 1.0, 0.75),  # None: no opinion, left out (3 of 4)
    ([None, None], 1.0, None),  # nothing to count: nan
    ([2.0, 1.0, 0.0, 2.0], 2.0, 0.5),  # full marks are the declared range's top
])
def test_accuracy_is_the_share_of_full_marks_among_the_scored(scores, top, expected):
    import math

    from grpo_core.run.heldout import accuracy

    value = accuracy(scores, top)
    assert math.isnan(value) if expected is None else value == expected


def test_no_correctness_reward_means_no_held_out_accuracy(grpo, tmp_path):
    code, out, err = grpo(TINY, "--max_steps", "2", *HELDOUT)  # test.digits and test.short: no correctness reward
    assert code == 0, out + err
    assert not [r for r in records(tmp_path / "out" / "metrics.jsonl") if "eval/accuracy" in r]


def _health(tmp_path, **kw) -> HealthCallback:
    warned = []
    cb = HealthCallback(HealthSection(window=3, **kw), tmp_path / "health.jsonl", warn=warned.append)
    cb.warned = warned
    return cb


def test_reward_up_while_held_out_accuracy_falls_raises_the_alarm(tmp_path):
    cb = _health(tmp_path)
    # evaluations at steps 2, 4, 6: training reward (mean since the last one) 0.2, 0.4, 0.6; accuracy 0.5, 0.4, 0.3
    for step, reward, acc in [(1, 0.2, None), (2, 0.2, 0.5), (3, 0.4, None), (4, 0.4, 0.4), (5, 0.6, None),
                              (6, 0.6, 0.3)]:
        cb.check(step, {"reward": reward, **({"eval/accuracy": acc} if acc is not None else {})})
    events = [e for e in cb.events if e["check"] == "divergence"]
    assert len(events) == 1 and events[0]["step"] == 6
    assert ("the training reward rose 0.200 -> 0.600 while held-out accuracy fell 0.50 -> 0.30 (steps 2-6"
            in events[0]["message"])
    assert events[0]["value"] == pytest.approx(-0.2) and cb.stop is None  # warn, the default
    assert records(tmp_path / "health.jsonl")[0]["check"] == "divergence"


def test_the_alarm_hears_held_out_accuracy_measured_after_a_reused_batch(tmp_path):
    """num_iterations 2: the steps that generate (odd) log the reward, the ones that train the
    batch again (even) the held-out accuracy measured after them, with no reward: the alarm
    pairs them as before (rewards 0.2, 0.4, 0.6 since each evaluation; accuracy 0.5, 0.4, 0.3)."""
    cb = _health(tmp_path)
    state = types.SimpleNamespace(is_world_process_zero=True, global_step=0)
    control = types.SimpleNamespace(should_save=False, should_training_stop=False)
    for step, logs in [(1, {"reward": 0.2}), (2, {"eval/accuracy": 0.5}), (3, {"reward": 0.4}),
                       (4, {"eval/accuracy": 0.4}), (5, {"reward": 0.6}), (6, {"eval/accuracy": 0.3})]:
        state.global_step = step
        cb.on_log(None, state, control, logs={"loss": 0.1, **logs})
    [event] = [e for e in cb.events if e["check"] == "divergence"]
    assert event["step"] == 6
    assert "the training reward rose 0.200 -> 0.600 while held-out accuracy fell 0.50 -> 0.30 (steps 2-6" \
        in event["message"]


def test_both_rising_or_too_few_evaluations_raise_nothing(tmp_path):
    cb = _health(tmp_path)
    for step, acc in [(2, 0.3), (4, 0.4), (6, 0.5)]:  # both rise: learning
        cb.check(step, {"reward": step / 10, "eval/accuracy": acc})
    cb2 = _health(tmp_path)
    for step, acc in [(2, 0.5), (4, 0.3)]:  # only 2 of window 3 evaluations
        cb2.check(step, {"reward": step / 10, "eval/accuracy": acc})
    assert not [e for e in cb.events + cb2.events if e["check"] == "divergence"]


def test_on_divergence_stop_ends_the_run_with_a_checkpoint(grpo, digit_correctness, register_plugin, tmp_path,
                                                            monkeypatch):
    """Scripted: held-out accuracy falls 0.9, 0.8, 0.7, ... while the training reward (a reward that
    pays more each step) rises."""
    from grpo_core.run import heldout

    falling = iter([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    monkeypatch.setattr(heldout.HeldoutCallback, "measure", lambda self: next(falling))
    mod = types.ModuleType("rising_plugin")

    def rising(completions, trainer_state=None, **kwargs):
        step = trainer_state.global_step if trainer_state is not None else 0
        return [0.1 * step for _ in completions]

    mod.register_rewards = grpo_core.hookimpl(lambda register: register("test.rising", rising))
    register_plugin(mod, name="rising_plugin")
    code, out, err = grpo(TINY, "--max_steps", "6", "--rewards", "test.rising", "test.has_digit:0", "--no-check",
                          "--dataset.eval_split", "test", "--heldout.every", "1", "--heldout.prompts", "2",
                          "--health.window", "3", "--health.on_divergence", "stop")
    text = out + err
    assert code == 1, text
    # evaluations after steps 1, 2, 3: accuracy 0.9 -> 0.7 while the reward rose 0.0 -> 0.2
    assert "Training stopped (health.on_divergence: stop) at step 3" in text
    assert (tmp_path / "out" / "checkpoint-3").is_dir() and not (tmp_path / "out" / "adapter").exists()


def test_held_out_prompts_are_chosen_before_any_model_loads_and_the_training_split_loads_once(
        toy_plugin, digit_correctness, tiny_model, monkeypatch):
    from grpo_core.config import models
    from grpo_core.config.load import load_config
    from grpo_core.run import prepare as preparer
    from grpo_core.run.prepare import prepare

    splits = []
    real = preparer.load_dataset
    monkeypatch.setattr(preparer, "load_dataset", lambda name, split="train", **kw: splits.append(split) or real(
        name, split=split, **kw))
    monkeypatch.setattr(models, "load", lambda *a, **k: pytest.fail("a model was loaded"))
    cfg = load_config(TINY, ["--model.id", str(tiny_model), "--rewards", "test.has_digit", "--heldout.prompts", "5"])
    p = prepare(cfg, check=False, heldout=True)
    # the toy adapter has no eval_split set: held-out falls back to its 'test' split, and the
    # training split is read once (it was read a second time, after the model had loaded)
    assert splits == ["train", "test"]
    assert [r["question"] for r in p.heldout] == [f"What is {i} + 1?" for i in range(5)]
    with pytest.raises(grpo_core.GrpoError, match="heldout.enabled is true but no reward is a correctness reward"):
        prepare(load_config(TINY, ["--model.id", str(tiny_model), "--heldout.enabled", "true"]), check=False,
                heldout=True)
