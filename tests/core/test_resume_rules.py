"""What --resume does with each changed setting: one pure function, a table of cases."""

from __future__ import annotations

import pytest

from grpo_core.run.resume import compare

SAVED = {"learning_rate": 1e30, "lr_scheduler_type": "linear", "warmup_steps": 0, "max_grad_norm": 1.0,
         "beta": 0.0, "max_steps": 10, "num_generations": 4, "per_device_train_batch_size": 8,
         "gradient_accumulation_steps": 1, "steps_per_generation": 1, "num_iterations": 1, "model": "m",
         "lora": {"r": 16, "lora_alpha": 32, "target_modules": "all-linear"},
         "reward_weights": {"math.correctness": 1.0}, "health": {"window": 5}, "seed": 0, "temperature": 1.0,
         "dataset": {"name": "gsm8k", "params": {}, "split": "train", "system_prompt": None, "few_shot": 0,
                     "answer_template": None, "rows": 7473},
         "reward_params": {"math.correctness": {}}, "sampling": {"dynamic": False, "max_rounds": 3}}
DATA = SAVED["dataset"]


@pytest.mark.parametrize("change, applied, refused", [
    ({}, [], []),
    ({"learning_rate": 1e-3}, ["learning_rate 1e+30 -> 0.001 from step 3"], []),
    ({"lr_scheduler_type": "constant"}, ["lr_scheduler_type linear -> constant from step 3"], []),
    ({"max_grad_norm": 0.5, "beta": 0.04}, ["max_grad_norm 1 -> 0.5 from step 3", "beta 0 -> 0.04 from step 3"], []),
    ({"max_steps": 20}, ["max_steps 10 -> 20 from step 3"], []),
    ({"reward_weights": {"math.correctness": 2.0}}, ["reward weight math.correctness 1 -> 2 from step 3"], []),
    ({"reward_weights": {"math.correctness": 1.0, "length.ideal": 0.1}},
     ["reward weight length.ideal absent -> 0.1 from step 3"], []),
    ({"health": {"window": 3}}, ["health.window 5 -> 3 from step 3"], []),
    ({"num_generations": 8}, [], ["num_generations: 4 in the checkpoint, 8 now"]),
    ({"per_device_train_batch_size": 4}, [], ["per_device_train_batch_size: 8 in the checkpoint, 4 now"]),
    ({"model": "other"}, [], ["model: m in the checkpoint, other now"]),
    ({"lora": {"r": 8, "lora_alpha": 32, "target_modules": "all-linear"}}, [],
     ["lora: {'r': 16, 'lora_alpha': 32, 'target_modules': 'all-linear'} in the checkpoint, "
      "{'r': 8, 'lora_alpha': 32, 'target_modules': 'all-linear'} now"]),
    ({"learning_rate": 1e-3, "steps_per_generation": 2}, ["learning_rate 1e+30 -> 0.001 from step 3"],
     ["steps_per_generation: 1 in the checkpoint, 2 now"]),
    # what defines the data and its order: refused by name
    ({"dataset": {**DATA, "name": "math"}}, [], ["dataset.name: gsm8k in the checkpoint, math now"]),
    ({"dataset": {**DATA, "params": {"level": 2}, "rows": 500}}, [],
     ["dataset.params: {} in the checkpoint, {'level': 2} now", "dataset.rows: 7473 in the checkpoint, 500 now"]),
    ({"dataset": {**DATA, "split": "train[:100]"}}, [], ["dataset.split: train in the checkpoint, train[:100] now"]),
    ({"seed": 1}, [], ["seed: 0 in the checkpoint, 1 now"]),
    # sampling and reward parameters: taken, each named
    ({"temperature": 0.7}, ["temperature 1 -> 0.7 from step 3"], []),
    ({"sampling": {"dynamic": True, "max_rounds": 3}}, ["sampling.dynamic False -> True from step 3"], []),
    ({"reward_params": {"math.correctness": {"fallback_last_number": True}}},
     ["reward parameters math.correctness {} -> {'fallback_last_number': True} from step 3"], []),
])
def test_what_may_change_on_resume_and_what_may_not(change, applied, refused):
    changes = compare(SAVED, {**SAVED, **change}, step=3)
    assert changes.applied == applied and changes.refused == refused


def test_a_checkpoint_from_before_the_dataset_was_recorded_is_compared_on_what_it_has():
    old = {k: v for k, v in SAVED.items() if k not in ("dataset", "seed", "sampling", "reward_params")}
    changes = compare(old, {**SAVED, "dataset": {**DATA, "name": "math"}, "seed": 5}, step=3)
    assert changes.refused == [] and changes.applied == []
