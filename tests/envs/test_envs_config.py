"""Every environment check runs before the model loads: unknown names (with the
closest), bad parameters, a dataset without the columns an environment reads, a
chat template that cannot render or parse tool calls, transformers too old, a
tool the model cannot be told about. Run as `grpo train --dry-run`, which loads no
model, with model loading made to fail loudly."""

from __future__ import annotations

import shutil

import pytest

from .conftest import write_config

BASE = """
model: {dtype: float32}
max_steps: 2
per_device_train_batch_size: 2
num_generations: 2
max_completion_length: 64
report_to: []
"""


@pytest.fixture(autouse=True)
def no_model(monkeypatch):
    """Loading weights is an error here: every check must come first."""
    import transformers

    def boom(*args, **kwargs):
        raise AssertionError("a model was loaded before the environment checks")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", boom)


def dry_run(grpo, tmp_path, text: str, model=True):
    config = write_config(tmp_path / "c.yaml", BASE + text)
    return grpo("train", config, "--dry-run", "--output_dir", tmp_path / "out", model=model)


def test_a_valid_environment_config_passes_and_says_what_scores(grpo, tmp_path):
    code, out, err = dry_run(grpo, tmp_path, "dataset: {name: toy_guess}\nenvironment: guess_number(max_guesses=5):2\n")
    assert code == 0, out + err
    assert "rewards guess_number:2 (get_reward)" in out  # no rewards list needed: the game scores itself
    assert "grpo check: skipped" in out


@pytest.mark.parametrize("environment, message", [
    ("guess", "unknown environment 'guess'. Closest registered: guess_number."),
    ("guess_number(max_gueses=5)", "environment 'guess_number(max_gueses=5)' has no parameter 'max_gueses' "
                                   "(did you mean 'max_guesses'?)"),
    ("guess_number(max_guesses=0)", "rejects its parameters: max_guesses=0: give a whole number of guesses >= 1."),
    ("'python(sandbox=\"docker\")'", "sandbox='docker': choose one of auto, bwrap, unshare, rlimits"),
    ("'python:2.0'", "environment 'python:2' has no get_reward(), so a weight means nothing"),
    ("'guess_number(max_guesses=5) extra'", "unexpected 'extra' after the environment"),
])
def test_bad_environment_specs_name_the_value_and_the_fix(grpo, tmp_path, environment, message):
    code, out, err = dry_run(grpo, tmp_path, f"dataset: {{name: toy_guess}}\nenvironment: {environment}\n")
    assert code == 2
    assert message in err


def test_an_environment_without_get_reward_still_needs_rewards(grpo, tmp_path):
    code, out, err = dry_run(grpo, tmp_path, "dataset: {name: toy_arithmetic}\nenvironment: python\n")
    assert code == 2 and "no rewards: add a rewards list" in err


def test_the_mapping_form_needs_the_environment_column(grpo, tmp_path):
    code, out, err = dry_run(grpo, tmp_path, "dataset: {name: toy_arithmetic}\n"
                                             "environment: {math: python, game: guess_number}\n")
    assert code == 2
    assert ("picks each row's environment by the dataset's 'environment' column, and dataset 'toy_arithmetic' "
            "(split train) has none (columns: question, answer, prompt)") in err


def test_every_value_of_the_environment_column_must_be_mapped(grpo, tmp_path):
    code, out, err = dry_run(grpo, tmp_path, "dataset: {name: toy_mixed}\nenvironment: {math: python}\n"
                                             "rewards: [math.correctness]\n")
    assert code == 2
    assert "its 'environment' column names 'game', which environment does not map; it maps 'math'" in err


def numbered(split: str = "train"):
    from datasets import Dataset

    return Dataset.from_dict({"question": ["a", "b"], "environment": [1, 2], "answer": ["1", "2"]})


def test_the_environment_column_must_hold_names(grpo, tmp_path, register_plugin):
    import types

    import grpo_core

    mod = types.ModuleType("numbered_plugin")
    mod.register_datasets = grpo_core.hookimpl(lambda register: register("numbered", numbered))
    register_plugin(mod, name="numbered_plugin")
    code, out, err = dry_run(grpo, tmp_path, "dataset: {name: numbered}\nenvironment: {1: python, 2: python}\n"
                                             "rewards: [math.correctness]\n")
    assert code == 2
    assert "its 'environment' column must hold environment names (text), got 1, 2." in err


def test_the_columns_reset_reads_must_be_in_the_dataset(grpo, tmp_path):
    code, out, err = dry_run(grpo, tmp_path, "dataset: {name: toy_arithmetic}\nenvironment: guess_number\n")
    assert code == 2
    assert "environment 'guess_number' resets from the dataset's secret column(s)" in err


def test_a_chat_template_that_cannot_render_tools_is_refused_before_the_model(grpo, tiny_model, tmp_path):
    # the default tiny model's template prints role and content only: tool calls and results vanish
    code, out, err = dry_run(grpo, tmp_path, "dataset: {name: toy_guess}\nenvironment: guess_number\n",
                             model=tiny_model)
    assert code == 2
    assert f"the chat template of {tiny_model} cannot render a tool-calling conversation" in err


def test_a_template_trl_cannot_parse_tool_calls_from_is_refused(grpo, tool_model, tmp_path):
    from transformers import AutoTokenizer

    from grpo_core.testing import tool_chat_template

    model = tmp_path / "model"
    shutil.copytree(tool_model, model)
    tokenizer = AutoTokenizer.from_pretrained(model)
    tokenizer.chat_template = tool_chat_template() + "\n"  # renders tools, but is no template TRL knows
    tokenizer.save_pretrained(model)
    code, out, err = dry_run(grpo, tmp_path, "dataset: {name: toy_guess}\nenvironment: guess_number\n", model=model)
    assert code == 2
    assert f"TRL cannot read tool calls out of {model}'s completions" in err


def test_transformers_too_old_for_environments(grpo, tmp_path, monkeypatch):
    import importlib.metadata

    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda d: "5.1.0" if d == "transformers" else real(d))
    code, out, err = dry_run(grpo, tmp_path, "dataset: {name: toy_guess}\nenvironment: guess_number\n")
    assert code == 2
    # grpo itself asks for transformers >= 5.2 (environments' own minimum too): said at start-up
    assert ("transformers 5.1.0 is installed; grpo is tested with transformers>=5.3,<6 and relies on its "
            "internals: pip install 'transformers>=5.3,<6'") in err


TOOLS = '''
def add(a: int, b: int) -> int:
    """Add two whole numbers.

    Args:
        a: The first.
        b: The second.
    """
    return a + b


def shout(text):
    return text.upper()
'''


def test_plain_tools_by_file_and_registered_name(grpo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_tools.py").write_text(TOOLS)
    code, out, err = dry_run(grpo, tmp_path, "dataset: {name: toy_arithmetic, system_prompt: plain}\ntools: [my_tools.py:add, python]\n"
                                             "rewards: [math.correctness]\n")
    assert code == 0, out + err
    code, out, err = dry_run(grpo, tmp_path, "dataset: {name: toy_arithmetic}\ntools: [my_tools.py:shout]\n"
                                             "rewards: [math.correctness]\n")
    assert code == 2
    assert "tool 'shout' cannot be described to the model:" in err and "Args: line per parameter" in err


@pytest.mark.parametrize("text, message", [
    ("environment: python\ntools: [python]\n",
     "tool 'python' comes from both python (tools) and environment 'python'"),
    ("tools: [my_tools.py:nothing]\n", "tool 'my_tools.py:nothing': my_tools.py has no function 'nothing'; "
                                       "its functions: add, shout."),
    ("tools: [guess_number]\n", "tools: environment 'guess_number' needs dataset columns to reset (secret)"),
    ("tools: [pyton]\n", "unknown environment 'pyton'. Closest registered: python."),
])
def test_bad_tools_are_named(grpo, tmp_path, monkeypatch, text, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_tools.py").write_text(TOOLS)
    code, out, err = dry_run(grpo, tmp_path, "dataset: {name: toy_arithmetic}\nrewards: [math.correctness]\n" + text)
    assert code == 2
    assert message in err
