"""The training config: YAML + command line through TRL's parser, our sections,
and every bad-config error raised before any model loads."""

from __future__ import annotations

import pytest

from grpo_core.config.grpo_args import training_args
from grpo_core.config.load import load_config

from .conftest import TINY


@pytest.fixture
def no_model(monkeypatch):
    """Fail loudly if anything tries to load a model."""
    import grpo_core.config.models

    def boom(*a, **k):
        raise AssertionError("a model was loaded before the config was checked")

    monkeypatch.setattr(grpo_core.config.models, "load", boom)
    monkeypatch.setattr(grpo_core.config.models, "resolve", boom)


def args_for(tmp_path, text: str = "", *cli: str):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(TINY.read_text() + "\n" + text)
    run = load_config(cfg, ["--model.id", str(tmp_path), *cli])
    return run, training_args(run, run.stages[0], device="cpu")


def test_yaml_fields_go_through_trl_parser_and_the_command_line_wins(toy_plugin, tmp_path):
    run, args = args_for(
        tmp_path, "beta: 0.04\nlr_scheduler_type: constant\nlearning_rate: 1e-4\n",
        "--temperature", "0.7", "--learning_rate", "3e-4", "--max-steps", "7",
    )
    assert args.beta == 0.04  # a GRPOConfig field from YAML
    assert args.lr_scheduler_type == "constant" or args.lr_scheduler_type.value == "constant"
    assert args.temperature == 0.7  # from the command line
    assert args.learning_rate == 3e-4  # the command line overrides the YAML
    assert args.max_steps == 7
    assert args.reward_weights == [1.0, 0.5]  # from the rewards section


def test_yaml_scientific_notation_without_a_dot_is_a_float(toy_plugin, tmp_path):
    # PyYAML reads 1e-4 as a string; TRL's parser converts it, as in `trl grpo --config`.
    _, args = args_for(tmp_path, "learning_rate: 1e-4\n")
    assert args.learning_rate == pytest.approx(1e-4)


def test_cpu_chosen_automatically_without_bf16(toy_plugin, tmp_path):
    _, args = args_for(tmp_path)
    assert args.use_cpu is True and args.bf16 is False
    assert args.logging_steps == 1  # one console line per step


def test_user_choice_beats_the_automatic_one(toy_plugin, tmp_path):
    _, args = args_for(tmp_path, "logging_steps: 5\n", "--output_dir", str(tmp_path / "x"))
    assert args.logging_steps == 5
    assert args.output_dir == str(tmp_path / "x")


def test_default_output_dir_is_named_after_the_config(toy_plugin, tmp_path):
    cfg = tmp_path / "my-run.yaml"
    cfg.write_text(TINY.read_text())
    run = load_config(cfg, ["--model.id", str(tmp_path)])
    assert training_args(run, run.stages[0], device="cpu").output_dir.endswith("outputs/my-run")


def test_section_overrides_on_the_command_line(toy_plugin, tmp_path):
    run, _ = args_for(tmp_path, "", "--lora.r", "8", "--dataset.params.size", "5",
                      "--rewards", "test.short(max_chars=10):2", "test.digits")
    assert run.lora["r"] == 8 and run.lora["lora_alpha"] == 8
    assert run.dataset.params == {"size": 5}
    assert [str(s) for s in run.stages[0].rewards] == ["test.short(max_chars=10):2", "test.digits:1"]


def test_lora_off_means_full_fine_tune(toy_plugin, tmp_path):
    run, _ = args_for(tmp_path, "", "--lora", "false")
    assert run.lora is None


# ------------------------------------------------------------- errors


def fails(grpo, *args, text: str = "", tmp_path=None, model=True):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(TINY.read_text() + "\n" + text)
    code, out, err = grpo(cfg, *args, model=model)
    assert code == 2, out + err
    return err


@pytest.mark.parametrize(
    "text, cli, expected",
    [
        # --strict: without it, removed settings whose intent is plain are translated (test_config_problems.py)
        ("max_prompt_length: 256\n", ["--strict"], ["max_prompt_length", "removed", "max_completion_length"]),
        ("num_generation: 4\n", [], ["num_generation", "num_generations"]),
        ("", ["--max_prompt_length", "64", "--strict"], ["max_prompt_length", "max_completion_length"]),
        ("", ["--num_generation", "4"], ["num_generations"]),
        ("model_name_or_path: x\n", [], ["model.id"]),
        ("evaluation_strategy: steps\n", ["--strict"], ["eval_strategy"]),
        ("warmup_ratio: 0.1\n", ["--strict"], ["warmup_steps"]),
        ("learning_rat: 0.1\n", [], ["learning_rat", "learning_rate"]),
        ("", ["--lerning_rate", "0.1"], ["lerning_rate", "learning_rate"]),
        ("reward_weights: [1.0, 2.0]\n", [], ["reward_weights", "rewards section"]),
    ],
)
def test_removed_renamed_and_unknown_fields_name_their_replacement(grpo, no_model, tmp_path, text, cli, expected):
    err = fails(grpo, *cli, text=text, tmp_path=tmp_path)
    for word in expected:
        assert word in err


def test_unknown_reward_lists_the_closest(grpo, no_model, tmp_path):
    err = fails(grpo, "--rewards", "test.digit", tmp_path=tmp_path)
    assert "unknown reward 'test.digit'" in err and "test.digits" in err


def test_unknown_dataset_lists_the_closest(grpo, no_model, tmp_path):
    err = fails(grpo, "--dataset.name", "toys", tmp_path=tmp_path)
    assert "unknown dataset 'toys'" in err and "toy" in err


def test_missing_column_fails_before_the_model(grpo, no_model, tmp_path):
    err = fails(grpo, "--dataset.name", "toy_no_answer", "--rewards", "test.exact", tmp_path=tmp_path)
    assert "test.exact" in err and "'answer'" in err and "question" in err


@pytest.mark.parametrize(
    "rewards, expected",
    [
        (["test.digits:heavy"], "not a number"),
        (["test.digits:1e999"], "finite"),
        (["test.digits:0", "test.short:0"], "every reward weight is 0"),
        (["test.short(max_char=3)"], "did you mean 'max_chars'"),
        (["test.short(max_chars='x')"], "expects int"),
    ],
)
def test_bad_weights_and_params_fail_before_the_model(grpo, no_model, tmp_path, rewards, expected):
    err = fails(grpo, "--rewards", *rewards, tmp_path=tmp_path)
    assert expected in err


def test_bad_weight_in_a_mapping(grpo, no_model, tmp_path):
    text = "rewards:\n  - {name: test.digits, weight: heavy}\n"
    cfg = tmp_path / "w.yaml"
    cfg.write_text(TINY.read_text().split("rewards:")[0] + text + "max_steps: 2\n")
    code, out, err = grpo(cfg)
    assert code == 2 and "heavy" in err


def test_unknown_lora_option_suggests_the_peft_name(grpo, no_model, tmp_path):
    err = fails(grpo, "--lora.alpha", "16", tmp_path=tmp_path)
    assert "lora has no option 'alpha'" in err and "lora_alpha" in err


def test_unknown_section_option(grpo, no_model, tmp_path):
    err = fails(grpo, "--dataset.few_shots", "2", tmp_path=tmp_path)
    assert "few_shot" in err


def test_missing_model_file(grpo, no_model, tmp_path):
    err = fails(grpo, "--model.id", str(tmp_path / "nope.gguf"), tmp_path=tmp_path, model=False)
    assert "nope.gguf" in err and "does not exist" in err


def test_stage_with_an_unknown_reward(grpo, no_model, tmp_path):
    text = "stages:\n  - {name: a, rewards: [test.short], max_steps: 1}\n  - {name: b, rewards: [test.nope], max_steps: 1}\n"
    err = fails(grpo, text=text, tmp_path=tmp_path)
    assert "stage 'b'" in err or "test.nope" in err


def test_bad_trl_value_is_a_clean_error(grpo, no_model, tmp_path):
    err = fails(grpo, "--learning_rate", "fast", tmp_path=tmp_path)
    assert "learning_rate" in err


@pytest.mark.parametrize(
    "text, cli, expected",
    [
        ("", ["--temperature", "-1"], "temperature is -1.0; it must be a number > 0"),
        ("", ["--top_p", "0"], "top_p is 0.0; it must be a number in (0, 1]"),
        ("", ["--learning_rate", "-0.0001"], "learning_rate is -0.0001; it must be a number >= 0"),
        ("", ["--max_completion_length", "0"], "max_completion_length is 0; it must be a whole number >= 1"),
        ("seed: [1]\n", [], "seed is [1]; it must be a whole number"),
        ("", ["--lora.r", "big"], "lora.r is 'big'; it must be a whole number >= 1"),
        ("", ["--lora.r", "-3"], "lora.r is -3; it must be a whole number >= 1"),
        ("", ["--lora.lora_dropout", "2"], "lora.lora_dropout is 2; it must be a number in [0, 1)"),
        ("", ["--health.window", "x"], "health.window is 'x'; it must be a whole number >= 1 (default 5)"),
        ("", ["--health.max_reward_errors", "-0.1"], "health.max_reward_errors is -0.1; it must be a number in [0, 1] (default 0.2)"),
        ("", ["--health.on_nonfinite", "ignore"], "health.on_nonfinite is 'ignore'; use one of stop, skip"),
        ("", ["--model.dtype", "int8"], "model.dtype 'int8' is not one of auto, float32, bfloat16, float16"),
        # passed the dry run and failed once the model had loaded (transformers' or peft's traceback)
        ("", ["--model.attn_implementation", "nonsense"], "model.attn_implementation 'nonsense' is not an attention "
         "implementation transformers "),
        ("", ["--model.attn_implementation", "sdpaa"], "knows (did you mean 'sdpa'?): use one of eager, "),
        ("", ["--lora.target_modules", "[nosuch_module]"], "lora.target_modules 'nosuch_module' matches no module of "),
        ("", ["--lora.target_modules", "q_proj"], "lora.target_modules 'q_proj' matches no module of "),
    ],
)
def test_dry_run_catches_values_that_used_to_crash_mid_run(grpo, no_model, tmp_path, text, cli, expected):
    err = fails(grpo, "--dry-run", *cli, text=text, tmp_path=tmp_path)
    assert expected in err
    assert "Traceback" not in err


def test_target_modules_are_checked_on_the_model_built_without_weights(grpo, no_model, tmp_path):
    # the tiny Qwen2 (tests/conftest.py): its linear layers by hand
    layers = "down_proj, gate_proj, k_proj, lm_head, o_proj, q_proj, up_proj, v_proj"
    err = fails(grpo, "--dry-run", "--lora.target_modules", "[nosuch, other]", tmp_path=tmp_path)
    assert f"; its linear layers are {layers} (or give all-linear)." in err
    err = fails(grpo, "--dry-run", "--lora.target_modules", "q_proj", tmp_path=tmp_path)
    assert ("a text is a regular expression matched against whole names such as 'model.layers.0.self_attn.q_proj' "
            "(a list, [q_proj, v_proj], matches names' ends)") in err
    # one name of a list that matches nothing: peft trains the others silently; said, and the run goes on
    code, out, err = grpo(TINY, "--dry-run", "--lora.target_modules", "[q_proj, nosuch]")
    assert code == 0, err
    assert ("note: lora.target_modules: 'nosuch' matches no module of " in out
            and f"LoRA goes on the others only (its linear layers: {layers}).\n" in out)
    for fine in ("[q_proj, v_proj]", ".*\\.(q|v)_proj", "all-linear"):
        code, out, err = grpo(TINY, "--dry-run", "--lora.target_modules", fine)
        assert code == 0 and "lora.target_modules" not in out + err, (fine, out, err)


def test_target_modules_are_checked_right_after_loading_when_the_config_is_not_here(toy_plugin, tiny_model,
                                                                                     monkeypatch, tmp_path):
    # a hub model not downloaded yet: no config to build from before loading; the loaded model is checked
    # before the trainer's set-up (peft's NoMatchingPeftModuleError traceback)
    from grpo_core.base.errors import ConfigError
    from grpo_core.config import models
    from grpo_core.run.prepare import load_model, prepare

    monkeypatch.setattr(models, "module_names", lambda *a, **k: None)
    cfg = load_config(TINY, ["--model.id", str(tiny_model), "--output_dir", str(tmp_path / "out"),
                             "--lora.target_modules", "[nosuch_module]"])
    prepared = prepare(cfg, check=False, log=lambda line: None)
    with pytest.raises(ConfigError, match="lora.target_modules 'nosuch_module' matches no module of .*; its linear "
                                          "layers are down_proj, gate_proj"):
        load_model(prepared, log=lambda line: None)


@pytest.mark.parametrize(
    "reward, expected",
    [("math.correctness(timeout=0)", "timeout=0: give the per-item time limit in seconds (> 0)"),
     ("math.correctness(workers=0)", "workers=0: give a positive number of checker processes"),
     ("format.json(schema={'$ref': '#/definitions/nope'})", "$ref '#/definitions/nope' in JSON Schema")],
)
def test_reward_parameters_are_probed_before_the_model(grpo, no_model, tmp_path, register_plugin, reward, expected):
    import grpo_rewards_format
    import grpo_rewards_math

    register_plugin(grpo_rewards_math, name="math")
    register_plugin(grpo_rewards_format, name="format")
    err = fails(grpo, "--dry-run", "--rewards", reward, tmp_path=tmp_path)
    assert expected in err


def test_an_output_dir_that_cannot_be_written_is_one_line_before_the_model(grpo, no_model, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for extra in (["--dry-run"], []):
        err = fails(grpo, *extra, "--output_dir", str(blocker / "run"), tmp_path=tmp_path)
        assert f"output_dir: cannot write or read {blocker / 'run'}" in err and "Traceback" not in err


def test_a_dry_run_leaves_no_folders_behind(grpo, no_model, tmp_path):
    code, out, err = grpo(TINY, "--dry-run", "--output_dir", str(tmp_path / "new" / "run"))
    assert code == 0, err
    assert not (tmp_path / "new").exists()


def test_file_system_errors_read_as_one_line_with_the_fix():
    import errno

    from grpo_core.errors import describe_os_error

    full = OSError(errno.ENOSPC, "No space left on device", "/data/run/checkpoint-3/optimizer.pt")
    assert describe_os_error(full) == ("cannot write or read /data/run/checkpoint-3/optimizer.pt (No space left "
                                       "on device): the disk is full: free space there, or point output_dir at "
                                       "a disk with room.")
    denied = PermissionError(errno.EACCES, "Permission denied", "/srv/out")
    assert "permission denied: fix the folder's permissions" in describe_os_error(denied)
    torch_full = RuntimeError("[enforce fail at inline_container.cc:783] . PytorchStreamWriter failed writing file "
                              "data/0: file write failed, unexpected pos 8384 vs 8278")
    assert describe_os_error(torch_full).startswith("saving failed, most likely a full disk")
    assert describe_os_error(RuntimeError("something else")) is None


def test_config_yaml_re_runs_the_same_run(grpo, tiny_model, tmp_path):
    """config.yaml keeps every section a run is trained with: re-read, it is the same config
    (sampling, learning, held-out and rollout-log settings included, not only the defaults')."""
    from dataclasses import asdict

    out = tmp_path / "run"
    code, _, err = grpo(str(TINY), "--max_steps", "1", "--learning.method", "zvp(alpha=0.2)", "--learning.metric", "test.digits", "--sampling.dynamic", "true",
                        "--sampling.max_rounds", "2", "--heldout.prompts", "3", "--log.rollouts", "2",
                        "--sampling.precision", "float32", out=out)
    assert code == 0, err
    again = load_config(out / "config.yaml", [])
    assert (again.learning.method, again.learning.metric) == ("zvp(alpha=0.2)", "test.digits")
    assert (again.sampling.dynamic, again.sampling.max_rounds, again.sampling.precision) == (True, 2, "float32")
    assert again.heldout.prompts == 3 and again.log.rollouts == 2
    first = load_config(TINY, ["--learning.method", "zvp(alpha=0.2)", "--learning.metric", "test.digits", "--sampling.dynamic", "true",
                               "--sampling.max_rounds", "2", "--heldout.prompts", "3", "--log.rollouts", "2",
                               "--sampling.precision", "float32", "--model.id", str(tiny_model)])
    for name in ("sampling", "learning", "heldout", "log", "health"):
        assert asdict(getattr(again, name)) == asdict(getattr(first, name)), name
