"""One value checker for every key, before anything loads: a table generated from the schema
(every grpo setting), from peft's LoraConfig and from GRPOConfig's own fields, so a setting
is covered the day it is added. Each key given a value of a type it does not take (and one
just outside its range, where it has one) is refused with the key named; every default is
taken; a few runs through `grpo train --dry-run` and `grpo check` show the same end to end."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import typing

import pytest
import yaml

from grpo_core.base.errors import GrpoError
from grpo_core.base.problems import ConfigProblems
from grpo_core.config.load import load_config
from grpo_core.config.overrides import field_types
from grpo_core.config.schema import OTHER_KEYS, SECTION_TYPES
from grpo_core.config.values import LORA_RANGES, RANGES, section_range, section_type, value_problem

from .conftest import TINY

GRPO = ("trl:GRPOConfig", "trl", "transformers")
LORA = ("peft:LoraConfig", "peft")
# tried in turn; a key's wrong value is the first its type does not take (a list first: sampling.dynamic
# also takes a mapping, the shorthand sampling: {dynamic: {max_rounds: 3}})
CANDIDATES = (["no-such"], {"no": "such"}, "no-such-value", 12345, 0.5, True)
# a key that takes any YAML value and checks it itself (log.rollouts: all, none or a step count)
OWN_CHECK = {"log.rollouts": "every-other"}


def tiny() -> dict:
    data = yaml.safe_load(TINY.read_text())
    data["model"]["id"] = str(TINY.parent)  # any existing folder: no model loads here
    return data


def put(data: dict, dotted: str, value) -> dict:
    node = data
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = value
    return data


def wrong(vtype) -> list:
    """A value of a type ``vtype`` does not take, and a text outside its choices if it has them."""
    out = [next(c for c in CANDIDATES if value_problem("k", c, vtype) is not None)]
    if vtype.choices and "no-such-value" not in out:
        out.append("no-such-value")
    return out


def outside(vtype, rng) -> list:
    whole = "float" not in vtype.accepts
    return [] if rng is None else [int(v) if whole else v for v in rng.outside(whole)]


def schema_cases() -> list[tuple[str, object]]:
    cases = []
    for section, cls in SECTION_TYPES.items():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            key = f"{section}.{f.name}"
            vtype = section_type(f, hints[f.name])
            values = [OWN_CHECK[key]] if key in OWN_CHECK else wrong(vtype)
            cases += [(key, v) for v in values + outside(vtype, section_range(f, vtype))]
    return cases


def lora_cases() -> list[tuple[str, object]]:
    cases = [("lora.merge", "abc"), ("lora.enabled", "abc")]
    for name, vtype in field_types(*LORA).items():
        cases += [(f"lora.{name}", v) for v in wrong(vtype) + outside(vtype, LORA_RANGES.get(name))]
    return cases


def grpo_cases() -> list[tuple[str, object]]:
    cases = []
    for name, vtype in field_types(*GRPO).items():
        cases += [(name, v) for v in wrong(vtype) + outside(vtype, RANGES.get(name))]
    return cases


OTHER = [(key, 12345) for key in OTHER_KEYS]  # rewards, stages, lora, environment, tools, env
CASES = schema_cases() + OTHER + lora_cases() + grpo_cases()


def test_the_table_covers_every_key():
    from peft import LoraConfig
    from trl import GRPOConfig

    keys = {key for key, _ in CASES}
    settings = {f"{s}.{f.name}" for s, cls in SECTION_TYPES.items() for f in dataclasses.fields(cls)}
    grpo = {f.name for f in dataclasses.fields(GRPOConfig) if f.init}
    lora = {f"lora.{f.name}" for f in dataclasses.fields(LoraConfig) if f.init}
    assert settings | grpo | lora | set(OTHER_KEYS) <= keys
    assert set(RANGES) <= grpo and set(LORA_RANGES) <= {k[5:] for k in lora}  # no range for a field TRL lacks


def test_every_key_refuses_a_wrong_value_by_name(toy_plugin):
    """The table: each case is the tiny config with one wrong value, through load_config (what
    `grpo train`, its --dry-run and `grpo check` run first); its refusal names the key."""
    unnamed = []
    for key, value in CASES:
        try:
            load_config(None, data=put(tiny(), key, value))
        except GrpoError as exc:
            problems = exc.problems if isinstance(exc, ConfigProblems) else [exc]
            leaf = key.split(".")[-1] if key.startswith("lora.") else key
            if not any(leaf in str(p) for p in problems):
                unnamed.append(f"{key}={value!r}: {exc}")
        else:
            unnamed.append(f"{key}={value!r}: taken")
    assert unnamed == []
    assert len(CASES) > 400  # 250+ keys: the generator found them (TRL 1.16: 191 GRPOConfig fields)


def test_every_default_is_taken():
    """The positive control: nothing the defaults set is refused (a range too tight, a type misread)."""
    from peft import LoraConfig
    from trl import GRPOConfig

    for cls, dists, ranges in ((GRPOConfig, GRPO, RANGES), (LoraConfig, LORA, LORA_RANGES)):
        types = field_types(*dists)
        for f in dataclasses.fields(cls):
            if not f.init or (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING):
                continue
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            if dataclasses.is_dataclass(default):
                continue  # an object (peft's runtime_config): no config file writes it
            assert value_problem(f.name, default, types[f.name], ranges.get(f.name)) is None, f.name
    for section, cls in SECTION_TYPES.items():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            vtype = section_type(f, hints[f.name])
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            assert value_problem(f.name, default, vtype, section_range(f, vtype)) is None, f"{section}.{f.name}"


def test_each_range_takes_the_values_at_its_edges():
    """A range too tight (or empty) refuses what TRL takes: each bound itself, or just inside an open one."""
    types = field_types(*GRPO)
    for ranges, t in ((RANGES, types), (LORA_RANGES, field_types(*LORA))):
        for name, rng in ranges.items():
            whole = "float" not in t[name].accepts
            step = 1 if whole else 1e-3
            edges = [rng.low + step if rng.low_open else rng.low] if rng.low is not None else []
            edges += [rng.high - step if rng.high_open else rng.high] if rng.high is not None else []
            edges += list(rng.also)
            for value in edges:
                value = int(value) if whole else float(value)
                assert value_problem(name, value, t[name], rng) is None, (name, value)


@pytest.mark.parametrize("name, inside", [
    ("temperature", [1e-6, 1.0, 2.5]), ("top_p", [1e-6, 1.0]), ("num_generations", [2, 16]),
    ("max_steps", [-1, 1]), ("adam_beta2", [0.0, 0.999]), ("vllm_server_port", [1, 65535]),
    ("num_iterations", [1, 4]), ("epsilon", [0.0, 0.28]), ("save_steps", [0.1, 500]),
])
def test_the_edges_of_each_range_are_taken(name, inside):
    vtype = field_types(*GRPO)[name]
    for value in inside:
        assert value_problem(name, value, vtype, RANGES[name]) is None, (name, value)


def test_choices_and_types_read_from_trl():
    """Worked out by hand from TRL 1.16's GRPOConfig: its help texts, enums, metadata and annotations."""
    t = field_types(*GRPO)
    assert set(t["loss_type"].choices) == {"grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"}
    assert set(t["scale_rewards"].choices) == {"group", "batch", "none", True, False}
    assert set(t["importance_sampling_level"].choices) == {"token", "sequence"}
    assert set(t["multi_objective_aggregation"].choices) == {"sum_then_normalize", "normalize_then_sum"}
    assert set(t["vllm_importance_sampling_mode"].choices) == {"token_truncate", "token_mask", "sequence_truncate",
                                                               "sequence_mask"}
    assert set(t["vllm_mode"].choices) == {"server", "colocate"}
    assert set(t["include_num_input_tokens_seen"].choices) == {"all", "non_padding", "no", True, False}
    assert t["pad_to_multiple_of"].choices == ("auto",) and "int" in t["pad_to_multiple_of"].accepts
    assert {"linear", "cosine", "constant"} <= set(t["lr_scheduler_type"].choices)  # SchedulerType
    assert {"adamw_torch", "sgd", "adafactor"} <= set(t["optim"].choices)  # OptimizerNames
    assert {"none", "all", "wandb", "tensorboard"} <= set(t["report_to"].items)  # transformers' integrations
    assert t["learning_rate"].accepts == {"float"} and t["max_completion_length"].accepts == {"int", "null"}
    assert t["output_dir"].accepts == {"str", "null"} and t["lr_scheduler_kwargs"].accepts == {"dict", "str", "null"}


@pytest.mark.parametrize("key, value, expected", [
    # the issue's list: accepted before, and one traceback (a few-shot example's answer_template 42)
    ("model.attn_implementation", 42, "model.attn_implementation is 42; it must be text or null"),
    ("model.revision", 42, "model.revision is 42; it must be text or null (quote it to mean the text: '42')"),
    ("model.generation_threads", 0, "model.generation_threads is 0; it must be a whole number >= 1, 'auto' or null"),
    ("lora.target_modules", 42, "lora.target_modules is 42; it must be text, a list or null"),
    ("lora.merge", "abc", "lora.merge is 'abc'; it must be true or false."),
    ("lora.enabled", "abc", "lora.enabled is 'abc'; it must be true or false."),
    ("loss_type", "gspo", "loss_type is 'gspo'; use one of dapo, grpo, dr_grpo, bnpo, cispo, sapo, luspo, vespo"),
    ("scale_rewards", "std", "scale_rewards is 'std'; use one of group, batch, none, true, false."),
    ("report_to", "wandbb", "report_to is 'wandbb'; use one of none, all, "),
    ("importance_sampling_level", "seq", "importance_sampling_level is 'seq'; use one of token, sequence"),
    ("dataset.answer_template", 42, "dataset.answer_template is 42; it must be text or null"),
    # refused before without naming the key
    ("dataset.eval_split", 42, "dataset.eval_split is 42; it must be text or null"),
    ("lr_scheduler_type", "cosin", "lr_scheduler_type is 'cosin'; use one of linear, cosine, "),
    ("optim", "adam", "optim is 'adam'; use one of adamw_torch, "),
    # out of range, taken before
    ("num_iterations", 0, "num_iterations is 0; it must be a whole number >= 1 (updates per generated batch)."),
    ("max_steps", 0, "max_steps is 0; it must be a whole number >= 1 or -1 (-1: num_train_epochs decides)."),
    ("epsilon", -0.1, "epsilon is -0.1; it must be a number >= 0."),
    ("top_k", -1, "top_k is -1; it must be a whole number >= 0 (0: no top-k filtering)."),
    ("adam_beta1", 1.0, "adam_beta1 is 1.0; it must be a number in [0, 1)."),
    ("health.zero_std_frac", 1.5, "health.zero_std_frac is 1.5; it must be a number in [0, 1] (default 0.9)."),
])
def test_the_cases_the_issue_found(toy_plugin, key, value, expected):
    with pytest.raises(GrpoError) as info:
        load_config(None, data=put(tiny(), key, value))
    assert expected in str(info.value)


@pytest.mark.parametrize("line, expected", [
    # YAML's .nan and .inf are floats: a range's comparisons are all False for NaN, so only the
    # finiteness check refuses them (temperature: .nan sampled from NaN logits)
    ("temperature: .nan", "temperature is nan; it must be a number > 0 (1.0 samples as the model is)."),
    ("temperature: .inf", "temperature is inf; it must be a number > 0 (1.0 samples as the model is)."),
    ("learning_rate: -.inf", "learning_rate is -inf; it must be a number >= 0."),
    ("top_p: .nan", "top_p is nan; it must be a number in (0, 1]."),
    ("health:\n  reward_time_limit: .inf", "health.reward_time_limit is inf; it must be a number >= 0.001"),
    ("lora:\n  lora_dropout: .nan", "lora_dropout is nan; it must be a number"),
])
def test_nan_and_infinite_numbers_are_refused_by_key(toy_plugin, tmp_path, line, expected):
    path = tmp_path / "run.yaml"
    path.write_text(TINY.read_text() + "\n" + line + "\n")
    with pytest.raises(GrpoError) as info:
        load_config(path, ["--model.id", str(TINY.parent)])
    assert expected in str(info.value)


def test_a_string_is_not_a_switch(toy_plugin):
    # before: --lora.merge abc wrote a merged model, --lora.enabled abc kept LoRA on
    for flag in ("--lora.merge", "--lora.enabled"):
        with pytest.raises(GrpoError, match=f"{flag[2:]} is 'abc'; it must be true or false"):
            load_config(TINY, ["--model.id", str(TINY.parent), flag, "abc"])
    cfg = load_config(TINY, ["--model.id", str(TINY.parent), "--lora.enabled", "false"])
    assert cfg.lora is None and cfg.merge is False
    cfg = load_config(TINY, ["--model.id", str(TINY.parent), "--lora.merge", "true"])
    assert cfg.lora is not None and cfg.merge is True


def test_command_line_text_fields_take_what_trl_reads(toy_plugin):
    cfg = load_config(TINY, ["--model.id", str(TINY.parent), "--scale_rewards", "false", "--pad_to_multiple_of", "64"])
    assert cfg.cli == {"scale_rewards": False, "pad_to_multiple_of": 64}  # TRL: false is 'none'


# ------------------------------------------------------------------ end to end


def test_dry_run_refuses_each_by_name_with_no_traceback(grpo, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(put(put(tiny(), "lora.merge", "abc"), "dataset.answer_template", 42)))
    code, out, err = grpo(path, "--dry-run", "--num_iterations", "0", "--loss_type", "gspo", "--top_p", "1.5")
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith(f"Error: 5 problems in {path}:")
    for key in ("lora.merge is 'abc'", "dataset.answer_template is 42", "num_iterations is 0", "loss_type is 'gspo'",
                "top_p is 1.5"):
        assert key in err, key
    assert not (tmp_path / "out").exists()


def test_grpo_check_uses_the_same_checker(toy_plugin, tmp_path, capsys):
    from grpo_core.cli import main

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(put(tiny(), "importance_sampling_level", "seq")))
    assert main(["check", str(path)]) == 2
    assert capsys.readouterr().err.startswith("Error: importance_sampling_level is 'seq'; use one of token, sequence")


def test_a_refusal_comes_before_torch_or_trl_loads(tmp_path):
    """A real `grpo train --dry-run` process, installed plugins: the checker needs neither torch nor TRL."""
    field_types(*GRPO)  # the field cache, as any earlier run leaves it (built once per TRL version)
    field_types(*LORA)
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"model": {"id": str(TINY.parent)}, "dataset": {"name": "arithmetic"},
                                    "rewards": ["math.correctness"], "max_steps": 0, "lora": {"enabled": "abc"}}))
    code = ("import sys\nfrom grpo_core.cli import main\nrc = main(['train', sys.argv[1], '--dry-run'])\n"
            "print('HEAVY', [m for m in ('torch', 'trl', 'transformers', 'peft') if m in sys.modules])\n"
            "sys.exit(rc)\n")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "GRPO_PLUGINS": "grpo-rewards-math,grpo-datasets"})
    assert done.returncode == 2, done.stderr
    assert "max_steps is 0; it must be a whole number >= 1 or -1" in done.stderr
    assert "lora.enabled is 'abc'; it must be true or false." in done.stderr
    assert "Traceback" not in done.stderr and "HEAVY []" in done.stdout
