"""Batch shapes TRL's GRPOConfig refuses (generation_batch_size not divisible by
num_generations, ...) are problems of the config's numbered report, found before any model
loads, each with values that fit on the processes at hand and, for an open-r1 recipe, the
process counts open-r1 launches it on. Every value suggested is one TRL's GRPOConfig accepts."""

from __future__ import annotations

import dataclasses
import re

import pytest
import yaml

from grpo_core.config.batch_shape import SHAPE_DEFAULTS, shape_faults, shape_problem
from grpo_core.config.load import load_config
from grpo_core.errors import ConfigError

from .conftest import TINY

# recipes/Qwen2.5-1.5B-Instruct/grpo/config_demo_code.yaml of open-r1 (commit 1416fa0), as published
CODE_RECIPE = r"""
model_name_or_path: Qwen/Qwen2.5-1.5B-Instruct
model_revision: main
torch_dtype: bfloat16
attn_implementation: flash_attention_2
dataset_name: open-r1/verifiable-coding-problems-python
dataset_prompt_column: problem_statement
system_prompt: "You are a helpful AI Assistant that provides well-reasoned and detailed responses. You first think about the reasoning process as an internal monologue and then provide the user with the answer. Respond in the following format: <think>\n...\n</think>\n<answer>\n...\n</answer>"
beta: 0.01
bf16: true
use_vllm: true
do_eval: false
gradient_accumulation_steps: 4
gradient_checkpointing: true
gradient_checkpointing_kwargs:
  use_reentrant: false
hub_model_id: Qwen2.5-1.5B-Open-R1-Code-GRPO
hub_strategy: every_save
learning_rate: 5.0e-06
log_completions: true
log_level: info
logging_first_step: true
logging_steps: 1
logging_strategy: steps
lr_scheduler_type: cosine_with_min_lr
lr_scheduler_kwargs:
  min_lr_rate: 0.1
max_prompt_length: 1024
max_completion_length: 2048
max_steps: 500
num_generations: 14
num_train_epochs: 1
output_dir: data/Qwen2.5-1.5B-Open-R1-Code-GRPO
overwrite_output_dir: true
per_device_train_batch_size: 16
push_to_hub: true
report_to:
- wandb
reward_funcs:
- code
- format
reward_weights:
- 1.0
- 0.1
save_strategy: "steps"
save_steps: 50
save_total_limit: 1
seed: 42
temperature: 1.0
warmup_ratio: 0.03
"""

# worked out by hand: 16 x 1 x 4 = 64, not a multiple of 14. The divisors of 64 nearest 14: 16;
# batch sizes that make 4 x b a multiple of 14 are the multiples of 7, nearest 16: 14 (56 = 4 x 14);
# accumulation steps that make 16 x s a multiple of 14: multiples of 7, nearest 4: 7 (112 = 8 x 14).
# open-r1: 8 processes give 512 (no); 7 give 16 x 7 x 4 = 448 = 32 x 14 (its README's launch).
CODE_SHAPE = (
    "generation_batch_size 64 (per_device_train_batch_size 16 x 1 process x gradient_accumulation_steps 4) must be "
    "divisible by num_generations 14 (TRL samples whole groups of 14 completions, one group per prompt). Values "
    "that fit on 1 process: num_generations 16 (generation batch 64 = 4 groups of 16), or "
    "per_device_train_batch_size 14 (generation batch 56 = 4 groups of 14), or gradient_accumulation_steps 7 "
    "(generation batch 112 = 8 groups of 14). As open-r1 launches its recipes, 8 processes "
    "(recipes/accelerate_configs: num_processes: 8) do not: generation batch 512; 7 processes (a vLLM server on "
    "the eighth GPU, accelerate launch --num_processes=7, as open-r1's README runs its code recipes) fit as they "
    "are: generation batch 448 = 32 groups of 14."
)


@pytest.fixture(autouse=True)
def one_process(monkeypatch):
    monkeypatch.delenv("WORLD_SIZE", raising=False)


def problem_lines(error: ConfigError) -> list[str]:
    """The problems of a report (one problem is raised as it is)."""
    lines = str(error).splitlines()
    if re.match(r"\d+ problems in ", lines[0]):
        return [re.sub(r"^  \d+\. ", "", line) for line in lines[1:]]
    return lines


def tiny(**extra) -> dict:
    data = yaml.safe_load(TINY.read_text())
    data["model"]["id"] = str(TINY.parent)
    return {**data, **extra}


def grpo_config(tmp_path, world_size: int, monkeypatch, **values):
    """TRL's own GRPOConfig on ``world_size`` processes (raises TRL's ValueError)."""
    from transformers import TrainingArguments
    from trl import GRPOConfig

    monkeypatch.setattr(TrainingArguments, "world_size", property(lambda self: world_size))
    return GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], **values)


def suggestions(text: str) -> list[tuple[str, int]]:
    """The (field, value) pairs a problem suggests."""
    return [(m[1], int(m[2])) for m in re.finditer(r"(\w+) (\d+) \((?:generation batch|eval batch|per-process generation batch) ", text)]


def test_shape_defaults_are_trls():
    from trl import GRPOConfig

    defaults = {f.name: f.default for f in dataclasses.fields(GRPOConfig)}
    assert SHAPE_DEFAULTS == {k: getattr(defaults[k], "value", defaults[k]) for k in SHAPE_DEFAULTS}


def test_open_r1_code_recipe_on_one_process_names_the_values_that_fit(tmp_path):
    path = tmp_path / "config_demo_code.yaml"
    path.write_text(CODE_RECIPE)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert CODE_SHAPE in problem_lines(info.value)


def test_the_report_is_printed_by_dry_run_and_check_before_any_model(tmp_path, capsys, monkeypatch):
    from grpo_core.cli import main
    from grpo_core.config import models

    monkeypatch.setattr(models, "load", lambda *a, **k: pytest.fail("a model loaded"))
    path = tmp_path / "config_demo_code.yaml"
    path.write_text(CODE_RECIPE)
    for argv in (["train", str(path), "--dry-run"], ["check", str(path)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert re.search(r"\n  \d+\. " + re.escape(CODE_SHAPE) + "\n", err + "\n"), err


def test_each_value_suggested_for_the_code_recipe_is_one_trl_accepts(tmp_path, monkeypatch):
    shape = {"per_device_train_batch_size": 16, "gradient_accumulation_steps": 4, "num_generations": 14}
    with pytest.raises(ValueError, match=r"generation_batch_size \(64\) must be divisible by num_generations \(14\)"):
        grpo_config(tmp_path, 1, monkeypatch, **shape)
    fits = suggestions(CODE_SHAPE)
    assert fits == [("num_generations", 16), ("per_device_train_batch_size", 14), ("gradient_accumulation_steps", 7)]
    for name, value in fits:
        args = grpo_config(tmp_path, 1, monkeypatch, **{**shape, name: value})
        assert args.generation_batch_size % args.num_generations == 0
    assert grpo_config(tmp_path, 7, monkeypatch, **shape).generation_batch_size == 448  # open-r1's launch
    with pytest.raises(ValueError, match=r"generation_batch_size \(512\)"):
        grpo_config(tmp_path, 8, monkeypatch, **shape)


def test_on_the_processes_the_recipe_was_written_for_it_fits(tmp_path, monkeypatch):
    path = tmp_path / "c.yaml"
    path.write_text(CODE_RECIPE)
    monkeypatch.setenv("WORLD_SIZE", "7")
    with pytest.raises(ConfigError) as info:  # this machine's other problems (vLLM, wandb, ...) only
        load_config(path)
    assert not [line for line in problem_lines(info.value) if "num_generations" in line]
    monkeypatch.setenv("WORLD_SIZE", "8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    line = next(line for line in problem_lines(info.value) if line.startswith("generation_batch_size 512"))
    assert "Values that fit on 8 processes: num_generations 16 (generation batch 512 = 32 groups of 16)" in line
    assert "7 processes (a vLLM server on the eighth GPU" in line


# hand-worked shapes of a plain grpo config on one process: the message, then TRL on each suggestion
HAND = [
    # 3 x 1 x 1 = 3 completions, groups of 4: G=3 fits; b=4 gives 4; s=4 gives 12; P=4 gives 12
    ({"per_device_train_batch_size": 3},
     "generation_batch_size 3 (per_device_train_batch_size 3 x 1 process x gradient_accumulation_steps 1) must be "
     "divisible by num_generations 4 (TRL samples whole groups of 4 completions, one group per prompt). Values that "
     "fit on 1 process: num_generations 3 (generation batch 3 = 1 group of 3), or per_device_train_batch_size 4 "
     "(generation batch 4 = 1 group of 4), or gradient_accumulation_steps 4 (generation batch 12 = 3 groups of 4). "
     "Or run on 4 processes (accelerate launch --num_processes 4): generation batch 12 = 3 groups of 4."),
    # an explicit generation_batch_size 8 on a global batch of 3: 12 is the nearest multiple of 3 and 4; of
    # the batch sizes dividing 8, 2 and 4 are nearest 3 (the smaller first); no process count divides 8 by 3
    ({"generation_batch_size": 8, "per_device_train_batch_size": 3},
     "generation_batch_size 8 must be divisible by the global batch size 3 (per_device_train_batch_size 3 x 1 "
     "process). Values that fit on 1 process: generation_batch_size 12 (generation batch 12 = 3 groups of 4), or "
     "per_device_train_batch_size 2 (generation batch 8 = 2 groups of 4)."),
    # evaluation on 3 x 1 = 3 completions in groups of 4: eval batch 4; num_generations_eval 3; P=4 gives 12
    ({"eval_strategy": "steps", "per_device_eval_batch_size": 3},
     "the global eval batch size 3 (per_device_eval_batch_size 3 x 1 process) must be divisible by num_generations "
     "4 (evaluation samples whole groups). Values that fit on 1 process: per_device_eval_batch_size 4 (eval batch "
     "4 = 1 group of 4), or num_generations_eval 3 (eval batch 3 = 1 group of 3). Or run on 4 processes "
     "(accelerate launch --num_processes 4): eval batch 12 = 3 groups of 4."),
]


@pytest.mark.parametrize("values, expected", HAND)
def test_hand_worked_shapes_name_values_trl_accepts(values, expected, tmp_path, monkeypatch, toy_plugin):
    with pytest.raises(ConfigError) as info:
        load_config(None, data=tiny(**values))
    assert problem_lines(info.value) == [expected]
    shape = {k: v for k, v in tiny(**values).items() if k in SHAPE_DEFAULTS}
    with pytest.raises(ValueError):
        grpo_config(tmp_path, 1, monkeypatch, **shape)
    for name, value in suggestions(expected):
        grpo_config(tmp_path, 1, monkeypatch, **{**shape, name: value})
    procs = re.search(r"run on (\d+) processes", expected)
    if procs:
        grpo_config(tmp_path, int(procs[1]), monkeypatch, **shape)


def test_a_stage_and_dynamic_sampling_are_checked_too(toy_plugin, monkeypatch):
    data = tiny(stages=[{"name": "warm", "rewards": ["test.digits"], "per_device_train_batch_size": 6}])
    with pytest.raises(ConfigError) as info:
        load_config(None, data=data)
    assert problem_lines(info.value)[0].startswith("stage 'warm': generation_batch_size 6 (per_device_train_batch_"
                                                   "size 6 x 1 process x gradient_accumulation_steps 1) must be")
    # on 2 processes, 2 x 2 x 1 = 4 fits TRL, but each process holds 2 completions: half a group of 4
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(ConfigError) as info:
        load_config(None, data=tiny(per_device_train_batch_size=2, sampling={"dynamic": True}))
    assert problem_lines(info.value) == [
        "sampling.dynamic needs each process's generation batch (per_device_train_batch_size 2 x steps_per_generation "
        "1 = 2) to hold whole groups of num_generations 4. Values that fit on 2 processes: per_device_train_batch_size "
        "4 (per-process generation batch 4 = 1 group of 4), or gradient_accumulation_steps 2 (per-process generation "
        "batch 4 = 1 group of 4), or num_generations 2 (per-process generation batch 2 = 1 group of 2)."]


def test_random_shapes_every_suggestion_mends_what_trl_refuses(tmp_path, monkeypatch):
    import random

    rng = random.Random(0)
    for _ in range(40):
        v = {**SHAPE_DEFAULTS, "per_device_train_batch_size": rng.randint(1, 12),
             "gradient_accumulation_steps": rng.randint(1, 6), "num_generations": rng.randint(2, 16)}
        procs = rng.choice([1, 2, 3, 8])
        for fault in shape_faults(v, procs):
            text = shape_problem(fault, v, procs)
            shape = {k: v[k] for k in ("per_device_train_batch_size", "gradient_accumulation_steps", "num_generations")}
            for name, value in suggestions(text):
                assert not shape_faults({**v, name: value}, procs), text
                grpo_config(tmp_path, procs, monkeypatch, **{**shape, name: value})
            other = re.search(r"run on (\d+) processes", text)
            if other:
                grpo_config(tmp_path, int(other[1]), monkeypatch, **shape)
