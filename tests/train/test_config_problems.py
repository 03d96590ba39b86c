"""A config's problems come all at once, numbered, each with its fix; settings TRL removed
are read as what replaced them where the intent is plain (a note each), and --strict
refuses them."""

from __future__ import annotations

import pytest
import yaml

from grpo_core.base.problems import ConfigProblems
from grpo_core.config.load import load_config
from grpo_core.errors import ConfigError, GrpoError, SpecError, UnknownNameError

from .conftest import TINY


def tiny(**extra) -> dict:
    """tests/train/tiny.yaml with a model id (any existing folder: no model loads here)."""
    data = yaml.safe_load(TINY.read_text())
    data["model"]["id"] = str(TINY.parent)
    return {**data, **extra}


def write(tmp_path, data: dict, name: str = "c.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


# ------------------------------------------------------------------ every problem at once


FIVE = tiny(learning_rat=0.1, num_generation=4, temperature=-1, lora={"r": 0, "lora_alpha": 8},
            rewards=["accuracy"])


def test_five_problems_are_five_numbered_messages_in_one_run(grpo, tmp_path):
    path = write(tmp_path, FIVE)
    code, out, err = grpo(path, "--dry-run")
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == f"Error: 5 problems in {path}:"
    # in the order the config is read: top-level fields, LoRA, rewards, then GRPOConfig's values
    assert lines[1].startswith("  1. unknown option 'learning_rat': it is neither a GRPOConfig field nor one of grpo's")
    assert lines[1].endswith("Did you mean 'learning_rate'?")
    assert lines[2] == ("  2. 'num_generation' is not a GRPOConfig field in TRL 1.16: renamed: use num_generations "
                        "(completions sampled per prompt).")
    assert lines[3] == "  3. lora.r is 0; it must be a whole number >= 1 (the adapter rank, e.g. 16)."
    assert lines[4].startswith("  4. reward 'accuracy' in spec 'accuracy' is not of the form <namespace>.<name>")
    assert lines[4].endswith("'accuracy' is open-r1's name: it maps to math.correctness (reward_funcs: [accuracy] "
                             "in an open-r1 recipe is read so; under rewards: write math.correctness).")
    assert lines[5] == "  5. temperature is -1; it must be a number > 0 (1.0 samples as the model is)."
    assert len(lines) == 6


def test_grpo_check_reports_them_all_too(tmp_path, toy_plugin, capsys):
    from grpo_core.cli import main

    path = write(tmp_path, FIVE)
    assert main(["check", str(path)]) == 2
    assert capsys.readouterr().err.startswith(f"Error: 5 problems in {path}:\n  1. unknown option 'learning_rat'")


def test_one_problem_is_raised_as_it_is(toy_plugin):
    with pytest.raises(UnknownNameError) as info:  # its own type, its own text: no "1 problems" header
        load_config(None, data=tiny(rewards=["test.digit"]))
    assert str(info.value).startswith("unknown reward 'test.digit'. Closest registered: test.digits")


def test_each_bad_reward_of_a_list_is_its_own_problem(toy_plugin):
    with pytest.raises(ConfigProblems) as info:
        load_config(None, data=tiny(rewards=["test.digit", "test.short(max_char=3)", "test.digits:heavy"]))
    problems = info.value.problems
    assert [type(p) for p in problems] == [UnknownNameError, SpecError]
    assert "unknown reward 'test.digit'" in str(problems[0])
    assert "weight 'heavy' in reward spec 'test.digits:heavy' is not a number" in str(problems[1])
    # the parameters are bound once every name is known: test.short's typo waits for the next run


def test_each_unknown_section_option_and_bad_value_is_reported(toy_plugin):
    with pytest.raises(ConfigProblems) as info:
        load_config(None, data=tiny(health={"windw": 3, "on_nonfinite": "ignore", "max_reward_errors": -0.1}))
    assert [str(p) for p in info.value.problems] == [
        "'health' has no option 'windw' (did you mean 'window'?); its options are: enabled, flat_delta, flat_window, "
        "max_kl, max_reward_errors, max_reward_timeouts, max_sampler_kl, max_skips, max_weight_jump, min_reward_std, "
        "on_divergence, "
        "on_nonfinite, on_reward_timeout, reward_time_limit, snapshot, window, zero_std_frac.",
        "health.on_nonfinite is 'ignore'; use one of stop, skip (default stop).",
        "health.max_reward_errors is -0.1; it must be a number in [0, 1] (default 0.2).",
    ]


@pytest.mark.parametrize("nearby, expected", [
    ("accuracy_reward", "'accuracy_reward' is TRL's name: write trl.rewards.accuracy_reward"),
    ("ioi_code", "'ioi_code' is open-r1's remote judge: it needs IOI problems judged by a Piston or Morph server"),
    # difflib's ratios against 'acuracy': accuracy 14/15, accuracy_reward 14/22 (cutoff 0.6)
    ("acuracy", "Nearest across grpo's, TRL's and open-r1's names: accuracy (open-r1's: math.correctness), "
                "accuracy_reward (TRL's: trl.rewards.accuracy_reward)."),
])
def test_an_unknown_reward_offers_the_nearest_of_ours_trls_and_open_r1s(toy_plugin, nearby, expected):
    with pytest.raises(GrpoError) as info:
        load_config(None, data=tiny(rewards=[nearby]))
    assert expected in str(info.value)


# ------------------------------------------------------------------ removed settings, translated


@pytest.mark.parametrize("extra, training, env, note", [
    ({"warmup_ratio": 0.1}, {"warmup_steps": 0.1}, {},
     "warmup_ratio: 0.1 -> warmup_steps: 0.1; removed in transformers 5: warmup_steps takes a ratio when below 1"),
    ({"max_prompt_length": 512}, {}, {}, "max_prompt_length: 512 dropped; TRL 1.16 no longer truncates prompts"),
    ({"overwrite_output_dir": True}, {}, {},
     "overwrite_output_dir: true dropped; an earlier run in output_dir is moved aside (DIR.1)"),
    ({"vllm_device": "auto"}, {}, {}, "vllm_device: auto dropped; TRL 1.16 places vLLM itself"),
    ({"evaluation_strategy": "no"}, {"eval_strategy": "no"}, {}, "evaluation_strategy: no -> eval_strategy: no"),
    ({"no_cuda": True}, {"use_cpu": True}, {}, "no_cuda: true -> use_cpu: true"),
    ({"logging_dir": "tb"}, {}, {"TENSORBOARD_LOGGING_DIR": "tb"}, "logging_dir: tb -> env.TENSORBOARD_LOGGING_DIR: tb"),
])
def test_removed_settings_with_a_plain_intent_are_read_as_what_replaced_them(toy_plugin, extra, training, env, note):
    cfg = load_config(None, data=tiny(**extra))
    assert {k: cfg.training[k] for k in training} == training
    assert not set(extra) & set(cfg.training)
    assert cfg.env == env
    assert [n for n in cfg.notes if n.startswith(note)] != []


def test_the_translation_reaches_trls_arguments_and_the_command_line(toy_plugin, tmp_path):
    from grpo_core.config.grpo_args import training_args

    cfg = load_config(None, ["--warmup_ratio", "0.2"], data=tiny(max_prompt_length=9))
    assert cfg.cli == {"warmup_steps": 0.2}  # typed as warmup_steps takes it
    assert training_args(cfg, cfg.stages[0], device="cpu").warmup_steps == 0.2
    assert cfg.notes == ["max_prompt_length: 9 dropped; TRL 1.16 no longer truncates prompts; keep prompts short in "
                         "the dataset, completions are bounded by max_completion_length.",
                         "command line: warmup_ratio: 0.2 -> warmup_steps: 0.2; removed in transformers 5: "
                         "warmup_steps takes a ratio when below 1 (warmup_steps: 0.05)."]


@pytest.mark.parametrize("extra, expected", [
    ({"warmup_ratio": 0.1, "warmup_steps": 5},
     "'warmup_ratio' (removed) and 'warmup_steps' both set the same thing; keep warmup_steps."),
    ({"warmup_ratio": 1.5},  # not a ratio: warmup_steps would read it as 1.5 steps
     "'warmup_ratio' is not a GRPOConfig field in TRL 1.16: removed in transformers 5: warmup_steps takes a ratio "
     "when below 1 (warmup_steps: 0.05)."),
    ({"logging_dir": "tb", "env": {"TENSORBOARD_LOGGING_DIR": "x"}},
     "'logging_dir' (removed) and 'env.TENSORBOARD_LOGGING_DIR' both set the same thing; keep the env one."),
])
def test_an_ambiguous_removed_setting_is_still_refused(toy_plugin, extra, expected):
    with pytest.raises(ConfigError) as info:
        load_config(None, data=tiny(**extra))
    assert str(info.value) == expected


def test_strict_turns_a_translated_setting_into_an_error(grpo, tmp_path):
    path = write(tmp_path, tiny(warmup_ratio=0.1))
    code, out, err = grpo(path, "--dry-run")
    assert code == 0, err
    assert "note: warmup_ratio: 0.1 -> warmup_steps: 0.1; removed in transformers 5" in err
    code, out, err = grpo(path, "--dry-run", "--strict")
    assert code == 2 and out == ""
    assert err == ("Error: 'warmup_ratio' is not a GRPOConfig field in TRL 1.16: removed in transformers 5: "
                   "warmup_steps takes a ratio when below 1 (warmup_steps: 0.05) (--strict; without it: "
                   "warmup_ratio: 0.1 -> warmup_steps: 0.1).\n")


def test_strict_in_grpo_check(tmp_path, toy_plugin, capsys):
    from grpo_core.cli import main

    path = write(tmp_path, tiny(max_prompt_length=256, overwrite_output_dir=True))
    assert main(["check", str(path), "--strict"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"Error: 2 problems in {path}:\n  1. 'max_prompt_length' is not a GRPOConfig field")
    assert "  2. 'overwrite_output_dir' is not a GRPOConfig field in TRL 1.16" in err
    assert main(["check", str(path)]) == 0
    assert "note: max_prompt_length: 256 dropped" in capsys.readouterr().err


def test_strict_refuses_trls_old_torch_dtype(toy_plugin, tmp_path):
    data = {**tiny(), "torch_dtype": "float32", "model_name_or_path": str(tmp_path)}
    data.pop("model")
    assert load_config(None, data=data).model.dtype == "float32"
    with pytest.raises(ConfigError, match="'torch_dtype' is not a ModelConfig field in transformers 5: use dtype"):
        load_config(None, data=data, strict=True)


def test_a_step_that_depends_on_a_failed_one_adds_nothing(toy_plugin):
    data = {k: v for k, v in tiny().items() if k != "rewards"}
    with pytest.raises(ConfigProblems) as info:
        load_config(None, data={**data, "reward_funcs": ["test.digits"], "reward_weights": [1.0, 2.0],
                                "health": {"window": "x"}})
    # the weights' problem, not also "no rewards" for the rewards they left unset
    assert [str(p) for p in info.value.problems] == [
        "reward_weights [1.0, 2.0] must be a list of 1 numbers, one per reward (test.digits).",
        "health.window is 'x'; it must be a whole number >= 1 (default 5).",
    ]


@pytest.mark.parametrize("key", ["model.id", "dataset.name"])
def test_a_required_text_given_a_number_is_one_problem(toy_plugin, key):
    # --model.id 42 said "model.id is 42; it must be text" and also "model.id is required"
    with pytest.raises(ConfigError) as info:
        load_config(TINY, ["--model.id", str(TINY.parent), f"--{key}", "42"])
    assert not isinstance(info.value, ConfigProblems), str(info.value)
    assert str(info.value) == f"{key} is 42; it must be text or null (quote it to mean the text: '42') (default null)."


def test_older_open_r1_recipes_dataset_configs_is_one_dataset_config(toy_plugin, tmp_path):
    base = {k: v for k, v in tiny().items() if k != "dataset"}
    cfg = load_config(None, data={**base, "dataset_name": "data.jsonl", "dataset_configs": ["all"]})
    assert cfg.dataset.params == {"dataset_name": "data.jsonl", "dataset_config": "all"}
    assert cfg.notes == ["dataset_configs: ['all'] -> dataset_config: all; older open-r1 recipes' name for it."]
    with pytest.raises(ConfigError, match=r"'dataset_configs' \(\['a', 'b'\]\) is not a field of TRL or open-r1 any "
                                          r"more: use dataset_config \(one config name of dataset_name\)\.$"):
        load_config(None, data={**base, "dataset_name": "data.jsonl", "dataset_configs": ["a", "b"]})


@pytest.mark.parametrize("sampling, overrides, note", [
    ({"max_rounds": 3, "metric": "total"}, ["--sampling.dynamic", "false"],
     "sampling.max_rounds: 3, sampling.metric: total ignored: dynamic sampling is off; set sampling.dynamic: true "
     "to use them."),
    ({"oversample": 2}, [],
     "sampling.oversample: 2 ignored: dynamic sampling is off; set sampling.dynamic: true to use it."),
    ({"dynamic": True, "oversample": 2}, [], None),
    ({"max_rounds": 3}, ["--sampling.dynamic", "true"], None),
])
def test_dynamic_samplings_options_without_it_are_named_as_ignored(toy_plugin, sampling, overrides, note):
    """`sampling.oversample: 3` with dynamic sampling off changed nothing and said nothing."""
    cfg = load_config(None, overrides, data=tiny(sampling=sampling))
    assert [n for n in cfg.notes if n.startswith("sampling.")] == ([note] if note else [])
