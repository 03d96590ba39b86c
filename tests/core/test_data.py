"""Datasets by name, system prompts, the prompt builder and the column check."""

from __future__ import annotations

import types

import pytest

import grpo_core
from grpo_core import hookimpl
from grpo_core.data.datasets import (
    build_prompt,
    build_prompts,
    check_columns,
    resolve_system_prompt,
)
from grpo_core.errors import GrpoError, MissingColumnError, RewardParamError, UnknownNameError


def toy_loader(split: str = "train", limit: int | None = None, **kwargs):
    """Three toy questions."""
    from datasets import Dataset

    rows = [{"question": f"What is {i} + {i}?", "answer": str(2 * i), "rationale": f"{i}+{i}"} for i in range(1, 4)]
    return Dataset.from_list(rows[:limit] if limit else rows)


def no_question_loader(split: str = "train"):
    from datasets import Dataset

    return Dataset.from_list([{"text": "x", "label": "y"}])


@pytest.fixture
def toy(register_plugin):
    mod = types.ModuleType("toy_plugin")

    @hookimpl
    def register_datasets(register):
        register("toy", toy_loader)
        register("acme.broken", no_question_loader)

    @hookimpl
    def register_system_prompts(register):
        register("tagged", "Answer inside <answer></answer>.", answer_template="<answer>{answer}</answer>")

    mod.register_datasets = register_datasets
    mod.register_system_prompts = register_system_prompts
    register_plugin(mod, name="toy")


def test_load_dataset_by_name_with_parameters(toy):
    ds = grpo_core.load_dataset("toy", limit=2)
    assert ds["question"] == ["What is 1 + 1?", "What is 2 + 2?"]
    assert [e.name for e in grpo_core.list_datasets()] == ["acme.broken", "openr1", "toy", "trl"]  # openr1, trl: the core's own


def test_dataset_parameter_type_is_checked(toy):
    with pytest.raises(RewardParamError, match="dataset 'toy' parameter 'limit' expects"):
        grpo_core.load_dataset("toy", limit="two")


def test_unknown_dataset_suggests_names(toy):
    with pytest.raises(UnknownNameError, match="unknown dataset 'toyy'. Closest registered: toy"):
        grpo_core.load_dataset("toyy")


def test_unknown_builtin_dataset_says_what_to_install(plugin_manager, monkeypatch):
    from grpo_core.plugin import plugins

    monkeypatch.setattr(plugins, "is_installed", lambda dist: False)
    with pytest.raises(UnknownNameError, match="pip install ./packages/grpo-datasets from a grpo checkout"):
        grpo_core.load_dataset("gsm8k")


def test_an_installed_builtin_left_out_of_grpo_plugins_is_not_sent_to_pip(plugin_manager, monkeypatch):
    from grpo_core.plugin import plugins

    monkeypatch.setattr(plugins, "is_installed", lambda dist: dist == "grpo-datasets")
    monkeypatch.setenv("GRPO_PLUGINS", "")  # as in the tests: nothing allowed
    with pytest.raises(UnknownNameError, match="comes from grpo-datasets, which is installed: add it to GRPO_PLUGINS"):
        grpo_core.load_dataset("gsm8k")
    monkeypatch.delenv("GRPO_PLUGINS")  # everything allowed, yet not loaded: a broken install
    with pytest.raises(UnknownNameError, match="installed but did not load"):
        grpo_core.load_dataset("gsm8k")


def test_adapter_without_question_column_is_an_error(toy):
    with pytest.raises(GrpoError, match="has no 'question' column; it has: text, label"):
        grpo_core.load_dataset("acme.broken")


def test_prompt_with_system_and_few_shot_from_the_dataset(toy):
    ds = build_prompts(grpo_core.load_dataset("toy"), system_prompt="tagged", few_shot=1)
    # the few-shot example is removed from the training rows
    assert ds["question"] == ["What is 2 + 2?", "What is 3 + 3?"]
    assert ds[0]["prompt"] == [
        {"role": "system", "content": "Answer inside <answer></answer>."},
        {"role": "user", "content": "What is 1 + 1?"},
        {"role": "assistant", "content": "<answer>2</answer>"},
        {"role": "user", "content": "What is 2 + 2?"},
    ]
    assert ds[1]["answer"] == "6"  # other columns pass through


def test_prompt_with_literal_system_text_and_given_examples(toy):
    examples = [{"question": "Q?", "completion": "A."}]
    ds = build_prompts(grpo_core.load_dataset("toy", limit=1), system_prompt="Be brief, please.", few_shot=examples)
    assert ds[0]["prompt"] == [
        {"role": "system", "content": "Be brief, please."},
        {"role": "user", "content": "Q?"},
        {"role": "assistant", "content": "A."},
        {"role": "user", "content": "What is 1 + 1?"},
    ]


def test_builtin_plain_system_prompt_is_registered(plugin_manager):
    text, template = resolve_system_prompt("plain")
    assert "Answer: <answer>" in text
    assert template == "Answer: {answer}"
    assert build_prompt("Q", None) == [{"role": "user", "content": "Q"}]


def test_unknown_system_prompt_name_is_an_error(toy):
    with pytest.raises(UnknownNameError, match="unknown system prompt 'taged'. Closest registered: tagged"):
        resolve_system_prompt("taged")


def test_few_shot_larger_than_dataset_is_an_error(toy):
    with pytest.raises(GrpoError, match="few_shot=3 must be between 0 and 2"):
        build_prompts(grpo_core.load_dataset("toy"), few_shot=3)


def test_missing_column_error_names_reward_column_and_present_columns():
    def needs_answer(completions, answer, **kwargs):
        return [0.0] * len(completions)

    reward = grpo_core.Reward("acme.needs", needs_answer)
    with pytest.raises(MissingColumnError) as info:
        check_columns(["question", "prompt"], [reward], "dataset 'toy'")
    assert str(info.value).startswith(
        "reward 'acme.needs' needs dataset column(s) 'answer', but dataset 'toy' has: question, prompt."
    )
    check_columns(["question", "answer"], [reward])  # no error when present


def test_completion_text_handles_both_shapes():
    assert grpo_core.completion_text("plain") == "plain"
    assert grpo_core.completion_text([{"role": "assistant", "content": "hi"}]) == "hi"
    assert grpo_core.completion_text(
        [{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}]
    ) == "ab"
    assert grpo_core.completion_text([{"role": "assistant", "content": None}]) == ""
    assert grpo_core.completion_text(None) == ""


@grpo_core.text_reward
def shout(completions, **kwargs):
    return [float(c.isupper()) for c in completions]


def test_text_reward_decorator_gives_strings_and_keeps_picklability():
    import pickle

    assert shout([[{"role": "assistant", "content": "HEY"}], "no"]) == [1.0, 0.0]
    assert pickle.loads(pickle.dumps(shout))(["OK"]) == [1.0]
    assert shout.__name__ == "shout"


def test_few_shot_template_falls_back_when_a_field_is_missing(toy):
    from grpo_core.data.datasets import _example_answer

    templates = ["<think>{rationale}</think><answer>{answer}</answer>", "<answer>{answer}</answer>"]
    assert _example_answer({"question": "q", "answer": "4", "rationale": "2+2"}, templates) == \
        "<think>2+2</think><answer>4</answer>"
    assert _example_answer({"question": "q", "answer": "4"}, templates) == "<answer>4</answer>"
    assert _example_answer({"question": "q", "answer": "4", "rationale": "  "}, templates) == "<answer>4</answer>"
